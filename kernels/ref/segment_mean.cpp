#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

int64_t segment_mean(const float* x, int64_t n, int64_t dim, const int32_t* starts,
                     int64_t segments, float* out, const ThreadPool*) {
  for (int64_t r = 0; r < segments; ++r) {
    const int64_t begin = starts[r], end = r + 1 < segments ? starts[r + 1] : n;
    if (begin < 0 || begin > end || end > n) return r;
    for (int64_t j = 0; j < dim; ++j) {
      double sum = 0;
      for (int64_t i = begin; i < end; ++i) sum += x[i * dim + j];
      out[r * dim + j] =
          end > begin ? static_cast<float>(sum / static_cast<double>(end - begin)) : 0.0f;
    }
  }
  return -1;
}

}  // namespace laya::kernels::ref
