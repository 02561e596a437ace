// Highway attention (per-target code; kernels/hwy/attention.cpp exports it). Semantics:
// kernels/ref/attention.cpp and AttentionArgs in kernels/kernels.h.
//
// Flash-attention style: keys are visited in tiles with an online softmax (running max m, sum l,
// output rescaled by 2^(m_old - m_new)); only one tile of scores lives in scratch. Scores are kept
// in log2 units (q is pre-scaled by scale * log2 e) so the softmax is a 2^x (Exp2 below). Tiles the
// mask hides entirely (causal future, outside the sliding window) are never computed; tiles that
// are entirely visible skip the per-element mask; in the others each key block only computes the
// query vectors that can see it.
//
// Two layouts, chosen per call:
//  - Prefill ("queries in lanes"): an item is up to kBq query rows of one kv group (rows = heads of
//    the group x queries, so with q_len < kBq each K/V element loaded serves every head of the
//    group). Q^T (scaled) is packed once per item as [head_dim][kBq]; scores S^T [key][kBq] come
//    from register-blocked FMAs with K broadcast from the tile; the softmax is vertical (no
//    horizontal reductions); O^T [head_dim][kBq] accumulates P^T x V with V broadcast from the
//    cache rows (copying strided tiles to contiguous rows measured slower). Any head_dim works
//    (no vectors along it).
//  - Decode ("head_dim in lanes"), when a group has few rows (q_len x heads <= kDecRows) and
//    head_dim is a multiple of the vector length: rows are dotted with 4 keys at a time and reduced
//    with one transpose-add tree; P x V broadcasts each probability over the V row. K and V are
//    read once per group (GQA reuse). An item spans a chunk of kv groups (all of them with one
//    thread per batch row), so the cache rows are read front to back, with L2 prefetch ahead.
//    Over cache cells the last tile ends at the last live key, and every score is summed by the
//    same tree however many keys its group of 4 has, so a decode step's output does not depend on
//    how many empty cells follow the written ones (the cache's capacity).
// With positions or sequence ids ("general mode", see the section of that name below) keys are
// summarized once per call in blocks of kBk, so a tile no query of an item can see (another packed
// row, another sequence's cells, empty cells, outside the causal / window range) is skipped
// without reading K or V. With sequence ids an item's queries are of one sequence and its tiles
// start at that sequence's first key, so a packed row's output does not depend on where it sits
// in the packed sequence nor on the rows around it (the same bits as the row alone).
// Work items (prefill: batch, kv group, head block, query block; decode: batch, chunk of groups)
// are handed out dynamically to n_threads scratch slots through parallel_for (causal: the most
// expensive query blocks first).
//
// f16 K / V (AttentionArgs::kv_type): the decode layout converts each K / V vector as it loads it
// (PromoteTo: vcvtph2ps with F16C on AVX2 / AVX3, exact integer emulation on SSE4 / scalar), so the
// cache rows are read once at half the bytes; prefetch distances count bytes (twice the rows of
// f32). The prefill layout broadcasts single K / V elements, so it converts each visited tile's K
// and V rows to f32 once per item into the slot (kBk x head_dim each) and runs the f32 code on it.
//
// Difference from the reference: K / V rows inside a partially masked tile are multiplied by a zero
// weight rather than skipped, so a NaN / inf stored in a hidden row of [0, kv_len) (causal future,
// key_mask = 0) propagates to the queries that share its tile; the reference never reads it. Rows
// outside the visible key range, and rows at or beyond kv_len, are never read.

#if defined(LAYA_KERNELS_HWY_ATTENTION_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAYA_KERNELS_HWY_ATTENTION_INL_H_
#undef LAYA_KERNELS_HWY_ATTENTION_INL_H_
#else
#define LAYA_KERNELS_HWY_ATTENTION_INL_H_
#endif

#include <algorithm>
#include <atomic>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

HWY_BEFORE_NAMESPACE();
namespace laya::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace attn {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using DI = hn::RebindToSigned<DF>;
constexpr size_t kN = hn::MaxLanes(DF());

// Register blocking: kNV query vectors per item; QK blocks of kMR keys, PV blocks of kMD dims.
#if HWY_TARGET == HWY_AVX3
constexpr int kNV = 4, kMR = 6, kMD = 6, kDecDC = 4;
#elif HWY_TARGET == HWY_SCALAR
constexpr int kNV = 4, kMR = 4, kMD = 4, kDecDC = 4;
#else
constexpr int kNV = 2, kMR = 4, kMD = 4, kDecDC = 4;
#endif
constexpr size_t kBq = kNV * kN;                   // query rows (lanes) per prefill item
constexpr size_t kBk = 64;                         // keys per prefill tile
constexpr size_t kBkDec = 128;                     // keys per decode tile
constexpr size_t kDecRows = kN >= 4 ? kN / 2 : 0;  // decode layout when rows per group <= this
constexpr int64_t kPrefetchRows = 16;              // decode: K rows prefetched ahead (f32)
constexpr int64_t kPrefetchRowsF16 = 8;            // decode: f16 K rows (docs/kernels.md)
constexpr int32_t kDecMaxGroups = 16;              // decode: kv groups per item (bounds scratch)
constexpr size_t kDecMaxRows = kDecRows > 0 ? kDecMaxGroups* kDecRows : 1;
constexpr size_t kPvKeys = 16;  // decode: keys per P x V pass over the item's groups
// decode: V rows prefetched ahead: the next P x V chunk's (docs/kernels.md)
constexpr int64_t kPrefetchRowsV = static_cast<int64_t>(kPvKeys);
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

inline size_t Align64(size_t bytes) {
  return (bytes + 63) & ~size_t{63};
}

// Decode prefetch: slice `part` of `parts` of the 64-byte lines of rows [r0, r1) (row stride
// `stride` elements, columns [c0, c0 + width)), in address order. The rows are some way ahead of
// the ones being read, and each of the `parts` passes over the current rows issues its own slice
// before it runs, so the requests follow the reads at their pace: one burst of a whole chunk's
// lines made the P x V phase up to 1.6x slower from DRAM, the requests beyond the core's
// outstanding misses being lost (docs/kernels.md, "The cause, and the fix").
template <class T>
HWY_INLINE void PrefetchRows(const T* base, int64_t stride, int64_t c0, int64_t width, int64_t r0,
                             int64_t r1, int64_t part, int64_t parts) {
  constexpr int64_t kLine = 64 / sizeof(T);
  if (r1 <= r0) return;
  const int64_t per_row = (width + kLine - 1) / kLine;
  const int64_t lines = (r1 - r0) * per_row;
  const int64_t i0 = part * lines / parts, i1 = (part + 1) * lines / parts;
  if (i0 >= i1) return;
  int64_t col = i0 % per_row;
  const T* row = base + (r0 + i0 / per_row) * stride + c0;
  for (int64_t i = i0; i < i1; ++i) {
    __builtin_prefetch(row + col * kLine, 0, 3);
    if (++col == per_row) {
      col = 0;
      row += stride;
    }
  }
}

// kN K / V elements at p as f32 (f16: converted exactly).
HWY_INLINE VF LoadKv(DF d, const float* HWY_RESTRICT p) {
  return hn::LoadU(d, p);
}
HWY_INLINE VF LoadKv(DF d, const hwy::float16_t* HWY_RESTRICT p) {
  const hn::Rebind<hwy::float16_t, DF> dh;
  return hn::PromoteTo(d, hn::LoadU(dh, p));
}

// dst[j * hd + c] = f32(src[j * stride + c]) for n rows of hd f16 (prefill tiles).
inline void ConvertRows(const hwy::float16_t* HWY_RESTRICT src, int64_t stride, size_t n, size_t hd,
                        float* HWY_RESTRICT dst) {
  const DF d;
  for (size_t j = 0; j < n; ++j, src += stride, dst += hd) {
    size_t c = 0;
    for (; c + kN <= hd; c += kN) hn::StoreU(LoadKv(d, src + c), d, dst + c);
    for (; c < hd; ++c) {
      uint16_t h;
      std::memcpy(&h, src + c, sizeof h);
      dst[c] = f16_to_f32(h);
    }
  }
}

// Scores are kept in log2 units (q pre-scaled by scale * log2(e)), so the softmax needs 2^t.
constexpr float kLog2e = 1.4426950408889634f;

// 2^t for t <= 0, including t = -inf -> exactly 0 (masked keys). 2^f on [-1/2, 1/2] is a degree-6
// least-squares fit (relative error 2.2e-9, kernels/hwy/fit_coefficients.py); results below
// 2^-125 flush to 0 (negligible softmax weights).
HWY_INLINE VF Exp2(DF d, VF t) {
  t = hn::Max(t, hn::Set(d, -200.0f));
  const VF n = hn::Round(t);
  const VF f = hn::Sub(t, n);
  VF p = hn::Set(d, 1.5370704816680934e-4f);
  p = hn::MulAdd(p, f, hn::Set(d, 1.3399848290696256e-3f));
  p = hn::MulAdd(p, f, hn::Set(d, 9.6183732513517746e-3f));
  p = hn::MulAdd(p, f, hn::Set(d, 5.5503290351536305e-2f));
  p = hn::MulAdd(p, f, hn::Set(d, 2.4022648462281301e-1f));
  p = hn::MulAdd(p, f, hn::Set(d, 6.9314720557710043e-1f));
  p = hn::MulAdd(p, f, hn::Set(d, 1.0f));
#if HWY_TARGET == HWY_AVX3
  return VF{_mm512_scalef_ps(p.raw, n.raw)};  // p * 2^n, underflowing to 0
#else
  const DI di;
  const VF r = hn::BitCast(d, hn::Add(hn::BitCast(di, p), hn::ShiftLeft<23>(hn::ConvertTo(di, n))));
  return hn::IfThenZeroElse(hn::Lt(n, hn::Set(d, -125.0f)), r);
#endif
}

// Per-slot scratch: the larger of the two layouts. Prefill with f16 K / V adds one tile of K and
// one of V converted to f32.
inline size_t PrefillSlotBytes(size_t hd, KvType kv) {
  const size_t tiles = kv == KvType::kF16 ? 2 * Align64(kBk * hd * 4) : 0;
  return 2 * Align64(hd * kBq * 4) + Align64(kBk * kBq * 4) + 5 * Align64(kBq * 4) + tiles;
}
// Rows of a decode item: up to kDecMaxGroups groups of at most kDecRows rows.
inline size_t DecodeRowsMax(const AttentionArgs& a) {
  const int64_t per = std::min<int64_t>(int64_t{a.n_heads / a.n_kv_heads} * a.q_len,
                                        static_cast<int64_t>(kDecRows));
  return static_cast<size_t>(std::min<int64_t>(a.n_kv_heads, kDecMaxGroups) * per);
}
inline size_t DecodeSlotBytes(const AttentionArgs& a) {
  if (kDecRows == 0) return 0;
  const size_t rows = DecodeRowsMax(a), hd = static_cast<size_t>(a.head_dim);
  return 2 * Align64(rows * hd * 4) + Align64(rows * kBkDec * 4) + 3 * Align64(rows * 4);
}
inline size_t SlotBytes(const AttentionArgs& a) {
  const size_t p = PrefillSlotBytes(static_cast<size_t>(a.head_dim), a.kv_type);
  const size_t q = DecodeSlotBytes(a);
  return p > q ? p : q;
}

// Calls f.template operator()<A, B>() for runtime a in [1, MaxA], b in [1, MaxB].
template <int MaxB, int A, class F>
HWY_INLINE void DispatchB(int b, F& f) {
  [&]<int... J>(std::integer_sequence<int, J...>) {
    ((b == J + 1 ? (f.template operator()<A, J + 1>(), 0) : 0), ...);
  }
  (std::make_integer_sequence<int, MaxB>{});
}
template <int MaxA, int MaxB, class F>
HWY_INLINE void Dispatch2(int a, int b, F&& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    ((a == I + 1 ? (DispatchB<MaxB, I + 1>(b, f), 0) : 0), ...);
  }
  (std::make_integer_sequence<int, MaxA>{});
}

