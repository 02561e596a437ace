// laya-run profile: the modelled timeline of one execute on a backend with a cost model, without
// running anything (so it works on models at their real size). See kProfileUsage.
#include "tools/laya-run/profile.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "hal/ax8850/params.h"
#include "ir/model_file.h"
#include "runtime/text/json.h"
#include "runtime/session.h"

namespace laya::tools {
namespace {

constexpr const char* kProfileUsage =
    "usage: laya-run profile MODEL.laya [options]      (or --model MODEL.laya)\n"
    "\n"
    "Prints the modelled time of one execute: where every node runs and why, the NPU calls, and\n"
    "the time per op, per call and per group. Nothing runs: every figure is *modelled* by the\n"
    "backend's cost model (hal/ax8850/cost_model.h; docs/ax8850.md).\n"
    "\n"
    "  --backend NAME        ax8850 (default) or any backend with a cost model; the cpu runs the\n"
    "                        nodes it refuses (modelled as the AX8850's Cortex-A55 host)\n"
    "  --vnpu MODE           disable (default: 3 groups as one) | std | big_little | little_big\n"
    "  --host chip|pcie      on-chip runtime (default) or an M.2 / PCIe card\n"
    "  --chip ax8850|ax650n  the chip (ax650n: ax-llm's benchmark board)\n"
    "  --param KEY=VALUE     any field of hal/ax8850/params.h (repeatable)\n"
    "  --activations T       bf16 (default, w8a16) or f32 (the reference semantics)\n"
    "  --calls MODE          fused (default) or per-layer (ax-llm's partition, for comparison)\n"
    "  --split on|off        split attention heads / matmul columns across groups (default on)\n"
    "  --cost-placement on|off  move calls that cost more than they save to the cpu (default on)\n"
    "  --dim NAME=N          a symbol's value (repeatable; 'seq' also names 'tokens'); others\n"
    "                        default to 1 (batch-like) or min(max, 16)\n"
    "  --sweep NAME=A,B,...  profile at each value and flag every node whose placement changes\n"
    "The model is compiled for exactly the profiled shapes (one shape group), as the vendor\n"
    "compiles fixed shapes: limits that depend on a length apply at that length.\n"
    "  --json                one JSON document instead of the table\n"
    "  --trace FILE          a Chrome trace (open in Perfetto): one track per NPU group, one for\n"
    "                        the CPU\n";

struct Opts {
  std::string model, backend = "ax8850", activations, calls = "fused";
  bool split = true, cost_placement = true, json = false;
  std::vector<std::pair<std::string, std::string>> settings;  // the backend's
  std::vector<std::pair<std::string, int64_t>> dims;
  std::string sweep_name;
  std::vector<int64_t> sweep;
  std::string trace;
};

int bad(const std::string& msg) {
  std::fprintf(stderr, "laya-run: %s\n\n%s", msg.c_str(), kProfileUsage);
  return 2;
}

int fail(const Status& s) {
  std::fprintf(stderr, "laya-run: %s\n", s.to_string().c_str());
  return 1;
}

bool to_int(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

double r3(double v) {
  return std::round(v * 1000.0) / 1000.0;
}

json::Value num(double v) {
  return json::Value::number(r3(v));
}

// One profiled configuration.
struct Point {
  std::vector<int64_t> sym;
  std::unique_ptr<runtime::Session> session;
  std::vector<runtime::ModelledExecutable> timeline;
  double total_ms = 0;
  int npu_calls = 0;
};

std::string parts_text(const std::vector<hal::NodePart>& parts) {
  std::string s;
  for (const hal::NodePart& p : parts)
    s += (s.empty() ? "" : " ") + std::to_string(p.group) + ":[" + std::to_string(p.begin) + "," +
         std::to_string(p.end) + ")";
  return s;
}

// What placement a node has, for the sweep's comparison (the device's own choice of group for
// a whole node is a timing detail, not a placement).
std::string placement_key(const runtime::NodePlacement& p) {
  return p.backend + (p.parts.empty() ? "" : " split " + parts_text(p.parts));
}

Result<Point> profile_point(const ir::Graph& g0, const Opts& o, const std::vector<int64_t>& sym) {
  // Compiled for exactly these shapes (one bucket), as the vendor compiles fixed shapes: limits
  // that depend on a length apply at this length.
  ir::Graph g = g0;
  for (size_t k = 0; k < g.symbols.size(); ++k) {
    g.symbols[k].max = sym[k];
    g.symbols[k].min = std::min(g.symbols[k].min, sym[k]);
  }
  runtime::SessionOptions so;
  so.backends = {o.backend};
  hal::BackendOptions bo;
  bo.settings = o.settings;
  so.backend_options.emplace_back(o.backend, bo);
  if (o.backend == "ax8850") {  // the cpu nodes run on the chip's host: model it
    hal::ax8850::Params p;
    for (const auto& [k, v] : o.settings)
      if (k == "chip") LAYA_RETURN_IF_ERROR(hal::ax8850::params_set(&p, k, v));
    for (const auto& [k, v] : o.settings)
      if (k != "chip") LAYA_RETURN_IF_ERROR(hal::ax8850::params_set(&p, k, v));
    hal::BackendOptions cpu;
    cpu.settings = {{"model_gflops", std::to_string(p.host_gflops)},
                    {"model_gbps", std::to_string(p.host_gbs)},
                    {"model_op_us", std::to_string(p.host_op_us)}};
    so.backend_options.emplace_back("cpu", cpu);
  }
  if (!o.activations.empty()) {
    LAYA_ASSIGN_OR_RETURN(ir::DType d, ir::dtype_from_name(o.activations));
    so.activations = {{o.backend, d}};
  }
  so.schedule.calls = o.calls == "per-layer" ? runtime::ScheduleOptions::Calls::kPerLayer
                                             : runtime::ScheduleOptions::Calls::kFused;
  so.schedule.split = o.split;
  so.schedule.cost_placement = o.cost_placement;
  // One bucket per symbol at the profiled value: what the device compiles for.
  for (size_t k = 0; k < g.symbols.size(); ++k)
    so.bucket_bounds.push_back({g.symbols[k].name, {sym[k]}});
  Point pt;
  pt.sym = sym;
  LAYA_ASSIGN_OR_RETURN(pt.session, runtime::Session::prepare(g, so));
  LAYA_ASSIGN_OR_RETURN(pt.timeline, pt.session->model(sym));
  for (const runtime::ModelledExecutable& m : pt.timeline) {
    pt.total_ms = std::max(pt.total_ms, m.start_ms + m.estimate.total_ms);
    pt.npu_calls += pt.session->executables()[static_cast<size_t>(m.executable)].backend != "cpu";
  }
  // The session keeps its own copy of the graph: nothing here outlives `g`.
  return pt;
}

std::string dims_text(const ir::Graph& g, const std::vector<int64_t>& sym) {
  std::string s;
  for (size_t k = 0; k < sym.size(); ++k)
    s += (s.empty() ? "" : " ") + g.symbols[k].name + "=" + std::to_string(sym[k]);
  return s.empty() ? "fixed" : s;
}

json::Value point_json(const ir::Graph& g, const Point& pt) {
  const runtime::Session& s = *pt.session;
  json::Value r = json::Value::object();
  r.set("modelled", json::Value::boolean(true));
  r.set("total_modelled_ms", num(pt.total_ms));
  r.set("npu_calls", json::Value::integer(pt.npu_calls));
  // The group the device put each whole node on (from the timeline).
  std::vector<int> group(g.nodes.size(), -1);
  for (const runtime::ModelledExecutable& m : pt.timeline) {
    const runtime::ExecutableInfo& e = s.executables()[static_cast<size_t>(m.executable)];
    for (size_t i = 0; i < e.nodes.size(); ++i)
      if (e.backend != "cpu") group[e.nodes[i]] = m.estimate.nodes[i].group;
  }
  json::Value placement = json::Value::array();
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const runtime::NodePlacement& p = s.placement()[n];
    json::Value e = json::Value::object();
    e.set("node", json::Value::string(g.nodes[n].name));
    e.set("op", json::Value::string(ir::op_name(g.nodes[n].op)));
    e.set("backend", json::Value::string(p.backend));
    if (!p.parts.empty()) {
      json::Value groups = json::Value::array(), parts = json::Value::array();
      for (const hal::NodePart& part : p.parts) {
        groups.push(json::Value::integer(part.group));
        json::Value q = json::Value::object();
        q.set("group", json::Value::integer(part.group));
        q.set(
            g.nodes[n].op == ir::Op::kAttention ? "heads" : "columns",
            json::Value::array({json::Value::integer(part.begin), json::Value::integer(part.end)}));
        parts.push(q);
      }
      e.set("group", groups);
      e.set("parts", parts);
    } else {
      e.set("group", group[n] >= 0 ? json::Value::integer(group[n]) : json::Value());
    }
    e.set("reason", json::Value::string(p.fallback_reason));
    placement.push(e);
  }
  r.set("placement", placement);
  json::Value ops = json::Value::array(), calls = json::Value::array();
  for (const runtime::ModelledExecutable& m : pt.timeline) {
    const runtime::ExecutableInfo& e = s.executables()[static_cast<size_t>(m.executable)];
    json::Value c = json::Value::object();
    c.set("executable", json::Value::integer(m.executable));
    c.set("backend", json::Value::string(e.backend));
    c.set("nodes", json::Value::integer(static_cast<int64_t>(e.nodes.size())));
    c.set("start_modelled_ms", num(m.start_ms));
    c.set("overhead_modelled_ms", num(m.estimate.overhead_ms));
    c.set("total_modelled_ms", num(m.estimate.total_ms));
    calls.push(c);
    for (size_t i = 0; i < e.nodes.size(); ++i) {
      const hal::NodeEstimate& ne = m.estimate.nodes[i];
      json::Value op = json::Value::object();
      op.set("node", json::Value::string(g.nodes[e.nodes[i]].name));
      op.set("op", json::Value::string(ir::op_name(g.nodes[e.nodes[i]].op)));
      op.set("backend", json::Value::string(e.backend));
      op.set("executable", json::Value::integer(m.executable));
      op.set("group", e.backend == "cpu" ? json::Value() : json::Value::integer(ne.group));
      if (e.parts[i].begin != 0 || e.parts[i].end != 0)
        op.set("part", json::Value::array({json::Value::integer(e.parts[i].begin),
                                           json::Value::integer(e.parts[i].end)}));
      op.set("start_modelled_ms", num(m.start_ms + m.estimate.overhead_ms + ne.start_ms));
      op.set("modelled_ms", num(ne.ms));
      op.set("macs", json::Value::integer(static_cast<int64_t>(ne.macs)));
      op.set("dram_bytes", json::Value::integer(static_cast<int64_t>(ne.dram_bytes)));
      ops.push(op);
    }
  }
  r.set("ops", ops);
  json::Value dims = json::Value::object();
  for (size_t k = 0; k < pt.sym.size(); ++k)
    dims.set(g.symbols[k].name, json::Value::integer(pt.sym[k]));
  r.set("dims", dims);
  r.set("calls", calls);
  return r;
}

void print_table(const ir::Graph& g, const Point& pt, const Opts& o) {
  const runtime::Session& s = *pt.session;
  std::printf("modelled profile: %s on %s", dims_text(g, pt.sym).c_str(), o.backend.c_str());
  for (const auto& [k, v] : o.settings) std::printf(" %s=%s", k.c_str(), v.c_str());
  std::printf(" (calls %s, split %s)\n", o.calls.c_str(), o.split ? "on" : "off");
  std::printf("total: %.3f modelled_ms, %d NPU call(s), %zu executable(s)\n", pt.total_ms,
              pt.npu_calls, pt.timeline.size());
  std::map<std::string, std::pair<double, int>> by_op;
  std::map<std::string, double> by_group;
  std::printf("executables (modelled_ms):\n");
  for (const runtime::ModelledExecutable& m : pt.timeline) {
    const runtime::ExecutableInfo& e = s.executables()[static_cast<size_t>(m.executable)];
    if (pt.timeline.size() <= 40 || m.estimate.total_ms >= pt.total_ms / 50)
      std::printf("  %3d %-7s %4zu nodes  start %9.3f  overhead %7.3f  total %9.3f\n", m.executable,
                  e.backend.c_str(), e.nodes.size(), m.start_ms, m.estimate.overhead_ms,
                  m.estimate.total_ms);
    for (size_t i = 0; i < e.nodes.size(); ++i) {
      const ir::Node& n = g.nodes[e.nodes[i]];
      auto& x = by_op[e.backend + " " + ir::op_name(n.op)];
      x.first += m.estimate.nodes[i].ms;
      x.second += 1;
      by_group[e.backend == "cpu" ? std::string("cpu")
                                  : "npu group " + std::to_string(m.estimate.nodes[i].group)] +=
          m.estimate.nodes[i].ms;
    }
    by_group[e.backend == "cpu" ? std::string("cpu") : std::string("npu call overhead")] +=
        m.estimate.overhead_ms;
  }
  std::printf("ops (busy modelled_ms, summed over groups):\n");
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [k, v] : by_op) rows.emplace_back(v.first, k);
  std::sort(rows.rbegin(), rows.rend());
  for (const auto& [ms, k] : rows)
    std::printf("  %-22s %10.3f  (%d)\n", k.c_str(), ms, by_op[k].second);
  std::printf("groups (busy modelled_ms):\n");
  for (const auto& [k, ms] : by_group) std::printf("  %-22s %10.3f\n", k.c_str(), ms);
  int fallbacks = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const runtime::NodePlacement& p = s.placement()[n];
    if (!p.parts.empty() && fallbacks < 1000)
      std::printf("  split  %-24s %s\n", g.nodes[n].name.c_str(), parts_text(p.parts).c_str());
  }
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const runtime::NodePlacement& p = s.placement()[n];
    if (p.backend == o.backend) continue;
    ++fallbacks;
    std::printf("  on %-4s %-24s %s\n", p.backend.c_str(), g.nodes[n].name.c_str(),
                p.fallback_reason.c_str());
  }
  if (fallbacks == 0) std::printf("every node runs on %s\n", o.backend.c_str());
}

