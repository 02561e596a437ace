// Attribute limits (ir/attrs.inc) meet the kernels: every float attribute at both of its limits,
// and the int attributes at theirs, run through a one-node session on the scalar references and
// on every Highway target this CPU runs; the outputs agree within the op's tolerance. The
// verifier accepts exactly these values, so a file cannot hold an attribute on which the kernels
// disagree (an attention scale of 3e38 once gave zeros on Highway and finite values on the
// reference).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "kernels/kernels.h"
#include "tests/runtime/session_util.h"

namespace laya::test {
namespace {

using ir::AttrLimits;
using ir::DType;
using ir::Shape;
using ir::ValueId;

// A graph of fixed shapes and the values of its inputs (f32 uniform in [-1, 1] unless given).
struct OneOp {
  ir::Graph g;
  std::vector<std::vector<float>> f32_inputs;  // per graph input (i32 ones below)
  std::vector<std::vector<int32_t>> i32_inputs;
};

std::vector<float> uniform(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Runs `m` with `kernels` and returns its only output.
std::vector<float> run(const OneOp& m, const std::string& kernels) {
  TinyRun r = make_run(m.g, cpu_options(kernels, 2));
  REQUIRE(r.session->reshape({}).is_ok());
  std::vector<const void*> in;
  for (size_t i = 0; i < m.g.inputs.size(); ++i)
    in.push_back(m.g.values[m.g.inputs[i]].dtype == DType::kF32
                     ? static_cast<const void*>(m.f32_inputs[i].data())
                     : static_cast<const void*>(m.i32_inputs[i].data()));
  std::vector<float> out(static_cast<size_t>(r.session->extents(m.g.outputs[0]).count()));
  void* outs[1] = {out.data()};
  Status st = r.session->execute(in, outs);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  return out;
}

// Every Highway target's output within `tol(ref)` of the reference's, all finite.
void check_agree(const OneOp& m, const std::string& what,
                 const std::function<double(const std::vector<float>&)>& tol) {
  CAPTURE(what);
  const std::vector<float> ref = run(m, "ref");
  for (float x : ref) REQUIRE(std::isfinite(x));
  const double limit = tol(ref);
  for (const std::string& k : kernels::kernel_table_names()) {
    if (k == "ref") continue;
    CAPTURE(k);
    const std::vector<float> got = run(m, k);
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      REQUIRE(std::isfinite(got[i]));
      worst = std::max(worst, std::fabs(double{got[i]} - ref[i]));
    }
    CHECK_MESSAGE(worst <= limit, "max |hwy - ref| " << worst << " > " << limit);
  }
}

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::fabs(double{x}));
  return m;
}

ir::Graph finish(ir::GraphBuilder& b) {
  Result<ir::Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

OneOp norm(bool rms, float eps, int64_t rows, int64_t dim) {
  ir::GraphBuilder b;
  OneOp m;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({rows, dim}));
  const std::vector<float> gamma = uniform(static_cast<size_t>(dim), 7);
  const std::vector<float> beta = uniform(static_cast<size_t>(dim), 8);
  const ValueId g = b.weight("g", DType::kF32, Shape::fixed({dim}), gamma.data(), gamma.size() * 4);
  const ValueId bt = b.weight("b", DType::kF32, Shape::fixed({dim}), beta.data(), beta.size() * 4);
  b.output(rms ? b.rmsnorm(x, g, eps, "norm") : b.layernorm(x, g, bt, eps, "norm"), "y");
  m.g = finish(b);
  std::vector<float> xs = uniform(static_cast<size_t>(rows * dim), 3);
  std::fill(xs.begin(), xs.begin() + dim, 0.25f);           // row 0 constant: variance 0, only eps
  std::fill(xs.begin() + dim, xs.begin() + 2 * dim, 0.0f);  // row 1 zero
  m.f32_inputs = {xs};
  m.i32_inputs = {{}};
  if (eps == 0.0f) {  // no eps: rows of zero variance would divide by zero in both; skip them
    m.f32_inputs[0] = uniform(static_cast<size_t>(rows * dim), 4);
  }
  return m;
}

