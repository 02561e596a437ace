// Integer matmul family, first half: i8 and the GGUF block types (q8_0, q4_0, q4_1, q5_0, q5_1)
// and their HWY_EXPORT table, the family's KernelTable filler (both halves) and its test hooks.
// The K-quants are the other half (kernels/hwy/matmul_kquant.cpp).
#include <cstdlib>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/hwy/matmul_int.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/hwy/matmul_int-inl.h"

HWY_BEFORE_NAMESPACE();
namespace laya::kernels::HWY_NAMESPACE {
void FillMatmulIntBlocks(KernelTable& t, bool allow_dot) {
  FillMatmulIntFamily<matmul_int::Family::kBlocks>(t, allow_dot);
}
}  // namespace laya::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kernels/hwy/dispatch.h"
#include "kernels/hwy/fill.h"
#include "kernels/hwy/matmul_int.h"

namespace laya::kernels {

HWY_EXPORT(FillMatmulIntBlocks);
HWY_EXPORT(QuantizeActForTest);

void hwy_fill::matmul_int(KernelTable& t, int64_t target) {
  hwy_matmul_int::fill(t, target, true);
}

void hwy_matmul_int::fill(KernelTable& t, int64_t target, bool allow_dot) {
  LAYA_HWY_PICK(FillMatmulIntBlocks, target)(t, allow_dot);
  fill_kquant(t, target, allow_dot);
}

bool hwy_matmul_int::gemv_sw_prefetch() {
#if defined(__x86_64__)
  static const bool on = [] {
    __builtin_cpu_init();
    return !(__builtin_cpu_is("amd") && __builtin_cpu_supports("avx512f"));
  }();
#else
  const bool on = true;  // only the x86 targets prefetch (kPrefetchBlk)
#endif
  return on;
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