Status write_trace(const ir::Graph& g, const Point& pt, const Opts& o, const std::string& path) {
  const runtime::Session& s = *pt.session;
  const hal::Backend* b = s.backend(o.backend);
  const uint32_t groups = b != nullptr ? b->capabilities().n_groups : 1;
  constexpr int kCpuTrack = 100;
  json::Value ev = json::Value::array();
  auto meta = [&](const char* what, int tid, const std::string& name) {
    json::Value m = json::Value::object();
    m.set("name", json::Value::string(what));
    m.set("ph", json::Value::string("M"));
    m.set("pid", json::Value::integer(1));
    m.set("tid", json::Value::integer(tid));
    json::Value a = json::Value::object();
    a.set("name", json::Value::string(name));
    m.set("args", a);
    ev.push(m);
  };
  meta("process_name", 0, o.backend + " (modelled, " + dims_text(g, pt.sym) + ")");
  for (uint32_t k = 0; k < groups; ++k)
    meta("thread_name", static_cast<int>(k), "NPU group " + std::to_string(k));
  meta("thread_name", kCpuTrack, "CPU (host)");
  auto event = [&](const std::string& name, const std::string& cat, int tid, double start_ms,
                   double ms, json::Value args) {
    json::Value e = json::Value::object();
    e.set("name", json::Value::string(name));
    e.set("cat", json::Value::string(cat));
    e.set("ph", json::Value::string("X"));
    e.set("pid", json::Value::integer(1));
    e.set("tid", json::Value::integer(tid));
    e.set("ts", num(start_ms * 1000.0));  // microseconds
    e.set("dur", num(ms * 1000.0));
    e.set("args", std::move(args));
    ev.push(std::move(e));
  };
  for (const runtime::ModelledExecutable& m : pt.timeline) {
    const runtime::ExecutableInfo& e = s.executables()[static_cast<size_t>(m.executable)];
    const bool cpu = e.backend == "cpu";
    if (!cpu && m.estimate.overhead_ms > 0)
      for (uint32_t k = 0; k < groups; ++k) {
        json::Value a = json::Value::object();
        a.set("executable", json::Value::integer(m.executable));
        event("call overhead", "call", static_cast<int>(k), m.start_ms, m.estimate.overhead_ms, a);
      }
    for (size_t i = 0; i < e.nodes.size(); ++i) {
      const hal::NodeEstimate& ne = m.estimate.nodes[i];
      const ir::Node& n = g.nodes[e.nodes[i]];
      json::Value a = json::Value::object();
      a.set("backend", json::Value::string(e.backend));
      a.set("executable", json::Value::integer(m.executable));
      a.set("modelled_ms", num(ne.ms));
      a.set("macs", json::Value::integer(static_cast<int64_t>(ne.macs)));
      a.set("dram_bytes", json::Value::integer(static_cast<int64_t>(ne.dram_bytes)));
      if (e.parts[i].begin != 0 || e.parts[i].end != 0)
        a.set("part", json::Value::string(parts_text({e.parts[i]})));
      event(n.name, ir::op_name(n.op), cpu ? kCpuTrack : ne.group,
            m.start_ms + m.estimate.overhead_ms + ne.start_ms, ne.ms, a);
    }
  }
  json::Value doc = json::Value::object();
  doc.set("traceEvents", ev);
  doc.set("displayTimeUnit", json::Value::string("ms"));
  json::Value other = json::Value::object();
  other.set("modelled", json::Value::boolean(true));
  other.set("total_modelled_ms", num(pt.total_ms));
  doc.set("otherData", other);
  std::ofstream f(path);
  if (!f) return status_error(StatusCode::kIoError, "cannot write trace '%s'", path.c_str());
  f << json::dump(doc) << "\n";
  if (!f) return status_error(StatusCode::kIoError, "cannot write trace '%s'", path.c_str());
  return Status::ok();
}

}  // namespace

