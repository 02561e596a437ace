#include "runtime/scheduler.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <set>

namespace laya::runtime {
namespace {

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", ms);
  return buf;
}

// Step 2: executables from a placement.
std::vector<Schedule::Exe> cluster(const ir::Graph& g, const std::vector<size_t>& backend_of,
                                   size_t fallback, bool per_layer) {
  const size_t nn = g.nodes.size();
  std::vector<std::vector<ir::NodeId>> users(nn);
  std::vector<int> waiting(nn, 0);
  for (ir::NodeId id = 0; id < nn; ++id) {
    std::set<ir::NodeId> producers;
    for (ir::ValueId v : g.nodes[id].inputs)
      if (v != ir::kNoValue && g.values[v].kind == ir::ValueKind::kActivation &&
          g.values[v].producer != ir::kNoNode)
        producers.insert(g.values[v].producer);
    waiting[id] = static_cast<int>(producers.size());
    for (ir::NodeId p : producers) users[p].push_back(id);
  }
  std::set<ir::NodeId> ready;
  for (ir::NodeId id = 0; id < nn; ++id)
    if (waiting[id] == 0) ready.insert(id);
  std::vector<Schedule::Exe> exes;
  bool open = false;
  int layer = -2;
  while (!ready.empty()) {
    ir::NodeId pick = ir::kNoNode;
    if (open) {
      const size_t b = exes.back().backend;
      for (ir::NodeId id : ready)
        if (backend_of[id] == b && (!per_layer || layer_of(g.nodes[id].name) == layer)) {
          pick = id;
          break;
        }
    }
    if (pick == ir::kNoNode) {  // a new executable: the fallback first, else the earliest node
      pick = *ready.begin();
      for (ir::NodeId id : ready)
        if (backend_of[id] == fallback) {
          pick = id;
          break;
        }
      exes.push_back({backend_of[pick], {}});
      exes.back().sg.graph = &g;
      layer = layer_of(g.nodes[pick].name);
      open = true;
    }
    ready.erase(pick);
    exes.back().sg.nodes.push_back(pick);
    for (ir::NodeId u : users[pick])
      if (--waiting[u] == 0) ready.insert(u);
  }
  return exes;
}

}  // namespace

int layer_of(const std::string& name) {
  for (const char* prefix : {"layers.", "blk.", "l"}) {
    const size_t n = std::char_traits<char>::length(prefix);
    size_t at = name.find(prefix);
    while (at != std::string::npos) {
      const bool boundary = at == 0 || name[at - 1] == '.';
      size_t end = at + n;
      while (end < name.size() && std::isdigit(static_cast<unsigned char>(name[end]))) ++end;
      if (boundary && end > at + n && end < name.size() && name[end] == '.')
        return std::atoi(name.c_str() + at + n);
      at = name.find(prefix, at + 1);
    }
  }
  return -1;
}

std::vector<int64_t> split_units(int64_t units, std::span<const uint32_t> weights) {
  std::vector<int64_t> out(weights.size(), 0);
  uint64_t total = 0;
  for (uint32_t w : weights) total += w;
  if (total == 0 || units <= 0) return out;
  std::vector<std::pair<uint64_t, size_t>> rest;  // remainder, group
  int64_t given = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const uint64_t share = static_cast<uint64_t>(units) * weights[i];
    out[i] = static_cast<int64_t>(share / total);
    given += out[i];
    rest.emplace_back(share % total, i);
  }
  std::stable_sort(rest.begin(), rest.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t k = 0; given < units; ++k, ++given) ++out[rest[k % rest.size()].second];
  return out;
}

