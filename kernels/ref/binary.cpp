#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void binary(Binary op, const float* a, const float* b, float* y, int64_t n, int64_t nb,
            const ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) y[i] = op == Binary::kAdd ? a[i] + b[i % nb] : a[i] * b[i % nb];
}

}  // namespace laya::kernels::ref
