// Integer / GGUF-block matmuls (i8, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K) on every
// compiled Highway
// target (and, on AVX3, both the VNNI and the pmaddubsw path) against the scalar reference.
//
// Tolerances (the integer dots are exact on both sides; only f32 rounding differs):
//  - i8: y = (f32(dot) * x_scale) * w_scale (+ bias), the same operations as the reference, which
//    may differ only by an FMA contraction of the bias add: |y - ref| <= 1e-6 * (|v| + |bias|),
//    v = the product without bias.
//  - block types: y = sum over blocks of t_b = (d_w * d_x) * isum_b (q4_1 / q5_1: + m_w * s_x, a
//    term per block), summed in block order by both; the kernel fuses the last multiply and add
//    (FMA), the reference may or may not. Each side's sum is within n_terms * u * S of the exact
//    one (u = 2^-24, S = sum |t_b| computed below from the same quantized data), each term within
//    u |t_b|, so |y - ref| <= (2 * n_terms + 4) * u * (S + |bias|). K-quants likewise with
//    t_b = (d_w * d_x) * isum_b and (q4_K / q5_K) (dmin_w * d_x) * msum_b per super-block.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/hwy/matmul_int.h"
#include "kernels/kernels.h"
#include "tests/kernels/test_util.h"
#include "kernels/quant.h"
#include "kernels/ref/ref.h"

using namespace laya::kernels;

