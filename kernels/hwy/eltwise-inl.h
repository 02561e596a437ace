// Highway elementwise / normalization kernels (per-target code; kernels/hwy/eltwise.cpp exports
// them). Semantics: kernels/ref/{embedding,layernorm,rmsnorm,rope,unary,glu,softmax,binary,argmax,
// topk}.cpp. Accuracy, per op (the tests check these bounds):
//  - embedding: bit-exact (every weight type dequantizes with the reference's roundings; the
//    K-quants call quant.h's dequantizers).
//  - layernorm / rmsnorm: f32 two-pass statistics (mean, then sum of squared deviations).
//  - rope: the reference's f32 angle recipe; cos / sin evaluated in f64 (so c, s are the correctly
//    rounded f32 values except at rare double-rounding ties); the rotation uses the reference's
//    separate products (no FMA), so results are normally bit-exact.
//  - GELU (erf): erfc(a) = t * exp(P(u) - a^2), t = 1 / (1 + a/2), P a degree-10 least-squares
//    fit (relative error 8e-9 on [0, 10.5]; kernels/hwy/fit_coefficients.py), a^2 split exactly;
//    erf's absolute error stays below 2^-22 (the GELU test bounds it).
//  - GELU (tanh), SiLU: x * sigmoid(z) with exp of -|z| (never overflows); softmax: exp of
//    x - max. Both use ExpNeg (~2 ulps) and a reciprocal estimate refined by Newton steps.
//  - argmax / topk: exact, including ties (lowest index first); argmax also matches the
//    reference's NaN behaviour, topk expects NaN-free input.
// Threading: rows / tokens / chunks through parallel_for; nothing allocates.

#if defined(LAYA_KERNELS_HWY_ELTWISE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAYA_KERNELS_HWY_ELTWISE_INL_H_
#undef LAYA_KERNELS_HWY_ELTWISE_INL_H_
#else
#define LAYA_KERNELS_HWY_ELTWISE_INL_H_
#endif

#include <cmath>
#include <cstring>
#include <limits>

#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "kernels/ref/ref.h"

HWY_BEFORE_NAMESPACE();
namespace laya::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace elt {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr size_t kMaxN = hn::MaxLanes(DF());

// Work per parallel chunk: about this many elements.
constexpr int64_t kChunkElems = 16384;
inline int64_t rows_grain(int64_t dim) {
  return dim >= kChunkElems ? 1 : kChunkElems / (dim > 0 ? dim : 1);
}

// n < Lanes(d) values from p, zeros in the other lanes; never touches p[n..).
HWY_INLINE VF LoadTail(DF d, const float* HWY_RESTRICT p, size_t n) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  return hn::MaskedLoad(hn::FirstN(d, n), d, p);
#else
  HWY_ALIGN float buf[kMaxN] = {};
  std::memcpy(buf, p, n * sizeof(float));
  return hn::Load(d, buf);
#endif
}

// Stores the first n < Lanes(d) lanes of v to p.
HWY_INLINE void StoreTail(VF v, DF d, float* HWY_RESTRICT p, size_t n) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  hn::BlendedStore(v, hn::FirstN(d, n), d, p);
#else
  HWY_ALIGN float buf[kMaxN];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, n * sizeof(float));
#endif
}

HWY_INLINE float ReduceSum(DF d, VF v) {
  return hn::GetLane(hn::SumOfLanes(d, v));
}

// A product the compiler may not fuse into a following add (GCC contracts a * b - c into an FMA
// in FMA-enabled targets, even through vector intrinsics); used where the reference's separate
// roundings must be reproduced.
// (x86 register constraints; elsewhere a contracted product stays within the rope test's bound.)
HWY_INLINE VF Product(VF a, VF b) {
  VF p = hn::Mul(a, b);
#if HWY_ARCH_X86 && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
  asm("" : "+v"(p.raw));  // any of zmm / ymm / xmm 0-31
#elif HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  asm("" : "+x"(p.raw));  // xmm / ymm 0-15: clang rejects "v" without AVX-512
#endif
  return p;
}
HWY_INLINE float Product(float a, float b) {
  float p = a * b;
#if HWY_ARCH_X86
  asm("" : "+x"(p));
#endif
  return p;
}

// hi + lo == x * x exactly.
HWY_INLINE void SquareExact(DF d, VF x, VF& hi, VF& lo) {
  hi = hn::Mul(x, x);
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  (void)d;
  lo = hn::MulSub(x, x, hi);  // fused: exact residual
#else
  // Veltkamp split (no FMA on this target).
  const VF c = hn::Mul(x, hn::Set(d, 4097.0f));
  const VF xh = hn::Sub(c, hn::Sub(c, x));
  const VF xl = hn::Sub(x, xh);
  lo =
      hn::Add(hn::Add(hn::Sub(hn::Mul(xh, xh), hi), hn::Mul(hn::Add(xh, xh), xl)), hn::Mul(xl, xl));
#endif
}

