// Micro-kernels and drivers of the integer matmul family for ONE dot-product policy. No include
// guard: kernels/hwy/matmul_int-inl.h includes it inside laya::kernels::HWY_NAMESPACE once per
// policy (AVX3: VNNI and pmaddubsw; NEON: sdot and smull; other targets: one), with
//   LAYA_MI_NS    the namespace of this copy
//   LAYA_MI_ATTR  the attribute of every function that may inline the policy (AVX3 VNNI: the
//                 target string plus avx512vnni; NEON sdot: plus dotprod; otherwise empty)
//   LAYA_MI_DOT   the policy (matmul_int::DotVnni / DotSdot / DotMadd)
// A separate copy per policy keeps the VNNI target attribute away from the fallback's code, so no
// VNNI instruction can reach a CPU without it.

namespace LAYA_MI_NS {

using namespace ::laya::kernels::HWY_NAMESPACE::matmul_int;  // NOLINT
using Dot = LAYA_MI_DOT;
// Block types sum pmaddubsw results in int16 across groups before one pmaddwd (AVX2, SSE4; the
// AVX3 fallback keeps its int32 sums).
inline constexpr bool kBlkI16 = Dot::kI16 && HWY_TARGET != HWY_AVX3;
static_assert(!kQ8Signed || !Dot::kBiased, "signed q8_0 bytes need a signed-weight policy");

// Activation panels hold XR rows (== the caller's MRMax); MR <= XR of them are used.

// i8: out[r, t*L + c] = (f32(dot) * x_scale[r]) * w_scale[c], the reference's order.
template <int MR, int NT, int XR>
LAYA_MI_ATTR void micro_i8(const MicroArgs& a) {
  const DI di;
  const DU du;
  const DF df;
  const int64_t L = lanes();
  const int64_t G = a.geo->kb;
  VI acc[MR][NT];
  for (int r = 0; r < MR; ++r)
    for (int t = 0; t < NT; ++t) acc[r][t] = hn::Zero(di);
  const uint8_t* w = a.w;
  const uint8_t* xq = a.x;
  for (int64_t g = 0; g < G; ++g, w += a.rec, xq += 4 * XR) {
    VI wv[NT];
    for (int t = 0; t < NT; ++t)
      wv[t] = hn::BitCast(di, hn::LoadU(du, reinterpret_cast<const uint32_t*>(w + t * 4 * L)));
    for (int r = 0; r < MR; ++r) {
      const VI xv = hn::Set(di, load_i32(xq + 4 * r));
      for (int t = 0; t < NT; ++t) acc[r][t] = Dot::s8(acc[r][t], wv[t], xv);
    }
  }
  const float* xs = reinterpret_cast<const float*>(a.x + a.xp->d_off);
  const int32_t* xsum = reinterpret_cast<const int32_t*>(a.x + a.xp->sum_off);
  for (int r = 0; r < MR; ++r) {
    const int32_t corr =
        Dot::kBiased ? static_cast<int32_t>(static_cast<uint32_t>(xsum[r]) * 128u) : 0;
    const VF vxs = hn::Set(df, xs[r]);
    for (int t = 0; t < NT; ++t) {
      const VF v = hn::ConvertTo(df, hn::Sub(acc[r][t], hn::Set(di, corr)));
      hn::Store(hn::Mul(hn::Mul(v, vxs), hn::LoadU(df, a.wscale + t * L)), df,
                a.out + (r * NT + t) * L);
    }
  }
}

// v shifted left by S bits (right by -S) within u32 lanes.
template <int S>
LAYA_MI_ATTR HWY_INLINE VU shift_bits(VU v) {
  if constexpr (S > 0) {
    return hn::ShiftLeft<S>(v);
  } else if constexpr (S < 0) {
    return hn::ShiftRight<-S>(v);
  } else {
    return v;
  }
}

// q5 group-of-4 H of one tile: u8 weights in [0, 31] of elements 4H + j (lo) and 16 + 4H + j (hi)
// from the nibble vector v and the tile's 5th-bit vector hb (bit 2H / 2H + 1 of each byte, the
// module comment), each bit moved to bit 4 of its own byte.
template <int H>
LAYA_MI_ATTR HWY_INLINE void q5_unpack(VU v, VU hb, VI* lo, VI* hi) {
  const DI di;
  const DU du;
  const VU m4 = hn::Set(du, 0x0F0F0F0Fu), m10 = hn::Set(du, 0x10101010u);
  *lo = hn::BitCast(di, hn::Or(hn::And(v, m4), hn::And(shift_bits<4 - 2 * H>(hb), m10)));
  *hi = hn::BitCast(
      di, hn::Or(hn::And(hn::ShiftRight<4>(v), m4), hn::And(shift_bits<3 - 2 * H>(hb), m10)));
}

// q5 GEMV (XR == 1), group-of-4 H of record q for NT tiles (5th bits hb[t]): acc += the dot of
// both halves with x (kBlkI16: int16 pmaddubsw sums, else int32).
template <int MR, int NT, int XR, int H>
LAYA_MI_ATTR HWY_INLINE void q5_group(const MicroArgs& a, const uint8_t* q, const uint8_t* xq,
                                      const VU (&hb)[NT], VI (&acc)[MR][NT]) {
  const DI di;
  const DU du;
  const int64_t L = lanes();
  VI lo[NT], hi[NT];
  for (int t = 0; t < NT; ++t) {
    const VU v =
        hn::LoadU(du, reinterpret_cast<const uint32_t*>(q + (H + 1) * a.gstep + t * 4 * L));
    q5_unpack<H>(v, hb[t], &lo[t], &hi[t]);
  }
  for (int r = 0; r < MR; ++r) {
    const VI xlo = hn::Set(di, load_i32(xq + (H * XR + r) * 4));
    const VI xhi = hn::Set(di, load_i32(xq + ((H + 4) * XR + r) * 4));
    for (int t = 0; t < NT; ++t) {
      if constexpr (kBlkI16) {
        acc[r][t] = Dot::kacc(Dot::kacc(acc[r][t], lo[t], xlo), hi[t], xhi);
      } else {
        acc[r][t] = Dot::nib(Dot::nib(acc[r][t], lo[t], xlo), hi[t], xhi);
      }
    }
  }
}

// Block types: per block b, isum = exact int32 dot; out += (d_w * d_x) * isum (+ m_w * s_x:
// q4_1, q5_1). q5 GEMMs (XR > 1) read records expanded to one u8 per element (q5_expand).
template <WType T, int MR, int NT, int XR>
LAYA_MI_ATTR void micro_blk(const MicroArgs& a) {
  const DI di;
  const DU du;
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  const int64_t L = lanes();
  const int64_t nb = a.geo->kb;
  const float* xd = reinterpret_cast<const float*>(a.x + a.xp->d_off);
  const int32_t* xsum = reinterpret_cast<const int32_t*>(a.x + a.xp->sum_off);
  const float* xs1 = reinterpret_cast<const float*>(a.x + a.xp->s_off);
  VF facc[MR][NT];
  for (int r = 0; r < MR; ++r)
    for (int t = 0; t < NT; ++t)
      facc[r][t] = a.accumulate ? hn::LoadU(df, a.out + (r * NT + t) * L) : hn::Zero(df);
  const VU nib_mask = hn::Set(du, 0x0F0F0F0Fu);
  const VI ones16 = hn::Set(di, 0x00010001);  // pmaddwd by 1: int16 pair sums -> int32
  for (int64_t b = 0; b < nb; ++b, xd += XR, xsum += XR, xs1 += XR) {
    const uint8_t* xq = a.x + b * (kQK * XR);  // group-of-4 g of row r at xq + (g * XR + r) * 4
    VI iacc[MR][NT];
    for (int r = 0; r < MR; ++r) {
      int32_t init = 0;
      if constexpr (T == WType::kQ4_0) init = -8 * xsum[r];
      if constexpr (T == WType::kQ5_0) init = -16 * xsum[r];
      if constexpr (T == WType::kQ8_0 && Dot::kBiased && !kQ8Signed) init = -128 * xsum[r];
      for (int t = 0; t < NT; ++t) iacc[r][t] = hn::Set(di, init);
    }
    const uint8_t* q = a.w + b * a.rec;
    // GEMV: the group stream kPrefetchBlk ahead, the record's lines spread over the steps of its
    // loop (q8_0, q4: slice i of n before step i; q5: all before). A burst per record measured
    // ~3 points of the read probe slower for q8_0 (docs/kernels.md), the same for q4.
    [[maybe_unused]] const int64_t pf_lines = (a.rec + 63) / 64;
    auto pf_slice = [&](int i, int n) {
      if constexpr (XR == 1 && kPrefetchBlk > 0)
        if (a.sw_prefetch)
          for (int64_t l = i * pf_lines / n; l < (i + 1) * pf_lines / n; ++l)
            hwy::Prefetch(q + kPrefetchBlk + 64 * l);
    };
    if constexpr (kQ5<T>) pf_slice(0, 1);
    if constexpr (T == WType::kQ8_0) {
      for (int g = 0; g < 8; ++g) {
        pf_slice(g, 8);
        VI wv[NT];
        for (int t = 0; t < NT; ++t) {
          const uint8_t* p = q + g * a.gstep + t * 4 * L;
          wv[t] = hn::BitCast(di, hn::LoadU(du, reinterpret_cast<const uint32_t*>(p)));
        }
        for (int r = 0; r < MR; ++r) {
          const VI xv = hn::Set(di, load_i32(xq + (g * XR + r) * 4));
          for (int t = 0; t < NT; ++t) iacc[r][t] = Dot::q8(iacc[r][t], wv[t], xv);
        }
      }
    } else if constexpr (kQ5<T> && XR == 1) {
      // The packed record: the tiles' 5th-bit vectors, then q4's nibbles (4 groups).
      VU hb[NT];
      for (int t = 0; t < NT; ++t)
        hb[t] = hn::LoadU(du, reinterpret_cast<const uint32_t*>(q + t * 4 * L));
      if constexpr (kBlkI16) {
        // two groups-of-4 (4 pmaddubsw) per int16 sum: <= 4 * 2 * 31 * 127 = 31496
        VI acc[MR][NT];
        for (int r = 0; r < MR; ++r)
          for (int t = 0; t < NT; ++t) acc[r][t] = hn::Zero(di);
        q5_group<MR, NT, XR, 0>(a, q, xq, hb, acc);
        q5_group<MR, NT, XR, 1>(a, q, xq, hb, acc);
        for (int r = 0; r < MR; ++r) {
          for (int t = 0; t < NT; ++t) {
            iacc[r][t] = Dot::kfinish(iacc[r][t], acc[r][t], ones16);
            acc[r][t] = hn::Zero(di);
          }
        }
        q5_group<MR, NT, XR, 2>(a, q, xq, hb, acc);
        q5_group<MR, NT, XR, 3>(a, q, xq, hb, acc);
        for (int r = 0; r < MR; ++r)
          for (int t = 0; t < NT; ++t) iacc[r][t] = Dot::kfinish(iacc[r][t], acc[r][t], ones16);
      } else {
        q5_group<MR, NT, XR, 0>(a, q, xq, hb, iacc);
        q5_group<MR, NT, XR, 1>(a, q, xq, hb, iacc);
        q5_group<MR, NT, XR, 2>(a, q, xq, hb, iacc);
        q5_group<MR, NT, XR, 3>(a, q, xq, hb, iacc);
      }
    } else if constexpr (kBlkI16 && kQ5<T>) {
      // Expanded u8 q in [0, 31]: two halves of 4 groups summed in int16 (<= 4 * 2 * 31 * 127)
      for (int half = 0; half < 2; ++half) {
        VI acc[MR][NT];
        for (int r = 0; r < MR; ++r)
          for (int t = 0; t < NT; ++t) acc[r][t] = hn::Zero(di);
        for (int g = 4 * half; g < 4 * half + 4; ++g) {
          VI wv[NT];
          for (int t = 0; t < NT; ++t) {
            const uint8_t* p = q + g * a.gstep + t * 4 * L;
            wv[t] = hn::BitCast(di, hn::LoadU(du, reinterpret_cast<const uint32_t*>(p)));
          }
          for (int r = 0; r < MR; ++r) {
            const VI xv = hn::Set(di, load_i32(xq + (g * XR + r) * 4));
            for (int t = 0; t < NT; ++t) acc[r][t] = Dot::kacc(acc[r][t], wv[t], xv);
          }
        }
        for (int r = 0; r < MR; ++r)
          for (int t = 0; t < NT; ++t) iacc[r][t] = Dot::kfinish(iacc[r][t], acc[r][t], ones16);
      }
    } else if constexpr (kQ5<T>) {  // expanded u8 q in [0, 31]
      for (int g = 0; g < 8; ++g) {
        VI wv[NT];
        for (int t = 0; t < NT; ++t) {
          const uint8_t* p = q + g * a.gstep + t * 4 * L;
          wv[t] = hn::BitCast(di, hn::LoadU(du, reinterpret_cast<const uint32_t*>(p)));
        }
        for (int r = 0; r < MR; ++r) {
          const VI xv = hn::Set(di, load_i32(xq + (g * XR + r) * 4));
          for (int t = 0; t < NT; ++t) iacc[r][t] = Dot::nib(iacc[r][t], wv[t], xv);
        }
      }
    } else if constexpr (kBlkI16) {
      // q4: the whole block's 8 groups summed in int16 (<= 8 * 2 * 15 * 127 = 30480)
      VI acc[MR][NT];
      for (int r = 0; r < MR; ++r)
        for (int t = 0; t < NT; ++t) acc[r][t] = hn::Zero(di);
      for (int h = 0; h < 4; ++h) {
        pf_slice(h, 4);
        VI lo[NT], hi[NT];
        for (int t = 0; t < NT; ++t) {
          const uint8_t* p = q + h * a.gstep + t * 4 * L;
          const VU v = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
          lo[t] = hn::BitCast(di, hn::And(v, nib_mask));
          hi[t] = hn::BitCast(di, hn::And(hn::ShiftRight<4>(v), nib_mask));
        }
        for (int r = 0; r < MR; ++r) {
          const VI xlo = hn::Set(di, load_i32(xq + (h * XR + r) * 4));
          const VI xhi = hn::Set(di, load_i32(xq + ((h + 4) * XR + r) * 4));
          for (int t = 0; t < NT; ++t)
            acc[r][t] = Dot::kacc(Dot::kacc(acc[r][t], lo[t], xlo), hi[t], xhi);
        }
      }
      for (int r = 0; r < MR; ++r)
        for (int t = 0; t < NT; ++t) iacc[r][t] = Dot::kfinish(iacc[r][t], acc[r][t], ones16);
    } else {
      for (int h = 0; h < 4; ++h) {
        pf_slice(h, 4);
        VI lo[NT], hi[NT];
        for (int t = 0; t < NT; ++t) {
          const uint8_t* p = q + h * a.gstep + t * 4 * L;
          const VU v = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
          lo[t] = hn::BitCast(di, hn::And(v, nib_mask));
          hi[t] = hn::BitCast(di, hn::And(hn::ShiftRight<4>(v), nib_mask));
        }
        for (int r = 0; r < MR; ++r) {
          const VI xlo = hn::Set(di, load_i32(xq + (h * XR + r) * 4));
          const VI xhi = hn::Set(di, load_i32(xq + ((h + 4) * XR + r) * 4));
          for (int t = 0; t < NT; ++t)
            iacc[r][t] = Dot::nib(Dot::nib(iacc[r][t], lo[t], xlo), hi[t], xhi);
        }
      }
    }
    VF sd[NT], sm[NT];
    for (int t = 0; t < NT; ++t) {
      const int64_t off = b * a.rec + t * 2 * L;
      sd[t] = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(a.wd + off)));
      if constexpr (kHasMin<T>)
        sm[t] =
            hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(a.wm + off)));
    }
    for (int r = 0; r < MR; ++r) {
      const VF vxd = hn::Set(df, xd[r]);
      for (int t = 0; t < NT; ++t)
        facc[r][t] = hn::MulAdd(hn::ConvertTo(df, iacc[r][t]), hn::Mul(sd[t], vxd), facc[r][t]);
      if constexpr (kHasMin<T>) {
        const VF vxs = hn::Set(df, xs1[r]);
        for (int t = 0; t < NT; ++t) facc[r][t] = hn::MulAdd(sm[t], vxs, facc[r][t]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int t = 0; t < NT; ++t) hn::Store(facc[r][t], df, a.out + (r * NT + t) * L);
}

// K-quants. A "unit" is two sub-blocks whose quants come from the same loads: q4_K / q5_K unit u
// = sub-blocks 2u (low nibbles of qs[32u..]) and 2u + 1 (high nibbles), 8 groups of 4; q6_K unit u
// (h = u / 4, gq = u / 2 % 2, sp = u % 2) = sub-blocks 8h + 2sp + gq (low nibbles of ql, qh bits
// 2sp) and that + 4 (high nibbles, qh bits 2sp + 4), 4 groups of 4.
template <WType T>
struct KUnit {
  static constexpr int kUnits = T == WType::kQ6_K ? 8 : 4;
  static constexpr int kGroups = T == WType::kQ6_K ? 4 : 8;
  // Groups summed in int16 (pmaddubsw pairs <= 2 * 63 * 127 = 16002 never saturate; the adds
  // wrap, so only each chunk's exact sum must fit int16): q4_K 8 * 2 * 15 * 127 = 30480, q5_K
  // 4 * 2 * 31 * 127 = 31496, q6_K a sub-block's 4 groups: started at -32 * its x pair sums
  // (kq_init), the sum is that of (q - 32) * x, |.| <= 4 * 2 * 32 * 127 = 32512.
  static constexpr int kChunk = T == WType::kQ4_K ? 8 : 4;
  template <int U>
  static constexpr int j_lo() {
    return T == WType::kQ6_K ? 8 * (U / 4) + 2 * (U % 2) + U / 2 % 2 : 2 * U;
  }
  template <int U>
  static constexpr int j_hi() {
    return T == WType::kQ6_K ? j_lo<U>() + 4 : 2 * U + 1;
  }
  // Group-of-4 index (in the super-block's 64) of x for group g of the unit's two sub-blocks.
  template <int U>
  static constexpr int x_lo(int g) {
    return T == WType::kQ6_K ? 32 * (U / 4) + 8 * (U % 2) + 4 * (U / 2 % 2) + g : 16 * U + g;
  }
  template <int U>
  static constexpr int x_hi(int g) {
    return T == WType::kQ6_K ? x_lo<U>(g) + 16 : 16 * U + 8 + g;
  }
};

// The two weight vectors (low and high sub-block) of group g of unit U for tile t: u8 quants
// (q6_K: q in [0, 63], its -32 in kq_init). q = a.w + b * a.rec (the record).
template <WType T, int U>
LAYA_MI_ATTR HWY_INLINE void kq_unpack(const MicroArgs& a, const uint8_t* q, int g, int t, VI* lo,
                                       VI* hi) {
  const DI di;
  const DU du;
  const int64_t L = lanes();
  auto load = [&](int gr) {  // group-of-4 gr of the column's quant bytes (stored at kq_row)
    return hn::LoadU(du,
                     reinterpret_cast<const uint32_t*>(q + kq_row<T>(gr) * a.gstep + t * 4 * L));
  };
  const VU m4 = hn::Set(du, 0x0F0F0F0Fu);
  if constexpr (T == WType::kQ6_K) {
    constexpr int h = U / 4, gq = U / 2 % 2, sp = U % 2;
    const int l4 = 4 * gq + g;
    const VU ql = load(16 * h + 8 * sp + l4);  // ql[64h + 32sp + 4 l4]
    const VU qh = load(32 + 8 * h + l4);       // qh[32h + 4 l4]
    const VU m30 = hn::Set(du, 0x30303030u);
    *lo = hn::BitCast(di, hn::Or(hn::And(ql, m4), hn::And(hn::ShiftLeft<4 - 2 * sp>(qh), m30)));
    *hi = hn::BitCast(
        di, hn::Or(hn::And(hn::ShiftRight<4>(ql), m4), hn::And(hn::ShiftRight<2 * sp>(qh), m30)));
  } else {
    constexpr int kQs = T == WType::kQ5_K ? 8 : 0;  // q5_K: the qh groups come first
    const VU v = load(kQs + 8 * U + g);
    VU wl = hn::And(v, m4), wh = hn::And(hn::ShiftRight<4>(v), m4);
    if constexpr (T == WType::kQ5_K) {  // bit 2U (low) / 2U + 1 (high) of qh[4g ..] -> bit 4
      const VU hb = load(g);
      const VU m10 = hn::Set(du, 0x10101010u);
      if constexpr (2 * U <= 4) {
        wl = hn::Or(wl, hn::And(hn::ShiftLeft<4 - 2 * U>(hb), m10));
      } else {
        wl = hn::Or(wl, hn::And(hn::ShiftRight<2 * U - 4>(hb), m10));
      }
      if constexpr (2 * U + 1 <= 4) {
        wh = hn::Or(wh, hn::And(hn::ShiftLeft<3 - 2 * U>(hb), m10));
      } else {
        wh = hn::Or(wh, hn::And(hn::ShiftRight<2 * U - 3>(hb), m10));
      }
    }
    *lo = hn::BitCast(di, wl);
    *hi = hn::BitCast(di, wh);
  }
}

// Sub-block scale vector (per column) of sub-block j for tile t, in Dot::kscale form.
template <WType T>
LAYA_MI_ATTR HWY_INLINE VI kq_scale(const MicroArgs& a, int64_t b, int j, int t) {
  const DI di;
  const int64_t L = lanes();
  const uint8_t* p = a.wsc + b * a.rec + t * kKSub<T> * L + j * L;
#if HWY_TARGET == HWY_AVX2
  if constexpr (Dot::kI16) return kscale8<T == WType::kQ6_K>(p);
#endif
  if constexpr (T == WType::kQ6_K) {
    const hn::Rebind<int8_t, DI> d8;
    return Dot::kscale(hn::PromoteTo(di, hn::LoadU(d8, reinterpret_cast<const int8_t*>(p))));
  } else {
    const hn::Rebind<uint8_t, DI> d8;
    return Dot::kscale(hn::PromoteTo(di, hn::LoadU(d8, p)));
  }
}

// Start of a chunk's sum of sub-block j for row r: 0, or (q6_K) -32 * its x values' sum (int16
// policies: per int16 half, the pair sums of the XPanel's s; otherwise xsum_j).
template <WType T, int XR>
LAYA_MI_ATTR HWY_INLINE VI kq_init(const MicroArgs& a, int64_t b, int j, int r) {
  const DI di;
  if constexpr (T == WType::kQ6_K) {
    const int64_t at = (b * kKSub<T> + j) * XR + r;
    if constexpr (Dot::kI16)
      return hn::Set(di, reinterpret_cast<const int32_t*>(a.x + a.xp->s_off)[at]);
    return hn::Set(di, -32 * reinterpret_cast<const int32_t*>(a.x + a.xp->sum_off)[at]);
  }
  (void)a, (void)b, (void)j, (void)r;
  return hn::Zero(di);
}

// One unit: accumulates its two sub-blocks' scaled dots into iacc.
template <WType T, int MR, int NT, int XR, int U>
LAYA_MI_ATTR HWY_INLINE void kq_unit(const MicroArgs& a, int64_t b, const uint8_t* q,
                                     const uint8_t* xq, VI (&iacc)[MR][NT]) {
  using K = KUnit<T>;
  static_assert(T != WType::kQ6_K || K::kChunk == K::kGroups, "kq_init starts whole sub-blocks");
  const DI di;
  // GEMV: this unit's share of the record (pf_lines 64-byte lines), kPrefetchK ahead, spread
  // over its groups (docs/kernels.md: all at the unit's start kept fewer lines in flight).
  [[maybe_unused]] const int64_t pf_lines = (a.rec / K::kUnits + 63) / 64;
  [[maybe_unused]] const uint8_t* pf = q + kPrefetchK + U * 64 * pf_lines;
  constexpr int jl = K::template j_lo<U>(), jh = K::template j_hi<U>();
  VI sl[NT], sh[NT];  // the two sub-blocks' scales, once per unit
  for (int t = 0; t < NT; ++t) {
    sl[t] = kq_scale<T>(a, b, jl, t);
    sh[t] = kq_scale<T>(a, b, jh, t);
  }
  VI alo[MR][NT], ahi[MR][NT];
  for (int r = 0; r < MR; ++r) {
    const VI il = kq_init<T, XR>(a, b, jl, r), ih = kq_init<T, XR>(a, b, jh, r);
    for (int t = 0; t < NT; ++t) {
      alo[r][t] = il;
      ahi[r][t] = ih;
    }
  }
  for (int g = 0; g < K::kGroups; ++g) {
    if constexpr (XR == 1 && kPrefetchK > 0)
      if (a.sw_prefetch)
        for (int64_t l = g * pf_lines / K::kGroups; l < (g + 1) * pf_lines / K::kGroups; ++l)
          hwy::Prefetch(pf + 64 * l);
    // x broadcasts first, then one tile's two weight vectors at a time (few live registers).
    VI xl[MR], xh[MR];
    for (int r = 0; r < MR; ++r) {
      xl[r] = hn::Set(di, load_i32(xq + (K::template x_lo<U>(g) * XR + r) * 4));
      xh[r] = hn::Set(di, load_i32(xq + (K::template x_hi<U>(g) * XR + r) * 4));
    }
    for (int t = 0; t < NT; ++t) {
      VI wl, wh;
      kq_unpack<T, U>(a, q, g, t, &wl, &wh);
      for (int r = 0; r < MR; ++r) {
        alo[r][t] = Dot::template kacc<kPinOutFor<XR>>(alo[r][t], wl, xl[r]);
        ahi[r][t] = Dot::template kacc<kPinOutFor<XR>>(ahi[r][t], wh, xh[r]);
      }
    }
    if ((g + 1) % K::kChunk == 0) {
      for (int t = 0; t < NT; ++t) {
        for (int r = 0; r < MR; ++r) {
          iacc[r][t] = Dot::kfinish(Dot::kfinish(iacc[r][t], alo[r][t], sl[t]), ahi[r][t], sh[t]);
          alo[r][t] = ahi[r][t] = hn::Zero(di);
        }
      }
    }
  }
}

template <WType T, int MR, int NT, int XR, int... U>
LAYA_MI_ATTR HWY_INLINE void kq_units(const MicroArgs& a, int64_t b, const uint8_t* q,
                                      const uint8_t* xq, VI (&iacc)[MR][NT],
                                      std::integer_sequence<int, U...>) {
  (kq_unit<T, MR, NT, XR, U>(a, b, q, xq, iacc), ...);
}

// K-quants: per super-block b, isum (exact int32, see the module comment) and (q4_K / q5_K)
// msum = sum_j m_j * xsum_j; out += (d_w * d_x) * isum (+ (-(dmin_w * d_x)) * msum).
template <WType T, int MR, int NT, int XR>
LAYA_MI_ATTR void micro_kq(const MicroArgs& a) {
  const DI di;
  const DF df;
  const hn::Rebind<hwy::float16_t, DF> dh;
  constexpr int kSub = kKSub<T>;
  const int64_t L = lanes();
  const int64_t nb = a.geo->kb;
  const float* xd = reinterpret_cast<const float*>(a.x + a.xp->d_off);
  const int32_t* xsum = reinterpret_cast<const int32_t*>(a.x + a.xp->sum_off);
  VF facc[MR][NT];
  for (int r = 0; r < MR; ++r)
    for (int t = 0; t < NT; ++t) facc[r][t] = hn::Zero(df);
  for (int64_t b = 0; b < nb; ++b, xd += XR) {
    const uint8_t* q = a.w + b * a.rec;
    if constexpr (XR == 1) {
      // GEMV left to the hardware prefetchers: the side (a.wd of record b .. its quants at q)
      // requested in address order before the quants, so the d, dmin and mins read after them
      // are hits, not a read going back. (The software stream already covers it.)
      if (!a.sw_prefetch)
        for (const uint8_t* l = a.wd + b * a.rec; l < q; l += 64) hwy::Prefetch(l);
    }
    const uint8_t* xq = a.x + b * (kQK_K * XR);  // group-of-4 e4 of row r at xq + (e4 XR + r) 4
    VI iacc[MR][NT];
    for (int r = 0; r < MR; ++r)
      for (int t = 0; t < NT; ++t) iacc[r][t] = hn::Zero(di);
    kq_units<T, MR, NT, XR>(a, b, q, xq, iacc, std::make_integer_sequence<int, KUnit<T>::kUnits>());
    VI macc[MR][NT];
    if constexpr (T != WType::kQ6_K) {
      // msum via pmaddwd: min pairs (m_2i, m_2i+1) per column times (xsum_2i, xsum_2i+1) per row
      // (|xsum| <= 32 * 127 fits int16).
      const int32_t* xs = xsum + b * kSub * XR;  // sub-block j of row r at xs[j XR + r]
      for (int r = 0; r < MR; ++r)
        for (int t = 0; t < NT; ++t) macc[r][t] = hn::Zero(di);
      for (int i = 0; i < 4; ++i) {
        VI mp[NT];
        for (int t = 0; t < NT; ++t) {
          const uint8_t* p = a.wmn + b * a.rec + t * 8 * L + i * 2 * L;
#if HWY_TARGET == HWY_SCALAR
          mp[t] = hn::Set(di, static_cast<int32_t>(p[0] | (uint32_t{p[1]} << 16)));
#else
          const hn::Repartition<uint16_t, DI> d16;  // 2L u16 = L (m_2i, m_2i+1) pairs
          const hn::Rebind<uint8_t, decltype(d16)> d8;
          mp[t] = hn::BitCast(di, hn::PromoteTo(d16, hn::LoadU(d8, p)));
#endif
        }
        for (int r = 0; r < MR; ++r) {
          const uint32_t pair = (static_cast<uint32_t>(xs[2 * i * XR + r]) & 0xffffu) |
                                (static_cast<uint32_t>(xs[(2 * i + 1) * XR + r]) << 16);
          const VI xp = hn::Set(di, static_cast<int32_t>(pair));
          for (int t = 0; t < NT; ++t) macc[r][t] = hn::Add(macc[r][t], Dot::madd16(mp[t], xp));
        }
      }
    }
    for (int t = 0; t < NT; ++t) {
      const int64_t off = b * a.rec + t * 2 * L;
      const VF sd =
          hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(a.wd + off)));
      VF sm = hn::Zero(df);
      if constexpr (T != WType::kQ6_K)
        sm = hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(a.wm + off)));
      for (int r = 0; r < MR; ++r) {
        const VF vxd = hn::Set(df, xd[r]);
        facc[r][t] = hn::MulAdd(hn::ConvertTo(df, iacc[r][t]), hn::Mul(sd, vxd), facc[r][t]);
        if constexpr (T != WType::kQ6_K)
          facc[r][t] =
              hn::MulAdd(hn::ConvertTo(df, macc[r][t]), hn::Neg(hn::Mul(sm, vxd)), facc[r][t]);
      }
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int t = 0; t < NT; ++t) hn::Store(facc[r][t], df, a.out + (r * NT + t) * L);
}

