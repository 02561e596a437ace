#include "tools/presets.h"

#include <sys/mman.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ir/builder.h"

namespace laya::tools {
namespace {

using ir::DType;
using ir::Shape;
using ir::ValueId;

struct EncoderCfg {
  int64_t vocab, d, ff, max_len;
  int32_t layers, heads;
  int32_t global_every = 3, window = 64;
  float theta_global = 160000.0f, theta_local = 10000.0f;
};
struct DecoderCfg {
  int64_t vocab, d, ff, max_seq;
  int32_t layers, heads, kv_heads;
  float theta, eps;
  bool qkv_bias, tied;
};

const EncoderCfg kEnglish{50368, 1024, 2624, 512, 28, 16};
const EncoderCfg kMultilingual{256000, 768, 1152, 1024, 22, 12, 3, 64, 160000.0f, 160000.0f};
const DecoderCfg kQwen{151936, 896, 4864, 2048, 24, 14, 2, 1e6f, 1e-6f, true, true};
const DecoderCfg kTinyLlama{32000, 2048, 5632, 2048, 22, 32, 4, 10000.0f, 1e-5f, false, false};

// splitmix64: fast, portable, good enough for random weights.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) {
    return lo + (hi - lo) * static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-53);
  }
};

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

class Maker {
 public:
  Maker(uint64_t seed, WeightFill fill) : rng_{seed}, fill_(fill) {}

  ir::GraphBuilder b;

  Status status() const { return status_; }

  // s8 [rows, cols] with one scale per row: values uniform in [-127, 127] * scale, where
  // scale * 127 = `amax` (unit output variance for amax = sqrt(3 / cols)).
  ValueId s8(const std::string& name, int64_t rows, int64_t cols, float amax) {
    ir::Quant q;
    q.kind = ir::QuantKind::kPerChannel;
    q.axis = 0;
    q.scales.resize(static_cast<size_t>(rows));
    for (float& s : q.scales)
      s = fill_ == WeightFill::kRandom ? amax / 127.0f * rng_.uniform(0.9f, 1.1f) : 1.0f;
    const uint64_t bytes = static_cast<uint64_t>(rows * cols);
    const void* data = bytes_for(bytes, [&](uint8_t* p) {
      uint64_t r = 0;
      for (uint64_t i = 0; i < bytes; ++i) {
        if (i % 8 == 0) r = rng_.next();
        int v = static_cast<int>((r >> (8 * (i % 8))) & 0xff) - 128;
        if (v == -128) v = -127;  // symmetric range
        p[i] = static_cast<uint8_t>(static_cast<int8_t>(v));
      }
    });
    return b.weight_ref(name, DType::kI8, Shape::fixed({rows, cols}), data, bytes, owner_,
                        std::move(q));
  }

  // f32 [n] uniform in [lo, hi].
  ValueId f32(const std::string& name, int64_t n, float lo, float hi) {
    const uint64_t bytes = static_cast<uint64_t>(n) * 4;
    const void* data = bytes_for(bytes, [&](uint8_t* p) {
      float* f = reinterpret_cast<float*>(p);
      for (int64_t i = 0; i < n; ++i) f[i] = rng_.uniform(lo, hi);
    });
    return b.weight_ref(name, DType::kF32, Shape::fixed({n}), data, bytes, owner_);
  }
  ValueId gamma(const std::string& name, int64_t d) { return f32(name, d, 0.8f, 1.2f); }
  ValueId bias(const std::string& name, int64_t d) { return f32(name, d, -0.05f, 0.05f); }
  ValueId matrix(const std::string& name, int64_t rows, int64_t cols) {
    return s8(name, rows, cols, std::sqrt(3.0f / static_cast<float>(cols)));
  }

 private:
  // Bytes for one weight: a fresh 64-byte-aligned buffer filled by `fill` (kRandom; its owner is
  // kept in owner_ for the builder), or the shared zero mapping (kShapeOnly).
  template <class F>
  const void* bytes_for(uint64_t bytes, F&& fill) {
    if (bytes == 0) return nullptr;
    if (fill_ == WeightFill::kShapeOnly) return zeros(bytes);
    std::shared_ptr<void> mem(std::aligned_alloc(64, (bytes + 63) / 64 * 64), AlignedFree());
    if (!mem) {
      if (status_.is_ok())
        status_ = status_error(StatusCode::kResourceExhausted, "preset: cannot allocate %llu bytes",
                               static_cast<unsigned long long>(bytes));
      owner_.reset();
      return nullptr;
    }
    fill(static_cast<uint8_t*>(mem.get()));
    owner_ = mem;
    return mem.get();
  }

