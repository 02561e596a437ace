// Attention: the reference against hand-computed cases, then every Highway target against the
// reference over decode / prefill, masks and their combinations, GQA, odd head_dims, strided KV
// caches with a past, head sub-ranges, and a thread pool; then positions and sequence ids: packed
// rows, KV cache cells of several interleaved sequences with empty cells, keys shared by the batch
// rows, and positions at the ends of the int32 range. Every such case runs twice: K / V as f32 and
// as f16 (kv_type kF16, an f16 KV cache; check_both): the values are rounded to f16 first, so the
// f32 bound below holds as is against the reference, which reads the same f16 values.
//
// Tolerance (f32 tiles and online softmax vs the double reference): per call, the largest
// |out - ref| <= 2^-21 (1 + smax) max|v|, where smax = scale max|q_h| max|k_g| bounds the scores
// (an f32 score is off by ~|s| 2^-22, which moves each weight by that relative amount), and
// NMSE <= 1e-11. Outputs outside the requested heads, row padding,
// cache rows at or beyond kv_len (filled with NaN) and scratch beyond attention_scratch_bytes are
// checked untouched / unread.
#include <doctest/doctest.h>

#include <algorithm>
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

namespace {

struct Case {
  int64_t batch = 1, q_len = 1, past = 0;
  int32_t n_heads = 1, n_kv_heads = 1, head_dim = 64;
  bool causal = false;
  int64_t window = -1;
  // 0: no key mask; 1: random zeros; 2: batch row 1 hides every key; 3: hides key 0 only.
  int mask = 0;
  int32_t head_begin = 0, head_end = -1;  // -1: n_heads
  float scale_mul = 1.0f;                 // scale = scale_mul / sqrt(head_dim)
  // Positions and sequence ids (AttentionArgs q_pos ... k_seq):
  //   kNone    default positions, no seq ids
  //   kPos     random positions for queries and keys (no seq ids)
  //   kExtreme positions spread over the whole int32 range (overflow checks)
  //   kPacked  packed rows (q_len == kv_len, past 0): random row lengths, positions restarting per
  //            row, seq id = row; the last `pad` tokens are padding (seq id -1)
  //   kCells   a KV cache: each cell empty (seq -1) or a token of one of n_seq sequences, in
  //            interleaved runs, positions counting per sequence; each query belongs to a random
  //            sequence (or -1) at a random position up to one past that sequence's last
  enum class Ids { kNone, kPos, kExtreme, kPacked, kCells } ids = Ids::kNone;
  int64_t max_row = 64;    // kPacked: longest row
  int64_t pad = 0;         // kPacked: padding tokens at the end
  int32_t n_seq = 2;       // kCells
  bool shared_kv = false;  // one set of keys (batch stride 0) for every batch row
  bool f16 = false;        // K / V stored as f16 (kv_type kF16)
};

std::string describe(const Case& c) {
  return "batch " + std::to_string(c.batch) + " q_len " + std::to_string(c.q_len) + " past " +
         std::to_string(c.past) + " heads " + std::to_string(c.n_heads) + "/" +
         std::to_string(c.n_kv_heads) + " hd " + std::to_string(c.head_dim) + " causal " +
         std::to_string(c.causal) + " window " + std::to_string(c.window) + " mask " +
         std::to_string(c.mask) + " heads [" + std::to_string(c.head_begin) + ", " +
         std::to_string(c.head_end) + ") ids " + std::to_string(static_cast<int>(c.ids)) +
         " max_row " + std::to_string(c.max_row) + " pad " + std::to_string(c.pad) + " n_seq " +
         std::to_string(c.n_seq) + " shared_kv " + std::to_string(c.shared_kv) + " f16 " +
         std::to_string(c.f16);
}

// The buffers of one case: q / out rows padded, K and V in a cache with spare columns and rows.
struct Buffers {
  AttentionArgs a;
  std::vector<float> q, kc, vc, out;
  std::vector<uint16_t> kc16;  // f16: the cache as f16 bits (kc holds the same values as f32)
  std::vector<int32_t> mask, q_pos, k_pos, q_seq, k_seq;
  float vmax = 0;
  const float* v32 = nullptr;  // V as f32 (in kc), whatever kv_type is
  double smax = 0;             // scale * max |q row of a head| * max |k row of a kv head|
};

// Fills q_pos / k_pos / q_seq / k_seq of `c.ids` (rows padded by 1 or 3 entries).
void make_ids(const Case& c, int64_t k_batches, std::mt19937& rng, Buffers& B) {
  AttentionArgs& a = B.a;
  if (c.ids == Case::Ids::kNone) return;
  const int64_t qs = c.q_len + 1, ks = a.kv_len + 3;
  B.q_pos.assign(static_cast<size_t>(c.batch * qs), 0);
  B.k_pos.assign(static_cast<size_t>(k_batches * ks), 0);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX);
  auto unif = [&](int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const bool seq = c.ids == Case::Ids::kPacked || c.ids == Case::Ids::kCells;
  if (seq) {
    B.q_seq.assign(B.q_pos.size(), 0);
    B.k_seq.assign(B.k_pos.size(), 0);
  }
  auto qp = [&](int64_t b, int64_t i) -> int32_t& {
    return B.q_pos[static_cast<size_t>(b * qs + i)];
  };
  auto kp = [&](int64_t b, int64_t j) -> int32_t& {
    return B.k_pos[static_cast<size_t>(b * ks + j)];
  };
  auto qq = [&](int64_t b, int64_t i) -> int32_t& {
    return B.q_seq[static_cast<size_t>(b * qs + i)];
  };
  auto kq = [&](int64_t b, int64_t j) -> int32_t& {
    return B.k_seq[static_cast<size_t>(b * ks + j)];
  };
  for (int64_t b = 0; b < c.batch; ++b) {
    const int64_t kb = c.shared_kv ? 0 : b;
    const bool keys = !c.shared_kv || b == 0;  // shared keys are made once
    switch (c.ids) {
      case Case::Ids::kNone:
        break;
      case Case::Ids::kPos:
        for (int64_t j = 0; keys && j < a.kv_len; ++j)
          kp(kb, j) = static_cast<int32_t>(unif(0, 2 * a.kv_len));
        for (int64_t i = 0; i < c.q_len; ++i)
          qp(b, i) = static_cast<int32_t>(unif(0, 2 * a.kv_len));
        break;
      case Case::Ids::kExtreme:
        for (int64_t j = 0; keys && j < a.kv_len; ++j)
          kp(kb, j) = j % 3 == 0 ? any(rng)
                                 : (j % 3 == 1 ? INT32_MAX - static_cast<int32_t>(j)
                                               : INT32_MIN + static_cast<int32_t>(j));
        for (int64_t i = 0; i < c.q_len; ++i)
          qp(b, i) = i % 2 == 0 ? any(rng)
                                : (i % 4 == 1 ? INT32_MAX - static_cast<int32_t>(i)
                                              : INT32_MIN + static_cast<int32_t>(i));
        break;
      case Case::Ids::kPacked: {
        // Self-attention over packed rows: the same ids for queries and keys.
        int64_t t = 0;
        for (int32_t row = 0; t < c.q_len; ++row) {
          const int64_t len = std::min(c.q_len - t, unif(1, c.max_row));
          for (int64_t i = 0; i < len; ++i, ++t) {
            const bool padding = t >= c.q_len - c.pad;
            qp(b, t) = static_cast<int32_t>(i);
            qq(b, t) = padding ? -1 : row;
            if (keys) {
              kp(kb, t) = qp(b, t);
              kq(kb, t) = qq(b, t);
            }
          }
        }
        break;
      }
      case Case::Ids::kCells: {
        std::vector<int32_t> next(static_cast<size_t>(c.n_seq), 0);
        if (keys) {
          for (int64_t j = 0; j < a.kv_len;) {
            // A run of cells of one sequence (or empty), so tiles are sometimes uniform.
            const int64_t run = unif(1, 40);
            const int32_t s = unif(0, 4) == 0 ? -1 : static_cast<int32_t>(unif(0, c.n_seq - 1));
            for (int64_t r = 0; r < run && j < a.kv_len; ++r, ++j) {
              kq(kb, j) = s;
              kp(kb, j) = s < 0 ? any(rng) : next[static_cast<size_t>(s)]++;
            }
          }
        } else {
          for (int64_t j = 0; j < a.kv_len; ++j)
            if (kq(0, j) >= 0)
              next[static_cast<size_t>(kq(0, j))] =
                  std::max(next[static_cast<size_t>(kq(0, j))], kp(0, j) + 1);
        }
        for (int64_t i = 0; i < c.q_len; ++i) {
          const int32_t s = unif(0, 9) == 0 ? -1 : static_cast<int32_t>(unif(0, c.n_seq - 1));
          qq(b, i) = s;
          qp(b, i) = static_cast<int32_t>(unif(0, s < 0 ? 5 : next[static_cast<size_t>(s)]));
        }
        break;
      }
    }
  }
  a.q_pos = B.q_pos.data();
  a.k_pos = B.k_pos.data();
  a.q_pos_batch_stride = qs;
  a.k_pos_batch_stride = c.shared_kv ? 0 : ks;
  if (seq) {
    a.q_seq = B.q_seq.data();
    a.k_seq = B.k_seq.data();
    a.q_seq_batch_stride = qs;
    a.k_seq_batch_stride = c.shared_kv ? 0 : ks;
  }
}

Buffers make(const Case& c, std::mt19937& rng) {
  Buffers B;
  AttentionArgs& a = B.a;
  const int64_t hd = c.head_dim, kv_len = c.past + c.q_len, cap = kv_len + 3;
  a.batch = c.batch;
  a.q_len = c.q_len;
  a.kv_len = kv_len;
  a.n_heads = c.n_heads;
  a.n_kv_heads = c.n_kv_heads;
  a.head_dim = c.head_dim;
  a.scale = c.scale_mul / std::sqrt(static_cast<float>(hd));
  a.causal = c.causal;
  a.window = c.window;
  a.q_row_stride = c.n_heads * hd + 3;
  a.q_batch_stride = c.q_len * a.q_row_stride + 1;
  a.k_row_stride = 2 * c.n_kv_heads * hd + 5;  // K and V interleaved per cache row
  a.v_row_stride = a.k_row_stride;
  a.k_batch_stride = a.v_batch_stride = c.shared_kv ? 0 : cap * a.k_row_stride;
  const int64_t k_batches = c.shared_kv ? 1 : c.batch;
  a.out_row_stride = c.n_heads * hd + 5;
  a.out_batch_stride = c.q_len * a.out_row_stride + 2;
  std::normal_distribution<float> nd(0.0f, 1.0f);
  B.q.resize(static_cast<size_t>(c.batch * a.q_batch_stride));
  for (float& x : B.q) x = nd(rng);
  // One cache buffer: K at column 0, V at column n_kv_heads * hd; rows >= kv_len are NaN.
  B.kc.resize(static_cast<size_t>(k_batches * cap * a.k_row_stride), NAN);
  for (int64_t b = 0; b < k_batches; ++b)
    for (int64_t j = 0; j < kv_len; ++j)
      for (int64_t col = 0; col < 2 * c.n_kv_heads * hd; ++col) {
        const float x = c.f16 ? f16_to_f32(f32_to_f16(nd(rng))) : nd(rng);
        B.kc[static_cast<size_t>(b * cap * a.k_row_stride + j * a.k_row_stride + col)] = x;
        if (col >= c.n_kv_heads * hd) B.vmax = std::max(B.vmax, std::fabs(x));
      }
  double qn = 0, kn = 0;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t i = 0; i < c.q_len; ++i)
      for (int32_t h = 0; h < c.n_heads; ++h) {
        double n2 = 0;
        for (int64_t d = 0; d < hd; ++d) {
          const double x =
              B.q[static_cast<size_t>(b * a.q_batch_stride + i * a.q_row_stride + h * hd + d)];
          n2 += x * x;
        }
        qn = std::max(qn, std::sqrt(n2));
      }
    for (int64_t j = 0; j < kv_len; ++j)
      for (int32_t g = 0; g < c.n_kv_heads; ++g) {
        double n2 = 0;
        for (int64_t d = 0; d < hd; ++d) {
          const double x =
              B.kc[static_cast<size_t>(b * a.k_batch_stride + j * a.k_row_stride + g * hd + d)];
          n2 += x * x;
        }
        kn = std::max(kn, std::sqrt(n2));
      }
  }
  B.smax = a.scale * qn * kn;
  a.q = B.q.data();
  a.k = B.kc.data();
  a.v = B.kc.data() + c.n_kv_heads * hd;
  B.v32 = B.kc.data() + c.n_kv_heads * hd;
  if (c.f16) {  // rows >= kv_len stay NaN (f16 NaN)
    B.kc16.resize(B.kc.size());
    for (size_t i = 0; i < B.kc.size(); ++i) B.kc16[i] = f32_to_f16(B.kc[i]);
    a.k = B.kc16.data();
    a.v = B.kc16.data() + c.n_kv_heads * hd;
    a.kv_type = KvType::kF16;
  }
  if (c.mask != 0) {
    a.mask_batch_stride = c.shared_kv ? 0 : kv_len + 2;
    B.mask.assign(static_cast<size_t>(k_batches * (kv_len + 2)), 1);
    std::bernoulli_distribution hide(0.3);
    for (int64_t b = 0; b < k_batches; ++b)
      for (int64_t j = 0; j < kv_len; ++j) {
        int32_t& m = B.mask[static_cast<size_t>(b * (kv_len + 2) + j)];
        if (c.mask == 1) m = hide(rng) ? 0 : 1;
        if (c.mask == 2 && b == 1) m = 0;
        if (c.mask == 3 && j == 0) m = 0;
      }
    a.key_mask = B.mask.data();
  }
  make_ids(c, k_batches, rng, B);
  B.out.assign(static_cast<size_t>(c.batch * a.out_batch_stride), 777.0f);
  a.out = B.out.data();
  return B;
}