template <WType T, int MR, int NT, int XR>
LAYA_MI_ATTR void micro(const MicroArgs& a) {
  if constexpr (T == WType::kI8) {
    micro_i8<MR, NT, XR>(a);
  } else if constexpr (kIsK<T>) {
    micro_kq<T, MR, NT, XR>(a);
  } else {
    micro_blk<T, MR, NT, XR>(a);
  }
}

using MicroFn = void (*)(const MicroArgs&);

// fn[mr - 1][nt - 1] = micro<T, mr, nt, MRMax>.
template <WType T, int MRMax, int NTMax>
struct MicroTable {
  MicroFn fn[MRMax][NTMax] = {};
  constexpr MicroTable() { fill<0>(); }
  template <int I>
  constexpr void fill() {
    if constexpr (I < MRMax * NTMax) {
      fn[I / NTMax][I % NTMax] = &micro<T, I / NTMax + 1, I % NTMax + 1, MRMax>;
      fill<I + 1>();
    }
  }
};

// Everything one run() call shares with its workers.
struct Ctx {
  const uint8_t* w;
  const Geometry* geo;
  const uint8_t* xq;
  const XPanel* xp;
  float* y;
  int64_t ldy;
  const float* bias;
  int64_t m, n;
  bool sw_prefetch = true;  // GEMV: MicroArgs::sw_prefetch
};