  // One read-only anonymous mapping per size class, shared by every weight (pages never touched).
  const void* zeros(uint64_t bytes) {
    if (bytes > zero_bytes_) {
      const uint64_t size = std::max<uint64_t>(bytes, uint64_t{1} << 30);
      void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (p == MAP_FAILED) {
        if (status_.is_ok())
          status_ = status_error(StatusCode::kResourceExhausted, "preset: cannot map %llu bytes",
                                 static_cast<unsigned long long>(size));
        return nullptr;
      }
      zero_owner_ = std::shared_ptr<void>(p, [size](void* q) { munmap(q, size); });
      zero_bytes_ = size;
    }
    owner_ = zero_owner_;
    return zero_owner_.get();
  }

  Rng rng_;
  WeightFill fill_;
  Status status_;
  std::shared_ptr<const void> owner_;
  std::shared_ptr<void> zero_owner_;
  uint64_t zero_bytes_ = 0;
};

Status check_dims(int64_t d, int32_t heads, int32_t kv_heads, int64_t ff, int32_t layers) {
  if (d <= 0 || heads <= 0 || kv_heads <= 0 || ff <= 0 || layers <= 0 || d % heads != 0 ||
      heads % kv_heads != 0 || (d / heads) % 2 != 0)
    return status_error(StatusCode::kInvalidArgument,
                        "preset: d_model %lld, %d heads, %d kv heads, d_ff %lld, %d layers do not "
                        "make a valid model",
                        static_cast<long long>(d), heads, kv_heads, static_cast<long long>(ff),
                        layers);
  return Status::ok();
}