// e^x for x <= 0 (x = -inf -> 0; subnormal results kept), within ~2 ulps: n = round(x /
// ln 2), r = x - n ln 2 in two FMA steps (exact), e^r = 2^(r / ln 2) by a degree-6 least-squares
// fit of 2^f on [-1/2, 1/2] (relative error 2.2e-9, kernels/hwy/fit_coefficients.py), scaled by
// 2^n.
HWY_INLINE VF ExpNeg(DF d, VF x) {
  x = hn::Max(x, hn::Set(d, -104.0f));
  const VF n = hn::Round(hn::Mul(x, hn::Set(d, 1.4426950408889634f)));
  VF r = hn::NegMulAdd(n, hn::Set(d, 0.693145751953125f), x);  // ln 2 high part (exact n * hi)
  r = hn::NegMulAdd(n, hn::Set(d, 1.428606765330187e-6f), r);  // ln 2 - high part
  const VF f = hn::Mul(r, hn::Set(d, 1.4426950408889634f));
  VF p = hn::Set(d, 1.5370704816680934e-4f);
  p = hn::MulAdd(p, f, hn::Set(d, 1.3399848290696256e-3f));
  p = hn::MulAdd(p, f, hn::Set(d, 9.6183732513517746e-3f));
  p = hn::MulAdd(p, f, hn::Set(d, 5.5503290351536305e-2f));
  p = hn::MulAdd(p, f, hn::Set(d, 2.4022648462281301e-1f));
  p = hn::MulAdd(p, f, hn::Set(d, 6.9314720557710043e-1f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
#if HWY_TARGET == HWY_AVX3
  return VF{_mm512_scalef_ps(p.raw, n.raw)};
#else
  // p * 2^n1 * 2^n2 with n1 + n2 = n, both normal exponents, so subnormal results round once.
  const hn::RebindToSigned<DF> di;
  const auto ni = hn::ConvertTo(di, n);
  const auto n1 = hn::ShiftRight<1>(ni);  // arithmetic: floor(n / 2)
  const auto bias = hn::Set(di, 127);
  const VF s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n1, bias)));
  const VF s2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(hn::Sub(ni, n1), bias)));
  return hn::Mul(hn::Mul(p, s1), s2);
#endif
}

// 1 / x for x >= 1 (the sigmoid / erfc denominators): hardware estimate + Newton steps.
HWY_INLINE VF Recip(DF d, VF x) {
  const VF one = hn::Set(d, 1.0f);
#if HWY_TARGET == HWY_SCALAR
  return hn::Div(one, x);
#else
  VF y = hn::ApproximateReciprocal(x);
  y = hn::MulAdd(y, hn::NegMulAdd(x, y, one), y);
#if HWY_TARGET != HWY_AVX3  // 12-bit estimate: a second step
  y = hn::MulAdd(y, hn::NegMulAdd(x, y, one), y);
#endif
  return y;
#endif
}

// x * sigmoid(z), computed with exp(-|z|) so nothing overflows.
HWY_INLINE VF MulSigmoid(DF d, VF x, VF z) {
  const VF one = hn::Set(d, 1.0f);
  const VF e = ExpNeg(d, hn::Neg(hn::Abs(z)));
  const VF num = hn::IfThenElse(hn::Ge(z, hn::Zero(d)), one, e);
  return hn::Mul(hn::Mul(x, num), Recip(d, hn::Add(one, e)));
}

// GELU with the exact erf: 0.5 x (1 + erf(x / sqrt 2)) = x - g (x >= 0) or g (x < 0), where
// g = 0.5 x erfc(|x| / sqrt 2).
HWY_INLINE VF GeluErf(DF d, VF x) {
  const VF a = hn::Mul(hn::Abs(x), hn::Set(d, 0.70710678118654752f));
  const VF t = Recip(d, hn::MulAdd(a, hn::Set(d, 0.5f), hn::Set(d, 1.0f)));
  // u maps t in [1 / 6.25, 1] (a in [0, 10.5]) to [-1, 1].
  const VF u = hn::MulAdd(t, hn::Set(d, 2.3809523809523810f), hn::Set(d, -1.3809523809523810f));
  VF p = hn::Set(d, -2.4017718940657791e-5f);
  p = hn::MulAdd(p, u, hn::Set(d, 6.0509105016843685e-5f));
  p = hn::MulAdd(p, u, hn::Set(d, 1.3251174615341298e-4f));
  p = hn::MulAdd(p, u, hn::Set(d, -5.7284732066651667e-4f));
  p = hn::MulAdd(p, u, hn::Set(d, -2.5660293819576745e-4f));
  p = hn::MulAdd(p, u, hn::Set(d, 3.8706995343965307e-3f));
  p = hn::MulAdd(p, u, hn::Set(d, -1.2331609412121738e-3f));
  p = hn::MulAdd(p, u, hn::Set(d, -3.0146480691590234e-2f));
  p = hn::MulAdd(p, u, hn::Set(d, 1.6716265973902766e-2f));
  p = hn::MulAdd(p, u, hn::Set(d, 5.7460991467528072e-1f));
  p = hn::MulAdd(p, u, hn::Set(d, -5.6315678844396923e-1f));
  // a^2 = x^2 / 2 = hi + lo exactly; s + r = p - hi exactly (TwoSum).
  VF hi, lo;
  SquareExact(d, x, hi, lo);
  const VF half = hn::Set(d, 0.5f);
  hi = hn::Mul(hi, half);
  lo = hn::Mul(lo, half);
  const VF nhi = hn::Neg(hi);
  const VF s = hn::Add(p, nhi);
  const VF bb = hn::Sub(s, p);
  const VF r = hn::Add(hn::Sub(p, hn::Sub(s, bb)), hn::Sub(nhi, bb));
  const VF e = ExpNeg(d, s);
  const VF erfc = hn::Mul(t, hn::MulAdd(e, hn::Sub(r, lo), e));
  VF g = hn::Mul(hn::Mul(half, x), erfc);
  g = hn::IfThenZeroElse(hn::Gt(a, hn::Set(d, 10.5f)), g);
  return hn::IfThenElse(hn::Ge(x, hn::Zero(d)), hn::Sub(x, g), g);
}

HWY_INLINE VF GeluTanh(DF d, VF x) {
  // 0.5 x (1 + tanh(u)) = x * sigmoid(2u), 2u = 2 sqrt(2/pi) (x + 0.044715 x^3).
  const VF c1 = hn::Set(d, 1.5957691216057308f);
  const VF c2 = hn::Set(d, 1.5957691216057308f * 0.044715f);
  const VF z = hn::Mul(x, hn::MulAdd(hn::Mul(x, x), c2, c1));
  return MulSigmoid(d, x, z);
}

