// Float-weight matmul kernels (f32, f16, bf16) on the best Highway target, 1 thread (pool null;
// the "threads" argument 2 runs on the CPU backend's pool, hal::cpu::ArenaPool):
//  - GEMM (m > 1) and cache-resident GEMV (m = 1): GFLOP/s and % of the fp32 FMA peak (f32, f16,
//    bf16 GEMMs without AMX: the products run on f32 FMAs), of the vdpbf16ps peak (bf16 GEMV on
//    AVX512-BF16) or of the tdpbf16ps peak (bf16 GEMMs on AMX; bf16_no_amx runs the same shapes
//    on the kernels a CPU without AMX takes). 256 x 1024 x
//    5248 and 256 x 2624 x 1024 are ModernBERT-large's MLP at 256 tokens; 128 x 1024 x 5248 /
//    1024 / 3072 its Wi, Wo and Wqkv at 128 tokens (1 and 2 threads: the split over workers).
//    With 2 threads the % is of twice the 1-core peak.
//  - GEMV from DRAM: 4 weight matrices of 64 MiB each (256 MiB > the 32 MiB L3), cycled, 2 MiB
//    pages: GB/s of packed weights read and % of the (1-core) DRAM read peak.
//  - Peers in the same binary (when OpenBLAS is found): cblas_sgemm (weights [n, k], CblasTrans)
//    and cblas_sgemv from DRAM, with openblas_set_num_threads(threads).
// Shapes are "m, k, n" (x [m, k], W [n, k], y [m, n]).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "hal/cpu/thread_pool.h"
#include "kernels/hwy/matmul_float.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

#ifdef LAYA_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace {

using laya::kernels::MatmulKernel;
using laya::kernels::WType;

const laya::kernels::KernelTable& table() {
  static const laya::kernels::KernelTable t = laya::kernels::kernel_table_hwy(0);
  return t;
}

bool amx() {
  return laya::kernels::hwy_matmul_float::amx_bf16_usable() && std::string(table().isa) == "AVX3";
}

// The best table without AMX (bf16 GEMMs on vdpbf16ps): the comparison where AMX is present.
const laya::kernels::KernelTable& table_no_amx() {
  static const laya::kernels::KernelTable t = [] {
    laya::kernels::KernelTable k = laya::kernels::kernel_table_hwy(0);
    laya::kernels::hwy_matmul_float::fill(k, laya::kernels::kernel_hwy_targets().front(), false);
    k.isa = "AVX3 (no AMX)";
    return k;
  }();
  return t;
}

// Deterministic values in [-1, 1] (xorshift; fast enough for 256 MiB of weights).
struct Rng {
  uint64_t s = 0x9e3779b97f4a7c15ull;
  float next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return static_cast<float>(static_cast<int32_t>(s >> 32)) * (1.0f / 2147483648.0f);
  }
};

// A weight matrix in the file layout of `type` ([n, k] f32, half or bf16 bits).
std::vector<uint8_t> file_weights(WType type, int64_t n, int64_t k, Rng& rng) {
  const size_t count = static_cast<size_t>(n * k);
  std::vector<uint8_t> w(count * (type == WType::kF32 ? 4 : 2));
  for (size_t i = 0; i < count; ++i) {
    const float v = rng.next();
    if (type == WType::kF32) {
      std::memcpy(w.data() + 4 * i, &v, 4);
    } else {
      const uint16_t h =
          type == WType::kF16 ? laya::kernels::f32_to_f16(v) : laya::kernels::f32_to_bf16(v);
      std::memcpy(w.data() + 2 * i, &h, 2);
    }
  }
  return w;
}

struct HugeBuffer {
  void* p = nullptr;
  size_t bytes = 0;
  explicit HugeBuffer(size_t b) : p(laya::bench::huge_alloc(b)), bytes(b) {}
  HugeBuffer(HugeBuffer&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = nullptr; }
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;
  HugeBuffer& operator=(HugeBuffer&&) = delete;
  ~HugeBuffer() {
    if (p != nullptr) laya::bench::huge_free(p, bytes);
  }
};

// Packed weights of one matrix, ready for kern.run.
HugeBuffer packed_weights(const MatmulKernel& kern, WType type, int64_t n, int64_t k, Rng& rng) {
  HugeBuffer b(kern.packed_bytes(n, k));
  const std::vector<uint8_t> w = file_weights(type, n, k, rng);
  kern.pack(w.data(), nullptr, n, k, b.p);
  return b;
}

