// Per-target matrix products with f32 activations (f32, f16, bf16 weights, and i8w: int8 weights
// with per-row scales): the Highway family behind KernelTable::matmul[f32 | f16 | bf16 | i8w]. y[m, n] = x[m, k] . W[n, k]^T (+ bias[n]);
// the semantics are kernels/ref/matmul.cpp. Included once per compiled target by
// kernels/hwy/matmul_float.cpp (hwy/foreach_target.h); nothing here is called directly.
//
// Packed weights (written by `pack` at prepare, read only by the same target's `run`). Output
// columns are grouped in panels of kNR = 2 vectors (AVX3 32, AVX2 16, SSE4 8, SCALAR 2), zero
// padded past n. A panel is one contiguous stream ordered by k:
//   f32   float     [panels][k][kNR]           W[j, kk] at [j / kNR][kk][j % kNR]
//   f16   IEEE half [panels][k][kNR]
//   bf16  uint32    [panels][ceil(k / 2)][kNR] W[j, 2q] | W[j, 2q + 1] << 16, the pair vdpbf16ps
//                                              consumes (odd k: padded with a zero)
//   i8w   int8      [panels][k][kNR], then (64-byte aligned) f32 scales [panels * kNR] (0 past n)
// GEMV (m == 1, decode): each worker streams a contiguous range of panels once, front to back.
// GEMM (m > 1): x is copied into scratch as blocks of kMR rows x kKC k-values with a fixed row
// stride; a kMR x kNR register tile (AVX3: 12 x 32 = 24 zmm
// accumulators) runs over one k block of one panel. Tasks are (row chunk, column chunk) pairs: for
// every k block, each row tile's x block is reused across the chunk's panels, whose k blocks
// (kBBlockBytes) stay in L2 across the row tiles. Long k blocks (768) keep each panel stream long
// for the prefetchers. bf16 GEMMs on AMX have their own driver (namespace amx below).
// Scratch: GEMM ceil(m / kMR) * kMR rows x k rounded up to kKC, 4 bytes per value (x copied),
// independent of the worker count (AMX: its packed x, amx::scratch_bytes); GEMV one x row (on
// AVX512-BF16 its two bf16 halves).
//
// bf16: activations stay f32 (docs/precision.md: rounding x to bf16 is what cost decisions, not
// the bf16 weights). GEMMs widen the weights to f32 exactly (a bf16 is the high half of an f32)
// and run f32 FMA against f32 x, as the reference does, except on AMX (checked by the filler),
// where x is fed as two bf16 halves, hi = bf16(x) and lo = bf16(x - hi) (x to about 16 significant
// bits), through two tdpbf16ps passes. GEMVs do the same through vdpbf16ps on AVX512-BF16.

#if defined(LAYA_KERNELS_HWY_MATMUL_FLOAT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAYA_KERNELS_HWY_MATMUL_FLOAT_INL_H_
#undef LAYA_KERNELS_HWY_MATMUL_FLOAT_INL_H_
#else
#define LAYA_KERNELS_HWY_MATMUL_FLOAT_INL_H_
#endif

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>

#include <unistd.h>

#include "hwy/highway.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

#if HWY_TARGET == HWY_AVX3
#include <immintrin.h>

#include "kernels/hwy/amx_config.h"
#endif

HWY_BEFORE_NAMESPACE();
namespace laya::kernels::hwy_matmul_float {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
using DU = hn::RebindToUnsigned<D>;
using VU = hn::Vec<DU>;
using DI = hn::RebindToSigned<D>;
using DH = hn::Rebind<hwy::float16_t, D>;

constexpr int kL = HWY_LANES(float);  // f32 lanes per vector
constexpr int kNV = 2;                // vectors per panel row
constexpr int kNR = kNV * kL;         // output columns per panel
#if HWY_TARGET == HWY_AVX3
constexpr int kMR = 12;  // 24 accumulators + 2 panel vectors + broadcasts of 32 zmm
#elif HWY_TARGET == HWY_SCALAR
constexpr int kMR = 4;
#else
constexpr int kMR = 6;  // 12 accumulators + 2 panel vectors + 1 broadcast of 16 registers
#endif
// bf16 panels hold a multiple of kBF16StepAlign pair rows (zero past k): on AVX3, 16, the k depth
// (32 values) of one AMX tile, so the AMX kernel reads whole tiles of every panel.
constexpr int64_t kBF16StepAlign = kNR == 32 ? 16 : 1;
constexpr int64_t kBBlockBytes = 512 << 10;  // panel bytes of one k block per GEMM task (L2)

inline int64_t div_up(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Row tiles per GEMM task: a task's x blocks stay in L2 beside its panel chunk and the next one
// (prefetched). 16 (576 KiB of f32 x) was tuned where L2 is 1 MiB (Zen 4); with 2 MiB (the Xeon
// with AMX) 24 keep a 256-token GEMM in one row chunk, so its weights stream from DRAM once
// rather than twice (docs/kernels.md). Only the grouping of the work changes, not its sums.
inline int64_t mc_tiles() {
  static const int64_t tiles = sysconf(_SC_LEVEL2_CACHE_SIZE) >= (2 << 20) ? 24 : 16;
  return tiles;
}

inline int pool_threads(const ThreadPool* pool) {
  return pool != nullptr && pool->run != nullptr && pool->n_threads > 1 ? pool->n_threads : 1;
}

// GEMM tasks are (row chunk, column chunk) pairs: starting from chunks of *mc row units and *nc
// panels, halves the column chunks, then the row chunks, until there are at least two tasks per
// worker or nothing is left to split. Returns the number of column chunks.
inline int64_t split_tasks(int threads, int64_t row_units, int64_t panels, int64_t* mc,
                           int64_t* nc) {
  int64_t mchunks = div_up(row_units, *mc), nchunks = div_up(panels, *nc);
  while (threads > 1 && mchunks * nchunks < 2 * threads) {
    if (*nc > 1) {
      *nc = div_up(*nc, 2);
    } else if (*mc > 1) {
      *mc = div_up(*mc, 2);
    } else {
      break;
    }
    mchunks = div_up(row_units, *mc);
    nchunks = div_up(panels, *nc);
  }
  return nchunks;
}

// One cache line at p into L2 (prefetcht1 on x86).
HWY_INLINE void prefetch_l2(const uint8_t* p) {
  __builtin_prefetch(p, 0, 2);
}

// ---- partial vectors (column tails) ---------------------------------------------------------

// Loads n < kL floats, zero-filling the rest; never touches memory past p[n - 1].
HWY_INLINE V load_part(D d, const float* HWY_RESTRICT p, int64_t n) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  return hn::MaskedLoad(hn::FirstN(d, static_cast<size_t>(n)), d, p);
#else
  HWY_ALIGN float tmp[kL] = {};
  for (int64_t i = 0; i < n; ++i) tmp[i] = p[i];
  return hn::Load(d, tmp);
#endif
}

// Stores the first n < kL lanes; never touches memory past p[n - 1].
HWY_INLINE void store_part(V v, D d, float* HWY_RESTRICT p, int64_t n) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2
  hn::BlendedStore(v, hn::FirstN(d, static_cast<size_t>(n)), d, p);
#else
  HWY_ALIGN float tmp[kL];
  hn::Store(v, d, tmp);
  for (int64_t i = 0; i < n; ++i) p[i] = tmp[i];
#endif
}

