// Matmul kernels with f32 activations (f32, f16, bf16, i8w): every compiled Highway target against the scalar
// reference (kernels/ref/matmul.cpp), on odd and tiny shapes, row strides, bias on and off, serial
// and threaded; plus the packing contract (pack once, run reads the packed buffer only).
//
// Tolerances (normalized mean squared error, sum (y - ref)^2 / sum ref^2), per weight type:
//   f32  1e-9  The reference sums in double; the kernel sums f32 FMAs in blocks. The error of one
//              output is ~sqrt(k) * 2^-24 of sum |x w|, so NMSE is ~1e-13 on wide outputs; the
//              worst cases are single outputs (m = n = 1) where cancellation leaves |y| << sum
//              |x w|: 2.5e-11 observed over these cases. Any wrong, missing or doubled term or
//              output gives >= ~1e-4 (1 / k or 1 / (m n)).
//   f16  1e-9  Half weights widen to f32 exactly; the rest is the f32 computation (1.2e-11 seen).
//   i8w  1e-9  int8 weights widen to f32 exactly; the f32 computation, then one f32 multiply by
//              the row scale (as the reference). On AMX the GEMMs see x as bf16 hi / lo halves
//              (as bf16 below; int8 is exact in bf16): ~1e-11 over these many-output cases. A
//              kernel quantizing x to int8 per token (the i8 kernel's a8w8) is off by ~1e-5.
//   bf16 1e-10 of a different measure: sum (y - ref)^2 / sum (|bias| + sum_k |x w|)^2, the error
//              against the size of the terms rather than of the result, since an output that
//              cancels to near zero keeps the terms' error. x stays f32 (the reference: f32 x,
//              exact bf16 weights, double sums). The FMA kernels widen the weights exactly, so
//              only summation differs (f32-level). vdpbf16ps (AVX512-BF16) and AMX (tdpbf16ps)
//              see x as hi = bf16(x) plus lo = bf16(x - hi), x to ~2^-17 relative: at most
//              2^-34 = 5.8e-11 for one term (k = 1), ~1e-11 / k on wide sums, each summed in
//              the instruction's own order and rounding, denormals flushed. (Plain NMSE failed
//              at 1.5e-8 on one cancelling 31-term output on a Xeon with AVX512-BF16.) A kernel
//              that dropped the lo half is off by ~2^-10 per term: >= ~1e-6 / k (8e-10 at the
//              largest k here, 2101), and one that rounded x to bf16 fails the exact test below.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/hwy/matmul_float.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "tests/kernels/test_util.h"

using namespace laya::kernels;

namespace {

// The float family's types, from the manifest (kernels/matmul.inc).
#define LAYA_FAMILY_float(Name) WType::k##Name,
#define LAYA_FAMILY_int(Name)
constexpr WType kFloatTypes[] = {
#define MATMUL_WTYPE(name, Name, family, peak) LAYA_FAMILY_##family(Name)
#include "kernels/matmul.inc"
#undef MATMUL_WTYPE
};
#undef LAYA_FAMILY_float
#undef LAYA_FAMILY_int

// One table per variant under test: every Highway target, plus AVX3 without AMX where the CPU has
// it (bf16 and i8w GEMMs then run on f32 FMA, as on a CPU without AMX).
struct Variant {
  std::string name;
  KernelTable table;
};

std::vector<Variant> variants() {
  std::vector<Variant> v;
  for (const int64_t target : kernel_hwy_targets()) {
    v.push_back({kernel_target_name(target), kernel_table_hwy(target)});
    if (std::string(kernel_target_name(target)) == "AVX3" && hwy_matmul_float::amx_bf16_usable()) {
      KernelTable t = kernel_table_hwy(target);
      hwy_matmul_float::fill(t, target, /*allow_amx=*/false);
      t.isa = "AVX3 (no AMX)";
      v.push_back({"AVX3 (no AMX)", t});
    }
  }
  return v;
}

double tolerance(WType t) {
  return t == WType::kBF16 ? 1e-10 : 1e-9;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<uint8_t, FreeDeleter>;

// 64-byte aligned, `bytes` usable plus a 64-byte guard filled with 0xA5 (checked by guard_ok).
Buffer alloc_guarded(uint64_t bytes) {
  const uint64_t len = (bytes + 64 + 63) / 64 * 64;
  Buffer b(static_cast<uint8_t*>(std::aligned_alloc(64, len)));
  std::memset(b.get(), 0x5a, bytes);
  std::memset(b.get() + bytes, 0xa5, len - bytes);
  return b;
}
bool guard_ok(const Buffer& b, uint64_t bytes) {
  for (uint64_t i = 0; i < 64; ++i) {
    if (b.get()[bytes + i] != 0xa5) return false;
  }
  return true;
}

// Weights in the file layout of `t`, from values in [-1, 1] (i8w: quantized per row, the scales
// into *scales).
std::vector<uint8_t> make_weights(WType t, int64_t n, int64_t k, std::mt19937& rng,
                                  std::vector<float>* scales) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const size_t count = static_cast<size_t>(n * k);
  if (t == WType::kI8W) {
    std::vector<float> v(count);
    for (float& f : v) f = u(rng);
    std::vector<uint8_t> w(count);
    scales->resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j)
      (*scales)[static_cast<size_t>(j)] =
          quantize_row_i8(v.data() + j * k, reinterpret_cast<int8_t*>(w.data()) + j * k, k);
    return w;
  }
  std::vector<uint8_t> w(count * (t == WType::kF32 ? 4 : 2));
  for (size_t i = 0; i < count; ++i) {
    const float v = u(rng);
    if (t == WType::kF32) {
      std::memcpy(w.data() + 4 * i, &v, 4);
    } else {
      const uint16_t h = t == WType::kF16 ? f32_to_f16(v) : f32_to_bf16(v);
      std::memcpy(w.data() + 2 * i, &h, 2);
    }
  }
  return w;
}

