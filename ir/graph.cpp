#include "ir/graph.h"

#include <cstdint>
#include <cstring>

namespace laya::ir {

namespace {

constexpr OpInfo kOps[] = {
#define OP(name, Name, min_in, max_in, n_out) {#name, min_in, max_in, n_out},
#include "ir/ops.inc"
#undef OP
};
static_assert(sizeof kOps / sizeof kOps[0] == static_cast<size_t>(Op::kCount));

bool blob_equal(const Blob& a, const Blob& b) {
  return a.size == b.size && (a.size == 0 || std::memcmp(a.data, b.data, a.size) == 0);
}

bool fail(std::string* why, const std::string& msg) {
  if (why) *why = msg;
  return false;
}

}  // namespace

const OpInfo& op_info(Op op) {
  return kOps[static_cast<size_t>(op)];
}

bool op_is_valid(uint32_t raw) {
  return raw < static_cast<uint32_t>(Op::kCount);
}

bool Attrs::operator==(const Attrs& o) const {
#define ATTR(type, name, def, lo, hi) \
  if (!(name == o.name)) return false;
#include "ir/attrs.inc"
#undef ATTR
  return sizes == o.sizes;
}

const char* value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::kInput:
      return "input";
    case ValueKind::kWeight:
      return "weight";
    case ValueKind::kActivation:
      return "activation";
    case ValueKind::kState:
      return "state";
  }
  return "?";
}

const char* input_role_name(InputRole r) {
  switch (r) {
    case InputRole::kNone:
      return "data";
    case InputRole::kTokenIds:
      return "token_ids";
    case InputRole::kPositions:
      return "positions";
    case InputRole::kKeyMask:
      return "key_mask";
    case InputRole::kSeqIds:
      return "seq_ids";
    case InputRole::kCacheCells:
      return "cache_cells";
    case InputRole::kCellPositions:
      return "cell_positions";
    case InputRole::kCellSeqIds:
      return "cell_seq_ids";
    case InputRole::kLogitRows:
      return "logit_rows";
  }
  return "?";
}

ValueId aliased_state(const Graph& g, ValueId v) {
  if (v >= g.values.size()) return kNoValue;
  const Value& x = g.values[v];
  if (x.kind == ValueKind::kState) return v;
  if (x.kind != ValueKind::kActivation || x.producer >= g.nodes.size()) return kNoValue;
  const Node& n = g.nodes[x.producer];
  return n.op == Op::kKvWrite && !n.inputs.empty() ? n.inputs[0] : kNoValue;
}

ValueId Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return static_cast<ValueId>(i);
  return kNoValue;
}

int Graph::find_symbol(const std::string& name) const {
  for (size_t i = 0; i < symbols.size(); ++i)
    if (symbols[i].name == name) return static_cast<int>(i);
  return -1;
}

bool graph_equal(const Graph& a, const Graph& b, std::string* why) {
  if (a.symbols.size() != b.symbols.size()) return fail(why, "symbol count");
  for (size_t i = 0; i < a.symbols.size(); ++i) {
    const Symbol &x = a.symbols[i], &y = b.symbols[i];
    if (x.name != y.name || x.min != y.min || x.max != y.max) return fail(why, "symbol " + x.name);
  }
  if (a.values.size() != b.values.size()) return fail(why, "value count");
  for (size_t i = 0; i < a.values.size(); ++i) {
    const Value &x = a.values[i], &y = b.values[i];
    if (x.name != y.name) return fail(why, "value name " + x.name + " vs " + y.name);
    if (x.dtype != y.dtype || !(x.shape == y.shape) || !(x.quant == y.quant) || x.kind != y.kind ||
        x.role != y.role || x.producer != y.producer)
      return fail(why, "value " + x.name + " (dtype/shape/quant/kind/role/producer)");
    if (x.fill != nullptr || y.fill != nullptr) {  // deferred: equal only when the same fill
      if (x.fill != y.fill) return fail(why, "deferred weight " + x.name);
    } else if (!blob_equal({x.data, x.nbytes}, {y.data, y.nbytes})) {
      return fail(why, "weight bytes of " + x.name);
    }
  }
  if (a.nodes.size() != b.nodes.size()) return fail(why, "node count");
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const Node &x = a.nodes[i], &y = b.nodes[i];
    if (x.op != y.op || x.name != y.name || x.inputs != y.inputs || x.outputs != y.outputs ||
        !(x.attrs == y.attrs))
      return fail(why, "node " + std::to_string(i) + " (" + x.name + ")");
  }
  if (a.inputs != b.inputs) return fail(why, "graph inputs");
  if (a.outputs != b.outputs) return fail(why, "graph outputs");
  if (a.states != b.states) return fail(why, "graph states");

  const Metadata &m = a.meta, &n = b.meta;
  if (m.architecture != n.architecture) return fail(why, "architecture");
  if (m.tokenizer_kind != n.tokenizer_kind || !blob_equal(m.tokenizer, n.tokenizer))
    return fail(why, "tokenizer");
  const DecisionConfig &d = m.decision, &e = n.decision;
  if (d.present != e.present || d.max_len != e.max_len || d.head_max_len != e.head_max_len ||
      d.head_layers != e.head_layers || d.temperature[0] != e.temperature[0] ||
      d.temperature[1] != e.temperature[1] || d.temperature[2] != e.temperature[2] ||
      d.temperature_by_options != e.temperature_by_options || d.act_costs != e.act_costs)
    return fail(why, "decision config");
  if (m.chat_template != n.chat_template) return fail(why, "chat template");
  if (m.provenance.source != n.provenance.source ||
      m.provenance.converter_version != n.provenance.converter_version ||
      m.provenance.files.size() != n.provenance.files.size())
    return fail(why, "provenance");
  for (size_t i = 0; i < m.provenance.files.size(); ++i)
    if (m.provenance.files[i].name != n.provenance.files[i].name ||
        m.provenance.files[i].sha256 != n.provenance.files[i].sha256)
      return fail(why, "provenance file " + m.provenance.files[i].name);
  if (m.properties != n.properties) return fail(why, "properties");
  if (m.executables.size() != n.executables.size()) return fail(why, "executables");
  for (size_t i = 0; i < m.executables.size(); ++i)
    if (m.executables[i].backend != n.executables[i].backend ||
        m.executables[i].subgraph != n.executables[i].subgraph ||
        !blob_equal(m.executables[i].bytes, n.executables[i].bytes))
      return fail(why, "executable " + m.executables[i].subgraph);
  return true;
}

WeightStats graph_weight_stats(const Graph& g) {
  WeightStats s;
  for (const Value& v : g.values) {
    if (v.kind != ValueKind::kWeight) continue;
    const size_t d = static_cast<size_t>(v.dtype);
    Result<int64_t> n = shape_max_count(v.shape, g.symbols);  // weights have fixed shapes
    const int64_t count = n.is_ok() ? *n : INT64_MAX;
    if (__builtin_add_overflow(s.params, count, &s.params)) s.params = INT64_MAX;
    if (__builtin_add_overflow(s.params_by_dtype[d], count, &s.params_by_dtype[d]))
      s.params_by_dtype[d] = INT64_MAX;
    s.bytes_by_dtype[d] += v.nbytes;
  }
  return s;
}

}  // namespace laya::ir
