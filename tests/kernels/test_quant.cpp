// Number formats: half / bfloat16 conversions and the GGUF block quantizers.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <random>
#include <vector>

#include "kernels/quant.h"
#include "kernels/ref/ref.h"

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

// ---- K-quants ------------------------------------------------------------------------------------

namespace {

// The ggml fixtures (tools/reference/make_kquant_fixture.py, make_q5_fixture.py), recorded from
// ggml's own C functions, share a header: 4 magic bytes, u32 version 1, u32 n_rows, k, n_x, f32 w
// [n_rows, k], f32 x [n_x, k]; per-type sections follow, read with take().
struct GgmlFixture {
  uint32_t n_rows = 0, k = 0, n_x = 0;
  std::vector<float> w, x;
  std::vector<uint8_t> bytes;
  size_t at = 0;

  void take(void* dst, size_t n) {
    REQUIRE(at + n <= bytes.size());
    std::memcpy(dst, bytes.data() + at, n);
    at += n;
  }
  // Reads tests/fixtures/gguf/NAME and its header.
  void open(const std::string& name, const char* magic) {
    const char* dir = std::getenv("LAYA_FIXTURES");
    REQUIRE_MESSAGE(dir != nullptr, "LAYA_FIXTURES is not set (meson test sets it)");
    const std::string path = std::string(dir) + "/gguf/" + name;
    std::FILE* f = std::fopen(path.c_str(), "rb");
    REQUIRE_MESSAGE(f != nullptr, "cannot open ", path);
    uint8_t buf[65536];
    for (size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;)
      bytes.insert(bytes.end(), buf, buf + got);
    std::fclose(f);
    char m[4];
    uint32_t version;
    take(m, 4);
    REQUIRE(std::memcmp(m, magic, 4) == 0);
    take(&version, 4);
    REQUIRE(version == 1);
    take(&n_rows, 4);
    take(&k, 4);
    take(&n_x, 4);
    w.resize(size_t{n_rows} * k);
    x.resize(size_t{n_x} * k);
    take(w.data(), w.size() * 4);
    take(x.data(), x.size() * 4);
  }
};

// tests/fixtures/gguf/kquants-ggml.bin (layout: tools/reference/make_kquant_fixture.py).
struct KquantFixture : GgmlFixture {
  struct PerType {
    std::vector<uint8_t> blocks;
    std::vector<float> deq, dot;
  } types[3];  // q4_K, q5_K, q6_K
  std::vector<uint8_t> q8k;
};

const size_t kKBlockBytes[3] = {sizeof(BlockQ4_K), sizeof(BlockQ5_K), sizeof(BlockQ6_K)};

KquantFixture load_kquant_fixture() {
  KquantFixture fx;
  fx.open("kquants-ggml.bin", "LKQF");
  for (int t = 0; t < 3; ++t) {
    fx.types[t].blocks.resize(size_t{fx.n_rows} * fx.k / kQK_K * kKBlockBytes[t]);
    fx.types[t].deq.resize(fx.w.size());
    fx.types[t].dot.resize(size_t{fx.n_x} * fx.n_rows);
    fx.take(fx.types[t].blocks.data(), fx.types[t].blocks.size());
    fx.take(fx.types[t].deq.data(), fx.types[t].deq.size() * 4);
    fx.take(fx.types[t].dot.data(), fx.types[t].dot.size() * 4);
  }
  fx.q8k.resize(size_t{fx.n_x} * fx.k / kQK_K * sizeof(BlockQ8_K));
  fx.take(fx.q8k.data(), fx.q8k.size());
  REQUIRE(fx.at == fx.bytes.size());
  return fx;
}

void quantize_k(int t, const float* x, uint8_t* y, int64_t n) {
  if (t == 0) quantize_row_q4_K(x, reinterpret_cast<BlockQ4_K*>(y), n);
  if (t == 1) quantize_row_q5_K(x, reinterpret_cast<BlockQ5_K*>(y), n);
  if (t == 2) quantize_row_q6_K(x, reinterpret_cast<BlockQ6_K*>(y), n);
}
void dequantize_k(int t, const uint8_t* x, float* y, int64_t n) {
  if (t == 0) dequantize_row_q4_K(reinterpret_cast<const BlockQ4_K*>(x), y, n);
  if (t == 1) dequantize_row_q5_K(reinterpret_cast<const BlockQ5_K*>(x), y, n);
  if (t == 2) dequantize_row_q6_K(reinterpret_cast<const BlockQ6_K*>(x), y, n);
}
const std::string kKNames[3] = {"q4_K", "q5_K", "q6_K"};

}  // namespace

