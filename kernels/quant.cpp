#include "kernels/quant.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <utility>

namespace laya::kernels {

namespace {

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// max |x[i]| into *amax; false when some x[i] is an inf or a NaN (quant.h's activation rule).
bool finite_amax(const float* x, int64_t n, float* amax) {
  float m = 0.0f;
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    m = std::fmax(m, std::fabs(x[i]));
  }
  *amax = m;
  return finite;
}

// The element of largest |x| in a block of kQK (the first of equals), sign kept: q4_0's and
// q5_0's scale is it over -8 / -16.
float signed_amax(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kQK; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

// {min, max} of a block of kQK (q4_1, q5_1).
std::pair<float, float> min_max(const float* x) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < kQK; ++j) {
    min = std::fmin(min, x[j]);
    max = std::fmax(max, x[j]);
  }
  return {min, max};
}

// Low 4 bits of q[j] (j < 16) and q[16 + j] into byte j of qs[16].
void pack_nibbles(const int* q, uint8_t* qs) {
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[kQK / 2 + j] & 15) << 4));
}

// q5: the nibbles as above, bit 4 of q[i] into bit i of the little-endian u32 qh[4].
void pack_q5(const int* q, uint8_t* qs, uint8_t* qh) {
  pack_nibbles(q, qs);
  uint32_t h = 0;
  for (int i = 0; i < kQK; ++i) h |= static_cast<uint32_t>((q[i] >> 4) & 1) << i;
  std::memcpy(qh, &h, 4);
}

}  // namespace

float f16_to_f32(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t o = (uint32_t{h} & 0x7fffu) << 13;
  const uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;  // inf / NaN
  } else if (exp == 0) {
    o += 1u << 23;  // zero / subnormal: renormalize through the FPU
    o = bits(from_bits(o) - from_bits(113u << 23));
  }
  o |= (uint32_t{h} & 0x8000u) << 16;
  return from_bits(o);
}

uint16_t f32_to_f16(float f) {
  uint32_t x = bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  uint32_t o;
  if (x >= 0x47800000u) {  // |f| >= 65536, inf or NaN
    o = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
  } else if (x < 0x38800000u) {  // below the smallest normal half: subnormal or zero
    o = bits(from_bits(x) + 0.5f) - 0x3f000000u;
  } else {
    const uint32_t mant_odd = (x >> 13) & 1u;
    x += ((15u - 127u) << 23) + 0xfffu;
    x += mant_odd;
    o = x >> 13;
  }
  return static_cast<uint16_t>(o | sign);
}

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) y[b].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
  }
}

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[b].qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
      sum += y[b].qs[j];
    }
    y[b].d = f32_to_f16(d);
    y[b].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const float d = signed_amax(x) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    int q[kQK];
    for (int j = 0; j < kQK; ++j)
      q[j] = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const auto [min, max] = min_max(x);
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    y[b].m = f32_to_f16(min);
    int q[kQK];
    for (int j = 0; j < kQK; ++j)
      q[j] = std::min(15, static_cast<int>(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
    pack_nibbles(q, y[b].qs);
  }
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const float d = signed_amax(x) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    int q[kQK];
    for (int j = 0; j < kQK; ++j)
      q[j] = std::min(31, static_cast<int>(static_cast<int8_t>(x[j] * id + 16.5f)));
    pack_q5(q, y[b].qs, y[b].qh);
  }
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    const auto [min, max] = min_max(x);
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    y[b].m = f32_to_f16(min);
    int q[kQK];  // no clamp (ggml's): the largest element rounds to 31
    for (int j = 0; j < kQK; ++j) q[j] = static_cast<uint8_t>((x[j] - min) * id + 0.5f);
    pack_q5(q, y[b].qs, y[b].qh);
  }
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQK; ++j) y[b * kQK + j] = d * static_cast<float>(x[b].qs[j]);
  }
}

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[b * kQK + j] = d * static_cast<float>((x[b].qs[j] & 0x0f) - 8);
      y[b * kQK + kQK / 2 + j] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16_to_f32(x[b].d);
    const float m = f16_to_f32(x[b].m);
    for (int j = 0; j < kQK / 2; ++j) {
      y[b * kQK + j] = d * static_cast<float>(x[b].qs[j] & 0x0f) + m;
      y[b * kQK + kQK / 2 + j] = d * static_cast<float>(x[b].qs[j] >> 4) + m;
    }
  }
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int i = 0; i < kQK; ++i)
      y[b * kQK + i] = d * static_cast<float>(q5_value(x[b].qh, x[b].qs, i) - 16);
  }
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b) {
    const float d = f16_to_f32(x[b].d);
    const float m = f16_to_f32(x[b].m);
    for (int i = 0; i < kQK; ++i)
      y[b * kQK + i] = d * static_cast<float>(q5_value(x[b].qh, x[b].qs, i)) + m;
  }
}