template <ActKind A>
HWY_INLINE VF Activate(DF d, VF x) {
  if constexpr (A == ActKind::kGeluErf) return GeluErf(d, x);
  if constexpr (A == ActKind::kGeluTanh) return GeluTanh(d, x);
  if constexpr (A == ActKind::kSilu) return MulSigmoid(d, x, x);
  if constexpr (A == ActKind::kRelu) return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), x);
  return x;
}

template <ActKind A>
void UnaryRange(const float* HWY_RESTRICT x, float* y, int64_t n) {
  const DF d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  const size_t un = static_cast<size_t>(n);
  for (; i + N <= un; i += N) hn::StoreU(Activate<A>(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < un) StoreTail(Activate<A>(d, LoadTail(d, x + i, un - i)), d, y + i, un - i);
}

template <ActKind A>
void GluRow(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, int64_t f) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t uf = static_cast<size_t>(f);
  size_t j = 0;
  for (; j + N <= uf; j += N) {
    const VF a = Activate<A>(d, hn::LoadU(d, x + j));
    hn::StoreU(hn::Mul(a, hn::LoadU(d, x + uf + j)), d, y + j);
  }
  if (j < uf) {
    const size_t r = uf - j;
    const VF a = Activate<A>(d, LoadTail(d, x + j, r));
    StoreTail(hn::Mul(a, LoadTail(d, x + uf + j, r)), d, y + j, r);
  }
}

// ---- embedding --------------------------------------------------------------------------------

void GatherRow(WType type, const void* table, const float* scales, int64_t row, int64_t dim,
               float* HWY_RESTRICT out) {
  const DF d;
  const size_t N = hn::Lanes(d);
  const size_t ud = static_cast<size_t>(dim);
  const uint8_t* base = static_cast<const uint8_t*>(table);
  switch (type) {
    case WType::kF32:
      std::memcpy(out, base + 4 * ud * static_cast<size_t>(row), 4 * ud);
      return;
    case WType::kF16:
    case WType::kBF16: {
      const uint16_t* r = reinterpret_cast<const uint16_t*>(base) + ud * static_cast<size_t>(row);
      size_t i = 0;
      if (type == WType::kF16) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
        const hn::Rebind<hwy::float16_t, DF> dh;  // F16C: exact, inf / NaN included
        for (; i + N <= ud; i += N)
          hn::StoreU(
              hn::PromoteTo(d, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(r + i))), d,
              out + i);
#else
        // Highway 1.0.3's emulated f16 promotion turns inf / NaN into finite values: rebuild the
        // bits as quant.cpp's f16_to_f32 does.
        const hn::Rebind<uint16_t, DF> d16;
        const hn::RebindToUnsigned<DF> du;
        const auto exp_mask = hn::Set(du, 0x7c00u << 13);
        const auto magic = hn::BitCast(d, hn::Set(du, 113u << 23));
        for (; i + N <= ud; i += N) {
          const auto h = hn::PromoteTo(du, hn::LoadU(d16, r + i));
          auto o = hn::ShiftLeft<13>(hn::And(h, hn::Set(du, 0x7fffu)));
          const auto e = hn::And(o, exp_mask);
          o = hn::Add(o, hn::Set(du, (127u - 15u) << 23));
          o = hn::IfThenElse(hn::Eq(e, exp_mask), hn::Add(o, hn::Set(du, (128u - 16u) << 23)), o);
          const auto sub =
              hn::BitCast(du, hn::Sub(hn::BitCast(d, hn::Add(o, hn::Set(du, 1u << 23))), magic));
          o = hn::IfThenElse(hn::Eq(e, hn::Zero(du)), sub, o);
          o = hn::Or(o, hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u))));
          hn::StoreU(hn::BitCast(d, o), d, out + i);
        }
