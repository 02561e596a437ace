// Integer / GGUF-block matrix products (WType i8, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K),
// per Highway target.
// Included once per target by kernels/hwy/matmul_int.cpp and kernels/hwy/matmul_kquant.cpp
// (foreach_target; each instantiates one Family, below); everything lives in
// laya::kernels::HWY_NAMESPACE. Semantics: kernels/ref/matmul.cpp.
//
// Packed weights (written by pack at prepare; L = int32 lanes of the target: AVX3 16, AVX2 8,
// SSE4 4, SCALAR 1). Columns (output rows of W) form tiles of L, padded with zero weights; kP<T>
// tiles form a group, and a group is stored as one record per block of 32 (i8: per 4 k-values):
//   (q5_0, q5_1) the 5th bits [tiles][L][4], then quants [groups of 4 k-values in the block]
//   [tiles of the group][L][4], then f16 d[tiles][L], then (q4_1, q5_1) f16 m[tiles][L]
//   (i8: quants only; f32 scales[tiles * L] after all groups)
// One L-lane vector load is L columns x 4 consecutive k-values, what vpdpbusd consumes, and a GEMV
// reads a group's records strictly sequentially (one stream; see Geometry), each front to back:
// every part of a record is stored before the parts the kernel reads after it (the 5th bits before
// the nibbles they complete; the K-quants' scales before their quants, below). On Zen 4 a read that
// goes back within the stream stalls its hardware prefetchers (docs/kernels.md, "GEMV records read
// front to back"). Byte j of lane c of group-of-4 gr is byte 4gr + j of column c's GGUF block (i8:
// of its row): i8 stored ^ 0x80 (w + 128 as u8), q8_0 likewise except on AVX2 / SSE4 (kQ8Signed: as
// they are); q4 bytes as they are, whose low nibble is element 4gr + j and high nibble element 16 +
// 4gr + j, so one AND and one shift + AND unpack them. q5_0 / q5_1 keep GGUF's size (22 / 24 bytes
// per block and column): one 4-byte 5th-bit word per column, then their qs nibbles stored as q4's
// (4 groups of 4). Byte j of the 5th-bit word holds, in bit 2gr, the 5th bit of element 4gr + j
// and, in bit 2gr + 1, that of element 16 + 4gr + j (gr = 0..3). The kernel moves a bit to bit 4 of
// its own byte with one u32 shift (none for bit 4) and ORs it in with an AND 0x10: per group of 4,
// lo = (v & 0x0F) | ((hb << (4 - 2gr)) & 0x10), hi = ((v >> 4) & 0x0F) | ((hb << (3 - 2gr)) & 0x10)
// (negative: right shifts), u8 q in [0, 31]; the dot is then q4_0's / q4_1's (q5_0's -16 offset the
// same correction, -16 * sum(qs_x)). GEMMs (m > 1) expand up to 24 blocks of a column panel at a
// time to one u8 per element (8 groups of 4 like q8_0) in a stack buffer and run all the item's
// rows over it, so the unpack is paid once per item.
//
// Quantized activations (scratch, `XPanel` below): the int8 values and scales exactly as
// quant.h's quantize_row_i8 / quantize_act_q8_0 / quantize_act_q8_1 produce them (tested byte for
// byte), stored in panels of tokens (4 bytes of each token in turn, like a packed A operand) with
// the scales and the sums of the int8 values in separate arrays, instead of GGUF structs.
//
// K-quants (q4_K, q5_K, q6_K): a record is one super-block of 256. It starts with its side: f16 d
// [tiles][L], (q4_K / q5_K) f16 dmin [tiles][L], the sub-block scales [tiles][nsub][L] (u8 6-bit
// for q4_K / q5_K, nsub 8; i8 for q6_K, nsub 16) and (q4_K / q5_K) the 6-bit mins in pairs
// [tiles][4][L][2] (m_2i, m_2i+1 of a column side by side, for pmaddwd): the scales are unpacked
// once at pack time. Its quant bytes follow, stored like the blocks' above (lane c of group-of-4 gr
// holds bytes 4gr .. 4gr + 3 of the column's quant bytes, which are q4_K qs[128]; q5_K qh[32] then
// qs[128]; q6_K ql[128] then qh[64]), the groups-of-4 in the order a GEMV first reads them (kq_row:
// q5_K's qh groups interleaved with the first unit's qs groups, q6_K's ql and qh groups interleaved
// per unit pair). x is quantized to q8_K (one f32 scale per 256, quant.h's quantize_row_q8_K bit
// for bit) with the int32 sums of each sub-block. Per super-block the kernel forms, per sub-block
// j, the exact int32 dot of the unpacked quants with x and isum += sc_j * dot; every type
// multiplies u8 quants (q6_K's q in [0, 63]) by s8 x; q4_K / q5_K add msum = sum_j m_j * xsum_j,
// q6_K's -32 offset starts each sub-block's sum at -32 * xsum_j. Finally y += (d_w * d_x) * isum (+
// (-(dmin_w * d_x)) * msum), as kernels/ref/matmul.cpp. Without VNNI the per-group pmaddubsw
// results are summed in int16 (wrapping adds) for as many groups as the exact sum fits int16 (q4_K
// 8, q5_K 4, q6_K all 4 of a sub-block: see KUnit::kChunk) and scaled by one pmaddwd with sc_j.
//
// Dot products: u8 (weights) x s8 (x) in groups of 4 into int32 lanes. With AVX512-VNNI that is
// vpdpbusd on the biased i8 / q8_0 weights, corrected exactly by -128 * sum(qs_x) (the int32 sums
// wrap identically, so the result equals the reference's exact dot); q4 nibbles are already u8
// and q4_0's -8 offset is the same correction, -8 * sum(qs_x). Without VNNI: pmaddubsw + pmaddwd,
// with |w| and sign(x, w) for the signed weights so no int16 pair sum can saturate; on AVX2 / SSE4
// the q4 / q5 block types add the pmaddubsw results in int16 across groups before one pmaddwd by
// 1 (|x| <= 127: a q4 block's 8 groups <= 8 * 2 * 15 * 127 = 30480, q5's 4 groups (GEMV: 2 of
// the packed groups' lo and hi) <= 4 * 2 * 31 * 127 = 31496), exact like the K-quants' int16
// chunks; i8 / q8_0 (|w| up to 128) go through pmaddwd per group. AVX2 / SSE4 q8_0 (kQ8Signed)
// store w as it is, which saves the bias' xor before |w| and sign(x, w). (u8 |x| times s8
// sign(w, x) would save one more op but is wrong for w = -128, x < 0: sign(-128) wraps to -128.)
//
// GEMV (one row, XR == 1) on AVX2 / SSE4 prefetches the group stream kPrefetchBlk / kPrefetchK
// bytes ahead (below).

#if defined(LAYA_KERNELS_HWY_MATMUL_INT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef LAYA_KERNELS_HWY_MATMUL_INT_INL_H_
#undef LAYA_KERNELS_HWY_MATMUL_INT_INL_H_
#else
#define LAYA_KERNELS_HWY_MATMUL_INT_INL_H_
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "kernels/hwy/matmul_int.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"

#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
#include <immintrin.h>
#endif
#if HWY_TARGET == HWY_NEON
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif
#endif

