// Micro-kernels and drivers of the integer matmul family for ONE dot-product policy. No include
// guard: kernels/hwy/matmul_int-inl.h includes it inside laya::kernels::HWY_NAMESPACE once per
// policy (AVX3: VNNI and pmaddubsw; other targets: one), with
//   LAYA_MI_NS    the namespace of this copy
//   LAYA_MI_ATTR  the attribute of every function that may inline the policy (AVX3 VNNI: the
//                 target string plus avx512vnni; otherwise empty)
//   LAYA_MI_DOT   the policy (matmul_int::DotVnni / DotMadd)
// A separate copy per policy keeps the VNNI target attribute away from the fallback's code, so no
// VNNI instruction can reach a CPU without it.

namespace LAYA_MI_NS {

using namespace ::laya::kernels::HWY_NAMESPACE::matmul_int;  // NOLINT
using Dot = LAYA_MI_DOT;

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

// Block types: per block b, isum = exact int32 dot; out += (d_w * d_x) * isum (+ m_w * s_x).
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
    for (int t = 0; t < NT; ++t) facc[r][t] = hn::Zero(df);
  const VU nib_mask = hn::Set(du, 0x0F0F0F0Fu);
  for (int64_t b = 0; b < nb; ++b, xd += XR, xsum += XR, xs1 += XR) {
    const uint8_t* xq = a.x + b * (kQK * XR);  // group-of-4 g of row r at xq + (g * XR + r) * 4
    VI iacc[MR][NT];
    for (int r = 0; r < MR; ++r) {
      int32_t init = 0;
      if constexpr (T == WType::kQ4_0) init = -8 * xsum[r];
      if constexpr (T == WType::kQ8_0 && Dot::kBiased) init = -128 * xsum[r];
      for (int t = 0; t < NT; ++t) iacc[r][t] = hn::Set(di, init);
    }
    const uint8_t* q = a.w + b * a.rec;
    if constexpr (T == WType::kQ8_0) {
      for (int g = 0; g < 8; ++g) {
        VI wv[NT];
        for (int t = 0; t < NT; ++t) {
          const uint8_t* p = q + g * a.gstep + t * 4 * L;
          wv[t] = hn::BitCast(di, hn::LoadU(du, reinterpret_cast<const uint32_t*>(p)));
        }
        for (int r = 0; r < MR; ++r) {
          const VI xv = hn::Set(di, load_i32(xq + (g * XR + r) * 4));
          for (int t = 0; t < NT; ++t) iacc[r][t] = Dot::s8(iacc[r][t], wv[t], xv);
        }
      }
    } else {
      for (int h = 0; h < 4; ++h) {
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
      if constexpr (T == WType::kQ4_1)
        sm[t] =
            hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(a.wm + off)));
    }
    for (int r = 0; r < MR; ++r) {
      const VF vxd = hn::Set(df, xd[r]);
      for (int t = 0; t < NT; ++t)
        facc[r][t] = hn::MulAdd(hn::ConvertTo(df, iacc[r][t]), hn::Mul(sd[t], vxd), facc[r][t]);
      if constexpr (T == WType::kQ4_1) {
        const VF vxs = hn::Set(df, xs1[r]);
        for (int t = 0; t < NT; ++t) facc[r][t] = hn::MulAdd(sm[t], vxs, facc[r][t]);
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
    a.w = grp + i0 * 4 * L;
    a.gstep = p * 4 * L;
    a.wd = grp + p * geo.qb + i0 * 2 * L;
    a.wm = grp + p * geo.qb + p * 2 * L + i0 * 2 * L;
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
  const Ctx c{static_cast<const uint8_t*>(packed), &geo, xq, &xp, y, ldy, bias, m, n};
  if (m == 1) {  // GEMV: one packed group (one linear stream) per item
    parallel_for(pool, geo.groups, 1,
                 [&](int64_t b, int64_t e) { run_items<T, 1, kP<T>>(c, 1, 1, b, e); });
    return;
  }
  constexpr int kMR = T == WType::kI8 ? kMRI8 : kMRB;
  constexpr int kNT = T == WType::kI8 ? kNTI8 : kNTB;
  const int64_t panels = geo.groups * (kP<T> / kNT);
  const int64_t chunk = 16 * kMR;
  const int64_t n_chunks = (m + chunk - 1) / chunk;
  parallel_for(pool, panels * n_chunks, 1,
               [&](int64_t b, int64_t e) { run_items<T, kMR, kNT>(c, chunk, n_chunks, b, e); });
}

template <WType T>
MatmulKernel make() {
  MatmulKernel kern;
  kern.packed_bytes = packed_bytes<T>;
  kern.pack = pack<T>;
  kern.scratch_bytes = scratch_bytes<T>;
  kern.run = run<T>;
  return kern;
}

inline void install(KernelTable& t) {
  t.matmul[static_cast<int>(WType::kI8)] = make<WType::kI8>();
  t.matmul[static_cast<int>(WType::kQ8_0)] = make<WType::kQ8_0>();
  t.matmul[static_cast<int>(WType::kQ4_0)] = make<WType::kQ4_0>();
  t.matmul[static_cast<int>(WType::kQ4_1)] = make<WType::kQ4_1>();
}

}  // namespace LAYA_MI_NS