// Runs one table on a fresh copy of the buffers; scratch has a guard band that must stay intact.
std::vector<float> run(const KernelTable& t, Buffers& B, int32_t hb, int32_t he,
                       const ThreadPool* pool) {
  const int n_threads = pool ? pool->n_threads : 1;
  const uint64_t bytes = t.attention_scratch_bytes(B.a, n_threads);
  std::vector<uint8_t> scratch(bytes + 256, 0xA5);
  std::fill(B.out.begin(), B.out.end(), 777.0f);
  t.attention(B.a, hb, he, scratch.data(), pool);
  for (uint64_t i = bytes; i < scratch.size(); ++i) REQUIRE(scratch[i] == 0xA5);
  return B.out;
}

void check_case(const Case& c, std::mt19937& rng) {
  CAPTURE(describe(c));
  Buffers B = make(c, rng);
  const int32_t hb = c.head_begin, he = c.head_end < 0 ? c.n_heads : c.head_end;
  const std::vector<float> want = run(kernel_table_ref(), B, hb, he, nullptr);
  // Gather the compared (in-range) outputs and verify everything else kept the sentinel.
  auto split = [&](const std::vector<float>& o, std::vector<float>& in_range) {
    in_range.clear();
    for (size_t i = 0; i < o.size(); ++i) {
      const int64_t b = static_cast<int64_t>(i) / B.a.out_batch_stride;
      const int64_t rem = static_cast<int64_t>(i) % B.a.out_batch_stride;
      const int64_t row = rem / B.a.out_row_stride, col = rem % B.a.out_row_stride;
      const int64_t h = col / c.head_dim;
      const bool inside =
          b < c.batch && row < c.q_len && col < c.n_heads * c.head_dim && h >= hb && h < he;
      if (inside)
        in_range.push_back(o[i]);
      else
        REQUIRE(o[i] == 777.0f);
    }
  };
  std::vector<float> want_in, got_in;
  split(want, want_in);
  TestPool pool3(3);
  for (int64_t target : kernel_hwy_targets()) {
    const KernelTable t = kernel_table_hwy(target);
    for (const ThreadPool* pool :
         {static_cast<const ThreadPool*>(nullptr), static_cast<const ThreadPool*>(&pool3.pool)}) {
      CAPTURE(std::string(t.isa));
      CAPTURE(pool != nullptr);
      const std::vector<float> got = run(t, B, hb, he, pool);
      split(got, got_in);
      REQUIRE(got_in.size() == want_in.size());
      double worst = 0;
      for (size_t i = 0; i < got_in.size(); ++i)
        worst = std::max(worst, std::fabs(double{got_in[i]} - want_in[i]));
      CHECK(worst <= std::ldexp(1.0, -21) * (1 + B.smax) * B.vmax);
      CHECK(nmse(got_in.data(), want_in.data(), got_in.size()) <= 1e-11);
    }
  }
}

