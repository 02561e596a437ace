#include "tools/tiny_models.h"

#include <climits>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "kernels/quant.h"

namespace laya::tools {

namespace {

using ir::DType;
using ir::Shape;
using ir::ValueId;

class Maker {
 public:
  Maker(const TinyModelConfig& cfg, uint64_t seed) : cfg_(cfg), rng_(seed) {}

  ir::GraphBuilder b;

  float uniform(float lo, float hi) {
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;  // [0, 1), portable
    return static_cast<float>(lo + (hi - lo) * u);
  }

  ValueId f32_weight(const std::string& name, std::vector<int64_t> dims, float lo, float hi) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<float> w(static_cast<size_t>(n));
    for (float& x : w) x = uniform(lo, hi);
    return b.weight(name, DType::kF32, shape(dims), w.data(), w.size() * sizeof(float));
  }

  ValueId gamma(const std::string& name, int64_t d) {
    return f32_weight(name + ".gamma", {d}, 0.8f, 1.2f);
  }

  // [n, k] in cfg.matmul_dtype, values uniform with unit output variance for unit-variance input.
  ValueId matmul_weight(const std::string& name, int64_t n, int64_t k) {
    const float a = std::sqrt(3.0f / static_cast<float>(k));
    std::vector<float> w(static_cast<size_t>(n * k));
    for (float& x : w) x = uniform(-a, a);
    const Shape s = Shape::fixed({n, k});
    ir::Quant q;
    switch (cfg_.matmul_dtype) {
      case DType::kF32:
        return b.weight(name, DType::kF32, s, w.data(), w.size() * 4);
      case DType::kF16:
      case DType::kBF16: {
        std::vector<uint16_t> h(w.size());
        for (size_t i = 0; i < w.size(); ++i)
          h[i] = cfg_.matmul_dtype == DType::kF16 ? kernels::f32_to_f16(w[i])
                                                  : kernels::f32_to_bf16(w[i]);
        return b.weight(name, cfg_.matmul_dtype, s, h.data(), h.size() * 2);
      }
      case DType::kQ8_0:
      case DType::kQ4_0:
      case DType::kQ4_1: {
        if (k % kernels::kQK != 0) break;
        q.kind = ir::QuantKind::kBlock;
        const int64_t blocks = n * k / kernels::kQK;
        if (cfg_.matmul_dtype == DType::kQ8_0) {
          std::vector<kernels::BlockQ8_0> blk(static_cast<size_t>(blocks));
          kernels::quantize_row_q8_0(w.data(), blk.data(), n * k);
          return b.weight(name, DType::kQ8_0, s, blk.data(), blk.size() * sizeof blk[0], q);
        }
        if (cfg_.matmul_dtype == DType::kQ4_0) {
          std::vector<kernels::BlockQ4_0> blk(static_cast<size_t>(blocks));
          kernels::quantize_row_q4_0(w.data(), blk.data(), n * k);
          return b.weight(name, DType::kQ4_0, s, blk.data(), blk.size() * sizeof blk[0], q);
        }
        std::vector<kernels::BlockQ4_1> blk(static_cast<size_t>(blocks));
        kernels::quantize_row_q4_1(w.data(), blk.data(), n * k);
        return b.weight(name, DType::kQ4_1, s, blk.data(), blk.size() * sizeof blk[0], q);
      }
      default:
        break;
    }
    status_ = status_error(StatusCode::kInvalidArgument,
                           "tiny model: matmul dtype %s for [%lld, %lld] is not supported",
                           ir::dtype_name(cfg_.matmul_dtype), static_cast<long long>(n),
                           static_cast<long long>(k));
    return ir::kNoValue;
  }

  Result<ir::Graph> finish() {
    if (!status_.is_ok()) return status_;
    return std::move(b).finish();
  }

  const TinyModelConfig& cfg_;
  Status status_;

 private:
  static Shape shape(const std::vector<int64_t>& dims) {
    Shape s;
    for (int64_t d : dims) s.dims[s.rank++] = ir::Dim::fixed(d);
    return s;
  }

  std::mt19937_64 rng_;
};

}  // namespace

