#include <cmath>

#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void softmax(const float* x, float* y, int64_t rows, int64_t dim, const ThreadPool*) {
  for (int64_t r = 0; r < rows; ++r, x += dim, y += dim) {
    float max = x[0];
    for (int64_t i = 1; i < dim; ++i) max = x[i] > max ? x[i] : max;
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += std::exp(double{x[i]} - max);
    for (int64_t i = 0; i < dim; ++i) y[i] = static_cast<float>(std::exp(double{x[i]} - max) / sum);
  }
}

}  // namespace laya::kernels::ref
