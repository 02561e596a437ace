// One prefill-shaped GEMM row and one decode-shaped GEMV row for every weight type in
// kernels/matmul.inc, with the best Highway target, 1 thread: the per-type overview. Each GEMM is
// reported as % of the peak the manifest names for its type (fp32, bf16 or int8). The family
// benches (bench_matmul_float.cpp, bench_matmul_int.cpp) cover more shapes, DRAM streaming and
// OpenBLAS.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

namespace {

using namespace laya::kernels;

// The weight [n, k] of `type` in its file layout (plus per-row scales for i8), from random floats.
std::vector<uint8_t> make_weight(WType type, int64_t n, int64_t k, std::vector<float>* scales) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 0.05f);
  std::vector<float> w(static_cast<size_t>(n * k));
  for (float& v : w) v = dist(rng);
  std::vector<uint8_t> out;
  const size_t nk = static_cast<size_t>(n * k);
  switch (type) {
    case WType::kF32:
      out.resize(nk * 4);
      std::memcpy(out.data(), w.data(), out.size());
      break;
    case WType::kF16:
    case WType::kBF16: {
      out.resize(nk * 2);
      uint16_t* h = reinterpret_cast<uint16_t*>(out.data());
      for (size_t i = 0; i < nk; ++i)
        h[i] = type == WType::kF16 ? f32_to_f16(w[i]) : f32_to_bf16(w[i]);
      break;
    }
    case WType::kI8:
    case WType::kI8W:
      out.resize(nk);
      scales->resize(static_cast<size_t>(n));
      for (int64_t r = 0; r < n; ++r)
        (*scales)[static_cast<size_t>(r)] =
            quantize_row_i8(w.data() + r * k, reinterpret_cast<int8_t*>(out.data()) + r * k, k);
      break;
    case WType::kQ8_0:
      out.resize(nk / kQK * sizeof(BlockQ8_0));
      quantize_row_q8_0(w.data(), reinterpret_cast<BlockQ8_0*>(out.data()), n * k);
      break;
    case WType::kQ4_0:
      out.resize(nk / kQK * sizeof(BlockQ4_0));
      quantize_row_q4_0(w.data(), reinterpret_cast<BlockQ4_0*>(out.data()), n * k);
      break;
    case WType::kQ4_1:
      out.resize(nk / kQK * sizeof(BlockQ4_1));
      quantize_row_q4_1(w.data(), reinterpret_cast<BlockQ4_1*>(out.data()), n * k);
      break;
    case WType::kQ5_0:
      out.resize(nk / kQK * sizeof(BlockQ5_0));
      quantize_row_q5_0(w.data(), reinterpret_cast<BlockQ5_0*>(out.data()), n * k);
      break;
    case WType::kQ5_1:
      out.resize(nk / kQK * sizeof(BlockQ5_1));
      quantize_row_q5_1(w.data(), reinterpret_cast<BlockQ5_1*>(out.data()), n * k);
      break;
    case WType::kQ4_K:
      out.resize(nk / kQK_K * sizeof(BlockQ4_K));
      quantize_row_q4_K(w.data(), reinterpret_cast<BlockQ4_K*>(out.data()), n * k);
      break;
    case WType::kQ5_K:
      out.resize(nk / kQK_K * sizeof(BlockQ5_K));
      quantize_row_q5_K(w.data(), reinterpret_cast<BlockQ5_K*>(out.data()), n * k);
      break;
    case WType::kQ6_K:
      out.resize(nk / kQK_K * sizeof(BlockQ6_K));
      quantize_row_q6_K(w.data(), reinterpret_cast<BlockQ6_K*>(out.data()), n * k);
      break;
    case WType::kCount:
      break;
  }
  return out;
}

struct Aligned {
  explicit Aligned(uint64_t bytes)
      : p(std::aligned_alloc(64, (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64)) {}
  ~Aligned() { std::free(p); }
  void* p;
};

// range(0) = m; shape m x 576 x 1536 (K-quants, whose K must be a multiple of 256: m x 1536 x 576,
// the same work).
void BM_matmul_manifest(benchmark::State& state, WType type, double peak_gops) {
  const bool kq = type == WType::kQ4_K || type == WType::kQ5_K || type == WType::kQ6_K;
  const int64_t m = state.range(0), k = kq ? 1536 : 576, n = kq ? 576 : 1536;
  const KernelTable table = kernel_table_hwy();
  const MatmulKernel& kern = table.matmul[static_cast<int>(type)];
  std::vector<float> scales;
  const std::vector<uint8_t> w = make_weight(type, n, k, &scales);
  Aligned packed(kern.packed_bytes(n, k));
  kern.pack(w.data(), scales.empty() ? nullptr : scales.data(), n, k, packed.p);
  Aligned scratch(kern.scratch_bytes(m, n, k, 1));
  std::vector<float> x(static_cast<size_t>(m * k)), y(static_cast<size_t>(m * n));
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  for (auto _ : state) {
    kern.run(packed.p, x.data(), k, y.data(), n, nullptr, m, n, k, scratch.p, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  laya::bench::report_flops(state, 2.0 * m * n * k, peak_gops);
  state.SetLabel(std::string(wtype_name(type)) + " " + table.isa);
}

double peak_of(const char* kind) {
  const laya::bench::Peaks& p = laya::bench::peaks();
  if (std::strcmp(kind, "bf16") == 0) return p.bf16_gflops;
  if (std::strcmp(kind, "int8") == 0) return p.int8_gops;
  return p.fp32_gflops;
}

// Registered from the manifest: GEMM at m = 128 (prefill) and m = 1 (decode, weights in cache).
const int kRegistered = [] {
#define MATMUL_WTYPE(name, Name, family, peak)                                            \
  benchmark::RegisterBenchmark(                                                           \
      "BM_matmul_manifest/" #name,                                                        \
      [](benchmark::State& s) { BM_matmul_manifest(s, WType::k##Name, peak_of(#peak)); }) \
      ->ArgName("m")                                                                      \
      ->Arg(128)                                                                          \
      ->Arg(1);
#include "kernels/matmul.inc"
#undef MATMUL_WTYPE
  return 0;
}();

}  // namespace