#endif
        for (; i < ud; ++i) out[i] = f16_to_f32(r[i]);
      } else {
        const hn::Rebind<uint16_t, DF> d16;
        const hn::RebindToUnsigned<DF> du;
        for (; i + N <= ud; i += N) {
          const auto w = hn::PromoteTo(du, hn::LoadU(d16, r + i));
          hn::StoreU(hn::BitCast(d, hn::ShiftLeft<16>(w)), d, out + i);
        }
        for (; i < ud; ++i) out[i] = bf16_to_f32(r[i]);
      }
      return;
    }
    case WType::kI8:
    case WType::kI8W: {
      const int8_t* r = reinterpret_cast<const int8_t*>(base) + ud * static_cast<size_t>(row);
      const hn::Rebind<int8_t, DF> d8;
      const hn::RebindToSigned<DF> di;
      const VF s = hn::Set(d, scales[row]);
      size_t i = 0;
      for (; i + N <= ud; i += N)
        hn::StoreU(hn::Mul(hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, r + i))), s), d,
                   out + i);
      for (; i < ud; ++i) out[i] = static_cast<float>(r[i]) * scales[row];
      return;
    }
    case WType::kQ8_0: {
      const BlockQ8_0* blk = reinterpret_cast<const BlockQ8_0*>(base) + ud / kQK * row;
      const hn::Rebind<int8_t, DF> d8;
      const hn::RebindToSigned<DF> di;
      for (size_t b = 0; b < ud / kQK; ++b, out += kQK) {
        const VF dv = hn::Set(d, f16_to_f32(blk[b].d));
        for (size_t j = 0; j < kQK; j += N)
          hn::StoreU(hn::Mul(dv, hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, blk[b].qs + j)))),
                     d, out + j);
      }
      return;
    }
    case WType::kQ4_0:
    case WType::kQ4_1: {
      const hn::Rebind<uint8_t, DF> d8;
      const hn::RebindToSigned<DF> di;
      const auto mask = hn::Set(di, 15);
      const bool is41 = type == WType::kQ4_1;
      const size_t bytes = is41 ? sizeof(BlockQ4_1) : sizeof(BlockQ4_0);
      const uint8_t* rb = base + bytes * (ud / kQK) * static_cast<size_t>(row);
      for (size_t b = 0; b < ud / kQK; ++b, out += kQK, rb += bytes) {
        uint16_t dh, mh = 0;
        std::memcpy(&dh, rb, 2);
        if (is41) std::memcpy(&mh, rb + 2, 2);
        const uint8_t* qs = rb + (is41 ? 4 : 2);
        const VF dv = hn::Set(d, f16_to_f32(dh));
        const VF mv = hn::Set(d, is41 ? f16_to_f32(mh) : 0.0f);
        const auto off = hn::Set(di, is41 ? 0 : 8);
        for (size_t j = 0; j < kQK / 2; j += N) {
          const auto q =
              hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<DF>(), hn::LoadU(d8, qs + j)));
          const VF lo = hn::ConvertTo(d, hn::Sub(hn::And(q, mask), off));
          const VF hi = hn::ConvertTo(d, hn::Sub(hn::ShiftRight<4>(q), off));
          // d * q (+ m): separate roundings, as the reference.
          if (is41) {
            hn::StoreU(hn::Add(hn::Mul(dv, lo), mv), d, out + j);
            hn::StoreU(hn::Add(hn::Mul(dv, hi), mv), d, out + kQK / 2 + j);
          } else {
            hn::StoreU(hn::Mul(dv, lo), d, out + j);
            hn::StoreU(hn::Mul(dv, hi), d, out + kQK / 2 + j);
          }
        }
      }
      return;
    }
    case WType::kQ5_0:  // 5-bit blocks and K-quants: quant.h's scalar dequantizers (exact by
                        // definition; a table row is read once per token)
      dequantize_row_q5_0(reinterpret_cast<const BlockQ5_0*>(base) + ud / kQK * row, out, dim);
      return;
    case WType::kQ5_1:
      dequantize_row_q5_1(reinterpret_cast<const BlockQ5_1*>(base) + ud / kQK * row, out, dim);
      return;
    case WType::kQ4_K:
      dequantize_row_q4_K(reinterpret_cast<const BlockQ4_K*>(base) + ud / kQK_K * row, out, dim);
      return;
    case WType::kQ5_K:
      dequantize_row_q5_K(reinterpret_cast<const BlockQ5_K*>(base) + ud / kQK_K * row, out, dim);
      return;
    case WType::kQ6_K:
      dequantize_row_q6_K(reinterpret_cast<const BlockQ6_K*>(base) + ud / kQK_K * row, out, dim);
      return;
    case WType::kCount:
      return;
  }
}

}  // namespace elt

int64_t Embedding(WType type, const void* table, const float* scales, int64_t vocab, int64_t dim,
                  const int32_t* ids, int64_t n, float* out, const ThreadPool* pool) {
  for (int64_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= vocab) return i;
  parallel_for(pool, n, elt::rows_grain(dim), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) elt::GatherRow(type, table, scales, ids[i], dim, out + i * dim);
  });
  return -1;
}

// ---- normalization ----------------------------------------------------------------------------

void Layernorm(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
               int64_t dim, float eps, const ThreadPool* pool) {
  parallel_for(pool, rows, elt::rows_grain(dim), [&](int64_t rb, int64_t re) {
    const elt::DF d;
    using VF = elt::VF;
    const size_t N = hn::Lanes(d);
    const size_t ud = static_cast<size_t>(dim);
    for (int64_t r = rb; r < re; ++r) {
      const float* HWY_RESTRICT xr = x + r * dim;
      float* HWY_RESTRICT yr = y + r * dim;
      // Pass 1: mean.
      VF s0 = hn::Zero(d), s1 = hn::Zero(d);
      size_t i = 0;
      for (; i + 2 * N <= ud; i += 2 * N) {
        s0 = hn::Add(s0, hn::LoadU(d, xr + i));
        s1 = hn::Add(s1, hn::LoadU(d, xr + i + N));
      }
      for (; i + N <= ud; i += N) s0 = hn::Add(s0, hn::LoadU(d, xr + i));
      if (i < ud) s1 = hn::Add(s1, elt::LoadTail(d, xr + i, ud - i));
      const float mean = elt::ReduceSum(d, hn::Add(s0, s1)) / static_cast<float>(dim);
      // Pass 2: variance from the deviations (no cancellation).
      const VF mv = hn::Set(d, mean);
      s0 = hn::Zero(d);
      s1 = hn::Zero(d);
      i = 0;
      for (; i + 2 * N <= ud; i += 2 * N) {
        const VF a = hn::Sub(hn::LoadU(d, xr + i), mv);
        const VF b = hn::Sub(hn::LoadU(d, xr + i + N), mv);
        s0 = hn::MulAdd(a, a, s0);
        s1 = hn::MulAdd(b, b, s1);
      }
      for (; i + N <= ud; i += N) {
        const VF a = hn::Sub(hn::LoadU(d, xr + i), mv);
        s0 = hn::MulAdd(a, a, s0);
      }
      if (i < ud) {
        const VF a = hn::IfThenElseZero(hn::FirstN(d, ud - i),
                                        hn::Sub(elt::LoadTail(d, xr + i, ud - i), mv));
        s1 = hn::MulAdd(a, a, s1);
      }
      const float var = elt::ReduceSum(d, hn::Add(s0, s1)) / static_cast<float>(dim);
      const VF inv = hn::Set(d, static_cast<float>(1.0 / std::sqrt(double{var} + double{eps})));
      // Pass 3: normalize.
      i = 0;
      for (; i + N <= ud; i += N) {
        const VF a =
            hn::Mul(hn::Mul(hn::Sub(hn::LoadU(d, xr + i), mv), inv), hn::LoadU(d, gamma + i));
        hn::StoreU(beta ? hn::Add(a, hn::LoadU(d, beta + i)) : a, d, yr + i);
      }
      if (i < ud) {
        const size_t k = ud - i;
        const VF a = hn::Mul(hn::Mul(hn::Sub(elt::LoadTail(d, xr + i, k), mv), inv),
                             elt::LoadTail(d, gamma + i, k));
        elt::StoreTail(beta ? hn::Add(a, elt::LoadTail(d, beta + i, k)) : a, d, yr + i, k);
      }
    }
  });
}

