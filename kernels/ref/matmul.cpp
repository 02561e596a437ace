// Reference matmul for every weight type: y[m, n] = x[m, k] . W[n, k]^T + bias.
// Float types (bf16 included): w dequantized exactly, x as given in f32, products summed in
// double. i8w: the same with the int8 values, then times the row's scale in f32.
// Integer types: x quantized on the fly exactly as the SIMD kernels must (quant.h), integer dot
// products per block / row, then scaled in f32 in the order written here.
// K-quants follow ggml's ggml_vec_dot_q{4,5,6}_K_q8_K: x -> q8_K (quantize_row_q8_K), and per
// super-block of 256 two exact int32 sums over its sub-blocks j,
//   q4_K / q5_K: isum = sum_j sc_j * dot(q_j, qx_j), msum = sum_j m_j * sum(qx_j)
//                y += (d_w * d_x) * isum;  y -= (dmin_w * d_x) * msum
//   q6_K:        isum = sum_j sc_j * dot(q_j - 32, qx_j);  y += (d_w * d_x) * isum
// (d_w, dmin_w f16 -> f32; d_x the q8_K f32 scale). ggml sums the same terms in another f32
// order; the integer parts are identical.
// q5_0 / q5_1 follow ggml_vec_dot_q5_0_q8_0 / _q5_1_q8_1 like q4_0 / q4_1: per block isum over
// (q - 16) (q5_0) or q (q5_1), y += (d_w * d_x) * isum (q5_1: + m_w * s_x).
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/quant.h"
#include "kernels/ref/ref.h"

