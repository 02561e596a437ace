#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

// Selection by repeated scans: O(n k), obviously correct.
void topk(const float* x, int64_t n, int32_t k, int32_t* idx, float* val) {
  for (int32_t r = 0; r < k; ++r) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
      bool taken = false;
      for (int32_t q = 0; q < r; ++q) taken = taken || idx[q] == i;
      if (taken) continue;
      if (best < 0 || x[i] > x[best]) best = i;
    }
    idx[r] = static_cast<int32_t>(best);
    val[r] = x[best];
  }
}

}  // namespace laya::kernels::ref