// bf16 GEMMs on AMX: % of the tdpbf16ps peak (the kernel runs two passes, x's hi and lo halves,
// so 50% is its ceiling); bf16 GEMVs on AVX512-BF16: of the vdpbf16ps peak (two passes too);
// everything else (bf16 GEMMs without AMX included) of the fp32 FMA peak.
double peak_for(WType type, bool amx_run, bool gemv) {
  const laya::bench::Peaks& p = laya::bench::peaks();
  if (type != WType::kBF16) return p.fp32_gflops;
  if (amx_run) return p.amx_bf16_gflops;
  return gemv && p.bf16_gflops > 0 ? p.bf16_gflops : p.fp32_gflops;
}

// y[m, n] = x[m, k] . W^T (GEMM or GEMV). Weights cache-resident after the first iteration, or
// (from_dram) streamed from DRAM as in a model's pass, where each weight is read once: copies of
// the matrix, 1 GiB in all (past any L3 of our machines), cycled.
void BM_matmul(benchmark::State& state, WType type, bool allow_amx, bool from_dram) {
  const laya::kernels::KernelTable& tab = allow_amx ? table() : table_no_amx();
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  laya::hal::cpu::ArenaPool workers(threads);  // the runtime's pool (hal/cpu)
  workers.warm_up(5000);
  const laya::kernels::ThreadPool* pool = threads > 1 ? workers.view() : nullptr;
  const MatmulKernel& kern = tab.matmul[static_cast<int>(type)];
  Rng rng;
  const uint64_t bytes = kern.packed_bytes(n, k);
  const size_t copies =
      from_dram ? static_cast<size_t>(std::max<uint64_t>(2, (uint64_t{1} << 30) / bytes)) : 1;
  std::vector<HugeBuffer> packed;
  packed.reserve(copies);
  packed.push_back(packed_weights(kern, type, n, k, rng));
  for (size_t i = 1; i < copies; ++i) {
    packed.emplace_back(bytes);
    std::memcpy(packed.back().p, packed.front().p, bytes);
  }
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  for (float& v : x) v = rng.next();
  HugeBuffer scratch(kern.scratch_bytes(m, n, k, threads));
  size_t i = 0;
  for (auto _ : state) {
    kern.run(packed[i].p, x.data(), k, y.data(), n, nullptr, m, n, k, scratch.p, pool);
    benchmark::ClobberMemory();
    i = (i + 1) % copies;
  }
  // % of `threads` x the 1-core peak.
  const bool amx_run = allow_amx && amx() && type == WType::kBF16 && m > 1;
  laya::bench::report_flops(state, 2.0 * static_cast<double>(m * n * k),
                            peak_for(type, amx_run, m == 1) * threads);
  state.SetLabel(amx_run ? "AVX3 + AMX" : tab.isa);
}

void BM_matmul_dram(benchmark::State& state, WType type) {
  BM_matmul(state, type, /*allow_amx=*/true, /*from_dram=*/true);
}

// m = 1 with weights streamed from DRAM: 4 matrices of 64 MiB, cycled.
void BM_gemv_dram(benchmark::State& state, WType type) {
  const int64_t n = 4096, k = type == WType::kF32 ? 4096 : 8192;
  constexpr int kMats = 4;
  const int threads = static_cast<int>(state.range(0));
  laya::hal::cpu::ArenaPool workers(threads);  // the runtime's pool (hal/cpu)
  workers.warm_up(5000);
  const laya::kernels::ThreadPool* pool = threads > 1 ? workers.view() : nullptr;
  const MatmulKernel& kern = table().matmul[static_cast<int>(type)];
  Rng rng;
  std::vector<HugeBuffer> packed;
  for (int i = 0; i < kMats; ++i) packed.push_back(packed_weights(kern, type, n, k, rng));
  std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(n));
  for (float& v : x) v = rng.next();
  HugeBuffer scratch(kern.scratch_bytes(1, n, k, threads));
  int i = 0;
  for (auto _ : state) {
    kern.run(packed[static_cast<size_t>(i)].p, x.data(), k, y.data(), n, nullptr, 1, n, k,
             scratch.p, pool);
    benchmark::ClobberMemory();
    i = (i + 1) % kMats;
  }
  laya::bench::report_bytes(state, static_cast<double>(kern.packed_bytes(n, k)));
  state.SetLabel(table().isa);
}

