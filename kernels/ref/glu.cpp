#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void glu(ActKind a, const float* x, float* y, int64_t rows, int64_t f, const ThreadPool*) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < f; ++j)
      y[r * f + j] = static_cast<float>(double{act(a, x[r * 2 * f + j])} * x[r * 2 * f + f + j]);
}

}  // namespace laya::kernels::ref