// Writes an MR x kNR accumulator tile to c (row stride ldc), only its first ncols columns:
// c = acc + bias (bias nullable) for the first k block, c += acc for later ones.
template <int MR>
HWY_INLINE void store_tile(const V (&acc)[MR][kNV], float* HWY_RESTRICT c, int64_t ldc,
                           int64_t ncols, const float* HWY_RESTRICT bias, bool accumulate) {
  const D d;
  HWY_UNROLL(2)
  for (int v = 0; v < kNV; ++v) {
    const int64_t cols = ncols - int64_t{v} * kL;
    if (cols >= kL) {
      const V b = (!accumulate && bias != nullptr) ? hn::LoadU(d, bias + v * kL) : hn::Zero(d);
      HWY_UNROLL(16)
      for (int i = 0; i < MR; ++i) {
        float* ci = c + i * ldc + v * kL;
        hn::StoreU(hn::Add(acc[i][v], accumulate ? hn::LoadU(d, ci) : b), d, ci);
      }
    } else if (cols > 0) {
      const V b =
          (!accumulate && bias != nullptr) ? load_part(d, bias + v * kL, cols) : hn::Zero(d);
      HWY_UNROLL(16)
      for (int i = 0; i < MR; ++i) {
        float* ci = c + i * ldc + v * kL;
        store_part(hn::Add(acc[i][v], accumulate ? load_part(d, ci, cols) : b), d, ci, cols);
      }
    }
  }
}

// Copies rows x kc floats of x into dst rows of `stride` floats, zero-padding each row to `pad`
// values (pad >= kc).
inline void copy_rows(const float* HWY_RESTRICT x, int64_t ldx, int64_t rows, int64_t kc,
                      int64_t pad, int64_t stride, float* HWY_RESTRICT dst) {
  for (int64_t r = 0; r < rows; ++r) {
    float* out = dst + r * stride;
    std::memcpy(out, x + r * ldx, sizeof(float) * static_cast<size_t>(kc));
    for (int64_t i = kc; i < pad; ++i) out[i] = 0.0f;
  }
}

// ---- per weight type: packed element, x block format, register tile, GEMV panel --------------
//
// Each Kern provides:
//   W, A             packed weight element; x block element
//   kKStep           k values per packed panel row (bf16: a pair)
//   kKC, kARow       k values per GEMM k block; A elements per x block row
//   pack_a(x, ldx, rows, kc, dst)          x block [rows][kc] -> dst [rows][kARow]
//   tile<MR>(a, b, steps, c, ldc, ncols, bias, accumulate, pf, pf_lines)
//                                          MR rows x one panel, `steps` panel rows; also
//                                          prefetches min(pf_lines, steps) cache lines from pf
//                                          on into L2, one per step (pf nullable)
//   gemv_x(x, k, scratch) -> const A*      x as the GEMV consumes it
//   gemv_panel(xa, b, steps, y, ncols, bias)

// The kernels of one-value-per-k weight types (f32, f16, i8w): f32 x and FMA; Self::load_b
// widens kNR packed weights to kNV f32 vectors.
template <class Self, class W_>
struct KernWide {
  using W = W_;
  using A = float;
  static constexpr int64_t kKStep = 1;
  static constexpr int64_t kStepAlign = 1;
  static constexpr int64_t kKC = 768;
  static constexpr int64_t kARow = kKC;

  static void pack_a(const float* x, int64_t ldx, int64_t rows, int64_t kc, A* dst) {
    copy_rows(x, ldx, rows, kc, kc, kARow, dst);
  }

  template <int MR>
  static HWY_NOINLINE void tile(const A* HWY_RESTRICT a, const W* HWY_RESTRICT b, int64_t steps,
                                float* HWY_RESTRICT c, int64_t ldc, int64_t ncols,
                                const float* HWY_RESTRICT bias, bool accumulate, const uint8_t* pf,
                                int64_t pf_lines) {
    const D d;
    V acc[MR][kNV];
    HWY_UNROLL(16)
    for (int i = 0; i < MR; ++i) {
      HWY_UNROLL(2)
      for (int v = 0; v < kNV; ++v) acc[i][v] = hn::Zero(d);
    }
    for (int64_t s = 0; s < steps; ++s) {
      if (s < pf_lines) prefetch_l2(pf + s * 64);
      V bv[kNV];
      Self::load_b(d, b + s * kNR, bv);
      HWY_UNROLL(16)
      for (int i = 0; i < MR; ++i) {
        const V ai = hn::Set(d, a[i * kARow + s]);
        HWY_UNROLL(2)
        for (int v = 0; v < kNV; ++v) acc[i][v] = hn::MulAdd(ai, bv[v], acc[i][v]);
      }
    }
    store_tile<MR>(acc, c, ldc, ncols, bias, accumulate);
  }

  static const A* gemv_x(const float* x, int64_t, void*) { return x; }

  static void gemv_panel(const A* HWY_RESTRICT x, const W* HWY_RESTRICT b, int64_t steps,
                         float* HWY_RESTRICT y, int64_t ncols, const float* HWY_RESTRICT bias) {
    const D d;
    V acc[1][kNV], acc2[kNV];
    for (int v = 0; v < kNV; ++v) acc[0][v] = acc2[v] = hn::Zero(d);
    int64_t s = 0;
    for (; s + 2 <= steps; s += 2) {
      V b0[kNV], b1[kNV];
      Self::load_b(d, b + s * kNR, b0);
      Self::load_b(d, b + (s + 1) * kNR, b1);
      const V x0 = hn::Set(d, x[s]), x1 = hn::Set(d, x[s + 1]);
      HWY_UNROLL(2)
      for (int v = 0; v < kNV; ++v) {
        acc[0][v] = hn::MulAdd(x0, b0[v], acc[0][v]);
        acc2[v] = hn::MulAdd(x1, b1[v], acc2[v]);
      }
    }
    if (s < steps) {
      V b0[kNV];
      Self::load_b(d, b + s * kNR, b0);
      const V x0 = hn::Set(d, x[s]);
      for (int v = 0; v < kNV; ++v) acc[0][v] = hn::MulAdd(x0, b0[v], acc[0][v]);
    }
    for (int v = 0; v < kNV; ++v) acc[0][v] = hn::Add(acc[0][v], acc2[v]);
    store_tile<1>(acc, y, 0, ncols, bias, false);
  }
};

struct KernF32 : KernWide<KernF32, float> {
  static HWY_INLINE void load_b(D d, const W* HWY_RESTRICT b, V (&bv)[kNV]) {
    HWY_UNROLL(2)
    for (int v = 0; v < kNV; ++v) bv[v] = hn::LoadU(d, b + v * kL);
  }
};