Result<Schedule> schedule(const ir::Graph& g, std::span<const ScheduleBackend> backends,
                          size_t fallback, const ir::Extents* ext, const ScheduleOptions& opts) {
  const size_t nn = g.nodes.size();
  if (fallback >= backends.size())
    return status_error(StatusCode::kInvalidArgument, "schedule: no fallback backend");
  Schedule s;
  s.backend_of.assign(nn, fallback);
  s.reason.assign(nn, "");
  s.parts.assign(nn, {});
  const bool per_layer = opts.calls == ScheduleOptions::Calls::kPerLayer;
  int first_layer_node = -1;
  for (ir::NodeId id = 0; id < nn && first_layer_node < 0; ++id)
    if (layer_of(g.nodes[id].name) >= 0) first_layer_node = static_cast<int>(id);

  // 1. Placement.
  for (ir::NodeId id = 0; id < nn; ++id) {
    const ir::Node& n = g.nodes[id];
    std::string reasons;
    bool placed = false;
    if (per_layer && static_cast<int>(id) < first_layer_node &&
        backends[fallback].backend->supports(g, n, ext).is_ok()) {
      s.backend_of[id] = fallback;
      if (fallback != 0)
        s.reason[id] =
            "per-layer calls (ax-llm's partition): the nodes before the first layer "
            "run on the host";
      continue;
    }
    for (size_t i = 0; i < backends.size() && !placed; ++i) {
      Status st = backends[i].backend->supports(g, n, ext);
      if (st.is_ok()) {
        s.backend_of[id] = i;
        placed = true;
      } else {
        reasons += (reasons.empty() ? "" : "; ") + backends[i].name + ": " + st.message();
      }
    }
    if (!placed)
      return status_error(StatusCode::kUnsupported, "node %u '%s' (%s): no backend runs it: %s", id,
                          n.name.c_str(), ir::op_name(n.op), reasons.c_str());
    s.reason[id] = reasons;
  }

  // 2 + 3. Executables, and moves by cost until nothing moves.
  for (;;) {
    s.executables = cluster(g, s.backend_of, fallback, per_layer);
    if (!opts.cost_placement || per_layer) break;
    bool moved = false;
    for (const Schedule::Exe& e : s.executables) {
      const ScheduleBackend& b = backends[e.backend];
      if (e.backend == fallback || !b.backend->capabilities().modelled_time) continue;
      bool fallback_runs_all = true;
      for (ir::NodeId id : e.sg.nodes)
        fallback_runs_all =
            fallback_runs_all && backends[fallback].backend->supports(g, g.nodes[id], ext).is_ok();
      if (!fallback_runs_all) continue;
      hal::Subgraph sg = e.sg;
      sg.same_backend.assign(nn, 0);
      for (ir::NodeId id = 0; id < nn; ++id) sg.same_backend[id] = s.backend_of[id] == e.backend;
      Result<hal::Estimate> here = b.backend->estimate(sg, ext, b.activations);
      Result<hal::Estimate> there =
          backends[fallback].backend->estimate(e.sg, ext, backends[fallback].activations);
      if (!here.is_ok() || !there.is_ok() || there->total_ms >= here->total_ms) continue;
      for (ir::NodeId id : e.sg.nodes) {
        s.backend_of[id] = fallback;
        s.reason[id] = "cost: its own " + b.name + " call takes " + ms_text(here->total_ms) +
                       " modelled_ms, " + backends[fallback].name + " " + ms_text(there->total_ms);
      }
      moved = true;
    }
    if (!moved) break;
  }

  // 4. Splits across groups.
  for (Schedule::Exe& e : s.executables) {
    const ScheduleBackend& b = backends[e.backend];
    const hal::Capabilities& caps = b.backend->capabilities();
    const uint32_t ng = std::min<uint32_t>(caps.n_groups, hal::kMaxGroups);
    e.sg.same_backend.assign(nn, 0);
    for (ir::NodeId id = 0; id < nn; ++id) e.sg.same_backend[id] = s.backend_of[id] == e.backend;
    if (!opts.split || !caps.splits_nodes || ng < 2) continue;
    const std::span<const uint32_t> weights(caps.group_weight, ng);
    hal::Subgraph out;
    out.graph = &g;
    out.same_backend = e.sg.same_backend;
    for (ir::NodeId id : e.sg.nodes) {
      const ir::Node& n = g.nodes[id];
      std::vector<hal::NodePart> parts;
      if (n.op == ir::Op::kAttention || n.op == ir::Op::kMatMul) {
        const bool att = n.op == ir::Op::kAttention;
        const int64_t total = att ? n.attrs.n_heads : g.values[n.inputs[1]].shape.dims[0].c;
        const int64_t unit = att ? n.attrs.n_heads / std::max(1, n.attrs.n_kv_heads) : 16;
        const std::vector<int64_t> count = split_units((total + unit - 1) / unit, weights);
        int64_t at = 0;
        for (uint32_t grp = 0; grp < ng; ++grp) {
          if (count[grp] == 0) continue;
          const int64_t end = std::min(total, at + count[grp] * unit);
          parts.push_back({at, end, static_cast<int32_t>(grp)});
          at = end;
        }
        if (parts.size() < 2) parts.clear();
      }
      if (!parts.empty()) {
        hal::Subgraph whole, split;
        whole.graph = split.graph = &g;
        whole.nodes = {id};
        whole.parts = {{0, 0, 0}};
        for (const hal::NodePart& p : parts) {
          split.nodes.push_back(id);
          split.parts.push_back(p);
        }
        Result<hal::Estimate> a = b.backend->estimate(whole, ext, b.activations);
        Result<hal::Estimate> c = b.backend->estimate(split, ext, b.activations);
        if (!a.is_ok() || !c.is_ok() ||
            c->total_ms - c->overhead_ms >= a->total_ms - a->overhead_ms)
          parts.clear();
      }
      if (parts.empty()) {
        out.nodes.push_back(id);
        out.parts.push_back({});
        continue;
      }
      s.parts[id] = parts;
      for (const hal::NodePart& p : parts) {
        out.nodes.push_back(id);
        out.parts.push_back(p);
      }
    }
    e.sg = std::move(out);
  }
  return s;
}

}  // namespace laya::runtime
