// The HAL conformance suite: every op case on every registered backend, through the HAL entry
// points (supports, prepare, load, reshape, execute), against the reference kernels.
//
//  - A backend either runs a case or refuses it. A refusal must be listed in the backend's
//    hal/<name>/conformance-exclusions.txt (a case-name prefix and a phrase of the refusal's
//    reason); a listed case that runs is a stale exclusion. Both fail the suite.
//  - A case that runs is compared with the reference (the cpu backend on kernels/ref) with the
//    op's tolerance (NMSE, tolerances below), or exactly for a backend configuration that claims
//    exact semantics: ax8850 in the reference mode (f32 activations) equals the reference bit for
//    bit; in bf16 mode it equals the reference on bf16-rounded inputs with the output rounded to
//    bf16 (and s8 weights multiplying the bf16 activations, scaled after the product).
//  - Capabilities::weight_dtypes is held to its word: a listed dtype runs at least one matmul
//    case, an unlisted one is refused in every case.
// Configurations: cpu (best Highway target), null, ax8850 (bf16), ax8850 (f32 reference mode),
// ax8850 std with attention heads and matmul columns split over its three groups. Every op of
// ir/ops.inc needs at least one case (a test fails when an op is added without one).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "hal/hal.h"
#include "ir/builder.h"
#include "ir/shape_infer.h"
#include "kernels/quant.h"

