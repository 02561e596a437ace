// Elementwise / normalization benchmarks on the best Highway target, 1 thread (pool = null).
// GB/s counts the bytes each call must move: inputs read plus outputs written (and gamma / beta,
// tables rows, ...), over the DRAM read peak. The shapes are small enough to stay in L2 / L3, so
// these figures are cache bandwidth + compute, not DRAM.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "bench/peak.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

namespace {

using namespace laya::kernels;

const KernelTable& table() {
  static const KernelTable t = kernel_table_hwy(0);
  return t;
}

std::vector<float> randn(size_t n, uint32_t seed, float sd = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, sd);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng);
  return v;
}

void finish(benchmark::State& state, double bytes) {
  laya::bench::report_bytes(state, bytes);
  state.SetLabel(table().isa);
}

void BM_layernorm(benchmark::State& state) {
  const int64_t rows = state.range(0), dim = state.range(1);
  const std::vector<float> x = randn(static_cast<size_t>(rows * dim), 1);
  const std::vector<float> g = randn(static_cast<size_t>(dim), 2), b = randn(g.size(), 3);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    table().layernorm(x.data(), g.data(), b.data(), y.data(), rows, dim, 1e-5f, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, 4.0 * (2 * rows * dim + 2 * dim));
}
BENCHMARK(BM_layernorm)->ArgNames({"rows", "dim"})->Args({128, 768});

void BM_rmsnorm(benchmark::State& state) {
  const int64_t rows = state.range(0), dim = state.range(1);
  const std::vector<float> x = randn(static_cast<size_t>(rows * dim), 1);
  const std::vector<float> g = randn(static_cast<size_t>(dim), 2);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    table().rmsnorm(x.data(), g.data(), y.data(), rows, dim, 1e-5f, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, 4.0 * (2 * rows * dim + dim));
}
BENCHMARK(BM_rmsnorm)->ArgNames({"rows", "dim"})->Args({128, 576});

// Args: tokens, heads, head_dim, mode (0 neox, 1 gptj). In place, as the runtime calls it.
void BM_rope(benchmark::State& state) {
  const int64_t tokens = state.range(0);
  const int32_t heads = static_cast<int32_t>(state.range(1));
  const int32_t hd = static_cast<int32_t>(state.range(2));
  const RopeMode mode = state.range(3) == 0 ? RopeMode::kNeox : RopeMode::kGptj;
  std::vector<float> x = randn(static_cast<size_t>(tokens * heads * hd), 1);
  std::vector<int32_t> pos(static_cast<size_t>(tokens));
  for (int64_t t = 0; t < tokens; ++t) pos[static_cast<size_t>(t)] = static_cast<int32_t>(100 + t);
  for (auto _ : state) {
    table().rope(x.data(), x.data(), pos.data(), tokens, heads, hd, hd, 10000.0f, mode, nullptr);
    benchmark::DoNotOptimize(x.data());
  }
  finish(state, 4.0 * 2 * tokens * heads * hd);
}
BENCHMARK(BM_rope)
    ->ArgNames({"tokens", "heads", "hd", "gptj"})
    ->Args({128, 12, 64, 0})
    ->Args({128, 12, 64, 1})
    ->Args({1, 12, 64, 0});