// sum (y - ref)^2 / sum (|bias| + sum_k |x w|)^2 for bf16 weights w [n, k].
double bf16_error(const std::vector<float>& y, const std::vector<float>& ref,
                  const std::vector<float>& x, int64_t ldx, const std::vector<uint8_t>& w,
                  const float* bias, int64_t m, int64_t n, int64_t k, int64_t ldy) {
  double err = 0, norm = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      double terms = bias != nullptr ? std::fabs(bias[j]) : 0.0;
      for (int64_t i = 0; i < k; ++i) {
        uint16_t h;
        std::memcpy(&h, w.data() + 2 * (j * k + i), 2);
        terms += std::fabs(static_cast<double>(x[static_cast<size_t>(r * ldx + i)]) *
                           static_cast<double>(bf16_to_f32(h)));
      }
      const double d = static_cast<double>(y[static_cast<size_t>(r * ldy + j)]) -
                       static_cast<double>(ref[static_cast<size_t>(r * ldy + j)]);
      err += d * d;
      norm += terms * terms;
    }
  }
  return norm > 0 ? err / norm : err;
}

double nmse(const std::vector<float>& y, const std::vector<float>& ref, int64_t m, int64_t n,
            int64_t ldy) {
  double err = 0, norm = 0;
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t j = 0; j < n; ++j) {
      const double a = y[static_cast<size_t>(r * ldy + j)];
      const double b = ref[static_cast<size_t>(r * ldy + j)];
      err += (a - b) * (a - b);
      norm += b * b;
    }
  }
  return norm > 0 ? err / norm : err;
}

// y = x . W^T (+ bias) with one table; y keeps its padding (columns n..ldy-1) as given.
struct Runner {
  const MatmulKernel& kern;
  uint64_t packed_size;
  Buffer packed;

  Runner(const MatmulKernel& kern_, const std::vector<uint8_t>& w, int64_t n, int64_t k,
         const std::vector<float>& scales = {})
      : kern(kern_), packed_size(kern_.packed_bytes(n, k)), packed(alloc_guarded(packed_size)) {
    REQUIRE(packed_size > 0);
    kern.pack(w.data(), scales.empty() ? nullptr : scales.data(), n, k, packed.get());
    REQUIRE(guard_ok(packed, packed_size));
  }

  void run(const std::vector<float>& x, int64_t ldx, std::vector<float>& y, int64_t ldy,
           const float* bias, int64_t m, int64_t n, int64_t k, const ThreadPool* pool) {
    const int threads = pool != nullptr ? pool->n_threads : 1;
    const uint64_t scratch_size = kern.scratch_bytes(m, n, k, threads);
    Buffer scratch = alloc_guarded(scratch_size);
    kern.run(packed.get(), x.data(), ldx, y.data(), ldy, bias, m, n, k, scratch.get(), pool);
    REQUIRE(guard_ok(scratch, scratch_size));
  }
};

struct Case {
  int64_t m, n, k, ldx, ldy;
  bool bias;
};