namespace laya::kernels::ref {
namespace {

uint64_t row_bytes(WType t, int64_t k) {
  switch (t) {
    case WType::kF32:
      return 4 * k;
    case WType::kF16:
    case WType::kBF16:
      return 2 * k;
    case WType::kI8:
    case WType::kI8W:
      return k;
    case WType::kQ8_0:
      return k / kQK * sizeof(BlockQ8_0);
    case WType::kQ4_0:
      return k / kQK * sizeof(BlockQ4_0);
    case WType::kQ4_1:
      return k / kQK * sizeof(BlockQ4_1);
    case WType::kQ5_0:
      return k / kQK * sizeof(BlockQ5_0);
    case WType::kQ5_1:
      return k / kQK * sizeof(BlockQ5_1);
    case WType::kQ4_K:
      return k / kQK_K * sizeof(BlockQ4_K);
    case WType::kQ5_K:
      return k / kQK_K * sizeof(BlockQ5_K);
    case WType::kQ6_K:
      return k / kQK_K * sizeof(BlockQ6_K);
    case WType::kCount:
      break;
  }
  return 0;
}

bool is_kquant(WType t) {
  return t == WType::kQ4_K || t == WType::kQ5_K || t == WType::kQ6_K;
}

// Elements per block (0: not a block type).
int64_t block_elems(WType t) {
  if (is_kquant(t)) return kQK_K;
  return t == WType::kQ8_0 || t == WType::kQ4_0 || t == WType::kQ4_1 || t == WType::kQ5_0 ||
                 t == WType::kQ5_1
             ? kQK
             : 0;
}

template <WType T>
inline constexpr bool is_kquant_v = T == WType::kQ4_K || T == WType::kQ5_K || T == WType::kQ6_K;

template <WType T>
uint64_t packed_bytes(int64_t n, int64_t k) {
  if (n <= 0 || k <= 0 || (block_elems(T) != 0 && k % block_elems(T) != 0)) return 0;
  return row_bytes(T, k) * n + (T == WType::kI8 || T == WType::kI8W ? 4 * n : 0);
}

template <WType T>
void pack(const void* w, const float* scales, int64_t n, int64_t k, void* dst) {
  std::memcpy(dst, w, row_bytes(T, k) * n);
  if (T == WType::kI8 || T == WType::kI8W)
    std::memcpy(static_cast<uint8_t*>(dst) + row_bytes(T, k) * n, scales, 4 * n);
}

template <WType T>
uint64_t scratch_bytes(int64_t, int64_t, int64_t k, int) {
  // One quantized activation row (i8: k bytes; blocks: at most this).
  return k + sizeof(BlockQ8_K) * (k / kQK_K + 1) + sizeof(BlockQ8_1) * (k / kQK + 1) + 64;
}

// Dot product of activation row x (already in the type's activation form) with weight row j.
template <WType T>
float dot_row(const uint8_t* w, int64_t j, int64_t k, const float* x, const void* xq, float xs,
              const float* wscales) {
  const uint8_t* row = w + row_bytes(T, k) * j;
  if constexpr (T == WType::kF32 || T == WType::kF16 || T == WType::kBF16) {
    double acc = 0;
    for (int64_t i = 0; i < k; ++i) {
      float wv;
      if constexpr (T == WType::kF32) std::memcpy(&wv, row + 4 * i, 4);
      uint16_t h;
      if constexpr (T != WType::kF32) std::memcpy(&h, row + 2 * i, 2);
      if constexpr (T == WType::kF16) wv = f16_to_f32(h);
      if constexpr (T == WType::kBF16) wv = bf16_to_f32(h);
      acc += double{x[i]} * double{wv};
    }
    return static_cast<float>(acc);
  } else if constexpr (T == WType::kI8) {
    const int8_t* q = static_cast<const int8_t*>(xq);
    int32_t acc = 0;
    for (int64_t i = 0; i < k; ++i) acc += int32_t{q[i]} * int32_t{static_cast<int8_t>(row[i])};
    float ws;  // the scales follow n * k bytes of rows: not necessarily 4-byte aligned
    std::memcpy(&ws, wscales + j, sizeof ws);
    return static_cast<float>(acc) * xs * ws;
  } else if constexpr (T == WType::kI8W) {
    double acc = 0;
    for (int64_t i = 0; i < k; ++i)
      acc += double{x[i]} * static_cast<double>(static_cast<int8_t>(row[i]));
    float ws;
    std::memcpy(&ws, wscales + j, sizeof ws);
    return static_cast<float>(acc) * ws;
  } else if constexpr (T == WType::kQ8_0) {
    const BlockQ8_0* wb = reinterpret_cast<const BlockQ8_0*>(row);
    const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(xq);
    float sum = 0;
    for (int64_t b = 0; b < k / kQK; ++b) {
      int32_t isum = 0;
      for (int i = 0; i < kQK; ++i) isum += int32_t{wb[b].qs[i]} * int32_t{xb[b].qs[i]};
      sum += f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d) * static_cast<float>(isum);
    }
    return sum;
  } else if constexpr (T == WType::kQ4_0) {
    const BlockQ4_0* wb = reinterpret_cast<const BlockQ4_0*>(row);
    const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(xq);
    float sum = 0;
    for (int64_t b = 0; b < k / kQK; ++b) {
      int32_t isum = 0;
      for (int i = 0; i < kQK / 2; ++i) {
        isum += ((wb[b].qs[i] & 0x0f) - 8) * int32_t{xb[b].qs[i]};
        isum += ((wb[b].qs[i] >> 4) - 8) * int32_t{xb[b].qs[i + kQK / 2]};
      }
      sum += f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d) * static_cast<float>(isum);
    }
    return sum;
  } else if constexpr (T == WType::kQ5_0) {
    const BlockQ5_0* wb = reinterpret_cast<const BlockQ5_0*>(row);
    const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(xq);
    float sum = 0;
    for (int64_t b = 0; b < k / kQK; ++b) {
      int32_t isum = 0;
      for (int i = 0; i < kQK; ++i)
        isum += (q5_value(wb[b].qh, wb[b].qs, i) - 16) * int32_t{xb[b].qs[i]};
      sum += f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d) * static_cast<float>(isum);
    }
    return sum;
  } else if constexpr (T == WType::kQ5_1) {
    const BlockQ5_1* wb = reinterpret_cast<const BlockQ5_1*>(row);
    const BlockQ8_1* xb = static_cast<const BlockQ8_1*>(xq);
    float sum = 0;
    for (int64_t b = 0; b < k / kQK; ++b) {
      int32_t isum = 0;
      for (int i = 0; i < kQK; ++i) isum += q5_value(wb[b].qh, wb[b].qs, i) * int32_t{xb[b].qs[i]};
      sum += f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d) * static_cast<float>(isum) +
             f16_to_f32(wb[b].m) * f16_to_f32(xb[b].s);
    }
    return sum;
  } else if constexpr (T == WType::kQ4_K || T == WType::kQ5_K) {
    using Block = std::conditional_t<T == WType::kQ4_K, BlockQ4_K, BlockQ5_K>;
    const Block* wb = reinterpret_cast<const Block*>(row);
    const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(xq);
    float sum = 0;
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      int32_t isum = 0, msum = 0;
      for (int j = 0; j < 8; ++j) {
        int sc, mn;
        kquant_scale_min(wb[b].scales, j, &sc, &mn);
        int32_t dot = 0;
        for (int e = 32 * j; e < 32 * j + 32; ++e) {
          const uint8_t byte = wb[b].qs[32 * (e / 64) + e % 32];
          int32_t q = e % 64 < 32 ? byte & 15 : byte >> 4;
          if constexpr (T == WType::kQ5_K) q += 16 * ((wb[b].qh[e % 32] >> j) & 1);
          dot += q * int32_t{xb[b].qs[e]};
        }
        isum += sc * dot;
        msum += mn * (int32_t{xb[b].bsums[2 * j]} + int32_t{xb[b].bsums[2 * j + 1]});
      }
      sum += f16_to_f32(wb[b].d) * xb[b].d * static_cast<float>(isum);
      sum -= f16_to_f32(wb[b].dmin) * xb[b].d * static_cast<float>(msum);
    }
    return sum;
  } else if constexpr (T == WType::kQ6_K) {
    const BlockQ6_K* wb = reinterpret_cast<const BlockQ6_K*>(row);
    const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(xq);
    float sum = 0;
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      int32_t isum = 0;
      for (int j = 0; j < 16; ++j) {
        int32_t dot = 0;
        for (int e = 16 * j; e < 16 * j + 16; ++e) {
          const int h = e / 128, s = e % 128 / 32, l = e % 32;
          const uint8_t lo = wb[b].ql[64 * h + 32 * (s & 1) + l];
          const int32_t q =
              ((s < 2 ? lo & 15 : lo >> 4) | (((wb[b].qh[32 * h + l] >> (2 * s)) & 3) << 4));
          dot += (q - 32) * int32_t{xb[b].qs[e]};
        }
        isum += int32_t{wb[b].scales[j]} * dot;
      }
      sum += f16_to_f32(wb[b].d) * xb[b].d * static_cast<float>(isum);
    }
    return sum;
  } else {  // q4_1
    const BlockQ4_1* wb = reinterpret_cast<const BlockQ4_1*>(row);
    const BlockQ8_1* xb = static_cast<const BlockQ8_1*>(xq);
    float sum = 0;
    for (int64_t b = 0; b < k / kQK; ++b) {
      int32_t isum = 0;
      for (int i = 0; i < kQK / 2; ++i) {
        isum += (wb[b].qs[i] & 0x0f) * int32_t{xb[b].qs[i]};
        isum += (wb[b].qs[i] >> 4) * int32_t{xb[b].qs[i + kQK / 2]};
      }
      sum += f16_to_f32(wb[b].d) * f16_to_f32(xb[b].d) * static_cast<float>(isum) +
             f16_to_f32(wb[b].m) * f16_to_f32(xb[b].s);
    }
    return sum;
  }
}