// Work items [b, e) of a run: item i covers column panel i / n_chunks (NTMax tiles of a packed
// group; kP<T> / NTMax panels per group) and rows [(i % n_chunks) * chunk, + chunk), in register
// blocks of up to MRMax rows.
template <WType T, int MRMax, int NTMax>
void run_items(const Ctx& c, int64_t chunk, int64_t n_chunks, int64_t b, int64_t e) {
  static constexpr MicroTable<T, MRMax, NTMax> kTable{};
  constexpr int64_t kPanels = kP<T> / NTMax;  // per group
  HWY_ALIGN float out[MRMax * NTMax * hn::MaxLanes(DF())];
  const Geometry& geo = *c.geo;
  const int64_t L = geo.L;
  const float* wscale =
      T == WType::kI8 ? reinterpret_cast<const float*>(c.w + geo.scales_off) : nullptr;
  for (int64_t item = b; item < e; ++item) {
    const int64_t panel = item / n_chunks;
    const int64_t g = panel / kPanels, i0 = panel % kPanels * NTMax;
    const int64_t p = geo.group_tiles(g);
    if (i0 >= p) continue;  // past the last tile of a partial group
    const int64_t nt = std::min<int64_t>(NTMax, p - i0);
    const int64_t col0 = (g * kP<T> + i0) * L;
    const int64_t ncols = std::min(nt * L, c.n - col0);
    const uint8_t* grp = geo.group(c.w, g);
    MicroArgs a;
    // Block types: quants, then the side; K-quants: the side, then the quants.
    const uint8_t* quants = grp + (kIsK<T> ? p * geo.sb : 0);
    const uint8_t* side = grp + (kIsK<T> ? 0 : p * geo.qb);
    a.w = quants + i0 * 4 * L;
    a.gstep = p * 4 * L;
    a.wd = side + i0 * 2 * L;
    a.wm = side + p * 2 * L + i0 * 2 * L;
    a.wsc = side + p * 2 * geo.nf16 * L + i0 * geo.nsub * L;
    a.wmn = side + p * (2 * geo.nf16 + geo.nsub) * L + i0 * geo.nmin * L;
    a.sw_prefetch = c.sw_prefetch;
    a.rec = geo.record(g);
    a.geo = &geo;
    a.xp = c.xp;
    a.wscale = wscale != nullptr ? wscale + col0 : nullptr;
    a.out = out;
    const int64_t r_end = std::min(c.m, (item % n_chunks + 1) * chunk);
    for (int64_t r = (item % n_chunks) * chunk; r < r_end; r += MRMax) {
      const int64_t mr = std::min<int64_t>(MRMax, r_end - r);
      a.x = c.xq + r / MRMax * c.xp->stride;  // r % MRMax == 0
      kTable.fn[mr - 1][nt - 1](a);
      store_block(out, nt * L, mr, c.y + r * c.ldy, c.ldy, c.bias, col0, ncols);
    }
  }
}

