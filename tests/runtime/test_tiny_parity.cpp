// The tiny encoder and decoder on the CPU HAL against a straightforward scalar forward pass
// written here: weights are read back from the ir::Graph and decoded by this file (no kernels/
// code), every sum is in double, and the architecture is spelled out loop by loop.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/runtime/session_util.h"

namespace laya::test {
namespace {

using Mat = std::vector<double>;  // row-major

// ---- weights read back from the graph --------------------------------------------------------

double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  double v;
  if (exp == 0)
    v = std::ldexp(man, -24);
  else if (exp == 31)
    v = man ? NAN : INFINITY;
  else
    v = std::ldexp(1024 + man, exp - 25);
  return sign ? -v : v;
}

uint16_t u16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

// The weight called `name` as doubles, row-major [n, k] (or [n] for vectors).
Mat weight(const ir::Graph& g, const std::string& name) {
  const ir::ValueId id = g.find_value(name);
  REQUIRE_MESSAGE(id != ir::kNoValue, name);
  const ir::Value& v = g.values[id];
  REQUIRE(v.kind == ir::ValueKind::kWeight);
  int64_t n = 1;
  for (int i = 0; i < v.shape.rank; ++i) n *= v.shape.dims[i].c;
  Mat w(static_cast<size_t>(n));
  const uint8_t* p = v.data;
  switch (v.dtype) {
    case ir::DType::kF32:
      for (int64_t i = 0; i < n; ++i) {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        w[i] = f;
      }
      break;
    case ir::DType::kF16:
      for (int64_t i = 0; i < n; ++i) w[i] = half_to_double(u16(p + 2 * i));
      break;
    case ir::DType::kQ8_0:  // {f16 d; i8 q[32]}
      for (int64_t blk = 0; blk < n / 32; ++blk, p += 34)
        for (int i = 0; i < 32; ++i)
          w[blk * 32 + i] = half_to_double(u16(p)) * static_cast<int8_t>(p[2 + i]);
      break;
    case ir::DType::kQ4_0:  // {f16 d; u8 q[16]}: element i < 16 low nibble, 16 + i high nibble
      for (int64_t blk = 0; blk < n / 32; ++blk, p += 18)
        for (int i = 0; i < 16; ++i) {
          const double d = half_to_double(u16(p));
          w[blk * 32 + i] = d * ((p[2 + i] & 15) - 8);
          w[blk * 32 + 16 + i] = d * ((p[2 + i] >> 4) - 8);
        }
      break;
    default:
      FAIL("dtype not decoded by this test: " << ir::dtype_name(v.dtype));
  }
  return w;
}

// ---- scalar ops ------------------------------------------------------------------------------

// y[r, j] = sum_i x[r, i] w[j, i]
Mat matmul(const Mat& x, const Mat& w, int64_t rows, int64_t n, int64_t k) {
  Mat y(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += x[r * k + i] * w[j * k + i];
      y[r * n + j] = acc;
    }
  return y;
}

Mat norm(const Mat& x, const Mat& gamma, int64_t rows, int64_t d, double eps, bool rms) {
  Mat y(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[r * d];
    double mean = 0, var = 0;
    if (!rms) {
      for (int64_t i = 0; i < d; ++i) mean += xr[i];
      mean /= d;
    }
    for (int64_t i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= d;
    for (int64_t i = 0; i < d; ++i) y[r * d + i] = (xr[i] - mean) / std::sqrt(var + eps) * gamma[i];
  }
  return y;
}

// NeoX rotate-half on every head of rows of width heads * hd; rows are (b, s) pairs.
void rope(Mat& x, const std::vector<int32_t>& pos, int64_t rows, int64_t heads, int64_t hd,
          double theta) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t h = 0; h < heads; ++h) {
      double* v = &x[(r * heads + h) * hd];
      for (int64_t i = 0; i < hd / 2; ++i) {
        const double angle = pos[r] * std::pow(theta, -2.0 * i / hd);
        const double a = v[i], b = v[i + hd / 2];
        v[i] = a * std::cos(angle) - b * std::sin(angle);
        v[i + hd / 2] = b * std::cos(angle) + a * std::sin(angle);
      }
    }
}