Status tiny_config_check(const TinyModelConfig& c) {
  auto bad = [](const std::string& what) {
    return Status(StatusCode::kInvalidArgument, "tiny model: " + what);
  };
  if (c.vocab <= 0 || c.vocab > INT32_MAX || c.d_model <= 0 || c.d_ff <= 0 || c.n_layers <= 0 ||
      c.n_heads <= 0 || c.n_kv_heads <= 0 || c.max_batch <= 0 || c.max_seq <= 0 ||
      c.max_cells <= 0 || c.global_every <= 0 || c.local_window < 0)
    return bad("every size must be positive (vocab at most 2^31 - 1)");
  if (c.d_model % c.n_heads != 0 || (c.d_model / c.n_heads) % 2 != 0)
    return bad("d_model " + std::to_string(c.d_model) + " is not an even head_dim times " +
               std::to_string(c.n_heads) + " heads");
  if (c.d_model / c.n_heads > ir::AttrLimits::head_dim_max)
    return bad("head_dim " + std::to_string(c.d_model / c.n_heads) + " exceeds " +
               std::to_string(ir::AttrLimits::head_dim_max));
  if (c.n_heads % c.n_kv_heads != 0)
    return bad(std::to_string(c.n_heads) + " heads are not a multiple of " +
               std::to_string(c.n_kv_heads) + " kv heads");
  const ir::DType t = c.matmul_dtype;
  const bool block = t == DType::kQ8_0 || t == DType::kQ4_0 || t == DType::kQ4_1;
  if (!block && t != DType::kF32 && t != DType::kF16 && t != DType::kBF16)
    return bad(std::string("matmul dtype ") + ir::dtype_name(t) + " is not one of " +
               "f32 f16 bf16 q8_0 q4_0 q4_1");
  if (block && (c.d_model % kernels::kQK != 0 || c.d_ff % kernels::kQK != 0))
    return bad(std::string(ir::dtype_name(t)) + " needs d_model and d_ff multiples of " +
               std::to_string(kernels::kQK));
  // Weight elements, at most: 2 V D (embedding, lm_head) + layers (4 D^2 + 3 D F + 4 D), in
  // arithmetic that saturates at INT64_MAX instead of overflowing.
  auto mul = [](int64_t a, int64_t b) {
    int64_t r = 0;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
  };
  auto add = [](int64_t a, int64_t b) {
    int64_t r = 0;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
  };
  const int64_t d = c.d_model, f = c.d_ff;
  const int64_t layer = add(add(mul(4, mul(d, d)), mul(3, mul(d, f))), mul(4, d));
  const int64_t params = add(mul(2, mul(c.vocab, d)), mul(c.n_layers, layer));
  if (params > kTinyMaxParams)
    return bad("about " + std::to_string(params) + " parameters; a tiny model has at most " +
               std::to_string(kTinyMaxParams));
  return Status::ok();
}

Result<ir::Graph> make_tiny_encoder(const TinyModelConfig& cfg, uint64_t seed) {
  Maker m(cfg, seed);
  LAYA_RETURN_IF_ERROR(tiny_config_check(cfg));
  ir::GraphBuilder& b = m.b;
  const int64_t d = cfg.d_model, hd = d / cfg.n_heads;
  const int batch = b.symbol("batch", 1, cfg.max_batch);
  const int seq = b.symbol("seq", 1, cfg.max_seq);
  const Shape bs = Shape::of({ir::Dim::sym(batch), ir::Dim::sym(seq)});
  const ValueId ids = b.input("ids", DType::kI32, bs, ir::InputRole::kTokenIds);
  const ValueId pos = b.input("positions", DType::kI32, bs, ir::InputRole::kPositions);
  const ValueId mask = b.input("key_mask", DType::kI32, bs, ir::InputRole::kKeyMask);

  const ValueId emb = m.f32_weight("tok_emb", {cfg.vocab, d}, -1.0f, 1.0f);
  ValueId x = b.embedding(emb, ids, "embed");
  x = b.layernorm(x, m.gamma("emb_norm", d), ir::kNoValue, cfg.eps, "emb_norm");
  for (int32_t l = 0; l < cfg.n_layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    const bool global = l % cfg.global_every == 0;
    ValueId h = x;
    if (l > 0)
      h = b.layernorm(x, m.gamma(p + "attn_norm", d), ir::kNoValue, cfg.eps, p + "attn_norm");
    const ValueId qkv = b.matmul(h, m.matmul_weight(p + "wqkv", 3 * d, d), ir::kNoValue, p + "qkv");
    const std::vector<ValueId> parts = b.split(qkv, {d, d, d}, p + "split");
    if (parts.size() != 3) return m.finish();  // the builder's sticky error
    const float theta = global ? cfg.rope_theta_global : cfg.rope_theta_local;
    const ValueId q = b.rope(parts[0], pos, static_cast<int32_t>(hd), theta, ir::RopeMode::kNeox, 0,
                             p + "rope_q");
    const ValueId k = b.rope(parts[1], pos, static_cast<int32_t>(hd), theta, ir::RopeMode::kNeox, 0,
                             p + "rope_k");
    ir::Attrs a;
    a.n_heads = cfg.n_heads;
    a.n_kv_heads = cfg.n_heads;
    a.head_dim = static_cast<int32_t>(hd);
    a.mask = ir::MaskKind::kNone;
    a.window = global ? -1 : cfg.local_window;
    const ValueId att = b.attention(q, k, parts[2], mask, a, p + "attn");
    const ValueId o = b.matmul(att, m.matmul_weight(p + "wo", d, d), ir::kNoValue, p + "attn_out");
    x = b.add(x, o, p + "attn_res");
    h = b.layernorm(x, m.gamma(p + "mlp_norm", d), ir::kNoValue, cfg.eps, p + "mlp_norm");
    h = b.matmul(h, m.matmul_weight(p + "wi", 2 * cfg.d_ff, d), ir::kNoValue, p + "mlp_in");
    h = b.glu(h, ir::ActKind::kGeluErf, p + "geglu");
    h = b.matmul(h, m.matmul_weight(p + "wo2", d, cfg.d_ff), ir::kNoValue, p + "mlp_out");
    x = b.add(x, h, p + "mlp_res");
  }
  x = b.layernorm(x, m.gamma("final_norm", d), ir::kNoValue, cfg.eps, "final_norm");
  b.output(x, "hidden");
  b.meta().architecture = "modernbert";
  return m.finish();
}

