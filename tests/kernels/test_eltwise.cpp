// Elementwise / normalization kernels: the references against hand-computed values, then every
// Highway target against the references. Tolerances live with each op (see each TEST_CASE):
//   embedding, binary, relu, argmax, topk   exact
//   rope                                    <= 2 ulps of the pair's magnitude (normally exact)
//   layernorm / rmsnorm                     <= 16 ulps of the element's scale
//   gelu (erf)                              <= 8 ulps + the erf budget 0.5 |x| 2^-22
//   gelu (tanh), silu                       <= (8 + 2 |z|) ulps (z: the sigmoid argument)
//   softmax                                 <= (8 + |x - max|) ulps (exp of an f32 difference)
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "tests/kernels/test_util.h"

using namespace laya::kernels;
using laya::test::nmse;
using laya::test::TestPool;
using laya::test::ulp_diff;
using laya::test::ulp_of;

namespace {

const KernelTable& ref() {
  return kernel_table_ref();
}

std::vector<float> randn(std::mt19937& rng, size_t n, float mean = 0.0f, float sd = 1.0f) {
  std::normal_distribution<float> dist(mean, sd);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Every Highway target, with and without a thread pool.
template <class F>
void for_each_target(F&& f) {
  TestPool pool3(3);
  for (int64_t target : kernel_hwy_targets()) {
    const KernelTable t = kernel_table_hwy(target);
    for (const ThreadPool* pool :
         {static_cast<const ThreadPool*>(nullptr), static_cast<const ThreadPool*>(&pool3.pool)}) {
      CAPTURE(std::string(t.isa));
      CAPTURE(pool != nullptr);
      f(t, pool);
    }
  }
}

const int64_t kDims[] = {1, 3, 17, 33, 100, 768};

}  // namespace

// ---- the references against hand-computed values -------------------------------------------

TEST_CASE("reference eltwise: known values") {
  {
    const float x[2] = {0.0f, std::log(2.0f)};
    float y[2];
    ref().softmax(x, y, 1, 2, nullptr);
    CHECK(y[0] == doctest::Approx(1.0 / 3).epsilon(1e-7));
    CHECK(y[1] == doctest::Approx(2.0 / 3).epsilon(1e-7));
  }
  {
    const float x[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1}, b[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    float y[4];
    ref().layernorm(x, g, nullptr, y, 1, 4, 0.0f, nullptr);  // mean 2.5, var 1.25
    const double s = std::sqrt(1.25);
    CHECK(y[0] == doctest::Approx(-1.5 / s).epsilon(1e-7));
    CHECK(y[1] == doctest::Approx(-0.5 / s).epsilon(1e-7));
    CHECK(y[3] == doctest::Approx(1.5 / s).epsilon(1e-7));
    ref().layernorm(x, g, b, y, 1, 4, 0.0f, nullptr);
    CHECK(y[2] == doctest::Approx(0.5 + 0.5 / s).epsilon(1e-7));
  }
  {
    const float x[2] = {3, 4}, g[2] = {1, 2};
    float y[2];
    ref().rmsnorm(x, g, y, 1, 2, 0.0f, nullptr);  // rms = sqrt(12.5)
    CHECK(y[0] == doctest::Approx(3 / std::sqrt(12.5)).epsilon(1e-7));
    CHECK(y[1] == doctest::Approx(8 / std::sqrt(12.5)).epsilon(1e-7));
  }
  {
    // A unit vector rotated by pos * theta^0 = 1 radian (pair 0), and pair 1 of a head_dim 4
    // Neox head by pos * theta^(-1/2) = pos / 100 radians.
    const float x[4] = {1, 0, 0, 1};
    const int32_t pos[1] = {3};
    float y[4];
    ref().rope(x, y, pos, 1, 1, 2, 2, 10000.0f, RopeMode::kNeox, nullptr);
    CHECK(y[0] == doctest::Approx(std::cos(3.0)).epsilon(1e-7));
    CHECK(y[1] == doctest::Approx(std::sin(3.0)).epsilon(1e-7));
    ref().rope(x, y, pos, 1, 1, 4, 4, 10000.0f, RopeMode::kNeox, nullptr);  // pairs (0,2), (1,3)
    CHECK(y[0] == doctest::Approx(std::cos(3.0)).epsilon(1e-7));
    CHECK(y[2] == doctest::Approx(std::sin(3.0)).epsilon(1e-7));
    CHECK(y[1] == doctest::Approx(-std::sin(0.03)).epsilon(1e-6));
    CHECK(y[3] == doctest::Approx(std::cos(0.03)).epsilon(1e-7));
    ref().rope(x, y, pos, 1, 1, 4, 4, 10000.0f, RopeMode::kGptj, nullptr);  // pairs (0,1), (2,3)
    CHECK(y[0] == doctest::Approx(std::cos(3.0)).epsilon(1e-7));
    CHECK(y[1] == doctest::Approx(std::sin(3.0)).epsilon(1e-7));
    CHECK(y[2] == doctest::Approx(-std::sin(0.03)).epsilon(1e-6));
    CHECK(y[3] == doctest::Approx(std::cos(0.03)).epsilon(1e-7));
  }
  {
    const float x[4] = {-1.0f, 0.0f, 1.0f, 2.0f};
    float y[4];
    ref().unary(ActKind::kGeluErf, x, y, 4, nullptr);  // x * Phi(x)
    CHECK(y[0] == doctest::Approx(-0.15865525393145707).epsilon(1e-7));
    CHECK(y[1] == 0.0f);
    CHECK(y[2] == doctest::Approx(0.8413447460685429).epsilon(1e-7));
    CHECK(y[3] == doctest::Approx(2 * 0.9772498680518208).epsilon(1e-7));
    ref().unary(ActKind::kSilu, x, y, 4, nullptr);
    CHECK(y[2] == doctest::Approx(1 / (1 + std::exp(-1.0))).epsilon(1e-7));
    ref().unary(ActKind::kRelu, x, y, 4, nullptr);
    CHECK((y[0] == 0.0f && y[2] == 1.0f));
    ref().unary(ActKind::kGeluTanh, x, y, 4, nullptr);
    CHECK(y[2] == doctest::Approx(0.8411919906082768).epsilon(1e-7));
  }
  {
    const float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {10, 20, 30};
    float y[6];
    ref().binary(Binary::kAdd, a, b, y, 6, 3, nullptr);
    CHECK((y[0] == 11 && y[4] == 25 && y[5] == 36));
    const float x[5] = {1, 7, 3, 7, -2};
    CHECK(ref().argmax(x, 5) == 1);
    int32_t idx[3];
    float val[3];
    ref().topk(x, 5, 3, idx, val);
    CHECK((idx[0] == 1 && idx[1] == 3 && idx[2] == 2 && val[2] == 3.0f));
  }
}

// ---- Highway against the references ----------------------------------------------------------

TEST_CASE("embedding: every weight type, exact") {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> bits(0, 0xffff);
  const int64_t vocab = 37;
  for (int ti = 0; ti < kWTypeCount; ++ti) {
    const WType type = static_cast<WType>(ti);
    const bool block = type == WType::kQ8_0 || type == WType::kQ4_0 || type == WType::kQ4_1 ||
                       type == WType::kQ5_0 || type == WType::kQ5_1;
    const bool kquant = type == WType::kQ4_K || type == WType::kQ5_K || type == WType::kQ6_K;
    for (int64_t dim : {int64_t{1}, int64_t{3}, int64_t{17}, int64_t{32}, int64_t{100},
                        int64_t{160}, int64_t{256}, int64_t{768}}) {
      if (block && dim % kQK != 0) continue;
      if (kquant && dim % kQK_K != 0) continue;
      CAPTURE(std::string(wtype_name(type)));
      CAPTURE(dim);
      // Table bytes and scales for this type.
      std::vector<uint8_t> table;
      std::vector<float> scales;
      const std::vector<float> src = randn(rng, static_cast<size_t>(vocab * dim), 0.0f, 2.0f);
      switch (type) {
        case WType::kF32:
          table.resize(src.size() * 4);
          std::memcpy(table.data(), src.data(), table.size());
          break;
        case WType::kF16:
        case WType::kBF16: {  // every bit pattern, specials included
          std::vector<uint16_t> h(src.size());
          for (uint16_t& v : h) v = static_cast<uint16_t>(bits(rng));
          table.resize(h.size() * 2);
          std::memcpy(table.data(), h.data(), table.size());
          break;
        }
        case WType::kI8:
        case WType::kI8W: {
          table.resize(src.size());
          for (uint8_t& v : table) v = static_cast<uint8_t>(bits(rng));
          scales = randn(rng, static_cast<size_t>(vocab), 0.0f, 0.1f);
          break;
        }
        case WType::kQ8_0:
          table.resize(src.size() / kQK * sizeof(BlockQ8_0));
          quantize_row_q8_0(src.data(), reinterpret_cast<BlockQ8_0*>(table.data()),
                            static_cast<int64_t>(src.size()));
          break;
        case WType::kQ4_0:
          table.resize(src.size() / kQK * sizeof(BlockQ4_0));
          quantize_row_q4_0(src.data(), reinterpret_cast<BlockQ4_0*>(table.data()),
                            static_cast<int64_t>(src.size()));
          break;
        case WType::kQ4_1:
          table.resize(src.size() / kQK * sizeof(BlockQ4_1));
          quantize_row_q4_1(src.data(), reinterpret_cast<BlockQ4_1*>(table.data()),
                            static_cast<int64_t>(src.size()));
          break;
        case WType::kQ4_K:  // random bytes: every scale / min / quant pattern
        case WType::kQ5_K:
        case WType::kQ6_K:
        case WType::kQ5_0:
        case WType::kQ5_1: {
          const size_t bytes = type == WType::kQ4_K   ? sizeof(BlockQ4_K)
                               : type == WType::kQ5_K ? sizeof(BlockQ5_K)
                               : type == WType::kQ6_K ? sizeof(BlockQ6_K)
                               : type == WType::kQ5_0 ? sizeof(BlockQ5_0)
                                                      : sizeof(BlockQ5_1);
          table.resize(src.size() / (kquant ? kQK_K : kQK) * bytes);
          for (uint8_t& v : table) v = static_cast<uint8_t>(bits(rng));
          break;
        }
        case WType::kCount:
          break;
      }
      const float* sc = scales.empty() ? nullptr : scales.data();
      const std::vector<int32_t> ids = {0, 36, 5, 5, 17, 1, 36, 20, 2};
      const int64_t n = static_cast<int64_t>(ids.size());
      std::vector<float> want(static_cast<size_t>(n * dim));
      REQUIRE(ref().embedding(type, table.data(), sc, vocab, dim, ids.data(), n, want.data(),
                              nullptr) == -1);
      for_each_target([&](const KernelTable& t, const ThreadPool* pool) {
        std::vector<float> got(want.size(), 12345.0f);
        REQUIRE(t.embedding(type, table.data(), sc, vocab, dim, ids.data(), n, got.data(), pool) ==
                -1);
        int64_t worst = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          worst = std::max(worst, ulp_diff(got[i], want[i]));
        }
        CHECK(worst == 0);
        const int32_t bad1[4] = {1, 2, 37, -1}, bad2[3] = {0, -1, 99};
        CHECK(t.embedding(type, table.data(), sc, vocab, dim, bad1, 4, got.data(), pool) == 2);
        CHECK(t.embedding(type, table.data(), sc, vocab, dim, bad2, 3, got.data(), pool) == 1);
      });
    }
  }
}

TEST_CASE("layernorm / rmsnorm: <= 16 ulps of each element's scale") {
  // Scale of element i: (|x_i - mean| + |mean|) * inv_std * |gamma_i| + |beta_i|, i.e. the
  // magnitudes the f32 statistics and products round at.
  std::mt19937 rng(2);
  for (int64_t dim : kDims) {
    for (int64_t rows : {1, 5}) {
      CAPTURE(dim);
      CAPTURE(rows);
      const std::vector<float> x = randn(rng, static_cast<size_t>(rows * dim), 3.0f, 2.0f);
      const std::vector<float> g = randn(rng, static_cast<size_t>(dim), 1.0f, 0.3f);
      const std::vector<float> be = randn(rng, static_cast<size_t>(dim), 0.0f, 0.5f);
      const float eps = 1e-5f;
      for (bool with_beta : {false, true}) {
        std::vector<float> want(x.size());
        ref().layernorm(x.data(), g.data(), with_beta ? be.data() : nullptr, want.data(), rows, dim,
                        eps, nullptr);
        std::vector<double> scale(x.size());
        for (int64_t r = 0; r < rows; ++r) {
          double mean = 0, var = 0;
          for (int64_t i = 0; i < dim; ++i) mean += x[r * dim + i];
          mean /= dim;
          for (int64_t i = 0; i < dim; ++i)
            var += (x[r * dim + i] - mean) * (x[r * dim + i] - mean);
          const double inv = 1 / std::sqrt(var / dim + eps);
          for (int64_t i = 0; i < dim; ++i)
            scale[r * dim + i] =
                (std::fabs(x[r * dim + i] - mean) + std::fabs(mean)) * inv * std::fabs(g[i]) +
                (with_beta ? std::fabs(be[i]) : 0.0);
        }
        for_each_target([&](const KernelTable& t, const ThreadPool* pool) {
          std::vector<float> got(x.size());
          t.layernorm(x.data(), g.data(), with_beta ? be.data() : nullptr, got.data(), rows, dim,
                      eps, pool);
          double worst = 0;
          for (size_t i = 0; i < got.size(); ++i)
            worst = std::max(worst, std::fabs(double{got[i]} - want[i]) / ulp_of(scale[i]));
          CHECK(worst <= 16);
        });
      }
      // rmsnorm: scale |x_i| * inv_rms * |gamma_i|.
      std::vector<float> want(x.size());
      ref().rmsnorm(x.data(), g.data(), want.data(), rows, dim, eps, nullptr);
      for_each_target([&](const KernelTable& t, const ThreadPool* pool) {
        std::vector<float> got(x.size());
        t.rmsnorm(x.data(), g.data(), got.data(), rows, dim, eps, pool);
        double worst = 0;
        for (size_t i = 0; i < got.size(); ++i)
          worst = std::max(worst, std::fabs(double{got[i]} - want[i]) / ulp_of(want[i]));
        CHECK(worst <= 16);
      });
    }
  }
}

TEST_CASE("rope: neox / gptj, partial rotary, large positions, in place") {
  // Tolerance: 2 ulps of max(|x_a|, |x_b|) per rotated pair (the reference's c, s come from the
  // f32 angle; the kernel evaluates the same c, s in f64 and rounds, normally bit-identical).
  std::mt19937 rng(3);
  struct Shape {
    int32_t heads, head_dim, rotary;
  };
  const Shape shapes[] = {{1, 2, 2},   {3, 64, 64},   {2, 64, 32},  {1, 40, 40},
                          {2, 24, 16}, {1, 128, 128}, {12, 64, 64}, {1, 8, 6}};
  for (const Shape& s : shapes) {
    for (float theta : {10000.0f, 500000.0f, 1.0f}) {
      for (RopeMode mode : {RopeMode::kNeox, RopeMode::kGptj}) {
        CAPTURE(s.head_dim);
        CAPTURE(s.rotary);
        CAPTURE(theta);
        CAPTURE(static_cast<int>(mode));
        const int64_t tokens = 5;
        const int32_t pos[5] = {0, 1, 77, 4095, 131071};
        const std::vector<float> x =
            randn(rng, static_cast<size_t>(tokens * s.heads * s.head_dim), 0.0f, 1.0f);
        std::vector<float> want(x.size());
        ref().rope(x.data(), want.data(), pos, tokens, s.heads, s.head_dim, s.rotary, theta, mode,
                   nullptr);
        for_each_target([&](const KernelTable& t, const ThreadPool* pool) {
          for (bool in_place : {false, true}) {
            std::vector<float> got = x;
            t.rope(in_place ? got.data() : x.data(), got.data(), pos, tokens, s.heads, s.head_dim,
                   s.rotary, theta, mode, pool);
            double worst = 0;
            const int32_t half = s.rotary / 2;
            for (int64_t row = 0; row < tokens * s.heads; ++row)
              for (int32_t i = 0; i < s.head_dim; ++i) {
                const size_t at = static_cast<size_t>(row * s.head_dim + i);
                double mag = std::fabs(x[at]);
                if (i < s.rotary) {
                  const int32_t pi = i < half ? i : i - half;  // neox partner index
                  const int32_t j = mode == RopeMode::kNeox ? (i < half ? i + half : pi) : (i ^ 1);
                  mag = std::max(mag,
                                 double{std::fabs(x[static_cast<size_t>(row * s.head_dim + j)])});
                }
                worst = std::max(worst, std::fabs(double{got[at]} - want[at]) / ulp_of(mag));
              }
            CHECK(worst <= 2);
          }
        });
      }
    }
  }
}

namespace {

// Inputs for the activations: a sweep of [-20, 20], the tails, and specials.
std::vector<float> act_inputs(std::mt19937& rng) {
  std::vector<float> x = randn(rng, 3001, 0.0f, 3.0f);
  for (int i = -2000; i <= 2000; ++i) x.push_back(static_cast<float>(i) * 0.01f);
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-7f, -1e-7f, 9.0f, -9.0f, 14.5f, -14.5f, 30.0f,
                  -30.0f, 100.0f, -100.0f, 1e6f, -1e6f, 1e30f, -1e30f})
    x.push_back(v);
  return x;
}

