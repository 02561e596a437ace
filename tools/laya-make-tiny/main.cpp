// laya-make-tiny: writes a random-weight encoder or decoder .laya file with the architecture of
// the two model families (tools/tiny_models.h), or a model at a real configuration
// (tools/presets.h). The build uses it to make the models laya-run and the end-to-end tests run;
// it is also handy for trying shapes and dtypes.
//
//   laya-make-tiny OUT.laya [--kind encoder|decoder] [--dtype f32|f16|bf16|q8_0|q4_0|q4_1]
//                  [--vocab N] [--d-model N] [--d-ff N] [--layers N] [--heads N] [--kv-heads N]
//                  [--max-batch N] [--max-seq N] [--seed N]
//   laya-make-tiny --preset NAME -o OUT.laya [--seed N] [dimension overrides as above]
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ir/model_file.h"
#include "tools/presets.h"
#include "tools/tiny_models.h"

namespace {

constexpr const char* kUsage =
    "usage: laya-make-tiny OUT.laya [options]\n"
    "\n"
    "Writes a random-weight model: a ModernBERT-shaped encoder (GeGLU, RoPE, global and local\n"
    "layers) or a Llama-shaped decoder (RMSNorm, GQA, SwiGLU, lm_head).\n"
    "\n"
    "  --kind encoder|decoder   (default encoder)\n"
    "  --dtype T                matmul weights: f32 f16 bf16 q8_0 q4_0 q4_1 (default f32)\n"
    "  --vocab N --d-model N --d-ff N --layers N --heads N --kv-heads N\n"
    "  --max-batch N --max-seq N --seed N\n"
    "\n"
    "  --preset NAME            a model at a real configuration, random s8 weights (one scale\n"
    "                           per row, ~1 byte per parameter; the size is printed):\n";
constexpr const char* kUsageEnd =
    "                           the dimension options above override the preset's (tests use\n"
    "                           small variants of the same structure); --kind / --dtype do not "
    "apply\n"
    "  -o OUT.laya              the output path (or give it as the positional argument)\n"
    "exit codes: 0 ok, 1 could not build or write the model, 2 bad arguments\n";

std::string usage() {
  std::string s = kUsage;
  for (const laya::tools::PresetInfo& p : laya::tools::preset_list())
    s += std::string("                             ") + p.name + ": " + p.description + "\n";
  return s + kUsageEnd;
}

int bad(const std::string& msg) {
  std::fprintf(stderr, "laya-make-tiny: %s\n\n%s", msg.c_str(), usage().c_str());
  return 2;
}

bool to_int(const char* s, long long* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtoll(s, &end, 10);
  return errno == 0 && end != s && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  using namespace laya;
  tools::TinyModelConfig cfg;
  std::string out, kind = "encoder", preset;
  tools::PresetOverrides over;
  bool kind_or_dtype = false;
  long long seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", usage().c_str());
      return 0;
    }
    if (a.rfind("-", 0) != 0 || a == "-o") {
      if (a == "-o" && i + 1 >= argc) return bad("-o needs a path");
      if (!out.empty()) return bad("one output path only");
      out = a == "-o" ? argv[++i] : a;
      continue;
    }
    if (i + 1 >= argc) return bad(a + " needs a value");
    const char* v = argv[++i];
    long long n = 0;
    if (a == "--preset") {
      preset = v;
      continue;
    }
    if (a == "--kind") {
      kind_or_dtype = true;
      kind = v;
      if (kind != "encoder" && kind != "decoder") return bad("--kind is encoder or decoder");
      continue;
    }
    if (a == "--dtype") {
      kind_or_dtype = true;
      Result<ir::DType> d = ir::dtype_from_name(v);
      if (!d.is_ok()) return bad(d.status().message());
      cfg.matmul_dtype = *d;
      continue;
    }
    if (!to_int(v, &n) || n < 0) return bad(a + " needs a non-negative number");
    if (a == "--vocab")
      cfg.vocab = over.vocab = n;
    else if (a == "--d-model")
      cfg.d_model = over.d_model = n;
    else if (a == "--d-ff")
      cfg.d_ff = over.d_ff = n;
    else if (a == "--layers")
      cfg.n_layers = over.layers = static_cast<int32_t>(n);
    else if (a == "--heads")
      cfg.n_heads = over.heads = static_cast<int32_t>(n);
    else if (a == "--kv-heads")
      cfg.n_kv_heads = over.kv_heads = static_cast<int32_t>(n);
    else if (a == "--max-batch")
      cfg.max_batch = n;
    else if (a == "--max-seq")
      cfg.max_seq = over.max_seq = n;
    else if (a == "--seed")
      seed = n;
    else
      return bad("unknown option " + a);
  }
  if (out.empty()) return bad("missing OUT.laya");
  if (!preset.empty()) {
    if (kind_or_dtype) return bad("--kind and --dtype do not apply to a preset");
    Result<ir::Graph> g =
        tools::make_preset(preset, over, static_cast<uint64_t>(seed), tools::WeightFill::kRandom);
    if (!g.is_ok()) {
      std::fprintf(stderr, "laya-make-tiny: %s\n", g.status().to_string().c_str());
      return g.status().code() == StatusCode::kNotFound ? 2 : 1;
    }
    g->meta.provenance.source =
        "preset " + preset + ", random s8 weights (seed " + std::to_string(seed) + ")";
    g->meta.provenance.converter_version = "laya-make-tiny 0.1.0";
    Status s = ir::model_write(*g, out);
    if (!s.is_ok()) {
      std::fprintf(stderr, "laya-make-tiny: %s\n", s.to_string().c_str());
      return 1;
    }
    const ir::WeightStats ws = ir::graph_weight_stats(*g);
    uint64_t bytes = 0;
    for (uint64_t v : ws.bytes_by_dtype) bytes += v;
    std::printf("%s: preset %s, %lld parameters, %.1f MB of weights\n", out.c_str(), preset.c_str(),
                static_cast<long long>(ws.params), static_cast<double>(bytes) / 1e6);
    return 0;
  }
  Result<ir::Graph> g = kind == "encoder"
                            ? tools::make_tiny_encoder(cfg, static_cast<uint64_t>(seed))
                            : tools::make_tiny_decoder(cfg, static_cast<uint64_t>(seed));
  if (!g.is_ok()) {
    std::fprintf(stderr, "laya-make-tiny: %s\n", g.status().to_string().c_str());
    return 1;
  }
  g->meta.architecture = kind == "encoder" ? "tiny-modernbert" : "tiny-llama";
  g->meta.provenance.source = "random weights (seed " + std::to_string(seed) + ")";
  g->meta.provenance.converter_version = "laya-make-tiny 0.1.0";
  Status s = ir::model_write(*g, out);
  if (!s.is_ok()) {
    std::fprintf(stderr, "laya-make-tiny: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}
