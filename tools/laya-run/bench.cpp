// laya-run bench: what a model costs on this machine, through the C API (as llama-bench is to
// llama.cpp): latency percentiles per input length, rows per second per batch size (encoders),
// time to first token, prefill and decode speed (decoders), and the memory each region takes.
//
//   laya-run bench --model M.laya|M.gguf [--lengths 64,128,256,512] [--runs N] [--warmup N]
//                  [--batch 1,4,8,16] [--gen N] [--request R.json] [--json] [options]
//
// Every figure is measured on this machine in this process (wall clock, steady_clock); nothing is
// modelled. Exit codes: 0 success, 1 a model / runtime failure, 2 bad arguments.
#include <sched.h>
#include <sys/mman.h>
#if defined(__aarch64__)
#include <sys/auxv.h>
#endif
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "include/laya/laya.h"
#include "kernels/hwy/matmul_float.h"
#include "kernels/kernels.h"
#include "runtime/text/json.h"
#include "tools/cli.h"
#include "tools/laya-run/capi.h"
#include "tools/laya-run/commands.h"

namespace laya::tools {

namespace {

using json::Value;
using Clock = std::chrono::steady_clock;

constexpr const char* kBenchUsage =
    "usage: laya-run bench --model M.laya|M.gguf [options]\n"
    "\n"
    "Measures a model through the C API, as an embedder calls it: after --warmup calls, --runs\n"
    "timed calls per input length give P50 / P95 / P99 latency (nearest rank). An encoder answers\n"
    "a one-question choice request whose row is each length in tokens; --batch sizes time\n"
    "laya_decide_batch on bodies of 32 to 160 tokens (rows per second). A decoder generates --gen\n"
    "greedy tokens after a prompt of each length (no prefix cache: every prompt token is run):\n"
    "time to first token, prefill and decode tokens per second. --request also times laya_decide\n"
    "on that body (the prefix cache on, as a server runs). Then the memory: each region's size "
    "for\n"
    "the largest case, the bytes of it the calls touched (a second context on fresh pages,\n"
    "mincore), the request arena's high-water mark and the process's peak RSS. The header names\n"
    "the CPU, the kernel target and the thread count.\n"
    "\n"
    "  --lengths A,B,...  input tokens per row / prompt (default 64,128,256,512); lengths past "
    "the\n"
    "                     model's row limit (an encoder's max_len) are skipped with a note\n"
    "  --runs N           timed calls per case, 1..100000 (default 10)\n"
    "  --warmup N         untimed calls first, 0..1000 (default 2)\n"
    "  --batch A,B,...    encoders: bodies per laya_decide_batch call, each 1..64 (default\n"
    "                     1,4,8,16); \"0\": none\n"
    "  --gen N            decoders: new tokens per call, 1..4096 (default 32)\n"
    "  --request FILE     also time laya_decide on this body\n"
    "  --json             one JSON object on stdout instead of the tables\n"
    "  --threads N        CPU threads, 0..1024 (default 0: every core this process may use)\n"
    "  --kernels K        auto | ref | a Highway target name (default auto)\n"
    "  --backends A,B     backends in order of preference (default: cpu)\n";

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "laya-run: %s\n\n%s", msg.c_str(), kBenchUsage);
  return 2;
}

// ---- measurement ----------------------------------------------------------------------------

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const size_t rank =
      static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

struct Summary {
  double p50 = 0, p95 = 0, p99 = 0, mean = 0, min = 0;
};

Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.p50 = percentile(v, 50);
  s.p95 = percentile(v, 95);
  s.p99 = percentile(v, 99);
  s.min = v.front();
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

Value summary_json(const Summary& s) {
  Value v = Value::object();
  v.set("p50", Value::number(s.p50));
  v.set("p95", Value::number(s.p95));
  v.set("p99", Value::number(s.p99));
  v.set("mean", Value::number(s.mean));
  v.set("min", Value::number(s.min));
  return v;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    // x86: "model name"; aarch64 kernels print no model name, the "CPU part" instead.
    for (const char* key : {"model name", "CPU part"}) {
      if (line.rfind(key, 0) != 0) continue;
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string v = line.substr(colon + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    }
  }
  return "unknown";
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return CPU_COUNT(&set);
}

