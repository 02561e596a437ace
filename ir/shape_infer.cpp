#include "ir/shape_infer.h"

#include <cstdio>
#include <string>

namespace laya::ir {

namespace {

// Error helper: "node 12 'layer0.attn' (attention): <what>".
struct Ctx {
  const Graph& g;
  const Node& n;
  NodeId id;

  Status err(StatusCode code, const std::string& what) const {
    return status_error(code, "node %u '%s' (%s): %s", id, n.name.c_str(), op_name(n.op),
                        what.c_str());
  }
  const Value& in(size_t i) const { return g.values[n.inputs[i]]; }
  bool has(size_t i) const { return n.input(i) != kNoValue; }
  std::string shp(const Shape& s) const { return shape_to_string(s, g.symbols); }
  std::string dim(const Dim& d) const { return dim_to_string(d, g.symbols); }

  Status want_dtype(size_t i, DType dt, const char* role) const {
    if (in(i).dtype != dt)
      return err(StatusCode::kGraphDtypeMismatch, std::string(role) + " '" + in(i).name + "' is " +
                                                      dtype_name(in(i).dtype) + ", expected " +
                                                      dtype_name(dt));
    return Status::ok();
  }
  // f32 data or i32 indices: the ops that only move 4-byte elements (gather, reshape).
  Status want_f32_or_i32(size_t i, const char* role) const {
    if (in(i).dtype != DType::kF32 && in(i).dtype != DType::kI32)
      return err(StatusCode::kGraphDtypeMismatch, std::string(role) + " '" + in(i).name + "' is " +
                                                      dtype_name(in(i).dtype) +
                                                      ", expected f32 or i32");
    return Status::ok();
  }
  Status want_rank(size_t i, int lo, int hi, const char* role) const {
    const int r = in(i).shape.rank;
    if (r < lo || r > hi)
      return err(StatusCode::kGraphShapeMismatch, std::string(role) + " '" + in(i).name +
                                                      "' has rank " + std::to_string(r) +
                                                      ", expected " + std::to_string(lo) +
                                                      (lo == hi ? "" : ".." + std::to_string(hi)));
    return Status::ok();
  }
  Status want_eq(const Dim& a, const Dim& b, const std::string& what) const {
    if (!(a == b))
      return err(StatusCode::kGraphShapeMismatch, what + ": " + dim(a) + " != " + dim(b));
    return Status::ok();
  }
  // A fixed, positive last dimension (needed to split heads / halves).
  Result<int64_t> fixed_last(size_t i, const char* role) const {
    const Dim& d = in(i).shape.back();
    if (!d.is_fixed() || d.c <= 0)
      return err(StatusCode::kGraphShapeMismatch,
                 std::string(role) + " needs a fixed last dimension, got " + dim(d));
    return d.c;
  }
};

Shape with_last(const Shape& s, Dim last) {
  Shape r = s;
  r.dims[r.rank - 1] = last;
  return r;
}

bool is_suffix(const Shape& b, const Shape& a) {
  if (b.rank > a.rank) return false;
  for (int i = 0; i < b.rank; ++i)
    if (!(b.dims[b.rank - 1 - i] == a.dims[a.rank - 1 - i])) return false;
  return true;
}

}  // namespace

Status weight_format_check(DType dtype, const Quant& q) {
  auto no = [&](const char* why) {
    return status_error(StatusCode::kGraphQuantMismatch,
                        "%s with %s quantization is not supported: %s", dtype_name(dtype),
                        quant_kind_name(q.kind), why);
  };
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      if (q.kind != QuantKind::kNone) return no("float weights are not quantized");
      return Status::ok();
    case DType::kI8:
      for (int32_t z : q.zero_points)
        if (z != 0) return no("only symmetric int8 (zero points 0)");
      if (q.kind != QuantKind::kPerTensor && !(q.kind == QuantKind::kPerChannel && q.axis == 0))
        return no("int8 needs one per-tensor scale or per-row scales (per-channel, axis 0)");
      return Status::ok();
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ5_0:
    case DType::kQ5_1:
      if (q.kind != QuantKind::kBlock) return no("block types need block quantization");
      return Status::ok();
    default:
      return no("no kernel takes this dtype as a weight");
  }
}

namespace {

std::string attr_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}
template <class T>
std::string attr_text(T v) {  // int32 and the enums (as their stored value)
  return std::to_string(static_cast<int64_t>(v));
}

