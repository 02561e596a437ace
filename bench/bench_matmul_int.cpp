// Integer / GGUF-block matmuls (kernels/hwy/matmul_int-inl.h) on the best Highway target.
//  GEMM (m > 1): GOP/s (2*m*n*k per call) and % of the measured 1-core int8 peak (VNNI, or the
//    AVX2 pmaddubsw chain on a CPU without AVX-512: bench/peak.h).
//  GEMV (m == 1, decode): each call uses the next of several packed matrices whose total is far
//    beyond the 32 MiB L3, so weights stream from DRAM: GB/s of packed weights read per call and
//    % of the measured 1-core DRAM read bandwidth. The .../1/1 rows (one matrix) run from L2.
//  The last argument is the thread count: 1 (pool == nullptr) or 2 (a bench-only pool; those
//  rows use real time). 1-thread rows report rates over CPU time (the library's default), which
//  equals real time on a quiet machine.
// Run: build/bench/laya-bench-kernels --benchmark_filter='matmul_int|peaks'
//        --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "hal/cpu/thread_pool.h"
#include "kernels/hwy/matmul_int.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

namespace {

using laya::kernels::BlockQ4_0;
using laya::kernels::BlockQ4_1;
using laya::kernels::BlockQ8_0;
using laya::kernels::kQK;
using laya::kernels::MatmulKernel;
using laya::kernels::WType;

// Tables under test: kBest = the best target (AVX3 with VNNI here); kNoVnni = AVX3 forced onto
// the pmaddubsw path (what an AVX-512 CPU without VNNI runs); kAvx2 = the AVX2 target.
enum Variant { kBest = 0, kNoVnni = 1, kAvx2 = 2 };

const laya::kernels::KernelTable& table(int variant = kBest) {
  static const std::array<laya::kernels::KernelTable, 3> tables = [] {
    std::array<laya::kernels::KernelTable, 3> t;
    t.fill(laya::kernels::kernel_table_hwy());
    for (int64_t target : laya::kernels::kernel_hwy_targets()) {
      const std::string name = laya::kernels::kernel_target_name(target);
      if (name == "AVX3") {
        t[kNoVnni] = laya::kernels::kernel_table_hwy(target);
        laya::kernels::hwy_matmul_int::fill(t[kNoVnni], target, /*allow_dot=*/false);
        t[kNoVnni].isa = "AVX3-noVNNI";
      }
      if (name == "AVX2") t[kAvx2] = laya::kernels::kernel_table_hwy(target);
    }
    return t;
  }();
  return tables[variant];
}

// Random weights [n, k] in the file layout of `type` (int8 rows + scales for i8).
void make_weights(WType type, int64_t n, int64_t k, std::vector<uint8_t>* bytes,
                  std::vector<float>* scales) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(k));
  const int64_t nb = k / kQK;
  size_t row_bytes = static_cast<size_t>(k);
  if (type == WType::kQ8_0) row_bytes = nb * sizeof(BlockQ8_0);
  if (type == WType::kQ4_0) row_bytes = nb * sizeof(BlockQ4_0);
  if (type == WType::kQ4_1) row_bytes = nb * sizeof(BlockQ4_1);
  if (type == WType::kQ5_0) row_bytes = nb * sizeof(laya::kernels::BlockQ5_0);
  if (type == WType::kQ5_1) row_bytes = nb * sizeof(laya::kernels::BlockQ5_1);
  const int64_t nsb = k / laya::kernels::kQK_K;
  if (type == WType::kQ4_K) row_bytes = nsb * sizeof(laya::kernels::BlockQ4_K);
  if (type == WType::kQ5_K) row_bytes = nsb * sizeof(laya::kernels::BlockQ5_K);
  if (type == WType::kQ6_K) row_bytes = nsb * sizeof(laya::kernels::BlockQ6_K);
  bytes->assign(row_bytes * n, 0);
  scales->assign(static_cast<size_t>(n), 0.0f);
  for (int64_t j = 0; j < n; ++j) {
    for (float& v : row) v = dist(rng);
    uint8_t* dst = bytes->data() + row_bytes * j;
    switch (type) {
      case WType::kI8:
        (*scales)[j] =
            laya::kernels::quantize_row_i8(row.data(), reinterpret_cast<int8_t*>(dst), k);
        break;
      case WType::kQ8_0:
        laya::kernels::quantize_row_q8_0(row.data(), reinterpret_cast<BlockQ8_0*>(dst), k);
        break;
      case WType::kQ4_0:
        laya::kernels::quantize_row_q4_0(row.data(), reinterpret_cast<BlockQ4_0*>(dst), k);
        break;
      case WType::kQ5_0:
        laya::kernels::quantize_row_q5_0(row.data(),
                                         reinterpret_cast<laya::kernels::BlockQ5_0*>(dst), k);
        break;
      case WType::kQ5_1:
        laya::kernels::quantize_row_q5_1(row.data(),
                                         reinterpret_cast<laya::kernels::BlockQ5_1*>(dst), k);
        break;
      case WType::kQ4_K:
        laya::kernels::quantize_row_q4_K(row.data(),
                                         reinterpret_cast<laya::kernels::BlockQ4_K*>(dst), k);
        break;
      case WType::kQ5_K:
        laya::kernels::quantize_row_q5_K(row.data(),
                                         reinterpret_cast<laya::kernels::BlockQ5_K*>(dst), k);
        break;
      case WType::kQ6_K:
        laya::kernels::quantize_row_q6_K(row.data(),
                                         reinterpret_cast<laya::kernels::BlockQ6_K*>(dst), k);
        break;
      default:
        laya::kernels::quantize_row_q4_1(row.data(), reinterpret_cast<BlockQ4_1*>(dst), k);
        break;
    }
  }
}

