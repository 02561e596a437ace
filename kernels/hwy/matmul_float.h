// Test hooks of the float matmul family (kernels/hwy/matmul_float.cpp). The runtime reaches the
// family only through kernel_table_hwy(); these entry points exist for tests/ and bench/.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace laya::kernels::hwy_matmul_float {

// Installs f32, f16, bf16 and i8w for `target` (a bit from kernel_hwy_targets()) into t.
// allow_amx = false keeps bf16 GEMMs on vdpbf16ps (AVX3) even when AMX is usable, so tests and
// benchmarks reach the path a CPU without AMX takes. hwy_fill::matmul_float passes true.
void fill(KernelTable& t, int64_t target, bool allow_amx);

// True when this CPU has AMX-TILE and AMX-BF16 and the kernel granted this process the tile
// state (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA), asked once).
bool amx_bf16_usable();

}  // namespace laya::kernels::hwy_matmul_float