void quantize_act_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0.0f;
    const bool finite = finite_amax(x, kQK, &amax);
    const float d = finite ? amax / 127.0f : NAN;
    const float id = finite && amax >= kActMinAmax ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j)
      y[b].qs[j] = id == 0.0f ? 0 : static_cast<int8_t>(std::nearbyintf(x[j] * id));
  }
}

void quantize_act_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float amax = 0.0f;
    const bool finite = finite_amax(x, kQK, &amax);
    const float d = finite ? amax / 127.0f : NAN;
    const float id = finite && amax >= kActMinAmax ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[b].qs[j] = id == 0.0f ? 0 : static_cast<int8_t>(std::nearbyintf(x[j] * id));
      sum += y[b].qs[j];
    }
    y[b].d = f32_to_f16(d);
    y[b].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

// ---- K-quants ------------------------------------------------------------------------------------

namespace {

int round_int(float v) {
  return static_cast<int>(std::nearbyintf(v));
}

// Weighted fit of x[32] ~= scale * q + mn, q in [0, nmax], mn <= 0: the start from the range,
// then nstep + 1 candidate inverse scales (rmin + rdelta * i + nmax) / range with the closed-form
// least-squares scale and offset for each rounding, the best weighted squared error kept.
// q -> L; returns scale and writes -mn to *neg_min.
float fit_scale_min(const float* x, const float* w, int nmax, float rmin, float rdelta, int nstep,
                    uint8_t* L, float* neg_min) {
  constexpr int n = 32;
  float lo = x[0], hi = x[0], sum_w = w[0], sum_x = w[0] * x[0];
  for (int i = 1; i < n; ++i) {
    lo = x[i] < lo ? x[i] : lo;
    hi = x[i] > hi ? x[i] : hi;
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (lo > 0) lo = 0;
  if (hi == lo) {
    std::memset(L, 0, n);
    *neg_min = -lo;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (hi - lo);
  float scale = 1 / iscale;
  float best = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(0, std::min(nmax, round_int(iscale * (x[i] - lo))));
    L[i] = static_cast<uint8_t>(l);
    const float diff = scale * static_cast<float>(l) + lo - x[i];
    best += w[i] * (diff * diff);
  }
  uint8_t cand[n];
  for (int step = 0; step <= nstep; ++step) {
    iscale = (rmin + rdelta * static_cast<float>(step) + static_cast<float>(nmax)) / (hi - lo);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(0, std::min(nmax, round_int(iscale * (x[i] - lo))));
      cand[i] = static_cast<uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float s = (sum_w * sum_xl - sum_x * sum_l) / det;
    float m = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (m > 0) {
      m = 0;
      s = sum_xl / sum_l2;
    }
    float err = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = s * static_cast<float>(cand[i]) + m - x[i];
      err += w[i] * (diff * diff);
    }
    if (err < best) {
      std::memcpy(L, cand, n);
      best = err;
      scale = s;
      lo = m;
    }
  }
  *neg_min = -lo;
  return scale;
}

// The shared part of q4_K / q5_K: fits, 6-bit scales and mins, final quants L[256] in
// [0, nmax]. Writes d, dmin, scales of the block.
void quantize_superblock_k(const float* x, int nmax, float rmin, int nstep, uint16_t* d,
                           uint16_t* dmin, uint8_t* packed, uint8_t* L) {
  float scales[8], mins[8], w[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xj = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
    const float av = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) w[l] = av + std::fabs(xj[l]);
    scales[j] = fit_scale_min(xj, w, nmax, rmin, 0.1f, nstep, L + 32 * j, &mins[j]);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  std::memset(packed, 0, 12);
  for (int j = 0; j < 8; ++j) {
    const int ls =
        std::min(63, static_cast<int>(static_cast<uint8_t>(round_int(inv_scale * scales[j]))));
    const int lm =
        std::min(63, static_cast<int>(static_cast<uint8_t>(round_int(inv_min * mins[j]))));
    if (j < 4) {
      packed[j] = static_cast<uint8_t>(ls);
      packed[j + 4] = static_cast<uint8_t>(lm);
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 15) | ((lm & 15) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  *d = f32_to_f16(max_scale / 63.0f);
  *dmin = f32_to_f16(max_min / 63.0f);
  const float fd = f16_to_f32(*d), fmin = f16_to_f32(*dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    kquant_scale_min(packed, j, &sc, &m);
    const float dj = fd * static_cast<float>(sc);
    if (dj == 0.0f) continue;  // keeps the fit's quants, as ggml does
    const float mj = fmin * static_cast<float>(m);
    for (int i = 0; i < 32; ++i)
      L[32 * j + i] =
          static_cast<uint8_t>(std::max(0, std::min(nmax, round_int((x[32 * j + i] + mj) / dj))));
  }
}

// Symmetric fit of x[16] ~= scale * (q - 32), q in [0, 63], weights x^2: the start -32 / max and
// 18 neighbours -(32 + 0.1 i) / max, the best weighted least-squares scale kept. q -> L.
float fit_scale_q6(const float* x, uint8_t* L) {
  constexpr int n = 16, nmax = 32;
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < 1e-15f) {
    std::memset(L, 0, n);
    return 0.0f;
  }
  auto quant = [&](float iscale, int i) {
    return std::max(-nmax, std::min(nmax - 1, round_int(iscale * x[i])));
  };
  float iscale = -static_cast<float>(nmax) / max;
  float sum_lx = 0, sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = quant(iscale, i);
    L[i] = static_cast<uint8_t>(l + nmax);
    const float w = x[i] * x[i], fl = static_cast<float>(l);
    sum_lx += w * x[i] * fl;
    sum_l2 += w * fl * fl;
  }
  float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;
  for (int step = -9; step <= 9; ++step) {
    if (step == 0) continue;
    iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(step)) / max;
    sum_lx = sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i], fl = static_cast<float>(quant(iscale, i));
      sum_lx += w * x[i] * fl;
      sum_l2 += w * fl * fl;
    }
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(quant(iscale, i) + nmax);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

}  // namespace