// q5 GEMM: expands blocks [b0, b0 + nbs) of nt tiles (a: the packed group's view, as run_items
// sets it) to one u8 per element at dst + b * xrec, xrec = nt * (32 + 2 nf16) L: quants
// [8 groups of 4][nt][L][4] (group g = elements 4g .. 4g + 3, what micro_blk's XR > 1 paths
// read), then f16 d [nt][L] and (q5_1) m [nt][L].
template <WType T, int H>
LAYA_MI_ATTR HWY_INLINE void q5_expand_group(const uint8_t* q, int64_t gstep, int64_t nt, int t,
                                             VU hb, uint8_t* o) {
  const DI di;
  const DU du;
  const int64_t L = lanes();
  VI lo, hi;
  q5_unpack<H>(hn::LoadU(du, reinterpret_cast<const uint32_t*>(q + (H + 1) * gstep + t * 4 * L)),
               hb, &lo, &hi);
  hn::StoreU(lo, di, reinterpret_cast<int32_t*>(o + (H * nt + t) * 4 * L));
  hn::StoreU(hi, di, reinterpret_cast<int32_t*>(o + ((H + 4) * nt + t) * 4 * L));
}

template <WType T>
LAYA_MI_ATTR void q5_expand(const MicroArgs& a, int64_t nt, int64_t b0, int64_t nbs, uint8_t* dst) {
  const DU du;
  const hn::Rebind<uint16_t, DU> d16;  // one f16 per column
  const int64_t L = lanes();
  constexpr int64_t kNf16 = kHasMin<T> ? 2 : 1;
  const int64_t xrec = nt * (32 + 2 * kNf16) * L;
  for (int64_t b = 0; b < nbs; ++b) {
    const uint8_t* q = a.w + (b0 + b) * a.rec;
    uint8_t* o = dst + b * xrec;
    for (int t = 0; t < nt; ++t) {
      const VU hb = hn::LoadU(du, reinterpret_cast<const uint32_t*>(q + t * 4 * L));
      q5_expand_group<T, 0>(q, a.gstep, nt, t, hb, o);
      q5_expand_group<T, 1>(q, a.gstep, nt, t, hb, o);
      q5_expand_group<T, 2>(q, a.gstep, nt, t, hb, o);
      q5_expand_group<T, 3>(q, a.gstep, nt, t, hb, o);
    }
    for (int t = 0; t < nt; ++t) {  // d (and m) of the tiles, L f16 each
      const int64_t off = (b0 + b) * a.rec + t * 2 * L;
      hn::StoreU(hn::LoadU(d16, reinterpret_cast<const uint16_t*>(a.wd + off)), d16,
                 reinterpret_cast<uint16_t*>(o + nt * 32 * L + t * 2 * L));
      if constexpr (kHasMin<T>)
        hn::StoreU(hn::LoadU(d16, reinterpret_cast<const uint16_t*>(a.wm + off)), d16,
                   reinterpret_cast<uint16_t*>(o + nt * 34 * L + t * 2 * L));
    }
  }
}