// Allowed |y - ref| for one activation value (see the file comment).
double act_tol(ActKind a, float xf, float want) {
  const double x = xf;
  switch (a) {
    case ActKind::kGeluErf:
      return 8 * ulp_of(want) + 0.5 * std::fabs(x) * std::ldexp(1.0, -22);
    case ActKind::kGeluTanh: {
      const double z = 1.5957691216057308 * std::fabs(x) * (1 + 0.044715 * x * x);
      // The reference's double 1 + tanh(u) cancels in the negative tail (absolute error about
      // |x| 2^-53, so its tiny outputs there are less accurate than the kernel's x * sigmoid).
      return (8 + 2 * std::min(z, 200.0)) * ulp_of(want) + std::fabs(x) * std::ldexp(1.0, -52);
    }
    case ActKind::kSilu:
      return (8 + 2 * std::min(std::fabs(x), 200.0)) * ulp_of(want);
    case ActKind::kRelu:
      return 0;
    case ActKind::kCount:
      break;
  }
  return 0;  // an activation added to ir/act.inc without a tolerance here must be exact
}

}  // namespace

TEST_CASE("unary and glu: every activation") {
  std::mt19937 rng(4);
  const std::vector<float> x = act_inputs(rng);
  for (int ai = 0; ai < laya::ir::kActCount; ++ai) {  // every activation of ir/act.inc
    const ActKind a = static_cast<ActKind>(ai);
    CAPTURE(act_name(a));
    for (int64_t n : {int64_t{1}, int64_t{3}, int64_t{17}, static_cast<int64_t>(x.size())}) {
      std::vector<float> want(static_cast<size_t>(n));
      ref().unary(a, x.data(), want.data(), n, nullptr);
      for_each_target([&](const KernelTable& t, const ThreadPool* pool) {
        std::vector<float> got(x.begin(), x.begin() + n);
        t.unary(a, got.data(), got.data(), n, pool);  // in place
        double worst = 0;
        for (int64_t i = 0; i < n; ++i) {
          const double err = std::fabs(double{got[i]} - want[i]);
          const double tol = act_tol(a, x[i], want[i]);
          if (err > tol) {
            CAPTURE(x[i]);
            CAPTURE(got[i]);
            CAPTURE(want[i]);
            CHECK(err <= tol);
          }
          worst = std::max(worst, tol > 0 ? err / tol : err);
        }
        CHECK(worst <= 1);
      });
    }
    // glu: rows of [f gate inputs | f values]; y = act(gate) * value, one more rounding.
    for (int64_t f : {1, 17, 100}) {
      const int64_t rows = 3;
      std::vector<float> in(static_cast<size_t>(rows * 2 * f));
      for (size_t i = 0; i < in.size(); ++i) in[i] = x[(i * 7) % x.size()] * 0.5f;
      std::vector<float> want(static_cast<size_t>(rows * f));
      ref().glu(a, in.data(), want.data(), rows, f, nullptr);
      for_each_target([&](const KernelTable& t, const ThreadPool* pool) {
        std::vector<float> got(want.size());
        t.glu(a, in.data(), got.data(), rows, f, pool);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < f; ++j) {
            const float gate = in[r * 2 * f + j], val = in[r * 2 * f + f + j];
            float act_want;
            ref().unary(a, &gate, &act_want, 1, nullptr);
            const double tol =
                act_tol(a, gate, act_want) * std::fabs(val) + ulp_of(want[r * f + j]);
            CHECK(std::fabs(double{got[r * f + j]} - want[r * f + j]) <= tol);
          }
      });
    }
  }
}

