// Reference f32 -> f16 rows (kv_write into an f16 state): the scalar conversion of kernels/quant.h.
#include "kernels/quant.h"
#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void f32_to_f16(const float* src, uint16_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = kernels::f32_to_f16(src[i]);
}

}  // namespace laya::kernels::ref
