// Attention benchmarks on the best Highway target, 1 thread (pool = null).
//  - Prefill (q_len = kv_len = S): GFLOP/s with flops = 4 S^2 head_dim per head (QK^T and PV),
//    halved for causal, as % of the fp32 FMA peak.
//  - Packed rows (issue #7: several rows of one request in one pass): 8 rows of 64 tokens packed
//    into one batch entry with positions and sequence ids, vs the same rows as a batch of 8 x 64,
//    vs one row of 512 tokens. GFLOP/s of useful work: 4 L^2 head_dim per head per row of L
//    tokens (halved for causal), so packed rows should match the batch.
//  - Decode (q_len 1, GQA): GB/s of K and V read (2 kv_len n_kv_heads head_dim 4 bytes, 2 with
//    f16 K / V: an f16 KV cache), as % of the DRAM read peak. Iterations rotate over enough KV
//    caches (>= 96 MiB) that K/V come from DRAM, not the 32 MiB L3.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

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
    ->Args({128, 64, 16, 0})
    ->Args({256, 64, 16, 0})
    ->Args({512, 64, 1, 0})
    ->Args({512, 64, 1, 1})
    ->Args({512, 64, 12, 0})
    ->Args({512, 64, 12, 1})
    ->Args({512, 128, 1, 0})
    ->Args({512, 128, 1, 1})
    ->Args({512, 128, 12, 0})
    ->Args({512, 128, 12, 1})
    ->Unit(benchmark::kMicrosecond);