// Every layout with K / V stored as f32 and as f16 (kv_type kF16: the kernels convert tiles and
// rows on load; the reference reads the same f16 values).
void check_both(Case c, std::mt19937& rng) {
  c.f16 = false;
  check_case(c, rng);
  c.f16 = true;
  check_case(c, rng);
}

}  // namespace

TEST_CASE("reference attention: known values") {
  std::mt19937 rng(11);
  {
    // One key: the output is that value, whatever q and k are.
    Case c;
    c.head_dim = 4;
    Buffers B = make(c, rng);
    const std::vector<float> o = run(kernel_table_ref(), B, 0, 1, nullptr);
    for (int d = 0; d < 4; ++d) CHECK(o[static_cast<size_t>(d)] == B.v32[d]);
  }
  {
    // Causal, no past: query 0 sees only key 0 -> v[0]; a fully masked row (key 0 hidden) -> 0.
    Case c;
    c.q_len = 5;
    c.head_dim = 3;
    c.causal = true;
    Buffers B = make(c, rng);
    std::vector<float> o = run(kernel_table_ref(), B, 0, 1, nullptr);
    for (int d = 0; d < 3; ++d) CHECK(o[static_cast<size_t>(d)] == doctest::Approx(B.v32[d]));
    c.mask = 3;
    B = make(c, rng);
    o = run(kernel_table_ref(), B, 0, 1, nullptr);
    for (int d = 0; d < 3; ++d) CHECK(o[static_cast<size_t>(d)] == 0.0f);
  }
  {
    // Two keys with equal scores (q = 0): the mean of the two values.
    Case c;
    c.q_len = 1;
    c.past = 1;
    c.head_dim = 2;
    Buffers B = make(c, rng);
    B.q.assign(B.q.size(), 0.0f);
    const std::vector<float> o = run(kernel_table_ref(), B, 0, 1, nullptr);
    for (int d = 0; d < 2; ++d)
      CHECK(o[static_cast<size_t>(d)] ==
            doctest::Approx(0.5 * (B.v32[d] + B.v32[B.a.v_row_stride + d])));
  }
}

