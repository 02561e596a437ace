// Reference embedding gather: rows of any weight type, dequantized to f32.
#include <cstring>

#include "kernels/quant.h"
#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

void dequantize_row(WType type, const void* rows, const float* scales, int64_t row, int64_t dim,
                    float* out) {
  const uint8_t* base = static_cast<const uint8_t*>(rows);
  switch (type) {
    case WType::kF32:
      std::memcpy(out, base + 4 * dim * row, 4 * dim);
      return;
    case WType::kF16:
    case WType::kBF16: {
      const uint16_t* r = reinterpret_cast<const uint16_t*>(base) + dim * row;
      for (int64_t i = 0; i < dim; ++i)
        out[i] = type == WType::kF16 ? f16_to_f32(r[i]) : bf16_to_f32(r[i]);
      return;
    }
    case WType::kI8:
    case WType::kI8W: {
      const int8_t* r = reinterpret_cast<const int8_t*>(base) + dim * row;
      for (int64_t i = 0; i < dim; ++i) out[i] = static_cast<float>(r[i]) * scales[row];
      return;
    }
    case WType::kQ8_0:
      dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(base) + dim / kQK * row, out, dim);
      return;
    case WType::kQ4_0:
      dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(base) + dim / kQK * row, out, dim);
      return;
    case WType::kQ4_1:
      dequantize_row_q4_1(reinterpret_cast<const BlockQ4_1*>(base) + dim / kQK * row, out, dim);
      return;
    case WType::kQ5_0:
      dequantize_row_q5_0(reinterpret_cast<const BlockQ5_0*>(base) + dim / kQK * row, out, dim);
      return;
    case WType::kQ5_1:
      dequantize_row_q5_1(reinterpret_cast<const BlockQ5_1*>(base) + dim / kQK * row, out, dim);
      return;
    case WType::kQ4_K:
      dequantize_row_q4_K(reinterpret_cast<const BlockQ4_K*>(base) + dim / kQK_K * row, out, dim);
      return;
    case WType::kQ5_K:
      dequantize_row_q5_K(reinterpret_cast<const BlockQ5_K*>(base) + dim / kQK_K * row, out, dim);
      return;
    case WType::kQ6_K:
      dequantize_row_q6_K(reinterpret_cast<const BlockQ6_K*>(base) + dim / kQK_K * row, out, dim);
      return;
    case WType::kCount:
      return;
  }
}

int64_t embedding(WType type, const void* table, const float* scales, int64_t vocab, int64_t dim,
                  const int32_t* ids, int64_t n, float* out, const ThreadPool*) {
  for (int64_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) return i;
    dequantize_row(type, table, scales, ids[i], dim, out + i * dim);
  }
  return -1;
}

}  // namespace laya::kernels::ref
