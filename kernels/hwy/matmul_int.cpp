// Integer / GGUF-block matmul family: HWY_EXPORT tables and the KernelTable filler.
#include <cstdlib>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/hwy/matmul_int.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/hwy/matmul_int-inl.h"

#if HWY_ONCE
#include "kernels/hwy/dispatch.h"
#include "kernels/hwy/fill.h"
#include "kernels/hwy/matmul_int.h"

namespace laya::kernels {

HWY_EXPORT(FillMatmulInt);
HWY_EXPORT(QuantizeActForTest);

void hwy_fill::matmul_int(KernelTable& t, int64_t target) {
  LAYA_HWY_PICK(FillMatmulInt, target)(t, true);
}

void hwy_matmul_int::fill(KernelTable& t, int64_t target, bool allow_vnni) {
  LAYA_HWY_PICK(FillMatmulInt, target)(t, allow_vnni);
}

float hwy_matmul_int::quantize_act(int64_t target, WType type, const float* x, int64_t k,
                                   void* out) {
  // At least x_panel(k, 1).stride: round_up(k, 64) + round_up(12 * (k / 32 or 1), 64).
  const size_t bytes = static_cast<size_t>((k + 12 * (k / kQK + 1) + 256) / 64 * 64);
  void* work = std::aligned_alloc(64, bytes);
  const float s =
      LAYA_HWY_PICK(QuantizeActForTest, target)(static_cast<int>(type), x, k, out, work);
  std::free(work);
  return s;
}

}  // namespace laya::kernels
#endif  // HWY_ONCE