// Softmax attention per (batch, head, query) over visible keys; q rows of heads * hd, k / v rows
// of kv_heads * hd; GQA head h reads kv head h / (heads / kv_heads).
Mat attention(const Mat& q, const Mat& k, const Mat& v, const int32_t* mask, int64_t batch,
              int64_t seq, int64_t heads, int64_t kv_heads, int64_t hd, bool causal,
              int64_t window) {
  Mat out(static_cast<size_t>(batch * seq * heads * hd), 0.0);
  const int64_t qw = heads * hd, kw = kv_heads * hd;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      const int64_t g = h / (heads / kv_heads);
      for (int64_t i = 0; i < seq; ++i) {
        std::vector<double> p(static_cast<size_t>(seq), 0.0);
        std::vector<bool> vis(static_cast<size_t>(seq));
        double mx = -INFINITY;
        for (int64_t j = 0; j < seq; ++j) {
          vis[j] = (mask == nullptr || mask[b * seq + j] != 0) && (!causal || j <= i) &&
                   (window < 0 || std::abs(i - j) <= window);
          if (!vis[j]) continue;
          double s = 0;
          for (int64_t d = 0; d < hd; ++d)
            s += q[(b * seq + i) * qw + h * hd + d] * k[(b * seq + j) * kw + g * hd + d];
          p[j] = s / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, p[j]);
        }
        if (mx == -INFINITY) continue;
        double sum = 0;
        for (int64_t j = 0; j < seq; ++j) sum += p[j] = vis[j] ? std::exp(p[j] - mx) : 0.0;
        for (int64_t j = 0; j < seq; ++j)
          for (int64_t d = 0; d < hd; ++d)
            out[(b * seq + i) * qw + h * hd + d] += p[j] / sum * v[(b * seq + j) * kw + g * hd + d];
      }
    }
  return out;
}

void add_to(Mat& x, const Mat& y) {
  for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
}

Mat embed(const ir::Graph& g, const TinyInputs& in, int64_t d) {
  const Mat table = weight(g, "tok_emb");
  Mat x;
  for (int32_t id : in.ids) x.insert(x.end(), table.begin() + id * d, table.begin() + (id + 1) * d);
  return x;
}

// ---- the two forward passes ------------------------------------------------------------------

Mat encoder_forward(const ir::Graph& g, const tools::TinyModelConfig& c, const TinyInputs& in) {
  const int64_t rows = in.batch * in.seq, d = c.d_model, f = c.d_ff, hd = d / c.n_heads;
  Mat x = norm(embed(g, in, d), weight(g, "emb_norm.gamma"), rows, d, c.eps, false);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    const bool global = l % c.global_every == 0;
    const Mat h = l == 0 ? x : norm(x, weight(g, p + "attn_norm.gamma"), rows, d, c.eps, false);
    const Mat qkv = matmul(h, weight(g, p + "wqkv"), rows, 3 * d, d);
    Mat q(static_cast<size_t>(rows * d)), k(q.size()), v(q.size());
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i = 0; i < d; ++i) {
        q[r * d + i] = qkv[r * 3 * d + i];
        k[r * d + i] = qkv[r * 3 * d + d + i];
        v[r * d + i] = qkv[r * 3 * d + 2 * d + i];
      }
    const double theta = global ? c.rope_theta_global : c.rope_theta_local;
    rope(q, in.positions, rows, c.n_heads, hd, theta);
    rope(k, in.positions, rows, c.n_heads, hd, theta);
    const Mat att = attention(q, k, v, in.key_mask.data(), in.batch, in.seq, c.n_heads, c.n_heads,
                              hd, false, global ? -1 : c.local_window);
    add_to(x, matmul(att, weight(g, p + "wo"), rows, d, d));
    const Mat h2 = norm(x, weight(g, p + "mlp_norm.gamma"), rows, d, c.eps, false);
    const Mat wi = matmul(h2, weight(g, p + "wi"), rows, 2 * f, d);
    Mat glu(static_cast<size_t>(rows * f));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < f; ++j) {
        const double a = wi[r * 2 * f + j];
        glu[r * f + j] = 0.5 * a * (1.0 + std::erf(a / std::sqrt(2.0))) * wi[r * 2 * f + f + j];
      }
    add_to(x, matmul(glu, weight(g, p + "wo2"), rows, d, f));
  }
  return norm(x, weight(g, "final_norm.gamma"), rows, d, c.eps, false);
}

Mat decoder_forward(const ir::Graph& g, const tools::TinyModelConfig& c, const TinyInputs& in) {
  const int64_t rows = in.batch * in.seq, d = c.d_model, f = c.d_ff, hd = d / c.n_heads;
  const int64_t kvd = hd * c.n_kv_heads;
  Mat x = embed(g, in, d);
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "l" + std::to_string(l) + ".";
    const Mat h = norm(x, weight(g, p + "attn_norm.gamma"), rows, d, c.eps, true);
    Mat q = matmul(h, weight(g, p + "wq"), rows, d, d);
    Mat k = matmul(h, weight(g, p + "wk"), rows, kvd, d);
    const Mat v = matmul(h, weight(g, p + "wv"), rows, kvd, d);
    rope(q, in.positions, rows, c.n_heads, hd, c.rope_theta_global);
    rope(k, in.positions, rows, c.n_kv_heads, hd, c.rope_theta_global);
    const Mat att =
        attention(q, k, v, nullptr, in.batch, in.seq, c.n_heads, c.n_kv_heads, hd, true, -1);
    add_to(x, matmul(att, weight(g, p + "wo"), rows, d, d));
    const Mat h2 = norm(x, weight(g, p + "mlp_norm.gamma"), rows, d, c.eps, true);
    const Mat gate = matmul(h2, weight(g, p + "w_gate"), rows, f, d);
    Mat act = matmul(h2, weight(g, p + "w_up"), rows, f, d);
    for (size_t i = 0; i < act.size(); ++i) act[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
    add_to(x, matmul(act, weight(g, p + "w_down"), rows, d, f));
  }
  x = norm(x, weight(g, "final_norm.gamma"), rows, d, c.eps, true);
  return matmul(x, weight(g, "lm_head"), rows, c.vocab, d);
}

