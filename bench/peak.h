// Machine peaks measured on this machine, once per benchmark process, by register-blocked probes
// (the denominators of every "% of peak" figure in bench/):
//   fp32_gflops    zmm (else ymm) FMA chains   (2 FLOP per lane per vfmadd)
//   bf16_gflops    vdpbf16ps chains            (64 FLOP per instruction)
//   amx_bf16_gflops  tdpbf16ps chains on 4 C tiles (16384 FLOP per instruction); 0 without AMX
//   int8_gops      vpdpbusd chains (VNNI)      (128 OP per instruction: 64 MACs)
//   dram_read_gbs  streaming zmm reads of a 1 GiB buffer, 2 MiB-aligned, MADV_HUGEPAGE
// Each figure is the median of 5 runs on the calling thread (1 core), timed in thread CPU time
// (as the benchmarks' rates are). Without AVX-512F the fp32
// and DRAM probes run on ymm registers (AVX2 + FMA: 16 FLOP per vfmadd, e.g. Zen 3); without VNNI
// the int8 probe is the AVX2 chain int8 kernels use instead (vpmaddubsw + vpmaddwd + vpaddd: 64 OP
// per step); without AVX-512 BF16 that figure is 0.
#pragma once

#include <benchmark/benchmark.h>

namespace laya::bench {

struct Peaks {
  double fp32_gflops = 0;
  double bf16_gflops = 0;
  double amx_bf16_gflops = 0;
  double int8_gops = 0;
  double dram_read_gbs = 0;
};

// Measured on first call (takes ~2 s), then cached.
const Peaks& peaks();

// Sets the counters every kernel benchmark reports: GFLOP/s (or GOP/s) and % of `peak`, given the
// operations one iteration performs. Call after the benchmark loop.
void report_flops(benchmark::State& state, double ops_per_iter, double peak_gops);
// Likewise for bandwidth: GB/s and % of the DRAM read peak, given bytes read per iteration.
void report_bytes(benchmark::State& state, double bytes_per_iter);

// One streaming read pass over `bytes` of `buf` (64-byte aligned, a multiple of 512 bytes) by the
// dram_read_gbs probe: GB/s over the calling thread's CPU time. For figures interleaved with the
// code they are compared with (bench_matmul_int's roofline rows), where one process-wide median
// would not see the machine's load change.
double dram_read_pass(const void* buf, size_t bytes);
// The calling thread's CPU time in seconds (the clock of every probe above).
double thread_seconds();

// A 2 MiB-aligned buffer with MADV_HUGEPAGE, zero-filled (for weights streamed from DRAM).
void* huge_alloc(size_t bytes);
void huge_free(void* p, size_t bytes);

}  // namespace laya::bench