TEST_CASE("K-quants: dequantization equals ggml's bit for bit") {
  const KquantFixture fx = load_kquant_fixture();
  for (int t = 0; t < 3; ++t) {
    std::vector<float> y(fx.w.size());
    dequantize_k(t, fx.types[t].blocks.data(), y.data(), static_cast<int64_t>(y.size()));
    CHECK_MESSAGE(std::memcmp(y.data(), fx.types[t].deq.data(), y.size() * 4) == 0, kKNames[t]);
  }
  // Every bit pattern of a super-block decodes like a hand-written reading of the layout: random
  // bytes, f16 scales kept finite.
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int t = 0; t < 3; ++t) {
    std::vector<uint8_t> blk(kKBlockBytes[t]);
    for (uint8_t& v : blk) v = static_cast<uint8_t>(byte(rng));
    const size_t d_at = t == 2 ? 208 : 0;
    const uint16_t one = 0x3c00, half = 0x3800;  // f16 1.0 and 0.5
    std::memcpy(blk.data() + d_at, &one, 2);
    if (t < 2) std::memcpy(blk.data() + 2, &half, 2);
    std::vector<float> y(kQK_K);
    dequantize_k(t, blk.data(), y.data(), kQK_K);
    for (int e = 0; e < kQK_K; ++e) {
      float want;
      if (t == 2) {  // ql[128] qh[64] scales[16]: 6-bit q - 32, int8 scale per 16
        const int h = e / 128, s = e % 128 / 32, l = e % 32;
        const int lo = blk[64 * h + 32 * (s % 2) + l];
        const int q = ((s < 2 ? lo : lo >> 4) & 15) | ((blk[128 + 32 * h + l] >> (2 * s)) & 3) << 4;
        want =
            static_cast<float>(static_cast<int8_t>(blk[192 + e / 16])) * static_cast<float>(q - 32);
      } else {
        const int j = e / 32;
        const uint8_t* sc = blk.data() + 4;
        const int s6 = j < 4 ? sc[j] & 63 : (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
        const int m6 = j < 4 ? sc[j + 4] & 63 : (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
        const uint8_t* qs = blk.data() + (t == 1 ? 48 : 16);
        int q = (qs[32 * (e / 64) + e % 32] >> (e % 64 < 32 ? 0 : 4)) & 15;
        if (t == 1) q += ((blk[16 + e % 32] >> j) & 1) * 16;
        want = static_cast<float>(s6) * static_cast<float>(q) - 0.5f * static_cast<float>(m6);
      }
      REQUIRE_MESSAGE(y[e] == want, kKNames[t], " element ", e);
    }
  }
}

TEST_CASE("K-quants: quantizers produce ggml's reference bytes") {
  const KquantFixture fx = load_kquant_fixture();
  for (int t = 0; t < 3; ++t) {
    const size_t row_bytes = fx.k / kQK_K * kKBlockBytes[t];
    for (uint32_t r = 0; r < fx.n_rows; ++r) {
      std::vector<uint8_t> got(row_bytes);
      quantize_k(t, fx.w.data() + size_t{r} * fx.k, got.data(), fx.k);
      CHECK_MESSAGE(
          std::memcmp(got.data(), fx.types[t].blocks.data() + r * row_bytes, row_bytes) == 0,
          kKNames[t], " row ", r);
    }
  }
}

TEST_CASE("K-quants: q8_K activation quantizer equals ggml's bit for bit") {
  const KquantFixture fx = load_kquant_fixture();
  std::vector<BlockQ8_K> got(fx.x.size() / kQK_K);
  quantize_row_q8_K(fx.x.data(), got.data(), static_cast<int64_t>(fx.x.size()));
  CHECK(std::memcmp(got.data(), fx.q8k.data(), fx.q8k.size()) == 0);
}

TEST_CASE("K-quants: round trip error within the format's resolution") {
  // Gaussian rows: the NMSE of quantize -> dequantize is ~3e-3 (q4_K), ~8e-4 (q5_K) and ~2e-4
  // (q6_K) for ggml's quantizers; a broken layout or fit gives O(1).
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t n = 16 * kQK_K;
  std::vector<float> x(n), y(n);
  for (float& v : x) v = dist(rng);
  const double limit[3] = {6e-3, 1.6e-3, 4e-4};
  for (int t = 0; t < 3; ++t) {
    std::vector<uint8_t> q(n / kQK_K * kKBlockBytes[t]);
    quantize_k(t, x.data(), q.data(), n);
    dequantize_k(t, q.data(), y.data(), n);
    double err = 0, ref = 0;
    for (int64_t i = 0; i < n; ++i) {
      err += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
      ref += double{x[i]} * x[i];
    }
    INFO(kKNames[t], " NMSE ", err / ref);
    CHECK(err / ref < limit[t]);
    CHECK(err / ref > limit[t] / 20);  // really quantized to that many bits
  }
  // Zeros stay zeros.
  std::vector<float> z(kQK_K, 0.0f), out(kQK_K, 1.0f);
  for (int t = 0; t < 3; ++t) {
    std::vector<uint8_t> q(kKBlockBytes[t]);
    quantize_k(t, z.data(), q.data(), kQK_K);
    dequantize_k(t, q.data(), out.data(), kQK_K);
    CHECK(std::count(out.begin(), out.end(), 0.0f) == kQK_K);
  }
}

TEST_CASE("K-quants: reference matmul equals ggml's vec_dot up to f32 summation order") {
  // Both sides sum the same per-super-block terms (d_w d_x) isum and (dmin_w d_x) msum with exact
  // int32 isum / msum, in different f32 orders: |ours - ggml| <= 2 * n_terms * 2^-24 * S, where
  // S <= sum_e (|d sc q| + |dmin m|) * |d_x qx| <= sum_e (|w_e| + 2 |dmin m|) * 1.01 |x_e|.
  const KquantFixture fx = load_kquant_fixture();
  const WType wt[3] = {WType::kQ4_K, WType::kQ5_K, WType::kQ6_K};
  for (int t = 0; t < 3; ++t) {
    const MatmulKernel kern = ref::matmul_kernel(wt[t]);
    const int64_t n = fx.n_rows, k = fx.k, m = fx.n_x;
    std::vector<uint8_t> packed(kern.packed_bytes(n, k));
    kern.pack(fx.types[t].blocks.data(), nullptr, n, k, packed.data());
    std::vector<uint8_t> scratch(kern.scratch_bytes(m, n, k, 1));
    std::vector<float> y(static_cast<size_t>(m * n));
    kern.run(packed.data(), fx.x.data(), k, y.data(), n, nullptr, m, n, k, scratch.data(), nullptr);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t r = 0; r < n; ++r) {
        double s = 0;
        for (int64_t e = 0; e < k; ++e) {
          double mins = 0;
          if (t < 2) {
            const uint8_t* blk = fx.types[t].blocks.data() + (r * k + e) / kQK_K * kKBlockBytes[t];
            uint16_t dmin;
            std::memcpy(&dmin, blk + 2, 2);
            int sc, mn;
            kquant_scale_min(blk + 4, static_cast<int>(e % kQK_K / 32), &sc, &mn);
            mins = std::fabs(double{f16_to_f32(dmin)} * mn);
          }
          s += (std::fabs(fx.types[t].deq[r * k + e]) + 2 * mins) * 1.01 *
               std::fabs(fx.x[i * k + e]);
        }
        const double tol = 2.0 * 4 * std::ldexp(1.0, -24) * s + 1e-30;
        const float got = y[i * n + r], want = fx.types[t].dot[i * n + r];
        CHECK_MESSAGE(std::fabs(double{got} - want) <= tol, kKNames[t], " x ", i, " row ", r, ": ",
                      got, " vs ggml ", want);
      }
    }
  }
}

