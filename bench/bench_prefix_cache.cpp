// Time to first token with and without the prefix cache (runtime/prefix_cache.h) on the real
// SmolLM2 Q4_1 GGUF: a 400-token shared system prompt plus a 20-token suffix that changes every
// iteration (issue 8: a hit must be >= 10x faster than cold).
//
//   LAYA_SMOLLM2_GGUF=.../SmolLM2-135M-Instruct.Q4_1.gguf build/bench/laya-bench-prefix-cache
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true   (one command line)
//
// BM_ttft_cold: the KV cache emptied, the whole 420-token prompt prefilled (chunks of 128), the
// first token picked. BM_ttft_hit: the system prompt's blocks (16 tokens each) are cached, so the
// prompt reuses its 400 tokens and prefills the 20 of the suffix. The time is the runner's
// DecoderStats::first_token_ms (manual time); storing the prompt's blocks after the first token
// is not in it. LAYA_THREADS (default 1) sets the CPU threads; `--kv-type f16` (anywhere among
// the benchmark flags) builds the graph with an f16 KV cache (default f32), whose bytes per cell
// are the kv_bytes_per_cell counter (the prefix-cache budget follows them). Without the GGUF both
// benchmarks skip with a message.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "frontends/gguf.h"
#include "frontends/gguf_decoder.h"
#include "frontends/gguf_tokenizer.h"
#include "runtime/decoder.h"
#include "runtime/kv_cache.h"
#include "runtime/prefix_cache.h"
#include "runtime/session.h"

namespace {

using namespace laya;

constexpr int64_t kSystem = 400, kSuffix = 20, kChunk = 128, kBlock = 16;
ir::DType g_kv_dtype = ir::DType::kF16;  // --kv-type (default f16, as laya-run)

std::string gguf_path() {
  if (const char* p = std::getenv("LAYA_SMOLLM2_GGUF")) return p;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "") +
         "/.cache/laya-models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
}

// SmolLM2, one session (decode and 128-token prefill plans), a cache for one working sequence
// plus two prefix-cache slots of the system prompt, and the tokenized system prompt.
struct Setup {
  std::string error;
  ir::Graph graph;
  runtime::DecoderInstance run;
  std::unique_ptr<runtime::PrefixCache> prefix;
  std::vector<int32_t> system;
  int64_t vocab = 0;

  Status init() {
    const std::string path = gguf_path();
    LAYA_ASSIGN_OR_RETURN(frontends::gguf::File f, frontends::gguf::File::open(path));
    auto file = std::make_shared<const frontends::gguf::File>(std::move(f));
    LAYA_ASSIGN_OR_RETURN(std::unique_ptr<tok::Tokenizer> tokenizer,
                          frontends::gguf::gguf_tokenizer(*file));
    std::string text;
    while (static_cast<int64_t>(system.size()) < kSystem) {
      text +=
          "You control the cooling of a server room. Every minute you read the sensors (inlet "
          "and outlet temperature, fan speeds, humidity, power draw) and choose one action. ";
      tok::EncodeOptions eo;
      eo.add_special_tokens = true;
      LAYA_RETURN_IF_ERROR(tokenizer->encode(text, eo, &system));
    }
    system.resize(kSystem);
    const int64_t prefix_cells = 2 * (kSystem + kSuffix);
    const int64_t cells = kSystem + kSuffix + prefix_cells;
    frontends::gguf::CachedDecoderGraphOptions o;
    o.max_seq = kChunk;
    o.max_cells = cells;
    o.kv_dtype = g_kv_dtype;
    LAYA_ASSIGN_OR_RETURN(graph, frontends::gguf::build_cached_decoder_graph(file, o));
    vocab = graph.values[graph.outputs[0]].shape.dims[2].c;
    runtime::SessionOptions base;
    const char* threads = std::getenv("LAYA_THREADS");
    base.backend.n_threads = threads ? std::atoi(threads) : 1;
    LAYA_ASSIGN_OR_RETURN(run, runtime::DecoderInstance::create(graph, base, kChunk, cells, 3));
    runtime::PrefixCacheOptions po;
    po.block_tokens = kBlock;
    po.first_seq = 1;
    po.slots = 2;
    const runtime::KvCacheLayout& layout = run.cache->layout();
    po.budget_bytes = static_cast<uint64_t>(prefix_cells) * layout.bytes_per_cell;
    LAYA_ASSIGN_OR_RETURN(prefix, runtime::PrefixCache::create(*run.cache, layout, po));
    return Status::ok();
  }

  // The system prompt and the suffix of iteration `i` (ids that differ per iteration).
  std::vector<int32_t> prompt(int64_t i) const {
    std::vector<int32_t> p = system;
    for (int64_t k = 0; k < kSuffix; ++k)
      p.push_back(static_cast<int32_t>(1000 + (i * kSuffix + k) * 7919 % (vocab - 1000)));
    return p;
  }
};

Setup* setup() {
  static Setup* s = [] {
    auto* x = new Setup();
    const Status st = x->init();
    if (!st.is_ok()) x->error = st.to_string() + " (set LAYA_SMOLLM2_GGUF)";
    return x;
  }();
  return s;
}

void run(benchmark::State& state, bool use_prefix) {
  Setup* s = setup();
  if (!s->error.empty()) {
    state.SkipWithError(s->error.c_str());
    return;
  }
  if (use_prefix) {  // the system prompt's blocks in a slot
    (void)s->run.cache->remove(0);
    if (!s->run.runner->prefill(0, s->system).is_ok() || !s->prefix->store(s->system, 0).is_ok()) {
      state.SkipWithError("prefill of the system prompt failed");
      return;
    }
  }
  int64_t i = 0, hit = 0;
  for (auto _ : state) {
    const std::vector<int32_t> prompt = s->prompt(i++);
    if (!s->run.cache->remove(0).is_ok()) break;
    runtime::GenerateRequest req;
    req.prompt = prompt;
    req.max_tokens = 1;
    req.prefix_cache = use_prefix ? s->prefix.get() : nullptr;
    std::vector<int32_t> out;
    runtime::DecoderStats stats;
    const Status st = s->run.runner->generate(req, &out, &stats);
    if (!st.is_ok()) {
      state.SkipWithError(st.to_string().c_str());
      return;
    }
    hit = stats.prefix_hit_tokens;
    state.SetIterationTime(stats.first_token_ms / 1000.0);
  }
  state.counters["prompt_tokens"] = static_cast<double>(kSystem + kSuffix);
  state.counters["hit_tokens"] = static_cast<double>(hit);
  state.counters["kv_bytes_per_cell"] = static_cast<double>(s->run.cache->layout().bytes_per_cell);
}

void BM_ttft_cold(benchmark::State& state) {
  run(state, false);
}
void BM_ttft_hit(benchmark::State& state) {
  run(state, true);
}

BENCHMARK(BM_ttft_cold)->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_ttft_hit)->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

int main(int argc, char** argv) {
  // --kv-type f32|f16 (or --kv-type=...) is ours; the rest goes to Google Benchmark.
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i], v;
    if (a == "--kv-type" && i + 1 < argc)
      v = argv[++i];
    else if (a.rfind("--kv-type=", 0) == 0)
      v = a.substr(10);
    else {
      args.push_back(argv[i]);
      continue;
    }
    if (v != "f32" && v != "f16") {
      std::fprintf(stderr, "--kv-type %s: expected f32 or f16\n", v.c_str());
      return 2;
    }
    g_kv_dtype = v == "f16" ? ir::DType::kF16 : ir::DType::kF32;
  }
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