// Runs one case on `table` and the reference; checks NMSE, that y's padding is untouched, and
// (when `pool`) that the threaded result equals the serial one bit for bit (every output is
// computed in the same order whatever the split).
void check_case(const KernelTable& table, WType type, const Case& c, std::mt19937& rng,
                const ThreadPool* pool) {
  CAPTURE(table.isa);
  CAPTURE(wtype_name(type));
  CAPTURE(c.m);
  CAPTURE(c.n);
  CAPTURE(c.k);
  CAPTURE(c.ldx);
  CAPTURE(c.ldy);
  CAPTURE(c.bias);
  std::vector<float> scales;
  const std::vector<uint8_t> w = make_weights(type, c.n, c.k, rng, &scales);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(c.m * c.ldx));
  for (float& v : x) v = u(rng);
  std::vector<float> bias(static_cast<size_t>(c.n));
  for (float& v : bias) v = u(rng);
  const float* b = c.bias ? bias.data() : nullptr;

  const float kPad = -12345.0f;
  std::vector<float> ref(static_cast<size_t>(c.m * c.ldy), kPad);
  Runner rr(kernel_table_ref().matmul[static_cast<int>(type)], w, c.n, c.k, scales);
  rr.run(x, c.ldx, ref, c.ldy, b, c.m, c.n, c.k, nullptr);

  std::vector<float> y(ref.size(), kPad);
  Runner rh(table.matmul[static_cast<int>(type)], w, c.n, c.k, scales);
  rh.run(x, c.ldx, y, c.ldy, b, c.m, c.n, c.k, nullptr);
  const double e = type == WType::kBF16 ? bf16_error(y, ref, x, c.ldx, w, b, c.m, c.n, c.k, c.ldy)
                                        : nmse(y, ref, c.m, c.n, c.ldy);
  CAPTURE(e);
  CHECK(e <= tolerance(type));
  bool pad_ok = true;
  for (int64_t r = 0; r < c.m; ++r) {
    for (int64_t j = c.n; j < c.ldy; ++j) pad_ok &= y[static_cast<size_t>(r * c.ldy + j)] == kPad;
  }
  CHECK(pad_ok);

  if (pool != nullptr) {
    std::vector<float> yt(ref.size(), kPad);
    rh.run(x, c.ldx, yt, c.ldy, b, c.m, c.n, c.k, pool);
    CHECK(std::memcmp(yt.data(), y.data(), y.size() * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("matmul float: every target and type matches the reference on odd and tiny shapes") {
  const int64_t ms[] = {1, 2, 3, 13, 17, 31, 33, 65, 100};
  const int64_t ns[] = {1, 3, 17, 31, 33, 65, 100};
  const int64_t ks[] = {1, 2, 3, 17, 31, 33, 65, 100};
  for (const Variant& variant : variants()) {
    const KernelTable& table = variant.table;
    MESSAGE("target " << variant.name);
    for (const WType type : kFloatTypes) {
      std::mt19937 rng(1234);
      int i = 0;
      for (const int64_t m : ms) {
        for (const int64_t n : ns) {
          for (const int64_t k : ks) {
            // Strides and bias vary deterministically over the cases.
            const Case c{m, n, k, k + (i % 3) * 5, n + (i / 3 % 2) * 7, i % 2 == 0};
            check_case(table, type, c, rng, nullptr);
            ++i;
          }
        }
      }
    }
  }
}

TEST_CASE("matmul float: blocked shapes (several k blocks, column and row chunks), threaded") {
  // k of 1030 and 2101 crosses 2-3 k blocks of every FMA kernel (768; an odd last block for
  // bf16) and 33-66 AMX tile steps with a partial last one; n > 160 several column chunks; m > 192
  // several row chunks (AMX: several 32-row blocks and row chunks); 2 and 3 workers split rows,
  // columns and GEMV panels differently.
  const Case cases[] = {
      {1, 1000, 777, 777, 1000, true},  {1, 37, 1100, 1103, 37, false},
      {2, 300, 600, 600, 300, true},    {40, 300, 1030, 1031, 305, false},
      {200, 45, 70, 70, 45, true},      {130, 513, 257, 260, 520, true},
      {70, 100, 2101, 2101, 100, true},
  };
  for (const int threads : {2, 3}) {
    laya::test::TestPool workers(threads);
    const ThreadPool& pool = workers.pool;
    for (const Variant& variant : variants()) {
      const KernelTable& table = variant.table;
      CAPTURE(variant.name);
      for (const WType type : kFloatTypes) {
        std::mt19937 rng(99);
        for (const Case& c : cases) check_case(table, type, c, rng, &pool);
      }
    }
  }
}

TEST_CASE("matmul float: a row's outputs do not depend on the other rows of the GEMM") {
  // Answers must not depend on which rows share a batch: every GEMM row (m > 1) sums in the same
  // order whatever m is. k = 2101 crosses k blocks (FMA) and k slices (AMX), m = 70 ends in a
  // partial row tile / block that m = 40 and m = 64 fill differently; n = 100 a partial panel.
  const int64_t n = 100, k = 2101;
  for (const Variant& variant : variants()) {
    const KernelTable& table = variant.table;
    for (const WType type : kFloatTypes) {
      CAPTURE(variant.name);
      CAPTURE(wtype_name(type));
      std::mt19937 rng(5);
      std::vector<float> scales;
      const std::vector<uint8_t> w = make_weights(type, n, k, rng, &scales);
      std::vector<float> x(static_cast<size_t>(70 * k)), bias(static_cast<size_t>(n));
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (float& v : x) v = u(rng);
      for (float& v : bias) v = u(rng);
      Runner r(table.matmul[static_cast<int>(type)], w, n, k, scales);
      std::vector<float> all(static_cast<size_t>(70 * n));
      r.run(x, k, all, n, bias.data(), 70, n, k, nullptr);
      for (const int64_t m : {int64_t{2}, int64_t{40}, int64_t{64}}) {
        CAPTURE(m);
        std::vector<float> some(static_cast<size_t>(m * n));
        r.run(x, k, some, n, bias.data(), m, n, k, nullptr);
        CHECK(std::memcmp(some.data(), all.data(), some.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("matmul float: packing happens once; run never writes the packed weights") {
  for (const Variant& variant : variants()) {
    const KernelTable& table = variant.table;
    for (const WType type : kFloatTypes) {
      CAPTURE(variant.name);
      CAPTURE(wtype_name(type));
      for (const int64_t m : {int64_t{1}, int64_t{29}}) {
        const int64_t n = 70, k = 301;
        std::mt19937 rng(7);
        std::vector<float> scales;
        const std::vector<uint8_t> w = make_weights(type, n, k, rng, &scales);
        std::vector<float> x(static_cast<size_t>(m * k)), bias(static_cast<size_t>(n));
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (float& v : x) v = u(rng);
        for (float& v : bias) v = u(rng);
        Runner r(table.matmul[static_cast<int>(type)], w, n, k, scales);
        const std::vector<uint8_t> before(r.packed.get(), r.packed.get() + r.packed_size);
        std::vector<float> y1(static_cast<size_t>(m * n)), y2(y1.size(), 1.0f);
        r.run(x, k, y1, n, bias.data(), m, n, k, nullptr);
        r.run(x, k, y2, n, bias.data(), m, n, k, nullptr);
        CHECK(std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float)) == 0);
        CHECK(std::memcmp(before.data(), r.packed.get(), r.packed_size) == 0);
      }
    }
  }
}

TEST_CASE("matmul float: bf16 keeps x in f32 (no bf16 rounding of activations)") {
  // W = one row of ones; x values with up to 16 significant bits (exact as hi + lo bf16 halves on
  // vdpbf16ps) that bf16 rounding would change: the f32 sum of x itself is exact and is the
  // answer; a kernel rounding x to bf16 gets (1 + 2^-7) + 1 + 3 - (1 + 2^-6) instead.
  const int64_t n = 1, k = 4;
  std::vector<uint8_t> w(2 * k);
  for (int64_t i = 0; i < k; ++i) {
    const uint16_t one = 0x3f80;
    std::memcpy(w.data() + 2 * i, &one, 2);
  }
  const std::vector<float> x = {1.0f + 0x1p-8f + 0x1p-9f, 1.0f + 0x1p-9f, 3.0f + 0x1p-7f,
                                -(1.0f + 0x1p-7f + 0x1p-8f)};
  const float expect = 4.0f + 0x1p-8f + 0x1p-9f + 0x1p-9f + 0x1p-7f - 0x1p-7f - 0x1p-8f;
  std::vector<const KernelTable*> tables = {&kernel_table_ref()};
  const std::vector<Variant> hwy = variants();
  for (const Variant& v : hwy) tables.push_back(&v.table);
  for (const KernelTable* table : tables) {
    CAPTURE(table->isa);
    for (const int64_t m : {int64_t{1}, int64_t{2}}) {
      std::vector<float> xm;
      for (int64_t r = 0; r < m; ++r) xm.insert(xm.end(), x.begin(), x.end());
      Runner r(table->matmul[static_cast<int>(WType::kBF16)], w, n, k);
      std::vector<float> y(static_cast<size_t>(m));
      r.run(xm, k, y, 1, nullptr, m, n, k, nullptr);
      for (const float v : y) CHECK(v == expect);
    }
  }
}