void BM_unary(benchmark::State& state) {
  const ActKind act = static_cast<ActKind>(state.range(0));
  const int64_t n = state.range(1);
  const std::vector<float> x = randn(static_cast<size_t>(n), 1, 2.0f);
  std::vector<float> y(x.size());
  for (auto _ : state) {
    table().unary(act, x.data(), y.data(), n, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, 4.0 * 2 * n);
  state.SetLabel(std::string(act_name(act)) + " " + table().isa);
}
// One row per activation of ir/act.inc.
BENCHMARK(BM_unary)->ArgNames({"act", "n"})->Apply([](benchmark::internal::Benchmark* b) {
  for (int a = 0; a < laya::ir::kActCount; ++a) b->Args({a, 128 * 3072});
});

void BM_glu(benchmark::State& state) {
  const ActKind act = static_cast<ActKind>(state.range(0));
  const int64_t rows = state.range(1), f = state.range(2);
  const std::vector<float> x = randn(static_cast<size_t>(rows * 2 * f), 1, 2.0f);
  std::vector<float> y(static_cast<size_t>(rows * f));
  for (auto _ : state) {
    table().glu(act, x.data(), y.data(), rows, f, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, 4.0 * 3 * rows * f);
}
BENCHMARK(BM_glu)
    ->ArgNames({"act", "rows", "f"})
    ->Args({static_cast<int>(ActKind::kSilu), 128, 1536})
    ->Args({static_cast<int>(ActKind::kGeluErf), 128, 1536});

void BM_softmax(benchmark::State& state) {
  const int64_t rows = state.range(0), dim = state.range(1);
  std::vector<float> x = randn(static_cast<size_t>(rows * dim), 1, 3.0f);
  for (auto _ : state) {
    table().softmax(x.data(), x.data(), rows, dim, nullptr);  // in place
    benchmark::DoNotOptimize(x.data());
  }
  finish(state, 4.0 * 2 * rows * dim);
}
BENCHMARK(BM_softmax)->ArgNames({"rows", "dim"})->Args({12 * 512, 512});

void BM_binary(benchmark::State& state) {
  const int64_t rows = state.range(0), dim = state.range(1);
  const std::vector<float> a = randn(static_cast<size_t>(rows * dim), 1), b = randn(a.size(), 2);
  std::vector<float> y(a.size());
  for (auto _ : state) {
    table().binary(Binary::kAdd, a.data(), b.data(), y.data(), rows * dim, rows * dim, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  finish(state, 4.0 * 3 * rows * dim);
}
BENCHMARK(BM_binary)->ArgNames({"rows", "dim"})->Args({128, 768});

// Args: weight type, tokens, dim (vocab 32000).
void BM_embedding(benchmark::State& state) {
  const WType type = static_cast<WType>(state.range(0));
  const int64_t n = state.range(1), dim = state.range(2), vocab = 32000;
  const std::vector<float> src = randn(static_cast<size_t>(vocab * dim), 1);
  std::vector<uint8_t> tab;
  double row_bytes = 0;
  if (type == WType::kQ8_0) {
    tab.resize(src.size() / kQK * sizeof(BlockQ8_0));
    quantize_row_q8_0(src.data(), reinterpret_cast<BlockQ8_0*>(tab.data()),
                      static_cast<int64_t>(src.size()));
    row_bytes = static_cast<double>(dim) / kQK * sizeof(BlockQ8_0);
  } else {
    tab.resize(src.size() * 4);
    std::memcpy(tab.data(), src.data(), tab.size());
    row_bytes = 4.0 * static_cast<double>(dim);
  }
  std::vector<int32_t> ids(static_cast<size_t>(n));
  std::mt19937 rng(5);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % vocab);
  std::vector<float> out(static_cast<size_t>(n * dim));
  for (auto _ : state) {
    benchmark::DoNotOptimize(table().embedding(type, tab.data(), nullptr, vocab, dim, ids.data(), n,
                                               out.data(), nullptr));
  }
  finish(state, static_cast<double>(n) * (row_bytes + 4.0 * static_cast<double>(dim)));
}
BENCHMARK(BM_embedding)
    ->ArgNames({"type", "tokens", "dim"})
    ->Args({static_cast<int>(WType::kF32), 128, 576})
    ->Args({static_cast<int>(WType::kQ8_0), 128, 576});

void BM_argmax(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::vector<float> x = randn(static_cast<size_t>(n), 1);
  for (auto _ : state) benchmark::DoNotOptimize(table().argmax(x.data(), n));
  finish(state, 4.0 * static_cast<double>(n));
}
BENCHMARK(BM_argmax)->ArgNames({"n"})->Args({50257});

void BM_topk(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int32_t k = static_cast<int32_t>(state.range(1));
  const std::vector<float> x = randn(static_cast<size_t>(n), 1);
  std::vector<int32_t> idx(static_cast<size_t>(k));
  std::vector<float> val(static_cast<size_t>(k));
  for (auto _ : state) {
    table().topk(x.data(), n, k, idx.data(), val.data());
    benchmark::DoNotOptimize(idx.data());
  }
  finish(state, 4.0 * static_cast<double>(n));
}
BENCHMARK(BM_topk)->ArgNames({"n", "k"})->Args({50257, 40});

}  // namespace