// The instructions the hand-written paths beside Highway's targets use, where this CPU has them
// (x86-64: VNNI, AVX512-BF16, AMX; aarch64: the ARMv8.2 dot product).
std::string cpu_extensions() {
  std::string s;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512vnni")) s += "avx512vnni ";
  if (__builtin_cpu_supports("avx512bf16")) s += "avx512bf16 ";
  if (kernels::hwy_matmul_float::amx_bf16_usable()) s += "amx-bf16 ";
#elif defined(__aarch64__)
  if ((getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0) s += "dotprod ";  // the int GEMVs' sdot
#endif
  if (!s.empty()) s.pop_back();
  return s.empty() ? "none" : s;
}

uint64_t peak_rss_bytes() {
  rusage u = {};
  (void)getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss) * 1024;
}

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", static_cast<double>(b) / (1024.0 * 1024.0));
  return buf;
}

const char* const kRegionNames[LAYA_REGION_COUNT] = {"weights", "activations", "scratch", "kv",
                                                     "work"};

// Regions on fresh anonymous pages (never huge: one 4 KiB page is the unit mincore reports), so
// the pages a context touched can be counted afterwards.
class MappedRegions {
 public:
  MappedRegions() = default;
  ~MappedRegions() {
    for (const Map& m : maps_)
      if (m.base != nullptr) munmap(m.base, m.len);
  }
  MappedRegions(const MappedRegions&) = delete;
  MappedRegions& operator=(const MappedRegions&) = delete;

  bool map(const laya_memory_requirements& req) {
    page_ = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
      regions_[r] = {nullptr, 0};
      if (req.size[r] == 0) continue;
      const uint64_t align = std::max<uint64_t>(req.alignment[r], page_);
      Map m;
      m.len = req.size[r] + align;
      m.base = mmap(nullptr, m.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m.base == MAP_FAILED) return false;
      (void)madvise(m.base, m.len, MADV_NOHUGEPAGE);
      maps_.push_back(m);
      const uintptr_t p = (reinterpret_cast<uintptr_t>(m.base) + align - 1) & ~(align - 1);
      regions_[r] = {reinterpret_cast<void*>(p), static_cast<size_t>(req.size[r])};
    }
    return true;
  }
  const laya_region* regions() const { return regions_; }
  // Bytes of region r in pages that are resident: pages the calls wrote (or read).
  uint64_t touched(int r) const {
    const laya_region& g = regions_[r];
    if (g.data == nullptr) return 0;
    const uintptr_t start = reinterpret_cast<uintptr_t>(g.data) & ~(page_ - 1);
    const uint64_t len = reinterpret_cast<uintptr_t>(g.data) + g.size - start;
    std::vector<unsigned char> vec((len + page_ - 1) / page_);
    if (mincore(reinterpret_cast<void*>(start), len, vec.data()) != 0) return 0;
    uint64_t pages = 0;
    for (unsigned char c : vec) pages += c & 1;
    return std::min<uint64_t>(pages * page_, g.size);
  }

 private:
  struct Map {
    void* base = nullptr;
    size_t len = 0;
  };
  std::vector<Map> maps_;
  laya_region regions_[LAYA_REGION_COUNT] = {};
  uint64_t page_ = 4096;
};

// ---- inputs ---------------------------------------------------------------------------------

// Deterministic device-log text: numbers and words vary, so no tokenizer collapses it.
std::string filler_text(size_t words) {
  static const char* const kRooms[] = {"kitchen", "hallway", "garage", "bedroom", "office"};
  static const char* const kThings[] = {"temperature", "humidity", "motion", "light", "noise"};
  std::string s;
  uint32_t x = 12345;
  for (size_t i = 0; i < words; ++i) {
    x = x * 1103515245u + 12345u;
    const uint32_t r = x >> 16;
    switch (i % 4) {
      case 0:
        s += kRooms[r % 5];
        break;
      case 1:
        s += kThings[r % 5];
        break;
      case 2:
        s += std::to_string(r % 100);
        break;
      default:
        s += (r & 1) ? "rising" : "steady";
        break;
    }
    s += (i % 4 == 3) ? ". " : " ";
  }
  return s;
}

std::string encoder_body(const std::string& state) {
  Value q = Value::object();
  q.set("type", Value::string("choice"));
  q.set("instructions", Value::string("What should the heating do?"));
  q.set("criteria",
        Value::array({Value::string("on"), Value::string("off"), Value::string("wait")}));
  Value qs = Value::object();
  qs.set("action", std::move(q));
  Value body = Value::object();
  body.set("state", Value::string(state));
  body.set("questions", std::move(qs));
  return json::dump(body);
}