void quantize_row_q4_K(const float* x, BlockQ4_K* y, int64_t n) {
  uint8_t L[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    quantize_superblock_k(x, 15, -1.0f, 20, &y[b].d, &y[b].dmin, y[b].scales, L);
    for (int p = 0; p < 4; ++p)
      for (int l = 0; l < 32; ++l)
        y[b].qs[32 * p + l] = static_cast<uint8_t>(L[64 * p + l] | (L[64 * p + 32 + l] << 4));
  }
}

void quantize_row_q5_K(const float* x, BlockQ5_K* y, int64_t n) {
  uint8_t L[kQK_K];
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    quantize_superblock_k(x, 31, -0.5f, 15, &y[b].d, &y[b].dmin, y[b].scales, L);
    std::memset(y[b].qh, 0, sizeof y[b].qh);
    for (int e = 0; e < kQK_K; ++e)
      if (L[e] > 15) y[b].qh[e % 32] |= static_cast<uint8_t>(1u << (e / 32));
    for (int p = 0; p < 4; ++p)
      for (int l = 0; l < 32; ++l)
        y[b].qs[32 * p + l] =
            static_cast<uint8_t>((L[64 * p + l] & 15) | ((L[64 * p + 32 + l] & 15) << 4));
  }
}

void quantize_row_q6_K(const float* x, BlockQ6_K* y, int64_t n) {
  uint8_t L[kQK_K];
  float scales[16];
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    float max_scale = 0, max_abs = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = fit_scale_q6(x + 16 * j, L + 16 * j);
      if (std::fabs(scales[j]) > max_abs) {
        max_abs = std::fabs(scales[j]);
        max_scale = scales[j];
      }
    }
    BlockQ6_K& blk = y[b];
    if (max_abs < 1e-15f) {
      std::memset(&blk, 0, sizeof blk);
      continue;
    }
    const float iscale = -128.0f / max_scale;
    blk.d = f32_to_f16(1 / iscale);
    for (int j = 0; j < 16; ++j)
      blk.scales[j] = static_cast<int8_t>(std::min(127, round_int(iscale * scales[j])));
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(blk.d) * static_cast<float>(blk.scales[j]);
      if (d == 0.0f) continue;
      for (int i = 0; i < 16; ++i)
        L[16 * j + i] =
            static_cast<uint8_t>(std::max(-32, std::min(31, round_int(x[16 * j + i] / d))) + 32);
    }
    for (int h = 0; h < 2; ++h) {
      const uint8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        blk.ql[64 * h + l] = static_cast<uint8_t>((Lh[l] & 15) | ((Lh[64 + l] & 15) << 4));
        blk.ql[64 * h + 32 + l] =
            static_cast<uint8_t>((Lh[32 + l] & 15) | ((Lh[96 + l] & 15) << 4));
        blk.qh[32 * h + l] =
            static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[32 + l] >> 4) << 2) |
                                 ((Lh[64 + l] >> 4) << 4) | ((Lh[96 + l] >> 4) << 6));
      }
    }
  }
}

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      int sc, m;
      kquant_scale_min(x[b].scales, e / 32, &sc, &m);
      const uint8_t byte = x[b].qs[32 * (e / 64) + e % 32];
      const int q = e % 64 < 32 ? byte & 15 : byte >> 4;
      *y++ = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    }
  }
}