struct Buffers {
  std::vector<float> x, y;
  void* scratch = nullptr;
  explicit Buffers(const MatmulKernel& kern, int64_t m, int64_t n, int64_t k) {
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    x.resize(static_cast<size_t>(m * k));
    for (float& v : x) v = dist(rng);
    y.resize(static_cast<size_t>(m * n));
    const uint64_t sb = kern.scratch_bytes(m, n, k, 1);
    scratch = std::aligned_alloc(64, (sb + 63) / 64 * 64 + 64);
  }
  ~Buffers() { std::free(scratch); }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
};

// args: m, n, k, threads (1 or 2)
template <WType T, int V = kBest>
void BM_matmul_int_gemm(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const MatmulKernel& kern = table(V).matmul[static_cast<int>(T)];
  std::vector<uint8_t> w;
  std::vector<float> scales;
  make_weights(T, n, k, &w, &scales);
  const uint64_t pb = kern.packed_bytes(n, k);
  void* packed = std::aligned_alloc(64, (pb + 63) / 64 * 64);
  kern.pack(w.data(), scales.data(), n, k, packed);
  Buffers buf(kern, m, n, k);
  const double peak = laya::bench::peaks().int8_gops;
  const bool two = state.range(3) == 2;
  laya::hal::cpu::ArenaPool workers(two ? 2 : 1);  // the runtime's pool (hal/cpu)
  workers.warm_up(5000);
  const laya::kernels::ThreadPool* pool = two ? workers.view() : nullptr;
  for (auto _ : state) {
    kern.run(packed, buf.x.data(), k, buf.y.data(), n, nullptr, m, n, k, buf.scratch, pool);
    benchmark::DoNotOptimize(buf.y.data());
    benchmark::ClobberMemory();
  }
  // % of the 1-core peak (2 threads: up to ~200%).
  laya::bench::report_flops(state, 2.0 * m * n * k, peak);
  state.SetLabel(table(V).isa);
  std::free(packed);
}

// `count` packed copies of one random [n, k] matrix of type T, each on its own 4 KiB-aligned
// stride of one huge-page buffer: the DRAM working set of the GEMV rows.
struct MatrixSet {
  MatrixSet(const MatmulKernel& kern, WType T, int64_t n, int64_t k, int64_t count) : count(count) {
    std::vector<float> scales;
    make_weights(T, n, k, &file, &scales);
    packed_bytes = kern.packed_bytes(n, k);
    stride = (packed_bytes + 4095) / 4096 * 4096;
    all = static_cast<uint8_t*>(laya::bench::huge_alloc(stride * count));
    for (int64_t i = 0; i < count; ++i)
      kern.pack(file.data(), scales.data(), n, k, all + stride * i);
  }
  ~MatrixSet() { laya::bench::huge_free(all, stride * count); }
  MatrixSet(const MatrixSet&) = delete;
  MatrixSet& operator=(const MatrixSet&) = delete;
  const uint8_t* matrix(int64_t i) const { return all + stride * i; }
  double mib() const { return static_cast<double>(stride * count) / (1 << 20); }

