// Scalar number formats shared by every kernel family: IEEE half and bfloat16 conversions, and the
// GGUF block formats (bit-compatible with ggml-common.h, so GGUF weights are used as they are).
// Everything here is the reference definition; SIMD kernels must agree with it bit for bit where
// the format is integer (quantize_row_*), and within the tolerance their tests name elsewhere.
#pragma once

#include <cstdint>
#include <cstring>

namespace laya::kernels {

// ---- half / bfloat16 -------------------------------------------------------------------------

float f16_to_f32(uint16_t h);
// Round to nearest even; overflow -> inf; NaN stays NaN.
uint16_t f32_to_f16(float f);

inline float bf16_to_f32(uint16_t b) {
  const uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
// Round to nearest even (NaN stays a quiet NaN), as vcvtneps2bf16 does.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// ---- GGUF blocks of 32 -----------------------------------------------------------------------

inline constexpr int kQK = 32;  // elements per block

// x[i] = d * qs[i]
struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK];
};
// x[i] = d * ((qs[i % 16] >> (4 * (i / 16))) & 15) - 8 * d: element i < 16 in the low nibble of
// byte i, element 16 + i in its high nibble.
struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};
// x[i] = d * nibble_i + m (same nibble order as q4_0)
struct BlockQ4_1 {
  uint16_t d;  // f16
  uint16_t m;  // f16
  uint8_t qs[kQK / 2];
};
// 5-bit blocks: element i's low 4 bits as in q4_0 (byte i % 16, low nibble for i < 16), its
// fifth bit is bit i of qh (little-endian u32): q = nibble | ((qh >> i) & 1) << 4, in [0, 31].
//   q5_0: x[i] = d * (q - 16)          q5_1: x[i] = d * q + m
struct BlockQ5_0 {
  uint16_t d;     // f16
  uint8_t qh[4];  // fifth bits, little-endian u32
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d;  // f16
  uint16_t m;  // f16
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
// The 5-bit value of element i (0..31) of a q5_0 / q5_1 block's qh and qs.
inline int q5_value(const uint8_t* qh, const uint8_t* qs, int i) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  const int nib = i < kQK / 2 ? qs[i] & 15 : qs[i - kQK / 2] >> 4;
  return nib | static_cast<int>(((h >> i) & 1u) << 4);
}
// Activation blocks (ggml's q8_1): qs = round(x / d); s = d * sum(qs) (f16), used by q4_1 dots.
struct BlockQ8_1 {
  uint16_t d;  // f16
  uint16_t s;  // f16
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 &&
              sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_1) == 36);

// Quantize n values (n % 32 == 0) the way ggml's reference quantizers do (quantize_row_*_ref):
//  q8_0: d = amax / 127, q = round(x / d)
//  q4_0: d = max / -8 (max = the value of largest magnitude), q = min(15, (int8)(x / d + 8.5))
//  q4_1: d = (max - min) / 15, m = min, q = min(15, (int8)((x - min) / d + 0.5))
//  q5_0: d = max / -16, q = min(31, (int8)(x / d + 16.5))
//  q5_1: d = (max - min) / 31, m = min, q = (uint8)((x - min) / d + 0.5)
//  q8_1: as q8_0 plus s = d * sum(q)
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n);
void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n);

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n);

// ---- GGUF K-quants: super-blocks of 256 -------------------------------------------------------
//
// Bit-compatible with ggml-common.h (block_q4_K / block_q5_K / block_q6_K / block_q8_K). Element e
// (0..255) of a super-block, and the exact dequantization (f32 arithmetic, each operation rounded,
// no fused multiply-add; the same as ggml's dequantize_row_* and gguf-py's numpy code):
//
//  q4_K  sub-block j = e / 32 (8 of 32), its 6-bit scale sc_j and min m_j from scales[12]:
//          j < 4: sc = scales[j] & 63,                        m = scales[j + 4] & 63
//          j >= 4: sc = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4,
//                  m = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4
//        q = nibble of byte qs[32 * (e / 64) + e % 32]: low for e % 64 < 32, high otherwise
//        x = (d * sc_j) * q - dmin * m_j
//  q5_K  as q4_K with q += 16 * bit j of qh[e % 32] (q in [0, 31])
//  q6_K  sub-block j = e / 16 (16 of 16) with int8 scale scales[j]; h = e / 128, s = e % 128 / 32,
//        l = e % 32: q = nibble of ql[64h + 32(s & 1) + l] (low for s < 2) | bits 2s..2s+1 of
//        qh[32h + l] << 4, in [0, 63];  x = (d * scales[j]) * (q - 32)
//  q8_K  (activations of K-quant dot products) x ~= d * qs[e], f32 d; bsums[i] = sum of qs[16i..]
inline constexpr int kQK_K = 256;  // elements per super-block