// ModernBERT-style encoder + Laya head over packed rows (see presets.h).
Result<ir::Graph> make_laya(EncoderCfg c, const PresetOverrides& o, uint64_t seed, WeightFill fill,
                            const char* arch) {
  if (o.vocab > 0) c.vocab = o.vocab;
  if (o.d_model > 0) c.d = o.d_model;
  if (o.d_ff > 0) c.ff = o.d_ff;
  if (o.layers > 0) c.layers = o.layers;
  if (o.heads > 0) c.heads = o.heads;
  if (o.max_seq > 0) c.max_len = o.max_seq;
  LAYA_RETURN_IF_ERROR(check_dims(c.d, c.heads, c.heads, c.ff, c.layers));
  Maker m(seed, fill);
  ir::GraphBuilder& b = m.b;
  const int64_t d = c.d, hd = d / c.heads;
  const int tokens = b.symbol("tokens", 1, c.max_len * 64);  // max_len per row, 64 rows
  const Shape row = Shape::of({ir::Dim::fixed(1), ir::Dim::sym(tokens)});
  const ValueId ids = b.input("ids", DType::kI32, row, ir::InputRole::kTokenIds);
  const ValueId pos = b.input("pos", DType::kI32, row, ir::InputRole::kPositions);
  const ValueId seq = b.input("seq", DType::kI32, row);
  const ValueId qtype = b.input("qtype", DType::kI32, row);
  // Keys visible within the token's own row (seq), windows over per-row positions.
  const ir::GraphBuilder::AttentionIds packed{pos, pos, seq, seq};

  ValueId x = b.embedding(m.s8("tok_emb", c.vocab, d, 1.0f), ids, "embed");
  x = b.layernorm(x, m.gamma("emb_norm.gamma", d), ir::kNoValue, 1e-5f, "emb_norm");
  auto attrs = [&](int32_t window) {
    ir::Attrs a;
    a.n_heads = a.n_kv_heads = c.heads;
    a.head_dim = static_cast<int32_t>(hd);
    a.window = window;
    return a;
  };
  for (int32_t l = 0; l < c.layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    const bool global = l % c.global_every == 0;
    ValueId h = x;
    if (l > 0)
      h = b.layernorm(x, m.gamma(p + "attn_norm.gamma", d), ir::kNoValue, 1e-5f, p + "attn_norm");
    const ValueId qkv = b.matmul(h, m.matrix(p + "wqkv", 3 * d, d), ir::kNoValue, p + "qkv");
    const std::vector<ValueId> parts = b.split(qkv, {d, d, d}, p + "split");
    if (parts.size() != 3) return std::move(b).finish();  // the builder's sticky error
    const float theta = global ? c.theta_global : c.theta_local;
    const auto hd32 = static_cast<int32_t>(hd);
    const ValueId q = b.rope(parts[0], pos, hd32, theta, ir::RopeMode::kNeox, 0, p + "rope_q");
    const ValueId k = b.rope(parts[1], pos, hd32, theta, ir::RopeMode::kNeox, 0, p + "rope_k");
    const ValueId att = b.attention(q, k, parts[2], ir::kNoValue, packed,
                                    attrs(global ? -1 : c.window), p + "attn");
    x = b.add(x, b.matmul(att, m.matrix(p + "wo", d, d), ir::kNoValue, p + "attn_out"),
              p + "attn_res");
    h = b.layernorm(x, m.gamma(p + "mlp_norm.gamma", d), ir::kNoValue, 1e-5f, p + "mlp_norm");
    h = b.matmul(h, m.matrix(p + "wi", 2 * c.ff, d), ir::kNoValue, p + "mlp_in");
    h = b.glu(h, ir::ActKind::kGeluErf, p + "geglu");
    h = b.matmul(h, m.matrix(p + "wo2", d, c.ff), ir::kNoValue, p + "mlp_out");
    x = b.add(x, h, p + "mlp_res");
  }
  x = b.layernorm(x, m.gamma("final_norm.gamma", d), ir::kNoValue, 1e-5f, "final_norm");
  x = b.add(x, b.embedding(m.s8("type_emb", 3, d, 0.1f), qtype, "type_embed"), "type_add");
  for (int32_t l = 0; l < 2; ++l) {
    const std::string p = "head" + std::to_string(l) + ".";
    ValueId h = b.layernorm(x, m.gamma(p + "norm1.gamma", d), m.bias(p + "norm1.beta", d), 1e-5f,
                            p + "norm1");
    h = b.matmul(h, m.matrix(p + "in_proj", 3 * d, d), m.bias(p + "in_proj.bias", 3 * d),
                 p + "in_proj");
    const std::vector<ValueId> qkv = b.split(h, {d, d, d}, p + "split");
    if (qkv.size() != 3) return std::move(b).finish();
    const ValueId att =
        b.attention(qkv[0], qkv[1], qkv[2], ir::kNoValue, packed, attrs(-1), p + "attn");
    x = b.add(x,
              b.matmul(att, m.matrix(p + "out_proj", d, d), m.bias(p + "out_proj.bias", d),
                       p + "out_proj"),
              p + "attn_res");
    h = b.layernorm(x, m.gamma(p + "norm2.gamma", d), m.bias(p + "norm2.beta", d), 1e-5f,
                    p + "norm2");
    h = b.matmul(h, m.matrix(p + "linear1", 4 * d, d), m.bias(p + "linear1.bias", 4 * d),
                 p + "linear1");
    h = b.relu(h, p + "relu");
    h = b.matmul(h, m.matrix(p + "linear2", d, 4 * d), m.bias(p + "linear2.bias", d),
                 p + "linear2");
    x = b.add(x, h, p + "ffn_res");
  }
  b.output(x, "head_hidden");
  b.meta().architecture = arch;
  b.meta().decision.present = true;
  b.meta().decision.max_len = static_cast<int32_t>(c.max_len);
  b.meta().decision.head_max_len = c.max_len == 512 ? 192 : 256;
  b.meta().decision.head_layers = 2;
  LAYA_RETURN_IF_ERROR(m.status());
  return std::move(b).finish();
}