HWY_BEFORE_NAMESPACE();
namespace laya::kernels::HWY_NAMESPACE {
namespace matmul_int {

namespace hn = hwy::HWY_NAMESPACE;
using DI = hn::ScalableTag<int32_t>;
using DU = hn::ScalableTag<uint32_t>;
using DF = hn::ScalableTag<float>;
using VI = hn::Vec<DI>;
using VU = hn::Vec<DU>;
using VF = hn::Vec<DF>;

// The two halves of the family, compiled in separate translation units (their compile times are
// the longest of the build, most of all under the sanitizers): i8 and the GGUF block types in
// kernels/hwy/matmul_int.cpp, the K-quants in kernels/hwy/matmul_kquant.cpp.
enum class Family { kBlocks, kKQuants };

inline int64_t round_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}
inline int64_t lanes() {
  return static_cast<int64_t>(hn::Lanes(DI()));
}
inline bool is_block(WType t) {
  return t == WType::kQ8_0 || t == WType::kQ4_0 || t == WType::kQ4_1 || t == WType::kQ5_0 ||
         t == WType::kQ5_1;
}
// Block types packed with one byte per element (8 groups of 4 per block).
template <WType T>
inline constexpr bool kBytes = T == WType::kQ8_0;
// 5-bit block types: q4-like nibbles plus one vector of 5th bits per tile and record.
template <WType T>
inline constexpr bool kQ5 = T == WType::kQ5_0 || T == WType::kQ5_1;
// Block types with a min (f16 m) and q8_1 activations.
template <WType T>
inline constexpr bool kHasMin = T == WType::kQ4_1 || T == WType::kQ5_1;
template <WType T>
inline constexpr bool kIsK = T == WType::kQ4_K || T == WType::kQ5_K || T == WType::kQ6_K;
// K-quants: groups of 4 quant bytes per column and super-block, sub-blocks per super-block.
template <WType T>
inline constexpr int kKGroups = T == WType::kQ4_K ? 32 : (T == WType::kQ5_K ? 40 : 48);
template <WType T>
inline constexpr int kKSub = T == WType::kQ6_K ? 16 : 8;

// Register blocking per target: GEMM tiles of kMR<T> rows x kNT<T> column tiles (block types keep
// an int32 or int16 and an f32 accumulator per output vector). kP<T> tiles form a packed group
// (below), the GEMV step; kNT divides it. q8_0 GEMVs read DRAM faster with 2-tile groups than with
// 4 on Zen 4 (measured: ~26 vs ~21 GB/s), the other types with 4. AVX2 / SSE4 block per type, as
// measured on Zen 3 (AVX2, 16 registers; 128 x 576 x 1536, docs/kernels.md "GEMM accumulators
// pinned"): q4_0 / q4_1 3 x 2, the K-quants 6 x 1 (their units keep more weight vectors live),
// the rest 2 x 2.
#if HWY_TARGET == HWY_AVX3
inline constexpr int kMRI8 = 8, kNTI8 = 2, kMRB = 4, kNTB = 2, kPQ8 = 2, kPOther = 4;
#elif HWY_TARGET == HWY_SCALAR
inline constexpr int kMRI8 = 2, kNTI8 = 1, kMRB = 2, kNTB = 1, kPQ8 = 2, kPOther = 2;
#else
inline constexpr int kMRI8 = 4, kNTI8 = 2, kMRB = 2, kNTB = 2, kPQ8 = 2, kPOther = 4;
#endif
inline constexpr bool kBlockPerType = HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4;
template <WType T>
inline constexpr int kMR = T == WType::kI8                                                 ? kMRI8
                           : !kBlockPerType                                                ? kMRB
                           : (T == WType::kQ4_0 || T == WType::kQ4_1)                      ? 3
                           : (T == WType::kQ4_K || T == WType::kQ5_K || T == WType::kQ6_K) ? 6
                                                                                           : kMRB;
template <WType T>
inline constexpr int kNT = T == WType::kI8                                                 ? kNTI8
                           : !kBlockPerType                                                ? kNTB
                           : (T == WType::kQ4_K || T == WType::kQ5_K || T == WType::kQ6_K) ? 1
                                                                                           : kNTB;
template <WType T>
inline constexpr int kP = kBytes<T> ? kPQ8 : kPOther;
// GEMV software prefetch distance in bytes ahead in the group stream (0: none). Items of one
// thread are consecutive groups, so prefetches run on into the next group. Zen 3 (AVX2, 1 thread,
// from DRAM) measured 2048 for the blocks' records (576 - 768 bytes) and 12288 for K-quant
// super-block records (4.7 - 6.8 KiB; a unit's share, issued a few lines per group): without,
// the hardware prefetcher alone kept the GEMVs at 50 - 70% of the read peak
// (docs/benchmarks.md). AVX3 takes the same distances (Xeon with AVX-512 VNNI, 1 thread: q4_0 /
// q4_1 / q4_K / q6_K GEMVs were at 55 - 67% of the read peak without). On Zen 4 the q5 and K-quant
// GEMVs read faster without (MicroArgs::sw_prefetch, hwy_matmul_int::gemv_sw_prefetch).
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_AVX3
inline constexpr int64_t kPrefetchBlk = 2048, kPrefetchK = 12288;
#else
inline constexpr int64_t kPrefetchBlk = 0, kPrefetchK = 0;
#endif
// q8_0 weights packed as they are (s8), not ^ 0x80: the targets whose DotMadd::q8 takes |w| and
// sign(x, w) of them directly. VNNI (AVX3) needs u8 weights; SCALAR keeps the biased bytes.
inline constexpr bool kQ8Signed =
    HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4 || HWY_TARGET == HWY_NEON;
static_assert(kPQ8 % kNTB == 0 && kPOther % kNTI8 == 0 && kPOther % kNTB == 0 &&
              kPQ8 % kNT<WType::kQ8_0> == 0 && kPOther % kNT<WType::kQ4_K> == 0);

// ---- packed weight geometry -------------------------------------------------------------------

// Tiles are grouped by P; group g holds tiles [g*P, g*P + p), p = P except in the last group.
// A group is kb records, one per block (i8: per group of 4 k-values), each record
//   quants [qb / 4L groups of 4 k-values][p tiles][L][4], then f16 d [p][L], then (q4_1) f16 m
// so a GEMV over the P tiles of a group reads one linear stream, load after load.
// Groups start 64-byte aligned.
struct Geometry {
  int64_t L = 0;           // columns per tile
  int64_t P = 0;           // tiles per group (kP<T>)
  int64_t tiles = 0;       // ceil(n / L)
  int64_t groups = 0;      // ceil(tiles / P)
  int64_t kb = 0;          // records per group: i8 groups of 4 k-values, else blocks of 32
  int64_t qb = 0;          // quant bytes of one tile in one record
  int64_t sb = 0;          // scale bytes of one tile in one record (0, 2L, 4L)
  int64_t gstride = 0;     // bytes of a full group (64-byte multiple)
  int64_t scales_off = 0;  // i8: byte offset of f32 scales[tiles * L]
  int64_t total = 0;       // packed bytes
  int64_t nf16 = 0;        // f16 arrays per tile in a record (d; q4_1 / q4_K / q5_K: d, m)
  int64_t nsub = 0;        // K-quants: sub-block scale bytes per column (8 or 16), then
  int64_t nmin = 0;        // min bytes (8: q4_K / q5_K)

