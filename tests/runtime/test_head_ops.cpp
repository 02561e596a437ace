// The data-movement and decision-head ops (gather, concat, reshape, masked_fill, segment_mean,
// act_features) through a CPU session, against values computed here from their definitions in
// ir/ops.inc (gather and reshape of f32 and of i32 rows); the execute-time index checks; sessions
// refusing deferred weights.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ir/builder.h"
#include "tests/runtime/session_util.h"

using namespace laya;
using namespace laya::ir;

namespace {

constexpr int64_t kD = 5;

// x [1, T, D] -> gather(x, idx [R]) ++ segment_mean(x, starts [R]) -> [R, 2D]; scores [R, K, 1]
// -> reshape [R, K] -> masked_fill(valid) -> act_features(valid) -> [R, 4].
Graph head_graph() {
  GraphBuilder b;
  const int t = b.symbol("tokens", 1, 64);
  const int r = b.symbol("rows", 1, 8);
  const int k = b.symbol("options", 1, 16);
  const ValueId x =
      b.input("x", DType::kF32, Shape::of({Dim::fixed(1), Dim::sym(t), Dim::fixed(kD)}));
  const ValueId idx = b.input("idx", DType::kI32, Shape::of({Dim::sym(r)}));
  const ValueId starts = b.input("starts", DType::kI32, Shape::of({Dim::sym(r)}));
  const ValueId scores =
      b.input("scores", DType::kF32, Shape::of({Dim::sym(r), Dim::sym(k), Dim::fixed(1)}));
  const ValueId valid = b.input("valid", DType::kI32, Shape::of({Dim::sym(r), Dim::sym(k)}));
  b.output(b.concat({b.gather(x, idx, "gather"), b.segment_mean(x, starts, "mean")}, "cat"), "cat");
  const ValueId logits =
      b.masked_fill(b.reshape(scores, {-1, -2}, "squeeze"), valid, -1e4f, "logits");
  b.output(logits, "logits");
  b.output(b.act_features(logits, valid, "features"), "features");
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

struct Case {
  int64_t tokens, rows, k;
  std::vector<float> x, scores;
  std::vector<int32_t> idx, starts, valid;
};

Case make_case() {
  Case c{11, 3, 4, {}, {}, {9, 0, 4}, {0, 4, 4}, {}};
  for (int64_t i = 0; i < c.tokens * kD; ++i)
    c.x.push_back(std::sin(0.37f * static_cast<float>(i)));
  const float s[12] = {0.5f, 2.0f, -1.0f, 2.0f, 3.0f, 0.0f, 9.0f, 9.0f, -4.0f, 1.0f, 0.0f, 0.0f};
  c.scores.assign(s, s + 12);
  c.valid = {1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, 0};  // 4 real options, 1 (padded), 3
  return c;
}

Status run(runtime::Session& s, const Case& c, std::vector<float>* cat, std::vector<float>* logits,
           std::vector<float>* feats) {
  const int64_t sym[3] = {c.tokens, c.rows, c.k};
  LAYA_RETURN_IF_ERROR(s.reshape(sym));
  cat->assign(static_cast<size_t>(c.rows * 2 * kD), 0.0f);
  logits->assign(static_cast<size_t>(c.rows * c.k), 0.0f);
  feats->assign(static_cast<size_t>(c.rows * 4), 0.0f);
  const void* in[5] = {c.x.data(), c.idx.data(), c.starts.data(), c.scores.data(), c.valid.data()};
  void* out[3] = {cat->data(), logits->data(), feats->data()};
  return s.execute(in, out);
}

}  // namespace

TEST_CASE("head ops: values from their definitions, on ref and Highway kernels") {
  const Graph g = head_graph();
  const Case c = make_case();
  for (const char* kernels : {"ref", "auto"}) {
    CAPTURE(kernels);
    test::TinyRun r = test::make_run(g, test::cpu_options(kernels, 2));
    std::vector<float> cat, logits, feats;
    const Status st = run(*r.session, c, &cat, &logits, &feats);
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
    for (int64_t row = 0; row < c.rows; ++row) {
      const int64_t begin = c.starts[row], end = row + 1 < c.rows ? c.starts[row + 1] : c.tokens;
      for (int64_t j = 0; j < kD; ++j) {
        CHECK(cat[row * 2 * kD + j] == c.x[c.idx[row] * kD + j]);  // gather: a copy
        double sum = 0;
        for (int64_t i = begin; i < end; ++i) sum += c.x[i * kD + j];
        const double mean = end > begin ? sum / static_cast<double>(end - begin) : 0.0;
        CHECK(cat[row * 2 * kD + kD + j] == doctest::Approx(mean).epsilon(1e-6));
      }
      int64_t n_valid = 0;
      std::vector<double> p(static_cast<size_t>(c.k));
      double m = -1e30, z = 0;
      for (int64_t j = 0; j < c.k; ++j) {
        const bool v = c.valid[row * c.k + j] != 0;
        n_valid += v;
        const float want = v ? c.scores[row * c.k + j] : -1e4f;
        CHECK(logits[row * c.k + j] == want);
        m = std::max<double>(m, want);
      }
      for (int64_t j = 0; j < c.k; ++j) z += p[j] = std::exp(logits[row * c.k + j] - m);
      double p1 = 0, p2 = 0, h = 0;
      for (double& v : p) {
        v /= z;
        if (v > p1) {
          p2 = p1;
          p1 = v;
        } else if (v > p2) {
          p2 = v;
        }
        h -= v * std::log(std::max(v, 1e-9));
      }
      const double n = static_cast<double>(std::max<int64_t>(2, n_valid));
      CHECK(feats[row * 4 + 0] == doctest::Approx(p1).epsilon(1e-6));
      CHECK(feats[row * 4 + 1] == doctest::Approx(p1 - p2).epsilon(1e-6));
      CHECK(feats[row * 4 + 2] == doctest::Approx(h / std::log(n)).epsilon(1e-6));
      CHECK(feats[row * 4 + 3] == doctest::Approx(n / 255.0).epsilon(1e-7));
    }
    // Row 1 has one real option: p = [1, 0, 0, 0] exactly (as upstream's k == 1 path: top2 = 0).
    CHECK(feats[4] == 1.0f);
    CHECK(feats[5] == 1.0f);
    CHECK(feats[6] == 0.0f);
  }
}

TEST_CASE("head ops: indices read from tensors are checked at execute") {
  const Graph g = head_graph();
  test::TinyRun r = test::make_run(g, test::cpu_options("auto"));
  std::vector<float> cat, logits, feats;
  Case c = make_case();
  c.idx[2] = 11;  // one past the last token
  Status st = run(*r.session, c, &cat, &logits, &feats);
  CHECK(st.code() == StatusCode::kIndexOutOfRange);
  CHECK(std::string(st.message()).find("gather") != std::string::npos);
  c = make_case();
  c.starts = {0, 5, 4};  // decreasing
  st = run(*r.session, c, &cat, &logits, &feats);
  CHECK(st.code() == StatusCode::kIndexOutOfRange);
  CHECK(std::string(st.message()).find("segment 1") != std::string::npos);
  c = make_case();
  c.starts = {0, 4, 12};  // past the end
  CHECK(run(*r.session, c, &cat, &logits, &feats).code() == StatusCode::kIndexOutOfRange);
  c = make_case();
  REQUIRE(run(*r.session, c, &cat, &logits, &feats).is_ok());  // still usable
}

TEST_CASE("head ops: gather and reshape move i32 rows (positions, sequence ids) unchanged") {
  // seq [1, T] -> [1, T, 1] -> gather at idx [R, K] -> [R, K, 1] -> [R, K]: the decision head's
  // sequence ids of its query rows.
  GraphBuilder b;
  const int t = b.symbol("tokens", 1, 64);
  const int r = b.symbol("rows", 1, 8);
  const int k = b.symbol("options", 1, 16);
  const ValueId seq = b.input("seq", DType::kI32, Shape::of({Dim::fixed(1), Dim::sym(t)}));
  const ValueId idx = b.input("idx", DType::kI32, Shape::of({Dim::sym(r), Dim::sym(k)}));
  const ValueId col = b.reshape(seq, {1, -2, 1}, "col");
  b.output(b.reshape(b.gather(col, idx, "gather"), {-1, -2}, "squeeze"), "out");
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  REQUIRE(g->values[g->outputs[0]].dtype == DType::kI32);
  const std::vector<int32_t> seq_v = {0, 0, 0, 1, 1, -7, 2, 2147483647};  // any bit pattern
  for (const char* kernels : {"ref", "auto"}) {
    CAPTURE(kernels);
    test::TinyRun run = test::make_run(*g, test::cpu_options(kernels, 2));
    const int64_t sym[3] = {8, 2, 3};
    REQUIRE(run.session->reshape(sym).is_ok());
    std::vector<int32_t> idx_v = {7, 0, 3, 5, 6, 2}, out(6, 0);
    const void* in[2] = {seq_v.data(), idx_v.data()};
    void* outs[1] = {out.data()};
    Status st = run.session->execute(in, outs);
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
    for (size_t i = 0; i < idx_v.size(); ++i) CHECK(out[i] == seq_v[static_cast<size_t>(idx_v[i])]);
    idx_v[4] = 8;  // one past the last token
    st = run.session->execute(in, outs);
    CHECK(st.code() == StatusCode::kIndexOutOfRange);
  }
}

namespace {
struct ZeroFill final : WeightFill {
  Status fill(uint64_t, uint8_t* dst, uint64_t n) const override {
    std::memset(dst, 0, n);
    return Status::ok();
  }
};
}  // namespace

TEST_CASE("sessions refuse graphs with deferred weights") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({2, 4}));
  const ValueId w =
      b.weight_deferred("w", DType::kF32, Shape::fixed({3, 4}), std::make_shared<ZeroFill>());
  b.output(b.matmul(x, w), "y");
  Result<Graph> g = std::move(b).finish();
  REQUIRE(g.is_ok());
  auto s = runtime::Session::prepare(*g, test::cpu_options("ref"));
  CHECK(s.status().code() == StatusCode::kFailedPrecondition);
  CHECK(std::string(s.status().message()).find("'w' is deferred") != std::string::npos);
}