void Rmsnorm(const float* x, const float* gamma, float* y, int64_t rows, int64_t dim, float eps,
             const ThreadPool* pool) {
  parallel_for(pool, rows, elt::rows_grain(dim), [&](int64_t rb, int64_t re) {
    const elt::DF d;
    using VF = elt::VF;
    const size_t N = hn::Lanes(d);
    const size_t ud = static_cast<size_t>(dim);
    for (int64_t r = rb; r < re; ++r) {
      const float* HWY_RESTRICT xr = x + r * dim;
      float* HWY_RESTRICT yr = y + r * dim;
      VF s0 = hn::Zero(d), s1 = hn::Zero(d);
      size_t i = 0;
      for (; i + 2 * N <= ud; i += 2 * N) {
        const VF a = hn::LoadU(d, xr + i), b = hn::LoadU(d, xr + i + N);
        s0 = hn::MulAdd(a, a, s0);
        s1 = hn::MulAdd(b, b, s1);
      }
      for (; i + N <= ud; i += N) {
        const VF a = hn::LoadU(d, xr + i);
        s0 = hn::MulAdd(a, a, s0);
      }
      if (i < ud) {
        const VF a = elt::LoadTail(d, xr + i, ud - i);
        s1 = hn::MulAdd(a, a, s1);
      }
      const double ms = double{elt::ReduceSum(d, hn::Add(s0, s1))} / static_cast<double>(dim);
      const VF inv = hn::Set(d, static_cast<float>(1.0 / std::sqrt(ms + double{eps})));
      i = 0;
      for (; i + N <= ud; i += N)
        hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, xr + i), inv), hn::LoadU(d, gamma + i)), d, yr + i);
      if (i < ud) {
        const size_t k = ud - i;
        elt::StoreTail(
            hn::Mul(hn::Mul(elt::LoadTail(d, xr + i, k), inv), elt::LoadTail(d, gamma + i, k)), d,
            yr + i, k);
      }
    }
  });
}

// ---- rope -------------------------------------------------------------------------------------

namespace elt {

// Rotary dims handled with stack tables; larger rotary_dim uses the reference.
constexpr int32_t kRopeMaxHalf = 512;

// c[i], s[i] = cos, sin of the f32 angles ang[i] (i < n), evaluated in f64: Cody-Waite reduction
// by pi/2 (two FMA steps, exact for |angle| < 2^30) and Taylor polynomials on [-pi/4, pi/4]
// (truncation < 1e-11), then rounded to f32.
void SinCos(const float* HWY_RESTRICT ang, float* HWY_RESTRICT c, float* HWY_RESTRICT s,
            int32_t n) {
#if HWY_HAVE_FLOAT64
  using DD = hn::ScalableTag<double>;
  const DD dd;
  const hn::Rebind<float, DD> df;
  using VD = hn::Vec<DD>;
  const size_t N = hn::Lanes(dd);
  HWY_ALIGN float abuf[hn::MaxLanes(DD())];
  HWY_ALIGN float cbuf[hn::MaxLanes(DD())];
  HWY_ALIGN float sbuf[hn::MaxLanes(DD())];
  for (size_t i = 0; i < static_cast<size_t>(n); i += N) {
    const size_t k = static_cast<size_t>(n) - i < N ? static_cast<size_t>(n) - i : N;
    const float* a_src = ang + i;
    if (k < N) {
      for (size_t j = 0; j < N; ++j) abuf[j] = j < k ? ang[i + j] : 0.0f;
      a_src = abuf;
    }
    const VD a = hn::PromoteTo(dd, hn::LoadU(df, a_src));
    const VD q = hn::Round(hn::Mul(a, hn::Set(dd, 0.63661977236758134)));  // a * 2/pi
    VD r = hn::NegMulAdd(q, hn::Set(dd, 1.5707963267948966), a);
    r = hn::NegMulAdd(q, hn::Set(dd, 6.123233995736766e-17), r);
    const VD r2 = hn::Mul(r, r);
    // sin(r) = r + r^3 * P(r^2), cos(r) = 1 + r^2 * Q(r^2): Taylor terms through r^11 / r^12.
    VD ps = hn::Set(dd, -1.0 / 39916800.0);
    ps = hn::MulAdd(ps, r2, hn::Set(dd, 1.0 / 362880.0));
    ps = hn::MulAdd(ps, r2, hn::Set(dd, -1.0 / 5040.0));
    ps = hn::MulAdd(ps, r2, hn::Set(dd, 1.0 / 120.0));
    ps = hn::MulAdd(ps, r2, hn::Set(dd, -1.0 / 6.0));
    const VD sr = hn::MulAdd(hn::Mul(ps, r2), r, r);
    VD pc = hn::Set(dd, 1.0 / 479001600.0);
    pc = hn::MulAdd(pc, r2, hn::Set(dd, -1.0 / 3628800.0));
    pc = hn::MulAdd(pc, r2, hn::Set(dd, 1.0 / 40320.0));
    pc = hn::MulAdd(pc, r2, hn::Set(dd, -1.0 / 720.0));
    pc = hn::MulAdd(pc, r2, hn::Set(dd, 1.0 / 24.0));
    pc = hn::MulAdd(pc, r2, hn::Set(dd, -0.5));
    const VD cr = hn::MulAdd(pc, r2, hn::Set(dd, 1.0));
    // Quadrant q mod 4: 0 (s, c), 1 (c, -s), 2 (-s, -c), 3 (-c, s).
    const VD quad = hn::Sub(q, hn::Mul(hn::Floor(hn::Mul(q, hn::Set(dd, 0.25))), hn::Set(dd, 4.0)));
    const auto odd = hn::Or(hn::Eq(quad, hn::Set(dd, 1.0)), hn::Eq(quad, hn::Set(dd, 3.0)));
    const auto neg_s = hn::Ge(quad, hn::Set(dd, 2.0));
    const auto neg_c = hn::Or(hn::Eq(quad, hn::Set(dd, 1.0)), hn::Eq(quad, hn::Set(dd, 2.0)));
    VD sv = hn::IfThenElse(odd, cr, sr);
    VD cv = hn::IfThenElse(odd, sr, cr);
    sv = hn::IfThenElse(neg_s, hn::Neg(sv), sv);
    cv = hn::IfThenElse(neg_c, hn::Neg(cv), cv);
    if (k == N) {
      hn::StoreU(hn::DemoteTo(df, cv), df, c + i);
      hn::StoreU(hn::DemoteTo(df, sv), df, s + i);
    } else {
      hn::Store(hn::DemoteTo(df, cv), df, cbuf);
      hn::Store(hn::DemoteTo(df, sv), df, sbuf);
      for (size_t j = 0; j < k; ++j) {
        c[i + j] = cbuf[j];
        s[i + j] = sbuf[j];
      }
    }
  }
#else
  for (int32_t i = 0; i < n; ++i) {
    c[i] = static_cast<float>(std::cos(double{ang[i]}));
    s[i] = static_cast<float>(std::sin(double{ang[i]}));
  }
#endif
}

}  // namespace elt