  int64_t group_tiles(int64_t g) const { return std::min(P, tiles - g * P); }
  int64_t record(int64_t g) const { return group_tiles(g) * (qb + sb); }
  const uint8_t* group(const uint8_t* base, int64_t g) const { return base + g * gstride; }
};

template <WType T>
Geometry geometry(int64_t n, int64_t k) {
  Geometry g;
  if (n <= 0 || k <= 0 || (is_block(T) && k % kQK != 0) || (kIsK<T> && k % kQK_K != 0)) return g;
  g.L = lanes();
  g.tiles = (n + g.L - 1) / g.L;
  g.P = kP<T>;
  g.groups = (g.tiles + g.P - 1) / g.P;
  if constexpr (T == WType::kI8) {
    g.kb = (k + 3) / 4;
    g.qb = 4 * g.L;
  } else if constexpr (kIsK<T>) {
    g.kb = k / kQK_K;
    g.qb = 4 * kKGroups<T> * g.L;
    g.nf16 = T == WType::kQ6_K ? 1 : 2;
    g.nsub = kKSub<T>;
    g.nmin = T == WType::kQ6_K ? 0 : 8;
    g.sb = (2 * g.nf16 + g.nsub + g.nmin) * g.L;
  } else {
    g.kb = k / kQK;
    g.qb = (kBytes<T> ? 32 : (kQ5<T> ? 20 : 16)) * g.L;
    g.nf16 = kHasMin<T> ? 2 : 1;
    g.sb = 2 * g.nf16 * g.L;
  }
  g.gstride = round_up(g.kb * g.P * (g.qb + g.sb), 64);
  const int64_t last = g.groups - 1;
  g.total = last * g.gstride + round_up(g.kb * g.record(last), 64);
  if constexpr (T == WType::kI8) {
    g.scales_off = g.total;
    g.total += round_up(4 * g.tiles * g.L, 64);
  }
  return g;
}

template <WType T>
uint64_t packed_bytes(int64_t n, int64_t k) {
  return static_cast<uint64_t>(geometry<T>(n, k).total);
}

// Byte j of lane c of group-of-4 `gr` of a tile is byte 4*gr + j of the column's block (i8: of
// its row, k-values 4*gr + j); i8 / q8_0 bytes are stored ^ 0x80. Padding is a zero weight.
// The quant bytes of a K-quant super-block in packed order (module comment), its f16 d / dmin,
// sub-block scales and mins.
template <WType T>
void kquant_parts(const uint8_t* blk, uint8_t* q, uint16_t* d, uint16_t* dmin, uint8_t* sc,
                  uint8_t* mn) {
  if constexpr (T == WType::kQ6_K) {
    const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(blk);
    std::memcpy(q, b->ql, sizeof b->ql);
    std::memcpy(q + sizeof b->ql, b->qh, sizeof b->qh);
    std::memcpy(sc, b->scales, sizeof b->scales);
    *d = b->d;
    (void)dmin;
    (void)mn;
  } else {
    using Block = std::conditional_t<T == WType::kQ4_K, BlockQ4_K, BlockQ5_K>;
    const Block* b = reinterpret_cast<const Block*>(blk);
    if constexpr (T == WType::kQ5_K) {
      std::memcpy(q, b->qh, sizeof b->qh);
      q += sizeof b->qh;
    }
    std::memcpy(q, b->qs, sizeof b->qs);
    *d = b->d;
    *dmin = b->dmin;
    for (int j = 0; j < 8; ++j) {
      int s, m;
      kquant_scale_min(b->scales, j, &s, &m);
      sc[j] = static_cast<uint8_t>(s);
      mn[j] = static_cast<uint8_t>(m);
    }
  }
}

// Zeroes the packed bytes no record covers: each group's tail up to its 64-byte stride and (i8)
// the scales' padding. pack writes every other byte, so a buffer is never cleared first (at load,
// a pass over the whole model).
inline void zero_gaps(const Geometry& g, uint8_t* out) {
  for (int64_t gi = 0; gi < g.groups; ++gi) {
    const int64_t used = g.kb * g.record(gi);
    const int64_t end = gi + 1 < g.groups ? g.gstride : round_up(used, 64);
    std::memset(out + gi * g.gstride + used, 0, static_cast<size_t>(end - used));
  }
  if (g.scales_off > 0)
    std::memset(out + g.scales_off, 0, static_cast<size_t>(g.total - g.scales_off));
}

// pack reads tile t's L source rows (row-major, row_bytes each) record by record; at record b it
// prefetches its share of tile t + 1's rows (a file's pages from the page cache, where the
// hardware prefetcher stops at every 4 KiB page: ~25 ms of a SmolLM2 Q4_0 load).
inline void prefetch_next_tile(const void* src, int64_t row_bytes, int64_t n, const Geometry& g,
                               int64_t t, int64_t b) {
  const int64_t r0 = std::min((t + 1) * g.L, n), r1 = std::min((t + 2) * g.L, n);
  const uint8_t* next = static_cast<const uint8_t*>(src) + r0 * row_bytes;
  const int64_t lines = ((r1 - r0) * row_bytes + 63) / 64;
  for (int64_t l = b; l < lines; l += g.kb) hwy::Prefetch(next + 64 * l);
}

// Where K-quant group-of-4 gr (of the column's quant bytes, module comment) is stored in a
// record's quant rows: in the order the GEMV's units first read them (KUnit), so a record is read
// front to back. q4_K: as they are. q5_K: unit 0 reads qh group g with qs group g (rows 8 + g) for
// g = 0..7, so those 16 alternate; the other units read only qs groups, in order. q6_K: units
// 2i and 2i + 1 (i = 2h + gq) read ql groups 16h + 4gq + g and 16h + 8 + 4gq + g with qh group
// 32 + 8h + 4gq + g (g = 0..3), stored as 12 rows: ql and qh alternating for unit 2i, then
// unit 2i + 1's ql.
template <WType T>
constexpr int kq_row(int gr) {
  if constexpr (T == WType::kQ5_K) {
    return gr < 8 ? 2 * gr : (gr < 16 ? 2 * (gr - 8) + 1 : gr);
  } else if constexpr (T == WType::kQ6_K) {
    if (gr < 32) {
      const int h = gr / 16, sp = gr / 8 % 2, l4 = gr % 8, g = l4 % 4;
      return 12 * (2 * h + l4 / 4) + (sp == 0 ? 2 * g : 8 + g);
    }
    const int r = gr - 32, h = r / 8, l4 = r % 8;
    return 12 * (2 * h + l4 / 4) + 2 * (l4 % 4) + 1;
  } else {
    return gr;
  }
}

template <WType T>
void pack_kquant(const void* w, int64_t n, const Geometry& g, uint8_t* out) {
  using Block = std::conditional_t<T == WType::kQ4_K, BlockQ4_K,
                                   std::conditional_t<T == WType::kQ5_K, BlockQ5_K, BlockQ6_K>>;
  const Block* blocks = static_cast<const Block*>(w);
  const int64_t L = g.L;
  constexpr int kG = kKGroups<T>;
  uint8_t q[4 * kG], sc[16] = {}, mn[8] = {};
  for (int64_t t = 0; t < g.tiles; ++t) {
    const int64_t gi = t / g.P, i = t % g.P, p = g.group_tiles(gi);
    for (int64_t b = 0; b < g.kb; ++b) {
      prefetch_next_tile(w, g.kb * static_cast<int64_t>(sizeof(Block)), n, g, t, b);
      uint8_t* side = out + gi * g.gstride + b * g.record(gi);  // the side, then the quants
      uint8_t* quants = side + p * g.sb;
      uint16_t* dd = reinterpret_cast<uint16_t*>(side) + i * L;
      uint16_t* dm = reinterpret_cast<uint16_t*>(side) + p * L + i * L;
      uint8_t* scp = side + p * 2 * g.nf16 * L + i * g.nsub * L;
      uint8_t* mnp = side + p * (2 * g.nf16 + g.nsub) * L + i * g.nmin * L;
      for (int64_t c = 0; c < L; ++c) {
        const int64_t col = t * L + c;
        uint16_t d = 0, dmin = 0;
        if (col < n) {
          kquant_parts<T>(reinterpret_cast<const uint8_t*>(&blocks[col * g.kb + b]), q, &d, &dmin,
                          sc, mn);
        } else {  // padding columns: zeros
          std::memset(q, 0, sizeof q);
          std::memset(sc, 0, sizeof sc);
          std::memset(mn, 0, sizeof mn);
        }
        for (int gr = 0; gr < kG; ++gr)
          std::memcpy(quants + (kq_row<T>(gr) * p + i) * 4 * L + c * 4, q + 4 * gr, 4);
        dd[c] = d;
        if (g.nf16 == 2) dm[c] = dmin;
        for (int64_t j = 0; j < g.nsub; ++j) scp[j * L + c] = sc[j];
        for (int64_t j = 0; j < g.nmin; ++j) mnp[(j / 2) * 2 * L + 2 * c + j % 2] = mn[j];
      }
    }
  }
}

template <WType T>
void pack(const void* w, const float* scales, int64_t n, int64_t k, void* dst) {
  const Geometry g = geometry<T>(n, k);
  if (g.total == 0) return;
  zero_gaps(g, static_cast<uint8_t*>(dst));  // every other byte is written below
  if constexpr (kIsK<T>) {
    pack_kquant<T>(w, n, g, static_cast<uint8_t*>(dst));
    (void)scales;
    return;
  } else {
    uint8_t* out = static_cast<uint8_t*>(dst);
    const int64_t L = g.L;
    const uint8_t* src = static_cast<const uint8_t*>(w);
    using Block = std::conditional_t<
        T == WType::kQ4_0, BlockQ4_0,
        std::conditional_t<
            T == WType::kQ4_1, BlockQ4_1,
            std::conditional_t<T == WType::kQ5_0, BlockQ5_0,
                               std::conditional_t<T == WType::kQ5_1, BlockQ5_1, BlockQ8_0>>>>;
    constexpr int kGroups = kBytes<T> ? 8 : 4;  // groups of 4 bytes per block (i8: its own loop)
    constexpr uint8_t kXor = (T == WType::kI8 || (T == WType::kQ8_0 && !kQ8Signed)) ? 0x80 : 0x00;
    const Block* blocks = reinterpret_cast<const Block*>(src);
    const int64_t row_bytes = T == WType::kI8 ? k : g.kb * static_cast<int64_t>(sizeof(Block));
    for (int64_t t = 0; t < g.tiles; ++t) {
      const int64_t gi = t / g.P, i = t % g.P, p = g.group_tiles(gi);
      uint8_t* base = out + gi * g.gstride;
      for (int64_t b = 0; b < g.kb; ++b) {
        prefetch_next_tile(src, row_bytes, n, g, t, b);
        uint8_t* rec = base + b * g.record(gi);
        // q5: the 5th-bit words at rec + i * 4L, group-of-4 gr at q + gr * p * 4L
        uint8_t* q = rec + (kQ5<T> ? p : 0) * 4 * L + i * 4 * L;
        uint8_t* side = rec + p * g.qb;  // d [p][L], then m [p][L] (f16)
        uint16_t* d = reinterpret_cast<uint16_t*>(side) + i * L;
        uint16_t* m = reinterpret_cast<uint16_t*>(side) + p * L + i * L;
        for (int64_t c = 0; c < L; ++c) {
          const int64_t col = t * L + c;
          if constexpr (T == WType::kI8) {
            for (int j = 0; j < 4; ++j) {
              const int64_t kk = 4 * b + j;
              const uint8_t v = col < n && kk < k ? src[col * k + kk] : uint8_t{0};
              q[c * 4 + j] = static_cast<uint8_t>(v ^ kXor);
            }
          } else {
            static constexpr Block kZero{};  // past the last column
            const Block& blk = col < n ? blocks[col * g.kb + b] : kZero;
            for (int gr = 0; gr < kGroups; ++gr) {
              uint32_t v;
              std::memcpy(&v, blk.qs + 4 * gr, 4);
              v ^= uint32_t{kXor} * 0x01010101u;
              std::memcpy(q + gr * p * 4 * L + c * 4, &v, 4);
            }
            if constexpr (kQ5<T>) {  // 5th bits: bit 2h (2h + 1) of byte j = element 4h + j (+ 16)
              uint32_t qh, hb = 0;
              std::memcpy(&qh, blk.qh, 4);
              // Nibble v's bit j to bit 0 of byte j: v * 0x204081 puts it at bit 8j (no carries).
              auto spread = [](uint32_t v) { return (v * 0x204081u) & 0x01010101u; };
              for (uint32_t h = 0; h < 4; ++h) {
                hb |= spread((qh >> (4 * h)) & 15u) << (2 * h);
                hb |= spread((qh >> (16 + 4 * h)) & 15u) << (2 * h + 1);
              }
              std::memcpy(rec + i * 4 * L + c * 4, &hb, 4);  // byte j: little-endian
            }
            d[c] = blk.d;
            if constexpr (kHasMin<T>) m[c] = blk.m;
          }
        }
      }
    }
    if constexpr (T == WType::kI8) {
      float* sc = reinterpret_cast<float*>(out + g.scales_off);
      for (int64_t col = 0; col < n; ++col) sc[col] = scales[col];
    }
  }
}

// ---- quantized activations (scratch) ------------------------------------------------------------

// Tokens are stored in panels of `rows` consecutive tokens (1 for a GEMV, the GEMM's kMR rows
// otherwise), like a packed A operand, so a micro-kernel broadcasts every row's 4 bytes from one
// pointer. A panel holds, for slot r (token panel * rows + r):
//   qs   [k4 / 4][rows][4] int8   k4 = round_up(k, 4), zero past k
//   d    [nb][rows] f32           block scales f16_to_f32(f16(amax / 127)) (i8: nb = 1, the
//                                 token's scale)
//   sum  [nb][rows] int32         sum of the block's qs (for the exact offset corrections)
//   s    [nb][rows] f32           q8_1 only: f16_to_f32(f16(d * sum))
// K-quants: nb = k / 256 q8_K scales d (f32, unrounded), and sum [nb * nsub][rows] holds the sums
// of each sub-block (of 32 for q4_K / q5_K, of 16 for q6_K); q6_K's s [nb * 16][rows] holds, per
// sub-block, the int16 pair (-32 * the sum of bytes 0 and 1 of its 4 groups of 4, -32 * that of
// bytes 2 and 3): |.| <= 32 * 8 * 127 = 32512, the start of its int16 pmaddubsw sums.
struct XPanel {
  int64_t rows = 0;
  int64_t stride = 0;  // bytes per panel (64-byte multiple)
  int64_t d_off = 0, sum_off = 0, s_off = 0;
};

template <WType T>
XPanel x_panel(int64_t k, int64_t rows) {
  XPanel p;
  const int64_t nb = T == WType::kI8 ? 1 : (kIsK<T> ? k / kQK_K : k / kQK);
  const int64_t nsum = kIsK<T> ? nb * kKSub<T> : nb;
  const int64_t ns = T == WType::kQ6_K ? nsum : nb;
  p.rows = rows;
  p.d_off = round_up(round_up(k, 4) * rows, 64);
  p.sum_off = p.d_off + 4 * nb * rows;
  p.s_off = p.sum_off + 4 * nsum * rows;
  p.stride = p.d_off + round_up(4 * (nb + nsum + ns) * rows, 64);
  return p;
}

// Rows per activation panel for an m-row run.
template <WType T>
constexpr int64_t panel_rows(int64_t m) {
  return m == 1 ? 1 : kMR<T>;
}

template <WType T>
uint64_t scratch_bytes(int64_t m, int64_t, int64_t k, int) {
  if (m <= 0 || k <= 0) return 0;
  const int64_t rows = panel_rows<T>(m);
  return static_cast<uint64_t>((m + rows - 1) / rows * x_panel<T>(k, rows).stride);
}

// nearbyint(v) as int32 (the current rounding mode: nearest-even by default, like quant.cpp).
// Highway 1.0.3's scalar NearestInt rounds 0.49999997 up, so SCALAR converts lane by lane.
HWY_INLINE VI nearest_int(VF v) {
#if HWY_TARGET == HWY_SCALAR
  return hn::Set(DI(), static_cast<int32_t>(std::nearbyintf(hn::GetLane(v))));
#else
  return hn::NearestInt(v);
#endif
}

// Stores `bytes` (a multiple of 4) quantized values of slot `slot`, from element e0 (a multiple
// of 4) on.
HWY_INLINE void put_qs(uint8_t* panel, const XPanel& lay, int64_t slot, int64_t e0,
                       const int8_t* src, int64_t bytes) {
  if (lay.rows == 1) {
    std::memcpy(panel + e0, src, static_cast<size_t>(bytes));
    return;
  }
  const int64_t step = 4 * lay.rows;  // a local: the stores below may alias lay
  uint8_t* dst = panel + (e0 / 4 * lay.rows + slot) * 4;
  for (int64_t j = 0; j < bytes; j += 4, dst += step) std::memcpy(dst, src + j, 4);
}

// quantize_row_i8 into slot `slot` of `panel`.
inline void quantize_x_i8(const float* x, int64_t k, uint8_t* panel, int64_t slot,
                          const XPanel& lay) {
  const DF df;
  const DI di;
  const hn::Rebind<int8_t, DI> d8;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));  // divides 32 on every target
  int64_t i = 0;
  VF vmax = hn::Zero(df), vz = hn::Zero(df);  // vz: sum of x * 0, NaN iff some x is inf or NaN
  for (; i + N <= k; i += N) {
    const VF v = hn::LoadU(df, x + i);
    vmax = hn::Max(vmax, hn::Abs(v));
    vz = hn::Add(vz, hn::Mul(v, hn::Zero(df)));
  }
  float amax = hn::GetLane(hn::MaxOfLanes(df, vmax)), z = hn::GetLane(hn::SumOfLanes(df, vz));
  for (; i < k; ++i) {
    amax = std::fmax(amax, std::fabs(x[i]));
    z += x[i] * 0.0f;
  }
  // quant.h's rule: a non-finite row has a NaN scale and q = 0; a (near) zero one scale 1, q = 0.
  const bool finite = !std::isnan(z), tiny = !(amax >= kActMinAmax);
  const float scale = !finite ? NAN : tiny ? 1.0f : amax / 127.0f;
  const float inv = !finite || tiny ? 0.0f : 127.0f / amax;
  const VF vinv = hn::Set(df, inv);
  const VI lo = hn::Set(di, -127), hi = hn::Set(di, 127);
  VI vsum = hn::Zero(di);
  int32_t sum = 0;
  HWY_ALIGN int8_t tmp[kQK];
  for (int64_t c0 = 0; c0 < k; c0 += kQK) {
    const int64_t count = std::min<int64_t>(kQK, k - c0);
    if (inv == 0.0f) {  // x * 0 is NaN for an inf: never convert it
      std::memset(tmp, 0, sizeof tmp);
    } else if (count == kQK) {
      for (int64_t j = 0; j < kQK; j += N) {
        const VI r =
            hn::Min(hn::Max(nearest_int(hn::Mul(hn::LoadU(df, x + c0 + j), vinv)), lo), hi);
        vsum = hn::Add(vsum, r);
        hn::StoreU(hn::DemoteTo(d8, r), d8, tmp + j);
      }
    } else {
      std::memset(tmp, 0, sizeof tmp);
      for (int64_t j = 0; j < count; ++j) {
        const float r = std::nearbyintf(x[c0 + j] * inv);
        tmp[j] = static_cast<int8_t>(std::fmax(-127.0f, std::fmin(127.0f, r)));
        sum += tmp[j];
      }
    }
    put_qs(panel, lay, slot, c0, tmp, round_up(count, 4));
  }
  sum += hn::GetLane(hn::SumOfLanes(di, vsum));
  std::memcpy(panel + lay.d_off + 4 * slot, &scale, 4);
  std::memcpy(panel + lay.sum_off + 4 * slot, &sum, 4);
}

