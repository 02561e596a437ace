#include <cmath>

#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void layernorm(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
               int64_t dim, float eps, const ThreadPool*) {
  for (int64_t r = 0; r < rows; ++r, x += dim, y += dim) {
    double mean = 0;
    for (int64_t i = 0; i < dim; ++i) mean += x[i];
    mean /= static_cast<double>(dim);
    double var = 0;
    for (int64_t i = 0; i < dim; ++i) var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<double>(dim);
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t i = 0; i < dim; ++i)
      y[i] = static_cast<float>((x[i] - mean) * inv * gamma[i] + (beta ? beta[i] : 0.0));
  }
}

}  // namespace laya::kernels::ref
