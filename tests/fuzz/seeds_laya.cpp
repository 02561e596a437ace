// Seed corpus of fuzz_laya, written by the model writer itself (so seeds follow the format as it
// changes): small tiny encoders and decoders (tools/tiny_models.h) in every matmul dtype, and one
// graph that uses every op, optional input and metadata field.
//   fuzz_seeds_laya OUTDIR
#include <cstdio>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/model_file.h"
#include "tools/tiny_models.h"

namespace {

using namespace laya;
using ir::Dim;
using ir::DType;
using ir::Shape;
using ir::ValueId;

// Every op, i8 per-tensor and per-channel weights, a bias, a layernorm beta, a key mask, split,
// GQA with a window, and every metadata field (the tokenizer and an executable in the section).
Result<ir::Graph> every_op_graph() {
  ir::GraphBuilder b;
  const int seq = b.symbol("seq", 1, 8);
  const int past = b.symbol("past", 0, 4);
  const int64_t d = 32, hd = 8, vocab = 20;
  const Shape ts = Shape::of({Dim::fixed(1), Dim::sym(seq)});
  const ValueId ids = b.input("ids", DType::kI32, ts, ir::InputRole::kTokenIds);
  const ValueId pos = b.input("pos", DType::kI32, ts, ir::InputRole::kPositions);
  Result<Dim> kv_len = ir::dim_add(Dim::sym(past), Dim::sym(seq));
  if (!kv_len.is_ok()) return kv_len.status();
  const ValueId mask =
      b.input("mask", DType::kI32, Shape::of({Dim::fixed(1), *kv_len}), ir::InputRole::kKeyMask);
  const ValueId cache =
      b.input("kv", DType::kF32, Shape::of({Dim::fixed(1), *kv_len, Dim::fixed(2 * d)}));
  std::vector<uint8_t> bytes(static_cast<size_t>(2 * d * d * 2));  // the largest weight (w2)
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  ir::Quant per_tensor;
  per_tensor.kind = ir::QuantKind::kPerTensor;
  per_tensor.scales = {0.02f};
  ir::Quant per_row;
  per_row.kind = ir::QuantKind::kPerChannel;
  per_row.scales.assign(static_cast<size_t>(d), 0.01f);
  std::vector<float> ones(static_cast<size_t>(2 * d), 1.0f);
  const ValueId table =
      b.weight("table", DType::kI8, Shape::fixed({vocab, d}), bytes.data(), vocab * d, per_tensor);
  const ValueId wq = b.weight("wq", DType::kI8, Shape::fixed({d, d}), bytes.data(), d * d, per_row);
  const ValueId bias = b.weight("bias", DType::kF32, Shape::fixed({d}), ones.data(), d * 4);
  const ValueId gamma = b.weight("gamma", DType::kF32, Shape::fixed({d}), ones.data(), d * 4);
  const ValueId w2 =
      b.weight("w2", DType::kF16, Shape::fixed({2 * d, d}), bytes.data(), 2 * d * d * 2);
  ValueId x = b.embedding(table, ids, "embed");
  x = b.layernorm(x, gamma, bias, 1e-5f, "ln");
  ValueId q = b.matmul(x, wq, bias, "q");
  q = b.rope(q, pos, static_cast<int32_t>(hd), 10000.0f, ir::RopeMode::kGptj, 4, "rope");
  const std::vector<ValueId> kv = b.split(cache, {d / 2, d / 2, d}, "kv_split");
  if (kv.size() != 3) return b.status();
  ir::Attrs a;
  a.n_heads = 4;
  a.n_kv_heads = 2;
  a.head_dim = static_cast<int32_t>(hd);
  a.mask = ir::MaskKind::kCausal;
  a.window = 3;
  a.scale = 0.5f;
  const ValueId att = b.attention(q, kv[0], kv[1], mask, a, "attn");
  ValueId h = b.rmsnorm(b.add(x, att, "res"), gamma, 1e-6f, "rms");
  h = b.matmul(h, w2, ir::kNoValue, "up");
  ValueId g = b.glu(h, ir::ActKind::kGeluTanh, "glu");
  g = b.mul(b.gelu(g, ir::ActKind::kGeluErf, "gelu"), b.relu(b.silu(g, "silu"), "relu"), "mul");
  b.output(b.softmax(g, "softmax"), "probs");
  ir::Metadata& m = b.meta();
  m.architecture = "fuzz-seed";
  m.tokenizer_kind = "hf-tokenizer-json";
  static const char kTokenizer[] = "{\"model\": {\"type\": \"WordPiece\"}}";
  m.tokenizer = {reinterpret_cast<const uint8_t*>(kTokenizer), sizeof kTokenizer - 1};
  m.decision.present = true;
  m.decision.max_len = 512;
  m.decision.head_max_len = 64;
  m.decision.head_layers = 2;
  m.decision.temperature_by_options = {{"choice:2", 1.5f}, {"score:11+", 0.7f}};
  m.decision.act_costs = {0.1f, 0.2f};
  m.chat_template = "{{ messages }}";
  m.provenance = {"fuzz seed", "seeds_laya", {{"model.safetensors", std::string(64, 'a')}}};
  m.properties = {{"hidden_size", "32"}};
  static const uint8_t kExe[100] = {1, 2, 3};
  m.executables.push_back({"ax8850", "layers0-1", {kExe, sizeof kExe}});
  return std::move(b).finish();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seeds_laya OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  int written = 0;
  auto write = [&](const std::string& name, const Result<ir::Graph>& g) {
    Status s = g.is_ok() ? ir::model_write(*g, dir + "/" + name + ".laya") : g.status();
    if (!s.is_ok()) {
      std::fprintf(stderr, "fuzz_seeds_laya: %s: %s\n", name.c_str(), s.to_string().c_str());
      return false;
    }
    ++written;
    return true;
  };
  if (!write("every_op", every_op_graph())) return 1;
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1})
    for (bool encoder : {true, false}) {
      tools::TinyModelConfig c;
      c.vocab = 24;
      c.d_model = 32;
      c.d_ff = 32;
      c.n_layers = encoder ? 2 : 1;  // the encoder's second layer is a local (windowed) one
      c.n_heads = 4;
      c.n_kv_heads = 2;
      c.max_batch = 2;
      c.max_seq = 16;
      c.matmul_dtype = t;
      const std::string name = std::string(encoder ? "encoder_" : "decoder_") + ir::dtype_name(t);
      if (!write(name, encoder ? tools::make_tiny_encoder(c, 1) : tools::make_tiny_decoder(c, 1)))
        return 1;
    }
  std::printf("fuzz_seeds_laya: %d seeds in %s\n", written, dir.c_str());
  return 0;
}