OneOp rope(float theta, ir::RopeMode mode, int32_t heads, int32_t head_dim, int32_t rotary_dim,
           int32_t max_pos) {
  ir::GraphBuilder b;
  OneOp m;
  const int64_t tokens = 6, width = int64_t{heads} * head_dim;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({1, tokens, width}));
  const ValueId pos = b.input("pos", DType::kI32, Shape::fixed({1, tokens}));
  b.output(b.rope(x, pos, head_dim, theta, mode, rotary_dim, "rope"), "y");
  m.g = finish(b);
  m.f32_inputs = {uniform(static_cast<size_t>(tokens * width), 5), {}};
  m.i32_inputs = {{}, {0, 1, 2, 17, max_pos / 2, max_pos}};
  return m;
}

struct AttnCase {
  float scale = 0.0f;
  int32_t heads = 4, kv_heads = 2, head_dim = 16, window = -1;
  ir::MaskKind mask = ir::MaskKind::kNone;
  int64_t q_len = 5, kv_len = 9;
};

OneOp attention(const AttnCase& c, double* smax) {
  ir::GraphBuilder b;
  OneOp m;
  const int64_t qw = int64_t{c.heads} * c.head_dim, kw = int64_t{c.kv_heads} * c.head_dim;
  const ValueId q = b.input("q", DType::kF32, Shape::fixed({1, c.q_len, qw}));
  const ValueId k = b.input("k", DType::kF32, Shape::fixed({1, c.kv_len, kw}));
  const ValueId v = b.input("v", DType::kF32, Shape::fixed({1, c.kv_len, kw}));
  ir::Attrs a;
  a.n_heads = c.heads;
  a.n_kv_heads = c.kv_heads;
  a.head_dim = c.head_dim;
  a.scale = c.scale;
  a.mask = c.mask;
  a.window = c.window;
  b.output(b.attention(q, k, v, ir::kNoValue, a, "attn"), "y");
  m.g = finish(b);
  m.f32_inputs = {uniform(static_cast<size_t>(c.q_len * qw), 11),
                  uniform(static_cast<size_t>(c.kv_len * kw), 12),
                  uniform(static_cast<size_t>(c.kv_len * kw), 13)};
  m.i32_inputs = {{}, {}, {}};
  // Scores are bounded by scale * |q_h| * |k_g| <= scale * head_dim (entries in [-1, 1]).
  const double scale = c.scale != 0.0f ? c.scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  *smax = scale * c.head_dim;
  return m;
}

// softmax(masked_fill(x, mask, value)) over rows of 8: row 0 fully masked, row 1 half, row 2 not.
OneOp masked_softmax(float value) {
  ir::GraphBuilder b;
  OneOp m;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({3, 8}));
  const ValueId mask = b.input("mask", DType::kI32, Shape::fixed({3, 8}));
  b.output(b.softmax(b.masked_fill(x, mask, value, "fill"), "probs"), "y");
  m.g = finish(b);
  m.f32_inputs = {uniform(24, 21), {}};
  std::vector<int32_t> keep(24, 1);
  std::fill(keep.begin(), keep.begin() + 8, 0);
  for (int i = 8; i < 16; i += 2) keep[static_cast<size_t>(i)] = 0;
  m.i32_inputs = {{}, keep};
  return m;
}

}  // namespace

TEST_CASE("attribute limits: layernorm and rmsnorm agree at eps_min and eps_max") {
  for (bool rms : {false, true})
    for (float eps : {AttrLimits::eps_min, 1e-12f, AttrLimits::eps_max}) {
      const OneOp m = norm(rms, eps, 7, 80);
      check_agree(m, std::string(rms ? "rmsnorm" : "layernorm") + " eps " + std::to_string(eps),
                  [](const std::vector<float>& ref) { return 2e-6 * (1 + max_abs(ref)); });
    }
}