TEST_CASE("softmax: <= (8 + |x - max|) ulps, in place") {
  std::mt19937 rng(5);
  for (int64_t dim : {1, 3, 17, 100, 512}) {
    const int64_t rows = 4;
    const std::vector<float> x = randn(rng, static_cast<size_t>(rows * dim), 0.0f, 3.0f);
    std::vector<float> want(x.size());
    ref().softmax(x.data(), want.data(), rows, dim, nullptr);
    for_each_target([&](const KernelTable& t, const ThreadPool* pool) {
      std::vector<float> got = x;
      t.softmax(got.data(), got.data(), rows, dim, pool);
      double worst = 0;
      for (int64_t r = 0; r < rows; ++r) {
        float mx = x[r * dim];
        for (int64_t i = 0; i < dim; ++i) mx = std::max(mx, x[r * dim + i]);
        for (int64_t i = 0; i < dim; ++i) {
          const size_t at = static_cast<size_t>(r * dim + i);
          const double tol = (8 + std::fabs(double{x[at]} - mx)) * ulp_of(want[at]);
          worst = std::max(worst, std::fabs(double{got[at]} - want[at]) / tol);
        }
      }
      CHECK(worst <= 1);
      CHECK(nmse(got.data(), want.data(), got.size()) < 1e-12);
    });
  }
}

