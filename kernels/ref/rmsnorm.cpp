#include <cmath>

#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void rmsnorm(const float* x, const float* gamma, float* y, int64_t rows, int64_t dim, float eps,
             const ThreadPool*) {
  for (int64_t r = 0; r < rows; ++r, x += dim, y += dim) {
    double ss = 0;
    for (int64_t i = 0; i < dim; ++i) ss += double{x[i]} * x[i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(dim) + eps);
    for (int64_t i = 0; i < dim; ++i) y[i] = static_cast<float>(x[i] * inv * gamma[i]);
  }
}

}  // namespace laya::kernels::ref
