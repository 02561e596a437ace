#include "bench/peak.h"

#include "kernels/hwy/amx_config.h"
#include "kernels/hwy/matmul_float.h"

#include <immintrin.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace laya::bench {
namespace {

// The calling thread's CPU time, like Google Benchmark's default rates: on a shared machine a
// probe that is descheduled for a while still measures the core's peak, not its share of it.
struct Clock {
  using time_point = double;
  static double now() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
};

double seconds_since(Clock::time_point t0) {
  return Clock::now() - t0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

constexpr int kChains = 12;  // > latency x throughput (the AVX2 int8 probe: its own 8, in asm)

__attribute__((target("avx512f"))) double probe_fp32(int64_t iters) {
  __m512 acc[kChains];
  for (int r = 0; r < kChains; ++r) acc[r] = _mm512_set1_ps(static_cast<float>(r));
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    for (int r = 0; r < kChains; ++r) acc[r] = _mm512_fmadd_ps(acc[r], a, b);
  }
  const double s = seconds_since(t0);
  __m512 sum = acc[0];
  for (int r = 1; r < kChains; ++r) sum = _mm512_add_ps(sum, acc[r]);
  benchmark::DoNotOptimize(sum);
  return static_cast<double>(iters) * kChains * 16 * 2 / s * 1e-9;
}

// The same probes on ymm registers, for CPUs without AVX-512 (e.g. Zen 3): 16 FLOP per vfmadd.
__attribute__((target("avx2,fma"))) double probe_fp32_avx2(int64_t iters) {
  __m256 acc[kChains];
  for (int r = 0; r < kChains; ++r) acc[r] = _mm256_set1_ps(static_cast<float>(r));
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    for (int r = 0; r < kChains; ++r) acc[r] = _mm256_fmadd_ps(acc[r], a, b);
  }
  const double s = seconds_since(t0);
  __m256 sum = acc[0];
  for (int r = 1; r < kChains; ++r) sum = _mm256_add_ps(sum, acc[r]);
  benchmark::DoNotOptimize(sum);
  return static_cast<double>(iters) * kChains * 8 * 2 / s * 1e-9;
}

__attribute__((target("avx2"))) double probe_read_avx2(const float* buf, size_t n) {
  __m256 acc[8];
  for (int r = 0; r < 8; ++r) acc[r] = _mm256_setzero_ps();
  const auto t0 = Clock::now();
  for (size_t i = 0; i < n; i += 64) {
    for (int r = 0; r < 8; ++r) acc[r] = _mm256_add_ps(acc[r], _mm256_load_ps(buf + i + 8 * r));
  }
  const double s = seconds_since(t0);
  __m256 sum = acc[0];
  for (int r = 1; r < 8; ++r) sum = _mm256_add_ps(sum, acc[r]);
  benchmark::DoNotOptimize(sum);
  return static_cast<double>(n) * sizeof(float) / s * 1e-9;
}

__attribute__((target("avx512f,avx512bf16"))) double probe_bf16(int64_t iters) {
  __m512 acc[kChains];
  for (int r = 0; r < kChains; ++r) acc[r] = _mm512_set1_ps(static_cast<float>(r));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);  // 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3380);  // ~6e-8
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    for (int r = 0; r < kChains; ++r) acc[r] = _mm512_dpbf16_ps(acc[r], a, b);
  }
  const double s = seconds_since(t0);
  __m512 sum = acc[0];
  for (int r = 1; r < kChains; ++r) sum = _mm512_add_ps(sum, acc[r]);
  benchmark::DoNotOptimize(sum);
  return static_cast<double>(iters) * kChains * 64 / s * 1e-9;
}

// tdpbf16ps chains: four C tiles (16 x 16 f32) over the same A and B tiles (16 x 32 bf16), each
// instruction 16 * 16 * 32 multiply-adds. Needs amx_bf16_usable() (the tile state granted).
__attribute__((target("amx-tile,amx-bf16"))) double probe_amx_bf16(int64_t iters) {
  static const laya::kernels::AmxTileConfig cfg;
  alignas(64) static uint16_t ab[2][16 * 32];
  for (int i = 0; i < 16 * 32; ++i) ab[0][i] = 0x3f80, ab[1][i] = 0x3380;  // 1.0, ~6e-8
  alignas(64) static float c[16 * 16];
  _tile_loadconfig(&cfg);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, ab[0], 64);
  _tile_loadd(5, ab[1], 64);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 5);
    _tile_dpbf16ps(1, 4, 5);
    _tile_dpbf16ps(2, 4, 5);
    _tile_dpbf16ps(3, 4, 5);
  }
  const double s = seconds_since(t0);
  _tile_stored(0, c, 64);
  _tile_release();
  benchmark::DoNotOptimize(c[0]);
  return static_cast<double>(iters) * 4 * 16 * 16 * 32 * 2 / s * 1e-9;
}