namespace laya::test {
namespace {

using ir::DType;
using ir::Shape;
using ir::ValueId;

// ---- the case list -------------------------------------------------------------------------------

struct Case {
  std::string name;  // "<op>.<variant>": exclusions match by prefix
  std::function<ir::Graph()> build;
  double nmse = 0;  // tolerance of an inexact backend (the Highway cpu) against the reference
  DType weight = DType::kCount;  // matmul / embedding weight dtype (for the weight_dtypes check)
};

std::mt19937& rng() {
  static std::mt19937 r(12345);
  return r;
}

std::vector<float> uniform(size_t n, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng());
  return v;
}

ir::Graph finish(ir::GraphBuilder&& b) {
  auto g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

Shape s3(int64_t a, int64_t b, int64_t c) {
  return Shape::fixed({a, b, c});
}

// A matrix [n, k] of `dtype` (values uniform with unit output variance).
ValueId matrix(ir::GraphBuilder& b, DType dtype, int64_t n, int64_t k, bool per_tensor = false) {
  const std::vector<float> w = uniform(static_cast<size_t>(n * k), -0.2f, 0.2f);
  const Shape s = Shape::fixed({n, k});
  ir::Quant q;
  switch (dtype) {
    case DType::kF32:
      return b.weight("w", dtype, s, w.data(), w.size() * 4);
    case DType::kF16:
    case DType::kBF16: {
      std::vector<uint16_t> h(w.size());
      for (size_t i = 0; i < w.size(); ++i)
        h[i] = dtype == DType::kF16 ? kernels::f32_to_f16(w[i]) : kernels::f32_to_bf16(w[i]);
      return b.weight("w", dtype, s, h.data(), h.size() * 2);
    }
    case DType::kI8: {
      std::vector<int8_t> v(w.size());
      for (size_t i = 0; i < w.size(); ++i) v[i] = static_cast<int8_t>(std::lround(w[i] * 635));
      q.kind = per_tensor ? ir::QuantKind::kPerTensor : ir::QuantKind::kPerChannel;
      for (int64_t r = 0; r < (per_tensor ? 1 : n); ++r)
        q.scales.push_back(0.2f / 127 * (1.0f + 0.01f * static_cast<float>(r % 7)));
      return b.weight("w", dtype, s, v.data(), v.size(), q);
    }
    case DType::kQ8_0: {
      std::vector<kernels::BlockQ8_0> blk(w.size() / 32);
      kernels::quantize_row_q8_0(w.data(), blk.data(), static_cast<int64_t>(w.size()));
      q.kind = ir::QuantKind::kBlock;
      return b.weight("w", dtype, s, blk.data(), blk.size() * sizeof blk[0], q);
    }
    case DType::kQ4_0: {
      std::vector<kernels::BlockQ4_0> blk(w.size() / 32);
      kernels::quantize_row_q4_0(w.data(), blk.data(), static_cast<int64_t>(w.size()));
      q.kind = ir::QuantKind::kBlock;
      return b.weight("w", dtype, s, blk.data(), blk.size() * sizeof blk[0], q);
    }
    case DType::kQ4_1: {
      std::vector<kernels::BlockQ4_1> blk(w.size() / 32);
      kernels::quantize_row_q4_1(w.data(), blk.data(), static_cast<int64_t>(w.size()));
      q.kind = ir::QuantKind::kBlock;
      return b.weight("w", dtype, s, blk.data(), blk.size() * sizeof blk[0], q);
    }
    case DType::kQ5_0: {
      std::vector<kernels::BlockQ5_0> blk(w.size() / 32);
      kernels::quantize_row_q5_0(w.data(), blk.data(), static_cast<int64_t>(w.size()));
      q.kind = ir::QuantKind::kBlock;
      return b.weight("w", dtype, s, blk.data(), blk.size() * sizeof blk[0], q);
    }
    case DType::kQ5_1: {
      std::vector<kernels::BlockQ5_1> blk(w.size() / 32);
      kernels::quantize_row_q5_1(w.data(), blk.data(), static_cast<int64_t>(w.size()));
      q.kind = ir::QuantKind::kBlock;
      return b.weight("w", dtype, s, blk.data(), blk.size() * sizeof blk[0], q);
    }
    default:
      FAIL("no matrix of this dtype");
  }
  return ir::kNoValue;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  // matmul: every weight type, a GEMV and a GEMM, with and without bias.
  const std::pair<const char*, DType> wtypes[] = {
      {"f32", DType::kF32},   {"f16", DType::kF16},      {"bf16", DType::kBF16},
      {"i8_row", DType::kI8}, {"i8_tensor", DType::kI8}, {"q8_0", DType::kQ8_0},
      {"q4_0", DType::kQ4_0}, {"q4_1", DType::kQ4_1},    {"q5_0", DType::kQ5_0},
      {"q5_1", DType::kQ5_1}};
  for (const auto& [tname, dtype] : wtypes)
    for (int64_t m : {1, 13})
      for (bool bias : {false, true}) {
        const bool per_tensor = std::string(tname) == "i8_tensor";
        const double tol = dtype == DType::kBF16                          ? 1e-8
                           : dtype == DType::kF32 || dtype == DType::kF16 ? 1e-9
                                                                          : 1e-10;
        out.push_back(
            {std::string("matmul.") + tname + (m == 1 ? ".gemv" : ".gemm") + (bias ? ".bias" : ""),
             [=] {
               ir::GraphBuilder b;
               const ValueId x = b.input("x", DType::kF32, s3(1, m, 96));
               const ValueId w = matrix(b, dtype, 80, 96, per_tensor);
               ValueId bv = ir::kNoValue;
               if (bias) {
                 const std::vector<float> bb = uniform(80);
                 bv = b.weight("bias", DType::kF32, Shape::fixed({80}), bb.data(), 320);
               }
               b.output(b.matmul(x, w, bv, "op"), "y");
               return finish(std::move(b));
             },
             tol, dtype});
      }
  // embedding tables.
  for (const auto& [tname, dtype] : {std::pair<const char*, DType>{"f32", DType::kF32},
                                     {"f16", DType::kF16},
                                     {"bf16", DType::kBF16},
                                     {"i8_row", DType::kI8}})
    out.push_back({std::string("embedding.") + tname,
                   [dtype = dtype] {
                     ir::GraphBuilder b;
                     const ValueId ids = b.input("ids", DType::kI32, Shape::fixed({1, 9}),
                                                 ir::InputRole::kTokenIds);
                     b.output(b.embedding(matrix(b, dtype, 50, 48), ids, "op"), "y");
                     return finish(std::move(b));
                   },
                   0.0, dtype});
  // elementwise and norms.
  for (bool bcast : {false, true})
    for (ir::Op op : {ir::Op::kAdd, ir::Op::kMul})
      out.push_back({std::string(ir::op_name(op)) + (bcast ? ".broadcast" : ".full"),
                     [=] {
                       ir::GraphBuilder b;
                       const ValueId a = b.input("a", DType::kF32, s3(2, 7, 40));
                       const ValueId c = bcast ? b.input("b", DType::kF32, Shape::fixed({40}))
                                               : b.input("b", DType::kF32, s3(2, 7, 40));
                       b.output(b.node1(op, {a, c}, {}, "op"), "y");
                       return finish(std::move(b));
                     },
                     0.0});
  for (bool beta : {false, true})
    out.push_back({std::string("layernorm.") + (beta ? "bias" : "nobias"),
                   [=] {
                     ir::GraphBuilder b;
                     const ValueId x = b.input("x", DType::kF32, s3(3, 5, 64));
                     const std::vector<float> gm = uniform(64, 0.5f, 1.5f), bt = uniform(64);
                     const ValueId g =
                         b.weight("gamma", DType::kF32, Shape::fixed({64}), gm.data(), 256);
                     const ValueId bb =
                         beta ? b.weight("beta", DType::kF32, Shape::fixed({64}), bt.data(), 256)
                              : ir::kNoValue;
                     b.output(b.layernorm(x, g, bb, 1e-5f, "op"), "y");
                     return finish(std::move(b));
                   },
                   1e-12});
  out.push_back(
      {"rmsnorm",
       [] {
         ir::GraphBuilder b;
         const ValueId x = b.input("x", DType::kF32, s3(3, 5, 64));
         const std::vector<float> gm = uniform(64, 0.5f, 1.5f);
         b.output(b.rmsnorm(x, b.weight("gamma", DType::kF32, Shape::fixed({64}), gm.data(), 256),
                            1e-6f, "op"),
                  "y");
         return finish(std::move(b));
       },
       1e-12});
  for (const auto& [vname, mode, rot] :
       {std::tuple<const char*, ir::RopeMode, int32_t>{"neox", ir::RopeMode::kNeox, 0},
        {"gptj", ir::RopeMode::kGptj, 0},
        {"partial", ir::RopeMode::kNeox, 16}})
    out.push_back({std::string("rope.") + vname,
                   [mode = mode, rot = rot] {
                     ir::GraphBuilder b;
                     const ValueId x = b.input("x", DType::kF32, s3(2, 6, 128));
                     const ValueId p = b.input("pos", DType::kI32, Shape::fixed({2, 6}),
                                               ir::InputRole::kPositions);
                     b.output(b.rope(x, p, 32, 10000.0f, mode, rot, "op"), "y");
                     return finish(std::move(b));
                   },
                   1e-12});
  // attention: heads of 64 (the NPU's granularity), prefill and decode shapes.
  struct Att {
    const char* name;
    int32_t heads, kv_heads;
    int64_t q_len, kv_len;
    ir::MaskKind mask;
    int32_t window;
    bool key_mask;
  };
  for (const Att& a : {Att{"mha", 4, 4, 11, 11, ir::MaskKind::kNone, -1, false},
                       Att{"gqa", 6, 2, 11, 11, ir::MaskKind::kNone, -1, false},
                       Att{"causal", 4, 2, 11, 11, ir::MaskKind::kCausal, -1, false},
                       Att{"window", 4, 4, 17, 17, ir::MaskKind::kNone, 3, false},
                       Att{"key_mask", 4, 4, 11, 11, ir::MaskKind::kNone, -1, true},
                       Att{"decode_past", 6, 3, 1, 23, ir::MaskKind::kCausal, -1, false},
                       Att{"chunk_past", 4, 2, 5, 19, ir::MaskKind::kCausal, -1, true}})
    out.push_back(
        {std::string("attention.") + a.name,
         [a] {
           ir::GraphBuilder b;
           const ValueId q = b.input("q", DType::kF32, s3(2, a.q_len, int64_t{a.heads} * 64));
           const ValueId k = b.input("k", DType::kF32, s3(2, a.kv_len, int64_t{a.kv_heads} * 64));
           const ValueId v = b.input("v", DType::kF32, s3(2, a.kv_len, int64_t{a.kv_heads} * 64));
           const ValueId m = a.key_mask ? b.input("mask", DType::kI32, Shape::fixed({2, a.kv_len}),
                                                  ir::InputRole::kKeyMask)
                                        : ir::kNoValue;
           ir::Attrs at;
           at.n_heads = a.heads;
           at.n_kv_heads = a.kv_heads;
           at.head_dim = 64;
           at.mask = a.mask;
           at.window = a.window;
           b.output(b.attention(q, k, v, m, at, "op"), "y");
           return finish(std::move(b));
         },
         1e-11});
  // Packed rows: per-token positions and sequence ids (a window over positions), and keys of batch
  // 1 shared by both batch rows (a KV cache of cells, some empty: k_seq < 0).
  out.push_back(
      {"attention.packed_rows",
       [] {
         ir::GraphBuilder b;
         const ValueId q = b.input("q", DType::kF32, s3(1, 13, 256));
         const ValueId k = b.input("k", DType::kF32, s3(1, 13, 256));
         const ValueId v = b.input("v", DType::kF32, s3(1, 13, 256));
         const ValueId pos = b.input("pos", DType::kI32, Shape::fixed({1, 13}));
         const ValueId seq = b.input("seq", DType::kI32, Shape::fixed({1, 13}));
         ir::Attrs at;
         at.n_heads = at.n_kv_heads = 4;
         at.head_dim = 64;
         at.window = 2;
         b.output(b.attention(q, k, v, ir::kNoValue, {pos, pos, seq, seq}, at, "op"), "y");
         return finish(std::move(b));
       },
       1e-11});
  out.push_back({"attention.shared_cells",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId q = b.input("q", DType::kF32, s3(2, 3, 256));
                   const ValueId k = b.input("k", DType::kF32, s3(1, 16, 128));
                   const ValueId v = b.input("v", DType::kF32, s3(1, 16, 128));
                   const ValueId qp = b.input("q_pos", DType::kI32, Shape::fixed({2, 3}));
                   const ValueId kp = b.input("k_pos", DType::kI32, Shape::fixed({1, 16}));
                   const ValueId qs = b.input("q_seq", DType::kI32, Shape::fixed({2, 3}));
                   const ValueId ks = b.input("k_seq", DType::kI32, Shape::fixed({1, 16}));
                   ir::Attrs at;
                   at.n_heads = 4;
                   at.n_kv_heads = 2;
                   at.head_dim = 64;
                   at.mask = ir::MaskKind::kCausal;
                   b.output(b.attention(q, k, v, ir::kNoValue, {qp, kp, qs, ks}, at, "op"), "y");
                   return finish(std::move(b));
                 },
                 1e-11});
  // activations, softmax, glu, split.
  auto unary = [&](const std::string& name, std::function<ValueId(ir::GraphBuilder&, ValueId)> f,
                   int64_t width = 72) {
    out.push_back({name,
                   [f, width] {
                     ir::GraphBuilder b;
                     const ValueId x = b.input("x", DType::kF32, s3(2, 5, width));
                     b.output(f(b, x), "y");
                     return finish(std::move(b));
                   },
                   1e-12});
  };
  unary("gelu.erf",
        [](ir::GraphBuilder& b, ValueId x) { return b.gelu(x, ir::ActKind::kGeluErf, "op"); });
  unary("gelu.tanh",
        [](ir::GraphBuilder& b, ValueId x) { return b.gelu(x, ir::ActKind::kGeluTanh, "op"); });
  unary("silu", [](ir::GraphBuilder& b, ValueId x) { return b.silu(x, "op"); });
  unary("relu", [](ir::GraphBuilder& b, ValueId x) { return b.relu(x, "op"); });
  unary("softmax", [](ir::GraphBuilder& b, ValueId x) { return b.softmax(x, "op"); });
  for (ir::ActKind act :
       {ir::ActKind::kGeluErf, ir::ActKind::kGeluTanh, ir::ActKind::kSilu, ir::ActKind::kRelu})
    unary(std::string("glu.") + ir::act_name(act),
          [act](ir::GraphBuilder& b, ValueId x) { return b.glu(x, act, "op"); });
  out.push_back({"split.three",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId x = b.input("x", DType::kF32, s3(2, 5, 96));
                   const std::vector<ValueId> parts = b.split(x, {16, 48, 32}, "op");
                   for (size_t i = 0; i < parts.size(); ++i)
                     b.output(parts[i], "y" + std::to_string(i));
                   return finish(std::move(b));
                 },
                 0.0});
  // kv_write: rows into cells of a state (a KV cache with contents from earlier executes). Its
  // output is the state's memory, never a graph output: a whole-width split reads it back, and
  // attention reads the keys and values of every cell (empty ones have k_seq < 0).
  out.push_back({"kv_write.cells",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId cache = b.state("cache", DType::kF32, s3(1, 16, 48));
                   const ValueId rows = b.input("rows", DType::kF32, s3(2, 3, 48));
                   const ValueId cells = b.input("cells", DType::kI32, Shape::fixed({2, 3}),
                                                 ir::InputRole::kCacheCells);
                   const ValueId w = b.kv_write(cache, rows, cells, "op");
                   b.output(b.split(w, {48}, "read")[0], "y");
                   return finish(std::move(b));
                 },
                 0.0});
  out.push_back(
      {"kv_write.attention",
       [] {
         ir::GraphBuilder b;
         const ValueId kc = b.state("k_cache", DType::kF32, s3(1, 16, 128));
         const ValueId vc = b.state("v_cache", DType::kF32, s3(1, 16, 128));
         const ValueId q = b.input("q", DType::kF32, s3(2, 3, 256));
         const ValueId k = b.input("k", DType::kF32, s3(2, 3, 128));
         const ValueId v = b.input("v", DType::kF32, s3(2, 3, 128));
         const ValueId cells =
             b.input("cells", DType::kI32, Shape::fixed({2, 3}), ir::InputRole::kCacheCells);
         const ValueId qp = b.input("q_pos", DType::kI32, Shape::fixed({2, 3}));
         const ValueId kp = b.input("k_pos", DType::kI32, Shape::fixed({1, 16}));
         const ValueId qs = b.input("q_seq", DType::kI32, Shape::fixed({2, 3}));
         const ValueId ks = b.input("k_seq", DType::kI32, Shape::fixed({1, 16}));
         const ValueId kw = b.kv_write(kc, k, cells, "op");
         const ValueId vw = b.kv_write(vc, v, cells, "op_v");
         ir::Attrs at;
         at.n_heads = 4;
         at.n_kv_heads = 2;
         at.head_dim = 64;
         at.mask = ir::MaskKind::kCausal;
         b.output(b.attention(q, kw, vw, ir::kNoValue, {qp, kp, qs, ks}, at, "attn"), "y");
         return finish(std::move(b));
       },
       1e-11});
  // Data movement and the Laya decision head's ops.
  out.push_back({"gather.rows",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId x = b.input("x", DType::kF32, s3(2, 5, 40));
                   const ValueId idx = b.input("idx", DType::kI32, Shape::fixed({3, 4}));
                   b.output(b.gather(x, idx, "op"), "y");
                   return finish(std::move(b));
                 },
                 0.0});
  out.push_back({"concat.three",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId x0 = b.input("x0", DType::kF32, s3(2, 5, 16));
                   const ValueId x1 = b.input("x1", DType::kF32, s3(2, 5, 24));
                   const ValueId x2 = b.input("x2", DType::kF32, s3(2, 5, 8));
                   b.output(b.concat({x0, x1, x2}, "op"), "y");
                   return finish(std::move(b));
                 },
                 0.0});
  out.push_back({"reshape.split_rows",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId x = b.input("x", DType::kF32, s3(2, 5, 12));
                   b.output(b.reshape(x, {10, 3, 4}, "op"), "y");
                   return finish(std::move(b));
                 },
                 0.0});
  out.push_back({"masked_fill",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId x = b.input("x", DType::kF32, s3(2, 5, 12));
                   const ValueId valid = b.input("valid", DType::kI32, s3(2, 5, 12));
                   b.output(b.masked_fill(x, valid, -1e4f, "op"), "y");
                   return finish(std::move(b));
                 },
                 0.0});
  out.push_back({"segment_mean",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId x = b.input("x", DType::kF32, s3(2, 7, 40));
                   // starts 3, 4, 5: segments [3, 4), [4, 5), [5, 14) (make_inputs)
                   const ValueId starts = b.input("starts", DType::kI32, Shape::fixed({3}));
                   b.output(b.segment_mean(x, starts, "op"), "y");
                   return finish(std::move(b));
                 },
                 1e-12});
  out.push_back({"act_features",
                 [] {
                   ir::GraphBuilder b;
                   const ValueId logits = b.input("logits", DType::kF32, s3(2, 5, 6));
                   const ValueId valid = b.input("valid", DType::kI32, s3(2, 5, 6));
                   b.output(b.act_features(logits, valid, "op"), "y");
                   return finish(std::move(b));
                 },
                 1e-12});
  return out;
}

