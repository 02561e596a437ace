#include "kernels/quant.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

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
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      const int hi =
          std::min(15, static_cast<int>(static_cast<int8_t>(x[kQK / 2 + j] * id + 8.5f)));
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < kQK; ++j) {
      min = std::fmin(min, x[j]);
      max = std::fmax(max, x[j]);
    }
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    y[b].m = f32_to_f16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::min(15, static_cast<int>(static_cast<int8_t>((x[j] - min) * id + 0.5f)));
      const int hi =
          std::min(15, static_cast<int>(static_cast<int8_t>((x[kQK / 2 + j] - min) * id + 0.5f)));
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
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