__attribute__((target("avx512f,avx512vnni"))) double probe_int8(int64_t iters) {
  __m512i acc[kChains];
  for (int r = 0; r < kChains; ++r) acc[r] = _mm512_set1_epi32(r);
  const __m512i a = _mm512_set1_epi8(1), b = _mm512_set1_epi8(-1);
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    for (int r = 0; r < kChains; ++r) acc[r] = _mm512_dpbusd_epi32(acc[r], a, b);
  }
  const double s = seconds_since(t0);
  __m512i sum = acc[0];
  for (int r = 1; r < kChains; ++r) sum = _mm512_add_epi32(sum, acc[r]);
  benchmark::DoNotOptimize(sum);
  return static_cast<double>(iters) * kChains * 128 / s * 1e-9;
}

// The int8 dot product without VNNI, as the AVX2 kernels do it: vpmaddubsw to i16 pairs, vpmaddwd
// with ones to i32, vpaddd: 32 multiply-adds (64 OP) per step.
__attribute__((target("avx2"))) double probe_int8_avx2(int64_t iters) {
  // Eight chains, each step written as the three instructions themselves: with intrinsics the
  // compiler computed the loop-invariant vpmaddubsw / vpmaddwd once (the loop timed vpaddd alone)
  // or, kept from that, spilled the chains.
  __m256i c0 = _mm256_set1_epi32(0), c1 = _mm256_set1_epi32(1), c2 = _mm256_set1_epi32(2),
          c3 = _mm256_set1_epi32(3), c4 = _mm256_set1_epi32(4), c5 = _mm256_set1_epi32(5),
          c6 = _mm256_set1_epi32(6), c7 = _mm256_set1_epi32(7);
  const __m256i a = _mm256_set1_epi8(1), b = _mm256_set1_epi8(-1), ones = _mm256_set1_epi16(1);
  __m256i t;
#define LAYA_STEP(v)                                                                        \
  asm("vpmaddubsw %[b], %[a], %[t]\n\tvpmaddwd %[o], %[t], %[t]\n\tvpaddd %[t], %[c], %[c]" \
      : [c] "+x"(v), [t] "=&x"(t)                                                           \
      : [a] "x"(a), [b] "x"(b), [o] "x"(ones))
  const auto t0 = Clock::now();
  for (int64_t i = 0; i < iters; ++i) {
    LAYA_STEP(c0);
    LAYA_STEP(c1);
    LAYA_STEP(c2);
    LAYA_STEP(c3);
    LAYA_STEP(c4);
    LAYA_STEP(c5);
    LAYA_STEP(c6);
    LAYA_STEP(c7);
  }
#undef LAYA_STEP
  const double s = seconds_since(t0);
  const __m256i sum =
      _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                       _mm256_add_epi32(_mm256_add_epi32(c4, c5), _mm256_add_epi32(c6, c7)));
  benchmark::DoNotOptimize(sum);
  return static_cast<double>(iters) * 8 * 64 / s * 1e-9;
}

__attribute__((target("avx512f"))) double probe_read(const float* buf, size_t n) {
  __m512 acc[8];
  for (int r = 0; r < 8; ++r) acc[r] = _mm512_setzero_ps();
  const auto t0 = Clock::now();
  for (size_t i = 0; i < n; i += 128) {
    for (int r = 0; r < 8; ++r) acc[r] = _mm512_add_ps(acc[r], _mm512_load_ps(buf + i + 16 * r));
  }
  const double s = seconds_since(t0);
  __m512 sum = acc[0];
  for (int r = 1; r < 8; ++r) sum = _mm512_add_ps(sum, acc[r]);
  benchmark::DoNotOptimize(sum);
  return static_cast<double>(n) * sizeof(float) / s * 1e-9;
}