// quantize_act_q8_0 (kQ81: quantize_act_q8_1) into slot `slot` of `panel`, block by block.
template <bool kQ81>
void quantize_x_q8(const float* x, int64_t k, uint8_t* panel, int64_t slot, const XPanel& lay) {
  const DF df;
  const DI di;
  const hn::Rebind<int8_t, DI> d8;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));  // divides 32 on every target
  float* dd = reinterpret_cast<float*>(panel + lay.d_off);
  int32_t* ss = reinterpret_cast<int32_t*>(panel + lay.sum_off);
  float* s1 = reinterpret_cast<float*>(panel + lay.s_off);
  HWY_ALIGN int8_t tmp[kQK];
  for (int64_t b = 0; b < k / kQK; ++b) {
    const float* xb = x + b * kQK;
    VF vmax = hn::Zero(df), vz = hn::Zero(df);  // vz: sum of x * 0, NaN iff some x is not finite
    for (int64_t i = 0; i < kQK; i += N) {
      const VF v = hn::LoadU(df, xb + i);
      vmax = hn::Max(vmax, hn::Abs(v));
      vz = hn::Add(vz, hn::Mul(v, hn::Zero(df)));
    }
    const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
    const bool finite = !std::isnan(hn::GetLane(hn::SumOfLanes(df, vz)));
    const float d = finite ? amax / 127.0f : NAN;  // quant.h's rule for non-finite / tiny blocks
    const float id = finite && amax >= kActMinAmax ? 1.0f / d : 0.0f;
    const VF vid = hn::Set(df, id);
    VI vsum = hn::Zero(di);
    if (id == 0.0f) {  // x * 0 is NaN for an inf: never convert it
      std::memset(tmp, 0, sizeof tmp);
    } else {
      for (int64_t i = 0; i < kQK; i += N) {
        const VI r = nearest_int(hn::Mul(hn::LoadU(df, xb + i), vid));
        vsum = hn::Add(vsum, r);
        hn::StoreU(hn::DemoteTo(d8, r), d8, tmp + i);
      }
    }
    put_qs(panel, lay, slot, b * kQK, tmp, kQK);
    const int32_t sum = hn::GetLane(hn::SumOfLanes(di, vsum));
    const int64_t at = b * lay.rows + slot;
    dd[at] = f16_to_f32(f32_to_f16(d));
    ss[at] = sum;
    if constexpr (kQ81) s1[at] = f16_to_f32(f32_to_f16(static_cast<float>(sum) * d));
  }
}

