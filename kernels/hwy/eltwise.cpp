// Highway elementwise / normalization family: per-target code in eltwise-inl.h, exported here.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/hwy/eltwise.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "hwy/highway.h"
#include "kernels/hwy/eltwise-inl.h"

#if HWY_ONCE
#include "kernels/hwy/dispatch.h"
#include "kernels/hwy/fill.h"

namespace laya::kernels {

HWY_EXPORT(Embedding);
HWY_EXPORT(Layernorm);
HWY_EXPORT(Rmsnorm);
HWY_EXPORT(Rope);
HWY_EXPORT(Unary);
HWY_EXPORT(Glu);
HWY_EXPORT(Softmax);
HWY_EXPORT(BinaryOp);
HWY_EXPORT(F32ToF16);
HWY_EXPORT(Argmax);
HWY_EXPORT(Topk);

namespace hwy_fill {

void eltwise(KernelTable& t, int64_t target) {
  t.embedding = LAYA_HWY_PICK(Embedding, target);
  t.layernorm = LAYA_HWY_PICK(Layernorm, target);
  t.rmsnorm = LAYA_HWY_PICK(Rmsnorm, target);
  t.rope = LAYA_HWY_PICK(Rope, target);
  t.unary = LAYA_HWY_PICK(Unary, target);
  t.glu = LAYA_HWY_PICK(Glu, target);
  t.softmax = LAYA_HWY_PICK(Softmax, target);
  t.binary = LAYA_HWY_PICK(BinaryOp, target);
  t.f32_to_f16 = LAYA_HWY_PICK(F32ToF16, target);
  t.argmax = LAYA_HWY_PICK(Argmax, target);
  t.topk = LAYA_HWY_PICK(Topk, target);
}

}  // namespace hwy_fill
}  // namespace laya::kernels
#endif  // HWY_ONCE