// ---- running one case on one backend ---------------------------------------------------------

struct Config {
  std::string label;  // what the report names
  std::string backend;
  std::vector<std::pair<std::string, std::string>> settings;
  DType activations = DType::kF32;
  bool split = false;  // split attention / matmul across the backend's groups
};

struct Aligned {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, Aligned>;
Buffer alloc(uint64_t bytes) {
  return Buffer(
      static_cast<uint8_t*>(std::aligned_alloc(64, (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64)));
}

std::vector<ir::Extents> extents(const ir::Graph& g) {
  std::vector<ir::Extents> e(g.values.size());
  const int64_t none[ir::kMaxSymbols] = {};  // the cases have fixed shapes
  for (size_t v = 0; v < g.values.size(); ++v)
    REQUIRE(ir::shape_eval(g.values[v].shape, none, &e[v]).is_ok());
  return e;
}

// Deterministic inputs for `g`: floats uniform, ids in range, positions, masks with zeros. Other
// i32 inputs (gather's idx, segment_mean's starts) are i % (last extent) + 3.
std::vector<std::vector<uint8_t>> make_inputs(const ir::Graph& g,
                                              const std::vector<ir::Extents>& e) {
  std::vector<std::vector<uint8_t>> in;
  std::mt19937 r(99);
  for (ValueId id : g.inputs) {
    const ir::Value& v = g.values[id];
    const int64_t n = e[id].count();
    in.emplace_back(static_cast<size_t>(n) * 4);
    if (v.dtype == DType::kF32) {
      std::uniform_real_distribution<float> d(-2.0f, 2.0f);
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<float*>(in.back().data())[i] = d(r);
      continue;
    }
    int32_t* p = reinterpret_cast<int32_t*>(in.back().data());
    const int64_t row = e[id].back();
    if (v.role == ir::InputRole::kCacheCells) {  // distinct cells of the cache kv_write fills
      int64_t cache_cells = 1;
      for (const ir::Node& node : g.nodes)
        if (node.op == ir::Op::kKvWrite && node.inputs[2] == id)
          cache_cells = e[node.inputs[0]].d[1];
      REQUIRE(n <= cache_cells);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>((i * 5 + 2) % cache_cells);
      continue;
    }
    for (int64_t i = 0; i < n; ++i)
      p[i] = v.role == ir::InputRole::kTokenIds ? static_cast<int32_t>(r() % 50)
             : v.role == ir::InputRole::kKeyMask || v.name == "valid"
                 ? static_cast<int32_t>((i * 7) % 5 != 0)
             : v.name == "seq"   ? static_cast<int32_t>(i * 3 / n)                // 3 rows
             : v.name == "q_seq" ? static_cast<int32_t>(i / 3)                    // per batch row
             : v.name == "k_seq" ? static_cast<int32_t>(i % 5 == 4 ? -1 : i % 2)  // empty cells
             : v.name == "q_pos" ? static_cast<int32_t>(5 + i % 3)
             : v.name == "k_pos" ? static_cast<int32_t>(i / 2)
                                 : static_cast<int32_t>(i % row + 3);
  }
  return in;
}

// Runs `g` (the case's op, or a reference graph of a few nodes) on `b`. Returns the outputs, or
// the refusal.
Result<std::vector<std::vector<float>>> run_case(hal::Backend& b, const ir::Graph& g,
                                                 const std::vector<std::vector<uint8_t>>& inputs,
                                                 const Config& c) {
  const std::vector<ir::Extents> e = extents(g);
  for (const ir::Node& n : g.nodes) LAYA_RETURN_IF_ERROR(b.supports(g, n, e.data()));
  hal::Subgraph sg;
  sg.graph = &g;
  sg.same_backend.assign(g.nodes.size(), 1);
  const ir::Node& n = g.nodes[0];
  const hal::Capabilities& caps = b.capabilities();
  if (c.split && caps.splits_nodes && caps.n_groups > 1 &&
      (n.op == ir::Op::kAttention || n.op == ir::Op::kMatMul)) {
    const bool att = n.op == ir::Op::kAttention;
    const int64_t total = att ? n.attrs.n_heads : g.values[n.inputs[1]].shape.dims[0].c;
    const int64_t unit = att ? n.attrs.n_heads / n.attrs.n_kv_heads : 16;
    const int64_t units = (total + unit - 1) / unit;
    int64_t at = 0;
    for (uint32_t grp = 0; grp < caps.n_groups && at < total; ++grp) {
      const int64_t take = (units * (grp + 1)) / caps.n_groups - (units * grp) / caps.n_groups;
      if (take == 0) continue;
      const int64_t end = std::min(total, at + take * unit);
      sg.nodes.push_back(0);
      sg.parts.push_back({at, end, static_cast<int32_t>(grp)});
      at = end;
    }
  } else {
    for (ir::NodeId id = 0; id < g.nodes.size(); ++id) sg.nodes.push_back(id);
  }
  const std::vector<std::vector<ir::Extents>> buckets = {e};
  hal::PrepareOptions po;
  po.max_extents = e.data();
  po.buckets = buckets;
  po.activations = c.activations;
  LAYA_ASSIGN_OR_RETURN(std::unique_ptr<hal::Executable> exe, b.prepare(sg, po));
  const hal::MemoryNeeds needs = exe->needs();
  Buffer persistent = alloc(needs.persistent_bytes), scratch = alloc(needs.scratch_bytes);
  LAYA_RETURN_IF_ERROR(b.load(*exe, persistent.get(), needs.persistent_bytes));
  std::vector<hal::TensorBinding> bind(g.values.size());
  std::vector<std::vector<float>> outs(g.outputs.size()), temps(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) {
    bind[v].extents = e[v];
    if (g.values[v].kind == ir::ValueKind::kWeight)
      bind[v].data = const_cast<uint8_t*>(g.values[v].data);
    if (g.values[v].kind == ir::ValueKind::kState) {  // earlier contents: the same on every backend
      std::mt19937 r(static_cast<uint32_t>(v));
      std::uniform_real_distribution<float> d(-1.0f, 1.0f);
      temps[v].resize(static_cast<size_t>(e[v].count()));
      for (float& x : temps[v]) x = d(r);
      bind[v].data = temps[v].data();
    }
    if (g.values[v].kind == ir::ValueKind::kActivation) {  // intermediates (outputs rebound below)
      temps[v].assign(static_cast<size_t>(e[v].count()), 0.0f);
      bind[v].data = temps[v].data();
    }
  }
  for (size_t v = 0; v < g.values.size(); ++v) {  // kv_write outputs are their state's memory
    const ValueId st = ir::aliased_state(g, static_cast<ValueId>(v));
    if (st != ir::kNoValue) bind[v].data = bind[st].data;
  }
  for (size_t i = 0; i < g.inputs.size(); ++i)
    bind[g.inputs[i]].data = const_cast<uint8_t*>(inputs[i].data());
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    outs[i].assign(static_cast<size_t>(e[g.outputs[i]].count()), -7.0f);
    bind[g.outputs[i]].data = outs[i].data();
  }
  LAYA_RETURN_IF_ERROR(b.reshape(*exe, bind.data(), 0));
  hal::ExecContext ctx;
  ctx.values = bind.data();
  ctx.scratch = scratch.get();
  LAYA_RETURN_IF_ERROR(b.execute(*exe, ctx));
  return outs;
}

float bf16_round(float x) {
  return kernels::bf16_to_f32(kernels::f32_to_bf16(x));
}

// The w8a16 semantics of ax8850.h in terms of reference ops: a graph whose s8 matmul is a bf16
// matmul over the same integers, then the row scales and the bias.
ir::Graph w8a16_reference_graph(const ir::Graph& g) {
  const ir::Node& n = g.nodes[0];
  const ir::Value& w = g.values[n.inputs[1]];
  const int64_t rows = w.shape.dims[0].c, k = w.shape.dims[1].c;
  ir::GraphBuilder b;
  const ir::Value& xv = g.values[n.inputs[0]];
  const ValueId x = b.input("x", DType::kF32, xv.shape);
  std::vector<uint16_t> wb(static_cast<size_t>(rows * k));
  for (size_t i = 0; i < wb.size(); ++i)
    wb[i] = kernels::f32_to_bf16(static_cast<float>(static_cast<int8_t>(w.data[i])));
  std::vector<float> scales(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    scales[static_cast<size_t>(r)] = w.quant.kind == ir::QuantKind::kPerTensor
                                         ? w.quant.scales[0]
                                         : w.quant.scales[static_cast<size_t>(r)];
  ValueId y = b.matmul(x, b.weight("wb", DType::kBF16, w.shape, wb.data(), wb.size() * 2),
                       ir::kNoValue, "op");
  y = b.mul(
      y, b.weight("scales", DType::kF32, Shape::fixed({rows}), scales.data(), scales.size() * 4));
  if (n.inputs.size() > 2) {
    const ir::Value& bias = g.values[n.inputs[2]];
    y = b.add(y, b.weight("bias", DType::kF32, bias.shape, bias.data, bias.nbytes));
  }
  b.output(y, "y");
  return finish(std::move(b));
}

double nmse(const std::vector<float>& a, const std::vector<float>& r) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double{a[i]} - r[i]) * (double{a[i]} - r[i]);
    den += double{r[i]} * r[i];
  }
  return den > 0 ? num / den : num;
}