template <WType T>
void run(const void* packed, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
         int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool*) {
  const uint8_t* w = static_cast<const uint8_t*>(packed);
  const float* wscales = T == WType::kI8 || T == WType::kI8W
                             ? reinterpret_cast<const float*>(w + row_bytes(T, k) * n)
                             : nullptr;
  void* xq = scratch;
  for (int64_t r = 0; r < m; ++r) {
    const float* xr = x + r * ldx;
    float xs = 1.0f;
    if constexpr (T == WType::kI8) {
      xs = quantize_row_i8(xr, static_cast<int8_t*>(xq), k);
    } else if constexpr (T == WType::kQ8_0 || T == WType::kQ4_0 || T == WType::kQ5_0) {
      quantize_act_q8_0(xr, static_cast<BlockQ8_0*>(xq), k);
    } else if constexpr (T == WType::kQ4_1 || T == WType::kQ5_1) {
      quantize_act_q8_1(xr, static_cast<BlockQ8_1*>(xq), k);
    } else if constexpr (is_kquant_v<T>) {
      quantize_row_q8_K(xr, static_cast<BlockQ8_K*>(xq), k);
    }
    for (int64_t j = 0; j < n; ++j) {
      const float v = dot_row<T>(w, j, k, xr, xq, xs, wscales);
      y[r * ldy + j] = bias ? v + bias[j] : v;
    }
  }
}

template <WType T>
MatmulKernel make() {
  MatmulKernel kern;
  kern.packed_bytes = packed_bytes<T>;
  kern.pack = pack<T>;
  kern.scratch_bytes = scratch_bytes<T>;
  kern.run = run<T>;
  // The file's row-major rows, as they are (i8 / i8w: then the scales, so they do not stack); 64
  // rows of any type are a multiple of 64 bytes.
  if constexpr (T != WType::kI8 && T != WType::kI8W) kern.stack_rows = 64;
  return kern;
}

}  // namespace

MatmulKernel matmul_kernel(WType type) {
  switch (type) {
#define MATMUL_WTYPE(name, Name, family, peak) \
  case WType::k##Name:                         \
    return make<WType::k##Name>();
#include "kernels/matmul.inc"
#undef MATMUL_WTYPE
    case WType::kCount:
      break;
  }
  return MatmulKernel{};
}

}  // namespace laya::kernels::ref