TEST_CASE("attention: decode") {
  std::mt19937 rng(12);
  for (int32_t hd : {64, 128, 40}) {
    for (int32_t ratio : {1, 2, 3, 4}) {
      Case c;
      c.q_len = 1;
      c.past = 300;
      c.n_heads = 12;
      c.n_kv_heads = 12 / ratio;
      c.head_dim = hd;
      check_both(c, rng);
      c.window = 100;
      c.mask = 1;
      check_both(c, rng);
      c.batch = 2;
      c.window = -1;
      c.mask = 2;  // batch row 1: every key hidden -> zeros
      check_both(c, rng);
    }
  }
  Case tiny;  // kv_len 1
  tiny.head_dim = 64;
  check_both(tiny, rng);
  Case many;  // more kv groups than one decode item takes (16)
  many.past = 40;
  many.n_heads = 40;
  many.n_kv_heads = 20;
  many.head_dim = 64;
  many.causal = true;
  check_both(many, rng);
  many.head_begin = 5;
  many.head_end = 39;
  check_both(many, rng);
}

TEST_CASE("attention: prefill, masks and combinations") {
  std::mt19937 rng(13);
  const int32_t hds[] = {64, 128, 24, 3};
  for (int32_t hd : hds) {
    for (int mode = 0; mode < 6; ++mode) {
      Case c;
      c.q_len = 33;
      c.past = mode % 2 == 0 ? 0 : 9;
      c.n_heads = 4;
      c.n_kv_heads = mode < 3 ? 4 : 2;
      c.head_dim = hd;
      c.batch = mode == 5 ? 2 : 1;
      c.causal = mode == 1 || mode == 2 || mode == 4;
      c.window = mode == 2 || mode == 3 ? 5 : -1;
      c.mask = mode == 5 ? 1 : (mode == 4 ? 3 : 0);  // mode 4: row 0 of a causal pass fully hidden
      check_both(c, rng);
    }
  }
  Case w0;  // window 0: each query sees only its own key
  w0.q_len = 17;
  w0.window = 0;
  w0.head_dim = 64;
  check_both(w0, rng);
  Case big;  // several query and key tiles, causal with GQA 4, peaky softmax
  big.q_len = 150;
  big.past = 20;
  big.n_heads = 4;
  big.n_kv_heads = 1;
  big.head_dim = 64;
  big.causal = true;
  big.scale_mul = 4.0f;
  check_both(big, rng);
  big.head_begin = 1;
  check_both(big, rng);
  big.head_begin = 0;
  big.causal = false;
  big.mask = 2;
  big.batch = 2;
  check_both(big, rng);
}