// quantize_row_q8_K into slot `slot` of `panel`, with the sums of every sub-block of `sub`
// (32 or 16) values. pairs (q6_K): also the -32 * pair sums in s (XPanel).
inline void quantize_x_q8k(const float* x, int64_t k, uint8_t* panel, int64_t slot,
                           const XPanel& lay, int sub, bool pairs) {
  const DF df;
  const DI di;
  const hn::Rebind<int8_t, DI> d8;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));  // divides 16 on every target
  float* dd = reinterpret_cast<float*>(panel + lay.d_off);
  int32_t* ss = reinterpret_cast<int32_t*>(panel + lay.sum_off);
  int32_t* sp = reinterpret_cast<int32_t*>(panel + lay.s_off);
  const int nsub = kQK_K / sub;
  HWY_ALIGN int8_t tmp[kQK_K];
  const VI lane = hn::Iota(di, 0);  // (Iota goes through memory: not in the loops)
  for (int64_t b = 0; b < k / kQK_K; ++b) {
    const float* xb = x + b * kQK_K;
    // amax, and vz = sum of x * 0: NaN iff some x is inf or NaN (then amax is not used).
    VF vmax = hn::Zero(df), vz = hn::Zero(df);
    for (int64_t i = 0; i < kQK_K; i += N) {
      const VF v = hn::LoadU(df, xb + i);
      vmax = hn::Max(vmax, hn::Abs(v));
      vz = hn::Add(vz, hn::Mul(v, hn::Zero(df)));
    }
    const float amax = hn::GetLane(hn::MaxOfLanes(df, vmax));
    const int64_t at = b * lay.rows + slot;
    const bool finite = hn::GetLane(hn::SumOfLanes(df, vz)) == 0.0f;
    if (!finite || amax < kActMinAmax) {  // quant.h's rule: zeros, d = 0 (tiny) or NaN (inf/NaN)
      std::memset(tmp, 0, sizeof tmp);
      put_qs(panel, lay, slot, b * kQK_K, tmp, kQK_K);
      dd[at] = finite ? 0.0f : NAN;
      for (int j = 0; j < nsub; ++j) ss[(b * nsub + j) * lay.rows + slot] = 0;
      if (pairs)
        for (int j = 0; j < nsub; ++j) sp[(b * nsub + j) * lay.rows + slot] = 0;
      continue;
    }
    int64_t first = 0;  // the first value of largest magnitude gives the sign, as in ggml
    for (const VF va = hn::Set(df, amax);; first += N) {
      const intptr_t f = hn::FindFirstTrue(df, hn::Eq(hn::Abs(hn::LoadU(df, xb + first)), va));
      if (f >= 0) {
        first += f;
        break;
      }
    }
    const float iscale = -127.0f / xb[first];
    const VF vis = hn::Set(df, iscale);
    const VI hi = hn::Set(di, 127), three = hn::Set(di, 3), two = hn::Set(di, 2);
    for (int j = 0; j < nsub; ++j) {
      VI vsum = hn::Zero(di), veven = hn::Zero(di);  // veven: elements 4g and 4g + 1
      for (int64_t i = j * sub; i < (j + 1) * sub; i += N) {
        const VI r = hn::Min(nearest_int(hn::Mul(hn::LoadU(df, xb + i), vis)), hi);
        vsum = hn::Add(vsum, r);
        if (pairs) {
          const VI e = hn::Add(lane, hn::Set(di, static_cast<int32_t>(i)));  // element index
          const auto even = hn::Lt(hn::And(e, three), two);
          veven = hn::Add(veven, hn::IfThenElseZero(even, r));
        }
        hn::StoreU(hn::DemoteTo(d8, r), d8, tmp + i);
      }
      const int32_t sum = hn::GetLane(hn::SumOfLanes(di, vsum));
      ss[(b * nsub + j) * lay.rows + slot] = sum;
      if (pairs) {  // int16 halves: -32 x (the sum of elements 4g, 4g + 1; of 4g + 2, 4g + 3)
        const int32_t even = hn::GetLane(hn::SumOfLanes(di, veven)), odd = sum - even;
        sp[(b * nsub + j) * lay.rows + slot] =
            static_cast<int32_t>((static_cast<uint32_t>(-32 * even) & 0xffffu) |
                                 (static_cast<uint32_t>(-32 * odd) << 16));
      }
    }
    put_qs(panel, lay, slot, b * kQK_K, tmp, kQK_K);
    dd[at] = 1 / iscale;
  }
}

// Quantizes token row x[k] into slot `slot` of `panel`.
template <WType T>
void quantize_x(const float* x, int64_t k, uint8_t* panel, int64_t slot, const XPanel& lay) {
  if constexpr (T == WType::kI8) {
    quantize_x_i8(x, k, panel, slot, lay);
  } else if constexpr (kIsK<T>) {
    quantize_x_q8k(x, k, panel, slot, lay, kQK_K / kKSub<T>, T == WType::kQ6_K);
  } else {
    quantize_x_q8<kHasMin<T>>(x, k, panel, slot, lay);
  }
}

HWY_INLINE int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

#if HWY_TARGET == HWY_AVX2
// The 8 K-quant sub-block scales at p (u8; kSigned: i8) as DotMadd::kscale returns them, each in
// both int16 halves of its lane: one broadcast load and one pshufb (u8), plus an arithmetic shift
// (i8: the byte lands in each half's high byte), where a widening load and kscale take four ops.
template <bool kSigned>
HWY_INLINE VI kscale8(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  const __m256i b = _mm256_set1_epi64x(v);  // both 128-bit halves hold the 8 bytes
  constexpr char z = -1;                    // pshufb: high bit set writes 0
  if constexpr (!kSigned) {
    const __m256i idx = _mm256_setr_epi8(0, z, 0, z, 1, z, 1, z, 2, z, 2, z, 3, z, 3, z,  //
                                         4, z, 4, z, 5, z, 5, z, 6, z, 6, z, 7, z, 7, z);
    return VI{_mm256_shuffle_epi8(b, idx)};
  } else {
    const __m256i idx = _mm256_setr_epi8(z, 0, z, 0, z, 1, z, 1, z, 2, z, 2, z, 3, z, 3,  //
                                         z, 4, z, 4, z, 5, z, 5, z, 6, z, 6, z, 7, z, 7);
    return VI{_mm256_srai_epi16(_mm256_shuffle_epi8(b, idx), 8)};
  }
}
#endif