TEST_CASE("attribute limits: rope agrees at rope_theta_min / _max and the widest heads") {
  const int32_t max_pos = 1 << 20;  // far positions: the angle reduction matters
  struct Case {
    int32_t heads, head_dim, rotary_dim;
  };
  for (const Case& c :
       {Case{2, 64, 0}, Case{1, AttrLimits::head_dim_max, 0},
        Case{1, AttrLimits::head_dim_max, 1024}, Case{AttrLimits::n_heads_max, 2, 0}})
    for (float theta : {AttrLimits::rope_theta_min, 10000.0f, AttrLimits::rope_theta_max})
      for (ir::RopeMode mode : {ir::RopeMode::kNeox, ir::RopeMode::kGptj}) {
        const OneOp m = rope(theta, mode, c.heads, c.head_dim, c.rotary_dim, max_pos);
        check_agree(m,
                    "rope theta " + std::to_string(theta) + " heads " + std::to_string(c.heads) +
                        " head_dim " + std::to_string(c.head_dim) + " mode " +
                        ir::rope_mode_name(mode),
                    [](const std::vector<float>& ref) { return 4e-6 * (1 + max_abs(ref)); });
      }
}

TEST_CASE("attribute limits: attention agrees at scale_min / _max, windows, head limits") {
  std::vector<AttnCase> cases;
  for (float scale : {AttrLimits::scale_min, 1e-30f, 1.0f, AttrLimits::scale_max})
    for (ir::MaskKind mask : {ir::MaskKind::kNone, ir::MaskKind::kCausal}) {
      AttnCase c;
      c.scale = scale;
      c.mask = mask;
      cases.push_back(c);
    }
  for (int32_t window : {AttrLimits::window_min, 0, 1, AttrLimits::window_max}) {
    AttnCase c;
    c.window = window;
    c.mask = ir::MaskKind::kCausal;
    cases.push_back(c);
  }
  AttnCase many_heads;  // n_heads_max heads of head_dim 2, one kv head
  many_heads.heads = AttrLimits::n_heads_max;
  many_heads.kv_heads = 1;
  many_heads.head_dim = 2;
  many_heads.q_len = 1;
  cases.push_back(many_heads);
  many_heads.kv_heads = AttrLimits::n_kv_heads_max;  // and as many kv heads
  cases.push_back(many_heads);
  AttnCase wide;  // one head of head_dim_max
  wide.heads = wide.kv_heads = 1;
  wide.head_dim = AttrLimits::head_dim_max;
  wide.scale = AttrLimits::scale_max;
  cases.push_back(wide);
  for (const AttnCase& c : cases) {
    double smax = 0;
    const OneOp m = attention(c, &smax);
    // As tests/kernels/test_attention.cpp: |out - ref| <= 2^-21 (1 + smax) max|v| (max|v| <= 1),
    // and never more than 1e-2: outputs are weighted means of v, so a bound near 1 would accept
    // anything (e.g. the zeros Highway once gave at a scale of 3e38).
    check_agree(
        m,
        "attention scale " + std::to_string(c.scale) + " heads " + std::to_string(c.heads) + "/" +
            std::to_string(c.kv_heads) + " head_dim " + std::to_string(c.head_dim) + " window " +
            std::to_string(c.window) + (c.mask == ir::MaskKind::kCausal ? " causal" : ""),
        [smax](const std::vector<float>&) { return std::min(std::ldexp(1.0 + smax, -21), 1e-2); });
  }
}

TEST_CASE("attribute limits: masked_fill then softmax agree at value_min / _max") {
  for (float value : {AttrLimits::value_min, -1e4f, AttrLimits::value_max})
    check_agree(masked_softmax(value), "masked_fill value " + std::to_string(value),
                [](const std::vector<float>&) { return 1e-6; });
}

}  // namespace laya::test