int cmd_profile(int argc, char** argv) {
  Opts o;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("%s", kProfileUsage);
      return 0;
    }
    if (a.rfind("--", 0) != 0) {
      if (!o.model.empty()) return bad("profile takes one MODEL.laya");
      o.model = a;
      continue;
    }
    std::string key = a.substr(2), value;
    const size_t eq = key.find('=');
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else if (key != "json") {
      if (i + 1 >= argc) return bad("--" + key + " needs a value");
      value = argv[++i];
    }
    auto on_off = [&](bool* out) {
      if (value != "on" && value != "off") return false;
      *out = value == "on";
      return true;
    };
    if (key == "json") {
      o.json = true;
    } else if (key == "model") {
      o.model = value;
    } else if (key == "backend") {
      o.backend = value;
    } else if (key == "vnpu" || key == "host" || key == "chip") {
      o.settings.emplace_back(key, value);
    } else if (key == "param") {
      const size_t e = value.find('=');
      if (e == std::string::npos) return bad("--param wants KEY=VALUE");
      o.settings.emplace_back(value.substr(0, e), value.substr(e + 1));
    } else if (key == "activations") {
      if (value != "bf16" && value != "f32") return bad("--activations is bf16 or f32");
      o.activations = value;
    } else if (key == "calls") {
      if (value != "fused" && value != "per-layer") return bad("--calls is fused or per-layer");
      o.calls = value;
    } else if (key == "split") {
      if (!on_off(&o.split)) return bad("--split is on or off");
    } else if (key == "cost-placement") {
      if (!on_off(&o.cost_placement)) return bad("--cost-placement is on or off");
    } else if (key == "dim") {
      const size_t e = value.find('=');
      int64_t n = 0;
      if (e == std::string::npos || !to_int(value.substr(e + 1), &n))
        return bad("--dim wants NAME=N, got '" + value + "'");
      o.dims.emplace_back(value.substr(0, e), n);
    } else if (key == "sweep") {
      const size_t e = value.find('=');
      if (e == std::string::npos) return bad("--sweep wants NAME=A,B,...");
      o.sweep_name = value.substr(0, e);
      std::string list = value.substr(e + 1);
      size_t at = 0;
      while (at <= list.size()) {
        const size_t c = list.find(',', at);
        int64_t n = 0;
        if (!to_int(list.substr(at, c == std::string::npos ? std::string::npos : c - at), &n))
          return bad("--sweep values must be numbers");
        o.sweep.push_back(n);
        if (c == std::string::npos) break;
        at = c + 1;
      }
    } else if (key == "trace") {
      o.trace = value;
    } else {
      return bad("unknown option --" + key);
    }
  }
  if (o.model.empty()) return bad("profile needs a MODEL.laya");
  if (!o.trace.empty() && !o.sweep.empty()) return bad("--trace profiles one point, not a sweep");
  Result<ir::Graph> loaded = ir::model_load(o.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  const ir::Graph& g = *loaded;
  auto find_symbol = [&](const std::string& name) {
    int s = g.find_symbol(name);
    if (s < 0 && name == "seq") s = g.find_symbol("tokens");
    return s;
  };
  std::vector<int64_t> sym(g.symbols.size(), -1);
  for (const auto& [name, v] : o.dims) {
    const int s = find_symbol(name);
    if (s < 0) return bad("the model has no symbol '" + name + "'");
    sym[static_cast<size_t>(s)] = v;
  }
  int sweep_symbol = -1;
  if (!o.sweep.empty()) {
    sweep_symbol = find_symbol(o.sweep_name);
    if (sweep_symbol < 0) return bad("the model has no symbol '" + o.sweep_name + "'");
  }
  for (size_t k = 0; k < sym.size(); ++k) {
    const ir::Symbol& y = g.symbols[k];
    if (sym[k] >= 0) continue;
    const bool batch_like = y.name == "batch" || y.name == "past" || y.name == "rows";
    sym[k] = std::clamp<int64_t>(batch_like ? 1 : 16, y.min, y.max);
  }
  std::vector<std::vector<int64_t>> points;
  if (o.sweep.empty()) points.push_back(sym);
  for (int64_t v : o.sweep) {
    points.push_back(sym);
    points.back()[static_cast<size_t>(sweep_symbol)] = v;
  }
  std::vector<Point> done;
  for (const std::vector<int64_t>& p : points) {
    for (size_t k = 0; k < p.size(); ++k)
      if (p[k] < g.symbols[k].min || p[k] > g.symbols[k].max)
        return fail(status_error(
            StatusCode::kOutOfRange, "symbol '%s' = %lld is outside [%lld, %lld]",
            g.symbols[k].name.c_str(), static_cast<long long>(p[k]),
            static_cast<long long>(g.symbols[k].min), static_cast<long long>(g.symbols[k].max)));
    Result<Point> pt = profile_point(g, o, p);
    if (!pt.is_ok()) return fail(pt.status());
    done.push_back(std::move(pt).value());
  }

  // Placement changes along the sweep.
  json::Value changes = json::Value::array();
  std::vector<std::string> change_lines;
  for (size_t i = 1; i < done.size(); ++i)
    for (size_t n = 0; n < g.nodes.size(); ++n) {
      const runtime::NodePlacement& a = done[i - 1].session->placement()[n];
      const runtime::NodePlacement& b = done[i].session->placement()[n];
      if (placement_key(a) == placement_key(b)) continue;
      const int64_t from = done[i - 1].sym[static_cast<size_t>(sweep_symbol)];
      const int64_t to = done[i].sym[static_cast<size_t>(sweep_symbol)];
      json::Value c = json::Value::object();
      c.set("node", json::Value::string(g.nodes[n].name));
      c.set("op", json::Value::string(ir::op_name(g.nodes[n].op)));
      c.set("from_value", json::Value::integer(from));
      c.set("to_value", json::Value::integer(to));
      c.set("from", json::Value::string(placement_key(a)));
      c.set("to", json::Value::string(placement_key(b)));
      c.set("reason", json::Value::string(b.fallback_reason));
      changes.push(c);
      change_lines.push_back(
          g.nodes[n].name + " (" + ir::op_name(g.nodes[n].op) + "): " + placement_key(a) + " at " +
          g.symbols[static_cast<size_t>(sweep_symbol)].name + "=" + std::to_string(from) + " -> " +
          placement_key(b) + " at " + std::to_string(to) +
          (b.fallback_reason.empty() ? "" : ": " + b.fallback_reason));
    }

  if (o.json) {
    if (done.size() == 1) {
      std::printf("%s\n", json::dump(point_json(g, done[0])).c_str());
    } else {
      json::Value r = json::Value::object();
      r.set("modelled", json::Value::boolean(true));
      r.set("sweep_symbol", json::Value::string(g.symbols[static_cast<size_t>(sweep_symbol)].name));
      json::Value pts = json::Value::array();
      for (const Point& p : done) pts.push(point_json(g, p));
      r.set("points", pts);
      r.set("placement_changes", changes);
      std::printf("%s\n", json::dump(r).c_str());
    }
  } else if (done.size() == 1) {
    print_table(g, done[0], o);
  } else {
    std::printf("modelled sweep of %s on %s:\n",
                g.symbols[static_cast<size_t>(sweep_symbol)].name.c_str(), o.backend.c_str());
    for (const Point& p : done) {
      int fallbacks = 0, splits = 0;
      for (const runtime::NodePlacement& np : p.session->placement()) {
        fallbacks += np.backend != o.backend;
        splits += !np.parts.empty();
      }
      std::printf(
          "  %-24s %10.3f modelled_ms  %3d NPU call(s)  %4d node(s) on the cpu  %4d split\n",
          dims_text(g, p.sym).c_str(), p.total_ms, p.npu_calls, fallbacks, splits);
    }
    if (change_lines.empty()) std::printf("no node changes placement along the sweep\n");
    for (const std::string& l : change_lines) std::printf("  placement change: %s\n", l.c_str());
  }
  if (!o.trace.empty()) {
    Status st = write_trace(g, done[0], o, o.trace);
    if (!st.is_ok()) return fail(st);
  }
  return 0;
}

}  // namespace laya::tools