// The row tokens laya_decide reports for a body (usage.input_tokens of state 0).
laya_status row_tokens(laya_context* ctx, const std::string& body, int64_t* tokens) {
  size_t n = 0;
  const laya_status s = laya_decide(ctx, body.data(), body.size(), nullptr, 0, &n);
  if (s != LAYA_OK && s != LAYA_E_BUFFER_TOO_SMALL) return s;
  laya_usage u = laya_usage_init();
  if (laya_status t = laya_result_usage(ctx, 0, &u); t != LAYA_OK) return t;
  *tokens = u.input_tokens;
  return LAYA_OK;
}

// A body whose row is `target` tokens (or the nearest the filler reaches: one word can be
// several tokens). Searches the filler's word count by the measured row length.
laya_status encoder_body_for(laya_context* ctx, int64_t target, std::string* body,
                             int64_t* tokens) {
  size_t lo = 0, hi = 1;
  int64_t t = 0;
  // Grow until the row reaches the target, then bisect.
  for (;;) {
    if (laya_status s = row_tokens(ctx, encoder_body(filler_text(hi)), &t); s != LAYA_OK) return s;
    if (t >= target || hi > 1u << 16) break;
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const size_t mid = (lo + hi) / 2;
    if (laya_status s = row_tokens(ctx, encoder_body(filler_text(mid)), &t); s != LAYA_OK) return s;
    (t >= target ? hi : lo) = mid;
  }
  // The closer of lo and hi.
  int64_t t_lo = 0, t_hi = 0;
  if (laya_status s = row_tokens(ctx, encoder_body(filler_text(lo)), &t_lo); s != LAYA_OK) return s;
  if (laya_status s = row_tokens(ctx, encoder_body(filler_text(hi)), &t_hi); s != LAYA_OK) return s;
  const bool take_lo = target - t_lo <= t_hi - target;
  *body = encoder_body(filler_text(take_lo ? lo : hi));
  *tokens = take_lo ? t_lo : t_hi;
  return LAYA_OK;
}

// ---- the report -----------------------------------------------------------------------------

struct Options {
  std::vector<int64_t> lengths = {64, 128, 256, 512};
  std::vector<int64_t> batches = {1, 4, 8, 16};
  int64_t runs = 10, warmup = 2, gen = 32;
  std::string request;
  bool json = false;
};

struct Report {
  Value root = Value::object();
  Value latency = Value::array();
  Value batch = Value::array();
  Value notes = Value::array();
  std::string table;  // the readable form, built alongside

  void line(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    table += buf;
    table += '\n';
  }
  void blank() { table += '\n'; }
  void note(const std::string& s) {
    notes.push(Value::string(s));
    line("note: %s", s.c_str());
  }
};

int call_failed(const char* what, laya_context* ctx, laya_status s) {
  std::fprintf(stderr, "laya-run: %s: %s: %s\n", what, laya_status_string(s),
               ctx != nullptr ? laya_context_error(ctx) : "");
  return 1;
}

// Times `fn` (returning laya_status): warm-up calls, then `runs` timed ones (ms).
template <class F>
laya_status time_calls(const Options& o, std::vector<double>* ms, F&& fn) {
  for (int64_t i = 0; i < o.warmup; ++i)
    if (laya_status s = fn(); s != LAYA_OK) return s;
  ms->clear();
  for (int64_t i = 0; i < o.runs; ++i) {
    const Clock::time_point t0 = Clock::now();
    if (laya_status s = fn(); s != LAYA_OK) return s;
    ms->push_back(ms_since(t0));
  }
  return LAYA_OK;
}