namespace {

// The integer family's types, from the manifest (kernels/matmul.inc).
#define LAYA_FAMILY_float(Name)
#define LAYA_FAMILY_int(Name) WType::k##Name,
constexpr WType kIntTypes[] = {
#define MATMUL_WTYPE(name, Name, family, peak) LAYA_FAMILY_##family(Name)
#include "kernels/matmul.inc"
#undef MATMUL_WTYPE
};
#undef LAYA_FAMILY_float
#undef LAYA_FAMILY_int

bool is_kquant(WType t) {
  return t == WType::kQ4_K || t == WType::kQ5_K || t == WType::kQ6_K;
}
size_t kquant_block_bytes(WType t) {
  return t == WType::kQ4_K ? sizeof(BlockQ4_K)
                           : (t == WType::kQ5_K ? sizeof(BlockQ5_K) : sizeof(BlockQ6_K));
}
// Inner size of one block / super-block of `t` (1 for i8).
int64_t kunit(WType t) {
  return t == WType::kI8 ? 1 : (is_kquant(t) ? kQK_K : kQK);
}

struct AlignedBuf {
  void* p = nullptr;
  explicit AlignedBuf(uint64_t bytes) {
    const size_t n = static_cast<size_t>((bytes + 63) / 64 * 64 + 64);
    p = std::aligned_alloc(64, n);
    std::memset(p, 0xa5, n);
  }
  ~AlignedBuf() { std::free(p); }
  AlignedBuf(const AlignedBuf&) = delete;
  AlignedBuf& operator=(const AlignedBuf&) = delete;
};

// One table per variant under test: every Highway target, plus AVX3 without VNNI and NEON
// without dotprod.
struct Variant {
  std::string name;
  KernelTable table;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (int64_t target : kernel_hwy_targets()) {
    v.push_back({kernel_target_name(target), kernel_table_hwy(target)});
    const std::string name = kernel_target_name(target);
    if (name == "AVX3" || name == "NEON") {  // the path of a CPU without VNNI / dotprod too
      KernelTable t = kernel_table_hwy(target);
      hwy_matmul_int::fill(t, target, /*allow_dot=*/false);
      v.push_back({name + (name == "AVX3" ? " (no VNNI)" : " (no dotprod)"), t});
    }
  }
  return v;
}

// Weights in the file layout: GGUF blocks, or int8 rows with per-row scales.
struct Weights {
  std::vector<uint8_t> bytes;
  std::vector<float> scales;  // i8 only
};

Weights make_weights(WType type, const std::vector<float>& w, int64_t n, int64_t k) {
  Weights out;
  if (type == WType::kI8) {
    out.bytes.resize(static_cast<size_t>(n * k));
    out.scales.resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      out.scales[j] =
          quantize_row_i8(w.data() + j * k, reinterpret_cast<int8_t*>(&out.bytes[j * k]), k);
    return out;
  }
  if (is_kquant(type)) {
    const int64_t nsb = k / kQK_K;
    const size_t bs = kquant_block_bytes(type);
    out.bytes.resize(static_cast<size_t>(n * nsb) * bs);
    for (int64_t j = 0; j < n; ++j) {
      uint8_t* dst = out.bytes.data() + static_cast<size_t>(j * nsb) * bs;
      if (type == WType::kQ4_K)
        quantize_row_q4_K(w.data() + j * k, reinterpret_cast<BlockQ4_K*>(dst), k);
      if (type == WType::kQ5_K)
        quantize_row_q5_K(w.data() + j * k, reinterpret_cast<BlockQ5_K*>(dst), k);
      if (type == WType::kQ6_K)
        quantize_row_q6_K(w.data() + j * k, reinterpret_cast<BlockQ6_K*>(dst), k);
    }
    return out;
  }
  const int64_t nb = k / kQK;
  if (type == WType::kQ8_0) {
    out.bytes.resize(static_cast<size_t>(n * nb) * sizeof(BlockQ8_0));
    for (int64_t j = 0; j < n; ++j)
      quantize_row_q8_0(w.data() + j * k, reinterpret_cast<BlockQ8_0*>(out.bytes.data()) + j * nb,
                        k);
  } else if (type == WType::kQ4_0) {
    out.bytes.resize(static_cast<size_t>(n * nb) * sizeof(BlockQ4_0));
    for (int64_t j = 0; j < n; ++j)
      quantize_row_q4_0(w.data() + j * k, reinterpret_cast<BlockQ4_0*>(out.bytes.data()) + j * nb,
                        k);
  } else if (type == WType::kQ5_0) {
    out.bytes.resize(static_cast<size_t>(n * nb) * sizeof(BlockQ5_0));
    for (int64_t j = 0; j < n; ++j)
      quantize_row_q5_0(w.data() + j * k, reinterpret_cast<BlockQ5_0*>(out.bytes.data()) + j * nb,
                        k);
  } else if (type == WType::kQ5_1) {
    out.bytes.resize(static_cast<size_t>(n * nb) * sizeof(BlockQ5_1));
    for (int64_t j = 0; j < n; ++j)
      quantize_row_q5_1(w.data() + j * k, reinterpret_cast<BlockQ5_1*>(out.bytes.data()) + j * nb,
                        k);
  } else {
    out.bytes.resize(static_cast<size_t>(n * nb) * sizeof(BlockQ4_1));
    for (int64_t j = 0; j < n; ++j)
      quantize_row_q4_1(w.data() + j * k, reinterpret_cast<BlockQ4_1*>(out.bytes.data()) + j * nb,
                        k);
  }
  return out;
}

// Dequantized K-quant row j (for the error budget: d * sc * q and dmin * m are recovered from the
// block fields directly below).
double kquant_abs_sum(WType type, const Weights& wt, const float* x, int64_t j, int64_t k,
                      int* n_terms) {
  const int64_t nsb = k / kQK_K;
  std::vector<BlockQ8_K> xb(static_cast<size_t>(nsb));
  quantize_row_q8_K(x, xb.data(), k);
  const uint8_t* row = wt.bytes.data() + static_cast<size_t>(j * nsb) * kquant_block_bytes(type);
  double s = 0;
  for (int64_t b = 0; b < nsb; ++b) {
    // Reuse the reference kernel for one super-block: y = (d_w d_x) isum - (dmin_w d_x) msum;
    // the budget needs both terms' magnitudes, so compute them from the fields.
    const uint8_t* blk = row + static_cast<size_t>(b) * kquant_block_bytes(type);
    int64_t isum = 0, msum = 0;
    float dw = 0, dmw = 0;
    if (type == WType::kQ6_K) {
      const BlockQ6_K& w = *reinterpret_cast<const BlockQ6_K*>(blk);
      std::vector<float> deq(kQK_K);
      dw = f16_to_f32(w.d);
      for (int e = 0; e < kQK_K; ++e) {
        const int h = e / 128, q4 = e % 128 / 32, l = e % 32;
        const uint8_t lo = w.ql[64 * h + 32 * (q4 & 1) + l];
        const int q = ((q4 < 2 ? lo & 15 : lo >> 4) | (((w.qh[32 * h + l] >> (2 * q4)) & 3) << 4));
        isum += int64_t{w.scales[e / 16]} * (q - 32) * xb[b].qs[e];
      }
    } else {
      const uint8_t* scales = blk + 4;
      uint16_t d16, m16;
      std::memcpy(&d16, blk, 2);
      std::memcpy(&m16, blk + 2, 2);
      dw = f16_to_f32(d16);
      dmw = f16_to_f32(m16);
      const uint8_t* qh = blk + 16;
      const uint8_t* qs = blk + (type == WType::kQ5_K ? 48 : 16);
      for (int e = 0; e < kQK_K; ++e) {
        int sc, m;
        kquant_scale_min(scales, e / 32, &sc, &m);
        const uint8_t byte = qs[32 * (e / 64) + e % 32];
        int q = e % 64 < 32 ? byte & 15 : byte >> 4;
        if (type == WType::kQ5_K) q += 16 * ((qh[e % 32] >> (e / 32)) & 1);
        isum += int64_t{sc} * q * xb[b].qs[e];
        msum += int64_t{m} * xb[b].qs[e];
      }
    }
    s += std::fabs(double{dw} * xb[b].d * static_cast<double>(isum)) +
         std::fabs(double{dmw} * xb[b].d * static_cast<double>(msum));
  }
  *n_terms = static_cast<int>(2 * nsb);
  return s;
}

// The error budget's S for one output: sum over blocks of |(d_w * d_x) * isum| (+ |m_w * s_x|),
// from quant.h's activation blocks; and the number of summed terms.
double block_abs_sum(WType type, const Weights& wt, const float* x, int64_t j, int64_t k,
                     int* n_terms) {
  if (is_kquant(type)) return kquant_abs_sum(type, wt, x, j, k, n_terms);
  const int64_t nb = k / kQK;
  double s = 0;
  if (type == WType::kQ4_1 || type == WType::kQ5_1) {
    std::vector<BlockQ8_1> xb(static_cast<size_t>(nb));
    quantize_act_q8_1(x, xb.data(), k);
    for (int64_t b = 0; b < nb; ++b) {
      int32_t isum = 0;
      uint16_t d, m;
      if (type == WType::kQ4_1) {
        const BlockQ4_1& w = reinterpret_cast<const BlockQ4_1*>(wt.bytes.data())[j * nb + b];
        for (int i = 0; i < kQK / 2; ++i)
          isum += (w.qs[i] & 15) * xb[b].qs[i] + (w.qs[i] >> 4) * xb[b].qs[i + 16];
        d = w.d;
        m = w.m;
      } else {
        const BlockQ5_1& w = reinterpret_cast<const BlockQ5_1*>(wt.bytes.data())[j * nb + b];
        for (int i = 0; i < kQK; ++i) isum += q5_value(w.qh, w.qs, i) * xb[b].qs[i];
        d = w.d;
        m = w.m;
      }
      s += std::fabs(double{f16_to_f32(d)} * f16_to_f32(xb[b].d) * isum) +
           std::fabs(double{f16_to_f32(m)} * f16_to_f32(xb[b].s));
    }
    *n_terms = static_cast<int>(2 * nb);
    return s;
  }
  std::vector<BlockQ8_0> xb(static_cast<size_t>(nb));
  quantize_act_q8_0(x, xb.data(), k);
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0;
    float dw;
    if (type == WType::kQ8_0) {
      const BlockQ8_0& w = reinterpret_cast<const BlockQ8_0*>(wt.bytes.data())[j * nb + b];
      for (int i = 0; i < kQK; ++i) isum += w.qs[i] * xb[b].qs[i];
      dw = f16_to_f32(w.d);
    } else if (type == WType::kQ5_0) {
      const BlockQ5_0& w = reinterpret_cast<const BlockQ5_0*>(wt.bytes.data())[j * nb + b];
      for (int i = 0; i < kQK; ++i) isum += (q5_value(w.qh, w.qs, i) - 16) * xb[b].qs[i];
      dw = f16_to_f32(w.d);
    } else {
      const BlockQ4_0& w = reinterpret_cast<const BlockQ4_0*>(wt.bytes.data())[j * nb + b];
      for (int i = 0; i < kQK / 2; ++i)
        isum += ((w.qs[i] & 15) - 8) * xb[b].qs[i] + ((w.qs[i] >> 4) - 8) * xb[b].qs[i + 16];
      dw = f16_to_f32(w.d);
    }
    s += std::fabs(double{dw} * f16_to_f32(xb[b].d) * isum);
  }
  *n_terms = static_cast<int>(nb);
  return s;
}

