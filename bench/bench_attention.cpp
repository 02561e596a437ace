// Attention benchmarks on the best Highway target, 1 thread (pool = null).
//  - Prefill (q_len = kv_len = S): GFLOP/s with flops = 4 S^2 head_dim per head (QK^T and PV),
//    halved for causal, as % of the fp32 FMA peak.
//  - Decode (q_len 1, GQA): GB/s of K and V read (2 kv_len n_kv_heads head_dim 4 bytes), as % of
//    the DRAM read peak. Iterations rotate over enough KV caches (>= 96 MiB) that K/V come from
//    DRAM, not the 32 MiB L3.
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "bench/peak.h"
#include "kernels/kernels.h"

namespace {

using laya::kernels::AttentionArgs;
using laya::kernels::KernelTable;

const KernelTable& table() {
  static const KernelTable t = laya::kernels::kernel_table_hwy(0);
  return t;
}

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

// Args: seq, head_dim, heads, causal.
void BM_attention_prefill(benchmark::State& state) {
  const int64_t S = state.range(0);
  const int32_t hd = static_cast<int32_t>(state.range(1));
  const int32_t heads = static_cast<int32_t>(state.range(2));
  const bool causal = state.range(3) != 0;
  const int64_t row = int64_t{heads} * hd;
  const std::vector<float> q = randn(static_cast<size_t>(S * row), 1);
  const std::vector<float> k = randn(static_cast<size_t>(S * row), 2);
  const std::vector<float> v = randn(static_cast<size_t>(S * row), 3);
  std::vector<float> out(static_cast<size_t>(S * row));
  AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.out = out.data();
  a.q_row_stride = a.k_row_stride = a.v_row_stride = a.out_row_stride = row;
  a.q_len = a.kv_len = S;
  a.n_heads = a.n_kv_heads = heads;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.causal = causal;
  std::vector<uint8_t> scratch(table().attention_scratch_bytes(a, 1));
  for (auto _ : state) {
    table().attention(a, 0, heads, scratch.data(), nullptr);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double flops = 4.0 * static_cast<double>(S) * static_cast<double>(S) * hd * heads;
  laya::bench::report_flops(state, causal ? flops / 2 : flops, laya::bench::peaks().fp32_gflops);
  state.SetLabel(table().isa);
}
BENCHMARK(BM_attention_prefill)
    ->ArgNames({"seq", "hd", "heads", "causal"})
    ->Args({512, 64, 1, 0})
    ->Args({512, 64, 1, 1})
    ->Args({512, 64, 12, 0})
    ->Args({512, 64, 12, 1})
    ->Args({512, 128, 1, 0})
    ->Args({512, 128, 1, 1})
    ->Args({512, 128, 12, 0})
    ->Args({512, 128, 12, 1})
    ->Unit(benchmark::kMicrosecond);

// Args: kv_len, head_dim, heads, kv_heads.
void BM_attention_decode(benchmark::State& state) {
  const int64_t kv_len = state.range(0);
  const int32_t hd = static_cast<int32_t>(state.range(1));
  const int32_t heads = static_cast<int32_t>(state.range(2));
  const int32_t kv_heads = static_cast<int32_t>(state.range(3));
  const int64_t kv_row = int64_t{kv_heads} * hd;
  const size_t cache_floats = static_cast<size_t>(2 * kv_len * kv_row);  // K then V
  const size_t copies = std::max<size_t>(2, (size_t{96} << 20) / (cache_floats * 4) + 1);
  float* caches =
      static_cast<float*>(laya::bench::huge_alloc(copies * cache_floats * sizeof(float)));
  const std::vector<float> init = randn(cache_floats, 4);
  for (size_t c = 0; c < copies; ++c)
    std::copy(init.begin(), init.end(), caches + c * cache_floats);
  const std::vector<float> q = randn(static_cast<size_t>(heads * hd), 5);
  std::vector<float> out(q.size());
  AttentionArgs a;
  a.q = q.data();
  a.out = out.data();
  a.q_row_stride = a.out_row_stride = int64_t{heads} * hd;
  a.k_row_stride = a.v_row_stride = kv_row;
  a.q_len = 1;
  a.kv_len = kv_len;
  a.n_heads = heads;
  a.n_kv_heads = kv_heads;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  std::vector<uint8_t> scratch(table().attention_scratch_bytes(a, 1));
  size_t c = 0;
  for (auto _ : state) {
    a.k = caches + c * cache_floats;
    a.v = a.k + kv_len * kv_row;
    table().attention(a, 0, heads, scratch.data(), nullptr);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    c = c + 1 == copies ? 0 : c + 1;
  }
  laya::bench::report_bytes(state, static_cast<double>(cache_floats) * sizeof(float));
  state.SetLabel(table().isa);
  laya::bench::huge_free(caches, copies * cache_floats * sizeof(float));
}
BENCHMARK(BM_attention_decode)
    ->ArgNames({"kv", "hd", "heads", "kv_heads"})
    ->Args({512, 64, 12, 4})
    ->Args({1024, 64, 12, 4})
    ->Args({4096, 64, 12, 4})
    ->Args({512, 128, 32, 8})
    ->Args({4096, 128, 32, 8})
    ->Args({4096, 64, 12, 12})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