TEST_CASE("attention: head sub-ranges and small q_len") {
  std::mt19937 rng(14);
  Case c;
  c.n_heads = 8;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.causal = true;
  for (int64_t q_len : {1, 2, 3, 5}) {
    c.q_len = q_len;
    c.past = 10;
    c.head_begin = 3;
    c.head_end = 7;  // crosses a group boundary
    check_both(c, rng);
    c.head_begin = 1;
    c.head_end = 2;
    check_both(c, rng);
  }
}

TEST_CASE("attention: randomized shapes") {
  std::mt19937 rng(15);
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  const int32_t hds[] = {1, 8, 17, 24, 40, 64, 128};
  const int32_t ratios[] = {1, 2, 3, 4};
  const int64_t qlens[] = {1, 2, 3, 17, 33, 65, 100};
  for (int iter = 0; iter < 40; ++iter) {
    Case c;
    c.head_dim = hds[pick(rng) % 7];
    const int32_t ratio = ratios[pick(rng) % 4];
    c.n_kv_heads = 1 + pick(rng) % 3;
    c.n_heads = c.n_kv_heads * ratio;
    c.q_len = qlens[pick(rng) % 7];
    c.past = pick(rng) % 3 == 0 ? 0 : pick(rng) % 130;
    c.batch = 1 + pick(rng) % 2;
    c.causal = pick(rng) % 2 == 0;
    c.window = pick(rng) % 3 == 0 ? pick(rng) % 40 : -1;
    c.mask = pick(rng) % 4;
    c.head_begin = pick(rng) % c.n_heads;
    c.head_end = c.head_begin + 1 + pick(rng) % (c.n_heads - c.head_begin);
    c.scale_mul = pick(rng) % 2 == 0 ? 1.0f : 3.0f;
    check_both(c, rng);
  }
}

// ---- positions and sequence ids ----------------------------------------------------------------

TEST_CASE("reference attention: positions and sequence ids, known values") {
  std::mt19937 rng(21);
  // Two packed rows of 2 tokens, bidirectional: each query averages its own row's values when
  // q = 0 (equal scores); an empty cell (seq -1) and another row's keys never contribute.
  Case c;
  c.q_len = 4;
  c.head_dim = 2;
  Buffers B = make(c, rng);
  B.q.assign(B.q.size(), 0.0f);
  B.q_pos = {0, 1, 0, 1, 0};
  B.k_pos = {0, 1, 0, 1, 0, 0, 0};
  B.q_seq = {3, 3, 5, 5, 0};
  B.k_seq = {3, 3, 5, -1, 0, 0, 0};  // key 3 is an empty cell
  B.a.q_pos = B.q_pos.data();
  B.a.k_pos = B.k_pos.data();
  B.a.q_seq = B.q_seq.data();
  B.a.k_seq = B.k_seq.data();
  const std::vector<float> o = run(kernel_table_ref(), B, 0, 1, nullptr);
  const int64_t vs = B.a.v_row_stride, os = B.a.out_row_stride;
  for (int d = 0; d < 2; ++d) {
    const double row0 = 0.5 * (B.v32[d] + B.v32[vs + d]);
    CHECK(o[static_cast<size_t>(d)] == doctest::Approx(row0));
    CHECK(o[static_cast<size_t>(os + d)] == doctest::Approx(row0));
    CHECK(o[static_cast<size_t>(2 * os + d)] == doctest::Approx(B.v32[2 * vs + d]));
    CHECK(o[static_cast<size_t>(3 * os + d)] == doctest::Approx(B.v32[2 * vs + d]));
  }
  // Causal by positions: query 1 (position 1) of row 0 sees keys at positions 0 and 1, query 0
  // only key 0, whatever the cell order.
  B.a.causal = true;
  B.k_pos[0] = 1;
  B.k_pos[1] = 0;
  const std::vector<float> oc = run(kernel_table_ref(), B, 0, 1, nullptr);
  for (int d = 0; d < 2; ++d) CHECK(oc[static_cast<size_t>(d)] == doctest::Approx(B.v32[vs + d]));
  // A query whose sequence has no live key outputs zeros.
  B.q_seq[2] = 7;
  const std::vector<float> oz = run(kernel_table_ref(), B, 0, 1, nullptr);
  for (int d = 0; d < 2; ++d) CHECK(oz[static_cast<size_t>(2 * os + d)] == 0.0f);
}

