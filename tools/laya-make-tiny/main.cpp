// laya-make-tiny: writes a random-weight encoder or decoder .laya file with the architecture of
// the two model families (tools/tiny_models.h), or a model at a real configuration
// (tools/presets.h). The build uses it to make the models laya-run and the end-to-end tests run;
// it is also handy for trying shapes and dtypes.
//
//   laya-make-tiny OUT.laya [--kind encoder|decoder] [--dtype f32|f16|bf16|q8_0|q4_0|q4_1]
//                  [--vocab N] [--d-model N] [--d-ff N] [--layers N] [--heads N] [--kv-heads N]
//                  [--max-batch N] [--max-seq N] [--max-cells N] [--seed N]
//   laya-make-tiny --preset NAME -o OUT.laya [--seed N] [dimension overrides as above]
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ir/model_file.h"
#include "tools/cli.h"
#include "tools/presets.h"
#include "tools/tiny_models.h"

namespace {

constexpr const char* kUsage =
    "usage: laya-make-tiny OUT.laya [options]\n"
    "       laya-make-tiny --preset NAME -o OUT.laya [--seed N] [dimension overrides]\n"
    "\n"
    "Writes a random-weight model: a ModernBERT-shaped encoder (GeGLU, RoPE, global and local\n"
    "layers) or a Llama-shaped decoder (RMSNorm, GQA, SwiGLU, lm_head).\n"
    "\n"
    "  --kind encoder|decoder   (default encoder)\n"
    "  --dtype T                matmul weights: f32 f16 bf16 q8_0 q4_0 q4_1 (default f32)\n"
    "  --vocab N (1..2^31-1) --d-model N --d-ff N (1..2^20) --layers N (1..1024)\n"
    "  --heads N --kv-heads N (1..4096; d-model = heads x an even head_dim, heads a multiple of\n"
    "  kv-heads) --max-batch N (1..2^20) --max-seq N (1..2^30) --seed N (>= 0)\n"
    "  --max-cells N            decoder: the most KV cache cells (1..2^30, default 256)\n"
    "  Block dtypes need d-model and d-ff multiples of 32; at most 2^31 parameters.\n"
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

int write(laya::ir::Graph& g, const std::string& out) {
  laya::Status s = laya::ir::model_write(g, out);
  if (!s.is_ok()) {
    std::fprintf(stderr, "laya-make-tiny: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace laya;
  tools::TinyModelConfig cfg;
  bool help = false;
  std::string kind, dtype, preset, out_opt;
  int64_t seed = 1, vocab = 0, d_model = 0, d_ff = 0, layers = 0, heads = 0, kv_heads = 0,
          max_batch = 0, max_seq = 0, max_cells = 0;
  tools::ArgParser p;
  p.flag("help", &help);
  p.choice("kind", {"encoder", "decoder"}, &kind);
  p.choice("dtype", {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"}, &dtype);
  p.text("preset", &preset);
  p.text("output", &out_opt);  // "-o PATH" is spelled --output here
  p.integer("vocab", 1, INT32_MAX, &vocab);
  p.integer("d-model", 1, int64_t{1} << 20, &d_model);
  p.integer("d-ff", 1, int64_t{1} << 20, &d_ff);
  p.integer("layers", 1, 1024, &layers);
  p.integer("heads", 1, 4096, &heads);
  p.integer("kv-heads", 1, 4096, &kv_heads);
  p.integer("max-batch", 1, int64_t{1} << 20, &max_batch);
  p.integer("max-seq", 1, int64_t{1} << 30, &max_seq);
  p.integer("max-cells", 1, int64_t{1} << 30, &max_cells);
  p.integer("seed", 0, INT64_MAX, &seed);
  std::vector<const char*> args(argv, argv + argc);
  for (const char*& a : args)
    if (std::strcmp(a, "-o") == 0) a = "--output";
  std::vector<std::string> positional;
  if (!p.parse(argc, args.data(), 1, &positional)) return bad(p.error());
  if (help) {
    std::printf("%s", usage().c_str());
    return 0;
  }
  if (positional.size() > 1 || (positional.size() == 1) == !out_opt.empty())
    return bad("one output path: OUT.laya or -o OUT.laya");
  const std::string out = out_opt.empty() ? positional[0] : out_opt;

  if (!preset.empty()) {
    if (!kind.empty() || !dtype.empty()) return bad("--kind and --dtype do not apply to a preset");
    if (max_batch != 0) return bad("--max-batch does not apply to a preset");
    if (max_cells != 0) return bad("--max-cells does not apply to a preset");
    tools::PresetOverrides over;
    over.vocab = vocab;
    over.d_model = d_model;
    over.d_ff = d_ff;
    over.max_seq = max_seq;
    over.layers = static_cast<int32_t>(layers);
    over.heads = static_cast<int32_t>(heads);
    over.kv_heads = static_cast<int32_t>(kv_heads);
    Result<ir::Graph> g =
        tools::make_preset(preset, over, static_cast<uint64_t>(seed), tools::WeightFill::kRandom);
    if (!g.is_ok()) {
      if (g.status().code() == StatusCode::kNotFound ||
          g.status().code() == StatusCode::kInvalidArgument)
        return bad(g.status().message());
      std::fprintf(stderr, "laya-make-tiny: %s\n", g.status().to_string().c_str());
      return 1;
    }
    g->meta.provenance.source =
        "preset " + preset + ", random s8 weights (seed " + std::to_string(seed) + ")";
    g->meta.provenance.converter_version = "laya-make-tiny 0.1.0";
    if (int rc = write(*g, out); rc != 0) return rc;
    const ir::WeightStats ws = ir::graph_weight_stats(*g);
    uint64_t bytes = 0;
    for (uint64_t v : ws.bytes_by_dtype) bytes += v;
    std::printf("%s: preset %s, %lld parameters, %.1f MB of weights\n", out.c_str(), preset.c_str(),
                static_cast<long long>(ws.params), static_cast<double>(bytes) / 1e6);
    return 0;
  }

  if (kind.empty()) kind = "encoder";
  if (vocab) cfg.vocab = vocab;
  if (d_model) cfg.d_model = d_model;
  if (d_ff) cfg.d_ff = d_ff;
  if (layers) cfg.n_layers = static_cast<int32_t>(layers);
  if (heads) cfg.n_heads = static_cast<int32_t>(heads);
  if (kv_heads) cfg.n_kv_heads = static_cast<int32_t>(kv_heads);
  if (max_batch) cfg.max_batch = max_batch;
  if (max_seq) cfg.max_seq = max_seq;
  if (max_cells) {
    if (kind != "decoder") return bad("--max-cells applies to a decoder (--kind decoder)");
    cfg.max_cells = max_cells;
  }
  if (!dtype.empty()) cfg.matmul_dtype = *ir::dtype_from_name(dtype);
  // A configuration that cannot make a model is a bad argument too.
  if (Status s = tools::tiny_config_check(cfg); !s.is_ok()) return bad(s.message());
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
  return write(*g, out);
}