// Most blocks of a column panel expanded at a time by a q5 GEMM.
inline constexpr int64_t kQ5Slice = 24;

// q5 GEMM items (as run_items, chunk <= 32 * MRMax rows): the item's column panel is expanded in
// equal slices of at most kQ5Slice blocks (q5_expand), each once and read by all of the item's
// row blocks, whose results accumulate in `acc` over the slices.
template <WType T, int MRMax, int NTMax>
void run_items_q5x(const Ctx& c, int64_t chunk, int64_t n_chunks, int64_t b, int64_t e) {
  static constexpr MicroTable<T, MRMax, NTMax> kTable{};
  constexpr int64_t kPanels = kP<T> / NTMax;  // per group
  constexpr int64_t kMaxL = hn::MaxLanes(DF());
  HWY_ALIGN uint8_t xw[kQ5Slice * NTMax * 36 * kMaxL];
  HWY_ALIGN float acc[32 * MRMax * NTMax * kMaxL];
  const Geometry& geo = *c.geo;
  const int64_t L = geo.L;
  for (int64_t item = b; item < e; ++item) {
    const int64_t panel = item / n_chunks;
    const int64_t g = panel / kPanels, i0 = panel % kPanels * NTMax;
    const int64_t p = geo.group_tiles(g);
    if (i0 >= p) continue;  // past the last tile of a partial group
    const int64_t nt = std::min<int64_t>(NTMax, p - i0);
    const int64_t col0 = (g * kP<T> + i0) * L;
    const int64_t ncols = std::min(nt * L, c.n - col0);
    const uint8_t* grp = geo.group(c.w, g);
    MicroArgs src;
    src.w = grp + i0 * 4 * L;
    src.gstep = p * 4 * L;
    src.wd = grp + p * geo.qb + i0 * 2 * L;
    src.wm = grp + p * geo.qb + p * 2 * L + i0 * 2 * L;
    src.rec = geo.record(g);
    const int64_t r0 = (item % n_chunks) * chunk, r_end = std::min(c.m, r0 + chunk);
    const int64_t n_slices = (geo.kb + kQ5Slice - 1) / kQ5Slice;
    const int64_t slice = (geo.kb + n_slices - 1) / n_slices;
    for (int64_t s0 = 0; s0 < geo.kb; s0 += slice) {
      const int64_t ns = std::min(slice, geo.kb - s0);
      q5_expand<T>(src, nt, s0, ns, xw);
      Geometry gs = geo;
      gs.kb = ns;
      // The panels seen from block s0 on: quants start s0 blocks later, d / sum / s s0 entries.
      const int64_t xshift = s0 * kQK * MRMax;
      XPanel xs = *c.xp;
      xs.d_off += 4 * s0 * MRMax - xshift;
      xs.sum_off += 4 * s0 * MRMax - xshift;
      xs.s_off += 4 * s0 * MRMax - xshift;
      MicroArgs a;
      a.w = xw;
      a.gstep = nt * 4 * L;
      a.wd = xw + nt * 32 * L;
      a.wm = a.wd + nt * 2 * L;
      a.rec = nt * (32 + 2 * geo.nf16) * L;
      a.geo = &gs;
      a.xp = &xs;
      a.accumulate = s0 > 0;
      for (int64_t r = r0; r < r_end; r += MRMax) {
        const int64_t mr = std::min<int64_t>(MRMax, r_end - r);
        a.x = c.xq + r / MRMax * c.xp->stride + xshift;  // r % MRMax == 0
        a.out = acc + (r - r0) * nt * L;
        kTable.fn[mr - 1][nt - 1](a);
      }
    }
    for (int64_t r = r0; r < r_end; r += MRMax) {
      const int64_t mr = std::min<int64_t>(MRMax, r_end - r);
      store_block(acc + (r - r0) * nt * L, nt * L, mr, c.y + r * c.ldy, c.ldy, c.bias, col0, ncols);
    }
  }
}