// Llama-family decoder: RMSNorm, GQA with RoPE (neox), SwiGLU, lm_head (tied: the embedding).
Result<ir::Graph> make_decoder(DecoderCfg c, const PresetOverrides& o, uint64_t seed,
                               WeightFill fill) {
  if (o.vocab > 0) c.vocab = o.vocab;
  if (o.d_model > 0) c.d = o.d_model;
  if (o.d_ff > 0) c.ff = o.d_ff;
  if (o.layers > 0) c.layers = o.layers;
  if (o.heads > 0) c.heads = o.heads;
  if (o.kv_heads > 0) c.kv_heads = o.kv_heads;
  if (o.max_seq > 0) c.max_seq = o.max_seq;
  LAYA_RETURN_IF_ERROR(check_dims(c.d, c.heads, c.kv_heads, c.ff, c.layers));
  Maker m(seed, fill);
  ir::GraphBuilder& b = m.b;
  const int64_t d = c.d, hd = d / c.heads, kvd = hd * c.kv_heads;
  const int seq = b.symbol("seq", 1, c.max_seq);
  const Shape row = Shape::of({ir::Dim::fixed(1), ir::Dim::sym(seq)});
  const ValueId ids = b.input("ids", DType::kI32, row, ir::InputRole::kTokenIds);
  const ValueId pos = b.input("positions", DType::kI32, row, ir::InputRole::kPositions);
  const ValueId emb = m.s8("tok_emb", c.vocab, d, 1.0f);
  ValueId x = b.embedding(emb, ids, "embed");
  const auto hd32 = static_cast<int32_t>(hd);
  for (int32_t l = 0; l < c.layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    ValueId h = b.rmsnorm(x, m.gamma(p + "attn_norm.gamma", d), c.eps, p + "attn_norm");
    auto bias = [&](const std::string& n, int64_t w) {
      return c.qkv_bias ? m.bias(p + n, w) : ir::kNoValue;
    };
    ValueId q = b.matmul(h, m.matrix(p + "wq", d, d), bias("bq", d), p + "q");
    ValueId k = b.matmul(h, m.matrix(p + "wk", kvd, d), bias("bk", kvd), p + "k");
    const ValueId v = b.matmul(h, m.matrix(p + "wv", kvd, d), bias("bv", kvd), p + "v");
    q = b.rope(q, pos, hd32, c.theta, ir::RopeMode::kNeox, 0, p + "rope_q");
    k = b.rope(k, pos, hd32, c.theta, ir::RopeMode::kNeox, 0, p + "rope_k");
    ir::Attrs a;
    a.n_heads = c.heads;
    a.n_kv_heads = c.kv_heads;
    a.head_dim = hd32;
    a.mask = ir::MaskKind::kCausal;
    const ValueId att = b.attention(q, k, v, ir::kNoValue, a, p + "attn");
    x = b.add(x, b.matmul(att, m.matrix(p + "wo", d, d), ir::kNoValue, p + "attn_out"),
              p + "attn_res");
    h = b.rmsnorm(x, m.gamma(p + "mlp_norm.gamma", d), c.eps, p + "mlp_norm");
    const ValueId gate = b.matmul(h, m.matrix(p + "w_gate", c.ff, d), ir::kNoValue, p + "gate");
    const ValueId up = b.matmul(h, m.matrix(p + "w_up", c.ff, d), ir::kNoValue, p + "up");
    h = b.mul(b.silu(gate, p + "silu"), up, p + "swiglu");
    h = b.matmul(h, m.matrix(p + "w_down", d, c.ff), ir::kNoValue, p + "down");
    x = b.add(x, h, p + "mlp_res");
  }
  x = b.rmsnorm(x, m.gamma("final_norm.gamma", d), c.eps, "final_norm");
  const ValueId head = c.tied ? emb : m.matrix("lm_head", c.vocab, d);
  x = b.matmul(x, head, ir::kNoValue, "lm_head");
  b.output(x, "logits");
  b.meta().architecture = "llama";
  LAYA_RETURN_IF_ERROR(m.status());
  return std::move(b).finish();
}

}  // namespace

const std::vector<PresetInfo>& preset_list() {
  static const std::vector<PresetInfo> list = {
      {"laya-english", "ModernBERT-large encoder + Laya head (28 x d1024, vocab 50368)"},
      {"laya-multilingual", "mmBERT-base encoder + Laya head (22 x d768, vocab 256000)"},
      {"qwen2.5-0.5b", "Qwen2.5-0.5B decoder (24 x d896, GQA 14/2, vocab 151936, tied)"},
      {"tinyllama-1.1b", "TinyLlama-1.1B decoder (22 x d2048, GQA 32/4, vocab 32000)"},
  };
  return list;
}

Result<ir::Graph> make_preset(const std::string& name, const PresetOverrides& o, uint64_t seed,
                              WeightFill fill) {
  if (name == "laya-english") return make_laya(kEnglish, o, seed, fill, "laya");
  if (name == "laya-multilingual") return make_laya(kMultilingual, o, seed, fill, "laya");
  if (name == "qwen2.5-0.5b") return make_decoder(kQwen, o, seed, fill);
  if (name == "tinyllama-1.1b") return make_decoder(kTinyLlama, o, seed, fill);
  std::string known;
  for (const PresetInfo& p : preset_list())
    known += std::string(known.empty() ? "" : ", ") + p.name;
  return status_error(StatusCode::kNotFound, "no preset '%s' (have: %s)", name.c_str(),
                      known.c_str());
}

}  // namespace laya::tools
