// Integer matmul family, second half: the K-quants (q4_K, q5_K, q6_K) and their HWY_EXPORT table,
// installed by hwy_matmul_int::fill_kquant, which the family's filler (kernels/hwy/matmul_int.cpp)
// calls. The kernels are kernels/hwy/matmul_int-inl.h's, as for the first half; a translation unit
// of its own so the two compile in parallel.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/hwy/matmul_kquant.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "kernels/hwy/matmul_int-inl.h"

HWY_BEFORE_NAMESPACE();
namespace laya::kernels::HWY_NAMESPACE {
void FillMatmulIntKQuants(KernelTable& t, bool allow_dot) {
  FillMatmulIntFamily<matmul_int::Family::kKQuants>(t, allow_dot);
}
}  // namespace laya::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "kernels/hwy/dispatch.h"
#include "kernels/hwy/matmul_int.h"

namespace laya::kernels {

HWY_EXPORT(FillMatmulIntKQuants);

void hwy_matmul_int::fill_kquant(KernelTable& t, int64_t target, bool allow_dot) {
  LAYA_HWY_PICK(FillMatmulIntKQuants, target)(t, allow_dot);
}

}  // namespace laya::kernels
#endif  // HWY_ONCE
