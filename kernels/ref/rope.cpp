#include <cmath>

#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void rope(const float* x, float* y, const int32_t* pos, int64_t tokens, int32_t n_heads,
          int32_t head_dim, int32_t rotary_dim, float theta, RopeMode mode, const ThreadPool*) {
  const int32_t half = rotary_dim / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int32_t h = 0; h < n_heads; ++h) {
      const float* xh = x + (t * n_heads + h) * head_dim;
      float* yh = y + (t * n_heads + h) * head_dim;
      for (int32_t i = 0; i < half; ++i) {
        // f32 throughout, as transformers computes it.
        const float inv_freq =
            1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
        const float angle = static_cast<float>(pos[t]) * inv_freq;
        const float c = static_cast<float>(std::cos(double{angle}));
        const float s = static_cast<float>(std::sin(double{angle}));
        const int32_t a = mode == RopeMode::kNeox ? i : 2 * i;
        const int32_t b = mode == RopeMode::kNeox ? i + half : 2 * i + 1;
        const float x0 = xh[a], x1 = xh[b];
        yh[a] = x0 * c - x1 * s;
        yh[b] = x1 * c + x0 * s;
      }
      for (int32_t d = rotary_dim; d < head_dim; ++d) yh[d] = xh[d];
    }
  }
}

}  // namespace laya::kernels::ref
