// The C API's cost over the C++ path it wraps: one encoder decision on the tiny ModernBERT Laya
// checkpoint (tests/fixtures/laya-tiny-modernbert converted; the README's support-ticket request,
// 288 tokens, 3 questions), made by
//   BM_decide_cpp        decision::Context::decide, the JSON read in place (ctx->json())
//   BM_decide_capi       laya_decide through liblaya.so, the JSON copied to a caller buffer
//   BM_decide_capi_typed laya_decide, then every answer read through laya_result_answer
// on the same model file with the same limits and one thread each. The C++ path is this binary's
// static libraries (the heap as usual); the C API path is the installed library (a call's heap
// references go to the context's arena: runtime/capi/heap.cpp). The overhead is the median of
// BM_decide_capi over the median of BM_decide_cpp, interleaved:
//
//   build/bench/laya-bench-capi --benchmark_repetitions=15
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
//
// BM_decide_batch/N: N copies of the request in one laya_decide_batch (items/s: requests/s).
// LAYA_BENCH_MODEL / LAYA_BENCH_REQUEST override the model file and the request body.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "include/laya/laya.h"
#include "runtime/decisions/context.h"
#include "runtime/decisions/model.h"

namespace {

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Block = std::unique_ptr<void, FreeDeleter>;

Block aligned_block(uint64_t size, uint64_t align) {
  if (size == 0) return Block(nullptr);
  const uint64_t rounded = (size + align - 1) / align * align;
  return Block(std::aligned_alloc(align, rounded));
}

const std::string& model_path() {
  static const std::string p = env_or("LAYA_BENCH_MODEL", LAYA_TINY_LAYA);
  return p;
}
const std::string& body() {
  static const std::string b =
      read(env_or("LAYA_BENCH_REQUEST", LAYA_SOURCE_DIR "/examples/support-ticket.json"));
  return b;
}

void BM_decide_cpp(benchmark::State& state) {
  laya::decision::ModelOptions mo;
  mo.n_threads = 1;
  auto model = laya::decision::Model::open_file(model_path(), mo);
  if (!model.is_ok()) return state.SkipWithError(model.status().message());
  laya::decision::ContextLimits lim;
  auto lay = laya::decision::Context::layout(**model, lim);
  if (!lay.is_ok()) return state.SkipWithError(lay.status().message());
  std::vector<Block> blocks;
  std::vector<laya::runtime::MemoryRegion> regions;
  for (int r = 0; r < laya::decision::kRegionCount; ++r) {
    blocks.push_back(aligned_block(lay->bytes[r], lay->align[r]));
    regions.push_back({blocks.back().get(), lay->bytes[r]});
  }
  auto ctx = laya::decision::Context::create(*model, lim, regions);
  if (!ctx.is_ok()) return state.SkipWithError(ctx.status().message());
  for (auto _ : state) {
    const laya::Status st = (*ctx)->decide(body());
    if (!st.is_ok()) return state.SkipWithError(st.message());
    benchmark::DoNotOptimize((*ctx)->json().data());
  }
  laya::decision::Context::destroy(*ctx);
}

struct CContext {
  laya_model* model = nullptr;
  laya_context* ctx = nullptr;
  std::vector<Block> blocks;
  std::string error;
  explicit CContext(int64_t max_batch = 0) {
    laya_model_params mp = laya_model_default_params();
    mp.n_threads = 1;
    laya_error err;
    if (laya_model_open_file(model_path().c_str(), &mp, &model, &err) != LAYA_OK) {
      error = err.message;
      return;
    }
    laya_context_limits lim = laya_context_default_limits();
    lim.max_batch = max_batch;
    laya_memory_requirements req = laya_memory_requirements_init();
    if (laya_context_requirements(model, &lim, &req, &err) != LAYA_OK) {
      error = err.message;
      return;
    }
    laya_region regions[LAYA_REGION_COUNT];
    for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
      blocks.push_back(aligned_block(req.size[r], req.alignment[r]));
      regions[r] = {blocks.back().get(), req.size[r]};
    }
    if (laya_context_create(model, &lim, regions, &ctx, &err) != LAYA_OK) error = err.message;
  }
  ~CContext() {
    laya_context_destroy(ctx);
    laya_model_close(model);
  }
};

void decide_capi(benchmark::State& state, bool typed) {
  CContext c;
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  std::vector<char> out(1 << 16);
  double sum = 0;
  for (auto _ : state) {
    size_t n = 0;
    const laya_status st =
        laya_decide(c.ctx, body().data(), body().size(), out.data(), out.size(), &n);
    if (st != LAYA_OK) return state.SkipWithError(laya_context_error(c.ctx));
    if (typed) {
      for (size_t q = 0; q < laya_result_questions(c.ctx); ++q) {
        laya_answer a = laya_answer_init();
        laya_result_answer(c.ctx, 0, q, &a);
        sum += a.confidence;
      }
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::DoNotOptimize(sum);
  }
}

// Batches of N copies of the request through laya_decide_batch (one packed forward pass per
// batch within the context's 4,096 tokens): requests/s per batch size says where batching stops
// paying on this model (laya-serve's dynamic batching, docs/serving.md).
void BM_decide_batch(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  CContext c(32);
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  std::vector<laya_batch_item> items(n);
  std::vector<char> out(n << 16);
  for (auto _ : state) {
    for (laya_batch_item& it : items) it = {body().data(), body().size(), LAYA_OK, 0, 0};
    size_t len = 0;
    if (laya_decide_batch(c.ctx, items.data(), n, out.data(), out.size(), &len) != LAYA_OK)
      return state.SkipWithError(laya_context_error(c.ctx));
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_decide_capi(benchmark::State& state) {
  decide_capi(state, false);
}
void BM_decide_capi_typed(benchmark::State& state) {
  decide_capi(state, true);
}

BENCHMARK(BM_decide_cpp)->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(BM_decide_capi)->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(BM_decide_capi_typed)->Unit(benchmark::kMicrosecond)->MinTime(0.5);
BENCHMARK(BM_decide_batch)
    ->Arg(1)
    ->Arg(2)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->Arg(32)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

}  // namespace

BENCHMARK_MAIN();