Result<ir::Graph> make_tiny_decoder(const TinyModelConfig& cfg, uint64_t seed) {
  Maker m(cfg, seed);
  LAYA_RETURN_IF_ERROR(tiny_config_check(cfg));
  ir::GraphBuilder& b = m.b;
  const int64_t d = cfg.d_model, hd = d / cfg.n_heads, kvd = hd * cfg.n_kv_heads;
  const int batch = b.symbol("batch", 1, cfg.max_batch);
  const int seq = b.symbol("seq", 1, cfg.max_seq);
  const int cells = b.symbol("cells", 1, cfg.max_cells);
  const Shape bs = Shape::of({ir::Dim::sym(batch), ir::Dim::sym(seq)});
  const Shape cs = Shape::of({ir::Dim::fixed(1), ir::Dim::sym(cells)});
  const ValueId ids = b.input("ids", DType::kI32, bs, ir::InputRole::kTokenIds);
  const ValueId pos = b.input("positions", DType::kI32, bs, ir::InputRole::kPositions);
  const ValueId seq_ids = b.input("seq_ids", DType::kI32, bs, ir::InputRole::kSeqIds);
  const ValueId tok_cells = b.input("cells", DType::kI32, bs, ir::InputRole::kCacheCells);
  const ValueId cell_pos =
      b.input("cell_positions", DType::kI32, cs, ir::InputRole::kCellPositions);
  const ValueId cell_seq = b.input("cell_seq_ids", DType::kI32, cs, ir::InputRole::kCellSeqIds);
  const Shape cache = Shape::of({ir::Dim::fixed(1), ir::Dim::sym(cells), ir::Dim::fixed(kvd)});

  const ValueId emb = m.f32_weight("tok_emb", {cfg.vocab, d}, -1.0f, 1.0f);
  ValueId x = b.embedding(emb, ids, "embed");
  for (int32_t l = 0; l < cfg.n_layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    const ValueId k_cache = b.state(p + "k_cache", cfg.kv_dtype, cache);
    const ValueId v_cache = b.state(p + "v_cache", cfg.kv_dtype, cache);
    ValueId h = b.rmsnorm(x, m.gamma(p + "attn_norm", d), cfg.eps, p + "attn_norm");
    ValueId q = b.matmul(h, m.matmul_weight(p + "wq", d, d), ir::kNoValue, p + "q");
    ValueId k = b.matmul(h, m.matmul_weight(p + "wk", kvd, d), ir::kNoValue, p + "k");
    const ValueId v = b.matmul(h, m.matmul_weight(p + "wv", kvd, d), ir::kNoValue, p + "v");
    q = b.rope(q, pos, static_cast<int32_t>(hd), cfg.rope_theta_global, ir::RopeMode::kNeox, 0,
               p + "rope_q");
    k = b.rope(k, pos, static_cast<int32_t>(hd), cfg.rope_theta_global, ir::RopeMode::kNeox, 0,
               p + "rope_k");
    const ValueId kc = b.kv_write(k_cache, k, tok_cells, p + "k_write");
    const ValueId vc = b.kv_write(v_cache, v, tok_cells, p + "v_write");
    ir::Attrs a;
    a.n_heads = cfg.n_heads;
    a.n_kv_heads = cfg.n_kv_heads;
    a.head_dim = static_cast<int32_t>(hd);
    a.mask = ir::MaskKind::kCausal;
    const ValueId att =
        b.attention(q, kc, vc, ir::kNoValue, {pos, cell_pos, seq_ids, cell_seq}, a, p + "attn");
    x = b.add(x, b.matmul(att, m.matmul_weight(p + "wo", d, d), ir::kNoValue, p + "attn_out"),
              p + "attn_res");
    h = b.rmsnorm(x, m.gamma(p + "mlp_norm", d), cfg.eps, p + "mlp_norm");
    const ValueId gate =
        b.matmul(h, m.matmul_weight(p + "w_gate", cfg.d_ff, d), ir::kNoValue, p + "gate");
    const ValueId up =
        b.matmul(h, m.matmul_weight(p + "w_up", cfg.d_ff, d), ir::kNoValue, p + "up");
    h = b.mul(b.silu(gate, p + "silu"), up, p + "swiglu");
    h = b.matmul(h, m.matmul_weight(p + "w_down", d, cfg.d_ff), ir::kNoValue, p + "down");
    x = b.add(x, h, p + "mlp_res");
  }
  x = b.rmsnorm(x, m.gamma("final_norm", d), cfg.eps, "final_norm");
  x = b.matmul(x, m.matmul_weight("lm_head", cfg.vocab, d), ir::kNoValue, "lm_head");
  b.output(x, "logits");
  b.meta().architecture = "llama";
  return m.finish();
}

}  // namespace laya::tools