struct Case {
  int64_t m, n, k, ldx_pad, ldy_pad;
  bool bias;
};

// Runs one kernel on a case; returns y [m, ldy] (the pad columns keep the sentinel).
std::vector<float> run_kernel(const MatmulKernel& kern, const Weights& wt,
                              const std::vector<float>& x, const std::vector<float>& bias,
                              const Case& c, const ThreadPool* pool) {
  const int64_t ldx = c.k + c.ldx_pad, ldy = c.n + c.ldy_pad;
  const uint64_t pb = kern.packed_bytes(c.n, c.k);
  REQUIRE(pb > 0);
  AlignedBuf packed(pb);
  kern.pack(wt.bytes.data(), wt.scales.empty() ? nullptr : wt.scales.data(), c.n, c.k, packed.p);
  const int n_threads = pool ? pool->n_threads : 1;
  AlignedBuf scratch(kern.scratch_bytes(c.m, c.n, c.k, n_threads));
  std::vector<float> y(static_cast<size_t>(c.m * ldy), -12345.0f);
  kern.run(packed.p, x.data(), ldx, y.data(), ldy, c.bias ? bias.data() : nullptr, c.m, c.n, c.k,
           scratch.p, pool);
  return y;
}

void check_case(const Variant& var, WType type, const Case& c, std::mt19937& rng,
                const ThreadPool* pool) {
  const int64_t ldx = c.k + c.ldx_pad, ldy = c.n + c.ldy_pad;
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(c.n * c.k)), x(static_cast<size_t>(c.m * ldx)),
      bias(static_cast<size_t>(c.n));
  for (float& v : w) v = dist(rng);
  for (float& v : x) v = dist(rng) * 3.0f;
  for (float& v : bias) v = dist(rng);
  const Weights wt = make_weights(type, w, c.n, c.k);
  const MatmulKernel& ref = kernel_table_ref().matmul[static_cast<int>(type)];
  const MatmulKernel& hwy = var.table.matmul[static_cast<int>(type)];
  const std::vector<float> yr = run_kernel(ref, wt, x, bias, c, nullptr);
  const std::vector<float> yh = run_kernel(hwy, wt, x, bias, c, pool);
  Case nb = c;
  nb.bias = false;
  const std::vector<float> yr0 = run_kernel(ref, wt, x, bias, nb, nullptr);
  int bad = 0;
  for (int64_t r = 0; r < c.m; ++r) {
    for (int64_t j = 0; j < ldy; ++j) {
      const float got = yh[r * ldy + j], want = yr[r * ldy + j];
      if (j >= c.n) {  // padding between rows stays untouched
        if (got != -12345.0f && bad++ < 5) FAIL_CHECK("wrote ldy padding at ", r, ",", j);
        continue;
      }
      const double b = c.bias ? std::fabs(bias[j]) : 0.0;
      double tol;
      if (type == WType::kI8) {
        tol = 1e-6 * (std::fabs(yr0[r * ldy + j]) + b) + 1e-30;
      } else {
        int n_terms = 0;
        const double s = block_abs_sum(type, wt, x.data() + r * ldx, j, c.k, &n_terms);
        tol = (2.0 * n_terms + 4) * std::ldexp(1.0, -24) * (s + b) + 1e-30;
      }
      if (!(std::fabs(double{got} - want) <= tol) && bad++ < 5) {
        FAIL_CHECK(var.name, " ", std::string(wtype_name(type)), " m=", c.m, " n=", c.n, " k=", c.k,
                   " at (", r, ",", j, "): got ", got, " want ", want, " tol ", tol);
      }
    }
  }
  CHECK(bad == 0);
}

std::vector<Case> cases(WType type, std::mt19937& rng) {
  std::vector<Case> out;
  const bool block = type != WType::kI8;
  const int64_t u = kunit(type);
  // Fixed tiny / odd shapes, then random ones.
  const int64_t ks_block[] = {u, 2 * u, 3 * u, 5 * u, 18 * u / 8 * 8};
  const int64_t ks_i8[] = {1, 3, 4, 5, 31, 33, 100, 576};
  const int64_t ms[] = {1, 2, 3, 5, 9, 17, 33};
  const int64_t ns[] = {1, 3, 16, 17, 33, 100};
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  for (int64_t m : ms) {
    for (int64_t n : ns) {
      const int64_t k = block ? ks_block[pick(rng) % 5] : ks_i8[pick(rng) % 8];
      out.push_back(
          {m, n, k, pick(rng) % 3 == 0 ? 7 : 0, pick(rng) % 3 == 0 ? 5 : 0, pick(rng) % 2 == 0});
    }
  }
  for (int i = 0; i < 8; ++i) {
    const int64_t m = 1 + pick(rng) % 100, n = 1 + pick(rng) % 130;
    const int64_t k = block ? u * (1 + pick(rng) % (u == kQK ? 24 : 4)) : 1 + pick(rng) % 700;
    out.push_back({m, n, k, pick(rng) % 9, pick(rng) % 9, pick(rng) % 2 == 0});
  }
  out.push_back({100, 100, block ? 1536 : 1537, 0, 0, true});  // 1536 = 6 * 256
  return out;
}

}  // namespace

