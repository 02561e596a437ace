// laya-make-tiny: writes a random-weight encoder or decoder .laya file with the architecture of
// the two model families (tools/tiny_models.h). The build uses it to make the models laya-run and
// the end-to-end tests run; it is also handy for trying shapes and dtypes.
//
//   laya-make-tiny OUT.laya [--kind encoder|decoder] [--dtype f32|f16|bf16|q8_0|q4_0|q4_1]
//                  [--vocab N] [--d-model N] [--d-ff N] [--layers N] [--heads N] [--kv-heads N]
//                  [--max-batch N] [--max-seq N] [--seed N]
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "ir/model_file.h"
#include "tools/cli.h"
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
    "  --vocab N (1..2^31-1) --d-model N --d-ff N (1..2^20) --layers N (1..1024)\n"
    "  --heads N --kv-heads N (1..4096; d-model = heads x an even head_dim, heads a multiple of\n"
    "  kv-heads) --max-batch N (1..2^20) --max-seq N (1..2^30) --seed N (>= 0)\n"
    "  Block dtypes need d-model and d-ff multiples of 32; at most 2^31 parameters.\n"
    "exit codes: 0 ok, 1 could not build or write the model, 2 bad arguments\n";

int bad(const std::string& msg) {
  std::fprintf(stderr, "laya-make-tiny: %s\n\n%s", msg.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace laya;
  tools::TinyModelConfig cfg;
  bool help = false;
  std::string kind = "encoder", dtype = "f32";
  int64_t seed = 1, vocab = cfg.vocab, d_model = cfg.d_model, d_ff = cfg.d_ff,
          layers = cfg.n_layers, heads = cfg.n_heads, kv_heads = cfg.n_kv_heads,
          max_batch = cfg.max_batch, max_seq = cfg.max_seq;
  tools::ArgParser p;
  p.flag("help", &help);
  p.choice("kind", {"encoder", "decoder"}, &kind);
  p.choice("dtype", {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1"}, &dtype);
  p.integer("vocab", 1, INT32_MAX, &vocab);
  p.integer("d-model", 1, int64_t{1} << 20, &d_model);
  p.integer("d-ff", 1, int64_t{1} << 20, &d_ff);
  p.integer("layers", 1, 1024, &layers);
  p.integer("heads", 1, 4096, &heads);
  p.integer("kv-heads", 1, 4096, &kv_heads);
  p.integer("max-batch", 1, int64_t{1} << 20, &max_batch);
  p.integer("max-seq", 1, int64_t{1} << 30, &max_seq);
  p.integer("seed", 0, INT64_MAX, &seed);
  std::vector<std::string> positional;
  if (!p.parse(argc, argv, 1, &positional)) return bad(p.error());
  if (help) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (positional.size() != 1) return bad("one output path, OUT.laya");
  const std::string out = positional[0];
  cfg.vocab = vocab;
  cfg.d_model = d_model;
  cfg.d_ff = d_ff;
  cfg.n_layers = static_cast<int32_t>(layers);
  cfg.n_heads = static_cast<int32_t>(heads);
  cfg.n_kv_heads = static_cast<int32_t>(kv_heads);
  cfg.max_batch = max_batch;
  cfg.max_seq = max_seq;
  cfg.matmul_dtype = *ir::dtype_from_name(dtype);
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
  Status s = ir::model_write(*g, out);
  if (!s.is_ok()) {
    std::fprintf(stderr, "laya-make-tiny: %s\n", s.to_string().c_str());
    return 1;
  }
  return 0;
}