// ---- comparison ------------------------------------------------------------------------------

struct Error {
  double max_abs = 0;  // max |got - want|
  double nmse = 0;     // sum (got - want)^2 / sum want^2
};

Error compare(const std::vector<float>& got, const Mat& want) {
  REQUIRE(got.size() == want.size());
  Error e;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double diff = got[i] - want[i];
    REQUIRE(std::isfinite(got[i]));
    e.max_abs = std::max(e.max_abs, std::abs(diff));
    num += diff * diff;
    den += want[i] * want[i];
  }
  e.nmse = num / den;
  return e;
}

struct Case {
  ir::DType dtype;
  double max_abs;  // tolerance on outputs of unit scale
  double nmse;
};

// f32 and f16 weights: the kernels use the stored weights exactly and f32 activations, so only
// f32 rounding of intermediates separates them from the double-precision forward pass (measured
// with the reference kernels: max abs error <= 6.1e-7, nmse <= 1.6e-14 on outputs of unit scale;
// the tolerance leaves room for SIMD kernels that accumulate in f32).
// q8_0 / q4_0: the weights are exact too (decoded above), but the kernels quantize activations to
// q8 blocks of 32 per matmul (~0.4% of each block's max), which accumulates over 2 layers and the
// LM head (measured: max abs <= 0.069, nmse <= 2.0e-4).
const Case kCases[] = {
    {ir::DType::kF32, 2e-5, 1e-10},
    {ir::DType::kF16, 2e-5, 1e-10},
    {ir::DType::kQ8_0, 0.15, 1e-3},
    {ir::DType::kQ4_0, 0.15, 1e-3},
};

template <class Forward>
void check_model(bool encoder, Forward forward) {
  for (const Case& c : kCases)
    for (const char* kernels : {"ref", "auto"}) {
      tools::TinyModelConfig cfg;
      cfg.matmul_dtype = c.dtype;
      auto g = encoder ? tools::make_tiny_encoder(cfg, 7) : tools::make_tiny_decoder(cfg, 7);
      REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
      const std::string what = std::string(kernels) + " " + ir::dtype_name(c.dtype);
      CAPTURE(what);
      TinyRun run = make_run(*g, cpu_options(kernels, 2));
      for (int64_t seq : {1, 13, 40}) {
        CAPTURE(seq);
        const TinyInputs in = tiny_inputs(2, seq, cfg.vocab, encoder ? seq / 4 : 0);
        std::vector<float> out;
        Status st = run_tiny(run, in, &out);
        REQUIRE_MESSAGE(st.is_ok(), st.to_string());
        const Error e = compare(out, forward(*g, cfg, in));
        INFO("max abs " << e.max_abs << ", nmse " << e.nmse);
        if (std::getenv("LAYA_PRINT_ERRORS"))
          MESSAGE(what << (encoder ? " encoder" : " decoder") << " seq " << seq << ": max abs "
                       << e.max_abs << ", nmse " << e.nmse);
        CHECK(e.max_abs <= c.max_abs);
        CHECK(e.nmse <= c.nmse);
      }
    }
}

TEST_CASE("tiny encoder on the CPU HAL matches the scalar forward pass") {
  check_model(true, encoder_forward);
}

TEST_CASE("tiny decoder on the CPU HAL matches the scalar forward pass") {
  check_model(false, decoder_forward);
}

TEST_CASE("tiny models are deterministic in (config, seed) and differ across seeds") {
  tools::TinyModelConfig cfg;
  auto a = tools::make_tiny_decoder(cfg, 1), b = tools::make_tiny_decoder(cfg, 1),
       c = tools::make_tiny_decoder(cfg, 2);
  REQUIRE(a.is_ok());
  REQUIRE(b.is_ok());
  REQUIRE(c.is_ok());
  std::string why;
  CHECK(ir::graph_equal(*a, *b, &why));
  CHECK_FALSE(ir::graph_equal(*a, *c));
  cfg.d_model = 48;  // q4_0 needs K % 32 == 0
  cfg.n_heads = 4;
  cfg.matmul_dtype = ir::DType::kQ4_0;
  CHECK(tools::make_tiny_encoder(cfg, 1).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace laya::test
