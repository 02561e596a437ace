// Highway attention family: per-target code in attention-inl.h, exported here.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/hwy/attention.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/hwy/attention-inl.h"

#if HWY_ONCE
#include "kernels/hwy/dispatch.h"
#include "kernels/hwy/fill.h"

namespace laya::kernels {

HWY_EXPORT(Attention);
HWY_EXPORT(AttentionScratchBytes);

namespace hwy_fill {

void attention(KernelTable& t, int64_t target) {
  t.attention = LAYA_HWY_PICK(Attention, target);
  t.attention_scratch_bytes = LAYA_HWY_PICK(AttentionScratchBytes, target);
}

}  // namespace hwy_fill
}  // namespace laya::kernels
#endif  // HWY_ONCE