void Rope(const float* x, float* y, const int32_t* pos, int64_t tokens, int32_t n_heads,
          int32_t head_dim, int32_t rotary_dim, float theta, RopeMode mode,
          const ThreadPool* pool) {
  const int32_t half = rotary_dim / 2;
  if (half > elt::kRopeMaxHalf) {
    ref::rope(x, y, pos, tokens, n_heads, head_dim, rotary_dim, theta, mode, pool);
    return;
  }
  HWY_ALIGN float inv_freq[elt::kRopeMaxHalf];
  for (int32_t i = 0; i < half; ++i)  // exactly the reference's f32 expression
    inv_freq[i] =
        1.0f / std::pow(theta, static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
  const int64_t row = int64_t{n_heads} * head_dim;
  parallel_for(pool, tokens, elt::rows_grain(row), [&](int64_t tb, int64_t te) {
    const elt::DF d;
    using VF = elt::VF;
    const size_t N = hn::Lanes(d);
    // cs / sn: neox [half]; gptj per pair, duplicated: cs[2i] = cs[2i+1] = c, sn = (-s, +s).
    HWY_ALIGN float ang[elt::kRopeMaxHalf];
    HWY_ALIGN float c1[elt::kRopeMaxHalf], s1[elt::kRopeMaxHalf];
    HWY_ALIGN float cs[2 * elt::kRopeMaxHalf], sn[2 * elt::kRopeMaxHalf];
    const size_t uh = static_cast<size_t>(half);
    for (int64_t t = tb; t < te; ++t) {
      const float p = static_cast<float>(pos[t]);
      for (int32_t i = 0; i < half; ++i) ang[i] = p * inv_freq[i];
      elt::SinCos(ang, c1, s1, half);
      if (mode == RopeMode::kGptj) {
        for (int32_t i = 0; i < half; ++i) {
          cs[2 * i] = cs[2 * i + 1] = c1[i];
          sn[2 * i] = -s1[i];
          sn[2 * i + 1] = s1[i];
        }
      }
      for (int32_t h = 0; h < n_heads; ++h) {
        const float* xh = x + (t * n_heads + h) * head_dim;
        float* yh = y + (t * n_heads + h) * head_dim;
        size_t i = 0;
        if (mode == RopeMode::kNeox) {
          for (; i + N <= uh; i += N) {
            const VF x0 = hn::LoadU(d, xh + i), x1 = hn::LoadU(d, xh + uh + i);
            const VF c = hn::Load(d, c1 + i), s = hn::Load(d, s1 + i);
            using elt::Product;
            hn::StoreU(hn::Sub(Product(x0, c), Product(x1, s)), d, yh + i);
            hn::StoreU(hn::Add(Product(x1, c), Product(x0, s)), d, yh + uh + i);
          }
          for (; i < uh; ++i) {
            using elt::Product;
            const float x0 = xh[i], x1 = xh[uh + i];
            yh[i] = Product(x0, c1[i]) - Product(x1, s1[i]);
            yh[uh + i] = Product(x1, c1[i]) + Product(x0, s1[i]);
          }
        } else {
#if HWY_TARGET != HWY_SCALAR
          for (; i + N <= 2 * uh; i += N) {
            const VF xv = hn::LoadU(d, xh + i);
            const VF sw = hn::Shuffle2301(xv);  // (x1, x0) per pair
            hn::StoreU(hn::Add(elt::Product(xv, hn::Load(d, cs + i)),
                               elt::Product(sw, hn::Load(d, sn + i))),
                       d, yh + i);
          }
#else
          (void)sn;
#endif
          for (; i < 2 * uh; i += 2) {
            const float x0 = xh[i], x1 = xh[i + 1];
            yh[i] = elt::Product(x0, cs[i]) - elt::Product(x1, s1[i / 2]);
            yh[i + 1] = elt::Product(x1, cs[i]) + elt::Product(x0, s1[i / 2]);
          }
        }
        if (xh != yh)
          for (int32_t dd = 2 * half; dd < head_dim; ++dd) yh[dd] = xh[dd];
      }
    }
  });
}

// ---- activations, softmax, binary -------------------------------------------------------------

void Unary(ActKind act, const float* x, float* y, int64_t n, const ThreadPool* pool) {
  parallel_for(pool, n, elt::kChunkElems, [&](int64_t b, int64_t e) {
    switch (act) {
#define ACT(Name, name)  \
  case ActKind::k##Name: \
    return elt::UnaryRange<ActKind::k##Name>(x + b, y + b, e - b);
#include "ir/act.inc"
#undef ACT
      case ActKind::kCount:
        break;
    }
  });
}

void Glu(ActKind act, const float* x, float* y, int64_t rows, int64_t f, const ThreadPool* pool) {
  parallel_for(pool, rows, elt::rows_grain(2 * f), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float* xr = x + r * 2 * f;
      float* yr = y + r * f;
      switch (act) {
#define ACT(Name, name)                       \
  case ActKind::k##Name:                      \
    elt::GluRow<ActKind::k##Name>(xr, yr, f); \
    break;
#include "ir/act.inc"
#undef ACT
        case ActKind::kCount:
          break;
      }
    }
  });
}