// ---- dot-product policies ----------------------------------------------------------------------
// nib(acc, w, x): acc + sum over each lane's 4 byte pairs of u8(w) * s8(x), w in [0, 31].
// s8(acc, w, x):  w holds biased weights (w_true ^ 0x80); adds sum u8(w) * s8(x) when kBiased
//                 (the caller subtracts 128 * sum(x)), else sum w_true * s8(x).
// q8(acc, w, x):  q8_0's s8 on its packed bytes (kQ8Signed: w_true, else biased).
// K-quant sub-block sums (a: u8, b: s8, |a| * |b| * 2 per int16 pair within the caller's bound):
//   kI16:          acc holds int16 pairs: kacc(acc, a, b) = acc + pmaddubsw(a, b) (int16 adds),
//                  kfinish(iacc, acc, scv) = iacc + pmaddwd(acc, scv), scv = kscale(sc) holding
//                  the int32 scale in both int16 halves.
//   otherwise:     acc is int32: kacc = acc + sum of the 4 products; kfinish = iacc + acc * scv.
// madd16(a, b): pmaddwd (int16 pairs -> int32 lane sums).

// The value of an accumulator, computed here: an empty asm that GCC must assume reads and
// changes it (kOn; otherwise v as it is). The micro-kernels unroll into long chains of integer
// vector adds, which GCC reassociates into trees; those keep every product live at once and spill
// them (measured: the AVX2 2x2 q4_0 GEMM kept 20 of a block's 32 pmaddubsw results on the stack).
// Pinning each partial sum keeps the chains in program order: one live accumulator per output
// vector. The policies' nib and kacc pin on AVX2 / SSE4 (16 registers); AVX3 (32 registers) stays
// as it was measured on the Xeon, SCALAR has no vector chains. Where: kacc<true> pins each sum
// as it leaves the add (as nib does), kacc<false> the accumulator going in; both keep the
// order. The K-quant GEMVs pin on the way in (kPinOutFor<1>): pinned on the way out, GCC
// computed their sums into a scratch register and copied each back (8 vmovdqa per 36 vector
// ops of the q4_K GEMV's loop), and they ran 1.06-1.4x faster in cache without (Zen 3,
// docs/kernels.md). Everything else pins on the way out: the GEMMs ran 1.2-1.9x slower pinned
// on the way in, the block types' GEMVs showed no gain.
template <bool kOn>
HWY_INLINE VI pin(VI v) {
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_SSE4
  if constexpr (kOn) asm("" : "+x"(v.raw));
#endif
  return v;
}
// The K-quant micro-kernels' pin position for XR activation rows (XR == 1: a GEMV).
template <int XR>
inline constexpr bool kPinOutFor = XR > 1;

