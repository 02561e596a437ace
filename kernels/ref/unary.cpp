#include <cmath>

#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

float act(ActKind a, float xf) {
  const double x = xf;
  switch (a) {
    case ActKind::kGeluErf:
      return static_cast<float>(0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
    case ActKind::kGeluTanh:
      return static_cast<float>(
          0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))));
    case ActKind::kSilu:
      return static_cast<float>(x / (1.0 + std::exp(-x)));
    case ActKind::kRelu:
      return xf > 0.0f ? xf : 0.0f;
    case ActKind::kCount:
      break;
  }
  return xf;
}

void unary(ActKind a, const float* x, float* y, int64_t n, const ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) y[i] = act(a, x[i]);
}

}  // namespace laya::kernels::ref