TEST_CASE("attention: packed rows") {
  std::mt19937 rng(22);
  for (int32_t hd : {64, 24}) {
    for (int mode = 0; mode < 6; ++mode) {
      Case c;
      c.ids = Case::Ids::kPacked;
      c.q_len = mode < 3 ? 200 : 77;
      c.max_row = mode % 3 == 0 ? 64 : (mode % 3 == 1 ? 9 : 150);
      c.n_heads = 4;
      c.n_kv_heads = mode % 2 == 0 ? 4 : 1;
      c.head_dim = hd;
      c.causal = mode % 2 == 1;
      c.window = mode == 2 || mode == 5 ? 6 : -1;
      c.pad = mode >= 3 ? 5 : 0;
      c.mask = mode == 4 ? 1 : 0;
      check_both(c, rng);
    }
  }
  Case two;  // two batch entries of packed rows, a head sub-range
  two.ids = Case::Ids::kPacked;
  two.batch = 2;
  two.q_len = 130;
  two.max_row = 40;
  two.n_heads = 6;
  two.n_kv_heads = 2;
  two.head_dim = 64;
  two.head_begin = 1;
  two.head_end = 5;
  check_both(two, rng);
}

TEST_CASE("attention: decode and prefill over KV cache cells") {
  std::mt19937 rng(23);
  for (int32_t hd : {64, 128, 40}) {
    for (int64_t q_len : {1, 2, 3, 9}) {
      Case c;
      c.ids = Case::Ids::kCells;
      c.q_len = q_len;
      c.past = 300 - q_len;  // 300 cells
      c.n_heads = 8;
      c.n_kv_heads = 2;
      c.head_dim = hd;
      c.causal = true;
      c.n_seq = q_len == 1 ? 1 : 3;
      check_both(c, rng);
      c.window = 17;
      c.mask = 1;
      check_both(c, rng);
      c.batch = 2;  // two batch rows reading one cache
      c.shared_kv = true;
      c.window = -1;
      c.mask = 0;
      check_both(c, rng);
    }
  }
}

TEST_CASE("attention: a decode step's output does not depend on the empty cells past the last") {
  // A KV cache of `live` written cells (one sequence) and `empty` cells after them (seq -1, zero):
  // the decode query sees the same keys whatever `empty` is, and gets the same bits, on every
  // target (tiles end at the last live key; a tile's last 1-3 keys sum like every other key).
  std::mt19937 rng(31);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int32_t heads = 9, kv_heads = 3, hd = 64;
  const int64_t row = int64_t{kv_heads} * hd;
  for (int64_t target : kernel_hwy_targets()) {
    const KernelTable t = kernel_table_hwy(target);
    for (bool f16 : {false, true})
      for (int64_t live : {1, 2, 5, 34, 127, 129, 191}) {
        std::vector<float> q(static_cast<size_t>(heads * hd)), kf, vf;
        for (float& x : q) x = dist(rng);
        for (int64_t j = 0; j < live * row; ++j) {
          kf.push_back(dist(rng));
          vf.push_back(dist(rng));
        }
        std::vector<float> first;
        for (int64_t empty : {0, 1, 2, 3, 5, 64, 130}) {
          const int64_t cells = live + empty;
          std::vector<float> k32(static_cast<size_t>(cells * row), 0.0f), v32 = k32;
          std::copy(kf.begin(), kf.end(), k32.begin());
          std::copy(vf.begin(), vf.end(), v32.begin());
          std::vector<uint16_t> k16(k32.size()), v16(v32.size());
          for (size_t i = 0; i < k32.size(); ++i) {
            k16[i] = f32_to_f16(k32[i]);
            v16[i] = f32_to_f16(v32[i]);
          }
          std::vector<int32_t> pos(static_cast<size_t>(cells)), seq(static_cast<size_t>(cells));
          for (int64_t j = 0; j < cells; ++j) {
            pos[static_cast<size_t>(j)] = static_cast<int32_t>(j < live ? j : 0);
            seq[static_cast<size_t>(j)] = j < live ? 0 : -1;
          }
          const int32_t qp = static_cast<int32_t>(live - 1), qs = 0;
          std::vector<float> out(q.size(), -7.0f);
          AttentionArgs a;
          a.q = q.data();
          a.k = f16 ? static_cast<const void*>(k16.data()) : k32.data();
          a.v = f16 ? static_cast<const void*>(v16.data()) : v32.data();
          a.kv_type = f16 ? KvType::kF16 : KvType::kF32;
          a.out = out.data();
          a.q_row_stride = a.out_row_stride = int64_t{heads} * hd;
          a.k_row_stride = a.v_row_stride = row;
          a.q_len = 1;
          a.kv_len = cells;
          a.n_heads = heads;
          a.n_kv_heads = kv_heads;
          a.head_dim = hd;
          a.scale = 0.125f;
          a.causal = true;
          a.q_pos = &qp;
          a.q_seq = &qs;
          a.k_pos = pos.data();
          a.k_seq = seq.data();
          std::vector<uint8_t> scratch(t.attention_scratch_bytes(a, 1));
          t.attention(a, 0, heads, scratch.data(), nullptr);
          INFO(kernel_target_name(target), f16 ? " f16" : " f32", " live ", live, " empty ", empty);
          if (first.empty())
            first = out;
          else
            CHECK(std::memcmp(out.data(), first.data(), out.size() * sizeof(float)) == 0);
        }
      }
  }
}