// f16 weights: each panel vector widened from half on load (F16C on AVX2 / AVX3, emulated on
// SSE4 / SCALAR).
struct KernF16 : KernWide<KernF16, uint16_t> {
  static HWY_INLINE void load_b(D d, const W* HWY_RESTRICT b, V (&bv)[kNV]) {
    const DH dh;
    const hwy::float16_t* bh = reinterpret_cast<const hwy::float16_t*>(b);
    HWY_UNROLL(2)
    for (int v = 0; v < kNV; ++v) bv[v] = hn::PromoteTo(d, hn::LoadU(dh, bh + v * kL));
  }
};

// i8w weights: each panel vector sign-extended from int8 and converted to f32 (exact) on load;
// the per-row scales are applied to the finished sums (run_i8w below), not here.
struct KernI8W : KernWide<KernI8W, int8_t> {
  static HWY_INLINE void load_b(D d, const W* HWY_RESTRICT b, V (&bv)[kNV]) {
    const DI di;
    const hn::Rebind<int8_t, D> d8;
    HWY_UNROLL(2)
    for (int v = 0; v < kNV; ++v)
      bv[v] = hn::ConvertTo(d, hn::PromoteTo(di, hn::LoadU(d8, b + v * kL)));
  }
};

// bf16 weights without AVX512-BF16: f32 x; each packed pair word split into its two exact f32
// values (low half << 16, high half masked), then f32 FMA: the f32 kernel with exact weights.
struct KernBF16 {
  using W = uint32_t;
  using A = float;
  static constexpr int64_t kKStep = 2;
  static constexpr int64_t kStepAlign = kBF16StepAlign;
  static constexpr int64_t kKC = 768;
  static constexpr int64_t kARow = kKC;

  static HWY_INLINE void load_b(D d, const W* HWY_RESTRICT b, V (&even)[kNV], V (&odd)[kNV]) {
    const DU du;
    const VU hi = hn::Set(du, 0xffff0000u);
    HWY_UNROLL(2)
    for (int v = 0; v < kNV; ++v) {
      const VU u = hn::LoadU(du, b + v * kL);
      even[v] = hn::BitCast(d, hn::ShiftLeft<16>(u));
      odd[v] = hn::BitCast(d, hn::And(u, hi));
    }
  }

  static void pack_a(const float* x, int64_t ldx, int64_t rows, int64_t kc, A* dst) {
    copy_rows(x, ldx, rows, kc, div_up(kc, 2) * 2, kARow, dst);
  }

  template <int MR>
  static HWY_NOINLINE void tile(const A* HWY_RESTRICT a, const W* HWY_RESTRICT b, int64_t steps,
                                float* HWY_RESTRICT c, int64_t ldc, int64_t ncols,
                                const float* HWY_RESTRICT bias, bool accumulate, const uint8_t* pf,
                                int64_t pf_lines) {
    const D d;
    V acc[MR][kNV];
    HWY_UNROLL(16)
    for (int i = 0; i < MR; ++i) {
      HWY_UNROLL(2)
      for (int v = 0; v < kNV; ++v) acc[i][v] = hn::Zero(d);
    }
    for (int64_t s = 0; s < steps; ++s) {
      if (s < pf_lines) prefetch_l2(pf + s * 64);
      V be[kNV], bo[kNV];
      load_b(d, b + s * kNR, be, bo);
      HWY_UNROLL(16)
      for (int i = 0; i < MR; ++i) {
        const V ae = hn::Set(d, a[i * kARow + 2 * s]);
        const V ao = hn::Set(d, a[i * kARow + 2 * s + 1]);
        HWY_UNROLL(2)
        for (int v = 0; v < kNV; ++v) {
          acc[i][v] = hn::MulAdd(ae, be[v], acc[i][v]);
          acc[i][v] = hn::MulAdd(ao, bo[v], acc[i][v]);
        }
      }
    }
    store_tile<MR>(acc, c, ldc, ncols, bias, accumulate);
  }

  // x padded to even k (scratch: 4 * (k + 1) bytes).
  static const A* gemv_x(const float* x, int64_t k, void* scratch) {
    float* xa = static_cast<float*>(scratch);
    copy_rows(x, 0, 1, k, div_up(k, 2) * 2, 0, xa);
    return xa;
  }

  static void gemv_panel(const A* HWY_RESTRICT x, const W* HWY_RESTRICT b, int64_t steps,
                         float* HWY_RESTRICT y, int64_t ncols, const float* HWY_RESTRICT bias) {
    const D d;
    V acc[1][kNV], acc2[kNV];
    for (int v = 0; v < kNV; ++v) acc[0][v] = acc2[v] = hn::Zero(d);
    for (int64_t s = 0; s < steps; ++s) {
      V be[kNV], bo[kNV];
      load_b(d, b + s * kNR, be, bo);
      const V xe = hn::Set(d, x[2 * s]), xo = hn::Set(d, x[2 * s + 1]);
      HWY_UNROLL(2)
      for (int v = 0; v < kNV; ++v) {
        acc[0][v] = hn::MulAdd(xe, be[v], acc[0][v]);
        acc2[v] = hn::MulAdd(xo, bo[v], acc2[v]);
      }
    }
    for (int v = 0; v < kNV; ++v) acc[0][v] = hn::Add(acc[0][v], acc2[v]);
    store_tile<1>(acc, y, 0, ncols, bias, false);
  }
};

#if HWY_TARGET == HWY_AVX3
#define LAYA_MMF_BF16_ATTR __attribute__((target(HWY_TARGET_STR ",avx512bf16")))

// bf16 GEMV on AVX512-BF16 (only selected when the CPU has it): x split into hi = bf16(x) and
// lo = bf16(x - hi) (vcvtneps2bf16, nearest even; x - hi is exact in f32), stored as bf16 pair
// words, hi pairs then lo pairs; each step runs vdpbf16ps for both halves against the same 2 panel
// vectors. GEMV only: GEMMs take AMX, or else KernBF16's f32 FMA, since two vdpbf16ps per pair
// run at half the FMA rate where vdpbf16ps has the FMA's throughput (Zen 4) and at a quarter where
// it has half (Sapphire Rapids: 43 against 175 GFLOP/s measured, docs/kernels.md).
struct KernBF16Dp {
  using W = uint32_t;
  using A = uint32_t;
  static constexpr int64_t kKStep = 2;
  static constexpr int64_t kStepAlign = kBF16StepAlign;
  static_assert(kNR == 32, "the AVX3 panel is two zmm");