struct BlockQ4_K {
  uint16_t d;     // f16 scale of the sub-block scales
  uint16_t dmin;  // f16 scale of the sub-block mins
  uint8_t scales[12];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;  // f16
};
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};
static_assert(sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 &&
              sizeof(BlockQ8_K) == 292);

// Sub-block j's 6-bit scale and min of a q4_K / q5_K super-block (the layout above).
inline void kquant_scale_min(const uint8_t* scales, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = scales[j] & 63;
    *m = scales[j + 4] & 63;
  } else {
    *sc = (scales[j + 4] & 15) | ((scales[j - 4] >> 6) << 4);
    *m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
  }
}

// Weight quantizers (n % 256 == 0), the algorithms of ggml's quantize_row_*_ref without an
// importance matrix, re-implemented with the same f32 operation order:
//  q4_K / q5_K: per sub-block of 32, weights w = sqrt(mean(x^2)) + |x|, a weighted least-squares
//    fit x ~= scale * q - min (min >= 0) searched over 21 (q5_K: 16) candidate inverse scales;
//    the 8 scales and mins are then quantized to 6 bits against the largest of each (d, dmin),
//    and x re-quantized with the rounded scales.
//  q6_K: per sub-block of 16, the best of 19 symmetric scales around -32 / max (weights x^2),
//    the 16 scales quantized to int8 against the largest, x re-quantized with them.
void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n);
void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n);
void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n);

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n);

// q8_K, ggml's quantize_row_q8_K_ref (which ggml's x86 build uses for activations): per
// super-block, max = the value of largest magnitude; |max| < kActMinAmax (below) gives d = 0 and
// zeros (ggml: max == 0; a tiny max overflows iscale there); a super-block holding an inf or a
// NaN gives zeros and d = NaN (every output it feeds is NaN, the activation quantizers' rule
// below); else iscale = -127 / max, q = min(127, nearbyint(iscale * x)) (nearest even, as ggml's
// nearest_int), d = 1 / iscale, bsums. SIMD quantizers must reproduce it bit for bit.
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n);

// ---- activation quantizers (the matmul kernels' on-the-fly side) ------------------------------

// Every activation quantizer is defined for every float input, so no float-to-int conversion ever
// sees a value outside [-127, 127]: a block (or i8 row) holding an inf or a NaN quantizes to q = 0
// with a NaN scale, so every output it feeds is NaN (as the float product would be); one whose
// amax is below kActMinAmax quantizes to q = 0 (1 / d would overflow; its f16 d is 0 anyway).
inline constexpr float kActMinAmax = 127.0f * 1.17549435e-38f;  // 127 * FLT_MIN

// Like quantize_row_q8_0 / _q8_1 but rounding to nearest EVEN (what SIMD converts do), so the
// reference and every SIMD kernel produce the same blocks bit for bit:
//   d = amax / 127, id = amax >= kActMinAmax ? 1 / d : 0, q = nearbyint(x * id),
//   stored d = f16(d) (f16(NaN) for a non-finite block, q = 0).
void quantize_act_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_act_q8_1(const float* x, BlockQ8_1* y, int64_t n);

// Symmetric int8 per row (activations per token, weights per output row):
//   amax < kActMinAmax (all zeros, or all tiny): scale = 1, q = 0; a non-finite row: scale = NaN,
//   q = 0; else inv = 127 / amax, scale = amax / 127, q = clamp(nearbyint(x * inv), -127, 127).
//   Returns the scale.
float quantize_row_i8(const float* x, int8_t* q, int64_t n);

}  // namespace laya::kernels