void Softmax(const float* x, float* y, int64_t rows, int64_t dim, const ThreadPool* pool) {
  parallel_for(pool, rows, elt::rows_grain(dim), [&](int64_t rb, int64_t re) {
    const elt::DF d;
    using VF = elt::VF;
    const size_t N = hn::Lanes(d);
    const size_t ud = static_cast<size_t>(dim);
    const VF ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
    for (int64_t r = rb; r < re; ++r) {
      const float* xr = x + r * dim;
      float* yr = y + r * dim;
      VF m = ninf;
      size_t i = 0;
      for (; i + N <= ud; i += N) m = hn::Max(m, hn::LoadU(d, xr + i));
      float mx = hn::GetLane(hn::MaxOfLanes(d, m));
      for (; i < ud; ++i) mx = xr[i] > mx ? xr[i] : mx;
      const VF mv = hn::Set(d, mx);
      VF s0 = hn::Zero(d);
      i = 0;
      for (; i + N <= ud; i += N) {
        const VF e = elt::ExpNeg(d, hn::Sub(hn::LoadU(d, xr + i), mv));
        s0 = hn::Add(s0, e);
        hn::StoreU(e, d, yr + i);
      }
      if (i < ud) {
        const size_t k = ud - i;
        const VF e = hn::IfThenElseZero(hn::FirstN(d, k),
                                        elt::ExpNeg(d, hn::Sub(elt::LoadTail(d, xr + i, k), mv)));
        s0 = hn::Add(s0, e);
        elt::StoreTail(e, d, yr + i, k);
      }
      const VF inv = hn::Set(d, static_cast<float>(1.0 / double{elt::ReduceSum(d, s0)}));
      i = 0;
      for (; i + N <= ud; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, yr + i), inv), d, yr + i);
      for (; i < ud; ++i) yr[i] *= hn::GetLane(inv);
    }
  });
}

void BinaryOp(Binary op, const float* a, const float* b, float* y, int64_t n, int64_t nb,
              const ThreadPool* pool) {
  // Chunks are whole rows of nb (so b restarts at each chunk) unless b is a scalar or equal to a.
  const int64_t unit = nb == n || nb == 1 ? 1 : nb;
  const int64_t units = n / unit;
  const int64_t grain = unit >= elt::kChunkElems ? 1 : elt::kChunkElems / unit;
  parallel_for(pool, units, grain, [&](int64_t ub, int64_t ue) {
    const elt::DF d;
    using VF = elt::VF;
    const size_t N = hn::Lanes(d);
    const bool add = op == Binary::kAdd;
    auto run = [&](const float* HWY_RESTRICT ar, const float* HWY_RESTRICT br, float* yr,
                   size_t len, bool scalar_b) {
      size_t i = 0;
      const VF bs = hn::Set(d, br[0]);
      for (; i + N <= len; i += N) {
        const VF av = hn::LoadU(d, ar + i);
        const VF bv = scalar_b ? bs : hn::LoadU(d, br + i);
        hn::StoreU(add ? hn::Add(av, bv) : hn::Mul(av, bv), d, yr + i);
      }
      for (; i < len; ++i) {
        const float bv = scalar_b ? br[0] : br[i];
        yr[i] = add ? ar[i] + bv : ar[i] * bv;
      }
    };
    if (unit == 1) {
      const int64_t off = nb == n ? ub : 0;
      run(a + ub, b + off, y + ub, static_cast<size_t>(ue - ub), nb != n);
    } else {
      for (int64_t u = ub; u < ue; ++u)
        run(a + u * nb, b, y + u * nb, static_cast<size_t>(nb), false);
    }
  });
}

// ---- f32 -> f16 (kv_write into an f16 state) ---------------------------------------------------