  // 16 floats -> their 16 bf16 hi and lo halves.
  static LAYA_MMF_BF16_ATTR HWY_INLINE void split16(__m512 v, __m256i* hi, __m256i* lo) {
    const __m256bh vh = _mm512_cvtneps_pbh(v);
    const __m512 wide = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(reinterpret_cast<__m256i>(vh)), 16));
    __m512 rest = _mm512_sub_ps(v, wide);
    rest = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(rest, rest, _CMP_ORD_Q), rest);  // inf - inf
    *hi = reinterpret_cast<__m256i>(vh);
    *lo = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(rest));
  }

  // k floats -> ceil(k / 2) pair words of hi and of lo (odd k: the last high halves are zero).
  static LAYA_MMF_BF16_ATTR void split(const float* HWY_RESTRICT x, int64_t k,
                                       uint32_t* HWY_RESTRICT hi, uint32_t* HWY_RESTRICT lo) {
    uint16_t* h = reinterpret_cast<uint16_t*>(hi);
    uint16_t* l = reinterpret_cast<uint16_t*>(lo);
    for (int64_t i = 0; i < k; i += 16) {
      const int64_t r = std::min<int64_t>(16, k - i);
      const __mmask16 in = static_cast<__mmask16>((1u << r) - 1);
      const __mmask16 out = static_cast<__mmask16>((1u << (r + (r & 1))) - 1);
      __m256i vh, vl;
      split16(_mm512_maskz_loadu_ps(in, x + i), &vh, &vl);
      _mm256_mask_storeu_epi16(h + i, out, vh);
      _mm256_mask_storeu_epi16(l + i, out, vl);
    }
  }

  // x as hi pair words, then lo pair words from word ceil(k / 2) (scratch: 4 * (k + 1) bytes).
  static const A* gemv_x(const float* x, int64_t k, void* scratch) {
    uint32_t* xa = static_cast<uint32_t*>(scratch);
    split(x, k, xa, xa + div_up(k, 2));
    return xa;
  }

  static LAYA_MMF_BF16_ATTR void gemv_panel(const A* HWY_RESTRICT x, const W* HWY_RESTRICT b,
                                            int64_t steps, float* HWY_RESTRICT y, int64_t ncols,
                                            const float* HWY_RESTRICT bias) {
    const A* xl = x + steps;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m512 acc2 = _mm512_setzero_ps(), acc3 = _mm512_setzero_ps();
    for (int64_t s = 0; s < steps; ++s) {
      const __m512bh h = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(x[s])));
      const __m512bh l = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xl[s])));
      const W* bs = b + s * kNR;
      const __m512bh b0 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(bs));
      const __m512bh b1 = reinterpret_cast<__m512bh>(_mm512_loadu_si512(bs + 16));
      acc0 = _mm512_dpbf16_ps(acc0, h, b0);
      acc1 = _mm512_dpbf16_ps(acc1, h, b1);
      acc2 = _mm512_dpbf16_ps(acc2, l, b0);
      acc3 = _mm512_dpbf16_ps(acc3, l, b1);
    }
    V out[1][kNV] = {{V{_mm512_add_ps(acc0, acc2)}, V{_mm512_add_ps(acc1, acc3)}}};
    store_tile<1>(out, y, 0, ncols, bias, false);
  }
};
#undef LAYA_MMF_BF16_ATTR

#define LAYA_MMF_AMX_ATTR __attribute__((target(HWY_TARGET_STR ",avx512bf16,amx-tile,amx-bf16")))

// bf16 weights on AMX (GEMM only; selected when the CPU has AMX-BF16 and the kernel granted the
// tile state, see matmul_float.cpp; m == 1 stays on KernBF16Dp's GEMV). The same packed panels:
// 16 pair rows x 32 columns of a panel are two B tiles (columns 0-15 and 16-31, row stride
// 128 bytes). x is split into hi / lo bf16 halves as in KernBF16Dp and packed per 32-row block as
// A tiles: for each 32-k step, [hi rows 0-15][hi rows 16-31][lo rows 0-15][lo rows 16-31], 16
// pair words a row (4 KiB a step; rows past m and k past k are zero, like the panels' rows past
// k). One 32 x 32 output block keeps its four C tiles (tmm0-3) over a k slice of kSliceSteps
// steps: per step two A tiles (tmm4-5) and the two B tiles (tmm6-7) feed four tdpbf16ps for hi,
// then the lo A tiles four more against the same B tiles; the next slice's tiles start from the
// sums in y.
namespace amx {

constexpr int64_t kMB = 32;                // rows per block (two A tiles)
constexpr int64_t kKB = 32;                // k values per step (one tile row of bf16 pairs)
constexpr int64_t kStepBytes = 4 * 1024;   // A bytes per block and step: 4 tiles of 16 x 64
constexpr int64_t kAChunkBytes = 1 << 20;  // A bytes of the row blocks one task keeps in L2
// k steps per slice: a GEMM runs slice by slice, so a task's A slice stays in L2 while its panels
// stream past once. Fixed (not derived from m), so a row's sums do not depend on the other rows.
constexpr int64_t kSliceSteps = 32;
constexpr int64_t kPanelStepBytes = 16 * kNR * 4;  // bf16 panel bytes per step (two B tiles)
static_assert(kBF16StepAlign * 2 == kKB, "a panel's rows are padded to whole B tiles");

// The first `rows` rows of x (rows <= kMB; the block's rows past them are zero) -> one row block
// of A tiles over all of k.
LAYA_MMF_AMX_ATTR void pack_block(const float* HWY_RESTRICT x, int64_t ldx, int64_t rows, int64_t k,
                                  uint8_t* HWY_RESTRICT dst) {
  // Step by step, so the stores fill each 4 KiB step front to back (row-major order measured
  // ~10% of the GEMM: every store a line 4 KiB from the last).
  const int64_t steps = div_up(k, kKB);
  for (int64_t q = 0; q < steps; ++q) {
    const int64_t left = k - q * kKB;
    const __mmask16 m0 = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
    const __mmask16 m1 = static_cast<__mmask16>(left >= 32   ? 0xffff
                                                : left <= 16 ? 0
                                                             : (1u << (left - 16)) - 1);
    uint8_t* step = dst + q * kStepBytes;
    for (int64_t r = 0; r < kMB; ++r) {
      uint8_t* hi = step + r / 16 * 1024 + r % 16 * 64;
      uint8_t* lo = hi + 2048;
      __m256i h0 = _mm256_setzero_si256(), l0 = h0, h1 = h0, l1 = h0;
      if (r < rows) {
        const float* xr = x + r * ldx + q * kKB;
        KernBF16Dp::split16(_mm512_maskz_loadu_ps(m0, xr), &h0, &l0);
        KernBF16Dp::split16(_mm512_maskz_loadu_ps(m1, xr + 16), &h1, &l1);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi), h0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(hi + 32), h1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo), l0);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(lo + 32), l1);
    }
  }
}

