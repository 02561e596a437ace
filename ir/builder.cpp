#include "ir/builder.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "ir/shape_infer.h"

namespace laya::ir {

namespace {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

int GraphBuilder::symbol(const std::string& name, int64_t min, int64_t max) {
  if (!ok()) return 0;
  if (graph_.symbols.size() >= static_cast<size_t>(kMaxSymbols)) {
    fail(status_error(StatusCode::kGraphInvalid, "more than %d symbols", kMaxSymbols));
    return 0;
  }
  if (graph_.find_symbol(name) >= 0) {
    fail(status_error(StatusCode::kGraphInvalid, "symbol '%s' defined twice", name.c_str()));
    return 0;
  }
  graph_.symbols.push_back(Symbol{name, min, max});
  return static_cast<int>(graph_.symbols.size() - 1);
}

ValueId GraphBuilder::input(const std::string& name, DType dtype, const Shape& shape,
                            InputRole role) {
  if (!ok()) return kNoValue;
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = shape;
  v.kind = ValueKind::kInput;
  v.role = role;
  graph_.values.push_back(std::move(v));
  const ValueId id = static_cast<ValueId>(graph_.values.size() - 1);
  graph_.inputs.push_back(id);
  return id;
}

ValueId GraphBuilder::state(const std::string& name, DType dtype, const Shape& shape) {
  if (!ok()) return kNoValue;
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = shape;
  v.kind = ValueKind::kState;
  graph_.values.push_back(std::move(v));
  const ValueId id = static_cast<ValueId>(graph_.values.size() - 1);
  graph_.states.push_back(id);
  return id;
}

bool GraphBuilder::check_weight(const std::string& name, DType dtype, const Shape& shape,
                                const void* data, uint64_t nbytes) {
  if (!ok()) return false;
  if (!shape.is_fixed()) {
    fail(status_error(StatusCode::kGraphShapeMismatch, "weight '%s' needs a fixed shape",
                      name.c_str()));
    return false;
  }
  Result<int64_t> count = shape_max_count(shape, graph_.symbols);
  if (!count.is_ok()) {
    fail(count.status());
    return false;
  }
  Result<uint64_t> need = dtype_bytes(dtype, *count);
  if (!need.is_ok()) {
    fail(need.status());
    return false;
  }
  if (*need != nbytes) {
    fail(status_error(StatusCode::kFileSizeMismatch, "weight '%s': %llu bytes given, %llu needed",
                      name.c_str(), static_cast<unsigned long long>(nbytes),
                      static_cast<unsigned long long>(*need)));
    return false;
  }
  if (nbytes > 0 && data == nullptr) {
    fail(status_error(StatusCode::kInvalidArgument, "weight '%s': %llu bytes but no data",
                      name.c_str(), static_cast<unsigned long long>(nbytes)));
    return false;
  }
  return true;
}

ValueId GraphBuilder::add_weight(const std::string& name, DType dtype, const Shape& shape,
                                 const uint8_t* data, uint64_t nbytes, Quant quant) {
  Value v;
  v.name = name;
  v.dtype = dtype;
  v.shape = shape;
  v.quant = std::move(quant);
  v.kind = ValueKind::kWeight;
  v.data = data;
  v.nbytes = nbytes;
  graph_.values.push_back(std::move(v));
  return static_cast<ValueId>(graph_.values.size() - 1);
}

ValueId GraphBuilder::weight(const std::string& name, DType dtype, const Shape& shape,
                             const void* data, uint64_t nbytes, Quant quant) {
  if (!check_weight(name, dtype, shape, data, nbytes)) return kNoValue;
  const uint8_t* bytes = nullptr;
  if (nbytes > 0) {
    const size_t alloc = (nbytes + 63) / 64 * 64;
    std::shared_ptr<void> mem(std::aligned_alloc(64, alloc), AlignedFree());
    if (!mem) {
      fail(status_error(StatusCode::kResourceExhausted, "weight '%s': cannot allocate %llu bytes",
                        name.c_str(), static_cast<unsigned long long>(nbytes)));
      return kNoValue;
    }
    std::memcpy(mem.get(), data, nbytes);
    bytes = static_cast<const uint8_t*>(mem.get());
    graph_.keepalive.push_back(std::move(mem));
  }
  return add_weight(name, dtype, shape, bytes, nbytes, std::move(quant));
}

ValueId GraphBuilder::weight_ref(const std::string& name, DType dtype, const Shape& shape,
                                 const void* data, uint64_t nbytes,
                                 std::shared_ptr<const void> owner, Quant quant) {
  if (!check_weight(name, dtype, shape, data, nbytes)) return kNoValue;
  const DTypeInfo& info = dtype_info(dtype);
  const uintptr_t align = info.kind == DTypeKind::kBlock ? 2 : info.block_bytes;
  if (nbytes > 0 && reinterpret_cast<uintptr_t>(data) % align != 0) {
    fail(status_error(StatusCode::kInvalidArgument,
                      "weight '%s': data %p is not aligned to %u bytes", name.c_str(), data,
                      static_cast<unsigned>(align)));
    return kNoValue;
  }
  if (owner != nullptr &&
      std::find(graph_.keepalive.begin(), graph_.keepalive.end(), owner) == graph_.keepalive.end())
    graph_.keepalive.push_back(std::move(owner));
  return add_weight(name, dtype, shape, static_cast<const uint8_t*>(data), nbytes,
                    std::move(quant));
}

ValueId GraphBuilder::weight_deferred(const std::string& name, DType dtype, const Shape& shape,
                                      std::shared_ptr<const WeightFill> fill, Quant quant) {
  if (!ok()) return kNoValue;
  uint64_t bytes = 0;  // stays 0 for a symbolic shape, which check_weight reports
  if (shape.is_fixed()) {
    Result<int64_t> count = shape_max_count(shape, graph_.symbols);
    Result<uint64_t> b =
        count.is_ok() ? dtype_bytes(dtype, *count) : Result<uint64_t>(count.status());
    if (!b.is_ok()) {
      fail(b.status());
      return kNoValue;
    }
    bytes = *b;
  }
  if (bytes > 0 && fill == nullptr) {
    fail(status_error(StatusCode::kInvalidArgument, "deferred weight '%s' has no fill",
                      name.c_str()));
    return kNoValue;
  }
  // The fill stands for the bytes check_weight asks for.
  if (!check_weight(name, dtype, shape, fill.get(), bytes)) return kNoValue;
  const ValueId id = add_weight(name, dtype, shape, nullptr, bytes, std::move(quant));
  if (bytes > 0) graph_.values[id].fill = std::move(fill);
  return id;
}

std::vector<ValueId> GraphBuilder::node(Op op, const std::vector<ValueId>& inputs,
                                        const Attrs& attrs, const std::string& name) {
  if (!ok()) return {};
  if (!op_is_valid(static_cast<uint32_t>(op))) {
    fail(status_error(StatusCode::kGraphUnknownOp, "node %zu '%s': op %u is unknown",
                      graph_.nodes.size(), name.c_str(), static_cast<unsigned>(op)));
    return {};
  }
  Node n;
  n.op = op;
  n.attrs = attrs;
  const NodeId id = static_cast<NodeId>(graph_.nodes.size());
  n.name = name.empty() ? std::string(op_name(op)) + "_" + std::to_string(id) : name;
  // Every input keeps its slot: trailing absent inputs are dropped, an absent optional input
  // before a present one stays a kNoValue hole; a required slot must be present.
  size_t n_in = inputs.size();
  while (n_in > 0 && inputs[n_in - 1] == kNoValue) --n_in;
  for (size_t i = 0; i < n_in; ++i) {
    if (inputs[i] == kNoValue && i < static_cast<size_t>(op_info(op).min_inputs)) {
      fail(status_error(StatusCode::kInvalidArgument,
                        "node %u '%s' (%s): input %zu is missing (it is required)", id,
                        n.name.c_str(), op_name(op), i));
      return {};
    }
    n.inputs.push_back(inputs[i]);
  }
  const int n_out =
      op_info(op).n_outputs >= 0 ? op_info(op).n_outputs : static_cast<int>(attrs.sizes.size());
  // Reserve output ids so shape inference sees a well-formed node.
  for (int i = 0; i < n_out; ++i)
    n.outputs.push_back(static_cast<ValueId>(graph_.values.size() + i));
  graph_.nodes.push_back(n);
  std::vector<InferredOutput> inferred;
  Status s = infer_node(graph_, graph_.nodes.back(), &inferred);
  if (!s.is_ok()) {
    graph_.nodes.pop_back();
    fail(std::move(s));
    return {};
  }
  for (int i = 0; i < n_out; ++i) {
    Value v;
    v.name = n_out == 1 ? n.name : n.name + "." + std::to_string(i);
    v.dtype = inferred[i].dtype;
    v.shape = inferred[i].shape;
    v.kind = ValueKind::kActivation;
    v.producer = id;
    graph_.values.push_back(std::move(v));
  }
  return graph_.nodes.back().outputs;
}

ValueId GraphBuilder::node1(Op op, const std::vector<ValueId>& inputs, const Attrs& attrs,
                            const std::string& name) {
  if (!ok()) return kNoValue;
  if (op_is_valid(static_cast<uint32_t>(op))) {
    const int n_out =
        op_info(op).n_outputs >= 0 ? op_info(op).n_outputs : static_cast<int>(attrs.sizes.size());
    if (n_out != 1) {
      const std::string shown =
          name.empty() ? std::string(op_name(op)) + "_" + std::to_string(graph_.nodes.size())
                       : name;
      fail(status_error(StatusCode::kInvalidArgument,
                        "node %zu '%s' (%s) has %d outputs; node1 needs exactly one",
                        graph_.nodes.size(), shown.c_str(), op_name(op), n_out));
      return kNoValue;
    }
  }
  std::vector<ValueId> out = node(op, inputs, attrs, name);
  return out.size() == 1 ? out[0] : kNoValue;
}

ValueId GraphBuilder::embedding(ValueId table, ValueId ids, const std::string& name) {
  return node1(Op::kEmbedding, {table, ids}, {}, name);
}
ValueId GraphBuilder::matmul(ValueId x, ValueId w, ValueId bias, const std::string& name) {
  return node1(Op::kMatMul, {x, w, bias}, {}, name);
}
ValueId GraphBuilder::add(ValueId a, ValueId b, const std::string& name) {
  return node1(Op::kAdd, {a, b}, {}, name);
}
ValueId GraphBuilder::mul(ValueId a, ValueId b, const std::string& name) {
  return node1(Op::kMul, {a, b}, {}, name);
}
ValueId GraphBuilder::layernorm(ValueId x, ValueId gamma, ValueId beta, float eps,
                                const std::string& name) {
  Attrs a;
  a.eps = eps;
  return node1(Op::kLayerNorm, {x, gamma, beta}, a, name);
}
ValueId GraphBuilder::rmsnorm(ValueId x, ValueId gamma, float eps, const std::string& name) {
  Attrs a;
  a.eps = eps;
  return node1(Op::kRmsNorm, {x, gamma}, a, name);
}
ValueId GraphBuilder::rope(ValueId x, ValueId positions, int32_t head_dim, float theta,
                           RopeMode mode, int32_t rotary_dim, const std::string& name) {
  Attrs a;
  a.head_dim = head_dim;
  a.rope_theta = theta;
  a.rope_mode = mode;
  a.rotary_dim = rotary_dim;
  return node1(Op::kRope, {x, positions}, a, name);
}
ValueId GraphBuilder::attention(ValueId q, ValueId k, ValueId v, ValueId key_mask,
                                const Attrs& attrs, const std::string& name) {
  return node1(Op::kAttention, {q, k, v, key_mask}, attrs, name);
}
ValueId GraphBuilder::attention(ValueId q, ValueId k, ValueId v, ValueId key_mask,
                                const AttentionIds& ids, const Attrs& attrs,
                                const std::string& name) {
  return node1(Op::kAttention, {q, k, v, key_mask, ids.q_pos, ids.k_pos, ids.q_seq, ids.k_seq},
               attrs, name);
}
ValueId GraphBuilder::gelu(ValueId x, ActKind act, const std::string& name) {
  Attrs a;
  a.act = act;
  return node1(Op::kGelu, {x}, a, name);
}
ValueId GraphBuilder::silu(ValueId x, const std::string& name) {
  return node1(Op::kSilu, {x}, {}, name);
}
ValueId GraphBuilder::relu(ValueId x, const std::string& name) {
  return node1(Op::kRelu, {x}, {}, name);
}
ValueId GraphBuilder::softmax(ValueId x, const std::string& name) {
  return node1(Op::kSoftmax, {x}, {}, name);
}
ValueId GraphBuilder::glu(ValueId x, ActKind act, const std::string& name) {
  Attrs a;
  a.act = act;
  return node1(Op::kGlu, {x}, a, name);
}
std::vector<ValueId> GraphBuilder::split(ValueId x, const std::vector<int64_t>& sizes,
                                         const std::string& name) {
  Attrs a;
  a.sizes = sizes;
  return node(Op::kSplit, {x}, a, name);
}

ValueId GraphBuilder::kv_write(ValueId cache, ValueId rows, ValueId cells,
                               const std::string& name) {
  return node1(Op::kKvWrite, {cache, rows, cells}, {}, name);
}
ValueId GraphBuilder::gather(ValueId x, ValueId idx, const std::string& name) {
  return node1(Op::kGather, {x, idx}, {}, name);
}
ValueId GraphBuilder::concat(const std::vector<ValueId>& xs, const std::string& name) {
  return node1(Op::kConcat, xs, {}, name);
}
ValueId GraphBuilder::reshape(ValueId x, const std::vector<int64_t>& sizes,
                              const std::string& name) {
  Attrs a;
  a.sizes = sizes;
  return node1(Op::kReshape, {x}, a, name);
}
ValueId GraphBuilder::masked_fill(ValueId x, ValueId mask, float value, const std::string& name) {
  Attrs a;
  a.value = value;
  return node1(Op::kMaskedFill, {x, mask}, a, name);
}
ValueId GraphBuilder::segment_mean(ValueId x, ValueId starts, const std::string& name) {
  return node1(Op::kSegmentMean, {x, starts}, {}, name);
}
ValueId GraphBuilder::act_features(ValueId logits, ValueId valid, const std::string& name) {
  return node1(Op::kActFeatures, {logits, valid}, {}, name);
}

void GraphBuilder::output(ValueId v, const std::string& name) {
  if (!ok()) return;
  if (v >= graph_.values.size() || graph_.values[v].kind != ValueKind::kActivation) {
    fail(status_error(StatusCode::kGraphInvalid, "output %u is not a node output", v));
    return;
  }
  if (!name.empty()) graph_.values[v].name = name;
  graph_.outputs.push_back(v);
}

Result<Graph> GraphBuilder::finish() && {
  if (!ok()) return status_;
  LAYA_RETURN_IF_ERROR(graph_verify(graph_));
  return std::move(graph_);
}

}  // namespace laya::ir
