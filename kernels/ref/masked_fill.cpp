#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void masked_fill(const float* x, const int32_t* mask, float value, float* y, int64_t n,
                 const ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) y[i] = mask[i] != 0 ? x[i] : value;
}

}  // namespace laya::kernels::ref