void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      int sc, m;
      kquant_scale_min(x[b].scales, e / 32, &sc, &m);
      const uint8_t byte = x[b].qs[32 * (e / 64) + e % 32];
      const int q =
          (e % 64 < 32 ? byte & 15 : byte >> 4) + 16 * ((x[b].qh[e % 32] >> (e / 32)) & 1);
      *y++ = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(m);
    }
  }
}

void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, s = e % 128 / 32, l = e % 32;
      const uint8_t lo = x[b].ql[64 * h + 32 * (s & 1) + l];
      const int q =
          ((s < 2 ? lo & 15 : lo >> 4) | (((x[b].qh[32 * h + l] >> (2 * s)) & 3) << 4)) - 32;
      *y++ = d * static_cast<float>(x[b].scales[e / 16]) * static_cast<float>(q);
    }
  }
}

void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK_K; ++b, x += kQK_K) {
    float amax = 0, max = 0;
    bool finite = true;
    for (int j = 0; j < kQK_K; ++j) {
      finite = finite && std::isfinite(x[j]);
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (!finite || amax < kActMinAmax) {  // ggml: amax == 0 only (the rest is undefined there)
      std::memset(&y[b], 0, sizeof y[b]);
      if (!finite) y[b].d = NAN;
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < kQK_K; ++j)
      y[b].qs[j] = static_cast<int8_t>(std::min(127, round_int(iscale * x[j])));
    for (int g = 0; g < kQK_K / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * g + i];
      y[b].bsums[g] = static_cast<int16_t>(sum);
    }
    y[b].d = 1 / iscale;
  }
}

float quantize_row_i8(const float* x, int8_t* q, int64_t n) {
  float amax = 0.0f;
  const bool finite = finite_amax(x, n, &amax);
  if (!finite || amax < kActMinAmax) {
    for (int64_t i = 0; i < n; ++i) q[i] = 0;
    return finite ? 1.0f : NAN;
  }
  const float scale = amax / 127.0f;
  const float inv = 127.0f / amax;
  for (int64_t i = 0; i < n; ++i) {
    const float r = std::nearbyintf(x[i] * inv);
    q[i] = static_cast<int8_t>(std::fmax(-127.0f, std::fmin(127.0f, r)));
  }
  return scale;
}

}  // namespace laya::kernels
