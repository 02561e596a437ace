#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

int64_t argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

}  // namespace laya::kernels::ref