TEST_CASE("int matmul: every target and type matches the reference (serial)") {
  for (const Variant& var : variants()) {
    for (WType type : kIntTypes) {
      std::mt19937 rng(1234 + static_cast<int>(type));
      for (const Case& c : cases(type, rng)) check_case(var, type, c, rng, nullptr);
    }
  }
}

TEST_CASE("int matmul: threaded runs match the reference") {
  laya::test::TestPool workers(3);
  const ThreadPool& pool = workers.pool;
  for (const Variant& var : variants()) {
    for (WType type : kIntTypes) {
      std::mt19937 rng(99 + static_cast<int>(type));
      const bool block = type != WType::kI8;
      const int64_t u = kunit(type);
      const Case cs[] = {{1, 200, block ? 256 : 250, 0, 0, true},
                         {70, 90, block ? (u == kQK ? 128 : 512) : 130, 3, 2, false},
                         {300, 20, block ? (u == kQK ? 64 : 256) : 70, 0, 1, true}};
      for (const Case& c : cs) check_case(var, type, c, rng, &pool);
    }
  }
}

TEST_CASE("int matmul: packed_bytes rejects block types with k % 32 != 0") {
  for (const Variant& var : variants()) {
    for (WType type : kIntTypes) {
      const MatmulKernel& kern = var.table.matmul[static_cast<int>(type)];
      CHECK(kern.packed_bytes(0, 64) == 0);
      CHECK(kern.packed_bytes(4, 0) == 0);
      CHECK(kern.packed_bytes(3, kunit(type) * 2) > 0);
      if (type == WType::kI8) {
        CHECK(kern.packed_bytes(3, 33) > 0);
      } else {
        CHECK(kern.packed_bytes(3, 48) == 0);
        if (is_kquant(type)) CHECK(kern.packed_bytes(3, 576) == 0);  // 576 % 256 != 0
      }
    }
  }
}

// pack does not clear its buffer first (a pass over every model at load): it must write every
// byte itself. Packed into a buffer of 0x00 and into one of 0xA5, the bytes must be identical.
TEST_CASE("int matmul: pack writes every packed byte (no clearing pass needed)") {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (const Variant& var : variants()) {
    for (WType type : kIntTypes) {
      const MatmulKernel& kern = var.table.matmul[static_cast<int>(type)];
      const int64_t ku = kunit(type);
      // n: tail tiles and partial groups; k: one unit, several, and (i8) not a multiple of 4.
      for (const auto& [n, k] : std::vector<std::pair<int64_t, int64_t>>{
               {1, ku}, {13, 3 * ku}, {67, 2 * ku}, {200, ku}, {5, type == WType::kI8 ? 37 : ku}}) {
        std::vector<float> w(static_cast<size_t>(n * k));
        for (float& v : w) v = dist(rng);
        const Weights wt = make_weights(type, w, n, k);
        const uint64_t pb = kern.packed_bytes(n, k);
        REQUIRE(pb > 0);
        AlignedBuf a(pb), b(pb);
        std::memset(a.p, 0x00, pb);
        std::memset(b.p, 0xA5, pb);
        const float* sc = wt.scales.empty() ? nullptr : wt.scales.data();
        kern.pack(wt.bytes.data(), sc, n, k, a.p);
        kern.pack(wt.bytes.data(), sc, n, k, b.p);
        INFO(var.name, " ", std::string(wtype_name(type)), " n=", n, " k=", k);
        CHECK(std::memcmp(a.p, b.p, pb) == 0);
      }
    }
  }
}

TEST_CASE("int matmul: q5_0 / q5_1 pack to GGUF's size (22 / 24 bytes per block)") {
  const int64_t n = 64, k = 3200;  // n: a multiple of every target's tiles and groups
  for (const Variant& var : variants()) {
    for (WType type : {WType::kQ5_0, WType::kQ5_1}) {
      const double gguf = static_cast<double>(n * (k / kQK)) *
                          (type == WType::kQ5_0 ? sizeof(BlockQ5_0) : sizeof(BlockQ5_1));
      const double pb =
          static_cast<double>(var.table.matmul[static_cast<int>(type)].packed_bytes(n, k));
      INFO(var.name, " ", std::string(wtype_name(type)), " packed ", pb, " gguf ", gguf);
      CHECK(pb >= gguf);
      CHECK(pb <= 1.01 * gguf);  // only the 64-byte alignment of each packed group on top
    }
  }
}