// With F16C (AVX2 and up) DemoteTo is vcvtps2ph, round to nearest even as the reference. Highway's
// emulation on the targets without it (SSE4, scalar) truncates, so those run the reference loop
// (kv_write converts a few rows per step).
void F32ToF16(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
#if HWY_TARGET < HWY_SSE4
  const elt::DF d;
  const hn::Rebind<hwy::float16_t, elt::DF> dh;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  auto* out = reinterpret_cast<hwy::float16_t*>(dst);
  for (; i + N <= n; i += N) hn::StoreU(hn::DemoteTo(dh, hn::LoadU(d, src + i)), dh, out + i);
#endif
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

// ---- argmax / topk ----------------------------------------------------------------------------

// Per-lane running max and its first index; lanes start at x[0] (index 0), so NaN never wins and a
// leading NaN returns 0, exactly as the reference's `x[i] > x[best]` scan.
int64_t Argmax(const float* x, int64_t n) {
  const elt::DF d;
  using VF = elt::VF;
  const hn::RebindToSigned<elt::DF> di;
  using VI = hn::Vec<decltype(di)>;
  const size_t N = hn::Lanes(d);
  int64_t best = 0;
  float best_v = x[0];
  // Blocks of at most 2^30 elements keep int32 lane indices exact.
  constexpr int64_t kBlock = int64_t{1} << 30;
  for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
    const int64_t len = n - b0 < kBlock ? n - b0 : kBlock;
    const float* xb = x + b0;
    // Four independent (max, index) accumulators over interleaved vectors (no serial chain).
    VF m[4];
    VI mi[4];
    for (int k = 0; k < 4; ++k) {
      m[k] = hn::Set(d, best_v);
      mi[k] = hn::Set(di, -1);  // -1: the block's incoming best
    }
    VI idx = hn::Iota(di, 0);
    const VI step = hn::Set(di, static_cast<int32_t>(N));
    const int64_t sN = static_cast<int64_t>(N);
    int64_t i = 0;
    for (; i + 4 * sN <= len; i += 4 * sN) {
      for (int k = 0; k < 4; ++k) {
        const VF v = hn::LoadU(d, xb + i + k * sN);
        const auto gt = hn::Gt(v, m[k]);
        m[k] = hn::IfThenElse(gt, v, m[k]);
        mi[k] = hn::IfThenElse(hn::RebindMask(di, gt), idx, mi[k]);
        idx = hn::Add(idx, step);
      }
    }
    for (; i + sN <= len; i += sN) {
      const VF v = hn::LoadU(d, xb + i);
      const auto gt = hn::Gt(v, m[0]);
      m[0] = hn::IfThenElse(gt, v, m[0]);
      mi[0] = hn::IfThenElse(hn::RebindMask(di, gt), idx, mi[0]);
      idx = hn::Add(idx, step);
    }
    HWY_ALIGN float mv[4 * elt::kMaxN];
    HWY_ALIGN int32_t miv[4 * elt::kMaxN];
    for (int k = 0; k < 4; ++k) {
      hn::Store(m[k], d, mv + k * N);
      hn::Store(mi[k], di, miv + k * N);
    }
    // Combine: larger value wins; equal values: lower index (-1 = earlier block) wins.
    float bv = best_v;
    int64_t bi = best;
    for (size_t l = 0; l < 4 * N; ++l) {
      if (miv[l] < 0) continue;
      const int64_t gi = b0 + miv[l];
      if (mv[l] > bv || (mv[l] == bv && gi < bi)) {
        bv = mv[l];
        bi = gi;
      }
    }
    for (; i < len; ++i)
      if (xb[i] > bv) {
        bv = xb[i];
        bi = b0 + i;
      }
    best = bi;
    best_v = bv;
  }
  return best;
}

namespace elt {
// Min-heap of the current top-k (root = worst). a is worse than b: smaller value, or equal value
// and larger index.
inline bool Worse(float va, int32_t ia, float vb, int32_t ib) {
  return va < vb || (va == vb && ia > ib);
}
inline void SiftDown(int32_t* idx, float* val, int32_t n, int32_t i) {
  for (;;) {
    const int32_t l = 2 * i + 1, r = l + 1;
    int32_t w = i;
    if (l < n && Worse(val[l], idx[l], val[w], idx[w])) w = l;
    if (r < n && Worse(val[r], idx[r], val[w], idx[w])) w = r;
    if (w == i) return;
    std::swap(idx[i], idx[w]);
    std::swap(val[i], val[w]);
    i = w;
  }
}
}  // namespace elt

// Heap selection in the output arrays: O(n + k log k + (insertions) log k); vectors of x that
// cannot beat the current k-th value are skipped with one compare.
void Topk(const float* x, int64_t n, int32_t k, int32_t* idx, float* val) {
  if (k <= 0) return;
  for (int32_t i = 0; i < k; ++i) {
    idx[i] = i;
    val[i] = x[i];
  }
  for (int32_t i = k / 2 - 1; i >= 0; --i) elt::SiftDown(idx, val, k, i);
  const elt::DF d;
  const int64_t N = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = k;
  // Later elements only enter when strictly greater than the root (ties keep the lower index).
  while (i < n) {
    if (i + 4 * N <= n) {  // four vectors per test
      const auto th = hn::Set(d, val[0]);
      const auto any = hn::Or(
          hn::Or(hn::Gt(hn::LoadU(d, x + i), th), hn::Gt(hn::LoadU(d, x + i + N), th)),
          hn::Or(hn::Gt(hn::LoadU(d, x + i + 2 * N), th), hn::Gt(hn::LoadU(d, x + i + 3 * N), th)));
      if (hn::AllFalse(d, any)) {
        i += 4 * N;
        continue;
      }
      for (int q = 0; q < 4; ++q, i += N) {  // then vector by vector (the root may rise)
        if (hn::AllFalse(d, hn::Gt(hn::LoadU(d, x + i), hn::Set(d, val[0])))) continue;
        for (int64_t e = i + N, t = i; t < e; ++t)
          if (x[t] > val[0]) {
            val[0] = x[t];
            idx[0] = static_cast<int32_t>(t);
            elt::SiftDown(idx, val, k, 0);
          }
      }
      continue;
    }
    if (x[i] > val[0]) {
      val[0] = x[i];
      idx[0] = static_cast<int32_t>(i);
      elt::SiftDown(idx, val, k, 0);
    }
    ++i;
  }
  // Heap sort: move the worst to the back each time -> descending order.
  for (int32_t end = k - 1; end > 0; --end) {
    std::swap(idx[0], idx[end]);
    std::swap(val[0], val[end]);
    elt::SiftDown(idx, val, end, 0);
  }
}

}  // namespace laya::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
