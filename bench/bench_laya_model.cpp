// laya-bench-model: wall time of a Laya decision graph (frontends/import.h contract) on one request
// of one row of T tokens, the shape the peer script (bench/peers/laya_peers.py) times ONNX Runtime
// and PyTorch on.
//
//   laya-bench-model MODEL.laya [--tokens 128,256,512] [--threads 1,2] [--reps 5] [--label NAME]
//                    [--kernels auto|ref|AVX2|...] [--profile 1] [--serve 1]
//
// Prints the machine peaks (bench/peak.h) as one JSON line, then one JSON line per (threads,
// tokens): {"engine", "tokens", "threads", "ms": [...], "median_ms", "cpu_ms": [...], "gflop",
// "gflop_executed"} ("cpu_ms": the process's CPU time of each run, every thread); "gflop" is the
// network's work at that length (matmuls, plus attention over the keys each query sees: every
// key of its row in global and head layers, |i - j| <= window in sliding ones), the same count
// bench/laya_encoder_bench.py uses for every engine; "gflop_executed" what this graph computes
// (less since the head's last layer runs on the answer rows alone: head_rows_only). --profile 1
// adds, on stderr, the time per op type of one extra (untimed) run per shape.
//
// --serve 1 (the interleaved driver's mode; one --threads value): after the peaks line, reads one
// token count per line on stdin and answers each with one JSON line of one timed run,
// {"engine", "tokens", "threads", "ms": [x], "median_ms": x, "cpu_ms": [x], "gflop", ...}; the
// caller sends its own warm-up runs. Ends at end of input.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "ir/model_file.h"
#include "runtime/session.h"
#include "tools/laya_request.h"