// One 32 x 32 block: a (packed row block), b (the panel's first row), `steps` 32-k steps; the
// sums go to c [32][ldc] f32, added to the sums there when load_c (zero start otherwise). Each
// step also prefetches `pf_lines` cache lines from pf on (into L2; pf nullable): the caller
// spreads the next panel slice over its blocks, so that slice's first block does not wait on
// DRAM.
LAYA_MMF_AMX_ATTR HWY_NOINLINE void block(const uint8_t* HWY_RESTRICT a,
                                          const uint8_t* HWY_RESTRICT b, int64_t steps,
                                          float* HWY_RESTRICT c, int64_t ldc, bool load_c,
                                          const uint8_t* pf, int64_t pf_lines) {
  if (load_c) {
    _tile_loadd(0, c, ldc * 4);
    _tile_loadd(1, c + 16, ldc * 4);
    _tile_loadd(2, c + 16 * ldc, ldc * 4);
    _tile_loadd(3, c + 16 * ldc + 16, ldc * 4);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  // Software-pipelined: each tile is reloaded as soon as its last product of the step has been
  // issued (tiles are not renamed, so a load waits for the products reading the old contents),
  // and the next step's hi A and B tiles load under this step's last lo products. Each C tile
  // still sums hi then lo, step by step, as before.
  _tile_loadd(6, b, kNR * 4);
  _tile_loadd(4, a, 64);
  _tile_loadd(5, a + 1024, 64);
  _tile_loadd(7, b + 64, kNR * 4);
  for (int64_t q = 0; q < steps; ++q) {
    const uint8_t* aq = a + q * kStepBytes;
    if (pf != nullptr) {
      for (int64_t i = 0; i < pf_lines; ++i)
        _mm_prefetch(reinterpret_cast<const char*>(pf + (q * pf_lines + i) * 64), _MM_HINT_T1);
    }
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(4, aq + 2048, 64);
    _tile_dpbf16ps(3, 5, 7);
    _tile_loadd(5, aq + 3072, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    if (q + 1 == steps) {
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
      break;
    }
    const uint8_t* an = aq + kStepBytes;
    const uint8_t* bn = b + (q + 1) * kPanelStepBytes;
    _tile_loadd(4, an, 64);
    _tile_dpbf16ps(2, 5, 6);
    _tile_loadd(6, bn, kNR * 4);
    _tile_dpbf16ps(3, 5, 7);
    _tile_loadd(5, an + 1024, 64);
    _tile_loadd(7, bn + 64, kNR * 4);
  }
  _tile_stored(0, c, ldc * 4);
  _tile_stored(1, c + 16, ldc * 4);
  _tile_stored(2, c + 16 * ldc, ldc * 4);
  _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
}

// c[r, j] = y[r, j] for the block's first `rows` rows and `ncols` columns, zero elsewhere.
void load_block(const float* HWY_RESTRICT y, int64_t ldy, int64_t rows, int64_t ncols,
                float* HWY_RESTRICT c) {
  const D d;
  for (int64_t r = 0; r < kMB; ++r) {
    for (int v = 0; v < kNV; ++v) {
      const int64_t cols = r < rows ? std::clamp<int64_t>(ncols - int64_t{v} * kL, 0, kL) : 0;
      const V in = cols == kL ? hn::LoadU(d, y + r * ldy + v * kL)
                   : cols > 0 ? load_part(d, y + r * ldy + v * kL, cols)
                              : hn::Zero(d);
      hn::Store(in, d, c + r * kNR + v * kL);
    }
  }
}

// y[r, j] = c[r, j] (+ bias[j]) for the block's first `rows` rows and `ncols` columns.
void store_block(const float* HWY_RESTRICT c, int64_t rows, float* HWY_RESTRICT y, int64_t ldy,
                 int64_t ncols, const float* HWY_RESTRICT bias) {
  const D d;
  for (int v = 0; v < kNV; ++v) {
    const int64_t cols = std::min<int64_t>(kL, ncols - int64_t{v} * kL);
    if (cols <= 0) break;
    const V bv = bias == nullptr ? hn::Zero(d)
                 : cols == kL    ? hn::LoadU(d, bias + v * kL)
                                 : load_part(d, bias + v * kL, cols);
    for (int64_t r = 0; r < rows; ++r) {
      const V out = hn::Add(hn::LoadU(d, c + r * kNR + v * kL), bv);
      if (cols == kL) {
        hn::StoreU(out, d, y + r * ldy + v * kL);
      } else {
        store_part(out, d, y + r * ldy + v * kL, cols);
      }
    }
  }
}

LAYA_MMF_AMX_ATTR void load_config() {
  static const AmxTileConfig cfg;
  _tile_loadconfig(&cfg);
}

LAYA_MMF_AMX_ATTR void release() {
  _tile_release();
}

// Pair rows of a panel as the tiles read it: ceil(k / 2) rounded up to whole tiles.
inline int64_t panel_rows(int64_t k) {
  return div_up(div_up(k, 2), kBF16StepAlign) * kBF16StepAlign;
}

// Where a GEMM's B panels come from: source(p) and source_bytes() (step_bytes() a 32-k step) are
// the bytes read from memory; panel(p, buf, q0, q1) the bf16 panel of steps [q0, q1) as the tiles
// read it (its step 0 returned). Bf16Src: the packed bf16 panels themselves.
struct Bf16Src {
  const uint32_t* w;
  int64_t rows;  // panel_rows(k)
  const uint8_t* source(int64_t p) const {
    return reinterpret_cast<const uint8_t*>(w + p * rows * kNR);
  }
  int64_t source_bytes() const { return rows * kNR * 4; }
  static constexpr int64_t step_bytes() { return kPanelStepBytes; }
  const uint8_t* panel(int64_t p, uint8_t*, int64_t, int64_t) const { return source(p); }
};

// I8Src: i8w's packed int8 panels ([k][kNR] per panel), each slice converted once per task into
// a bf16 panel in the task's slot (int8 is exact in bf16: the f32 value's high half). The sums
// are sum x w_int8; the caller applies the row scales.
struct I8Src {
  const int8_t* w;
  int64_t k, rows;
  const uint8_t* source(int64_t p) const {
    return reinterpret_cast<const uint8_t*>(w + p * k * kNR);
  }
  int64_t source_bytes() const { return k * kNR; }
  static constexpr int64_t step_bytes() { return 2 * kBF16StepAlign * kNR; }
  LAYA_MMF_AMX_ATTR const uint8_t* panel(int64_t p, uint8_t* buf, int64_t q0, int64_t q1) const {
    const int8_t* src = w + p * k * kNR;
    const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
    const int64_t s1 = std::min(rows, q1 * kBF16StepAlign);
    for (int64_t s = q0 * kBF16StepAlign; s < s1; ++s) {
      uint8_t* out = buf + s * kNR * 4;
      for (int h = 0; h < 2; ++h) {  // columns 0-15, 16-31
        __m512i even = _mm512_setzero_si512(), odd = even;
        if (2 * s < k) {
          const __m128i e =
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * s * kNR + 16 * h));
          even = _mm512_srli_epi32(_mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(e))),
                                   16);
        }
        if (2 * s + 1 < k) {
          const __m128i o =
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + (2 * s + 1) * kNR + 16 * h));
          odd = _mm512_and_si512(_mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(o))),
                                 hi_mask);
        }
        _mm512_storeu_si512(out + 64 * h, _mm512_or_si512(even, odd));
      }
    }
    return buf;
  }
};

inline uint64_t slot_bytes(int64_t k) {
  return static_cast<uint64_t>(panel_rows(k) * kNR * 4);
}

// Scratch: the packed x, then (converting sources) one bf16 panel per worker slot.
inline uint64_t scratch_bytes(int64_t m, int64_t k, int threads, bool converts) {
  if (m <= 1 || k <= 0) return 0;
  const uint64_t a = static_cast<uint64_t>(div_up(m, kMB) * div_up(k, kKB) * kStepBytes);
  return a + (converts ? static_cast<uint64_t>(std::max(threads, 1)) * slot_bytes(k) : 0) + 64;
}