  std::vector<uint8_t> file;  // the file layout (GGUF bytes) of the matrix
  uint64_t packed_bytes = 0;
  size_t stride = 0;
  int64_t count = 0;
  uint8_t* all = nullptr;
};

// args: n, k, number of matrices cycled through (their total is the DRAM working set), threads
template <WType T>
void BM_matmul_int_gemv(benchmark::State& state) {
  const int64_t n = state.range(0), k = state.range(1), count = state.range(2);
  const MatmulKernel& kern = table().matmul[static_cast<int>(T)];
  const MatrixSet set(kern, T, n, k, count);
  Buffers buf(kern, 1, n, k);
  laya::bench::peaks();  // measured before timing starts
  const bool two = state.range(3) == 2;
  laya::hal::cpu::ArenaPool workers(two ? 2 : 1);  // the runtime's pool (hal/cpu)
  workers.warm_up(5000);
  const laya::kernels::ThreadPool* pool = two ? workers.view() : nullptr;
  int64_t i = 0;
  for (auto _ : state) {
    kern.run(set.matrix(i), buf.x.data(), k, buf.y.data(), n, nullptr, 1, n, k, buf.scratch, pool);
    benchmark::DoNotOptimize(buf.y.data());
    benchmark::ClobberMemory();
    if (++i == count) i = 0;
  }
  // % of the 1-core DRAM read figure (2 threads may exceed 100%).
  laya::bench::report_bytes(state, static_cast<double>(set.packed_bytes));
  // The same over the file's (GGUF) bytes of the matrix, what a model's roofline counts.
  const double file_bytes =
      static_cast<double>(set.file.size()) * static_cast<double>(state.iterations());
  const double peak = laya::bench::peaks().dram_read_gbs;
  state.counters["file_GBps"] = benchmark::Counter(file_bytes * 1e-9, benchmark::Counter::kIsRate);
  state.counters["file_pct_peak"] = benchmark::Counter(
      peak > 0 ? file_bytes * 1e-9 * 100.0 / peak : 0.0, benchmark::Counter::kIsRate);
  state.counters["MiB_set"] = set.mib();
  state.SetLabel(table().isa);
}

// The GEMV's roofline, interleaved (args: n, k, matrices, order; 1 thread): each iteration is one
// read pass over a 256 MiB buffer by the dram_read_gbs probe (bench/peak.h), then one GEMV over
// every matrix (their total far beyond the L3; the pass before it leaves none of them cached),
// each timed alone in thread CPU time. Per iteration the GEMV's bytes per second over the probe's;
// reported: the median over the iterations (pct_read, over the packed bytes the kernel reads;
// file_pct_read, over the GGUF file's bytes, what a model's roofline counts) and the lowest and
// highest (pct_read_lo / _hi). A shared machine whose load moves between iterations moves both
// halves of one alike, which one process-wide peak (the pct_peak of the rows above) cannot.
// order 0 runs the matrices in address order, so each GEMV's stream (and its prefetches past its
// end) runs on into the next; 1 in a fixed shuffled order, so each starts a cold stream, as the
// GEMVs of a model do (its other nodes run in between, its weights are not in node order).
template <WType T>
void BM_matmul_int_gemv_roofline(benchmark::State& state) {
  const int64_t n = state.range(0), k = state.range(1), count = state.range(2);
  const MatmulKernel& kern = table().matmul[static_cast<int>(T)];
  const MatrixSet set(kern, T, n, k, count);
  const size_t read_bytes = size_t{256} << 20;
  void* rd = laya::bench::huge_alloc(read_bytes);
  std::memset(rd, 1, read_bytes);
  Buffers buf(kern, 1, n, k);
  std::vector<double> pct, read_gbs, gemv_gbs;
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) order[static_cast<size_t>(i)] = i;
  if (state.range(3) != 0) std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (auto _ : state) {
    const double probe = laya::bench::dram_read_pass(rd, read_bytes);
    const double t0 = laya::bench::thread_seconds();
    for (int64_t i = 0; i < count; ++i) {
      kern.run(set.matrix(order[static_cast<size_t>(i)]), buf.x.data(), k, buf.y.data(), n, nullptr,
               1, n, k, buf.scratch, nullptr);
      benchmark::DoNotOptimize(buf.y.data());
      benchmark::ClobberMemory();
    }
    const double s = laya::bench::thread_seconds() - t0;
    state.SetIterationTime(s);
    const double g = static_cast<double>(set.packed_bytes) * static_cast<double>(count) / s * 1e-9;
    gemv_gbs.push_back(g);
    read_gbs.push_back(probe);
    pct.push_back(probe > 0 ? 100.0 * g / probe : 0.0);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  const double file_per_packed =
      static_cast<double>(set.file.size()) / static_cast<double>(set.packed_bytes);
  state.counters["GBps"] = median(gemv_gbs);
  state.counters["read_GBps"] = median(read_gbs);
  state.counters["pct_read"] = median(pct);
  state.counters["file_pct_read"] = median(pct) * file_per_packed;
  state.counters["pct_read_lo"] = pct.empty() ? 0.0 : *std::min_element(pct.begin(), pct.end());
  state.counters["pct_read_hi"] = pct.empty() ? 0.0 : *std::max_element(pct.begin(), pct.end());
  state.counters["MiB_set"] = set.mib();
  state.SetLabel(table().isa);
  laya::bench::huge_free(rd, read_bytes);
}

}  // namespace