namespace {

using namespace laya;

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

std::string property(const ir::Graph& g, const std::string& key) {
  for (const auto& [k, v] : g.meta.properties)
    if (k == key) return v;
  return "";
}

// True when the graph runs its head's last layer only on the rows the answers read (the markers
// and each row's first token; frontends/laya.cpp), as laya-convert has since 2026-12-02.
bool head_rows_only(const ir::Graph& g) {
  const std::string name =
      "head" + std::to_string(g.meta.decision.head_layers - 1) + ".linear1.markers";
  for (const ir::Node& n : g.nodes)
    if (n.name == name) return true;
  return false;
}

// Multiply-adds x 2 of one row of T tokens with `markers` options (see the header): the network's
// work, or with `executed` what this graph computes (less when head_rows_only).
double network_flops(const ir::Graph& g, int64_t t, int64_t markers, bool executed) {
  const double d = std::atof(property(g, "encoder.hidden_size").c_str());
  const double f = std::atof(property(g, "encoder.intermediate_size").c_str());
  const std::string types = property(g, "encoder.layer_types");
  const int64_t w = std::atoll(property(g, "encoder.sliding_window").c_str());
  const double td = static_cast<double>(t);
  double flops = 0;
  for (char c : types) {
    flops += 2 * td * d * (3 * d + d + 2 * f) + 2 * td * f * d;
    double keys = 0;
    for (int64_t i = 0; i < t; ++i)
      keys += c == 'F'
                  ? td
                  : static_cast<double>(std::min(t - 1, i + w) - std::max<int64_t>(0, i - w) + 1);
    flops += 4 * d * keys;
  }
  const int head_layers = g.meta.decision.head_layers;
  flops += head_layers * (2 * td * d * (12 * d) + 4 * d * td * td);
  if (executed && head_layers > 0 && head_rows_only(g)) {
    // The last layer: q, k, v of every token; attention, out_proj and the feed-forward (9 d^2
    // multiply-adds per row) on the markers + 1 rows only.
    const double rows = static_cast<double>(markers + 1);
    flops -= 2 * td * d * (12 * d) + 4 * d * td * td;
    flops += 2 * td * d * (3 * d) + 4 * d * rows * td + 2 * rows * d * (9 * d);
  }
  flops += static_cast<double>(markers) * 2 * (d * d + d);  // scorer
  flops += 2 * ((d + 4) * 256 + 256 * 2);                   // act head
  return flops;
}

// One row of `tokens` ids (deterministic, inside every vocabulary) with k option markers.
tools::LayaInputs make_request(int64_t tokens, int64_t k) {
  tools::LayaRow row;
  uint32_t h = 12345;
  for (int64_t i = 0; i < tokens; ++i) {
    h = h * 1664525u + 1013904223u;
    row.ids.push_back(static_cast<int32_t>(10 + (h >> 8) % 990));
  }
  for (int64_t j = 0; j < k; ++j)
    row.markers.push_back(static_cast<int32_t>(std::min<int64_t>(8 + 6 * j, tokens - 1)));
  return tools::pack_rows({row});
}

// CPU time of the whole process (every thread) in ms.
double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

struct OpTimes {
  const ir::Graph* g = nullptr;
  double ms[static_cast<size_t>(ir::Op::kCount)] = {};
  std::map<std::string, double> matmul_ms;  // per weight shape "n x k"
};

void on_node(void* user, ir::NodeId node, double ms, bool) {
  auto* t = static_cast<OpTimes*>(user);
  const ir::Node& n = t->g->nodes[node];
  t->ms[static_cast<size_t>(n.op)] += ms;
  if (n.op == ir::Op::kMatMul && n.inputs.size() > 1) {
    std::string shape;
    const ir::Shape& ws = t->g->values[n.inputs[1]].shape;
    for (int32_t i = 0; i < ws.rank; ++i)
      shape += (shape.empty() ? "" : " x ") + std::to_string(ws.dims[i].c);
    t->matmul_ms[shape] += ms;
  }
}

int usage() {
  std::fprintf(stderr,
               "usage: laya-bench-model MODEL.laya [--tokens 128,256,512] [--threads 1,2] "
               "[--reps 5] [--label NAME] [--kernels K] [--profile 1] [--serve 1]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string path = argv[1];
  std::vector<int> tokens = {128, 256, 512}, threads = {1, 2};
  int reps = 5;
  std::string label = "laya", kernels = "auto";
  bool profile = false, serve = false;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--tokens")
      tokens = parse_list(argv[i + 1]);
    else if (a == "--threads")
      threads = parse_list(argv[i + 1]);
    else if (a == "--reps")
      reps = std::atoi(argv[i + 1]);
    else if (a == "--label")
      label = argv[i + 1];
    else if (a == "--kernels")
      kernels = argv[i + 1];
    else if (a == "--profile")
      profile = std::atoi(argv[i + 1]) != 0;
    else if (a == "--serve")
      serve = std::atoi(argv[i + 1]) != 0;
    else
      return usage();
  }
  if (serve && threads.size() != 1) return usage();
  Result<ir::Graph> g = ir::model_load(path);
  if (!g.is_ok()) {
    std::fprintf(stderr, "%s\n", g.status().to_string().c_str());
    return 1;
  }
  const bench::Peaks& pk = bench::peaks();
  std::printf("{\"peaks\": {\"fp32_gflops\": %.1f, \"bf16_gflops\": %.1f, \"int8_gops\": %.1f}}\n",
              pk.fp32_gflops, pk.bf16_gflops, pk.int8_gops);
  std::fflush(stdout);
  const int64_t k = 4;
  for (int th : threads) {
    runtime::SessionOptions opts;
    hal::BackendOptions cpu;
    cpu.n_threads = th;
    cpu.settings = {{"kernels", kernels}};
    opts.backend_options.emplace_back("cpu", cpu);
    opts.backend.n_threads = th;
    auto s = runtime::Session::prepare(*g, opts);
    if (!s.is_ok()) {
      std::fprintf(stderr, "%s\n", s.status().to_string().c_str());
      return 1;
    }
    auto buf = runtime::session_buffers_alloc(**s);
    if (!buf.is_ok() || !(*s)->bind_memory(buf->persistent.region(), buf->activations.region(),
                                           buf->scratch.region())
                             .is_ok()) {
      std::fprintf(stderr, "cannot bind memory\n");
      return 1;
    }
    runtime::Session& sess = **s;
    // The next token count: from the list, or (--serve) from stdin; 0 at the end.
    size_t next = 0;
    auto next_tokens = [&]() -> int {
      char line[64];
      if (!serve) return next < tokens.size() ? tokens[next++] : 0;
      return std::fgets(line, sizeof line, stdin) ? std::max(0, std::atoi(line)) : 0;
    };
    const int timed_from = serve ? 1 : 0, runs = serve ? 1 : reps;
    for (int t = next_tokens(); t > 0; t = next_tokens()) {
      const tools::LayaInputs r = make_request(t, k);
      std::vector<int64_t> sym;
      for (const ir::Symbol& y : g->symbols)
        sym.push_back(y.name == "tokens" ? t : y.name == "rows" ? 1 : k);
      if (!sess.reshape(sym).is_ok()) return 1;
      std::vector<const void*> in;
      for (ir::ValueId v : g->inputs) {
        const std::string& n = g->values[v].name;
        in.push_back(n == "ids"         ? r.ids.data()
                     : n == "pos"       ? r.pos.data()
                     : n == "seq"       ? r.seq.data()
                     : n == "qtype"     ? r.qtype.data()
                     : n == "row_start" ? r.row_start.data()
                     : n == "markers"   ? r.markers.data()
                                        : r.valid.data());
      }
      std::vector<std::vector<float>> outs;
      std::vector<void*> out;
      for (ir::ValueId v : g->outputs)
        outs.emplace_back(static_cast<size_t>(sess.extents(v).count()));
      for (auto& o : outs) out.push_back(o.data());
      std::vector<double> ms, cpu_ms;
      for (int rep = timed_from; rep <= runs; ++rep) {
        const double c0 = process_cpu_ms();
        const auto t0 = std::chrono::steady_clock::now();
        const Status st = sess.execute(in, out);
        const double dt =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (rep > 0) cpu_ms.push_back(process_cpu_ms() - c0);
        if (!st.is_ok()) {
          std::fprintf(stderr, "%s\n", st.to_string().c_str());
          return 1;
        }
        if (rep > 0) ms.push_back(dt);  // the first run warms caches and page tables
      }
      if (profile) {
        OpTimes times;
        times.g = &*g;
        hal::ProfileSink sink;
        sink.on_node = on_node;
        sink.user = &times;
        if (!sess.execute(in, out, &sink).is_ok()) return 1;
        double total = 0;
        for (double v : times.ms) total += v;
        std::fprintf(stderr, "profile %s, %d tokens, %d threads, %.1f ms:", label.c_str(), t, th,
                     total);
        for (size_t op = 0; op < static_cast<size_t>(ir::Op::kCount); ++op)
          if (times.ms[op] > 0.005 * total)
            std::fprintf(stderr, " %s %.1f%%", ir::op_name(static_cast<ir::Op>(op)),
                         100 * times.ms[op] / total);
        std::fprintf(stderr, "\n  matmul ms per weight shape:");
        for (const auto& [shape, v] : times.matmul_ms)
          if (v > 0.005 * total) std::fprintf(stderr, " [%s] %.1f", shape.c_str(), v);
        std::fprintf(stderr, "\n");
      }
      std::vector<double> sorted = ms;
      std::sort(sorted.begin(), sorted.end());
      std::string list, cpu_list;
      for (double v : ms) list += (list.empty() ? "" : ", ") + std::to_string(v);
      for (double v : cpu_ms) cpu_list += (cpu_list.empty() ? "" : ", ") + std::to_string(v);
      std::printf(
          "{\"engine\": \"%s\", \"tokens\": %d, \"threads\": %d, \"ms\": [%s], \"median_ms\": "
          "%.3f, \"cpu_ms\": [%s], \"gflop\": %.3f, \"gflop_executed\": %.3f}\n",
          label.c_str(), t, th, list.c_str(), sorted[sorted.size() / 2], cpu_list.c_str(),
          network_flops(*g, t, k, false) * 1e-9, network_flops(*g, t, k, true) * 1e-9);
      std::fflush(stdout);
    }
  }
  return 0;
}