#define GEMM_TIMING Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime()->UseRealTime()
#define GEMM_SHAPES                    \
  ArgNames({"m", "k", "n", "threads"}) \
      ->Args({512, 512, 512, 1})       \
      ->Args({1024, 1024, 1024, 1})    \
      ->Args({128, 576, 1536, 1})      \
      ->Args({256, 1024, 5248, 1})     \
      ->Args({256, 2624, 1024, 1})     \
      ->Args({1, 576, 1536, 1})        \
      ->Args({512, 512, 512, 2})       \
      ->Args({128, 576, 1536, 2})      \
      ->Args({1, 576, 1536, 2})        \
      ->Args({128, 1024, 5248, 1})     \
      ->Args({128, 1024, 5248, 2})     \
      ->Args({128, 1024, 1024, 1})     \
      ->Args({128, 1024, 1024, 2})     \
      ->Args({128, 1024, 3072, 1})     \
      ->Args({128, 1024, 3072, 2})     \
      ->Args({256, 1024, 5248, 2})     \
      ->Args({512, 1024, 1024, 2})     \
      ->Args({512, 2624, 1024, 2})     \
      ->GEMM_TIMING

BENCHMARK_CAPTURE(BM_matmul, f32, WType::kF32, true, false)->GEMM_SHAPES;
BENCHMARK_CAPTURE(BM_matmul, f16, WType::kF16, true, false)->GEMM_SHAPES;
BENCHMARK_CAPTURE(BM_matmul, bf16, WType::kBF16, true, false)->GEMM_SHAPES;
// Where AMX is usable, also the vdpbf16ps kernels it replaces (same shapes).
BENCHMARK_CAPTURE(BM_matmul, bf16_no_amx, WType::kBF16, false, false)->GEMM_SHAPES;
#define GEMM_DRAM_SHAPES               \
  ArgNames({"m", "k", "n", "threads"}) \
      ->Args({128, 1024, 5248, 1})     \
      ->Args({128, 2624, 1024, 1})     \
      ->Args({256, 2624, 1024, 1})     \
      ->Args({256, 1024, 5248, 1})     \
      ->Args({512, 1024, 1024, 1})     \
      ->Args({128, 1024, 5248, 2})     \
      ->GEMM_TIMING
BENCHMARK_CAPTURE(BM_matmul_dram, f32, WType::kF32)->GEMM_DRAM_SHAPES;
BENCHMARK_CAPTURE(BM_matmul_dram, bf16, WType::kBF16)->GEMM_DRAM_SHAPES;
#define DRAM_THREADS \
  ArgName("threads")->Arg(1)->Arg(2)->Unit(benchmark::kMicrosecond)->UseRealTime()
BENCHMARK_CAPTURE(BM_gemv_dram, f32, WType::kF32)->DRAM_THREADS;
BENCHMARK_CAPTURE(BM_gemv_dram, f16, WType::kF16)->DRAM_THREADS;
BENCHMARK_CAPTURE(BM_gemv_dram, bf16, WType::kBF16)->DRAM_THREADS;

#ifdef LAYA_HAVE_OPENBLAS
// The peer: y = x . W^T with W [n, k] row-major, as a user of OpenBLAS would call it.
void BM_openblas_sgemm(benchmark::State& state) {
  openblas_set_num_threads(static_cast<int>(state.range(3)));
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  Rng rng;
  std::vector<float> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k)),
      y(static_cast<size_t>(m * n));
  for (float& v : x) v = rng.next();
  for (float& v : w) v = rng.next();
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), 1.0f, x.data(), static_cast<int>(k), w.data(),
                static_cast<int>(k), 0.0f, y.data(), static_cast<int>(n));
    benchmark::ClobberMemory();
  }
  laya::bench::report_flops(state, 2.0 * static_cast<double>(m * n * k),
                            laya::bench::peaks().fp32_gflops * static_cast<double>(state.range(3)));
}
BENCHMARK(BM_openblas_sgemm)->GEMM_SHAPES;

void BM_openblas_sgemv_dram(benchmark::State& state) {
  openblas_set_num_threads(static_cast<int>(state.range(0)));
  const int64_t n = 4096, k = 4096;
  constexpr int kMats = 4;
  Rng rng;
  std::vector<HugeBuffer> w;
  for (int i = 0; i < kMats; ++i) {
    w.emplace_back(static_cast<size_t>(n * k) * sizeof(float));
    float* p = static_cast<float*>(w.back().p);
    for (int64_t j = 0; j < n * k; ++j) p[j] = rng.next();
  }
  std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(n));
  for (float& v : x) v = rng.next();
  int i = 0;
  for (auto _ : state) {
    cblas_sgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(n), static_cast<int>(k), 1.0f,
                static_cast<const float*>(w[static_cast<size_t>(i)].p), static_cast<int>(k),
                x.data(), 1, 0.0f, y.data(), 1);
    benchmark::ClobberMemory();
    i = (i + 1) % kMats;
  }
  laya::bench::report_bytes(state, static_cast<double>(n * k) * sizeof(float));
}
BENCHMARK(BM_openblas_sgemv_dram)->DRAM_THREADS;
#endif

}  // namespace