template <class Src>
void gemm(const Src& src, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
          int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
  const int threads = pool_threads(pool);
  const int64_t blocks = div_up(m, kMB), steps = div_up(k, kKB), panels = div_up(n, kNR);
  const int64_t block_bytes = steps * kStepBytes;
  uint8_t* a = static_cast<uint8_t*>(scratch);
  uint8_t* slots = a + blocks * block_bytes;
  parallel_for(pool, blocks, div_up(blocks, threads), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      pack_block(x + t * kMB * ldx, ldx, std::min(kMB, m - t * kMB), k, a + t * block_bytes);
  });

  // Tasks: (row chunk, column chunk). A task runs k slice by k slice: a slice of its row chunk's A
  // stays in L2 while the chunk's panels stream past, each panel slice read from memory once and
  // by every block of the chunk from cache. (Row chunks over all of k left the k = 2624 GEMMs of
  // 128 tokens two chunks, so each panel streamed from DRAM twice: ~25% below the same shape with
  // its weights in cache, BM_matmul_dram.)
  const int64_t slices = div_up(steps, kSliceSteps);
  int64_t mc = std::max<int64_t>(1, kAChunkBytes / (std::min(steps, kSliceSteps) * kStepBytes));
  int64_t nc = panels;
  const int64_t nchunks = split_tasks(threads, blocks, panels, &mc, &nc);
  // One worker slot per thread (its converted panel); slots take tasks in order, so every output
  // block is computed the same way whatever the split.
  const int64_t tasks = div_up(blocks, mc) * nchunks;
  std::atomic<int64_t> next{0};
  parallel_for(pool, threads, 1, [&](int64_t sb, int64_t se) {
    load_config();
    alignas(64) float c[kMB * kNR];
    for (int64_t slot = sb; slot < se; ++slot) {
      uint8_t* buf = slots + slot * static_cast<int64_t>(slot_bytes(k));
      for (int64_t task = next.fetch_add(1); task < tasks; task = next.fetch_add(1)) {
        const int64_t t0 = task / nchunks * mc, t1 = std::min(blocks, t0 + mc);
        const int64_t p0 = task % nchunks * nc, p1 = std::min(panels, p0 + nc);
        for (int64_t kb = 0; kb < slices; ++kb) {
          const int64_t q0 = kb * kSliceSteps, qs = std::min(kSliceSteps, steps - q0);
          for (int64_t p = p0; p < p1; ++p) {
            const uint8_t* panel = src.panel(p, buf, q0, q0 + qs);
            const int64_t ncols = std::min<int64_t>(kNR, n - p * kNR);
            const float* bp = bias != nullptr ? bias + p * kNR : nullptr;
            // The slice read next (the next panel's, or the first panel's of the next slice),
            // its source lines spread over this slice's blocks and their steps.
            const bool last = p + 1 == p1;
            const int64_t np = last ? p0 : p + 1, nq0 = last ? q0 + kSliceSteps : q0;
            const uint8_t* next_src = nullptr;
            int64_t next_lines = 0, pf_lines = 0;
            if (nq0 < steps) {
              const int64_t from = nq0 * src.step_bytes();
              const int64_t to =
                  std::min(src.source_bytes(), (nq0 + kSliceSteps) * src.step_bytes());
              next_src = src.source(np) + from;
              next_lines = div_up(to - from, 64);
              pf_lines = div_up(next_lines, (t1 - t0) * qs);
            }
            for (int64_t t = t0; t < t1; ++t) {
              const int64_t first = (t - t0) * qs * pf_lines;
              const bool pf_on = first < next_lines;
              const int64_t lines = pf_on ? std::min(pf_lines, div_up(next_lines - first, qs)) : 0;
              const int64_t rows = std::min(kMB, m - t * kMB);
              float* yb = y + t * kMB * ldy + p * kNR;
              const uint8_t* at = a + t * block_bytes + q0 * kStepBytes;
              const uint8_t* bt = panel + q0 * kPanelStepBytes;
              const uint8_t* pft = pf_on ? next_src + first * 64 : nullptr;
              // After the first slice the tiles start from the sums so far, in y (a partial
              // block through c, so that every row sums the same way whatever m is).
              if (kb == 0) {
                block(at, bt, qs, c, kNR, false, pft, lines);
                store_block(c, rows, yb, ldy, ncols, bp);
              } else if (rows == kMB && ncols == kNR) {
                block(at, bt, qs, yb, ldy, true, pft, lines);
              } else {
                load_block(yb, ldy, rows, ncols, c);
                block(at, bt, qs, c, kNR, true, pft, lines);
                store_block(c, rows, yb, ldy, ncols, nullptr);
              }
            }
          }
        }
      }
    }
    release();
  });
}

}  // namespace amx
#undef LAYA_MMF_AMX_ATTR
#else
using KernBF16Dp = KernBF16;  // no AVX512-BF16 outside AVX3: the widening kernels
#endif

// ---- drivers ---------------------------------------------------------------------------------

template <class K>
int64_t panel_steps(int64_t k) {
  return div_up(k, K::kKStep);
}

// Packed rows per panel: panel_steps rounded up to K::kStepAlign (the rows past k are zero).
template <class K>
int64_t panel_stride(int64_t k) {
  return div_up(panel_steps<K>(k), K::kStepAlign) * K::kStepAlign;
}

template <class K>
uint64_t packed_bytes(int64_t n, int64_t k) {
  if (n <= 0 || k <= 0) return 0;
  return static_cast<uint64_t>(div_up(n, kNR) * panel_stride<K>(k) * kNR) * sizeof(typename K::W);
}

// w: the file layout, row-major [n, k] of the type (f32, IEEE half or bf16 bits).
template <class K>
void pack(const void* w, const float*, int64_t n, int64_t k, void* dst) {
  using W = typename K::W;
  const int64_t steps = panel_steps<K>(k), stride = panel_stride<K>(k), panels = div_up(n, kNR);
  W* out = static_cast<W*>(dst);
  for (int64_t p = 0; p < panels; ++p) {
    W* panel = out + p * stride * kNR;
    for (int64_t s = steps * kNR; s < stride * kNR; ++s) panel[s] = 0;
    for (int64_t j = 0; j < kNR; ++j) {
      const int64_t row = p * kNR + j;
      if (row >= n) {
        for (int64_t s = 0; s < steps; ++s) panel[s * kNR + j] = 0;
        continue;
      }
      if constexpr (K::kKStep == 1) {
        const W* src = static_cast<const W*>(w) + row * k;
        for (int64_t s = 0; s < steps; ++s) panel[s * kNR + j] = src[s];
      } else {
        const uint16_t* src = static_cast<const uint16_t*>(w) + row * k;
        for (int64_t s = 0; s < steps; ++s) {
          const uint32_t lo = src[2 * s];
          const uint32_t hi = 2 * s + 1 < k ? src[2 * s + 1] : 0u;
          panel[s * kNR + j] = lo | hi << 16;
        }
      }
    }
  }
}

template <class K>
uint64_t scratch_bytes(int64_t m, int64_t, int64_t k, int) {
  if (m <= 0 || k <= 0) return 0;
  if (m == 1) return 4 * static_cast<uint64_t>(k + 1) + 64;  // GEMV: one converted x row
  const int64_t tiles = div_up(m, kMR), kblocks = div_up(k, K::kKC);
  return static_cast<uint64_t>(tiles * kblocks * kMR * K::kARow) * sizeof(typename K::A) + 64;
}