TEST_CASE("attention: a packed row's output does not depend on the rows before it") {
  // Packed rows (positions restarting per row, seq ids per row) as a decision pass packs them: a
  // row gives the same bits whatever rows precede it, on every target, with the queries of every
  // row (prefill layout) and with a few queries per row (the head's markers: several sequences in
  // one call), windowed or not. Dynamic batching relies on it (runtime/decisions/context.h).
  std::mt19937 rng(53);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int32_t heads = 4, hd = 32;
  const int64_t width = int64_t{heads} * hd;
  for (int64_t target : kernel_hwy_targets()) {
    const KernelTable t = kernel_table_hwy(target);
    for (int64_t len : {7, 64, 97, 150})
      for (int64_t window : {int64_t{-1}, int64_t{8}})
        for (bool markers : {false, true}) {
          // Row 1 (len tokens) after a row 0 of `pre` tokens; its output against pre = 1.
          const int64_t max_pre = 70;
          std::vector<float> kv(static_cast<size_t>((max_pre + len) * width * 2));
          for (float& x : kv) x = dist(rng);
          std::vector<float> qrow(static_cast<size_t>(len * width));
          for (float& x : qrow) x = dist(rng);
          std::vector<float> first;
          for (int64_t pre : {1, 2, 5, 31, 64, 65, 70}) {
            const int64_t n = pre + len;
            std::vector<int32_t> kpos(static_cast<size_t>(n)), kseq(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) {
              kpos[static_cast<size_t>(j)] = static_cast<int32_t>(j < pre ? j : j - pre);
              kseq[static_cast<size_t>(j)] = j < pre ? 0 : 1;
            }
            const float* k = kv.data() + (max_pre - pre) * width * 2;
            // Queries: every token of both rows, or 3 "markers" of each row.
            std::vector<float> q;
            std::vector<int32_t> qpos, qseq;
            auto add_query = [&](const float* row, int32_t p, int32_t sq) {
              q.insert(q.end(), row, row + width);
              qpos.push_back(p);
              qseq.push_back(sq);
            };
            const int64_t mstep = std::max<int64_t>(1, len / 3);
            for (int64_t j = 0; j < pre; ++j)
              if (!markers || j < 3) add_query(k, static_cast<int32_t>(j), 0);
            for (int64_t j = 0; j < len; ++j)
              if (!markers || (j % mstep == 0 && j / mstep < 3))
                add_query(qrow.data() + j * width, static_cast<int32_t>(j), 1);
            const int64_t nq = static_cast<int64_t>(qpos.size());
            std::vector<float> out(static_cast<size_t>(nq * width), -7.0f);
            AttentionArgs a;
            a.q = q.data();
            a.q_row_stride = width;
            a.k = k;
            a.v = k + width;
            a.k_row_stride = a.v_row_stride = 2 * width;
            a.out = out.data();
            a.out_row_stride = width;
            a.q_len = nq;
            a.kv_len = n;
            a.n_heads = a.n_kv_heads = heads;
            a.head_dim = hd;
            a.scale = 0.17f;
            a.window = window;
            a.q_pos = qpos.data();
            a.q_seq = qseq.data();
            a.k_pos = kpos.data();
            a.k_seq = kseq.data();
            std::vector<uint8_t> scratch(t.attention_scratch_bytes(a, 1));
            t.attention(a, 0, heads, scratch.data(), nullptr);
            const int64_t row1 = markers ? std::min<int64_t>(pre, 3) : pre;
            std::vector<float> mine(out.begin() + row1 * width, out.end());
            INFO(kernel_target_name(target), " len ", len, " window ", window, " markers ", markers,
                 " pre ", pre);
            if (first.empty())
              first = mine;
            else
              CHECK(std::memcmp(mine.data(), first.data(), mine.size() * sizeof(float)) == 0);
          }
        }
  }
}

TEST_CASE("attention: positions without sequence ids, and at the ends of int32") {
  std::mt19937 rng(24);
  for (int64_t q_len : {1, 3, 40}) {
    Case c;
    c.ids = Case::Ids::kPos;
    c.q_len = q_len;
    c.past = 90;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 64;
    check_both(c, rng);
    c.causal = true;
    check_both(c, rng);
    c.window = 30;
    check_both(c, rng);
    c.ids = Case::Ids::kExtreme;
    for (int64_t w : {int64_t{-1}, int64_t{0}, int64_t{1000}, int64_t{INT32_MAX}}) {
      c.window = w;
      check_both(c, rng);
    }
  }
}