// ---- q5_0 / q5_1 against ggml (tests/fixtures/gguf/q5-ggml.bin, tools/reference/make_q5_fixture.py)

namespace {

struct Q5Fixture : GgmlFixture {
  struct PerType {
    std::vector<uint8_t> blocks, xq;
    std::vector<float> deq, dot;
  } types[2];  // q5_0 (q8_0 activations), q5_1 (q8_1 activations)
};

const size_t kQ5BlockBytes[2] = {sizeof(BlockQ5_0), sizeof(BlockQ5_1)};
const size_t kQ5ActBytes[2] = {sizeof(BlockQ8_0), sizeof(BlockQ8_1)};
const std::string kQ5Names[2] = {"q5_0", "q5_1"};

Q5Fixture load_q5_fixture() {
  Q5Fixture fx;
  fx.open("q5-ggml.bin", "LQ5F");
  for (int t = 0; t < 2; ++t) {
    Q5Fixture::PerType& p = fx.types[t];
    p.blocks.resize(size_t{fx.n_rows} * fx.k / kQK * kQ5BlockBytes[t]);
    p.deq.resize(fx.w.size());
    p.xq.resize(size_t{fx.n_x} * fx.k / kQK * kQ5ActBytes[t]);
    p.dot.resize(size_t{fx.n_x} * fx.n_rows);
    fx.take(p.blocks.data(), p.blocks.size());
    fx.take(p.deq.data(), p.deq.size() * 4);
    fx.take(p.xq.data(), p.xq.size());
    fx.take(p.dot.data(), p.dot.size() * 4);
  }
  REQUIRE(fx.at == fx.bytes.size());
  return fx;
}

void quantize_q5(int t, const float* x, uint8_t* y, int64_t n) {
  if (t == 0) quantize_row_q5_0(x, reinterpret_cast<BlockQ5_0*>(y), n);
  if (t == 1) quantize_row_q5_1(x, reinterpret_cast<BlockQ5_1*>(y), n);
}
void dequantize_q5(int t, const uint8_t* x, float* y, int64_t n) {
  if (t == 0) dequantize_row_q5_0(reinterpret_cast<const BlockQ5_0*>(x), y, n);
  if (t == 1) dequantize_row_q5_1(reinterpret_cast<const BlockQ5_1*>(x), y, n);
}

}  // namespace