// Args: layout (0: 8 rows of 64 packed with positions and seq ids, 1: batch 8 x 64, 2: one row of
// 512, 3: one row of 512 with positions and seq ids), head_dim, heads, causal.
void BM_attention_packed(benchmark::State& state) {
  const int layout = static_cast<int>(state.range(0));
  const int32_t hd = static_cast<int32_t>(state.range(1));
  const int32_t heads = static_cast<int32_t>(state.range(2));
  const bool causal = state.range(3) != 0;
  const int64_t rows = layout >= 2 ? 1 : 8, len = layout >= 2 ? 512 : 64, N = rows * len;
  const int64_t row = int64_t{heads} * hd;
  const std::vector<float> q = randn(static_cast<size_t>(N * row), 1);
  const std::vector<float> k = randn(static_cast<size_t>(N * row), 2);
  const std::vector<float> v = randn(static_cast<size_t>(N * row), 3);
  std::vector<float> out(static_cast<size_t>(N * row));
  std::vector<int32_t> pos(static_cast<size_t>(N)), seq(static_cast<size_t>(N));
  for (int64_t t = 0; t < N; ++t) {
    pos[static_cast<size_t>(t)] = static_cast<int32_t>(t % len);
    seq[static_cast<size_t>(t)] = static_cast<int32_t>(t / len);
  }
  AttentionArgs a;
  a.q = q.data();
  a.k = k.data();
  a.v = v.data();
  a.out = out.data();
  a.q_row_stride = a.k_row_stride = a.v_row_stride = a.out_row_stride = row;
  a.n_heads = a.n_kv_heads = heads;
  a.head_dim = hd;
  a.scale = 1.0f / std::sqrt(static_cast<float>(hd));
  a.causal = causal;
  if (layout == 1) {  // rows in batch entries
    a.batch = rows;
    a.q_len = a.kv_len = len;
    a.q_batch_stride = a.k_batch_stride = a.v_batch_stride = a.out_batch_stride = len * row;
  } else {  // one batch entry of N tokens (packed: with positions and seq ids)
    a.q_len = a.kv_len = N;
    if (layout == 0 || layout == 3) {
      a.q_pos = a.k_pos = pos.data();
      a.q_seq = a.k_seq = seq.data();
    }
  }
  std::vector<uint8_t> scratch(table().attention_scratch_bytes(a, 1));
  for (auto _ : state) {
    table().attention(a, 0, heads, scratch.data(), nullptr);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double flops = 4.0 * static_cast<double>(rows * len * len) * hd * heads;
  laya::bench::report_flops(state, causal ? flops / 2 : flops, laya::bench::peaks().fp32_gflops);
  static const char* const kLayouts[] = {" packed 8x64", " batch 8x64", " 1x512", " 1x512 ids"};
  state.SetLabel(std::string(table().isa) + kLayouts[layout]);
}
BENCHMARK(BM_attention_packed)
    ->ArgNames({"layout", "hd", "heads", "causal"})
    ->ArgsProduct({{0, 1, 2, 3}, {64}, {12}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

// Args: kv_len, head_dim, heads, kv_heads, ids (1: the cache as cells of one sequence, with
// positions and sequence ids; the same keys are visible), f16. `cold`: every call reads another
// copy of the cache out of >= 96 MiB (from DRAM, as in a decode step, whose weights evict the
// cache); otherwise one copy (from cache: the kernel's compute alone).
void attention_decode(benchmark::State& state, bool cold) {
  const int64_t kv_len = state.range(0);
  const int32_t hd = static_cast<int32_t>(state.range(1));
  const int32_t heads = static_cast<int32_t>(state.range(2));
  const int32_t kv_heads = static_cast<int32_t>(state.range(3));
  const bool ids = state.range(4) != 0;
  const bool f16 = state.range(5) != 0;
  const size_t elem = f16 ? 2 : 4;
  const int64_t kv_row = int64_t{kv_heads} * hd;
  const size_t cache_elems = static_cast<size_t>(2 * kv_len * kv_row);  // K then V
  const size_t cache_bytes = cache_elems * elem;
  const size_t copies = cold ? std::max<size_t>(2, (size_t{96} << 20) / cache_bytes + 1) : 1;
  uint8_t* caches = static_cast<uint8_t*>(laya::bench::huge_alloc(copies * cache_bytes));
  const std::vector<float> init = randn(cache_elems, 4);
  std::vector<uint16_t> init16(cache_elems);
  for (size_t i = 0; i < cache_elems; ++i) init16[i] = laya::kernels::f32_to_f16(init[i]);
  for (size_t c = 0; c < copies; ++c)
    std::memcpy(caches + c * cache_bytes,
                f16 ? static_cast<const void*>(init16.data()) : init.data(), cache_bytes);
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
  a.causal = true;
  a.kv_type = f16 ? laya::kernels::KvType::kF16 : laya::kernels::KvType::kF32;
  std::vector<int32_t> k_pos(static_cast<size_t>(kv_len)), k_seq(static_cast<size_t>(kv_len), 0);
  for (int64_t j = 0; j < kv_len; ++j) k_pos[static_cast<size_t>(j)] = static_cast<int32_t>(j);
  const int32_t q_pos = static_cast<int32_t>(kv_len - 1), q_seq = 0;
  if (ids) {
    a.q_pos = &q_pos;
    a.q_seq = &q_seq;
    a.k_pos = k_pos.data();
    a.k_seq = k_seq.data();
  }
  std::vector<uint8_t> scratch(table().attention_scratch_bytes(a, 1));
  size_t c = 0;
  for (auto _ : state) {
    a.k = caches + c * cache_bytes;
    a.v = caches + c * cache_bytes + cache_bytes / 2;
    table().attention(a, 0, heads, scratch.data(), nullptr);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
    c = c + 1 == copies ? 0 : c + 1;
  }
  if (cold)  // bytes against the DRAM read peak
    laya::bench::report_bytes(state, static_cast<double>(cache_bytes));
  else  // q . k and p x v: 4 flops per head, key and dim, against the fp32 FMA peak
    laya::bench::report_flops(state, 4.0 * static_cast<double>(heads * kv_len * hd),
                              laya::bench::peaks().fp32_gflops);
  state.SetLabel(std::string(table().isa) + (ids ? " cells" : "") + (f16 ? " f16" : ""));
  laya::bench::huge_free(caches, copies * cache_bytes);
}
void BM_attention_decode(benchmark::State& state) {
  attention_decode(state, true);
}
void BM_attention_decode_hot(benchmark::State& state) {
  attention_decode(state, false);
}
// Each shape with f32 then f16 K / V (the last arg).
BENCHMARK(BM_attention_decode)
    ->ArgNames({"kv", "hd", "heads", "kv_heads", "ids", "f16"})
    ->ArgsProduct({{192}, {64}, {9}, {3}, {1}, {0, 1}})   // SmolLM2-135M: decoder_bench.py's cache
    ->ArgsProduct({{1088}, {64}, {9}, {3}, {1}, {0, 1}})  // SmolLM2-135M: 1024 + 64 tokens
    ->Args({512, 64, 12, 4, 0, 0})
    ->Args({1024, 64, 12, 4, 0, 0})
    ->ArgsProduct({{4096}, {64}, {12}, {4}, {0, 1}, {0, 1}})
    ->Args({512, 128, 32, 8, 0, 0})
    ->ArgsProduct({{4096}, {128}, {32}, {8}, {0}, {0, 1}})
    ->Args({4096, 64, 12, 12, 0, 0})
    ->Unit(benchmark::kMicrosecond);
// SmolLM2-135M's cache in cache: compute without the DRAM reads.
BENCHMARK(BM_attention_decode_hot)
    ->ArgNames({"kv", "hd", "heads", "kv_heads", "ids", "f16"})
    ->ArgsProduct({{192, 1088}, {64}, {9}, {3}, {1}, {0, 1}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