TEST_CASE("attention: randomized positions, packed rows and cells") {
  std::mt19937 rng(25);
  std::uniform_int_distribution<int> pick(0, 1 << 20);
  const int32_t hds[] = {8, 17, 24, 64, 128};
  const int32_t ratios[] = {1, 2, 4};
  const int64_t qlens[] = {1, 2, 3, 17, 33, 65, 100};
  for (int iter = 0; iter < 40; ++iter) {
    Case c;
    c.ids = static_cast<Case::Ids>(1 + pick(rng) % 4);
    c.head_dim = hds[pick(rng) % 5];
    const int32_t ratio = ratios[pick(rng) % 3];
    c.n_kv_heads = 1 + pick(rng) % 3;
    c.n_heads = c.n_kv_heads * ratio;
    c.q_len = qlens[pick(rng) % 7];
    c.past = c.ids == Case::Ids::kPacked ? 0 : pick(rng) % 200;
    c.batch = 1 + pick(rng) % 2;
    c.shared_kv = c.ids != Case::Ids::kPacked && pick(rng) % 2 == 0;
    c.causal = pick(rng) % 2 == 0;
    c.window = pick(rng) % 3 == 0 ? pick(rng) % 40 : -1;
    c.mask = pick(rng) % 3 == 0 ? 1 : 0;
    c.max_row = 1 + pick(rng) % 70;
    c.pad = pick(rng) % 3 == 0 ? pick(rng) % (c.q_len + 1) : 0;
    c.n_seq = 1 + pick(rng) % 4;
    c.head_begin = pick(rng) % c.n_heads;
    c.head_end = c.head_begin + 1 + pick(rng) % (c.n_heads - c.head_begin);
    c.scale_mul = pick(rng) % 2 == 0 ? 1.0f : 3.0f;
    check_both(c, rng);
  }
}

TEST_CASE("f32_to_f16: every table rounds to nearest even, as the scalar conversion") {
  // Known values: exact, ties to even, the largest half, overflow, subnormals, signed zero.
  const std::vector<std::pair<float, uint16_t>> known = {
      {1.0f, 0x3c00},
      {-2.0f, 0xc000},
      {65504.0f, 0x7bff},
      {65520.0f, 0x7c00},
      {1e10f, 0x7c00},
      {-1e10f, 0xfc00},
      {0.0f, 0x0000},
      {-0.0f, 0x8000},
      {std::ldexp(1.0f, -24), 0x0001},
      {std::ldexp(1.0f, -26), 0x0000},
      {std::ldexp(3.0f, -25), 0x0002},
      {1.0f + std::ldexp(1.0f, -11), 0x3c00},
      {1.0f + std::ldexp(3.0f, -11), 0x3c02},
      {1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20), 0x3c01}};
  std::vector<float> src;
  for (const auto& [x, h] : known) {
    CHECK(f32_to_f16(x) == h);
    src.push_back(x);
  }
  // Random values over the whole f16 range and around it (odd length: vector tails).
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> e(-30.0f, 17.0f);
  std::uniform_int_distribution<uint32_t> bits(0, 0xffffffffu);
  for (int i = 0; i < 4001; ++i) {
    float x = std::exp2(e(rng)) * (i % 2 ? -1.0f : 1.0f);
    if (i % 3 == 0) {  // exact ties and near-ties: a half with a 13-bit tail of 0x1000 +- 1
      uint32_t u;
      std::memcpy(&u, &x, sizeof u);
      u = (u & ~0x1fffu) | (0x1000u + (bits(rng) % 3) - 1);
      std::memcpy(&x, &u, sizeof x);
    }
    src.push_back(x);
  }
  std::vector<uint16_t> want(src.size());
  for (size_t i = 0; i < src.size(); ++i) want[i] = f32_to_f16(src[i]);
  std::vector<KernelTable> tables = {kernel_table_ref()};
  for (int64_t t : kernel_hwy_targets()) tables.push_back(kernel_table_hwy(t));
  for (const KernelTable& t : tables) {
    CAPTURE(std::string(t.isa));
    std::vector<uint16_t> got(src.size() + 1, 0x5a5a);
    t.f32_to_f16(src.data(), got.data(), static_cast<int64_t>(src.size()));
    CHECK(got.back() == 0x5a5a);
    size_t bad = 0;
    for (size_t i = 0; i < src.size(); ++i) bad += got[i] != want[i];
    CHECK(bad == 0);
    // NaN stays NaN.
    const float nan = NAN;
    uint16_t h = 0;
    t.f32_to_f16(&nan, &h, 1);
    CHECK(std::isnan(f16_to_f32(h)));
  }
}

TEST_CASE("reference attention: f16 K / V equals f32 K / V holding the same values") {
  std::mt19937 rng(32);
  Case c;
  c.q_len = 5;
  c.past = 70;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 24;
  c.causal = true;
  c.f16 = true;
  Buffers B = make(c, rng);
  const std::vector<float> o16 = run(kernel_table_ref(), B, 0, 4, nullptr);
  B.a.k = B.kc.data();
  B.a.v = B.v32;
  B.a.kv_type = KvType::kF32;
  const std::vector<float> o32 = run(kernel_table_ref(), B, 0, 4, nullptr);
  CHECK(o16 == o32);
  // And the values really are f16: a different cache gives different outputs.
  B.a.k = B.kc16.data();
  B.a.v = B.kc16.data() + c.n_kv_heads * c.head_dim;
  B.a.kv_type = KvType::kF16;
  B.kc16[static_cast<size_t>(c.n_kv_heads * c.head_dim)] ^= 0x4000;  // V row 0, dim 0
  CHECK(run(kernel_table_ref(), B, 0, 4, nullptr) != o16);
}