bool has(const char* feature) {
  __builtin_cpu_init();
  if (std::strcmp(feature, "avx512f") == 0) return __builtin_cpu_supports("avx512f");
  if (std::strcmp(feature, "avx2") == 0)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (std::strcmp(feature, "avx512bf16") == 0) return __builtin_cpu_supports("avx512bf16");
  if (std::strcmp(feature, "avx512vnni") == 0) return __builtin_cpu_supports("avx512vnni");
  return false;
}

}  // namespace

double dram_read_pass(const void* buf, size_t bytes) {
  const float* f = static_cast<const float*>(buf);
  if (!has("avx2")) return 0.0;
  return has("avx512f") ? probe_read(f, bytes / sizeof(float))
                        : probe_read_avx2(f, bytes / sizeof(float));
}

namespace {

Peaks measure() {
  Peaks p;
  const int64_t iters = 20'000'000;
  std::vector<double> r;
  const bool zmm = has("avx512f");
  if (zmm || has("avx2")) {
    for (int i = 0; i < 5; ++i) r.push_back(zmm ? probe_fp32(iters) : probe_fp32_avx2(iters));
    p.fp32_gflops = median(r);
    r.clear();
    const size_t bytes = size_t{1} << 30;
    float* buf = static_cast<float*>(huge_alloc(bytes));
    if (buf != nullptr) {
      std::memset(buf, 1, bytes);
      for (int i = 0; i < 5; ++i) r.push_back(dram_read_pass(buf, bytes));
      p.dram_read_gbs = median(r);
      huge_free(buf, bytes);
    }
    r.clear();
  }
  if (has("avx512bf16")) {
    for (int i = 0; i < 5; ++i) r.push_back(probe_bf16(iters));
    p.bf16_gflops = median(r);
    r.clear();
  }
  if (laya::kernels::hwy_matmul_float::amx_bf16_usable()) {
    for (int i = 0; i < 5; ++i) r.push_back(probe_amx_bf16(iters / 8));
    p.amx_bf16_gflops = median(r);
    r.clear();
  }
  const bool vnni = has("avx512vnni");
  if (vnni || has("avx2")) {
    for (int i = 0; i < 5; ++i) r.push_back(vnni ? probe_int8(iters) : probe_int8_avx2(iters));
    p.int8_gops = median(r);
  }
  std::fprintf(stderr,
               "machine peaks (1 thread, median of 5): fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s, "
               "AMX bf16 %.1f GFLOP/s, int8 %s %.1f GOP/s, DRAM read %.1f GB/s\n",
               p.fp32_gflops, p.bf16_gflops, p.amx_bf16_gflops, vnni ? "VNNI" : "AVX2 maddubs",
               p.int8_gops, p.dram_read_gbs);
  return p;
}

}  // namespace

const Peaks& peaks() {
  static const Peaks p = measure();
  return p;
}

double thread_seconds() {
  return Clock::now();
}

void report_flops(benchmark::State& state, double ops_per_iter, double peak_gops) {
  const double ops = ops_per_iter * static_cast<double>(state.iterations());
  state.counters["GOPS"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsRate);
  // % of peak is computed by the benchmark library from the rate: store the ratio's numerator
  // in the same units and divide by the peak afterwards.
  state.counters["pct_peak"] = benchmark::Counter(
      peak_gops > 0 ? ops * 1e-9 * 100.0 / peak_gops : 0.0, benchmark::Counter::kIsRate);
}

void report_bytes(benchmark::State& state, double bytes_per_iter) {
  const double bytes = bytes_per_iter * static_cast<double>(state.iterations());
  const double peak = peaks().dram_read_gbs;
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsRate);
  state.counters["pct_peak"] =
      benchmark::Counter(peak > 0 ? bytes * 1e-9 * 100.0 / peak : 0.0, benchmark::Counter::kIsRate);
}

void* huge_alloc(size_t bytes) {
  const size_t align = size_t{2} << 20;
  const size_t len = (bytes + align - 1) / align * align;
  void* p = std::aligned_alloc(align, len);
  if (p != nullptr) madvise(p, len, MADV_HUGEPAGE);
  return p;
}

void huge_free(void* p, size_t) {
  std::free(p);
}

}  // namespace laya::bench