template <WType T>
void run(const void* packed, const float* x, int64_t ldx, float* y, int64_t ldy, const float* bias,
         int64_t m, int64_t n, int64_t k, void* scratch, const ThreadPool* pool) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  const Geometry geo = geometry<T>(n, k);
  const XPanel xp = x_panel<T>(k, panel_rows<T>(m));
  uint8_t* xq = static_cast<uint8_t*>(scratch);
  parallel_for(pool, m, 4, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r)
      quantize_x<T>(x + r * ldx, k, xq + r / xp.rows * xp.stride, r % xp.rows, xp);
  });
  // q5 and K-quant GEMVs leave the stream to the hardware where that reads faster
  // (hwy_matmul_int::gemv_sw_prefetch).
  const bool sw_prefetch = !(kQ5<T> || kIsK<T>) || hwy_matmul_int::gemv_sw_prefetch();
  const Ctx c{static_cast<const uint8_t*>(packed), &geo, xq, &xp, y, ldy, bias, m, n, sw_prefetch};
  if (m == 1) {  // GEMV: one packed group (one linear stream) per item
    parallel_for(pool, geo.groups, 1,
                 [&](int64_t b, int64_t e) { run_items<T, 1, kP<T>>(c, 1, 1, b, e); });
    return;
  }
  const int64_t panels = geo.groups * (kP<T> / kNT<T>);
  // q5: twice the rows per item, over which each expanded slice is shared (run_items_q5x).
  const int64_t chunk = (kQ5<T> ? 32 : 16) * kMR<T>;
  const int64_t n_chunks = (m + chunk - 1) / chunk;
  if constexpr (kQ5<T>) {
    static_assert(kMR<T> > 1);  // XR > 1: micro_blk reads the expanded records
    parallel_for(pool, panels * n_chunks, 1, [&](int64_t b, int64_t e) {
      run_items_q5x<T, kMR<T>, kNT<T>>(c, chunk, n_chunks, b, e);
    });
  } else {
    parallel_for(pool, panels * n_chunks, 1, [&](int64_t b, int64_t e) {
      run_items<T, kMR<T>, kNT<T>>(c, chunk, n_chunks, b, e);
    });
  }
}

