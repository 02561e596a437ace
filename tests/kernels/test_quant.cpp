// Number formats: half / bfloat16 conversions and the GGUF block quantizers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/quant.h"

using namespace laya::kernels;

TEST_CASE("f16 round trip is exact for every half value") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    const float f = f16_to_f32(v);
    if (std::isnan(f)) {
      CHECK(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    REQUIRE(f32_to_f16(f) == v);
  }
}

TEST_CASE("f16 rounding: nearest even, overflow to inf, underflow to subnormals") {
  CHECK(f32_to_f16(1.0f) == 0x3c00);
  CHECK(f32_to_f16(65504.0f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // halfway to the next binade rounds up to inf
  CHECK(f32_to_f16(1e9f) == 0x7c00);
  CHECK(f32_to_f16(-1e9f) == 0xfc00);
  CHECK(f32_to_f16(5.9604645e-8f) == 0x0001);       // smallest subnormal
  CHECK(f32_to_f16(2.9802322e-8f) == 0x0000);       // half of it: ties to even (0)
  CHECK(f32_to_f16(1.0f + 1.0f / 2048) == 0x3c00);  // tie between 0x3c00 and 0x3c01 -> even
  CHECK(f32_to_f16(1.0f + 3.0f / 2048) == 0x3c02);  // tie between 0x3c01 and 0x3c02 -> even
  CHECK(f16_to_f32(0x8000) == 0.0f);
  CHECK(std::signbit(f16_to_f32(0x8000)));
}

TEST_CASE("bf16 rounding is nearest even") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  uint32_t u = 0x3f808000u;  // exactly halfway between 0x3f80 and 0x3f81 -> even (0x3f80)
  float f;
  std::memcpy(&f, &u, 4);
  CHECK(f32_to_bf16(f) == 0x3f80);
  u = 0x3f818000u;  // halfway between 0x3f81 and 0x3f82 -> 0x3f82
  std::memcpy(&f, &u, 4);
  CHECK(f32_to_bf16(f) == 0x3f82);
  CHECK(bf16_to_f32(0x3f80) == 1.0f);
}

TEST_CASE("block quantizers: known values and error bounds") {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> x(256), y(256);
  for (float& v : x) v = dist(rng);

  std::vector<BlockQ8_0> q8(256 / kQK);
  quantize_row_q8_0(x.data(), q8.data(), 256);
  dequantize_row_q8_0(q8.data(), y.data(), 256);
  for (int b = 0; b < 256 / kQK; ++b) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[b * kQK + j]));
    for (int j = 0; j < kQK; ++j)  // half a step plus the f16 rounding of d
      CHECK(std::fabs(x[b * kQK + j] - y[b * kQK + j]) <= amax / 127 * 0.51f + amax * 1e-3f);
  }

  std::vector<BlockQ4_0> q4(256 / kQK);
  quantize_row_q4_0(x.data(), q4.data(), 256);
  dequantize_row_q4_0(q4.data(), y.data(), 256);
  for (int b = 0; b < 256 / kQK; ++b) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::fmax(amax, std::fabs(x[b * kQK + j]));
    // d = max / -8: the side opposite to the max only reaches 7/8 amax and clips there, so the
    // error bound is a whole step (amax / 8), not half of one.
    for (int j = 0; j < kQK; ++j)
      CHECK(std::fabs(x[b * kQK + j] - y[b * kQK + j]) <= amax / 8 + amax * 1e-3f);
  }

  std::vector<BlockQ4_1> q41(256 / kQK);
  quantize_row_q4_1(x.data(), q41.data(), 256);
  dequantize_row_q4_1(q41.data(), y.data(), 256);
  for (int b = 0; b < 256 / kQK; ++b) {
    float lo = 1e30f, hi = -1e30f;
    for (int j = 0; j < kQK; ++j)
      lo = std::fmin(lo, x[b * kQK + j]), hi = std::fmax(hi, x[b * kQK + j]);
    for (int j = 0; j < kQK; ++j)
      CHECK(std::fabs(x[b * kQK + j] - y[b * kQK + j]) <=
            (hi - lo) / 15 * 0.51f + (std::fabs(lo) + std::fabs(hi)) * 1e-3f);
  }

  // A hand-checked q4_0 block: max magnitude -8 -> d = 1, nibble = x + 8.
  float v[32];
  for (int j = 0; j < 32; ++j) v[j] = static_cast<float>(j % 16) - 8.0f;
  BlockQ4_0 blk;
  quantize_row_q4_0(v, &blk, 32);
  CHECK(f16_to_f32(blk.d) == 1.0f);
  CHECK(blk.qs[0] == 0x00);
  CHECK(blk.qs[15] == 0xff);
}

TEST_CASE("int8 row quantizer: symmetric, exact at the extremes, zero row") {
  std::vector<float> x = {-2.0f, 1.0f, 0.0f, 2.0f};
  std::vector<int8_t> q(4);
  const float s = quantize_row_i8(x.data(), q.data(), 4);
  CHECK(s == doctest::Approx(2.0f / 127));
  CHECK(q[0] == -127);
  CHECK(q[3] == 127);
  CHECK(q[1] == 64);  // 63.5 rounds to even
  std::vector<float> z(4, 0.0f);
  CHECK(quantize_row_i8(z.data(), q.data(), 4) == 1.0f);
  CHECK(q[0] == 0);
}