// Every scalar attribute within its ir/attrs.inc limits (NaN is outside any limits).
Status check_attr_limits(const Ctx& c, const Attrs& a) {
#define ATTR(type, name, def, lo, hi)                                                              \
  if (!(a.name >= AttrLimits::name##_min && a.name <= AttrLimits::name##_max))                     \
    return c.err(StatusCode::kGraphBadAttribute, #name " " + attr_text(a.name) + " is outside [" + \
                                                     attr_text(AttrLimits::name##_min) + ", " +    \
                                                     attr_text(AttrLimits::name##_max) + "]");
#include "ir/attrs.inc"
#undef ATTR
  return Status::ok();
}

}  // namespace

Status infer_node(const Graph& g, const Node& n, std::vector<InferredOutput>* out) {
  const NodeId id = static_cast<NodeId>(&n - g.nodes.data());
  if (!op_is_valid(static_cast<uint32_t>(n.op)))
    return status_error(StatusCode::kGraphUnknownOp, "node %u '%s': op %u is unknown", id,
                        n.name.c_str(), static_cast<unsigned>(n.op));
  const Ctx c{g, n, id < g.nodes.size() ? id : kNoNode};
  const OpInfo& info = op_info(n.op);
  const int n_in = static_cast<int>(n.inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs)
    return c.err(
        StatusCode::kGraphInvalid,
        std::to_string(n_in) + " inputs, expected " + std::to_string(info.min_inputs) +
            (info.min_inputs == info.max_inputs ? "" : ".." + std::to_string(info.max_inputs)));
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ValueId v = n.inputs[i];
    if (v == kNoValue && static_cast<int>(i) < info.min_inputs)
      return c.err(StatusCode::kGraphUndefinedValue,
                   "input " + std::to_string(i) + " is required but absent");
    if (v == kNoValue && i + 1 == n.inputs.size())
      return c.err(StatusCode::kGraphInvalid, "the last input is absent (omit it instead)");
    if (v != kNoValue && v >= g.values.size())
      return c.err(StatusCode::kGraphUndefinedValue,
                   "input value id " + std::to_string(v) + " does not exist");
  }
  const size_t n_out =
      info.n_outputs >= 0 ? static_cast<size_t>(info.n_outputs) : n.attrs.sizes.size();
  if (n.outputs.size() != n_out)
    return c.err(StatusCode::kGraphInvalid,
                 std::to_string(n.outputs.size()) + " outputs, expected " + std::to_string(n_out));
  if (n_out == 0) return c.err(StatusCode::kGraphBadAttribute, "split needs at least one size");
  out->assign(n_out, InferredOutput{});
  InferredOutput& o = (*out)[0];
  const Attrs& a = n.attrs;
  LAYA_RETURN_IF_ERROR(check_attr_limits(c, a));

  switch (n.op) {
    case Op::kEmbedding: {
      const Value& table = c.in(0);
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 2, 2, "table"));
      if (Status st = weight_format_check(table.dtype, table.quant); !st.is_ok())
        return c.err(st.code(), std::string("table dtype ") + st.message());
      LAYA_RETURN_IF_ERROR(c.want_dtype(1, DType::kI32, "ids"));
      LAYA_RETURN_IF_ERROR(c.want_rank(1, 0, kMaxRank - 1, "ids"));
      o.shape = c.in(1).shape;
      o.shape.dims[o.shape.rank++] = table.shape.dims[1];
      return Status::ok();
    }
    case Op::kMatMul: {
      const Value& w = c.in(1);
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "x"));
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 1, kMaxRank, "x"));
      LAYA_RETURN_IF_ERROR(c.want_rank(1, 2, 2, "weight"));
      if (Status st = weight_format_check(w.dtype, w.quant); !st.is_ok())
        return c.err(st.code(), std::string("weight dtype ") + st.message());
      LAYA_RETURN_IF_ERROR(
          c.want_eq(c.in(0).shape.back(), w.shape.dims[1], "x [..., K] vs w [N, K]"));
      if (c.has(2)) {
        LAYA_RETURN_IF_ERROR(c.want_dtype(2, DType::kF32, "bias"));
        LAYA_RETURN_IF_ERROR(c.want_rank(2, 1, 1, "bias"));
        LAYA_RETURN_IF_ERROR(
            c.want_eq(c.in(2).shape.dims[0], w.shape.dims[0], "bias [N] vs w [N, K]"));
      }
      o.shape = with_last(c.in(0).shape, w.shape.dims[0]);
      return Status::ok();
    }
    case Op::kAdd:
    case Op::kMul: {
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "a"));
      LAYA_RETURN_IF_ERROR(c.want_dtype(1, DType::kF32, "b"));
      if (!is_suffix(c.in(1).shape, c.in(0).shape))
        return c.err(StatusCode::kGraphShapeMismatch,
                     "b " + c.shp(c.in(1).shape) + " is not a suffix of a " + c.shp(c.in(0).shape));
      o.shape = c.in(0).shape;
      return Status::ok();
    }
    case Op::kLayerNorm:
    case Op::kRmsNorm: {
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "x"));
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 1, kMaxRank, "x"));
      for (size_t i = 1; i < n.inputs.size(); ++i) {
        if (!c.has(i)) continue;
        const char* role = i == 1 ? "gamma" : "beta";
        LAYA_RETURN_IF_ERROR(c.want_dtype(i, DType::kF32, role));
        LAYA_RETURN_IF_ERROR(c.want_rank(i, 1, 1, role));
        LAYA_RETURN_IF_ERROR(c.want_eq(c.in(i).shape.dims[0], c.in(0).shape.back(),
                                       std::string(role) + " [D] vs x [..., D]"));
      }
      o.shape = c.in(0).shape;
      return Status::ok();
    }
    case Op::kRope: {
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "x"));
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 3, 3, "x"));
      LAYA_RETURN_IF_ERROR(c.want_dtype(1, DType::kI32, "positions"));
      LAYA_RETURN_IF_ERROR(c.want_rank(1, 2, 2, "positions"));
      LAYA_RETURN_IF_ERROR(
          c.want_eq(c.in(1).shape.dims[0], c.in(0).shape.dims[0], "batch of positions vs x"));
      LAYA_RETURN_IF_ERROR(
          c.want_eq(c.in(1).shape.dims[1], c.in(0).shape.dims[1], "seq of positions vs x"));
      LAYA_ASSIGN_OR_RETURN(const int64_t width, c.fixed_last(0, "x"));
      if (a.head_dim <= 0 || width % a.head_dim != 0)
        return c.err(
            StatusCode::kGraphBadAttribute,
            "head_dim " + std::to_string(a.head_dim) + " does not divide " + std::to_string(width));
      const int32_t rot = a.rotary_dim == 0 ? a.head_dim : a.rotary_dim;
      if (rot <= 0 || rot > a.head_dim || rot % 2 != 0)
        return c.err(StatusCode::kGraphBadAttribute, "rotary_dim " + std::to_string(a.rotary_dim) +
                                                         " must be even and <= head_dim");
      o.shape = c.in(0).shape;
      return Status::ok();
    }
    case Op::kAttention: {
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "q"));
      for (size_t i = 0; i < 3; ++i) {
        const char* role = i == 0 ? "q" : i == 1 ? "k" : "v";
        LAYA_RETURN_IF_ERROR(c.want_rank(i, 3, 3, role));
      }
      // k / v: f32, or both f16 read from an f16 KV cache (kv_write outputs).
      for (size_t i = 1; i < 3; ++i) {
        const Value& kv = c.in(i);
        const char* role = i == 1 ? "k" : "v";
        if (kv.dtype == DType::kF32) continue;
        if (kv.dtype != DType::kF16)
          return c.err(StatusCode::kGraphDtypeMismatch,
                       std::string(role) + " '" + kv.name + "' is " + dtype_name(kv.dtype) +
                           ", expected f32 (or f16 from an f16 state's kv_write)");
        if (aliased_state(c.g, c.n.inputs[i]) == kNoValue || kv.kind == ValueKind::kState)
          return c.err(StatusCode::kGraphDtypeMismatch,
                       std::string(role) + " '" + kv.name +
                           "' is f16 but not a kv_write output: attention reads f16 only from an "
                           "f16 KV cache");
      }
      if (c.in(1).dtype != c.in(2).dtype)
        return c.err(StatusCode::kGraphDtypeMismatch,
                     std::string("k '") + c.in(1).name + "' is " + dtype_name(c.in(1).dtype) +
                         " but v '" + c.in(2).name + "' is " + dtype_name(c.in(2).dtype) +
                         " (one KV dtype)");
      if (a.n_heads <= 0 || a.n_kv_heads <= 0 || a.head_dim <= 0 || a.n_heads % a.n_kv_heads != 0)
        return c.err(StatusCode::kGraphBadAttribute,
                     "n_heads " + std::to_string(a.n_heads) + ", n_kv_heads " +
                         std::to_string(a.n_kv_heads) + ", head_dim " + std::to_string(a.head_dim) +
                         ": need positive values with n_heads % n_kv_heads == 0");
      const Shape &q = c.in(0).shape, &k = c.in(1).shape, &v = c.in(2).shape;
      LAYA_RETURN_IF_ERROR(c.want_eq(q.dims[2], Dim::fixed(int64_t{a.n_heads} * a.head_dim),
                                     "q width vs n_heads * head_dim"));
      LAYA_RETURN_IF_ERROR(c.want_eq(k.dims[2], Dim::fixed(int64_t{a.n_kv_heads} * a.head_dim),
                                     "k width vs n_kv_heads * head_dim"));
      LAYA_RETURN_IF_ERROR(c.want_eq(v.dims[2], k.dims[2], "v width vs k width"));
      // Keys are per batch row, or one set shared by every row (a fixed batch of 1).
      if (!(k.dims[0] == Dim::fixed(1)))
        LAYA_RETURN_IF_ERROR(c.want_eq(k.dims[0], q.dims[0], "k batch vs q batch"));
      LAYA_RETURN_IF_ERROR(c.want_eq(v.dims[0], k.dims[0], "v batch vs k batch"));
      LAYA_RETURN_IF_ERROR(c.want_eq(v.dims[1], k.dims[1], "v length vs k length"));
      // key_mask, q_pos, k_pos, q_seq, k_seq: i32 [B, S] on the query side, [Bk, T] on the key
      // side.
      static const char* const kRoles[] = {"key_mask", "q_pos", "k_pos", "q_seq", "k_seq"};
      for (size_t i = 3; i < 8; ++i) {
        if (!c.has(i)) continue;
        const char* role = kRoles[i - 3];
        const bool query_side = i == 4 || i == 6;
        LAYA_RETURN_IF_ERROR(c.want_dtype(i, DType::kI32, role));
        LAYA_RETURN_IF_ERROR(c.want_rank(i, 2, 2, role));
        const Shape& m = c.in(i).shape;
        if (query_side) {
          LAYA_RETURN_IF_ERROR(
              c.want_eq(m.dims[0], q.dims[0], std::string(role) + " batch vs q batch"));
          LAYA_RETURN_IF_ERROR(
              c.want_eq(m.dims[1], q.dims[1], std::string(role) + " length vs q length"));
        } else {
          LAYA_RETURN_IF_ERROR(
              c.want_eq(m.dims[0], k.dims[0], std::string(role) + " batch vs k batch"));
          LAYA_RETURN_IF_ERROR(
              c.want_eq(m.dims[1], k.dims[1], std::string(role) + " length vs k length"));
        }
      }
      if (c.has(4) != c.has(5))
        return c.err(StatusCode::kGraphInvalid, "q_pos and k_pos come as a pair");
      if (c.has(6) != c.has(7))
        return c.err(StatusCode::kGraphInvalid, "q_seq and k_seq come as a pair");
      o.shape = q;
      return Status::ok();
    }
    case Op::kGelu:
      if (a.act != ActKind::kGeluErf && a.act != ActKind::kGeluTanh)
        return c.err(StatusCode::kGraphBadAttribute, "gelu act must be erf (0) or tanh (1)");
      [[fallthrough]];
    case Op::kSilu:
    case Op::kRelu:
    case Op::kSoftmax:
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "x"));
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 1, kMaxRank, "x"));
      o.shape = c.in(0).shape;
      return Status::ok();
    case Op::kGlu: {
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "x"));
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 1, kMaxRank, "x"));
      LAYA_ASSIGN_OR_RETURN(const int64_t width, c.fixed_last(0, "x"));
      if (width % 2 != 0)
        return c.err(StatusCode::kGraphShapeMismatch,
                     "last dimension " + std::to_string(width) + " is odd");
      o.shape = with_last(c.in(0).shape, Dim::fixed(width / 2));
      return Status::ok();
    }
    case Op::kSplit: {
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "x"));
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 1, kMaxRank, "x"));
      LAYA_ASSIGN_OR_RETURN(const int64_t width, c.fixed_last(0, "x"));
      if (a.sizes.empty()) return c.err(StatusCode::kGraphBadAttribute, "sizes is empty");
      int64_t sum = 0;
      for (size_t i = 0; i < a.sizes.size(); ++i) {
        if (a.sizes[i] <= 0) return c.err(StatusCode::kGraphBadAttribute, "sizes must be positive");
        if (__builtin_add_overflow(sum, a.sizes[i], &sum))
          return c.err(StatusCode::kGraphBadAttribute, "sizes overflow when summed");
        (*out)[i].shape = with_last(c.in(0).shape, Dim::fixed(a.sizes[i]));
      }
      if (sum != width)
        return c.err(
            StatusCode::kGraphBadAttribute,
            "sizes sum to " + std::to_string(sum) + ", last dimension is " + std::to_string(width));
      return Status::ok();
    }
    case Op::kKvWrite: {
      const Value& cache = c.in(0);
      if (cache.kind != ValueKind::kState)
        return c.err(StatusCode::kGraphInvalid, "cache '" + cache.name + "' is " +
                                                    value_kind_name(cache.kind) +
                                                    ", expected a state value");
      if (cache.dtype != DType::kF32 && cache.dtype != DType::kF16)
        return c.err(StatusCode::kGraphDtypeMismatch, "cache '" + cache.name + "' is " +
                                                          dtype_name(cache.dtype) +
                                                          ", expected f32 or f16 (a KV cache)");
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 3, 3, "cache"));
      LAYA_RETURN_IF_ERROR(c.want_dtype(1, DType::kF32, "rows"));
      LAYA_RETURN_IF_ERROR(c.want_rank(1, 3, 3, "rows"));
      LAYA_RETURN_IF_ERROR(c.want_dtype(2, DType::kI32, "cells"));
      LAYA_RETURN_IF_ERROR(c.want_rank(2, 2, 2, "cells"));
      const Shape &cs = cache.shape, &rs = c.in(1).shape, &ids = c.in(2).shape;
      LAYA_RETURN_IF_ERROR(c.want_eq(cs.dims[0], Dim::fixed(1), "cache batch"));
      LAYA_RETURN_IF_ERROR(c.want_eq(rs.dims[2], cs.dims[2], "rows width vs cache width"));
      LAYA_RETURN_IF_ERROR(c.want_eq(ids.dims[0], rs.dims[0], "cells batch vs rows batch"));
      LAYA_RETURN_IF_ERROR(c.want_eq(ids.dims[1], rs.dims[1], "cells length vs rows length"));
      o.dtype = cache.dtype;
      o.shape = cs;
      return Status::ok();
    }
    case Op::kGather: {
      LAYA_RETURN_IF_ERROR(c.want_f32_or_i32(0, "x"));
      o.dtype = c.in(0).dtype;
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 1, kMaxRank, "x"));
      LAYA_RETURN_IF_ERROR(c.want_dtype(1, DType::kI32, "idx"));
      LAYA_RETURN_IF_ERROR(c.want_rank(1, 0, kMaxRank - 1, "idx"));
      o.shape = c.in(1).shape;
      o.shape.dims[o.shape.rank++] = c.in(0).shape.back();
      return Status::ok();
    }
    case Op::kConcat: {
      Dim width = Dim::fixed(0);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        LAYA_RETURN_IF_ERROR(c.want_dtype(i, DType::kF32, "input"));
        LAYA_RETURN_IF_ERROR(c.want_rank(i, 1, kMaxRank, "input"));
        LAYA_ASSIGN_OR_RETURN(const int64_t w, c.fixed_last(i, "every input"));
        const Shape &x0 = c.in(0).shape, &xi = c.in(i).shape;
        if (xi.rank != x0.rank)
          return c.err(StatusCode::kGraphShapeMismatch, "input " + std::to_string(i) + " " +
                                                            c.shp(xi) + " and input 0 " +
                                                            c.shp(x0) + " differ in rank");
        for (int d = 0; d + 1 < x0.rank; ++d)
          LAYA_RETURN_IF_ERROR(c.want_eq(xi.dims[d], x0.dims[d],
                                         "leading dim " + std::to_string(d) + " of input " +
                                             std::to_string(i) + " vs input 0"));
        if (__builtin_add_overflow(width.c, w, &width.c))
          return c.err(StatusCode::kOutOfRange, "the widths' sum overflows");
      }
      o.shape = with_last(c.in(0).shape, width);
      return Status::ok();
    }
    case Op::kReshape: {
      LAYA_RETURN_IF_ERROR(c.want_f32_or_i32(0, "x"));
      o.dtype = c.in(0).dtype;
      const Shape& x = c.in(0).shape;
      if (a.sizes.empty() || a.sizes.size() > static_cast<size_t>(kMaxRank))
        return c.err(StatusCode::kGraphBadAttribute, "sizes has " + std::to_string(a.sizes.size()) +
                                                         " dims, expected 1.." +
                                                         std::to_string(kMaxRank));
      // Fixed products on both sides; symbolic dims of x copied once each, in order.
      int64_t in_fixed = 1, out_fixed = 1;
      std::vector<int> sym_dims;
      for (int d = 0; d < x.rank; ++d) {
        if (x.dims[d].is_fixed())
          in_fixed *= x.dims[d].c;
        else
          sym_dims.push_back(d);
      }
      size_t next_sym = 0;
      o.shape.rank = static_cast<int32_t>(a.sizes.size());
      for (size_t i = 0; i < a.sizes.size(); ++i) {
        const int64_t s = a.sizes[i];
        if (s > 0) {
          if (__builtin_mul_overflow(out_fixed, s, &out_fixed))
            return c.err(StatusCode::kGraphBadAttribute, "sizes overflow");
          o.shape.dims[i] = Dim::fixed(s);
          continue;
        }
        if (s == 0 || s < -int64_t{x.rank})
          return c.err(
              StatusCode::kGraphBadAttribute,
              "size " + std::to_string(s) + " is neither positive nor a dim of x " + c.shp(x));
        const int d = static_cast<int>(-s - 1);
        o.shape.dims[i] = x.dims[d];
        if (x.dims[d].is_fixed()) {
          if (__builtin_mul_overflow(out_fixed, x.dims[d].c, &out_fixed))
            return c.err(StatusCode::kGraphBadAttribute, "sizes overflow");
        } else if (next_sym >= sym_dims.size() || sym_dims[next_sym] != d) {
          return c.err(StatusCode::kGraphBadAttribute,
                       "symbolic dims of x " + c.shp(x) + " must each be copied once, in order");
        } else {
          ++next_sym;
        }
      }
      if (next_sym != sym_dims.size())
        return c.err(StatusCode::kGraphBadAttribute, "symbolic dim " +
                                                         std::to_string(sym_dims[next_sym]) +
                                                         " of x " + c.shp(x) + " is not copied");
      if (in_fixed != out_fixed)
        return c.err(StatusCode::kGraphShapeMismatch,
                     "x " + c.shp(x) + " has " + std::to_string(in_fixed) +
                         " elements per symbolic combination, the new shape " +
                         std::to_string(out_fixed));
      return Status::ok();
    }
    case Op::kMaskedFill:
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "x"));
      LAYA_RETURN_IF_ERROR(c.want_dtype(1, DType::kI32, "mask"));
      if (!(c.in(1).shape == c.in(0).shape))
        return c.err(StatusCode::kGraphShapeMismatch,
                     "mask " + c.shp(c.in(1).shape) + " differs from x " + c.shp(c.in(0).shape));
      o.shape = c.in(0).shape;
      return Status::ok();
    case Op::kSegmentMean:
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "x"));
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 1, kMaxRank, "x"));
      LAYA_RETURN_IF_ERROR(c.want_dtype(1, DType::kI32, "starts"));
      LAYA_RETURN_IF_ERROR(c.want_rank(1, 1, 1, "starts"));
      o.shape = Shape::of({c.in(1).shape.dims[0], c.in(0).shape.back()});
      return Status::ok();
    case Op::kActFeatures:
      LAYA_RETURN_IF_ERROR(c.want_dtype(0, DType::kF32, "logits"));
      LAYA_RETURN_IF_ERROR(c.want_rank(0, 1, kMaxRank, "logits"));
      LAYA_RETURN_IF_ERROR(c.want_dtype(1, DType::kI32, "valid"));
      if (!(c.in(1).shape == c.in(0).shape))
        return c.err(
            StatusCode::kGraphShapeMismatch,
            "valid " + c.shp(c.in(1).shape) + " differs from logits " + c.shp(c.in(0).shape));
      o.shape = with_last(c.in(0).shape, Dim::fixed(4));
      return Status::ok();
    case Op::kCount:
      break;
  }
  return c.err(StatusCode::kGraphUnknownOp, "unknown op");
}

}  // namespace laya::ir