TEST_CASE(
    "q5_0 / q5_1: quantizers produce ggml's bytes, dequantization equals ggml's bit for bit") {
  const Q5Fixture fx = load_q5_fixture();
  for (int t = 0; t < 2; ++t) {
    const size_t row_bytes = fx.k / kQK * kQ5BlockBytes[t];
    for (uint32_t r = 0; r < fx.n_rows; ++r) {
      std::vector<uint8_t> got(row_bytes);
      quantize_q5(t, fx.w.data() + size_t{r} * fx.k, got.data(), fx.k);
      CHECK_MESSAGE(
          std::memcmp(got.data(), fx.types[t].blocks.data() + r * row_bytes, row_bytes) == 0,
          kQ5Names[t], " row ", r);
    }
    std::vector<float> y(fx.w.size());
    dequantize_q5(t, fx.types[t].blocks.data(), y.data(), static_cast<int64_t>(y.size()));
    CHECK_MESSAGE(std::memcmp(y.data(), fx.types[t].deq.data(), y.size() * 4) == 0, kQ5Names[t]);
  }
  // Random blocks decode as the layout reads: element i = (nibble i | bit i of qh << 4), q5_0
  // minus 16, times d (q5_1: plus m).
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int t = 0; t < 2; ++t) {
    std::vector<uint8_t> blk(kQ5BlockBytes[t]);
    for (uint8_t& v : blk) v = static_cast<uint8_t>(byte(rng));
    const uint16_t two = 0x4000, quarter = 0x3400;  // f16 2.0, 0.25
    std::memcpy(blk.data(), &two, 2);
    if (t == 1) std::memcpy(blk.data() + 2, &quarter, 2);
    const uint8_t* qh = blk.data() + (t == 0 ? 2 : 4);
    const uint8_t* qs = qh + 4;
    std::vector<float> y(kQK);
    dequantize_q5(t, blk.data(), y.data(), kQK);
    for (int i = 0; i < kQK; ++i) {
      const int nib = i < 16 ? qs[i] & 15 : qs[i - 16] >> 4;
      const int q = nib | (((qh[i / 8] >> (i % 8)) & 1) << 4);
      const float want = t == 0 ? 2.0f * static_cast<float>(q - 16) : 2.0f * q + 0.25f;
      REQUIRE_MESSAGE(y[i] == want, kQ5Names[t], " element ", i);
    }
  }
}