// The exclusion list of a backend: lines "<case prefix> <phrase of the reason>".
std::vector<std::pair<std::string, std::string>> exclusions(const std::string& backend) {
  const char* root = std::getenv("LAYA_SOURCE_ROOT");
  REQUIRE_MESSAGE(root != nullptr, "LAYA_SOURCE_ROOT is not set (meson sets it)");
  std::ifstream f(std::string(root) + "/hal/" + backend + "/conformance-exclusions.txt");
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.find(' ');
    out.emplace_back(line.substr(0, sp),
                     sp == std::string::npos ? "" : line.substr(line.find_first_not_of(' ', sp)));
  }
  return out;
}

bool has_prefix(const std::string& s, const std::string& p) {
  return p == "*" || s.rfind(p, 0) == 0;
}

TEST_CASE("HAL conformance: every op of ir/ops.inc has a case") {
  std::vector<int> covered(static_cast<size_t>(ir::Op::kCount), 0);
  for (const Case& k : cases()) {
    const ir::Graph g = k.build();
    ++covered[static_cast<size_t>(g.nodes[0].op)];
  }
  for (size_t op = 0; op < covered.size(); ++op)
    CHECK_MESSAGE(covered[op] > 0,
                  "no conformance case for op '"
                      << ir::op_name(static_cast<ir::Op>(op))
                      << "': add one to cases() in tests/hal/test_conformance.cpp");
}

