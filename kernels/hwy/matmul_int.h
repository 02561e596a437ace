// Test hooks of the integer matmul family (kernels/hwy/matmul_int.cpp, matmul_kquant.cpp). The
// runtime reaches the family only through kernel_table_hwy(); these entry points exist for
// tests/kernels/.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace laya::kernels::hwy_matmul_int {

// Installs every int-family type (kernels/matmul.inc) for `target` (a bit from
// kernel_hwy_targets()) into t, both halves (matmul_int.cpp and matmul_kquant.cpp).
// allow_dot = false forces the path without the CPU's dot-product extension (AVX3: pmaddubsw even
// when the CPU has AVX512-VNNI; NEON: smull + pairwise adds even when it has the ARMv8.2 dotprod
// sdot), so tests cover the path a CPU without it takes. hwy_fill::matmul_int passes true.
void fill(KernelTable& t, int64_t target, bool allow_dot);

// The K-quant half of fill (kernels/hwy/matmul_kquant.cpp).
void fill_kquant(KernelTable& t, int64_t target, bool allow_dot);

// Whether the q5_0 / q5_1 and K-quant GEMVs prefetch their weight stream in software (the other
// types always do). False on AMD CPUs with AVX-512 (Zen 4 and later): there the hardware
// prefetchers alone read those records (stored front to back, kernels/hwy/matmul_int-inl.h)
// faster than with the software stream, which Zen 3 and the Xeons need (docs/kernels.md, "GEMV
// records read front to back"). Decided once per process from CPUID.
bool gemv_sw_prefetch();

// The activation quantizer `target`'s kernels for weight type `type` use, written out in
// quant.h's formats: i8 -> int8 out[k] and returns the scale (quantize_row_i8); q8_0 / q4_0 /
// q5_0 -> BlockQ8_0 out[k / 32] (quantize_act_q8_0); q4_1 / q5_1 -> BlockQ8_1 out[k / 32]
// (quantize_act_q8_1); K-quants -> BlockQ8_K out[k / 256] (quantize_row_q8_K; bsums recomputed
// from the values). Returns 0 for block types, -1 when a K-quant kernel's own sub-block sums
// disagree with its values. Allocates (a test helper, not an execute-time entry point).
float quantize_act(int64_t target, WType type, const float* x, int64_t k, void* out);

}  // namespace laya::kernels::hwy_matmul_int
