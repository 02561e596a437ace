// Laya's act-head features, as laya.common.DecisionModel.forward computes them (softmax of every
// slot, empty ones included; top two; entropy over max(2, real options); option count / 255).
#include <cmath>

#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void act_features(const float* logits, const int32_t* valid, int64_t rows, int64_t k, float* out) {
  for (int64_t r = 0; r < rows; ++r, logits += k, valid += k, out += 4) {
    double max = logits[0];
    for (int64_t j = 1; j < k; ++j) max = logits[j] > max ? logits[j] : max;
    double sum = 0;
    for (int64_t j = 0; j < k; ++j) sum += std::exp(logits[j] - max);
    double p1 = 0, p2 = 0, plogp = 0;
    int64_t count = 0;
    for (int64_t j = 0; j < k; ++j) {
      const double p = std::exp(logits[j] - max) / sum;
      if (p > p1) {
        p2 = p1;
        p1 = p;
      } else if (p > p2) {
        p2 = p;
      }
      plogp += p * std::log(p > 1e-9 ? p : 1e-9);
      count += valid[j] != 0;
    }
    const double n = static_cast<double>(count > 2 ? count : 2);
    out[0] = static_cast<float>(p1);
    out[1] = static_cast<float>(p1 - p2);
    out[2] = static_cast<float>(-plogp / std::log(n));
    out[3] = static_cast<float>(n / 255.0);
  }
}

}  // namespace laya::kernels::ref