TEST_CASE("q5_0 / q5_1: round trip within the format's resolution") {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t n = 64 * kQK;
  std::vector<float> x(n), y(n);
  for (float& v : x) v = dist(rng);
  for (int t = 0; t < 2; ++t) {
    std::vector<uint8_t> q(n / kQK * kQ5BlockBytes[t]);
    quantize_q5(t, x.data(), q.data(), n);
    dequantize_q5(t, q.data(), y.data(), n);
    double err = 0, ref = 0;
    for (int64_t i = 0; i < n; ++i) {
      err += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
      ref += double{x[i]} * x[i];
    }
    INFO(kQ5Names[t], " NMSE ", err / ref);
    // 5 bits over the block's range: ~1.5e-3 (q5_0), ~1e-3 (q5_1); 4 bits would be ~4x more.
    CHECK(err / ref < 3e-3);
    CHECK(err / ref > 2e-4);
  }
}

TEST_CASE("q5_0 / q5_1: reference matmul equals ggml's vec_dot up to f32 summation order") {
  // Our activation blocks are ggml's (the same q8_0 / q8_1 bytes, checked first), so both sides
  // sum the same per-block terms (d_w d_x) isum (+ m_w s_x) with exact int32 isum in different
  // f32 orders: |ours - ggml| <= 2 * n_terms * 2^-24 * S, S the sum of the terms' magnitudes.
  const Q5Fixture fx = load_q5_fixture();
  const WType wt[2] = {WType::kQ5_0, WType::kQ5_1};
  const int64_t n = fx.n_rows, k = fx.k, m = fx.n_x, nb = k / kQK;
  for (int t = 0; t < 2; ++t) {
    std::vector<uint8_t> xq(fx.types[t].xq.size());
    if (t == 0)
      quantize_act_q8_0(fx.x.data(), reinterpret_cast<BlockQ8_0*>(xq.data()), m * k);
    else
      quantize_act_q8_1(fx.x.data(), reinterpret_cast<BlockQ8_1*>(xq.data()), m * k);
    REQUIRE_MESSAGE(std::memcmp(xq.data(), fx.types[t].xq.data(), xq.size()) == 0, kQ5Names[t],
                    " activations differ from ggml's");
    const MatmulKernel kern = ref::matmul_kernel(wt[t]);
    std::vector<uint8_t> packed(kern.packed_bytes(n, k));
    kern.pack(fx.types[t].blocks.data(), nullptr, n, k, packed.data());
    std::vector<uint8_t> scratch(kern.scratch_bytes(m, n, k, 1));
    std::vector<float> y(static_cast<size_t>(m * n));
    kern.run(packed.data(), fx.x.data(), k, y.data(), n, nullptr, m, n, k, scratch.data(), nullptr);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t r = 0; r < n; ++r) {
        double s = 0;
        for (int64_t b = 0; b < nb; ++b) {
          const uint8_t* wb = fx.types[t].blocks.data() + (r * nb + b) * kQ5BlockBytes[t];
          const uint8_t* xb = xq.data() + (i * nb + b) * kQ5ActBytes[t];
          uint16_t dw, dx;
          std::memcpy(&dw, wb, 2);
          std::memcpy(&dx, xb, 2);
          const int8_t* xqs = reinterpret_cast<const int8_t*>(xb + (t == 0 ? 2 : 4));
          const uint8_t* qh = wb + (t == 0 ? 2 : 4);
          int64_t isum = 0;
          for (int e = 0; e < kQK; ++e)
            isum += int64_t{q5_value(qh, qh + 4, e) - (t == 0 ? 16 : 0)} * xqs[e];
          s += std::fabs(double{f16_to_f32(dw)} * f16_to_f32(dx) * static_cast<double>(isum));
          if (t == 1) {
            uint16_t mw, sx;
            std::memcpy(&mw, wb + 2, 2);
            std::memcpy(&sx, xb + 2, 2);
            s += std::fabs(double{f16_to_f32(mw)} * f16_to_f32(sx));
          }
        }
        const double tol = 2.0 * 2 * nb * std::ldexp(1.0, -24) * s + 1e-30;
        const float got = y[i * n + r], want = fx.types[t].dot[i * n + r];
        CHECK_MESSAGE(std::fabs(double{got} - want) <= tol, kQ5Names[t], " x ", i, " row ", r, ": ",
                      got, " vs ggml ", want);
      }
  }
}