// GEMM: encoder / prefill shapes.
BENCHMARK(BM_matmul_int_gemm<WType::kI8>)
    ->Args({128, 576, 1536, 1})
    ->Args({128, 1536, 576, 1})
    ->Args({512, 512, 512, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ8_0>)
    ->Args({128, 576, 1536, 1})
    ->Args({512, 512, 512, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ4_0>)
    ->Args({128, 576, 1536, 1})
    ->Args({512, 512, 512, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ4_1>)
    ->Args({128, 576, 1536, 1})
    ->Unit(benchmark::kMicrosecond);
// The fallbacks, as % of the VNNI peak (pmaddubsw + pmaddwd peaks at about half of it).
BENCHMARK(BM_matmul_int_gemm<WType::kI8, kNoVnni>)
    ->Args({128, 576, 1536, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ4_0, kNoVnni>)
    ->Args({128, 576, 1536, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kI8, kAvx2>)
    ->Args({128, 576, 1536, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ4_0, kAvx2>)
    ->Args({128, 576, 1536, 1})
    ->Unit(benchmark::kMicrosecond);

// GEMV from DRAM: SmolLM-sized matrices (576 x 1536) cycled through ~200+ MiB, and 4096 x 4096.
BENCHMARK(BM_matmul_int_gemv<WType::kI8>)
    ->Args({1536, 576, 256, 1})
    ->Args({1536, 576, 1, 1})
    ->Args({4096, 4096, 12, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemv<WType::kQ8_0>)
    ->Args({1536, 576, 256, 1})
    ->Args({1536, 576, 1, 1})
    ->Args({4096, 4096, 12, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemv<WType::kQ4_0>)
    ->Args({1536, 576, 448, 1})
    ->Args({1536, 576, 1, 1})
    ->Args({4096, 4096, 24, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemv<WType::kQ4_1>)
    ->Args({1536, 576, 448, 1})
    ->Args({1536, 576, 1, 1})
    ->Args({4096, 4096, 24, 1})
    ->Unit(benchmark::kMicrosecond);
// q5_0 / q5_1 (SmolLM2 Q4_K_M's fallback type): decode shapes, and prefill GEMMs.
BENCHMARK(BM_matmul_int_gemv<WType::kQ5_0>)
    ->Args({1536, 576, 256, 1})
    ->Args({1536, 576, 1, 1})
    ->Args({576, 1536, 384, 1})
    ->Args({4096, 4096, 12, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemv<WType::kQ5_1>)
    ->Args({1536, 576, 256, 1})
    ->Args({1536, 576, 1, 1})
    ->Args({576, 1536, 384, 1})
    ->Args({4096, 4096, 12, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ5_0>)
    ->Args({128, 576, 1536, 1})
    ->Args({128, 1536, 576, 1})
    ->Args({16, 1536, 576, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ5_1>)
    ->Args({128, 576, 1536, 1})
    ->Args({128, 1536, 576, 1})
    ->Unit(benchmark::kMicrosecond);

// K-quants, with q4_0 at the same shapes for comparison (K must be a multiple of 256, so the
// SmolLM-sized matrix is ffn_down's 576 x 1536 here).
BENCHMARK(BM_matmul_int_gemm<WType::kQ4_0>)
    ->Args({128, 1536, 576, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ4_K>)
    ->Args({128, 576, 1536, 1})
    ->Args({512, 512, 512, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ5_K>)
    ->Args({128, 576, 1536, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemm<WType::kQ6_K>)
    ->Args({128, 576, 1536, 1})
    ->Args({512, 512, 512, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemv<WType::kQ4_0>)
    ->Args({576, 1536, 448, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemv<WType::kQ4_K>)
    ->Args({576, 1536, 448, 1})
    ->Args({576, 1536, 1, 1})
    ->Args({4096, 4096, 24, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemv<WType::kQ5_K>)
    ->Args({576, 1536, 384, 1})
    ->Args({576, 1536, 1, 1})
    ->Args({4096, 4096, 20, 1})
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_matmul_int_gemv<WType::kQ6_K>)
    ->Args({576, 1536, 320, 1})
    ->Args({576, 1536, 1, 1})
    ->Args({4096, 4096, 16, 1})
    ->Unit(benchmark::kMicrosecond);

// 2 threads (both cores; the pool's worker spins): prefill GEMM and decode GEMV from DRAM.
BENCHMARK(BM_matmul_int_gemm<WType::kI8>)
    ->Args({128, 576, 1536, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_matmul_int_gemm<WType::kQ4_0>)
    ->Args({128, 576, 1536, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_matmul_int_gemv<WType::kQ8_0>)
    ->Args({1536, 576, 256, 2})
    ->Args({4096, 4096, 12, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_matmul_int_gemv<WType::kQ4_0>)
    ->Args({1536, 576, 448, 2})
    ->Args({4096, 4096, 24, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_matmul_int_gemv<WType::kQ4_K>)
    ->Args({4096, 4096, 24, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_matmul_int_gemv<WType::kQ6_K>)
    ->Args({4096, 4096, 16, 2})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The decode GEMVs' roofline, interleaved with the read probe (SmolLM2's matrices: 1536 x 576
// for the q4 / q5 / q8 types, ffn_down's 576 x 1536 for the K-quants, K % 256 == 0, and q4_0 at
// that shape too), in address order and shuffled.
#define LAYA_ROOFLINE(T, N, K, COUNT)              \
  BENCHMARK(BM_matmul_int_gemv_roofline<WType::T>) \
      ->Args({N, K, COUNT, 0})                     \
      ->Args({N, K, COUNT, 1})                     \
      ->Iterations(15)                             \
      ->UseManualTime()                            \
      ->Unit(benchmark::kMillisecond)
LAYA_ROOFLINE(kQ8_0, 1536, 576, 256);
LAYA_ROOFLINE(kQ4_0, 1536, 576, 448);
LAYA_ROOFLINE(kQ4_1, 1536, 576, 448);
LAYA_ROOFLINE(kQ5_0, 1536, 576, 384);
LAYA_ROOFLINE(kQ4_K, 576, 1536, 448);
LAYA_ROOFLINE(kQ5_K, 576, 1536, 384);
LAYA_ROOFLINE(kQ6_K, 576, 1536, 320);
LAYA_ROOFLINE(kQ4_0, 576, 1536, 448);  // the K-quants' shape
// SmolLM2's k / v projection alone, and q / k / v as the CPU backend stacks them (one GEMV).
LAYA_ROOFLINE(kQ5_0, 192, 576, 2048);
LAYA_ROOFLINE(kQ5_0, 960, 576, 512);
// A 7B-class model's matrices (Llama-3-8B: q / o 4096 x 4096, ffn_down 4096 x 14336), where each
// GEMV is one long stream: the K-quants, and q4_0 / q8_0 beside them.
LAYA_ROOFLINE(kQ4_K, 4096, 4096, 24);
LAYA_ROOFLINE(kQ5_K, 4096, 4096, 20);
LAYA_ROOFLINE(kQ6_K, 4096, 4096, 16);
LAYA_ROOFLINE(kQ4_K, 4096, 14336, 7);
LAYA_ROOFLINE(kQ6_K, 4096, 14336, 5);
LAYA_ROOFLINE(kQ4_0, 4096, 4096, 24);
LAYA_ROOFLINE(kQ8_0, 4096, 4096, 12);
#undef LAYA_ROOFLINE
