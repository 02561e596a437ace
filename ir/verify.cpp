// graph_verify: every invariant listed in ir/graph.h, with a message naming the culprit.
#include <cmath>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_infer.h"

namespace laya::ir {

namespace {

Status value_err(StatusCode code, ValueId id, const Value& v, const std::string& what) {
  return status_error(code, "value %u '%s': %s", id, v.name.c_str(), what.c_str());
}

Status check_quant(ValueId id, const Value& v) {
  const Quant& q = v.quant;
  const DTypeInfo& info = dtype_info(v.dtype);
  auto bad = [&](const std::string& what) {
    return value_err(
        StatusCode::kGraphQuantMismatch, id, v,
        std::string(info.name) + " with " + quant_kind_name(q.kind) + " quantization: " + what);
  };
  for (float s : q.scales)
    if (!std::isfinite(s) || s <= 0.0f) return bad("scales must be finite and positive");
  switch (q.kind) {
    case QuantKind::kNone:
      if (info.kind == DTypeKind::kBlock) return bad("block dtypes need block quantization");
      if (!q.scales.empty() || !q.zero_points.empty()) return bad("unexpected scales");
      return Status::ok();
    case QuantKind::kBlock:
      if (info.kind != DTypeKind::kBlock) return bad("only block dtypes have block quantization");
      if (!q.scales.empty() || !q.zero_points.empty())
        return bad("block scales live in the blocks, not in the tensor");
      if (v.shape.rank == 0 || !v.shape.back().is_fixed() ||
          v.shape.back().c % info.block_elems != 0)
        return bad("the last dimension must be a fixed multiple of " +
                   std::to_string(info.block_elems));
      return Status::ok();
    case QuantKind::kPerTensor:
      if (v.dtype != DType::kI8 && v.dtype != DType::kU8) return bad("only i8 / u8 are quantized");
      if (q.scales.size() != 1 || q.zero_points.size() > 1) return bad("needs exactly one scale");
      return Status::ok();
    case QuantKind::kPerChannel: {
      if (v.dtype != DType::kI8 && v.dtype != DType::kU8) return bad("only i8 / u8 are quantized");
      if (q.axis < 0 || q.axis >= v.shape.rank) return bad("axis out of range");
      const Dim& d = v.shape.dims[q.axis];
      if (!d.is_fixed()) return bad("the channel axis must have a fixed size");
      if (static_cast<int64_t>(q.scales.size()) != d.c)
        return bad(std::to_string(q.scales.size()) + " scales for " + std::to_string(d.c) +
                   " channels");
      if (!q.zero_points.empty() && q.zero_points.size() != q.scales.size())
        return bad("zero point count differs from scale count");
      return Status::ok();
    }
  }
  return bad("unknown quantization kind");
}

// Whether node `to` is reachable from node `from` along value edges.
bool reachable(const Graph& g, const std::vector<std::vector<NodeId>>& consumers, NodeId from,
               NodeId to) {
  std::vector<char> seen(g.nodes.size(), 0);
  std::vector<NodeId> stack{from};
  while (!stack.empty()) {
    const NodeId n = stack.back();
    stack.pop_back();
    if (n == to) return true;
    if (seen[n]) continue;
    seen[n] = 1;
    for (ValueId o : g.nodes[n].outputs)
      if (o < consumers.size())
        for (NodeId c : consumers[o]) stack.push_back(c);
  }
  return false;
}

}  // namespace

Status graph_verify(const Graph& g) {
  // Symbols.
  if (g.symbols.size() > static_cast<size_t>(kMaxSymbols))
    return status_error(StatusCode::kGraphInvalid, "%zu symbols, at most %d", g.symbols.size(),
                        kMaxSymbols);
  for (size_t i = 0; i < g.symbols.size(); ++i) {
    const Symbol& s = g.symbols[i];
    if (s.name.empty() || s.min < 0 || s.min > s.max)
      return status_error(StatusCode::kGraphInvalid, "symbol %zu '%s': bounds [%lld, %lld]", i,
                          s.name.c_str(), static_cast<long long>(s.min),
                          static_cast<long long>(s.max));
    for (size_t j = 0; j < i; ++j)
      if (g.symbols[j].name == s.name)
        return status_error(StatusCode::kGraphInvalid, "symbol '%s' defined twice", s.name.c_str());
  }

  // Values.
  const size_t nv = g.values.size();
  for (size_t i = 0; i < nv; ++i) {
    const ValueId id = static_cast<ValueId>(i);
    const Value& v = g.values[i];
    if (v.shape.rank < 0 || v.shape.rank > kMaxRank)
      return value_err(StatusCode::kGraphShapeMismatch, id, v, "rank out of range");
    for (int d = 0; d < v.shape.rank; ++d) {
      for (int s = static_cast<int>(g.symbols.size()); s < kMaxSymbols; ++s)
        if (v.shape.dims[d].coef[s] != 0)
          return value_err(StatusCode::kGraphShapeMismatch, id, v,
                           "dimension uses undefined symbol " + std::to_string(s));
      if (dim_min(v.shape.dims[d], g.symbols) < 0)
        return value_err(StatusCode::kGraphShapeMismatch, id, v,
                         "dimension " + std::to_string(d) + " can be negative");
    }
    LAYA_RETURN_IF_ERROR(check_quant(id, v));
    Result<int64_t> count = shape_max_count(v.shape, g.symbols);
    if (!count.is_ok()) return value_err(count.status().code(), id, v, count.status().message());
    const int64_t max_count = *count;
    switch (v.kind) {
      case ValueKind::kWeight: {
        if (!v.shape.is_fixed())
          return value_err(StatusCode::kGraphShapeMismatch, id, v, "weights need a fixed shape");
        Result<uint64_t> bytes = dtype_bytes(v.dtype, max_count);
        if (!bytes.is_ok())
          return value_err(bytes.status().code(), id, v, bytes.status().message());
        if (*bytes != v.nbytes)
          return value_err(StatusCode::kFileSizeMismatch, id, v,
                           "holds " + std::to_string(v.nbytes) + " bytes, shape " +
                               shape_to_string(v.shape, g.symbols) + " of " + dtype_name(v.dtype) +
                               " needs " + std::to_string(*bytes));
        if (v.nbytes > 0 && v.data == nullptr && v.fill == nullptr)
          return value_err(StatusCode::kGraphInvalid, id, v, "weight without data");
        if (v.data != nullptr && v.fill != nullptr)
          return value_err(StatusCode::kGraphInvalid, id, v, "weight with both data and a fill");
        break;
      }
      case ValueKind::kInput:
      case ValueKind::kState:
      case ValueKind::kActivation: {
        Result<uint64_t> bytes = dtype_bytes(v.dtype, max_count);
        if (!bytes.is_ok())
          return value_err(bytes.status().code(), id, v, bytes.status().message());
        if (v.data != nullptr || v.fill != nullptr)
          return value_err(StatusCode::kGraphInvalid, id, v, "non-weight value carries data");
        if (v.kind == ValueKind::kActivation && v.producer == kNoNode)
          return value_err(StatusCode::kGraphUndefinedValue, id, v, "is never produced");
        if (v.kind == ValueKind::kActivation && v.producer >= g.nodes.size())
          return value_err(StatusCode::kGraphInvalid, id, v, "producer out of range");
        break;
      }
    }
  }

  // Graph inputs and outputs.
  std::vector<char> listed(nv, 0);
  for (ValueId id : g.inputs) {
    if (id >= nv)
      return status_error(StatusCode::kGraphInvalid, "graph input id %u out of range", id);
    if (g.values[id].kind != ValueKind::kInput || listed[id])
      return value_err(StatusCode::kGraphInvalid, id, g.values[id],
                       "listed as a graph input but is not a (unique) input value");
    listed[id] = 1;
  }
  for (size_t i = 0; i < nv; ++i)
    if (g.values[i].kind == ValueKind::kInput && !listed[i])
      return value_err(StatusCode::kGraphInvalid, static_cast<ValueId>(i), g.values[i],
                       "input value missing from the graph inputs");
  std::fill(listed.begin(), listed.end(), 0);
  for (ValueId id : g.states) {
    if (id >= nv)
      return status_error(StatusCode::kGraphInvalid, "graph state id %u out of range", id);
    if (g.values[id].kind != ValueKind::kState || listed[id])
      return value_err(StatusCode::kGraphInvalid, id, g.values[id],
                       "listed as a graph state but is not a (unique) state value");
    if (g.values[id].name.empty())
      return value_err(StatusCode::kGraphInvalid, id, g.values[id], "states need a name");
    listed[id] = 1;
  }
  for (size_t i = 0; i < nv; ++i)
    if (g.values[i].kind == ValueKind::kState && !listed[i])
      return value_err(StatusCode::kGraphInvalid, static_cast<ValueId>(i), g.values[i],
                       "state value missing from the graph states");
  std::fill(listed.begin(), listed.end(), 0);
  for (ValueId id : g.outputs) {
    if (id >= nv)
      return status_error(StatusCode::kGraphInvalid, "graph output id %u out of range", id);
    if (g.values[id].kind != ValueKind::kActivation || listed[id])
      return value_err(StatusCode::kGraphInvalid, id, g.values[id],
                       "graph outputs must be distinct node outputs");
    listed[id] = 1;
  }
  // Callers bind inputs and outputs by name: those names must be unique and non-empty.
  for (const std::vector<ValueId>* list : {&g.inputs, &g.outputs}) {
    for (size_t i = 0; i < list->size(); ++i) {
      const Value& v = g.values[(*list)[i]];
      if (v.name.empty())
        return value_err(StatusCode::kGraphInvalid, (*list)[i], v,
                         "graph inputs and outputs need a name");
      for (size_t j = 0; j < i; ++j)
        if (g.values[(*list)[j]].name == v.name)
          return value_err(StatusCode::kGraphInvalid, (*list)[i], v,
                           list == &g.inputs ? "two graph inputs share this name"
                                             : "two graph outputs share this name");
    }
  }

  // Nodes: producers, order, shapes.
  std::vector<std::vector<NodeId>> consumers(nv);
  std::vector<char> written(nv, 0);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (static_cast<uint32_t>(n.op) >= static_cast<uint32_t>(Op::kCount))
      return status_error(StatusCode::kGraphUnknownOp, "node %zu '%s': op %u is unknown", i,
                          n.name.c_str(), static_cast<unsigned>(n.op));
    for (ValueId in : n.inputs)
      if (in < nv) consumers[in].push_back(static_cast<NodeId>(i));
    for (ValueId out : n.outputs) {
      if (out >= nv)
        return status_error(StatusCode::kGraphInvalid, "node %zu '%s': output id %u out of range",
                            i, n.name.c_str(), out);
      if (g.values[out].kind != ValueKind::kActivation || g.values[out].producer != i)
        return value_err(StatusCode::kGraphInvalid, out, g.values[out],
                         "written by node " + std::to_string(i) + " '" + n.name +
                             "' but its producer is " + std::to_string(g.values[out].producer));
      written[out] = 1;
    }
  }
  // The converse: an activation's producer lists it among its outputs.
  for (size_t i = 0; i < nv; ++i)
    if (g.values[i].kind == ValueKind::kActivation && !written[i])
      return value_err(StatusCode::kGraphUndefinedValue, static_cast<ValueId>(i), g.values[i],
                       "is never produced: node " + std::to_string(g.values[i].producer) + " '" +
                           g.nodes[g.values[i].producer].name + "' does not write it");
  std::vector<InferredOutput> inferred;
  std::vector<NodeId> state_writer(nv, kNoNode);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    for (size_t slot = 0; slot < n.inputs.size(); ++slot) {
      const ValueId in = n.inputs[slot];
      if (in >= nv || g.values[in].kind != ValueKind::kState) continue;
      const Value& v = g.values[in];
      if (n.op != Op::kKvWrite || slot != 0)
        return status_error(StatusCode::kGraphInvalid,
                            "node %zu '%s' (%s) reads state '%s': a state is read only as the "
                            "cache of kv_write (read its output instead)",
                            i, n.name.c_str(), op_name(n.op), v.name.c_str());
      if (state_writer[in] != kNoNode)
        return status_error(StatusCode::kGraphInvalid,
                            "state '%s' is written by kv_write nodes %u and %zu (one writer per "
                            "state)",
                            v.name.c_str(), state_writer[in], i);
      state_writer[in] = static_cast<NodeId>(i);
    }
    for (ValueId in : n.inputs) {
      if (in == kNoValue) continue;  // an absent optional input; infer_node checks its slot
      if (in >= nv)
        return status_error(StatusCode::kGraphUndefinedValue,
                            "node %zu '%s' reads value id %u, which does not exist", i,
                            n.name.c_str(), in);
      const Value& v = g.values[in];
      if (v.kind != ValueKind::kActivation || v.producer < i) continue;
      const bool cycle =
          v.producer == i || reachable(g, consumers, static_cast<NodeId>(i), v.producer);
      return status_error(cycle ? StatusCode::kGraphCycle : StatusCode::kGraphUndefinedValue,
                          cycle ? "node %zu '%s' reads '%s', produced by node %u, which depends "
                                  "on it: the graph has a cycle"
                                : "node %zu '%s' reads '%s' before node %u defines it",
                          i, n.name.c_str(), v.name.c_str(), v.producer);
    }
    LAYA_RETURN_IF_ERROR(infer_node(g, n, &inferred));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const Value& v = g.values[n.outputs[k]];
      if (v.dtype != inferred[k].dtype)
        return value_err(StatusCode::kGraphDtypeMismatch, n.outputs[k], v,
                         std::string("stored dtype ") + dtype_name(v.dtype) + ", node computes " +
                             dtype_name(inferred[k].dtype));
      if (!(v.shape == inferred[k].shape))
        return value_err(StatusCode::kGraphShapeMismatch, n.outputs[k], v,
                         "stored shape " + shape_to_string(v.shape, g.symbols) +
                             ", node computes " + shape_to_string(inferred[k].shape, g.symbols));
      if (v.quant.kind != QuantKind::kNone)
        return value_err(StatusCode::kGraphQuantMismatch, n.outputs[k], v,
                         "activations are not quantized");
    }
  }
  // A kv_write output is the state's memory, which the caller owns already.
  for (ValueId id : g.outputs)
    if (aliased_state(g, id) != kNoValue)
      return value_err(StatusCode::kGraphInvalid, id, g.values[id],
                       "a kv_write output (the state's memory) cannot be a graph output");
  return Status::ok();
}

}  // namespace laya::ir