TEST_CASE("HAL conformance: every op case on every registered backend") {
  const hal::Registry& reg = hal::builtin_registry();
  std::vector<Config> configs;
  for (const hal::BackendInfo& info : reg.list()) {
    const std::string name = info.name;
    if (name == "ax8850") {
      configs.push_back({"ax8850 (bf16)", name, {}, DType::kBF16});
      configs.push_back({"ax8850 (f32 reference mode)", name, {}, DType::kF32});
      configs.push_back(
          {"ax8850 std, split over 3 groups (bf16)", name, {{"vnpu", "std"}}, DType::kBF16, true});
    } else {
      configs.push_back({name, name, {}, DType::kF32});
    }
  }
  hal::BackendOptions ref_opts;
  ref_opts.settings = {{"kernels", "ref"}};
  ref_opts.n_threads = 1;
  auto ref = reg.create("cpu", ref_opts);
  REQUIRE(ref.is_ok());
  const std::vector<Case> all = cases();
  const Config ref_cfg{"ref", "cpu", {}, DType::kF32};
  for (const Config& c : configs) {
    CAPTURE(c.label);
    hal::BackendOptions o;
    o.settings = c.settings;
    o.n_threads = 2;
    auto backend = reg.create(c.backend, o);
    REQUIRE_MESSAGE(backend.is_ok(), backend.status().to_string());
    const auto excl = exclusions(c.backend);
    std::vector<int> used(excl.size(), 0);
    int ran = 0, refused = 0;
    uint64_t ran_dtypes = 0, refused_dtypes_everywhere = ~uint64_t{0}, seen_dtypes = 0;
    for (const Case& k : all) {
      CAPTURE(k.name);
      const ir::Graph g = k.build();
      const std::vector<ir::Extents> e = extents(g);
      const auto inputs = make_inputs(g, e);
      auto got = run_case(**backend, g, inputs, c);
      int listed = -1;
      for (size_t i = 0; i < excl.size(); ++i)
        if (has_prefix(k.name, excl[i].first)) listed = static_cast<int>(i);
      if (k.weight != DType::kCount) seen_dtypes |= uint64_t{1} << static_cast<int>(k.weight);
      if (!got.is_ok()) {
        ++refused;
        CHECK_MESSAGE(got.status().code() == StatusCode::kUnsupported, got.status().to_string());
        REQUIRE_MESSAGE(listed >= 0, "refused but not in hal/" << c.backend
                                                               << "/conformance-exclusions.txt: "
                                                               << got.status().message());
        CHECK_MESSAGE(
            std::string(got.status().message()).find(excl[static_cast<size_t>(listed)].second) !=
                std::string::npos,
            "the refusal '" << got.status().message() << "' does not give the listed reason '"
                            << excl[static_cast<size_t>(listed)].second << "'");
        ++used[static_cast<size_t>(listed)];
        continue;
      }
      CHECK_MESSAGE(listed < 0, "listed as unsupported but runs: stale exclusion '"
                                    << excl[static_cast<size_t>(std::max(listed, 0))].first << "'");
      ++ran;
      if (k.weight != DType::kCount) {
        ran_dtypes |= uint64_t{1} << static_cast<int>(k.weight);
        refused_dtypes_everywhere &= ~(uint64_t{1} << static_cast<int>(k.weight));
      }
      // The reference.
      const bool bf16 = c.activations == DType::kBF16;
      std::vector<std::vector<uint8_t>> ref_in = inputs;
      if (bf16)
        for (size_t i = 0; i < g.inputs.size(); ++i)
          if (g.values[g.inputs[i]].dtype == DType::kF32)
            for (size_t j = 0; j < ref_in[i].size() / 4; ++j) {
              float* f = reinterpret_cast<float*>(ref_in[i].data()) + j;
              *f = bf16_round(*f);
            }
      const bool w8a16 = bf16 && g.nodes[0].op == ir::Op::kMatMul &&
                         g.values[g.nodes[0].inputs[1]].dtype == DType::kI8;
      const ir::Graph rg = w8a16 ? w8a16_reference_graph(g) : ir::Graph();
      auto want = run_case(**ref, w8a16 ? rg : g, ref_in, ref_cfg);
      REQUIRE_MESSAGE(want.is_ok(), want.status().to_string());
      REQUIRE(got->size() == want->size());
      const bool exact = c.backend == "ax8850";
      for (size_t i = 0; i < got->size(); ++i) {
        std::vector<float>& w = (*want)[i];
        if (bf16)
          for (float& x : w) x = bf16_round(x);
        if (exact) {
          CHECK_MESSAGE(std::memcmp((*got)[i].data(), w.data(), w.size() * 4) == 0,
                        "not bit-exact to its semantics; nmse " << nmse((*got)[i], w));
        } else {
          CHECK(nmse((*got)[i], w) <= k.nmse);
        }
      }
    }
    for (size_t i = 0; i < excl.size(); ++i)
      CHECK_MESSAGE(used[i] > 0, "exclusion '" << excl[i].first << "' matches no refused case");
    const uint64_t claimed = (*backend)->capabilities().weight_dtypes & seen_dtypes;
    CHECK_MESSAGE((claimed & ~ran_dtypes) == 0, "a weight dtype in weight_dtypes never ran");
    CHECK_MESSAGE((seen_dtypes & ~claimed & ~refused_dtypes_everywhere) == 0,
                  "a weight dtype outside weight_dtypes ran");
    MESSAGE(c.label << ": " << ran << " case(s) pass, " << refused << " refused as listed");
    if (c.backend == "null") CHECK(ran == 0);
    if (c.backend == "cpu") CHECK(refused == 0);
  }
}

}  // namespace
}  // namespace laya::test
