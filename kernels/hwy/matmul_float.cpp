// Matrix products with f32 activations (f32, f16, bf16, i8w): the HWY_EXPORT tables over the
// per-target code in matmul_float-inl.h, and the filler that installs one target's entries into
// a KernelTable.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/hwy/matmul_float.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/hwy/matmul_float-inl.h"

#if HWY_ONCE
#if defined(__linux__) && defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "kernels/hwy/dispatch.h"
#include "kernels/hwy/fill.h"
#include "kernels/hwy/matmul_float.h"

namespace laya::kernels {
namespace hwy_matmul_float {

HWY_EXPORT(F32PackedBytes);
HWY_EXPORT(F32Pack);
HWY_EXPORT(F32ScratchBytes);
HWY_EXPORT(F32Run);
HWY_EXPORT(F16PackedBytes);
HWY_EXPORT(F16Pack);
HWY_EXPORT(F16ScratchBytes);
HWY_EXPORT(F16Run);
HWY_EXPORT(BF16PackedBytes);
HWY_EXPORT(BF16Pack);
HWY_EXPORT(BF16ScratchBytes);
HWY_EXPORT(BF16Run);
HWY_EXPORT(BF16DpRun);
HWY_EXPORT(BF16AmxRun);
HWY_EXPORT(I8WPackedBytes);
HWY_EXPORT(I8WPack);
HWY_EXPORT(I8WScratchBytes);
HWY_EXPORT(I8WRun);
HWY_EXPORT(I8WAmxScratchBytes);
HWY_EXPORT(I8WAmxRun);

bool amx_bf16_usable() {
#if defined(__linux__) && defined(__x86_64__)
  static const bool usable = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
    const bool amx_bf16 = (d >> 22 & 1u) != 0, amx_tile = (d >> 24 & 1u) != 0;
    if (!amx_bf16 || !amx_tile) return false;
    // Linux hands out the AMX tile data state only on request (ARCH_REQ_XCOMP_PERM = 0x1023,
    // XFEATURE_XTILEDATA = 18); without it the first tile instruction faults.
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
  }();
  return usable;
#else
  return false;
#endif
}

void fill(KernelTable& t, int64_t target, bool allow_amx) {
  MatmulKernel& f32 = t.matmul[static_cast<int>(WType::kF32)];
  f32.packed_bytes = LAYA_HWY_PICK(F32PackedBytes, target);
  f32.pack = LAYA_HWY_PICK(F32Pack, target);
  f32.scratch_bytes = LAYA_HWY_PICK(F32ScratchBytes, target);
  f32.run = LAYA_HWY_PICK(F32Run, target);

  MatmulKernel& f16 = t.matmul[static_cast<int>(WType::kF16)];
  f16.packed_bytes = LAYA_HWY_PICK(F16PackedBytes, target);
  f16.pack = LAYA_HWY_PICK(F16Pack, target);
  f16.scratch_bytes = LAYA_HWY_PICK(F16ScratchBytes, target);
  f16.run = LAYA_HWY_PICK(F16Run, target);

  // bf16 GEMVs on vdpbf16ps only inside the AVX3 target and only when this CPU has AVX512-BF16
  // (GEMMs then on f32 FMA); GEMMs on AMX when the CPU has AMX-BF16 and the tile state was granted.
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool dp = target == HWY_AVX3 && __builtin_cpu_supports("avx512bf16");
#else
  const bool dp = false;
#endif
  const bool amx = dp && allow_amx && amx_bf16_usable();
  MatmulKernel& bf16 = t.matmul[static_cast<int>(WType::kBF16)];
  bf16.packed_bytes = LAYA_HWY_PICK(BF16PackedBytes, target);
  bf16.pack = LAYA_HWY_PICK(BF16Pack, target);
  bf16.scratch_bytes = LAYA_HWY_PICK(BF16ScratchBytes, target);
  bf16.run = amx  ? LAYA_HWY_PICK(BF16AmxRun, target)
             : dp ? LAYA_HWY_PICK(BF16DpRun, target)
                  : LAYA_HWY_PICK(BF16Run, target);

  MatmulKernel& i8w = t.matmul[static_cast<int>(WType::kI8W)];
  i8w.packed_bytes = LAYA_HWY_PICK(I8WPackedBytes, target);
  i8w.pack = LAYA_HWY_PICK(I8WPack, target);
  // i8w GEMMs on AMX too: int8 weights are exact in bf16 (converted per panel as they are read).
  i8w.scratch_bytes =
      amx ? LAYA_HWY_PICK(I8WAmxScratchBytes, target) : LAYA_HWY_PICK(I8WScratchBytes, target);
  i8w.run = amx ? LAYA_HWY_PICK(I8WAmxRun, target) : LAYA_HWY_PICK(I8WRun, target);
}

}  // namespace hwy_matmul_float

void hwy_fill::matmul_float(KernelTable& t, int64_t target) {
  hwy_matmul_float::fill(t, target, /*allow_amx=*/true);
}

}  // namespace laya::kernels
#endif  // HWY_ONCE