#if HWY_TARGET == HWY_AVX3
#define LAYA_MI_VNNI_ATTR __attribute__((target(HWY_TARGET_STR ",avx512vnni")))
struct DotVnni {
  static constexpr bool kBiased = true;
  LAYA_MI_VNNI_ATTR static HWY_INLINE VI nib(VI acc, VI w, VI x) {
    return VI{_mm512_dpbusd_epi32(acc.raw, w.raw, x.raw)};
  }
  LAYA_MI_VNNI_ATTR static HWY_INLINE VI s8(VI acc, VI w, VI x) { return nib(acc, w, x); }
  LAYA_MI_VNNI_ATTR static HWY_INLINE VI q8(VI acc, VI w, VI x) { return s8(acc, w, x); }
  static constexpr bool kI16 = false;
  template <bool kPinOut = true>
  LAYA_MI_VNNI_ATTR static HWY_INLINE VI kacc(VI acc, VI a, VI b) {
    return nib(acc, a, b);
  }
  static HWY_INLINE VI kscale(VI sc) { return sc; }
  static HWY_INLINE VI kfinish(VI iacc, VI acc, VI scv) {
    return VI{_mm512_add_epi32(iacc.raw, _mm512_mullo_epi32(acc.raw, scv.raw))};
  }
  static HWY_INLINE VI madd16(VI a, VI b) { return VI{_mm512_madd_epi16(a.raw, b.raw)}; }
};
struct DotMadd {
  static constexpr bool kBiased = false;
  static HWY_INLINE VI nib(VI acc, VI w, VI x) {
    const __m512i p = _mm512_maddubs_epi16(w.raw, x.raw);
    return pin<true>(VI{_mm512_add_epi32(acc.raw, _mm512_madd_epi16(p, _mm512_set1_epi16(1)))});
  }
  static HWY_INLINE VI s8(VI acc, VI w, VI x) {
    const __m512i ws = _mm512_xor_si512(w.raw, _mm512_set1_epi8(static_cast<char>(0x80)));
    const __mmask64 neg = _mm512_movepi8_mask(ws);
    const __m512i xs = _mm512_mask_sub_epi8(x.raw, neg, _mm512_setzero_si512(), x.raw);
    return nib(acc, VI{_mm512_abs_epi8(ws)}, VI{xs});
  }
  static HWY_INLINE VI q8(VI acc, VI w, VI x) { return s8(acc, w, x); }
  static constexpr bool kI16 = true;
  template <bool kPinOut = true>
  static HWY_INLINE VI kacc(VI acc, VI a, VI b) {
    return pin<kPinOut>(
        VI{_mm512_add_epi16(pin<!kPinOut>(acc).raw, _mm512_maddubs_epi16(a.raw, b.raw))});
  }
  static HWY_INLINE VI kscale(VI sc) {  // sc in both int16 halves
    return hn::Or(hn::And(sc, hn::Set(DI(), 0xffff)), hn::ShiftLeft<16>(sc));
  }
  static HWY_INLINE VI kfinish(VI iacc, VI acc, VI scv) {
    return VI{_mm512_add_epi32(iacc.raw, _mm512_madd_epi16(acc.raw, scv.raw))};
  }
  static HWY_INLINE VI madd16(VI a, VI b) { return VI{_mm512_madd_epi16(a.raw, b.raw)}; }
};
#elif HWY_TARGET == HWY_AVX2
struct DotMadd {
  static constexpr bool kBiased = false;
  static HWY_INLINE VI nib(VI acc, VI w, VI x) {
    const __m256i p = _mm256_maddubs_epi16(w.raw, x.raw);
    return pin<true>(VI{_mm256_add_epi32(acc.raw, _mm256_madd_epi16(p, _mm256_set1_epi16(1)))});
  }
  static HWY_INLINE VI s8(VI acc, VI w, VI x) {
    const __m256i ws = _mm256_xor_si256(w.raw, _mm256_set1_epi8(static_cast<char>(0x80)));
    return nib(acc, VI{_mm256_abs_epi8(ws)}, VI{_mm256_sign_epi8(x.raw, ws)});
  }
  // q8_0 (kQ8Signed: w as it is): s8's product without the bias' xor (|w| = 128 is u8 0x80).
  static HWY_INLINE VI q8(VI acc, VI w, VI x) {
    return nib(acc, VI{_mm256_abs_epi8(w.raw)}, VI{_mm256_sign_epi8(x.raw, w.raw)});
  }
  static constexpr bool kI16 = true;
  template <bool kPinOut = true>
  static HWY_INLINE VI kacc(VI acc, VI a, VI b) {
    return pin<kPinOut>(
        VI{_mm256_add_epi16(pin<!kPinOut>(acc).raw, _mm256_maddubs_epi16(a.raw, b.raw))});
  }
  static HWY_INLINE VI kscale(VI sc) {  // sc in both int16 halves
    return hn::Or(hn::And(sc, hn::Set(DI(), 0xffff)), hn::ShiftLeft<16>(sc));
  }
  static HWY_INLINE VI kfinish(VI iacc, VI acc, VI scv) {
    return VI{_mm256_add_epi32(iacc.raw, _mm256_madd_epi16(acc.raw, scv.raw))};
  }
  static HWY_INLINE VI madd16(VI a, VI b) { return VI{_mm256_madd_epi16(a.raw, b.raw)}; }
};
#elif HWY_TARGET == HWY_SSE4
struct DotMadd {
  static constexpr bool kBiased = false;
  static HWY_INLINE VI nib(VI acc, VI w, VI x) {
    const __m128i p = _mm_maddubs_epi16(w.raw, x.raw);
    return pin<true>(VI{_mm_add_epi32(acc.raw, _mm_madd_epi16(p, _mm_set1_epi16(1)))});
  }
  static HWY_INLINE VI s8(VI acc, VI w, VI x) {
    const __m128i ws = _mm_xor_si128(w.raw, _mm_set1_epi8(static_cast<char>(0x80)));
    return nib(acc, VI{_mm_abs_epi8(ws)}, VI{_mm_sign_epi8(x.raw, ws)});
  }
  // q8_0 (kQ8Signed: w as it is): s8's product without the bias' xor (|w| = 128 is u8 0x80).
  static HWY_INLINE VI q8(VI acc, VI w, VI x) {
    return nib(acc, VI{_mm_abs_epi8(w.raw)}, VI{_mm_sign_epi8(x.raw, w.raw)});
  }
  static constexpr bool kI16 = true;
  template <bool kPinOut = true>
  static HWY_INLINE VI kacc(VI acc, VI a, VI b) {
    return pin<kPinOut>(VI{_mm_add_epi16(pin<!kPinOut>(acc).raw, _mm_maddubs_epi16(a.raw, b.raw))});
  }
  static HWY_INLINE VI kscale(VI sc) {  // sc in both int16 halves
    return hn::Or(hn::And(sc, hn::Set(DI(), 0xffff)), hn::ShiftLeft<16>(sc));
  }
  static HWY_INLINE VI kfinish(VI iacc, VI acc, VI scv) {
    return VI{_mm_add_epi32(iacc.raw, _mm_madd_epi16(acc.raw, scv.raw))};
  }
  static HWY_INLINE VI madd16(VI a, VI b) { return VI{_mm_madd_epi16(a.raw, b.raw)}; }
};
#elif HWY_TARGET == HWY_NEON
// Arm: every operand is read as s8 (nibbles, K-quant quants <= 63 and kQ8Signed q8_0 bytes are
// their own s8 value; i8 weights lose the bias with one xor), so no correction term is needed.
// ARMv8.0 (Cortex-A53, A72): smull / smull2 into int16 (|w * x| <= 128 * 127 fits), two
// pairwise widening adds to int32 and one pairwise add: the 4-product sum of each lane, exact.
inline int32x4_t neon_dot4(int32x4_t acc, int8x16_t a, int8x16_t b) {
  const int16x8_t lo = vmull_s8(vget_low_s8(a), vget_low_s8(b));
  const int16x8_t hi = vmull_high_s8(a, b);
  return vaddq_s32(acc, vpaddq_s32(vpaddlq_s16(lo), vpaddlq_s16(hi)));
}
inline int8x16_t neon_unbias(VI w) {
  return veorq_s8(vreinterpretq_s8_s32(w.raw), vdupq_n_s8(static_cast<int8_t>(-128)));
}
// The ARMv8.2 dot product (Cortex-A55, A76, Neoverse): sdot adds each lane's 4 products into
// its int32, wrapping like the reference's sums. Only in functions carrying this attribute (inside
// Highway's "+crypto" region GCC 12 inlines vdotq_s32 only under a full arch string: dotprod is
// an Armv8.2 option).
#define LAYA_MI_SDOT_ATTR __attribute__((target("arch=armv8.2-a+crypto+dotprod")))
struct DotNeonCommon {
  static constexpr bool kBiased = false;
  static constexpr bool kI16 = false;
  static HWY_INLINE VI kscale(VI sc) { return sc; }
  static HWY_INLINE VI kfinish(VI iacc, VI acc, VI scv) {
    return VI{vmlaq_s32(iacc.raw, acc.raw, scv.raw)};
  }
  static HWY_INLINE VI madd16(VI a, VI b) {  // int16 pairs -> their int32 lane sums (pmaddwd)
    const int16x8_t a16 = vreinterpretq_s16_s32(a.raw), b16 = vreinterpretq_s16_s32(b.raw);
    const int32x4_t lo = vmull_s16(vget_low_s16(a16), vget_low_s16(b16));
    return VI{vpaddq_s32(lo, vmull_high_s16(a16, b16))};
  }
};
// ARMv8.0.
struct DotMadd : DotNeonCommon {
  static HWY_INLINE VI nib(VI acc, VI w, VI x) {
    return VI{neon_dot4(acc.raw, vreinterpretq_s8_s32(w.raw), vreinterpretq_s8_s32(x.raw))};
  }
  static HWY_INLINE VI s8(VI acc, VI w, VI x) {
    return VI{neon_dot4(acc.raw, neon_unbias(w), vreinterpretq_s8_s32(x.raw))};
  }
  static HWY_INLINE VI q8(VI acc, VI w, VI x) { return nib(acc, w, x); }
  template <bool kPinOut = true>
  static HWY_INLINE VI kacc(VI acc, VI a, VI b) {
    return nib(acc, a, b);
  }
};
// ARMv8.2 dotprod.
struct DotSdot : DotNeonCommon {
  LAYA_MI_SDOT_ATTR static HWY_INLINE VI nib(VI acc, VI w, VI x) {
    return VI{vdotq_s32(acc.raw, vreinterpretq_s8_s32(w.raw), vreinterpretq_s8_s32(x.raw))};
  }
  LAYA_MI_SDOT_ATTR static HWY_INLINE VI s8(VI acc, VI w, VI x) {
    return VI{vdotq_s32(acc.raw, neon_unbias(w), vreinterpretq_s8_s32(x.raw))};
  }
  LAYA_MI_SDOT_ATTR static HWY_INLINE VI q8(VI acc, VI w, VI x) { return nib(acc, w, x); }
  template <bool kPinOut = true>
  LAYA_MI_SDOT_ATTR static HWY_INLINE VI kacc(VI acc, VI a, VI b) {
    return nib(acc, a, b);
  }
};
#else
// Any other target (SCALAR): lane by lane.
struct DotMadd {
  static constexpr bool kBiased = false;
  template <bool kSigned>
  static HWY_INLINE VI dot(VI acc, VI w, VI x) {
    const DI di;
    constexpr size_t kMax = hn::MaxLanes(DI());
    HWY_ALIGN int32_t a[kMax], wl[kMax], xl[kMax];
    hn::Store(acc, di, a);
    hn::Store(w, di, wl);
    hn::Store(x, di, xl);
    for (size_t i = 0; i < hn::Lanes(di); ++i) {
      uint8_t wb[4];
      int8_t xb[4];
      std::memcpy(wb, &wl[i], 4);
      std::memcpy(xb, &xl[i], 4);
      int32_t s = 0;
      for (int j = 0; j < 4; ++j) {
        const int32_t wv = kSigned ? static_cast<int8_t>(wb[j] ^ 0x80u) : wb[j];
        s += wv * int32_t{xb[j]};
      }
      a[i] = static_cast<int32_t>(static_cast<uint32_t>(a[i]) + static_cast<uint32_t>(s));
    }
    return hn::Load(di, a);
  }
  static HWY_INLINE VI nib(VI acc, VI w, VI x) { return dot<false>(acc, w, x); }
  static HWY_INLINE VI s8(VI acc, VI w, VI x) { return dot<true>(acc, w, x); }
  static HWY_INLINE VI q8(VI acc, VI w, VI x) { return s8(acc, w, x); }
  static constexpr bool kI16 = false;
  template <bool kPinOut = true>
  static HWY_INLINE VI kacc(VI acc, VI a, VI b) {
    return dot<false>(acc, a, b);
  }
  static HWY_INLINE VI kscale(VI sc) { return sc; }
  static HWY_INLINE VI kfinish(VI iacc, VI acc, VI scv) { return hn::Add(iacc, hn::Mul(acc, scv)); }
  static HWY_INLINE VI madd16(VI a, VI b) {
    const DI di;
    constexpr size_t kMax = hn::MaxLanes(DI());
    HWY_ALIGN int32_t al[kMax], bl[kMax];
    hn::Store(a, di, al);
    hn::Store(b, di, bl);
    for (size_t i = 0; i < hn::Lanes(di); ++i) {
      int16_t ah[2], bh[2];
      std::memcpy(ah, &al[i], 4);
      std::memcpy(bh, &bl[i], 4);
      al[i] = int32_t{ah[0]} * bh[0] + int32_t{ah[1]} * bh[1];
    }
    return hn::Load(di, al);
  }
};
#endif

// ---- micro-kernels and drivers: one copy per dot policy ----------------------------------------

