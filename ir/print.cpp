// graph_print: a readable, stable dump (laya-run inspect --graph and test failure messages).
#include <cstdio>
#include <string>

#include "ir/graph.h"

namespace laya::ir {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string value_ref(const Graph& g, ValueId id) {
  if (id == kNoValue) return "-";  // an absent optional input
  return "%" + std::to_string(id) + " " + g.values[id].name;
}

std::string type_str(const Graph& g, const Value& v) {
  std::string s = std::string(dtype_name(v.dtype)) + " " + shape_to_string(v.shape, g.symbols);
  if (v.quant.kind != QuantKind::kNone) {
    s += " quant=" + std::string(quant_kind_name(v.quant.kind));
    if (v.quant.kind == QuantKind::kPerChannel) s += "(axis " + std::to_string(v.quant.axis) + ")";
  }
  return s;
}

std::string attr_value(float v) {
  return fmt("%g", static_cast<double>(v));
}
std::string attr_value(int32_t v) {
  return std::to_string(v);
}
std::string attr_value(ActKind v) {
  return act_name(v);
}
std::string attr_value(RopeMode v) {
  return rope_mode_name(v);
}
std::string attr_value(MaskKind v) {
  return mask_kind_name(v);
}

std::string attrs_str(const Attrs& a) {
  static const Attrs defaults;
  std::string s;
  auto add = [&](const char* name, const std::string& value) {
    s += s.empty() ? " {" : ", ";
    s += std::string(name) + "=" + value;
  };
#define ATTR(type, name, def, lo, hi) \
  if (!(a.name == defaults.name)) add(#name, attr_value(a.name));
#include "ir/attrs.inc"
#undef ATTR
  if (!a.sizes.empty()) {
    std::string v = "[";
    for (size_t i = 0; i < a.sizes.size(); ++i) v += (i ? ", " : "") + std::to_string(a.sizes[i]);
    add("sizes", v + "]");
  }
  return s.empty() ? s : s + "}";
}

}  // namespace

std::string graph_print(const Graph& g) {
  std::string out;
  if (!g.meta.architecture.empty()) out += "architecture: " + g.meta.architecture + "\n";
  if (!g.symbols.empty()) {
    out += "symbols:";
    for (const Symbol& s : g.symbols)
      out += " " + s.name + " in [" + std::to_string(s.min) + ", " + std::to_string(s.max) + "]";
    out += "\n";
  }
  out += "inputs:\n";
  for (ValueId id : g.inputs)
    out += "  " + value_ref(g, id) + ": " + type_str(g, g.values[id]) + " (" +
           input_role_name(g.values[id].role) + ")\n";
  if (!g.states.empty()) {
    out += "states:\n";
    for (ValueId id : g.states)
      out += "  " + value_ref(g, id) + ": " + type_str(g, g.values[id]) + "\n";
  }
  out += "weights:\n";
  for (size_t i = 0; i < g.values.size(); ++i) {
    const Value& v = g.values[i];
    if (v.kind == ValueKind::kWeight)
      out += "  " + value_ref(g, static_cast<ValueId>(i)) + ": " + type_str(g, v) + " (" +
             std::to_string(v.nbytes) + " bytes)\n";
  }
  out += "nodes:\n";
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string outs, ins;
    for (ValueId o : n.outputs) outs += (outs.empty() ? "" : ", ") + value_ref(g, o);
    for (ValueId v : n.inputs) ins += (ins.empty() ? "" : ", ") + value_ref(g, v);
    out += "  #" + std::to_string(i) + " " + outs + " = " + op_name(n.op) + "(" + ins + ")" +
           attrs_str(n.attrs);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      out += (k ? ", " : " -> ") + type_str(g, g.values[n.outputs[k]]);
    if (!n.name.empty()) out += "  [" + n.name + "]";
    out += "\n";
  }
  out += "outputs:";
  for (ValueId id : g.outputs) out += " " + value_ref(g, id);
  return out + "\n";
}

}  // namespace laya::ir