template <WType T>
MatmulKernel make() {
  MatmulKernel kern;
  kern.packed_bytes = packed_bytes<T>;
  kern.pack = pack<T>;
  kern.scratch_bytes = scratch_bytes<T>;
  kern.run = run<T>;
  // Groups of P tiles of L rows, each at a fixed stride (geometry): a stack of whole groups is
  // the groups of the stacked matrix. i8 keeps its scales after the groups, so it does not stack.
  if constexpr (T != WType::kI8) kern.stack_rows = kP<T> * lanes();
  return kern;
}

// Installs family F's types (matmul_int::Family) into t.
template <Family F>
void install(KernelTable& t) {
  auto put = [&t](WType w, MatmulKernel k) { t.matmul[static_cast<int>(w)] = k; };
  if constexpr (F == Family::kBlocks) {
    put(WType::kI8, make<WType::kI8>());
    put(WType::kQ8_0, make<WType::kQ8_0>());
    put(WType::kQ4_0, make<WType::kQ4_0>());
    put(WType::kQ4_1, make<WType::kQ4_1>());
    put(WType::kQ5_0, make<WType::kQ5_0>());
    put(WType::kQ5_1, make<WType::kQ5_1>());
  } else {
    put(WType::kQ4_K, make<WType::kQ4_K>());
    put(WType::kQ5_K, make<WType::kQ5_K>());
    put(WType::kQ6_K, make<WType::kQ6_K>());
  }
}

}  // namespace LAYA_MI_NS
