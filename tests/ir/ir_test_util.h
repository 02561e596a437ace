// Helpers shared by the IR tests: status checks, zero-filled weights, a small valid model graph.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/shape_infer.h"
#include "ir/types.h"

namespace laya::ir::test {

// Checked Dim arithmetic (ir::dim_add / dim_mul) for sums the test knows cannot overflow.
inline Dim plus(const Dim& a, const Dim& b) {
  Result<Dim> r = dim_add(a, b);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  return *r;
}
inline Dim plus(const Dim& a, const Dim& b, const Dim& c) {
  return plus(plus(a, b), c);
}
inline Dim times(const Dim& d, int64_t k) {
  Result<Dim> r = dim_mul(d, k);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  return *r;
}

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

#if LAYA_STRIP_MESSAGES
inline constexpr bool kHaveMessages = false;  // -Dstrip_messages=true: codes only
#else
inline constexpr bool kHaveMessages = true;
#endif

// Checks the code and that the message mentions every string in `parts`.
#define CHECK_STATUS(status_expr, want_code, ...)                                 \
  do {                                                                            \
    const ::laya::Status laya_st_ = (status_expr);                                \
    INFO("status: " << laya_st_.to_string());                                     \
    CHECK(laya_st_.code() == (want_code));                                        \
    if (::laya::ir::test::kHaveMessages)                                          \
      for (const std::string& laya_part_ : std::vector<std::string>{__VA_ARGS__}) \
        CHECK_MESSAGE(::laya::ir::test::contains(laya_st_.message(), laya_part_), \
                      "message lacks '" << laya_part_ << "'");                    \
  } while (0)

#define CHECK_OK(status_expr)                              \
  do {                                                     \
    const ::laya::Status laya_st_ = (status_expr);         \
    CHECK_MESSAGE(laya_st_.is_ok(), laya_st_.to_string()); \
  } while (0)

// Bytes of `shape` (fixed) in `dtype`; REQUIREs success.
inline uint64_t fixed_bytes(DType dtype, const Shape& shape) {
  Result<int64_t> n = shape_max_count(shape, {});
  REQUIRE(n.is_ok());
  Result<uint64_t> b = dtype_bytes(dtype, *n);
  REQUIRE(b.is_ok());
  return *b;
}

// A weight whose bytes are `fill` repeated (the IR never looks at values, only sizes).
inline ValueId zero_weight(GraphBuilder& b, const std::string& name, DType dtype,
                           const Shape& shape, Quant quant = {}, uint8_t fill = 0) {
  const std::vector<uint8_t> bytes(fixed_bytes(dtype, shape), fill);
  return b.weight(name, dtype, shape, bytes.data(), bytes.size(), std::move(quant));
}

inline Quant per_tensor(float scale) {
  Quant q;
  q.kind = QuantKind::kPerTensor;
  q.scales = {scale};
  return q;
}

inline Quant per_channel(int32_t axis, size_t n, float scale = 0.5f) {
  Quant q;
  q.kind = QuantKind::kPerChannel;
  q.axis = axis;
  q.scales.assign(n, scale);
  return q;
}

inline Quant block_quant() {
  Quant q;
  q.kind = QuantKind::kBlock;
  return q;
}

// A small decoder-like block that uses every op, built with GraphBuilder (so it verifies):
//   ids, pos, mask [batch, seq] -> embedding -> rmsnorm -> matmul (q8_0) -> split q/k/v -> rope
//   -> attention (GQA, key mask) -> matmul (i8 per-channel) -> add residual -> layernorm -> glu
//   -> gelu / silu / relu / mul -> matmul -> softmax = logits; beside it gather, concat,
//   segment_mean, reshape, masked_fill and act_features; and the roped k written into the state
//   k_cache [1, 16, 16] at `cells` by a last node, kv_write.
struct TinyModel {
  Graph g;
  int batch = -1, seq = -1;
  ValueId ids = kNoValue, pos = kNoValue, mask = kNoValue, cells = kNoValue;
  ValueId k_cache = kNoValue, k_write = kNoValue;
  ValueId tok_emb = kNoValue, wqkv = kNoValue, wo = kNoValue, w_up = kNoValue, w_out = kNoValue;
  ValueId h = kNoValue, qkv0 = kNoValue, attn = kNoValue, logits = kNoValue;
};

inline constexpr int kTinyD = 32, kTinyHeads = 4, kTinyKvHeads = 2, kTinyHeadDim = 8,
                     kTinyVocab = 50;

// `weight_fill` changes the bytes of "wq" (for graph_equal tests).
inline TinyModel make_tiny_model(uint8_t weight_fill = 0) {
  TinyModel m;
  GraphBuilder b;
  m.batch = b.symbol("batch", 1, 4);
  m.seq = b.symbol("seq", 1, 64);
  const Shape bs = Shape::of({Dim::sym(m.batch), Dim::sym(m.seq)});
  m.ids = b.input("ids", DType::kI32, bs, InputRole::kTokenIds);
  m.pos = b.input("pos", DType::kI32, bs, InputRole::kPositions);
  m.mask = b.input("mask", DType::kI32, bs, InputRole::kKeyMask);
  const int64_t d = kTinyD, kv = int64_t{kTinyKvHeads} * kTinyHeadDim;
  m.tok_emb = zero_weight(b, "tok_emb", DType::kF32, Shape::fixed({kTinyVocab, d}));
  const ValueId norm_w = zero_weight(b, "norm_w", DType::kF32, Shape::fixed({d}));
  m.wqkv =
      zero_weight(b, "wq", DType::kQ8_0, Shape::fixed({d + 2 * kv, d}), block_quant(), weight_fill);
  m.wo = zero_weight(b, "wo", DType::kI8, Shape::fixed({d, d}), per_channel(0, d));
  const ValueId ln_b = zero_weight(b, "ln_b", DType::kF32, Shape::fixed({d}));
  m.w_up = zero_weight(b, "w_up", DType::kF16, Shape::fixed({4 * d, d}));
  const ValueId w_down = zero_weight(b, "w_down", DType::kBF16, Shape::fixed({d, 2 * d}));
  m.w_out = zero_weight(b, "w_out", DType::kQ4_0, Shape::fixed({kTinyVocab, d}), block_quant());

  m.h = b.embedding(m.tok_emb, m.ids, "embed");
  const ValueId hn = b.rmsnorm(m.h, norm_w, 1e-6f, "attn_norm");
  const ValueId qkv = b.matmul(hn, m.wqkv, kNoValue, "qkv");
  const std::vector<ValueId> parts = b.split(qkv, {d, kv, kv}, "qkv_split");
  REQUIRE(parts.size() == 3);
  m.qkv0 = parts[0];
  const ValueId q = b.rope(parts[0], m.pos, kTinyHeadDim, 10000.0f, RopeMode::kNeox, 0, "rope_q");
  const ValueId k = b.rope(parts[1], m.pos, kTinyHeadDim, 10000.0f, RopeMode::kNeox, 0, "rope_k");
  Attrs at;
  at.n_heads = kTinyHeads;
  at.n_kv_heads = kTinyKvHeads;
  at.head_dim = kTinyHeadDim;
  at.mask = MaskKind::kCausal;
  m.attn = b.attention(q, k, parts[2], m.mask, at, "attn");
  const ValueId o = b.matmul(m.attn, m.wo, kNoValue, "attn_out");
  const ValueId r = b.add(m.h, o, "residual");
  const ValueId ln = b.layernorm(r, norm_w, ln_b, 1e-5f, "ffn_norm");
  const ValueId up = b.matmul(ln, m.w_up, kNoValue, "up");
  const ValueId g1 = b.glu(up, ActKind::kSilu, "swiglu");
  const ValueId g2 = b.gelu(g1, ActKind::kGeluTanh, "gelu");
  const ValueId g3 = b.silu(g2, "silu");
  const ValueId g4 = b.relu(g3, "relu");
  const ValueId g5 = b.mul(g4, g1, "gate");
  const ValueId down = b.matmul(g5, w_down, kNoValue, "down");
  const ValueId r2 = b.add(r, down, "residual2");
  const ValueId lg = b.matmul(r2, m.w_out, kNoValue, "lm_head");
  m.logits = b.softmax(lg, "probs");
  // The data-movement and decision-head ops, off the logits path.
  const ValueId cat = b.concat({b.gather(r2, m.pos, "gather"), r2}, "concat");
  b.segment_mean(cat, zero_weight(b, "starts", DType::kI32, Shape::fixed({2})), "segment_mean");
  const ValueId w_score = zero_weight(b, "w_score", DType::kF32, Shape::fixed({1, d}));
  const ValueId score = b.reshape(b.matmul(r2, w_score, kNoValue, "score"), {-1, -2}, "squeeze");
  b.act_features(b.masked_fill(score, m.mask, -1e4f, "masked_fill"), m.mask, "act_features");
  b.output(m.logits, "logits");
  m.cells = b.input("cells", DType::kI32, bs, InputRole::kCacheCells);
  m.k_cache = b.state("k_cache", DType::kF32, Shape::fixed({1, 16, kv}));
  m.k_write = b.kv_write(m.k_cache, k, m.cells, "k_write");
  b.meta().architecture = "test";
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  m.g = std::move(g).value();
  return m;
}

// Index of the node named `name` (REQUIREs it exists).
inline NodeId node_named(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) return static_cast<NodeId>(i);
  FAIL("no node named " << name);
  return kNoNode;
}

}  // namespace laya::ir::test