// ---- prefill micro-kernels ------------------------------------------------------------------

// st[r][v] = sum_c k[r][c] * qt[c][v] for MR keys (rows of k, stride ks) and NV query vectors.
template <int MR, int NV>
HWY_NOINLINE void QkBlock(const float* HWY_RESTRICT qt, const float* HWY_RESTRICT k, int64_t ks,
                          size_t hd, float* HWY_RESTRICT st) {
  const DF d;
  VF acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = hn::Zero(d);
  for (size_t c = 0; c < hd; ++c) {
    VF qv[NV];
    for (int v = 0; v < NV; ++v) qv[v] = hn::Load(d, qt + c * kBq + v * kN);
    for (int r = 0; r < MR; ++r) {
      const VF kb = hn::Set(d, k[r * ks + static_cast<int64_t>(c)]);
      for (int v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(kb, qv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) hn::Store(acc[r][v], d, st + r * kBq + v * kN);
}

// ot[m][v] = ot[m][v] * alpha[v] + sum_j pt[j][v] * vrow_j[m] for MD dims and NV query vectors.
template <int MD, int NV>
HWY_NOINLINE void PvBlock(float* HWY_RESTRICT ot, const float* HWY_RESTRICT alpha, bool rescale,
                          const float* HWY_RESTRICT pt, size_t nk, const float* HWY_RESTRICT v,
                          int64_t vs) {
  const DF d;
  VF acc[MD][NV];
  for (int m = 0; m < MD; ++m)
    for (int q = 0; q < NV; ++q) {
      acc[m][q] = hn::Load(d, ot + m * kBq + q * kN);
      if (rescale) acc[m][q] = hn::Mul(acc[m][q], hn::Load(d, alpha + q * kN));
    }
  for (size_t j = 0; j < nk; ++j) {
    VF p[NV];
    for (int q = 0; q < NV; ++q) p[q] = hn::Load(d, pt + j * kBq + q * kN);
    const float* vj = v + static_cast<int64_t>(j) * vs;
    for (int m = 0; m < MD; ++m) {
      const VF vb = hn::Set(d, vj[m]);
      for (int q = 0; q < NV; ++q) acc[m][q] = hn::MulAdd(vb, p[q], acc[m][q]);
    }
  }
  for (int m = 0; m < MD; ++m)
    for (int q = 0; q < NV; ++q) hn::Store(acc[m][q], d, ot + m * kBq + q * kN);
}

// ---- decode micro-kernels -------------------------------------------------------------------

#if HWY_TARGET != HWY_SCALAR
template <class D>
HWY_INLINE hn::Vec<hn::Full128<float>> FoldBlocks(D d, hn::Vec<D> v) {
  if constexpr (hn::MaxLanes(D()) > 4) {
    const hn::Half<D> dh;
    return FoldBlocks(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  } else {
    (void)d;
    return v;
  }
}
#endif

// out[0..3] = horizontal sums of a, b, c, e.
HWY_INLINE void Reduce4Store(VF a, VF b, VF c, VF e, float* HWY_RESTRICT out) {
#if HWY_TARGET == HWY_SCALAR
  out[0] = hn::GetLane(a);
  out[1] = hn::GetLane(b);
  out[2] = hn::GetLane(c);
  out[3] = hn::GetLane(e);
#else
  const DF d;
  const hn::Repartition<uint64_t, DF> d64;
  const VF ab = hn::Add(hn::InterleaveLower(d, a, b), hn::InterleaveUpper(d, a, b));
  const VF ce = hn::Add(hn::InterleaveLower(d, c, e), hn::InterleaveUpper(d, c, e));
  const auto ab64 = hn::BitCast(d64, ab), ce64 = hn::BitCast(d64, ce);
  const VF s = hn::Add(hn::BitCast(d, hn::InterleaveLower(d64, ab64, ce64)),
                       hn::BitCast(d, hn::InterleaveUpper(d64, ab64, ce64)));
  hn::StoreU(FoldBlocks(d, s), hn::Full128<float>(), out);
#endif
}

// s[r * kBkDec + j] = q_r . k_j for NR rows (q rows of hd, aligned) and NJ keys: 4, or the last
// 1..3 of a tile. Every key's dot is summed by one Reduce4Store lane, the same tree in
// every lane, so a score does not depend on which keys share its group: a tile that ends
// elsewhere (a cache with more or fewer empty cells past its last live one) gives the same bits.
template <int NR, int NJ, class T>
HWY_INLINE void DecQk(const float* HWY_RESTRICT q, size_t hd, const T* HWY_RESTRICT k, int64_t ks,
                      float* HWY_RESTRICT s) {
  static_assert(NJ >= 1 && NJ <= 4);
  const DF d;
  VF acc[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int j = 0; j < 4; ++j) acc[r][j] = hn::Zero(d);
  // One key vector live at a time, q read from memory by each FMA: NR x NJ accumulators + 1
  // register (3 x 4 on AVX2: 13 of 16; keeping all NJ key vectors and a q vector live took 17,
  // and GCC kept an accumulator on the stack).
  for (size_t c = 0; c < hd; c += kN) {
    for (int j = 0; j < NJ; ++j) {
      const VF kv = LoadKv(d, k + j * ks + static_cast<int64_t>(c));
      for (int r = 0; r < NR; ++r)
        acc[r][j] = hn::MulAdd(hn::Load(d, q + r * hd + c), kv, acc[r][j]);
    }
  }
  for (int r = 0; r < NR; ++r) {
    if constexpr (NJ == 4) {
      Reduce4Store(acc[r][0], acc[r][1], acc[r][2], acc[r][3], s + r * kBkDec);
    } else {  // 4 sums into a temporary: the row's next 3 scores may be past its end
      alignas(16) float t[4];
      Reduce4Store(acc[r][0], acc[r][1], acc[r][2], acc[r][3], t);
      for (int j = 0; j < NJ; ++j) s[r * kBkDec + j] = t[j];
    }
  }
}

// o_r[c] = o_r[c] (* alpha[r], nullable) + sum_j p[r][j] * v_j[c] for NR rows and DC vectors of
// dims.
template <int NR, int DC, class T>
HWY_NOINLINE void DecPv(float* HWY_RESTRICT o, size_t hd, const float* HWY_RESTRICT alpha,
                        const float* HWY_RESTRICT p, size_t nk, const T* HWY_RESTRICT v,
                        int64_t vs) {
  const DF d;
  VF acc[NR][DC];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < DC; ++c) {
      acc[r][c] = hn::Load(d, o + r * hd + c * kN);
      if (alpha != nullptr) acc[r][c] = hn::Mul(acc[r][c], hn::Set(d, alpha[r]));
    }
  for (size_t j = 0; j < nk; ++j) {
    const T* vj = v + static_cast<int64_t>(j) * vs;
    VF pb[NR];
    for (int r = 0; r < NR; ++r) pb[r] = hn::Set(d, p[r * kBkDec + j]);
    for (int c = 0; c < DC; ++c) {
      const VF vv = LoadKv(d, vj + c * kN);
      for (int r = 0; r < NR; ++r) acc[r][c] = hn::MulAdd(pb[r], vv, acc[r][c]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < DC; ++c) hn::Store(acc[r][c], d, o + r * hd + c * kN);
}

// ---- transposes (Q^T packing, output) --------------------------------------------------------

#if HWY_TARGET == HWY_AVX3
// In-register transpose of 16 rows of 16 floats.
HWY_INLINE void Transpose16(__m512 r[16]) {
  __m512 a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    const __m512d a0 = _mm512_castps_pd(a[4 * i]), a1 = _mm512_castps_pd(a[4 * i + 1]);
    const __m512d a2 = _mm512_castps_pd(a[4 * i + 2]), a3 = _mm512_castps_pd(a[4 * i + 3]);
    b[4 * i + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
    b[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
    b[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
    b[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
  }
  // b[4 * g + k]: columns k, k + 4, k + 8, k + 12 (one per 128-bit block) of rows 4g .. 4g + 3.
  for (int k = 0; k < 4; ++k) {
    const __m512 c0 = _mm512_shuffle_f32x4(b[k], b[4 + k], 0x88);
    const __m512 c1 = _mm512_shuffle_f32x4(b[k], b[4 + k], 0xdd);
    const __m512 c2 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], 0x88);
    const __m512 c3 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], 0xdd);
    r[k] = _mm512_shuffle_f32x4(c0, c2, 0x88);
    r[k + 8] = _mm512_shuffle_f32x4(c0, c2, 0xdd);
    r[k + 4] = _mm512_shuffle_f32x4(c1, c3, 0x88);
    r[k + 12] = _mm512_shuffle_f32x4(c1, c3, 0xdd);
  }
}
#endif

// ---- planning -------------------------------------------------------------------------------

// General mode: positions or sequence ids are given (see "positions and sequence ids" below).
inline bool General(const AttentionArgs& a) {
  return a.q_pos != nullptr || a.k_pos != nullptr || a.k_seq != nullptr;
}

struct Plan {
  int32_t group = 1;  // query heads per kv head
  int32_t g_begin = 0, n_groups = 0;
  int32_t hper = 1;            // heads per item
  int64_t qper = 1;            // queries per item
  int64_t n_hb = 1, n_qb = 1;  // head / query blocks per group
  // Query blocks per chunk: items go chunk by chunk (each chunk: every group, head block, query
  // block of it). Default mode: one chunk (a group's query blocks run back to back and share its
  // K / V in cache). General mode: chunks of about one key tile of queries, so with packed rows
  // the heads of one row run back to back, as they would with the rows in batch entries
  // (measured: head-major order over 8 packed rows of 64 was 12-15% slower than the batch).
  int64_t qchunk = 1, n_chunks = 1;
  bool decode = false;
  int32_t gper = 1;  // decode: kv groups per item
  int64_t n_gc = 1;  // decode: group chunks
  int64_t items = 0;
};

inline Plan MakePlan(const AttentionArgs& a, int32_t hb, int32_t he, int64_t slots) {
  Plan p;
  p.group = a.n_heads / a.n_kv_heads;
  p.g_begin = hb / p.group;
  p.n_groups = (he - 1) / p.group - p.g_begin + 1;
  const int32_t hg = p.group < he - hb ? p.group : he - hb;  // most heads of one group in range
  const size_t hd = static_cast<size_t>(a.head_dim);
  // The decode layout visits every query of a batch row in one item: with sequence ids, only
  // when they are all of one sequence (else the prefill layout's per-sequence blocks).
  bool one_seq = true;
  for (int64_t b = 0; a.q_seq != nullptr && b < a.batch && one_seq; ++b)
    for (int64_t i = 1; i < a.q_len && one_seq; ++i)
      one_seq = a.q_seq[b * a.q_seq_batch_stride + i] == a.q_seq[b * a.q_seq_batch_stride];
  if (kDecRows > 0 && hd % kN == 0 && one_seq &&
      static_cast<uint64_t>(hg) * static_cast<uint64_t>(a.q_len) <= kDecRows) {
    p.decode = true;
    p.hper = p.group;
    p.qper = a.q_len;
    // Whole cache rows (all groups) per item read K / V sequentially; split the groups only as
    // far as the threads need.
    const int64_t chunks = std::max<int64_t>(1, (slots + a.batch - 1) / a.batch);
    p.gper =
        static_cast<int32_t>(std::min<int64_t>((p.n_groups + chunks - 1) / chunks, kDecMaxGroups));
    p.n_gc = (p.n_groups + p.gper - 1) / p.gper;
    p.items = a.batch * p.n_gc;
    return p;
  } else {
    const int64_t by_q = static_cast<int64_t>(kBq) / a.q_len;
    p.hper = static_cast<int32_t>(by_q < 1 ? 1 : (by_q > hg ? hg : by_q));
    const int64_t qmax = static_cast<int64_t>(kBq) / p.hper;
    p.qper = a.q_len < qmax ? a.q_len : qmax;
    p.n_hb = (hg + p.hper - 1) / p.hper;
    p.n_qb = (a.q_len + p.qper - 1) / p.qper;
  }
  p.qchunk = General(a) ? std::min(p.n_qb, std::max<int64_t>(1, static_cast<int64_t>(kBk) / p.qper))
                        : p.n_qb;
  p.n_chunks = (p.n_qb + p.qchunk - 1) / p.qchunk;
  p.items = a.batch * p.n_chunks * p.n_groups * p.n_hb * p.qchunk;
  return p;
}

// Visible key range [lo, hi) for queries at positions [pmin, pmax].
inline void KeyRange(const AttentionArgs& a, int64_t pmin, int64_t pmax, int64_t& lo, int64_t& hi) {
  lo = 0;
  hi = a.kv_len;
  if (a.causal && pmax + 1 < hi) hi = pmax + 1;
  if (a.window >= 0) {
    if (pmin - a.window > lo) lo = pmin - a.window;
    if (pmax + a.window + 1 < hi) hi = pmax + a.window + 1;
  }
}

// Whether keys [t0, t1) need the per-element position mask for queries in [pmin, pmax].
inline bool TileNeedsMask(const AttentionArgs& a, int64_t t0, int64_t t1, int64_t pmin,
                          int64_t pmax) {
  if (a.causal && t1 - 1 > pmin) return true;
  if (a.window >= 0 && (pmax - t0 > a.window || t1 - 1 - pmin > a.window)) return true;
  return false;
}

inline bool Visible(const AttentionArgs& a, int64_t pos, int64_t j) {
  if (a.causal && j > pos) return false;
  if (a.window >= 0 && (pos - j > a.window || j - pos > a.window)) return false;
  return true;
}

// ---- positions and sequence ids ("general mode") --------------------------------------------
//
// With q_pos, k_pos or sequence ids, every block of kBk keys is summarized once per call (KeySum:
// its live keys' position and seq id ranges). A tile whose summary no query of an item can see is
// skipped without reading K or V, and a tile every query sees in full skips the per-element mask.
// Summaries of a tile that is not one block cover extra keys, which only makes the decision
// conservative (a masked tile computes the same sums as a full one: hidden keys weigh 0).
// With sequence ids, query blocks break where the sequence changes (RowBlocks), and an item's
// tiles are laid out from its sequence's first key (SeqOrigin), not from key 0: the tiles, hence
// the order of every sum, are the same wherever a packed row sits. With packed rows (seq ids
// sorted, positions restarting per row) a query block therefore computes only the tiles of its own
// row, exactly as it would alone; over a KV cache, empty cells and other sequences' tiles are
// skipped.

// Key metadata of one batch row.
struct Keys {
  const int32_t* mask;
  const int32_t* pos;
  const int32_t* seq;
  // Not hidden by key_mask and not an empty cell.
  bool live(int64_t j) const { return (!mask || mask[j] != 0) && (!seq || seq[j] >= 0); }
  int64_t at(int64_t j) const { return pos ? int64_t{pos[j]} : j; }
  int32_t seq_at(int64_t j) const { return seq ? seq[j] : 0; }
};
inline Keys KeysOf(const AttentionArgs& a, int64_t b) {
  return Keys{a.key_mask ? a.key_mask + b * a.mask_batch_stride : nullptr,
              a.k_pos ? a.k_pos + b * a.k_pos_batch_stride : nullptr,
              a.k_seq ? a.k_seq + b * a.k_seq_batch_stride : nullptr};
}

struct KeySum {
  int64_t n_live = 0, n_keys = 0;
  int64_t jmax = -1;                           // index of the last live key
  int64_t pmin = INT64_MAX, pmax = INT64_MIN;  // positions of the live keys
  int32_t smin = INT32_MAX, smax = INT32_MIN;  // seq ids of the live keys (0 without seq ids)
};
inline void AddKeys(const Keys& k, int64_t t0, int64_t t1, KeySum& s) {
  s.n_keys += t1 - t0;
  for (int64_t j = t0; j < t1; ++j) {
    if (!k.live(j)) continue;
    ++s.n_live;
    s.jmax = j;
    const int64_t p = k.at(j);
    const int32_t q = k.seq_at(j);
    s.pmin = std::min(s.pmin, p);
    s.pmax = std::max(s.pmax, p);
    s.smin = std::min(s.smin, q);
    s.smax = std::max(s.smax, q);
  }
}
inline size_t KeyBlocks(const AttentionArgs& a) {
  return static_cast<size_t>((a.kv_len + static_cast<int64_t>(kBk) - 1) /
                             static_cast<int64_t>(kBk));
}
inline size_t SummaryBytes(const AttentionArgs& a) {
  return Align64(static_cast<size_t>(a.batch > 0 ? a.batch : 0) * KeyBlocks(a) * sizeof(KeySum));
}
// The summary of keys [t0, t1) (t0 a multiple of kBk) from the block summaries of its batch row.
inline KeySum TileSum(const KeySum* sums, int64_t t0, int64_t t1) {
  KeySum s;
  for (int64_t blk = t0 / static_cast<int64_t>(kBk); blk * static_cast<int64_t>(kBk) < t1; ++blk) {
    const KeySum& x = sums[blk];
    s.n_live += x.n_live;
    s.n_keys += x.n_keys;
    s.pmin = std::min(s.pmin, x.pmin);
    s.pmax = std::max(s.pmax, x.pmax);
    s.smin = std::min(s.smin, x.smin);
    s.smax = std::max(s.smax, x.smax);
  }
  return s;
}

// Position and seq id ranges of an item's queries.
struct QRange {
  int64_t pmin = INT64_MAX, pmax = INT64_MIN;
  int32_t smin = INT32_MAX, smax = INT32_MIN;
  void add(int64_t p, int32_t q) {
    pmin = std::min(pmin, p);
    pmax = std::max(pmax, p);
    smin = std::min(smin, q);
    smax = std::max(smax, q);
  }
};

// Whether every query of `q` and every live key of `k` have one and the same seq id.
inline bool SameSeq(const KeySum& k, const QRange& q) {
  return k.smin == k.smax && q.smin == q.smax && q.smin == k.smin;
}

enum class Tile { kSkip, kFull, kMasked };
inline Tile Classify(const AttentionArgs& a, const KeySum& k, const QRange& q) {
  const bool seq = a.k_seq != nullptr;
  if (k.n_live == 0) return Tile::kSkip;
  if (seq && (k.smax < q.smin || k.smin > q.smax)) return Tile::kSkip;
  if (a.causal && k.pmin > q.pmax) return Tile::kSkip;
  if (a.window >= 0 && (k.pmin - q.pmax > a.window || q.pmin - k.pmax > a.window))
    return Tile::kSkip;
  if (k.n_live != k.n_keys) return Tile::kMasked;
  if (seq && !SameSeq(k, q)) return Tile::kMasked;
  if (a.causal && k.pmax > q.pmin) return Tile::kMasked;
  if (a.window >= 0 && (k.pmax - q.pmin > a.window || q.pmax - k.pmin > a.window))
    return Tile::kMasked;
  return Tile::kFull;
}

// Whether a live key at position kp with seq id ks is visible to a query at qp with seq id qs
// (seq ids compared when `seq`).
inline bool VisibleAt(const AttentionArgs& a, int64_t qp, int32_t qs, int64_t kp, int32_t ks,
                      bool seq) {
  if (a.causal && kp > qp) return false;
  if (a.window >= 0 && (qp - kp > a.window || kp - qp > a.window)) return false;
  return !seq || qs == ks;
}

// The first live key of sequence `seq` (from the block summaries, then the block's keys), or
// kv_len when it has none.
inline int64_t SeqOrigin(const AttentionArgs& a, const Keys& keys, const KeySum* sums,
                         int32_t seq) {
  for (int64_t blk = 0; blk * static_cast<int64_t>(kBk) < a.kv_len; ++blk) {
    const KeySum& x = sums[blk];
    if (x.n_live == 0 || seq < x.smin || seq > x.smax) continue;
    const int64_t t0 = blk * static_cast<int64_t>(kBk);
    const int64_t t1 = std::min(a.kv_len, t0 + static_cast<int64_t>(kBk));
    for (int64_t j = t0; j < t1; ++j)
      if (keys.live(j) && keys.seq_at(j) == seq) return j;
  }
  return a.kv_len;
}

// Keys [lo, hi) an item with queries in `q` visits in general mode: without k_pos the default key
// positions bound the range; lo is then aligned down to the tile grid that starts at `origin`.
inline void GeneralKeyRange(const AttentionArgs& a, const QRange& q, int64_t origin, int64_t& lo,
                            int64_t& hi) {
  lo = origin;
  hi = a.kv_len;
  if (a.k_pos == nullptr) {
    int64_t plo = 0;
    KeyRange(a, q.pmin, q.pmax, plo, hi);
    if (plo > origin)
      lo = origin + (plo - origin) / static_cast<int64_t>(kBk) * static_cast<int64_t>(kBk);
  }
}

inline int32_t ClampI32(int64_t v) {
  return static_cast<int32_t>(std::min<int64_t>(INT32_MAX, std::max<int64_t>(INT32_MIN, v)));
}

// ---- prefill item ---------------------------------------------------------------------------

// `sums`: the block summaries of batch row b in general mode, else null. T: the K / V element.
template <class T>
inline void PrefillItem(const AttentionArgs& a, const KeySum* sums, int64_t b, int32_t g,
                        int32_t h0, int32_t h1, int64_t i0, int64_t i1, uint8_t* slot) {
  const DF d;
  const DI di;
  const size_t hd = static_cast<size_t>(a.head_dim);
  float* qt = reinterpret_cast<float*>(slot);
  float* ot = reinterpret_cast<float*>(slot + Align64(hd * kBq * 4));
  float* st = reinterpret_cast<float*>(slot + 2 * Align64(hd * kBq * 4));
  float* mrow = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(st) + Align64(kBk * kBq * 4));
  float* lrow = mrow + Align64(kBq * 4) / 4;
  float* alpha = lrow + Align64(kBq * 4) / 4;
  int32_t* pos = reinterpret_cast<int32_t*>(alpha + Align64(kBq * 4) / 4);
  int32_t* qseq = pos + Align64(kBq * 4) / 4;  // general mode: seq id per lane
  // f16 K / V: the visited tile's rows converted to f32, [kBk][hd] each.
  float* ktile = reinterpret_cast<float*>(slot + PrefillSlotBytes(hd, KvType::kF32));
  float* vtile = ktile + Align64(kBk * hd * 4) / 4;
  const bool gen = sums != nullptr;

  const int64_t nq = i1 - i0;
  const int64_t rows = (h1 - h0) * nq;  // lane l = hh * nq + ii
  const int nv = static_cast<int>((static_cast<size_t>(rows) + kN - 1) / kN);
  const size_t lanes = static_cast<size_t>(nv) * kN;
  const int64_t past = a.kv_len - a.q_len;
  const float qscale = a.scale * kLog2e;

  // Pack Q^T (scaled), positions; zero O^T, running max and sum. The q rows (far apart with many
  // heads, usually not cached) are all requested first so their misses overlap.
  for (int64_t r = 0; r < rows; ++r) {
    const float* q =
        a.q + b * a.q_batch_stride + (i0 + r % nq) * a.q_row_stride + (h0 + r / nq) * a.head_dim;
    for (size_t c = 0; c < hd; c += 16) hwy::Prefetch(q + c);
  }
  const int32_t* qpos_b = a.q_pos ? a.q_pos + b * a.q_pos_batch_stride : nullptr;
  const int32_t* qseq_b = a.q_seq ? a.q_seq + b * a.q_seq_batch_stride : nullptr;
  QRange qr;  // general mode
  for (size_t l = 0; l < lanes; ++l) {
    const int64_t r = static_cast<int64_t>(l) < rows ? static_cast<int64_t>(l) : rows - 1;
    const int64_t i = i0 + r % nq;
    pos[l] = qpos_b ? qpos_b[i] : static_cast<int32_t>(past + i);
    qseq[l] = qseq_b ? qseq_b[i] : 0;
    qr.add(pos[l], qseq[l]);
    mrow[l] = kNegInf;
    lrow[l] = 0.0f;
  }
  size_t l_done = 0;  // lanes packed by 16 x 16 transposes
#if HWY_TARGET == HWY_AVX3
  if (hd % 16 == 0) {
    const __m512 sc = _mm512_set1_ps(qscale);
    for (; l_done + 16 <= static_cast<size_t>(rows); l_done += 16) {
      const float* qr[16];
      for (int k = 0; k < 16; ++k) {
        const int64_t r = static_cast<int64_t>(l_done) + k;
        qr[k] = a.q + b * a.q_batch_stride + (i0 + r % nq) * a.q_row_stride +
                (h0 + r / nq) * a.head_dim;
      }
      for (size_t c0 = 0; c0 < hd; c0 += 16) {
        __m512 t[16];
        for (int k = 0; k < 16; ++k) t[k] = _mm512_mul_ps(_mm512_loadu_ps(qr[k] + c0), sc);
        Transpose16(t);
        for (int k = 0; k < 16; ++k) _mm512_store_ps(qt + (c0 + k) * kBq + l_done, t[k]);
      }
    }
  }
#endif
  for (size_t l = l_done; l < lanes; ++l) {
    if (static_cast<int64_t>(l) >= rows) {
      for (size_t c = 0; c < hd; ++c) qt[c * kBq + l] = 0.0f;
      continue;
    }
    const int64_t r = static_cast<int64_t>(l);
    const float* q =
        a.q + b * a.q_batch_stride + (i0 + r % nq) * a.q_row_stride + (h0 + r / nq) * a.head_dim;
    for (size_t c = 0; c < hd; ++c) qt[c * kBq + l] = q[c] * qscale;
  }
  for (size_t c = 0; c < hd; ++c)
    for (size_t l = 0; l < lanes; l += kN) hn::Store(hn::Zero(d), d, ot + c * kBq + l);

  // The output rows are written at the end: fetch them for writing now (with many heads they are
  // far apart and not in cache).
  for (int64_t r = 0; r < rows; ++r) {
    const float* out = a.out + b * a.out_batch_stride + (i0 + r % nq) * a.out_row_stride +
                       (h0 + r / nq) * a.head_dim;
    for (size_t c = 0; c < hd; c += 16) __builtin_prefetch(out + c, 1);
  }
  const int64_t pmin = past + i0, pmax = past + i1 - 1;
  int64_t lo, hi;
  const Keys keys = KeysOf(a, b);
  if (gen) {
    // Tiles from the first key of the item's sequence (its queries are of one sequence when
    // there are sequence ids, RowBlocks), else from key 0.
    const int64_t origin =
        a.k_seq != nullptr && qr.smin == qr.smax ? SeqOrigin(a, keys, sums, qr.smin) : 0;
    GeneralKeyRange(a, qr, origin, lo, hi);
  } else {
    KeyRange(a, pmin, pmax, lo, hi);
  }
  const T* kbase =
      static_cast<const T*>(a.k) + b * a.k_batch_stride + static_cast<int64_t>(g) * a.head_dim;
  const T* vbase =
      static_cast<const T*>(a.v) + b * a.v_batch_stride + static_cast<int64_t>(g) * a.head_dim;
  const int32_t* kmask = a.key_mask ? a.key_mask + b * a.mask_batch_stride : nullptr;
  const VF ninf = hn::Set(d, kNegInf);
  // Window bounds as int32 (positions and key indices fit; the window is clamped to kv_len).
  const int64_t w = a.window < a.kv_len ? a.window : a.kv_len;
  // Position range of each query vector: in a partially masked tile, key blocks skip the vectors
  // that cannot see them (the causal diagonal costs ~1/2 vector per key instead of ~kNV/2).
  int64_t vmin[kNV], vmax[kNV];
  int32_t vsmin[kNV], vsmax[kNV];  // seq id range of each query vector (general mode)
  for (int v = 0; v < nv; ++v) {
    vmin[v] = INT64_MAX;
    vmax[v] = INT64_MIN;
    vsmin[v] = INT32_MAX;
    vsmax[v] = INT32_MIN;
    for (size_t l = static_cast<size_t>(v) * kN; l < static_cast<size_t>(v + 1) * kN; ++l) {
      vmin[v] = std::min<int64_t>(vmin[v], pos[l]);
      vmax[v] = std::max<int64_t>(vmax[v], pos[l]);
      vsmin[v] = std::min(vsmin[v], qseq[l]);
      vsmax[v] = std::max(vsmax[v], qseq[l]);
    }
  }
  constexpr size_t kBlocks = (kBk + kMR - 1) / kMR;
  int blk_va[kBlocks], blk_vb[kBlocks];  // vectors [va, vb) computed for each key block

  for (int64_t t0 = lo; t0 < hi; t0 += static_cast<int64_t>(kBk)) {
    const int64_t t1 = t0 + static_cast<int64_t>(kBk) < hi ? t0 + static_cast<int64_t>(kBk) : hi;
    const size_t nk = static_cast<size_t>(t1 - t0);
    // S^T = K Q^T for this tile; in a partially masked tile only the vectors that can see each
    // key block (the others get -inf).
    bool need_pos, need_live = false, need_seq = false;
    if (gen) {
      const KeySum ts = TileSum(sums, t0, t1);
      const Tile kind = Classify(a, ts, qr);
      if (kind == Tile::kSkip) continue;
      need_pos = kind == Tile::kMasked;
      need_live = ts.n_live != ts.n_keys;
      need_seq = a.k_seq && !SameSeq(ts, qr);
    } else {
      need_pos = TileNeedsMask(a, t0, t1, pmin, pmax);
    }
    const float* kt;
    const float* vt;
    int64_t ks, vs;
    if constexpr (std::is_same_v<T, float>) {
      kt = kbase + t0 * a.k_row_stride;
      vt = vbase + t0 * a.v_row_stride;
      ks = a.k_row_stride;
      vs = a.v_row_stride;
    } else {
      ConvertRows(kbase + t0 * a.k_row_stride, a.k_row_stride, nk, hd, ktile);
      ConvertRows(vbase + t0 * a.v_row_stride, a.v_row_stride, nk, hd, vtile);
      kt = ktile;
      vt = vtile;
      ks = vs = static_cast<int64_t>(hd);
    }
    for (size_t jb = 0, bi = 0; jb < nk; jb += kMR, ++bi) {
      const int mr = static_cast<int>(nk - jb < static_cast<size_t>(kMR) ? nk - jb : kMR);
      int va = 0, vb = nv;
      if (need_pos && gen) {
        // The live keys of this block: their position and seq id ranges.
        const int64_t ja = t0 + static_cast<int64_t>(jb);
        QRange kb;
        for (int r = 0; r < mr; ++r)
          if (keys.live(ja + r)) kb.add(keys.at(ja + r), keys.seq_at(ja + r));
        va = nv;
        vb = 0;
        if (kb.pmin <= kb.pmax) {
          for (int v = 0; v < nv; ++v) {
            const bool active = (!a.causal || vmax[v] >= kb.pmin) &&
                                (a.window < 0 || (vmax[v] >= kb.pmin - a.window &&
                                                  vmin[v] <= kb.pmax + a.window)) &&
                                (!a.k_seq || (vsmax[v] >= kb.smin && vsmin[v] <= kb.smax));
            if (active) {
              va = std::min(va, v);
              vb = v + 1;
            }
          }
        }
        for (int r = 0; r < mr; ++r)
          for (int v = 0; v < nv; ++v)
            if (v < va || v >= vb)
              hn::Store(ninf, d,
                        st + (jb + static_cast<size_t>(r)) * kBq + static_cast<size_t>(v) * kN);
      } else if (need_pos) {
        const int64_t ja = t0 + static_cast<int64_t>(jb), jz = ja + mr - 1;
        va = nv;
        vb = 0;
        for (int v = 0; v < nv; ++v) {
          const bool active = (!a.causal || vmax[v] >= ja) &&
                              (a.window < 0 || (vmax[v] >= ja - w && vmin[v] <= jz + w));
          if (active) {
            va = std::min(va, v);
            vb = v + 1;
          }
        }
        for (int r = 0; r < mr; ++r)
          for (int v = 0; v < nv; ++v)
            if (v < va || v >= vb)
              hn::Store(ninf, d,
                        st + (jb + static_cast<size_t>(r)) * kBq + static_cast<size_t>(v) * kN);
      }
      blk_va[bi] = va;
      blk_vb[bi] = vb;
      if (va >= vb) continue;
      const float* kr = kt + static_cast<int64_t>(jb) * ks;
      float* sr = st + jb * kBq + static_cast<size_t>(va) * kN;
      const float* qv = qt + static_cast<size_t>(va) * kN;
      Dispatch2<kMR, kNV>(mr, vb - va,
                          [&]<int MR, int NV>() { QkBlock<MR, NV>(qv, kr, ks, hd, sr); });
    }
    // Keys [jlo, jhi) of the tile may be visible: general mode trims a partially masked tile to
    // its key blocks with an active vector (with k_pos, a causal or window limit is not a key
    // range, so the tile was not cut at it), so masks and softmax skip the rest.
    size_t jlo = 0, jhi = nk;
    const size_t nblk = (nk + kMR - 1) / kMR;
    size_t blo = 0, bhi = nblk;
    if (gen && need_pos) {
      while (blo < bhi && blk_va[blo] >= blk_vb[blo]) ++blo;
      while (bhi > blo && blk_va[bhi - 1] >= blk_vb[bhi - 1]) --bhi;
      if (blo == bhi) continue;  // nothing visible in this tile
      jlo = blo * kMR;
      jhi = std::min(nk, bhi * kMR);
    }
    // Masks: key padding rows, then positions where the tile is not entirely visible.
    if (gen && need_pos) {
      for (size_t j = jlo; j < jhi; ++j) {
        const int64_t jj = t0 + static_cast<int64_t>(j);
        float* sr = st + j * kBq;
        if (need_live && !keys.live(jj)) {
          for (size_t l = 0; l < lanes; l += kN) hn::Store(ninf, d, sr + l);
          continue;
        }
        // Visible: p >= kp (causal; p > kp - 1 unless kp is INT32_MIN), kp - w <= p <= kp + w
        // (window, bounds clamped to int32), q_seq == k_seq.
        const int64_t kp = keys.at(jj);
        const bool causal = a.causal && kp > INT32_MIN;
        const auto kpv = hn::Set(di, ClampI32(kp - 1));
        const auto wlo = hn::Set(di, ClampI32(kp - a.window)),
                   whi = hn::Set(di, ClampI32(kp + a.window));
        const auto ksv = hn::Set(di, keys.seq_at(jj));
        for (size_t l = 0; l < lanes; l += kN) {
          const auto p = hn::Load(di, pos + l);
          auto vis = hn::Eq(p, p);  // all true
          if (causal) vis = hn::Gt(p, kpv);
          if (a.window >= 0) {
            vis = hn::AndNot(hn::Lt(p, wlo), vis);
            vis = hn::AndNot(hn::Gt(p, whi), vis);
          }
          if (need_seq) vis = hn::And(vis, hn::Eq(hn::Load(di, qseq + l), ksv));
          hn::Store(hn::IfThenElse(hn::RebindMask(d, vis), hn::Load(d, sr + l), ninf), d, sr + l);
        }
      }
    } else if (!gen && (kmask || need_pos)) {
      for (size_t j = 0; j < nk; ++j) {
        const int64_t jj = t0 + static_cast<int64_t>(j);
        float* sr = st + j * kBq;
        if (kmask && kmask[jj] == 0) {
          for (size_t l = 0; l < lanes; l += kN) hn::Store(ninf, d, sr + l);
          continue;
        }
        if (!need_pos) continue;
        for (size_t l = 0; l < lanes; l += kN) {
          const auto p = hn::Load(di, pos + l);
          auto vis = hn::Eq(p, p);  // all true
          // (Highway 1.0.3 has only Gt / Lt for int32.)
          if (a.causal) vis = hn::And(vis, hn::Gt(p, hn::Set(di, static_cast<int32_t>(jj - 1))));
          if (a.window >= 0) {
            vis = hn::And(vis, hn::Lt(p, hn::Set(di, static_cast<int32_t>(jj + w + 1))));
            vis = hn::And(vis, hn::Gt(p, hn::Set(di, static_cast<int32_t>(jj - w - 1))));
          }
          hn::Store(hn::IfThenElse(hn::RebindMask(d, vis), hn::Load(d, sr + l), ninf), d, sr + l);
        }
      }
    }
    // Online softmax, vertical per lane, over keys [jlo, jhi).
    bool rescale = false;
    for (size_t l = 0; l < lanes; l += kN) {
      VF mx = ninf;
      for (size_t j = jlo; j < jhi; ++j) mx = hn::Max(mx, hn::Load(d, st + j * kBq + l));
      const VF mold = hn::Load(d, mrow + l);
      const VF mnew = hn::Max(mold, mx);
      const VF msafe = hn::IfThenZeroElse(hn::Eq(mnew, ninf), mnew);
      const VF al = Exp2(d, hn::Sub(mold, msafe));
      rescale = rescale || !hn::AllTrue(d, hn::Eq(mold, mnew));
      hn::Store(al, d, alpha + l);
      hn::Store(mnew, d, mrow + l);
      VF sum0 = hn::Zero(d), sum1 = hn::Zero(d);
      size_t j = jlo;
      for (; j + 2 <= jhi; j += 2) {
        const VF p0 = Exp2(d, hn::Sub(hn::Load(d, st + j * kBq + l), msafe));
        const VF p1 = Exp2(d, hn::Sub(hn::Load(d, st + (j + 1) * kBq + l), msafe));
        hn::Store(p0, d, st + j * kBq + l);
        hn::Store(p1, d, st + (j + 1) * kBq + l);
        sum0 = hn::Add(sum0, p0);
        sum1 = hn::Add(sum1, p1);
      }
      if (j < jhi) {
        const VF p0 = Exp2(d, hn::Sub(hn::Load(d, st + j * kBq + l), msafe));
        hn::Store(p0, d, st + j * kBq + l);
        sum0 = hn::Add(sum0, p0);
      }
      hn::Store(hn::MulAdd(hn::Load(d, lrow + l), al, hn::Add(sum0, sum1)), d, lrow + l);
    }
    // O^T = O^T * alpha + V^T P^T.
    if (!need_pos) {
      for (size_t c0 = 0; c0 < hd; c0 += kMD) {
        const int md = static_cast<int>(hd - c0 < static_cast<size_t>(kMD) ? hd - c0 : kMD);
        float* oc = ot + c0 * kBq;
        const float* vc = vt + c0;
        Dispatch2<kMD, kNV>(
            md, nv, [&]<int MD, int NV>() { PvBlock<MD, NV>(oc, alpha, rescale, st, nk, vc, vs); });
      }
      continue;
    }
    // Partially masked tile: rescale once, then runs of key blocks with the same vector range.
    if (rescale)
      for (size_t c = 0; c < hd; ++c)
        for (size_t l = 0; l < lanes; l += kN)
          hn::Store(hn::Mul(hn::Load(d, ot + c * kBq + l), hn::Load(d, alpha + l)), d,
                    ot + c * kBq + l);
    for (size_t b0 = blo; b0 < bhi;) {
      size_t b1 = b0 + 1;
      while (b1 < bhi && blk_va[b1] == blk_va[b0] && blk_vb[b1] == blk_vb[b0]) ++b1;
      const int va = blk_va[b0], vb = blk_vb[b0];
      const size_t j0 = b0 * kMR, j1 = std::min(nk, b1 * kMR);
      b0 = b1;
      if (va >= vb) continue;
      const size_t voff = static_cast<size_t>(va) * kN;
      for (size_t c0 = 0; c0 < hd; c0 += kMD) {
        const int md = static_cast<int>(hd - c0 < static_cast<size_t>(kMD) ? hd - c0 : kMD);
        float* oc = ot + c0 * kBq + voff;
        const float* vc = vt + static_cast<int64_t>(j0) * vs + static_cast<int64_t>(c0);
        const float* pc = st + j0 * kBq + voff;
        Dispatch2<kMD, kNV>(md, vb - va, [&]<int MD, int NV>() {
          PvBlock<MD, NV>(oc, alpha + voff, false, pc, j1 - j0, vc, vs);
        });
      }
    }
  }

  // out = O / l (rows without a visible key: l == 0 -> zeros).
  for (size_t l = 0; l < lanes; ++l) lrow[l] = lrow[l] > 0.0f ? 1.0f / lrow[l] : 0.0f;
  int64_t r_done = 0;  // rows written by 16 x 16 transposes
#if HWY_TARGET == HWY_AVX3
  if (hd % 16 == 0) {
    for (; r_done + 16 <= rows; r_done += 16) {
      float* orow[16];
      for (int k = 0; k < 16; ++k) {
        const int64_t r = r_done + k;
        orow[k] = a.out + b * a.out_batch_stride + (i0 + r % nq) * a.out_row_stride +
                  (h0 + r / nq) * a.head_dim;
      }
      const __m512 inv = _mm512_load_ps(lrow + r_done);
      for (size_t c0 = 0; c0 < hd; c0 += 16) {
        __m512 t[16];
        for (int k = 0; k < 16; ++k)
          t[k] = _mm512_mul_ps(_mm512_load_ps(ot + (c0 + k) * kBq + r_done), inv);
        Transpose16(t);
        for (int k = 0; k < 16; ++k) _mm512_storeu_ps(orow[k] + c0, t[k]);
      }
    }
  }
#endif
  for (int64_t r = r_done; r < rows; ++r) {
    float* out = a.out + b * a.out_batch_stride + (i0 + r % nq) * a.out_row_stride +
                 (h0 + r / nq) * a.head_dim;
    const float inv = lrow[r];
    for (size_t c = 0; c < hd; ++c) out[c] = ot[c * kBq + static_cast<size_t>(r)] * inv;
  }
}

// ---- decode item ----------------------------------------------------------------------------

// `sums` and T as for PrefillItem.
template <class T>
inline void DecodeItem(const AttentionArgs& a, const KeySum* sums, int64_t b, int32_t ga,
                       int32_t gb, int32_t hb, int32_t he, uint8_t* slot) {
  const DF d;
  const size_t hd = static_cast<size_t>(a.head_dim);
  const int32_t group = a.n_heads / a.n_kv_heads;
  const size_t rows_max = DecodeRowsMax(a);
  float* qs = reinterpret_cast<float*>(slot);
  float* os = reinterpret_cast<float*>(slot + Align64(rows_max * hd * 4));
  float* ss = reinterpret_cast<float*>(slot + 2 * Align64(rows_max * hd * 4));
  float* mrow =
      reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(ss) + Align64(rows_max * kBkDec * 4));
  float* lrow = mrow + Align64(rows_max * 4) / 4;
  float* alpha = lrow + Align64(rows_max * 4) / 4;
  const int64_t past = a.kv_len - a.q_len;

  // Rows: group ga + gi owns rows [roff[gi], roff[gi + 1]); row r of it is head gh0[gi] + r /
  // q_len, query r % q_len.
  size_t roff[kDecMaxGroups + 1];
  int32_t gh0[kDecMaxGroups];
  const int ng = gb - ga;
  roff[0] = 0;
  for (int gi = 0; gi < ng; ++gi) {
    const int32_t g = ga + gi;
    gh0[gi] = std::max(hb, g * group);
    const int32_t gh1 = std::min(he, (g + 1) * group);
    roff[gi + 1] = roff[gi] + static_cast<size_t>((gh1 - gh0[gi]) * a.q_len);
  }
  const size_t R = roff[ng];
  int32_t qi[kDecMaxRows] = {};    // query index of each row
  int64_t rpos[kDecMaxRows] = {};  // general mode: position and seq id of each row
  int32_t rseq[kDecMaxRows] = {};
  const bool gen = sums != nullptr;
  QRange qr;
  const VF sc = hn::Set(d, a.scale * kLog2e);
  for (int gi = 0; gi < ng; ++gi)
    for (size_t r = roff[gi]; r < roff[gi + 1]; ++r) {
      const int64_t rl = static_cast<int64_t>(r - roff[gi]);
      const int64_t h = gh0[gi] + rl / a.q_len, ii = rl % a.q_len;
      qi[r] = static_cast<int32_t>(ii);
      rpos[r] = a.q_pos ? int64_t{a.q_pos[b * a.q_pos_batch_stride + ii]} : a.kv_len - a.q_len + ii;
      rseq[r] = a.q_seq ? a.q_seq[b * a.q_seq_batch_stride + ii] : 0;
      qr.add(rpos[r], rseq[r]);
      const float* q = a.q + b * a.q_batch_stride + ii * a.q_row_stride + h * a.head_dim;
      for (size_t c = 0; c < hd; c += kN) {
        hn::Store(hn::Mul(hn::LoadU(d, q + c), sc), d, qs + r * hd + c);
        hn::Store(hn::Zero(d), d, os + r * hd + c);
      }
      mrow[r] = kNegInf;
      lrow[r] = 0.0f;
    }

  const int64_t pmin = past, pmax = a.kv_len - 1;
  int64_t lo, hi;
  if (gen) {
    // Tiles from the first key of the queries' sequence (one, see MakePlan), as in PrefillItem.
    const int64_t origin =
        a.k_seq != nullptr && qr.smin == qr.smax ? SeqOrigin(a, KeysOf(a, b), sums, qr.smin) : 0;
    GeneralKeyRange(a, qr, origin, lo, hi);
    // No key past the last live one (a cache's cells not yet written): the last tile ends there.
    // Only its end moves, so every tile starts where it did and the sums are the same.
    int64_t last = -1;
    for (size_t blk = KeyBlocks(a); blk-- > 0 && last < 0;) last = sums[blk].jmax;
    hi = std::min(hi, last + 1);
  } else {
    KeyRange(a, pmin, pmax, lo, hi);
  }
  // A decode step's rows are usually one query (the heads of one token): then a key's
  // visibility is the same for every row and is decided once.
  const bool one_query = qr.pmin == qr.pmax && qr.smin == qr.smax;
  const Keys keys = KeysOf(a, b);
  const T* kbase = static_cast<const T*>(a.k) + b * a.k_batch_stride;
  const T* vbase = static_cast<const T*>(a.v) + b * a.v_batch_stride;
  // Prefetch (PrefetchRows): K rows kPrefetchRows (f16: kPrefetchRowsF16) ahead, V rows
  // kPrefetchRowsV ahead, over the item's groups' columns [span0, span0 + span).
  constexpr int64_t kAhead = sizeof(T) == sizeof(float) ? kPrefetchRows : kPrefetchRowsF16;
  const int64_t ks = a.k_row_stride, vs = a.v_row_stride;
  const int64_t span0 = int64_t{ga} * a.head_dim, span = int64_t{gb - ga} * a.head_dim;
  const int32_t* kmask = a.key_mask ? a.key_mask + b * a.mask_batch_stride : nullptr;
  const VF ninf = hn::Set(d, kNegInf);

  for (int64_t t0 = lo; t0 < hi; t0 += static_cast<int64_t>(kBkDec)) {
    const int64_t t1 = std::min(t0 + static_cast<int64_t>(kBkDec), hi);
    const size_t nk = static_cast<size_t>(t1 - t0);
    const size_t nkp = (nk + kN - 1) / kN * kN;
    bool need_pos, need_live = false, need_seq = false;
    if (gen) {
      const KeySum ts = TileSum(sums, t0, t1);
      const Tile kind = Classify(a, ts, qr);
      if (kind == Tile::kSkip) continue;
      need_pos = kind == Tile::kMasked;
      need_live = ts.n_live != ts.n_keys;
      need_seq = a.k_seq && !SameSeq(ts, qr);
    } else {
      need_pos = TileNeedsMask(a, t0, t1, pmin, pmax);
    }
    // Scores, 4 keys at a time across all groups (each key row is read front to back).
    for (size_t j = 0; j < nk;) {
      const size_t nj = std::min<size_t>(4, nk - j);
      const int64_t jg = t0 + static_cast<int64_t>(j);
      const int64_t kr0 = jg + kAhead, kr1 = std::min(hi, kr0 + static_cast<int64_t>(nj));
      for (int gi = 0; gi < ng; ++gi) {
        PrefetchRows(kbase, ks, span0, span, kr0, kr1, gi, ng);
        const T* kj = kbase + jg * ks + int64_t{ga + gi} * a.head_dim;
        for (size_t rb = roff[gi]; rb < roff[gi + 1]; rb += 4) {
          const int nr = static_cast<int>(std::min<size_t>(4, roff[gi + 1] - rb));
          const float* qr = qs + rb * hd;
          float* sj = ss + rb * kBkDec + j;
          if (nj == 4)
            Dispatch2<4, 1>(nr, 1, [&]<int NR, int>() { DecQk<NR, 4>(qr, hd, kj, ks, sj); });
          else
            Dispatch2<4, 3>(nr, static_cast<int>(nj),
                            [&]<int NR, int NJ>() { DecQk<NR, NJ>(qr, hd, kj, ks, sj); });
        }
      }
      j += nj;
    }
    for (size_t r = 0; r < R; ++r)
      for (size_t j = nk; j < nkp; ++j) ss[r * kBkDec + j] = kNegInf;
    if (gen && need_pos) {
      for (size_t j = 0; j < nk; ++j) {
        const int64_t jj = t0 + static_cast<int64_t>(j);
        const bool live = !need_live || keys.live(jj);
        const int64_t kp = keys.at(jj);
        const int32_t ks = keys.seq_at(jj);
        if (one_query) {
          if (!live || !VisibleAt(a, qr.pmin, qr.smin, kp, ks, need_seq))
            for (size_t r = 0; r < R; ++r) ss[r * kBkDec + j] = kNegInf;
          continue;
        }
        for (size_t r = 0; r < R; ++r)
          if (!live || !VisibleAt(a, rpos[r], rseq[r], kp, ks, need_seq))
            ss[r * kBkDec + j] = kNegInf;
      }
    } else if (!gen && (kmask || need_pos)) {
      for (size_t j = 0; j < nk; ++j) {
        const int64_t jj = t0 + static_cast<int64_t>(j);
        const bool hidden = kmask && kmask[jj] == 0;
        for (size_t r = 0; r < R; ++r)
          if (hidden || (need_pos && !Visible(a, past + qi[r], jj))) ss[r * kBkDec + j] = kNegInf;
      }
    }
    // Online softmax per row, keys in lanes; then O *= alpha where the max moved.
    for (size_t r = 0; r < R; ++r) {
      float* sr = ss + r * kBkDec;
      VF mx = ninf;
      for (size_t j = 0; j < nkp; j += kN) mx = hn::Max(mx, hn::Load(d, sr + j));
      const float mnew_s = std::max(mrow[r], hn::GetLane(hn::MaxOfLanes(d, mx)));
      const float msafe_s = mnew_s == kNegInf ? 0.0f : mnew_s;
      const VF msafe = hn::Set(d, msafe_s);
      alpha[r] = hn::GetLane(Exp2(d, hn::Set(d, mrow[r] - msafe_s)));
      if (mnew_s != mrow[r]) {
        const VF al = hn::Set(d, alpha[r]);
        for (size_t c = 0; c < hd; c += kN)
          hn::Store(hn::Mul(hn::Load(d, os + r * hd + c), al), d, os + r * hd + c);
      }
      mrow[r] = mnew_s;
      VF sum = hn::Zero(d);
      for (size_t j = 0; j < nkp; j += kN) {
        const VF p = Exp2(d, hn::Sub(hn::Load(d, sr + j), msafe));
        hn::Store(p, d, sr + j);
        sum = hn::Add(sum, p);
      }
      lrow[r] = lrow[r] * alpha[r] + hn::GetLane(hn::SumOfLanes(d, sum));
    }
    // O += P V, kPvKeys keys at a time across all groups (V rows read front to back).
    for (size_t j0 = 0; j0 < nk; j0 += kPvKeys) {
      const size_t nkc = std::min(kPvKeys, nk - j0);
      const int64_t jg = t0 + static_cast<int64_t>(j0);
      const int64_t vr0 = jg + kPrefetchRowsV;
      const int64_t vr1 = std::min(hi, vr0 + static_cast<int64_t>(nkc));
      // The first row block's passes (ng x passes per head) each prefetch a slice.
      const int64_t passes = static_cast<int64_t>((hd + kDecDC * kN - 1) / (kDecDC * kN));
      for (int gi = 0; gi < ng; ++gi) {
        const T* vg = vbase + jg * vs + int64_t{ga + gi} * a.head_dim;
        for (size_t rb = roff[gi]; rb < roff[gi + 1]; rb += 4) {
          const int nr = static_cast<int>(std::min<size_t>(4, roff[gi + 1] - rb));
          for (size_t c0 = 0; c0 < hd; c0 += kDecDC * kN) {
            const int dc = static_cast<int>(std::min<size_t>(kDecDC, (hd - c0) / kN));
            if (rb == roff[gi])
              PrefetchRows(vbase, vs, span0, span, vr0, vr1,
                           gi * passes + static_cast<int64_t>(c0 / (kDecDC * kN)), ng * passes);
            float* oc = os + rb * hd + c0;
            const float* pr = ss + rb * kBkDec + j0;
            const T* vc = vg + c0;
            Dispatch2<4, kDecDC>(
                nr, dc, [&]<int NR, int DC>() { DecPv<NR, DC>(oc, hd, nullptr, pr, nkc, vc, vs); });
          }
        }
      }
    }
  }

  for (int gi = 0; gi < ng; ++gi)
    for (size_t r = roff[gi]; r < roff[gi + 1]; ++r) {
      const int64_t rl = static_cast<int64_t>(r - roff[gi]);
      const int64_t h = gh0[gi] + rl / a.q_len, ii = rl % a.q_len;
      float* out = a.out + b * a.out_batch_stride + ii * a.out_row_stride + h * a.head_dim;
      const VF inv = hn::Set(d, lrow[r] > 0.0f ? 1.0f / lrow[r] : 0.0f);
      for (size_t c = 0; c < hd; c += kN)
        hn::StoreU(hn::Mul(hn::Load(d, os + r * hd + c), inv), d, out + c);
    }
}

}  // namespace attn

namespace attn {

// Query blocks that break where the sequence changes (general mode with sequence ids, prefill
// layout): starts[b * (q_len + 1) + k] is block k's first query of batch row b, and `counts[b]`
// its number of blocks; each block holds at most qper queries of one sequence.
// Reserved whatever the pointers (a backend sizes scratch at prepare, before it has them).
inline size_t RowBlockBytes(const AttentionArgs& a) {
  if (a.batch <= 0 || a.q_len < 0) return 0;
  return Align64(static_cast<size_t>(a.batch) * static_cast<size_t>(a.q_len + 2) * 8);
}
inline int64_t RowBlocks(const AttentionArgs& a, int64_t qper, int64_t* starts, int64_t* counts) {
  int64_t most = 0;
  for (int64_t b = 0; b < a.batch; ++b) {
    const int32_t* seq = a.q_seq + b * a.q_seq_batch_stride;
    int64_t* st = starts + b * (a.q_len + 1);
    int64_t n = 0, begin = 0;
    for (int64_t i = 0; i < a.q_len; ++i)
      if (i == 0 || seq[i] != seq[i - 1] || i - begin == qper) {
        st[n++] = i;
        begin = i;
      }
    counts[b] = n;
    most = std::max(most, n);
  }
  return most;
}

}  // namespace attn

uint64_t AttentionScratchBytes(const AttentionArgs& a, int n_threads) {
  const uint64_t slots = n_threads > 1 ? static_cast<uint64_t>(n_threads) : 1;
  return attn::SummaryBytes(a) + attn::RowBlockBytes(a) + slots * attn::SlotBytes(a) + 64;
}

void Attention(const AttentionArgs& a, int32_t head_begin, int32_t head_end, void* scratch,
               const ThreadPool* pool) {
  if (head_begin >= head_end || a.q_len <= 0 || a.batch <= 0) return;
  int64_t slots =
      pool != nullptr && pool->run != nullptr && pool->n_threads > 1 ? pool->n_threads : 1;
  attn::Plan p = attn::MakePlan(a, head_begin, head_end, slots);
  uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch) + 63) &
                                             ~static_cast<uintptr_t>(63));
  // Sequence ids (prefill layout): query blocks of one sequence each (RowBlocks).
  int64_t* row_starts = nullptr;
  int64_t* row_counts = nullptr;
  if (!p.decode && a.q_seq != nullptr) {
    row_starts = reinterpret_cast<int64_t*>(base + attn::SummaryBytes(a));
    row_counts = row_starts + a.batch * (a.q_len + 1);
    p.n_qb = attn::RowBlocks(a, p.qper, row_starts, row_counts);
    p.qchunk = std::min(p.n_qb, std::max<int64_t>(1, static_cast<int64_t>(attn::kBk) / p.qper));
    p.n_chunks = (p.n_qb + p.qchunk - 1) / p.qchunk;
    p.items = a.batch * p.n_chunks * p.n_groups * p.n_hb * p.qchunk;
  }
  if (slots > p.items) slots = p.items;
  // General mode: summarize every block of keys once (see "positions and sequence ids" above).
  attn::KeySum* sums = nullptr;
  const size_t n_blk = attn::KeyBlocks(a);
  if (attn::General(a)) {
    sums = reinterpret_cast<attn::KeySum*>(base);
    for (int64_t b = 0; b < a.batch; ++b) {
      const attn::Keys keys = attn::KeysOf(a, b);
      for (size_t blk = 0; blk < n_blk; ++blk) {
        attn::KeySum& s = sums[static_cast<size_t>(b) * n_blk + blk];
        s = attn::KeySum{};
        const int64_t t0 = static_cast<int64_t>(blk * attn::kBk);
        attn::AddKeys(keys, t0, std::min(a.kv_len, t0 + static_cast<int64_t>(attn::kBk)), s);
      }
    }
  }
  base += attn::SummaryBytes(a) + attn::RowBlockBytes(a);
  const size_t slot_bytes = attn::SlotBytes(a);
  std::atomic<int64_t> next{0};
  parallel_for(pool, slots, 1, [&](int64_t sb, int64_t se) {
    for (int64_t s = sb; s < se; ++s) {
      uint8_t* slot = base + static_cast<size_t>(s) * slot_bytes;
      for (;;) {
        int64_t w = next.fetch_add(1, std::memory_order_relaxed);
        if (w >= p.items) break;
        if (p.decode) {  // w -> (b, chunk of kv groups)
          const int32_t ga = p.g_begin + static_cast<int32_t>(w % p.n_gc) * p.gper;
          const int32_t gb = std::min(ga + p.gper, p.g_begin + p.n_groups);
          const int64_t b = w / p.n_gc;
          const attn::KeySum* sb_sums = sums ? sums + static_cast<size_t>(b) * n_blk : nullptr;
          if (a.kv_type == KvType::kF16)
            attn::DecodeItem<hwy::float16_t>(a, sb_sums, b, ga, gb, head_begin, head_end, slot);
          else
            attn::DecodeItem<float>(a, sb_sums, b, ga, gb, head_begin, head_end, slot);
          continue;
        }
        // w -> (b, chunk, group, head block, query block of the chunk); chunks and query blocks
        // last-first (causal: costliest first).
        const int64_t qin = w % p.qchunk;
        w /= p.qchunk;
        const int64_t hbk = w % p.n_hb;
        w /= p.n_hb;
        const int32_t g = p.g_begin + static_cast<int32_t>(w % p.n_groups);
        w /= p.n_groups;
        const int64_t ch = p.n_chunks - 1 - w % p.n_chunks;
        const int64_t b = w / p.n_chunks;
        const int64_t qb = ch * p.qchunk + p.qchunk - 1 - qin;
        if (qb >= p.n_qb) continue;  // the last chunk may be short
        // Heads of group g inside [head_begin, head_end), then this item's block of them.
        const int32_t gh0 = std::max(head_begin, g * p.group);
        const int32_t gh1 = std::min(head_end, (g + 1) * p.group);
        const int32_t h0 = gh0 + static_cast<int32_t>(hbk) * p.hper;
        const int32_t h1 = std::min(gh1, h0 + p.hper);
        if (h0 >= h1) continue;
        int64_t i0 = qb * p.qper, i1 = std::min(a.q_len, i0 + p.qper);
        if (row_starts != nullptr) {
          const int64_t* st = row_starts + b * (a.q_len + 1);
          if (qb >= row_counts[b]) continue;
          i0 = st[qb];
          i1 = qb + 1 < row_counts[b] ? st[qb + 1] : a.q_len;
        }
        const attn::KeySum* sb_sums = sums ? sums + static_cast<size_t>(b) * n_blk : nullptr;
        if (a.kv_type == KvType::kF16)
          attn::PrefillItem<hwy::float16_t>(a, sb_sums, b, g, h0, h1, i0, i1, slot);
        else
          attn::PrefillItem<float>(a, sb_sums, b, g, h0, h1, i0, i1, slot);
      }
    }
  });
}

}  // namespace laya::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