template <class K>
using TileFn = void (*)(const typename K::A*, const typename K::W*, int64_t, float*, int64_t,
                        int64_t, const float*, bool, const uint8_t*, int64_t);

template <class K, int... I>
constexpr std::array<TileFn<K>, sizeof...(I)> make_tiles(std::integer_sequence<int, I...>) {
  return {&K::template tile<I + 1>...};
}

template <class K>
void gemm(const typename K::W* w, const float* x, int64_t ldx, float* y, int64_t ldy,
          const float* bias, int64_t m, int64_t n, int64_t k, void* scratch,
          const ThreadPool* pool) {
  using A = typename K::A;
  static constexpr std::array<TileFn<K>, kMR> kTiles =
      make_tiles<K>(std::make_integer_sequence<int, kMR>());
  const int threads = pool_threads(pool);
  const int64_t tiles = div_up(m, kMR), kblocks = div_up(k, K::kKC), panels = div_up(n, kNR);
  const int64_t steps_total = panel_stride<K>(k);
  const int64_t tile_elems = kblocks * kMR * K::kARow;  // x block elements of one row tile
  A* a = static_cast<A*>(scratch);

  // x -> row tiles of k blocks (shared by every task).
  const int64_t items = tiles * kblocks;
  parallel_for(pool, items, div_up(items, threads), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t t = i / kblocks, kb = i % kblocks;
      const int64_t rows = std::min<int64_t>(kMR, m - t * kMR);
      const int64_t k0 = kb * K::kKC, kc = std::min(K::kKC, k - k0);
      K::pack_a(x + t * kMR * ldx + k0, ldx, rows, kc, a + t * tile_elems + kb * kMR * K::kARow);
    }
  });

  // Tasks: (row chunk, column chunk); at least two per worker when the shape allows. Each worker
  // claims one task at a time (the pool would hand out chunks of several: 33 tasks in 7 chunks of
  // 5 or fewer, 18-20 tasks against 13-15 on two threads).
  int64_t mc = mc_tiles();
  int64_t nc = std::max<int64_t>(
      1, kBBlockBytes / (K::kKC / K::kKStep * kNR * static_cast<int64_t>(sizeof(typename K::W))));
  int64_t nchunks = split_tasks(threads, tiles, panels, &mc, &nc);
  const int64_t mchunks = div_up(tiles, mc);
  // As many tasks on every worker: column chunks rounded up to make the task count a multiple of
  // the threads, the panels spread evenly over them (33 chunks of <= 5 of 164 panels -> 34 of 4-5).
  while ((mchunks * nchunks) % threads != 0 && nchunks < panels) ++nchunks;
  const int64_t tasks = mchunks * nchunks;
  const auto task_range = [&](int64_t task, int64_t* t0, int64_t* t1, int64_t* p0, int64_t* p1) {
    const int64_t col = task % nchunks;
    *t0 = task / nchunks * mc;
    *t1 = std::min(tiles, *t0 + mc);
    *p0 = col * panels / nchunks;
    *p1 = (col + 1) * panels / nchunks;
  };
  std::atomic<int64_t> next{0};
  parallel_for(pool, threads, 1, [&](int64_t, int64_t) {
    for (int64_t task = next.fetch_add(1); task < tasks; task = next.fetch_add(1)) {
      int64_t t0, t1, p0, p1;
      task_range(task, &t0, &t1, &p0, &p1);
      for (int64_t kb = 0; kb < kblocks; ++kb) {
        const int64_t k0 = kb * K::kKC;
        const int64_t steps = panel_steps<K>(std::min(K::kKC, k - k0));
        const int64_t s0 = k0 / K::kKStep;
        // The panel slices read next (this task's next k block; after its last, the first k block
        // of the task `threads` on, which this worker likely claims next) are prefetched into L2,
        // a share per tile call: a slice's first row tile otherwise waits on DRAM (in the model,
        // where each weight is read once per pass, the f32 GEMMs ran ~25% below the same shapes
        // with their weights in cache on a Xeon).
        int64_t q0 = 0, q1 = 0, ns0 = 0, nsteps = 0;
        if (kb + 1 < kblocks) {
          q0 = p0;
          q1 = p1;
          ns0 = s0 + steps;
          nsteps = panel_steps<K>(std::min(K::kKC, k - k0 - K::kKC));
        } else if (task + threads < tasks) {
          int64_t u0, u1;
          task_range(task + threads, &u0, &u1, &q0, &q1);
          nsteps = panel_steps<K>(std::min(K::kKC, k));
        }
        const int64_t nq = q1 - q0, calls = (t1 - t0) * (p1 - p0);
        const int64_t slice_lines =
            div_up(nsteps * kNR * static_cast<int64_t>(sizeof(typename K::W)), 64);
        const int64_t chunk = nq > 0 ? div_up(slice_lines, div_up(calls, nq)) : 0;
        int64_t call = 0;
        for (int64_t t = t0; t < t1; ++t) {
          const int64_t rows = std::min<int64_t>(kMR, m - t * kMR);
          const TileFn<K> fn = kTiles[static_cast<size_t>(rows - 1)];
          const A* at = a + t * tile_elems + kb * kMR * K::kARow;
          float* yt = y + t * kMR * ldy;
          for (int64_t p = p0; p < p1; ++p, ++call) {
            const uint8_t* pf = nullptr;
            int64_t lines = 0;
            if (nq > 0) {
              const int64_t first = call / nq * chunk;
              lines = std::clamp<int64_t>(slice_lines - first, 0, chunk);
              if (lines > 0)
                pf = reinterpret_cast<const uint8_t*>(w + ((q0 + call % nq) * steps_total + ns0) *
                                                              kNR) +
                     first * 64;
            }
            fn(at, w + (p * steps_total + s0) * kNR, steps, yt + p * kNR, ldy,
               std::min<int64_t>(kNR, n - p * kNR), bias != nullptr ? bias + p * kNR : nullptr,
               kb > 0, pf, lines);
          }
        }
      }
    }
  });
}

template <class K>
void gemv(const typename K::W* w, const float* x, float* y, const float* bias, int64_t n, int64_t k,
          void* scratch, const ThreadPool* pool) {
  const typename K::A* xa = K::gemv_x(x, k, scratch);
  const int64_t panels = div_up(n, kNR), steps = panel_steps<K>(k), stride = panel_stride<K>(k);
  // One contiguous range of panels per worker: each streams its part of the weights once.
  parallel_for(pool, panels, div_up(panels, pool_threads(pool)), [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      K::gemv_panel(xa, w + p * stride * kNR, steps, y + p * kNR,
                    std::min<int64_t>(kNR, n - p * kNR),
                    bias != nullptr ? bias + p * kNR : nullptr);
    }
  });
}