TEST_CASE("binary: add / mul with row broadcast, exact") {
  std::mt19937 rng(6);
  for (int64_t nb : {1, 3, 17, 768}) {
    for (int64_t rows : {1, 4, 33}) {
      const int64_t n = nb * rows;
      const std::vector<float> a = randn(rng, static_cast<size_t>(n));
      for (bool same : {false, true}) {
        const int64_t bn = same ? n : nb;
        const std::vector<float> b = randn(rng, static_cast<size_t>(bn));
        for (Binary op : {Binary::kAdd, Binary::kMul}) {
          std::vector<float> want(static_cast<size_t>(n));
          ref().binary(op, a.data(), b.data(), want.data(), n, bn, nullptr);
          for_each_target([&](const KernelTable& t, const ThreadPool* pool) {
            std::vector<float> got(static_cast<size_t>(n));
            t.binary(op, a.data(), b.data(), got.data(), n, bn, pool);
            CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
          });
        }
      }
    }
  }
}

TEST_CASE("argmax / topk: exact, ties to the lowest index") {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-5, 5);
  for (int64_t n : {1, 2, 3, 17, 100, 1000, 50257}) {
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x)  // kind 0: continuous; 1: many ties; 2: ties and -inf
        v = kind == 0 ? std::normal_distribution<float>(0, 1)(rng) : static_cast<float>(small(rng));
      if (kind == 2)
        for (size_t i = 0; i < x.size(); i += 3) x[i] = -INFINITY;
      CAPTURE(n);
      CAPTURE(kind);
      const int64_t want = ref().argmax(x.data(), n);
      for (int64_t target : kernel_hwy_targets()) {
        const KernelTable t = kernel_table_hwy(target);
        CHECK(t.argmax(x.data(), n) == want);
        for (int32_t k : {1, 2, 5, 40}) {
          if (k > n) continue;
          std::vector<int32_t> wi(static_cast<size_t>(k)), gi(wi.size());
          std::vector<float> wv(wi.size()), gv(wi.size());
          if (n <= 1000)
            ref().topk(x.data(), n, k, wi.data(), wv.data());
          else {  // the O(n k) reference is slow: compare against a stable sort instead
            std::vector<int32_t> order(static_cast<size_t>(n));
            for (int32_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
            std::stable_sort(order.begin(), order.end(),
                             [&](int32_t p, int32_t q) { return x[p] > x[q]; });
            for (int32_t i = 0; i < k; ++i) {
              wi[static_cast<size_t>(i)] = order[static_cast<size_t>(i)];
              wv[static_cast<size_t>(i)] = x[static_cast<size_t>(order[static_cast<size_t>(i)])];
            }
          }
          t.topk(x.data(), n, k, gi.data(), gv.data());
          CHECK(gi == wi);
          CHECK(std::memcmp(gv.data(), wv.data(), wv.size() * 4) == 0);
        }
        if (n <= 100) {  // k == n: a full descending sort
          std::vector<int32_t> wi(static_cast<size_t>(n)), gi(wi.size());
          std::vector<float> wv(wi.size()), gv(wi.size());
          ref().topk(x.data(), n, static_cast<int32_t>(n), wi.data(), wv.data());
          t.topk(x.data(), n, static_cast<int32_t>(n), gi.data(), gv.data());
          CHECK(gi == wi);
        }
      }
    }
  }
  // NaN: never the argmax, unless first (the reference's `x[i] > x[best]` scan keeps index 0).
  std::vector<float> x(40, 1.0f);
  x[7] = NAN;
  x[30] = 2.0f;
  for (int64_t target : kernel_hwy_targets()) {
    const KernelTable t = kernel_table_hwy(target);
    CHECK(t.argmax(x.data(), 40) == ref().argmax(x.data(), 40));
    std::vector<float> y = x;
    y[0] = NAN;
    CHECK(t.argmax(y.data(), 40) == ref().argmax(y.data(), 40));
  }
}
