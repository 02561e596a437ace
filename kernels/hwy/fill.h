// One filler per Highway kernel family: each overwrites the table entries its family provides
// with the implementation compiled for `target`. Defined in kernels/hwy/<family>.cpp.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace laya::kernels::hwy_fill {

void matmul_float(KernelTable& t, int64_t target);  // f32, f16, bf16 weights
void matmul_int(KernelTable& t, int64_t target);    // i8, q8_0, q4_0, q4_1, q5_0, q5_1, K-quants
void attention(KernelTable& t, int64_t target);
void eltwise(KernelTable& t, int64_t target);  // norms, rope, activations, softmax, ...

}  // namespace laya::kernels::hwy_fill