// Arguments of one micro-kernel call: MR rows x NT tiles of y, accumulated over all of k. Tile t
// of record b: f16 d at wd + b * rec + t * 2L (m likewise).
struct MicroArgs {
  const uint8_t* w = nullptr;    // quant rows of the first tile in the first record (row r of
                                 // tile t: w + b * rec + (r * p + t) * 4L; row r is group-of-4
                                 // r, q5: r - 1 after the 5th bits, K-quants: kq_row)
  int64_t gstep = 0;             // p * 4L
  const uint8_t* wd = nullptr;   // its f16 d
  const uint8_t* wm = nullptr;   // its f16 m (q4_1) / dmin (q4_K, q5_K)
  const uint8_t* wsc = nullptr;  // K-quants: its sub-block scales [nsub][L] (tile t: + t*nsub*L)
  const uint8_t* wmn = nullptr;  // q4_K / q5_K: its mins [4][L][2] (tile t: + t*8L)
  int64_t rec = 0;               // bytes between records
  const Geometry* geo = nullptr;
  const uint8_t* x = nullptr;  // activation panel (its slot 0 is the first row)
  const XPanel* xp = nullptr;
  const float* wscale = nullptr;  // i8: scales of the panel's first column
  float* out = nullptr;           // f32 [MR, NT * L], row stride NT * L
  bool accumulate = false;        // block types: add to out (q5 GEMM k slices) instead of store
  bool sw_prefetch = true;        // GEMV: prefetch the stream kPrefetchBlk / kPrefetchK ahead
};

// Finishes an [mr, nt*L] block of results: y[r, col0 + c] = out[r, c] (+ bias[col0 + c]) for
// c < ncols.
inline void store_block(const float* out, int64_t ostride, int64_t mr, float* y, int64_t ldy,
                        const float* bias, int64_t col0, int64_t ncols) {
  const DF df;
  const int64_t N = static_cast<int64_t>(hn::Lanes(df));
  for (int64_t r = 0; r < mr; ++r) {
    const float* o = out + r * ostride;
    float* yr = y + r * ldy + col0;
    int64_t c = 0;
    if (bias != nullptr) {
      const float* bb = bias + col0;
      for (; c + N <= ncols; c += N)
        hn::StoreU(hn::Add(hn::LoadU(df, o + c), hn::LoadU(df, bb + c)), df, yr + c);
      for (; c < ncols; ++c) yr[c] = o[c] + bb[c];
    } else {
      for (; c + N <= ncols; c += N) hn::StoreU(hn::LoadU(df, o + c), df, yr + c);
      for (; c < ncols; ++c) yr[c] = o[c];
    }
  }
}

}  // namespace matmul_int

#if HWY_TARGET == HWY_AVX3
#define LAYA_MI_NS matmul_int_vnni
#define LAYA_MI_ATTR LAYA_MI_VNNI_ATTR
#define LAYA_MI_DOT ::laya::kernels::HWY_NAMESPACE::matmul_int::DotVnni
#include "kernels/hwy/matmul_int_body-inl.h"
#undef LAYA_MI_NS
#undef LAYA_MI_ATTR
#undef LAYA_MI_DOT
#endif

#if HWY_TARGET == HWY_NEON
#define LAYA_MI_NS matmul_int_sdot
#define LAYA_MI_ATTR LAYA_MI_SDOT_ATTR
#define LAYA_MI_DOT ::laya::kernels::HWY_NAMESPACE::matmul_int::DotSdot
#include "kernels/hwy/matmul_int_body-inl.h"
#undef LAYA_MI_NS
#undef LAYA_MI_ATTR
#undef LAYA_MI_DOT
#endif

#define LAYA_MI_NS matmul_int_madd
#define LAYA_MI_ATTR
#define LAYA_MI_DOT ::laya::kernels::HWY_NAMESPACE::matmul_int::DotMadd
#include "kernels/hwy/matmul_int_body-inl.h"
#undef LAYA_MI_NS
#undef LAYA_MI_ATTR
#undef LAYA_MI_DOT

// Installs family F's types for this target (with VNNI when allowed and available). Each
// translation unit of the family wraps one F in its HWY_EXPORTed filler.
template <matmul_int::Family F>
void FillMatmulIntFamily(KernelTable& t, bool allow_dot) {
#if HWY_TARGET == HWY_AVX3
  __builtin_cpu_init();
  if (allow_dot && __builtin_cpu_supports("avx512vnni")) {
    matmul_int_vnni::install<F>(t);
    return;
  }
#endif
#if HWY_TARGET == HWY_NEON && defined(__linux__)
  if (allow_dot && (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0) {
    matmul_int_sdot::install<F>(t);
    return;
  }
#endif
  (void)allow_dot;
  matmul_int_madd::install<F>(t);
}

// Test hook: this target's activation quantizer for `type`, written out in quant.h's layout
// (i8: int8 out[k], returns the scale; q8_0 / q4_0 / q5_0: BlockQ8_0[k/32]; q4_1 / q5_1:
// BlockQ8_1[k/32]).
// `work` holds x_panel(k, 1).stride bytes, 64-byte aligned.
inline float QuantizeActForTest(int type, const float* x, int64_t k, void* out, void* work) {
  using namespace matmul_int;
  uint8_t* xr = static_cast<uint8_t*>(work);
  const WType t = static_cast<WType>(type);
  if (t == WType::kI8) {
    const XPanel lay = x_panel<WType::kI8>(k, 1);
    quantize_x<WType::kI8>(x, k, xr, 0, lay);
    std::memcpy(out, xr, static_cast<size_t>(k));
    float s;
    std::memcpy(&s, xr + lay.d_off, 4);
    return s;
  }
  if (t == WType::kQ4_K || t == WType::kQ5_K || t == WType::kQ6_K) {
    // q8_K with the sums of 32 (q4_K, q5_K) or 16 (q6_K) values.
    const bool k6 = t == WType::kQ6_K;
    const XPanel lay = k6 ? x_panel<WType::kQ6_K>(k, 1) : x_panel<WType::kQ4_K>(k, 1);
    if (!k6) {
      quantize_x<WType::kQ4_K>(x, k, xr, 0, lay);
    } else {
      quantize_x<WType::kQ6_K>(x, k, xr, 0, lay);
    }
    const float* d = reinterpret_cast<const float*>(xr + lay.d_off);
    const int32_t* sums = reinterpret_cast<const int32_t*>(xr + lay.sum_off);
    const int sub = k6 ? 16 : 32;
    for (int64_t b = 0; b < k / kQK_K; ++b) {
      BlockQ8_K& blk = static_cast<BlockQ8_K*>(out)[b];
      blk.d = d[b];
      std::memcpy(blk.qs, xr + b * kQK_K, kQK_K);
      // bsums (of 16) from the stored values; the kernel's own sub-block sums are returned as
      // their total over the row, which the test compares with the bsums' total.
      for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int i = 0; i < 16; ++i) s += blk.qs[16 * g + i];
        blk.bsums[g] = static_cast<int16_t>(s);
      }
      const int32_t* pairs = reinterpret_cast<const int32_t*>(xr + lay.s_off);
      for (int j = 0; j < kQK_K / sub; ++j) {
        int s = 0, even = 0;
        for (int i = 0; i < sub; ++i) {
          s += blk.qs[sub * j + i];
          if (i % 4 < 2) even += blk.qs[sub * j + i];
        }
        if (s != sums[b * (kQK_K / sub) + j]) return -1.0f;  // inconsistent sub-block sum
        const int32_t pr = pairs[b * (kQK_K / sub) + j];     // q6_K: -32 * the pair sums
        if (k6 && (static_cast<int16_t>(pr & 0xffff) != -32 * even ||
                   static_cast<int16_t>(pr >> 16) != -32 * (s - even)))
          return -1.0f;
      }
    }
    return 0.0f;
  }
  const XPanel lay = x_panel<WType::kQ8_0>(k, 1);  // the same layout for q8_1
  const bool q81 = t == WType::kQ4_1 || t == WType::kQ5_1;
  if (q81) {
    quantize_x<WType::kQ4_1>(x, k, xr, 0, lay);
  } else {
    quantize_x<WType::kQ8_0>(x, k, xr, 0, lay);
  }
  const float* d = reinterpret_cast<const float*>(xr + lay.d_off);
  const float* s = reinterpret_cast<const float*>(xr + lay.s_off);
  for (int64_t b = 0; b < k / kQK; ++b) {
    if (q81) {
      BlockQ8_1& blk = static_cast<BlockQ8_1*>(out)[b];
      blk.d = f32_to_f16(d[b]);
      blk.s = f32_to_f16(s[b]);
      std::memcpy(blk.qs, xr + b * kQK, kQK);
    } else {
      BlockQ8_0& blk = static_cast<BlockQ8_0*>(out)[b];
      blk.d = f32_to_f16(d[b]);
      std::memcpy(blk.qs, xr + b * kQK, kQK);
    }
  }
  return 0.0f;
}

}  // namespace laya::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // LAYA_KERNELS_HWY_MATMUL_INT_INL_H_
