#include <benchmark/benchmark.h>

#include "bench/peak.h"

// The machine's peaks, reported as a benchmark so every run records them next to the kernels.
static void BM_machine_peaks(benchmark::State& state) {
  const laya::bench::Peaks& p = laya::bench::peaks();
  for (auto _ : state) benchmark::DoNotOptimize(p.fp32_gflops);
  state.counters["fp32_GFLOPS"] = p.fp32_gflops;
  state.counters["bf16_GFLOPS"] = p.bf16_gflops;
  state.counters["int8_GOPS"] = p.int8_gops;
  state.counters["dram_read_GBps"] = p.dram_read_gbs;
}
BENCHMARK(BM_machine_peaks)->Iterations(1);

BENCHMARK_MAIN();