int bench_encoder(const Options& o, CapiModel& m, const laya_model_info& info,
                  laya_context_limits lim, Report* rep, std::vector<std::string>* memory_bodies) {
  const int64_t max_batch =
      o.batches.empty() ? 1 : *std::max_element(o.batches.begin(), o.batches.end());
  lim.max_batch = std::max<int64_t>(max_batch, 1);
  CapiContext ctx;
  if (CapiError e = ctx.create(m.get(), lim); !e.ok()) return report(e);
  std::vector<char> out(size_t{1} << 20);
  size_t n = 0;

  rep->line("%8s %6s %10s %10s %10s %10s %12s", "tokens", "runs", "p50 ms", "p95 ms", "p99 ms",
            "mean ms", "decisions/s");
  for (int64_t target : o.lengths) {
    if (target > info.max_len) {
      rep->note("length " + std::to_string(target) + " skipped: past the model's max_len " +
                std::to_string(info.max_len));
      continue;
    }
    std::string body;
    int64_t tokens = 0;
    if (laya_status s = encoder_body_for(ctx.get(), target, &body, &tokens); s != LAYA_OK)
      return call_failed("laya_decide", ctx.get(), s);
    if (tokens > target + 4 || tokens < target - 4)
      rep->note("length " + std::to_string(target) + ": the nearest row is " +
                std::to_string(tokens) + " tokens (the question alone takes some)");
    std::vector<double> ms;
    if (laya_status s = time_calls(o, &ms,
                                   [&] {
                                     return laya_decide(ctx.get(), body.data(), body.size(),
                                                        out.data(), out.size(), &n);
                                   });
        s != LAYA_OK)
      return call_failed("laya_decide", ctx.get(), s);
    const Summary sm = summarize(ms);
    rep->line("%8lld %6lld %10.3f %10.3f %10.3f %10.3f %12.1f", static_cast<long long>(tokens),
              static_cast<long long>(o.runs), sm.p50, sm.p95, sm.p99, sm.mean, 1000.0 / sm.p50);
    Value row = Value::object();
    row.set("target_tokens", Value::integer(target));
    row.set("tokens", Value::integer(tokens));
    row.set("runs", Value::integer(o.runs));
    row.set("ms", summary_json(sm));
    row.set("decisions_per_s", Value::number(1000.0 / sm.p50));
    rep->latency.push(std::move(row));
    memory_bodies->assign(1, body);  // the longest row measured
  }

  if (!o.batches.empty()) {
    // Rows of a realistic mix of decision lengths: 32, 64, 96, 128, 160 tokens in turn.
    std::vector<std::string> mix;
    std::vector<int64_t> mix_tokens;
    for (int64_t t = 32; t <= 160; t += 32) {
      if (t > info.max_len) break;
      std::string body;
      int64_t tokens = 0;
      if (laya_status s = encoder_body_for(ctx.get(), t, &body, &tokens); s != LAYA_OK)
        return call_failed("laya_decide", ctx.get(), s);
      mix.push_back(std::move(body));
      mix_tokens.push_back(tokens);
    }
    // Each body alone first: a batch's bodies one at a time is what the batch competes with.
    std::vector<double> alone_ms;
    for (const std::string& body : mix) {
      std::vector<double> ms;
      if (laya_status s = time_calls(o, &ms,
                                     [&] {
                                       return laya_decide(ctx.get(), body.data(), body.size(),
                                                          out.data(), out.size(), &n);
                                     });
          s != LAYA_OK)
        return call_failed("laya_decide", ctx.get(), s);
      alone_ms.push_back(summarize(ms).p50);
    }
    rep->blank();
    rep->line("batches of rows of 32..160 tokens (in turn), laya_decide_batch; \"vs singly\": the");
    rep->line("same bodies' P50s one laya_decide at a time, summed, over the batch's P50:");
    rep->line("%8s %6s %10s %10s %12s %10s", "batch", "runs", "p50 ms", "p99 ms", "rows/s",
              "vs singly");
    std::vector<laya_batch_item> items;
    for (int64_t b : o.batches) {
      items.assign(static_cast<size_t>(b), laya_batch_item{});
      int64_t tokens = 0;
      double singly_ms = 0;
      for (int64_t i = 0; i < b; ++i) {
        const size_t k = static_cast<size_t>(i) % mix.size();
        items[static_cast<size_t>(i)].body = mix[k].data();
        items[static_cast<size_t>(i)].body_len = mix[k].size();
        tokens += mix_tokens[k];
        singly_ms += alone_ms[k];
      }
      std::vector<double> ms;
      laya_status s = time_calls(o, &ms, [&] {
        laya_status r =
            laya_decide_batch(ctx.get(), items.data(), items.size(), out.data(), out.size(), &n);
        for (const laya_batch_item& it : items)
          if (r == LAYA_OK && it.status != LAYA_OK) r = it.status;
        return r;
      });
      if (s != LAYA_OK) return call_failed("laya_decide_batch", ctx.get(), s);
      const Summary sm = summarize(ms);
      const double rows_per_s = static_cast<double>(b) * 1000.0 / sm.p50;
      rep->line("%8lld %6lld %10.3f %10.3f %12.1f %9.2fx", static_cast<long long>(b),
                static_cast<long long>(o.runs), sm.p50, sm.p99, rows_per_s, singly_ms / sm.p50);
      Value row = Value::object();
      row.set("batch", Value::integer(b));
      row.set("tokens", Value::integer(tokens));
      row.set("runs", Value::integer(o.runs));
      row.set("ms", summary_json(sm));
      row.set("rows_per_s", Value::number(rows_per_s));
      row.set("singly_ms", Value::number(singly_ms));
      rep->batch.push(std::move(row));
      if (b == max_batch) {
        memory_bodies->clear();
        for (int64_t i = 0; i < b; ++i)
          memory_bodies->push_back(mix[static_cast<size_t>(i) % mix.size()]);
      }
    }
  }
  return 0;
}