template <class K>
void run(const void* packed, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
         int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  const typename K::W* w = static_cast<const typename K::W*>(packed);
  if (m == 1) {
    gemv<K>(w, x, y, bias, n, k, scratch, pool);
  } else {
    gemm<K>(w, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
  }
}

// ---- i8w: the sums of KernI8W, then y = sum * scale[j] (+ bias[j]) ---------------------------

inline uint64_t i8w_scales_offset(int64_t n, int64_t k) {
  return (packed_bytes<KernI8W>(n, k) + 63) / 64 * 64;
}

uint64_t i8w_packed_bytes(int64_t n, int64_t k) {
  if (n <= 0 || k <= 0) return 0;
  return i8w_scales_offset(n, k) + static_cast<uint64_t>(div_up(n, kNR) * kNR) * 4;
}

// scales: f32 [n], one per output row (any alignment).
void i8w_pack(const void* w, const float* scales, int64_t n, int64_t k, void* dst) {
  pack<KernI8W>(w, nullptr, n, k, dst);
  float* s = reinterpret_cast<float*>(static_cast<uint8_t*>(dst) + i8w_scales_offset(n, k));
  std::memcpy(s, scales, sizeof(float) * static_cast<size_t>(n));
  for (int64_t j = n; j < div_up(n, kNR) * kNR; ++j) s[j] = 0.0f;
}

// y = y * scale[j] (+ bias[j]): the sums of the int8 weights to the layer's outputs.
void i8w_scale(const void* packed, float* y, int64_t ldy, const float* bias, int64_t m, int64_t n,
               int64_t k, const ThreadPool* pool) {
  const float* scales =
      reinterpret_cast<const float*>(static_cast<const uint8_t*>(packed) + i8w_scales_offset(n, k));
  parallel_for(pool, m, div_up(m, pool_threads(pool)), [&](int64_t b, int64_t e) {
    const D d;
    for (int64_t r = b; r < e; ++r) {
      float* yr = y + r * ldy;
      int64_t j = 0;
      for (; j + kL <= n; j += kL) {
        V v = hn::Mul(hn::LoadU(d, yr + j), hn::LoadU(d, scales + j));
        if (bias != nullptr) v = hn::Add(v, hn::LoadU(d, bias + j));
        hn::StoreU(v, d, yr + j);
      }
      for (; j < n; ++j) yr[j] = yr[j] * scales[j] + (bias != nullptr ? bias[j] : 0.0f);
    }
  });
}

void i8w_run(const void* packed, const float* x, int64_t ldx, float* y, int64_t ldy,
             const float* bias, int64_t m, int64_t n, int64_t k, void* scratch,
             const ThreadPool* pool) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  run<KernI8W>(packed, x, ldx, y, ldy, nullptr, m, n, k, scratch, pool);
  i8w_scale(packed, y, ldy, bias, m, n, k, pool);
}

// ---- exported entry points (HWY_EXPORT needs plain functions) --------------------------------

uint64_t F32PackedBytes(int64_t n, int64_t k) {
  return packed_bytes<KernF32>(n, k);
}
void F32Pack(const void* w, const float* s, int64_t n, int64_t k, void* dst) {
  pack<KernF32>(w, s, n, k, dst);
}
uint64_t F32ScratchBytes(int64_t m, int64_t n, int64_t k, int t) {
  return scratch_bytes<KernF32>(m, n, k, t);
}
void F32Run(const void* p, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
            int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
  run<KernF32>(p, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
}

uint64_t F16PackedBytes(int64_t n, int64_t k) {
  return packed_bytes<KernF16>(n, k);
}
void F16Pack(const void* w, const float* s, int64_t n, int64_t k, void* dst) {
  pack<KernF16>(w, s, n, k, dst);
}
uint64_t F16ScratchBytes(int64_t m, int64_t n, int64_t k, int t) {
  return scratch_bytes<KernF16>(m, n, k, t);
}
void F16Run(const void* p, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
            int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
  run<KernF16>(p, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
}

// One packed layout and one scratch size serve every bf16 kernel (the filler picks the run).
uint64_t BF16PackedBytes(int64_t n, int64_t k) {
  return packed_bytes<KernBF16>(n, k);
}
void BF16Pack(const void* w, const float* s, int64_t n, int64_t k, void* dst) {
  pack<KernBF16>(w, s, n, k, dst);
}
uint64_t BF16ScratchBytes(int64_t m, int64_t n, int64_t k, int t) {
  const uint64_t bytes = scratch_bytes<KernBF16>(m, n, k, t);  // GEMV: as KernBF16Dp's
#if HWY_TARGET == HWY_AVX3
  return std::max(bytes, amx::scratch_bytes(m, k, t, /*converts=*/false));
#else
  return bytes;
#endif
}
void BF16Run(const void* p, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
             int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
  run<KernBF16>(p, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
}
uint64_t I8WPackedBytes(int64_t n, int64_t k) {
  return i8w_packed_bytes(n, k);
}
void I8WPack(const void* w, const float* s, int64_t n, int64_t k, void* dst) {
  i8w_pack(w, s, n, k, dst);
}
uint64_t I8WScratchBytes(int64_t m, int64_t n, int64_t k, int t) {
  return scratch_bytes<KernI8W>(m, n, k, t);
}
void I8WRun(const void* p, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
            int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
  i8w_run(p, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
}
// i8w GEMMs on AMX (the int8 panels converted to bf16 per task, amx::I8Src), GEMV as I8WRun.
uint64_t I8WAmxScratchBytes(int64_t m, int64_t n, int64_t k, int t) {
  const uint64_t bytes = scratch_bytes<KernI8W>(m, n, k, t);
#if HWY_TARGET == HWY_AVX3
  return std::max(bytes, amx::scratch_bytes(m, k, t, /*converts=*/true));
#else
  return bytes;
#endif
}
void I8WAmxRun(const void* p, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
               int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
#if HWY_TARGET == HWY_AVX3
  if (m > 1 && n > 0 && k > 0) {
    const amx::I8Src src{static_cast<const int8_t*>(p), k, amx::panel_rows(k)};
    amx::gemm(src, x, ldx, y, ldy, nullptr, m, n, k, scratch, pool);
    i8w_scale(p, y, ldy, bias, m, n, k, pool);
    return;
  }
#endif
  i8w_run(p, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
}
// AVX512-BF16 without AMX: GEMV on vdpbf16ps, GEMM on KernBF16's f32 FMA (see KernBF16Dp).
void BF16DpRun(const void* p, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
               int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
  if (m == 1 && n > 0 && k > 0) {
    gemv<KernBF16Dp>(static_cast<const uint32_t*>(p), x, y, bias, n, k, scratch, pool);
    return;
  }
  run<KernBF16>(p, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
}
void BF16AmxRun(const void* p, const float* x, int64_t ldx, float* y, int64_t ldy,
                const float* bias, int64_t m, int64_t n, int64_t k, void* scratch,
                const ThreadPool* pool) {
#if HWY_TARGET == HWY_AVX3
  if (m > 1 && n > 0 && k > 0) {
    const amx::Bf16Src src{static_cast<const uint32_t*>(p), amx::panel_rows(k)};
    amx::gemm(src, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
    return;
  }
#endif
  BF16DpRun(p, x, ldx, y, ldy, bias, m, n, k, scratch, pool);
}

}  // namespace HWY_NAMESPACE
}  // namespace laya::kernels::hwy_matmul_float
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