TEST_CASE("int matmul: q5 5th-bit patterns, k slices and tail tiles match the reference") {
  // Every qh pattern reaches each element's 5th bit through the packed 5th-bit vectors (GEMV)
  // and the GEMM's expanded slices (equal slices of <= 24 blocks: 25 and 49 blocks are 2 and 3).
  const uint32_t patterns[] = {0u,          0xffffffffu, 0x55555555u, 0xaaaaaaaau,
                               0x0000ffffu, 0xffff0000u, 1u,          0x80000000u};
  const int64_t ks[] = {32, 96, 24 * 32, 25 * 32, 49 * 32};
  const int64_t ms[] = {1, 2, 5, 40};
  const int64_t ns[] = {1, 7, 37};
  std::mt19937 rng(77);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (const Variant& var : variants()) {
    for (WType type : {WType::kQ5_0, WType::kQ5_1}) {
      const size_t bsize = type == WType::kQ5_0 ? sizeof(BlockQ5_0) : sizeof(BlockQ5_1);
      const size_t qh_off = type == WType::kQ5_0 ? 2 : 4;
      int idx = 0;
      for (int64_t k : ks) {
        for (int64_t m : ms) {
          for (int64_t n : ns) {
            ++idx;
            std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(m * k));
            for (float& v : w) v = dist(rng);
            for (float& v : x) v = dist(rng) * 3.0f;
            Weights wt = make_weights(type, w, n, k);
            const int64_t nblk = n * k / kQK;
            for (int64_t b = 0; b < nblk; ++b) {  // patterns cycle over blocks; some random ones
              uint32_t qh = patterns[(b + idx) % 8];
              if ((b + idx) % 11 == 0) qh = static_cast<uint32_t>(rng());
              if ((b + idx) % 13 == 0) qh = 1u << ((b + idx) % 32);  // one walking bit
              std::memcpy(wt.bytes.data() + b * bsize + qh_off, &qh, 4);
            }
            const Case c{m, n, k, 0, 0, idx % 2 == 0};
            std::vector<float> bias(static_cast<size_t>(n));
            for (float& v : bias) v = dist(rng);
            const MatmulKernel& ref = kernel_table_ref().matmul[static_cast<int>(type)];
            const std::vector<float> yr = run_kernel(ref, wt, x, bias, c, nullptr);
            const std::vector<float> yh =
                run_kernel(var.table.matmul[static_cast<int>(type)], wt, x, bias, c, nullptr);
            int bad = 0;
            for (int64_t r = 0; r < m; ++r) {
              for (int64_t j = 0; j < n; ++j) {
                int n_terms = 0;
                const double s = block_abs_sum(type, wt, x.data() + r * k, j, k, &n_terms);
                const double b = c.bias ? std::fabs(bias[j]) : 0.0;
                const double tol = (2.0 * n_terms + 4) * std::ldexp(1.0, -24) * (s + b) + 1e-30;
                const float got = yh[r * n + j], want = yr[r * n + j];
                if (!(std::fabs(double{got} - want) <= tol) && bad++ < 3)
                  FAIL_CHECK(var.name, " ", std::string(wtype_name(type)), " m=", m, " n=", n,
                             " k=", k, " at (", r, ",", j, "): got ", got, " want ", want);
              }
            }
            CHECK(bad == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("int matmul: run twice on the same packed weights gives identical output") {
  for (const Variant& var : variants()) {
    for (WType type : kIntTypes) {
      const int64_t m = 7, n = 45, k = is_kquant(type) ? 512 : 192;
      std::mt19937 rng(5);
      std::normal_distribution<float> dist(0.0f, 1.0f);
      std::vector<float> w(n * k), x(m * k);
      for (float& v : w) v = dist(rng);
      for (float& v : x) v = dist(rng);
      const Weights wt = make_weights(type, w, n, k);
      const MatmulKernel& kern = var.table.matmul[static_cast<int>(type)];
      AlignedBuf packed(kern.packed_bytes(n, k));
      kern.pack(wt.bytes.data(), wt.scales.empty() ? nullptr : wt.scales.data(), n, k, packed.p);
      AlignedBuf scratch(kern.scratch_bytes(m, n, k, 1));
      std::vector<float> y1(m * n), y2(m * n);
      kern.run(packed.p, x.data(), k, y1.data(), n, nullptr, m, n, k, scratch.p, nullptr);
      std::memset(scratch.p, 0x5a, kern.scratch_bytes(m, n, k, 1));  // stale scratch is harmless
      kern.run(packed.p, x.data(), k, y2.data(), n, nullptr, m, n, k, scratch.p, nullptr);
      CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("int matmul: packs stack at stack_rows (one run over a stack = each weight's run)") {
  std::vector<Variant> tables = variants();
  tables.push_back({"ref", kernel_table_ref()});
  for (const Variant& var : tables) {
    for (WType type : kIntTypes) {
      const MatmulKernel& kern = var.table.matmul[static_cast<int>(type)];
      INFO(var.name, " ", std::string(wtype_name(type)));
      if (type == WType::kI8) {  // its scales follow the rows: no stacking
        CHECK(kern.stack_rows == 0);
        continue;
      }
      const int64_t sr = kern.stack_rows;
      REQUIRE(sr > 0);
      const int64_t k = 2 * kunit(type);
      // Three weights sharing x (as q / k / v): whole stack_rows, then a tail.
      const std::vector<int64_t> rows = {2 * sr, sr, 37};
      std::mt19937 rng(23);
      std::normal_distribution<float> dist(0.0f, 1.0f);
      std::vector<Weights> parts;
      std::vector<uint8_t> stacked_file;
      int64_t n = 0;
      for (int64_t r : rows) {
        std::vector<float> w(static_cast<size_t>(r * k));
        for (float& v : w) v = dist(rng);
        parts.push_back(make_weights(type, w, r, k));
        stacked_file.insert(stacked_file.end(), parts.back().bytes.begin(),
                            parts.back().bytes.end());
        n += r;
      }
      const uint64_t pb = kern.packed_bytes(n, k);
      AlignedBuf whole(pb), pieces(pb);
      kern.pack(stacked_file.data(), nullptr, n, k, whole.p);
      int64_t row = 0;
      std::vector<uint64_t> offsets;
      for (size_t i = 0; i < rows.size(); ++i) {
        offsets.push_back(kern.packed_bytes(row, k));
        CHECK(offsets.back() % 64 == 0);
        kern.pack(parts[i].bytes.data(), nullptr, rows[i], k,
                  static_cast<uint8_t*>(pieces.p) + offsets.back());
        row += rows[i];
      }
      CHECK(offsets[1] + kern.packed_bytes(rows[1], k) + kern.packed_bytes(rows[2], k) == pb);
      CHECK(std::memcmp(whole.p, pieces.p, pb) == 0);
      // The GEMV over the stack gives each weight's own GEMV, bit for bit.
      std::vector<float> x(static_cast<size_t>(k)), y(static_cast<size_t>(n));
      for (float& v : x) v = dist(rng);
      AlignedBuf scratch(kern.scratch_bytes(1, n, k, 1));
      kern.run(pieces.p, x.data(), k, y.data(), n, nullptr, 1, n, k, scratch.p, nullptr);
      row = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        std::vector<float> yi(static_cast<size_t>(rows[i]));
        kern.run(static_cast<uint8_t*>(pieces.p) + offsets[i], x.data(), k, yi.data(), rows[i],
                 nullptr, 1, rows[i], k, scratch.p, nullptr);
        CHECK(std::memcmp(yi.data(), y.data() + row, yi.size() * sizeof(float)) == 0);
        row += rows[i];
      }
    }
  }
}

TEST_CASE("int matmul: close to the f32 product of the dequantized weights (NMSE)") {
  // The only approximation left is the activation quantization (8 bits per token or per block of
  // 32): for N(0, 1) data its NMSE is ~3e-5 (blocks) to ~7e-5 (per token); 5e-4 catches any
  // structural error (which gives NMSE ~1) with margin.
  const int64_t m = 9, n = 70, k = 768;
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> w(n * k), x(m * k), wd(n * k);
  for (float& v : w) v = dist(rng);
  for (float& v : x) v = dist(rng);
  for (const Variant& var : variants()) {
    for (WType type : kIntTypes) {
      const Weights wt = make_weights(type, w, n, k);
      for (int64_t j = 0; j < n; ++j)
        ref::dequantize_row(type, wt.bytes.data(), wt.scales.empty() ? nullptr : wt.scales.data(),
                            j, k, wd.data() + j * k);
      const Case c{m, n, k, 0, 0, false};
      const std::vector<float> y =
          run_kernel(var.table.matmul[static_cast<int>(type)], wt, x, {}, c, nullptr);
      double err = 0, ref2 = 0;
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t i = 0; i < k; ++i) acc += double{x[r * k + i]} * wd[j * k + i];
          err += (y[r * n + j] - acc) * (y[r * n + j] - acc);
          ref2 += acc * acc;
        }
      }
      const double nmse = err / ref2;
      INFO(var.name, " ", std::string(wtype_name(type)), " NMSE ", nmse);
      CHECK(nmse < 5e-4);
      CHECK(nmse > 0);  // the activations really were quantized
    }
  }
}

TEST_CASE("int matmul: SIMD activation quantizers produce quant.h's bytes exactly") {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (int64_t target : kernel_hwy_targets()) {
    const char* name = kernel_target_name(target);
    for (int64_t k : {32, 64, 96, 37, 1, 200, 256, 1024}) {
      std::vector<float> x(k);
      for (float& v : x) v = dist(rng) * 5.0f;
      // Ties: a block (row) whose amax is 127 has d = 1 (i8: inv = 1), so x * id is x itself:
      // put halves there, which must round to even, plus the value just below 0.5.
      const float ties[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -125.5f, 0.49999997f};
      if (k >= 32) {
        x[0] = 127.0f;
        for (int i = 0; i < 9; ++i) x[1 + i] = ties[i];
        if (k >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
        if (k >= 1024) {
          // q8_K: an all-zero super-block, and one whose largest magnitude occurs with both signs
          // (the first one, negative, sets the scale's sign).
          std::fill(x.begin() + 512, x.begin() + 768, 0.0f);
          x[256] = -50.0f;
          x[300] = 50.0f;
        }
      } else {
        x[0] = -127.0f;
        if (k > 1) x[1] = 3.5f;
      }
      for (WType type : kIntTypes) {
        if (type != WType::kI8 && k % kunit(type) != 0) continue;
        if (is_kquant(type)) {
          std::vector<BlockQ8_K> want(k / kQK_K), got(k / kQK_K);
          quantize_row_q8_K(x.data(), want.data(), k);
          const float r = hwy_matmul_int::quantize_act(target, type, x.data(), k, got.data());
          CHECK_MESSAGE(r == 0.0f, name, " ", std::string(wtype_name(type)), " sub-block sums");
          CHECK_MESSAGE(std::memcmp(got.data(), want.data(), want.size() * sizeof(BlockQ8_K)) == 0,
                        name, " q8_K k=", k);
        } else if (type == WType::kI8) {
          // A row with amax 127: the i8 quantizer's inv is exactly 1 too.
          std::vector<int8_t> want(k), got(k);
          const float s_want = quantize_row_i8(x.data(), want.data(), k);
          const float s_got = hwy_matmul_int::quantize_act(target, type, x.data(), k, got.data());
          CHECK_MESSAGE(s_got == s_want, name, " i8 k=", k);
          CHECK_MESSAGE(std::memcmp(got.data(), want.data(), k) == 0, name, " i8 k=", k);
        } else if (type == WType::kQ4_1 || type == WType::kQ5_1) {
          std::vector<BlockQ8_1> want(k / kQK), got(k / kQK);
          quantize_act_q8_1(x.data(), want.data(), k);
          hwy_matmul_int::quantize_act(target, type, x.data(), k, got.data());
          CHECK_MESSAGE(std::memcmp(got.data(), want.data(), want.size() * sizeof(BlockQ8_1)) == 0,
                        name, " q8_1 k=", k);
        } else {
          std::vector<BlockQ8_0> want(k / kQK), got(k / kQK);
          quantize_act_q8_0(x.data(), want.data(), k);
          hwy_matmul_int::quantize_act(target, type, x.data(), k, got.data());
          CHECK_MESSAGE(std::memcmp(got.data(), want.data(), want.size() * sizeof(BlockQ8_0)) == 0,
                        name, " q8_0 k=", k);
        }
      }
    }
    // The all-zero i8 row: scale 1, zeros.
    std::vector<float> z(50, 0.0f);
    std::vector<int8_t> q(50, 1);
    CHECK(hwy_matmul_int::quantize_act(target, WType::kI8, z.data(), 50, q.data()) == 1.0f);
    CHECK(std::count(q.begin(), q.end(), 0) == 50);
  }
}

TEST_CASE("int matmul: non-finite and tiny activations quantize by quant.h's rule everywhere") {
  // Row / block contents that once reached a float-to-int conversion out of range (inf * 0 is NaN,
  // 1 / d overflows for a denormal amax): every quantizer now writes q = 0 and a NaN or unit
  // scale, bit for bit the same on every target.
  const float specials[] = {INFINITY, -INFINITY, NAN, 1e-40f, 3e38f, -3e38f};
  const int64_t k = 96;  // three q8 blocks
  for (float special : specials) {
    std::vector<float> x(k);
    for (int64_t i = 0; i < k; ++i) x[i] = 0.25f * static_cast<float>(i % 7) - 0.75f;
    x[5] = special;  // block 0 (and the i8 row)
    for (int64_t i = 64; i < 96; ++i) x[i] = special == 1e-40f ? 1e-41f : 0.0f;  // block 2 tiny
    const std::string what = "special " + std::to_string(special);
    std::vector<int8_t> want_i8(k);
    const float s_want = quantize_row_i8(x.data(), want_i8.data(), k);
    CHECK_MESSAGE((std::isfinite(special) ? s_want > 0.0f : std::isnan(s_want)), what);
    std::vector<BlockQ8_0> want_q80(k / kQK);
    quantize_act_q8_0(x.data(), want_q80.data(), k);
    std::vector<BlockQ8_1> want_q81(k / kQK);
    quantize_act_q8_1(x.data(), want_q81.data(), k);
    if (!std::isfinite(special))
      for (int i = 0; i < kQK; ++i) CHECK(want_q80[0].qs[i] == 0);
    for (int64_t target : kernel_hwy_targets()) {
      const std::string name = std::string(kernel_target_name(target)) + " " + what;
      std::vector<int8_t> got_i8(k);
      const float s_got =
          hwy_matmul_int::quantize_act(target, WType::kI8, x.data(), k, got_i8.data());
      CHECK_MESSAGE(std::memcmp(&s_got, &s_want, 4) == 0, name, " i8 scale");
      CHECK_MESSAGE(std::memcmp(got_i8.data(), want_i8.data(), k) == 0, name, " i8");
      std::vector<BlockQ8_0> got_q80(k / kQK);
      hwy_matmul_int::quantize_act(target, WType::kQ8_0, x.data(), k, got_q80.data());
      CHECK_MESSAGE(std::memcmp(got_q80.data(), want_q80.data(), sizeof(BlockQ8_0) * 3) == 0, name,
                    " q8_0");
      std::vector<BlockQ8_1> got_q81(k / kQK);
      hwy_matmul_int::quantize_act(target, WType::kQ4_1, x.data(), k, got_q81.data());
      CHECK_MESSAGE(std::memcmp(got_q81.data(), want_q81.data(), sizeof(BlockQ8_1) * 3) == 0, name,
                    " q8_1");
    }
    // q8_K: the special in super-block 0, super-block 1 tiny (or zero).
    std::vector<float> xk(2 * kQK_K);
    for (size_t i = 0; i < xk.size(); ++i) xk[i] = 0.25f * static_cast<float>(i % 7) - 0.75f;
    xk[5] = special;
    for (size_t i = kQK_K; i < xk.size(); ++i) xk[i] = special == 1e-40f ? 1e-41f : 0.0f;
    std::vector<BlockQ8_K> want_q8k(2);
    quantize_row_q8_K(xk.data(), want_q8k.data(), 2 * kQK_K);
    for (int64_t target : kernel_hwy_targets()) {
      const std::string name = std::string(kernel_target_name(target)) + " " + what;
      for (WType type : {WType::kQ4_K, WType::kQ6_K}) {
        std::vector<BlockQ8_K> got(2);
        CHECK_MESSAGE(
            hwy_matmul_int::quantize_act(target, type, xk.data(), 2 * kQK_K, got.data()) == 0.0f,
            name, " sub-block sums");
        CHECK_MESSAGE(std::memcmp(got.data(), want_q8k.data(), sizeof(BlockQ8_K) * 2) == 0, name,
                      " q8_K ", std::string(wtype_name(type)));
      }
    }
  }
  // Through whole matmuls: a row holding an inf gives NaN outputs on every path, the other rows
  // the reference's values.
  // K = 256: one K-quant super-block (q8_K activations), eight q8 blocks.
  const int64_t m = 3, n = 20, kk = 256;
  std::vector<float> w(static_cast<size_t>(n * kk)), x(static_cast<size_t>(m * kk)), bias(n, 0.0f);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 13) - 0.05f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>(i % 11) - 0.5f;
  x[kk + 7] = INFINITY;  // row 1
  for (const Variant& var : variants()) {
    for (WType type : kIntTypes) {
      const Weights wt = make_weights(type, w, n, kk);
      const Case c{m, n, kk, 0, 0, false};
      const std::vector<float> yr =
          run_kernel(kernel_table_ref().matmul[static_cast<int>(type)], wt, x, bias, c, nullptr);
      const std::vector<float> yh =
          run_kernel(var.table.matmul[static_cast<int>(type)], wt, x, bias, c, nullptr);
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < n; ++j) {
          INFO(var.name, " ", std::string(wtype_name(type)), " row ", r, " col ", j);
          const float want = yr[r * n + j], got = yh[r * n + j];
          if (r == 1) {
            CHECK(std::isnan(want));
            CHECK(std::isnan(got));
          } else {
            CHECK(std::isfinite(got));
            CHECK(std::fabs(got - want) <= 1e-5f * std::fabs(want) + 1e-4f);
          }
        }
    }
  }
}

TEST_CASE("int matmul: extreme int8 values (-128, 127, nibble 15) do not saturate any path") {
  // Weights of -128 / 127 (possible in a file though quantize_row_* never writes -128) against
  // x quantized to +-127: pmaddubsw pair sums reach 2 * 128 * 127 = 32512, just below int16
  // saturation; every path must still equal the reference.
  // K-quants: every quant at its largest (q4_K 15, q5_K 31, q6_K 63 and 0, i.e. -32), scales and
  // mins at 63 (q6_K: -128 and 127), so the int32 sums reach their largest magnitudes.
  const int64_t m = 3, n = 37;
  for (const Variant& var : variants()) {
    for (WType type : kIntTypes) {
      const int64_t k = is_kquant(type) ? 512 : 96;
      std::vector<float> x(m * k);
      for (int64_t i = 0; i < m * k; ++i) x[i] = (i % 3 == 0) ? -2.0f : 2.0f;
      Weights wt;
      if (is_kquant(type)) {
        std::vector<float> w(n * k, 1.0f);
        wt = make_weights(type, w, n, k);
        const size_t bs = kquant_block_bytes(type);
        for (int64_t b = 0; b < n * k / kQK_K; ++b) {
          uint8_t* blk = wt.bytes.data() + b * bs;
          if (type == WType::kQ6_K) {
            for (int i = 0; i < 192; ++i)
              blk[i] = static_cast<uint8_t>((i + b) % 3 ? 0xff : 0x00);  // ql, qh: 63 or 0
            for (int i = 0; i < 16; ++i)
              blk[192 + i] = static_cast<uint8_t>((i + b) % 2 ? -128 : 127);
          } else {
            for (int i = 4; i < 16; ++i) blk[i] = 0xff;  // every scale and min 63
            for (size_t i = 16; i < bs; ++i) blk[i] = static_cast<uint8_t>((i + b) % 3 ? 0xff : 0);
          }
        }
      } else if (type == WType::kI8) {
        wt.bytes.resize(n * k);
        wt.scales.assign(n, 0.01f);
        for (int64_t i = 0; i < n * k; ++i)
          wt.bytes[i] = static_cast<uint8_t>((i % 5 < 3) ? -128 : 127);
      } else {
        std::vector<float> w(n * k, 1.0f);
        wt = make_weights(type, w, n, k);
        const bool q5 = type == WType::kQ5_0 || type == WType::kQ5_1;
        const size_t bsize = type == WType::kQ8_0   ? sizeof(BlockQ8_0)
                             : type == WType::kQ4_0 ? sizeof(BlockQ4_0)
                             : type == WType::kQ4_1 ? sizeof(BlockQ4_1)
                             : type == WType::kQ5_0 ? sizeof(BlockQ5_0)
                                                    : sizeof(BlockQ5_1);
        // qs after d (and m; q5: after qh, whose bits all set make every element 16 + nibble)
        const size_t qoff = type == WType::kQ4_1   ? 4
                            : type == WType::kQ5_0 ? 6
                            : type == WType::kQ5_1 ? 8
                                                   : 2;
        for (int64_t b = 0; b < n * k / kQK; ++b) {
          uint8_t* qs = wt.bytes.data() + b * bsize + qoff;
          if (q5) std::memset(qs - 4, (b % 2) ? 0xff : 0x5a, 4);  // q up to 31
          for (int i = 0; i < (type == WType::kQ8_0 ? kQK : kQK / 2); ++i)
            qs[i] = type == WType::kQ8_0 ? static_cast<uint8_t>((i + b) % 3 ? -128 : 127)
                                         : static_cast<uint8_t>((i + b) % 3 ? 0x0f : 0xf0);
        }
      }
      const Case c{m, n, k, 0, 0, true};
      std::vector<float> bias(n, 0.5f);
      const std::vector<float> yr =
          run_kernel(kernel_table_ref().matmul[static_cast<int>(type)], wt, x, bias, c, nullptr);
      const std::vector<float> yh =
          run_kernel(var.table.matmul[static_cast<int>(type)], wt, x, bias, c, nullptr);
      for (size_t i = 0; i < yr.size(); ++i) {
        INFO(var.name, " ", std::string(wtype_name(type)), " at ", i);
        REQUIRE(std::fabs(yh[i] - yr[i]) <= 1e-5f * std::fabs(yr[i]) + 1e-3f);
      }
    }
  }
}

TEST_CASE("int matmul: int16 sums at their exact bounds (GEMV and GEMM)") {
  // Every quant at one extreme against x quantized to all +127 or all -127 (a constant row), so
  // each int16 sum of the pmaddubsw paths reaches its bound (q8_0 pairs 2 * 128 * 127 = 32512;
  // q4_K chunks 8 * 2 * 15 * 127 = 30480; q5_K 4 * 2 * 31 * 127 = 31496; q6_K a sub-block's
  // (q - 32) * x, 8 * 32 * 127 = 32512 with q = 0) with either sign, in the GEMV (m = 1) and the
  // GEMM micro-kernels; every path must equal the reference.
  const int64_t n = 37;
  const WType types[] = {WType::kQ8_0, WType::kQ4_K, WType::kQ5_K, WType::kQ6_K};
  for (const Variant& var : variants()) {
    for (WType type : types) {
      const int64_t k = is_kquant(type) ? 512 : 96;
      for (int wv = 0; wv < 2; ++wv) {  // q8_0: -128 / 127; K-quants: all quant bits 0 / 1
        std::vector<float> w(n * k, 1.0f);
        Weights wt = make_weights(type, w, n, k);
        if (type == WType::kQ8_0) {
          for (int64_t b = 0; b < n * k / kQK; ++b)
            std::memset(wt.bytes.data() + b * sizeof(BlockQ8_0) + 2, wv ? 0x7f : 0x80, kQK);
        } else {
          const size_t bs = kquant_block_bytes(type);
          const size_t qbytes = type == WType::kQ6_K ? 192 : (type == WType::kQ5_K ? 160 : 128);
          const size_t qoff = type == WType::kQ6_K ? 0 : 16;
          for (int64_t b = 0; b < n * k / kQK_K; ++b) {
            uint8_t* blk = wt.bytes.data() + b * bs;
            std::memset(blk + qoff, wv ? 0xff : 0x00, qbytes);
            if (type == WType::kQ6_K) {
              for (int i = 0; i < 16; ++i) blk[192 + i] = static_cast<uint8_t>(i % 2 ? -128 : 127);
            } else {
              std::memset(blk + 4, 0xff, 12);  // every scale and min 63
            }
          }
        }
        for (float xv : {2.0f, -2.0f}) {
          for (int64_t m : {1, 3}) {
            std::vector<float> x(m * k, xv);
            const Case c{m, n, k, 0, 0, true};
            std::vector<float> bias(n, 0.5f);
            const std::vector<float> yr = run_kernel(
                kernel_table_ref().matmul[static_cast<int>(type)], wt, x, bias, c, nullptr);
            const std::vector<float> yh =
                run_kernel(var.table.matmul[static_cast<int>(type)], wt, x, bias, c, nullptr);
            for (size_t i = 0; i < yr.size(); ++i) {
              INFO(var.name, " ", std::string(wtype_name(type)), " w ", wv, " x ", xv, " m ", m,
                   " at ", i);
              REQUIRE(std::fabs(yh[i] - yr[i]) <= 1e-5f * std::fabs(yr[i]) + 1e-3f);
            }
          }
        }
      }
    }
  }
}