// Prompt ids for the decoder: the filler text tokenized (BOS as the vocabulary says), repeated
// until `count`; a model without a tokenizer gets ids from a fixed generator.
laya_status decoder_prompt(laya_context* ctx, const laya_model_info& info, size_t count,
                           std::vector<int32_t>* ids) {
  const std::string text = filler_text(count + 16);
  ids->assign(text.size() + 16, 0);
  size_t n = 0;
  laya_status s = laya_tokenize(ctx, text.data(), text.size(), 1, ids->data(), ids->size(), &n);
  if (s == LAYA_OK && n >= count) {
    ids->resize(count);
    return LAYA_OK;
  }
  if (s != LAYA_OK && s != LAYA_E_UNSUPPORTED) return s;
  uint32_t x = 7;
  ids->resize(count);
  for (size_t i = 0; i < count; ++i) {
    x = x * 1103515245u + 12345u;
    (*ids)[i] = static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(info.vocab_size));
  }
  return LAYA_OK;
}

int bench_decoder(const Options& o, CapiModel& m, const laya_model_info& info,
                  laya_context_limits lim, Report* rep, int64_t* memory_length) {
  const int64_t longest = *std::max_element(o.lengths.begin(), o.lengths.end());
  lim.kv_cells = std::min<int64_t>(info.max_tokens, longest + o.gen + 1);
  CapiContext ctx;
  if (CapiError e = ctx.create(m.get(), lim); !e.ok()) return report(e);
  std::vector<char> out(size_t{1} << 16);
  size_t n = 0;
  rep->line("%8s %6s %6s %9s %9s %9s %12s %12s %10s", "prompt", "gen", "runs", "ttft p50",
            "ttft p95", "ttft p99", "prefill t/s", "decode t/s", "total p50");
  for (int64_t len : o.lengths) {
    if (len + o.gen > lim.kv_cells) {
      rep->note("prompt " + std::to_string(len) + " skipped: with --gen it passes the context's " +
                std::to_string(info.max_tokens) + " tokens");
      continue;
    }
    std::vector<int32_t> ids;
    if (laya_status s = decoder_prompt(ctx.get(), info, static_cast<size_t>(len), &ids);
        s != LAYA_OK)
      return call_failed("laya_tokenize", ctx.get(), s);
    laya_generate_params p = laya_generate_params_init();
    p.prompt_ids = ids.data();
    p.n_prompt_ids = ids.size();
    p.max_tokens = o.gen;
    p.no_prefix_cache = 1;
    std::vector<double> ttft, prefill_tps, decode_tps, total, generated;
    std::vector<double> ms;
    laya_status s = time_calls(o, &ms, [&] {
      const laya_status r = laya_generate(ctx.get(), &p, out.data(), out.size(), &n);
      if (r != LAYA_OK) return r;
      laya_generation g = laya_generation_init();
      if (laya_status t = laya_result_generation(ctx.get(), &g); t != LAYA_OK) return t;
      ttft.push_back(g.first_token_ms);
      prefill_tps.push_back(g.prefill_ms > 0 ? 1000.0 * static_cast<double>(len) / g.prefill_ms
                                             : 0);
      decode_tps.push_back(g.decode_tokens_per_s);
      generated.push_back(static_cast<double>(g.n_ids));
      return LAYA_OK;
    });
    if (s != LAYA_OK) return call_failed("laya_generate", ctx.get(), s);
    // The warm-up calls' figures are not the runs'.
    for (auto* v : {&ttft, &prefill_tps, &decode_tps, &generated})
      v->erase(v->begin(), v->begin() + static_cast<long>(o.warmup));
    const Summary t = summarize(ttft), pf = summarize(prefill_tps), dc = summarize(decode_tps),
                  tot = summarize(ms), gn = summarize(generated);
    rep->line("%8lld %6.0f %6lld %9.2f %9.2f %9.2f %12.1f %12.1f %10.2f",
              static_cast<long long>(len), gn.p50, static_cast<long long>(o.runs), t.p50, t.p95,
              t.p99, pf.p50, dc.p50, tot.p50);
    Value row = Value::object();
    row.set("prompt_tokens", Value::integer(len));
    row.set("generated_tokens", Value::number(gn.p50));
    row.set("runs", Value::integer(o.runs));
    row.set("ttft_ms", summary_json(t));
    row.set("prefill_tokens_per_s", summary_json(pf));
    row.set("decode_tokens_per_s", summary_json(dc));
    row.set("total_ms", summary_json(tot));
    rep->latency.push(std::move(row));
    if (gn.min < static_cast<double>(o.gen))
      rep->note("prompt " + std::to_string(len) + ": a stop token ended some calls before " +
                std::to_string(o.gen) + " tokens (decode t/s counts the tokens made)");
    *memory_length = len;
  }
  return 0;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  bool help = false, json_out = false;
  std::string model, lengths = "64,128,256,512", batches = "1,4,8,16", request;
  std::string kernels = "auto", backends = "cpu";
  int64_t runs = 10, warmup = 2, gen = 32, threads = 0;
  std::vector<std::string> positional;
  ArgParser p;
  p.flag("help", &help);
  p.flag("json", &json_out);
  p.text("model", &model);
  p.text("lengths", &lengths);
  p.text("batch", &batches);
  p.text("request", &request);
  p.integer("runs", 1, 100000, &runs);
  p.integer("warmup", 0, 1000, &warmup);
  p.integer("gen", 1, 4096, &gen);
  p.integer("threads", 0, 1024, &threads);
  p.choice("kernels", kernels::kernel_table_names(), &kernels);
  p.text("backends", &backends);
  if (!p.parse(argc, argv, 2, &positional)) return usage_error(p.error());
  if (help) {
    std::printf("%s", kBenchUsage);
    return 0;
  }
  if (!positional.empty()) return usage_error("unexpected argument " + positional[0]);
  if (model.empty()) return usage_error("--model is required");
  Options o;
  o.runs = runs;
  o.warmup = warmup;
  o.gen = gen;
  o.json = json_out;
  std::string err;
  std::vector<std::string> items;
  if (!split_list(lengths, "--lengths", &items, &err)) return usage_error(err);
  o.lengths.clear();
  for (const std::string& s : items) {
    int64_t v = 0;
    if (!parse_integer(s, 1, 1 << 20, "--lengths", &v, &err)) return usage_error(err);
    o.lengths.push_back(v);
  }
  o.batches.clear();
  if (batches != "0") {
    if (!split_list(batches, "--batch", &items, &err)) return usage_error(err);
    for (const std::string& s : items) {
      int64_t v = 0;
      if (!parse_integer(s, 1, 64, "--batch", &v, &err)) return usage_error(err);
      o.batches.push_back(v);
    }
  }
  std::vector<std::string> backend_list;
  if (!split_list(backends, "--backends", &backend_list, &err)) return usage_error(err);
  std::string request_body;
  if (!request.empty()) {
    Result<std::string> text = read_request_file(request);
    if (!text.is_ok()) {
      std::fprintf(stderr, "laya-run: %s\n", text.status().to_string().c_str());
      return 1;
    }
    request_body = std::move(text).value();
  }

  CapiModelOptions mo;
  mo.backends = backends;
  mo.kernels = kernels;
  mo.threads = static_cast<int>(threads);
  CapiModel m;
  const Clock::time_point t_load = Clock::now();
  if (CapiError e = m.open(model, mo); !e.ok()) return report(e);
  const double load_ms = ms_since(t_load);
  const laya_model_info info = m.info();
  const bool encoder = info.kind == LAYA_MODEL_ENCODER;

  Report rep;
  std::string target = kernels;
  if (kernels == "auto") {
    const std::vector<int64_t> t = kernels::kernel_hwy_targets();
    target = t.empty() ? "ref" : kernels::kernel_target_name(t.front());
  }
  const int n_threads = threads > 0 ? static_cast<int>(threads) : usable_cores();
  const std::string cpu = cpu_model();
  rep.line(
      "laya-run bench: %s (%s %s, %s, %.1f M parameters, %d layers, hidden %d), loaded in "
      "%.0f ms",
      info.name, encoder ? "encoder" : "decoder", info.architecture, info.weight_dtypes,
      static_cast<double>(info.parameters) / 1e6, info.layers, info.hidden_size, load_ms);
  const std::string ext = cpu_extensions();
  rep.line(
      "CPU: %s (%d usable cores; extensions: %s); kernels: %s%s%s; threads: %d; backends: "
      "%s; laya %s",
      cpu.c_str(), usable_cores(), ext.c_str(), kernels.c_str(), kernels == "auto" ? " = " : "",
      kernels == "auto" ? target.c_str() : "", n_threads, backends.c_str(), laya_version());
  rep.blank();
  Value header = Value::object();
  header.set("cpu", Value::string(cpu));
  header.set("usable_cores", Value::integer(usable_cores()));
  header.set("kernels", Value::string(kernels));
  header.set("kernel_target", Value::string(target));
  header.set("cpu_extensions", Value::string(ext));
  header.set("threads", Value::integer(n_threads));
  header.set("backends", Value::string(backends));
  header.set("laya_version", Value::string(laya_version()));
  rep.root.set("machine", std::move(header));
  Value mj = Value::object();
  mj.set("path", Value::string(model));
  mj.set("name", Value::string(info.name));
  mj.set("kind", Value::string(encoder ? "encoder" : "decoder"));
  mj.set("architecture", Value::string(info.architecture));
  mj.set("weight_dtypes", Value::string(info.weight_dtypes));
  mj.set("parameters", Value::integer(info.parameters));
  mj.set("weight_bytes", Value::integer(static_cast<int64_t>(info.weight_bytes)));
  mj.set("load_ms", Value::number(load_ms));
  rep.root.set("model", std::move(mj));

  laya_context_limits lim = laya_context_default_limits();
  lim.n_threads = static_cast<int32_t>(threads);
  std::vector<std::string> memory_bodies;
  int64_t memory_length = 0;
  if (encoder) {
    if (int rc = bench_encoder(o, m, info, lim, &rep, &memory_bodies); rc != 0) return rc;
  } else {
    if (int rc = bench_decoder(o, m, info, lim, &rep, &memory_length); rc != 0) return rc;
  }
  rep.root.set("latency", std::move(rep.latency));
  rep.root.set("batch", std::move(rep.batch));

  if (!request_body.empty()) {
    // The body as a server answers it: one context, the prefix cache on (decoders).
    CapiContext ctx;
    laya_context_limits l = lim;
    if (CapiError e = ctx.create(m.get(), l); !e.ok()) return report(e);
    std::vector<char> out(size_t{1} << 20);
    size_t n = 0;
    std::vector<double> ms;
    laya_status s = time_calls(o, &ms, [&] {
      return laya_decide(ctx.get(), request_body.data(), request_body.size(), out.data(),
                         out.size(), &n);
    });
    if (s != LAYA_OK) return call_failed("laya_decide --request", ctx.get(), s);
    const Summary sm = summarize(ms);
    rep.blank();
    rep.line("--request %s: p50 %.3f ms, p95 %.3f ms, p99 %.3f ms over %lld runs", request.c_str(),
             sm.p50, sm.p95, sm.p99, static_cast<long long>(o.runs));
    Value r = Value::object();
    r.set("path", Value::string(request));
    r.set("runs", Value::integer(o.runs));
    r.set("ms", summary_json(sm));
    rep.root.set("request", std::move(r));
  }

  // Memory: the process's peak so far (the timed contexts are gone), then one more context on
  // fresh pages running the largest case once, to count what each region's calls touched.
  const uint64_t rss = peak_rss_bytes();
  laya_memory_requirements req = laya_memory_requirements_init();
  laya_context_limits ml = lim;
  if (encoder) {
    ml.max_batch = std::max<int64_t>(1, static_cast<int64_t>(memory_bodies.size()));
  } else {
    const int64_t longest = *std::max_element(o.lengths.begin(), o.lengths.end());
    ml.kv_cells = std::min<int64_t>(info.max_tokens, longest + o.gen + 1);
  }
  laya_error lerr;
  if (laya_status s = laya_context_requirements(m.get(), &ml, &req, &lerr); s != LAYA_OK) {
    std::fprintf(stderr, "laya-run: laya_context_requirements: %s\n", lerr.message);
    return 1;
  }
  MappedRegions mapped;
  if (!mapped.map(req)) {
    std::fprintf(stderr, "laya-run: cannot map the context's regions: %s\n", std::strerror(errno));
    return 1;
  }
  laya_context* mctx = nullptr;
  if (laya_status s = laya_context_create(m.get(), &ml, mapped.regions(), &mctx, &lerr);
      s != LAYA_OK) {
    std::fprintf(stderr, "laya-run: laya_context_create: %s\n", lerr.message);
    return 1;
  }
  {
    std::vector<char> out(size_t{1} << 20);
    size_t n = 0;
    laya_status s = LAYA_OK;
    if (encoder && memory_bodies.size() == 1) {
      s = laya_decide(mctx, memory_bodies[0].data(), memory_bodies[0].size(), out.data(),
                      out.size(), &n);
    } else if (encoder && !memory_bodies.empty()) {
      std::vector<laya_batch_item> items(memory_bodies.size());
      for (size_t i = 0; i < items.size(); ++i)
        items[i] = {memory_bodies[i].data(), memory_bodies[i].size(), LAYA_OK, 0, 0};
      s = laya_decide_batch(mctx, items.data(), items.size(), out.data(), out.size(), &n);
    } else if (!encoder && memory_length > 0) {
      std::vector<int32_t> ids;
      s = decoder_prompt(mctx, info, static_cast<size_t>(memory_length), &ids);
      laya_generate_params gp = laya_generate_params_init();
      gp.prompt_ids = ids.data();
      gp.n_prompt_ids = ids.size();
      gp.max_tokens = o.gen;
      gp.no_prefix_cache = 1;
      if (s == LAYA_OK) s = laya_generate(mctx, &gp, out.data(), out.size(), &n);
    }
    if (s != LAYA_OK) {
      const int rc = call_failed("the memory run", mctx, s);
      laya_context_destroy(mctx);
      return rc;
    }
  }
  laya_context_stats st = laya_context_stats_init();
  (void)laya_context_stats_get(mctx, &st);
  rep.blank();
  rep.line("memory (one context, the largest case above; touched: resident 4 KiB pages):");
  rep.line("%-12s %12s %12s", "region", "size MiB", "touched MiB");
  Value regions = Value::array();
  for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
    const uint64_t touched = mapped.touched(r);
    rep.line("%-12s %12s %12s", kRegionNames[r], mib(req.size[r]).c_str(), mib(touched).c_str());
    Value rj = Value::object();
    rj.set("region", Value::string(kRegionNames[r]));
    rj.set("bytes", Value::integer(static_cast<int64_t>(req.size[r])));
    rj.set("touched_bytes", Value::integer(static_cast<int64_t>(touched)));
    regions.push(std::move(rj));
  }
  rep.line("%-12s %12s %12s", "arena", mib(st.arena_bytes).c_str(),
           mib(st.arena_high_water).c_str());
  rep.line(
      "model shared (packed weights, once per model): %s MiB; peak RSS of the timed runs: "
      "%s MiB",
      mib(req.model_shared_bytes).c_str(), mib(rss).c_str());
  laya_context_destroy(mctx);
  Value mem = Value::object();
  mem.set("regions", std::move(regions));
  mem.set("arena_bytes", Value::integer(static_cast<int64_t>(st.arena_bytes)));
  mem.set("arena_high_water", Value::integer(static_cast<int64_t>(st.arena_high_water)));
  mem.set("arena_overflows", Value::integer(static_cast<int64_t>(st.arena_overflows)));
  mem.set("model_shared_bytes", Value::integer(static_cast<int64_t>(req.model_shared_bytes)));
  mem.set("peak_rss_bytes", Value::integer(static_cast<int64_t>(rss)));
  rep.root.set("memory", std::move(mem));
  rep.root.set("notes", std::move(rep.notes));

  if (o.json)
    print_json(rep.root);
  else
    std::fwrite(rep.table.data(), 1, rep.table.size(), stdout);
  return 0;
}

}  // namespace laya::tools
