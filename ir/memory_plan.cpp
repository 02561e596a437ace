#include "ir/memory_plan.h"

#include <algorithm>

namespace laya::ir {

namespace {

uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

bool live_together(const MemoryPlan& p, ValueId a, ValueId b) {
  return p.first[a] <= p.last[b] && p.first[b] <= p.last[a];
}

}  // namespace

MemoryPlan memory_plan(const Graph& g, const std::vector<uint64_t>& bytes, uint64_t align,
                       std::span<const NodeId> run_order) {
  const size_t nv = g.values.size();
  // Each node's first and last step in the run order (graph order when none is given).
  std::vector<NodeId> step_first(g.nodes.size()), step_last(g.nodes.size());
  if (run_order.empty()) {
    for (size_t n = 0; n < g.nodes.size(); ++n)
      step_first[n] = step_last[n] = static_cast<NodeId>(n);
  } else {
    std::fill(step_first.begin(), step_first.end(), kNoNode);
    for (size_t i = 0; i < run_order.size(); ++i) {
      const NodeId n = run_order[i];
      if (step_first[n] == kNoNode) step_first[n] = static_cast<NodeId>(i);
      step_last[n] = static_cast<NodeId>(i);
    }
  }
  MemoryPlan p;
  p.offset.assign(nv, kNotPlanned);
  p.size.assign(nv, 0);
  p.first.assign(nv, kNoNode);
  p.last.assign(nv, kNoNode);

  std::vector<char> is_output(nv, 0);
  for (ValueId o : g.outputs) is_output[o] = 1;
  std::vector<ValueId> planned;
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = g.values[v];
    // Graph outputs live in caller buffers, kv_write outputs in the caller's state memory.
    if (val.kind != ValueKind::kActivation || is_output[v] ||
        aliased_state(g, static_cast<ValueId>(v)) != kNoValue)
      continue;
    p.first[v] = p.last[v] = step_first[val.producer];
    p.size[v] = round_up(std::max<uint64_t>(bytes[v], 1), align);
    p.unshared_bytes += p.size[v];
    planned.push_back(static_cast<ValueId>(v));
  }
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ValueId in : g.nodes[n].inputs)
      if (in != kNoValue && p.size[in] != 0) p.last[in] = std::max(p.last[in], step_last[n]);

  std::sort(planned.begin(), planned.end(), [&](ValueId a, ValueId b) {
    if (p.size[a] != p.size[b]) return p.size[a] > p.size[b];
    return p.first[a] != p.first[b] ? p.first[a] < p.first[b] : a < b;
  });

  std::vector<ValueId> placed, conflicts;
  for (ValueId v : planned) {
    conflicts.clear();
    for (ValueId u : placed)
      if (live_together(p, u, v)) conflicts.push_back(u);
    std::sort(conflicts.begin(), conflicts.end(),
              [&](ValueId a, ValueId b) { return p.offset[a] < p.offset[b]; });
    uint64_t at = 0;
    for (ValueId u : conflicts) {
      if (p.offset[u] >= at + p.size[v]) break;  // the gap before u fits
      at = std::max(at, p.offset[u] + p.size[u]);
    }
    p.offset[v] = at;
    p.arena_bytes = std::max(p.arena_bytes, at + p.size[v]);
    placed.push_back(v);
  }
  return p;
}

Status memory_plan_check(const Graph& g, const MemoryPlan& p, const std::vector<uint64_t>& bytes,
                         uint64_t align) {
  std::vector<ValueId> planned;
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (p.offset[v] == kNotPlanned) continue;
    if (p.offset[v] % align != 0 || p.size[v] < bytes[v] || p.offset[v] + p.size[v] > p.arena_bytes)
      return status_error(StatusCode::kInternal, "value %zu '%s': bad placement", v,
                          g.values[v].name.c_str());
    planned.push_back(static_cast<ValueId>(v));
  }
  for (size_t i = 0; i < planned.size(); ++i) {
    for (size_t j = i + 1; j < planned.size(); ++j) {
      const ValueId a = planned[i], b = planned[j];
      if (!live_together(p, a, b)) continue;
      const bool disjoint =
          p.offset[a] + p.size[a] <= p.offset[b] || p.offset[b] + p.size[b] <= p.offset[a];
      if (!disjoint)
        return status_error(StatusCode::kInternal,
                            "values '%s' and '%s' are live together and overlap",
                            g.values[a].name.c_str(), g.values[b].name.c_str());
    }
  }
  return Status::ok();
}

}  // namespace laya::ir
