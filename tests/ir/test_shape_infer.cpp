// Shape and dtype inference (ir/shape_infer.h): every op in ir/ops.inc, success and error paths.
// Nodes are built with GraphBuilder (which runs infer_node on each node); a failing node is named
// "bad" so each error message can be checked to name it.
#include <doctest/doctest.h>

#include <climits>
#include <cmath>

#include "tests/ir/ir_test_util.h"

using namespace laya;
using namespace laya::ir;
using namespace laya::ir::test;

namespace {

struct Fx {
  GraphBuilder b;
  int batch = b.symbol("batch", 1, 4);
  int seq = b.symbol("seq", 1, 512);
  int past = b.symbol("past", 0, 1024);
  int d = b.symbol("d", 1, 64);

  Dim B() const { return Dim::sym(batch); }
  Dim S() const { return Dim::sym(seq); }
  Dim T() const { return plus(Dim::sym(past), Dim::sym(seq)); }  // KV length
  static Dim F(int64_t v) { return Dim::fixed(v); }

  ValueId in(const std::string& name, const Shape& s, DType dt = DType::kF32) {
    return b.input(name, dt, s);
  }
  ValueId w(const std::string& name, const Shape& s, DType dt = DType::kF32, Quant q = {}) {
    return zero_weight(b, name, dt, s, std::move(q));
  }
  // Finishes and returns the graph (REQUIREs it verifies).
  Graph done() {
    Result<Graph> g = std::move(b).finish();
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    return std::move(g).value();
  }
};

// The builder's error after a failed node: names node "bad" and its op.
#define CHECK_BAD(fx, op_str, code, ...)                                                     \
  do {                                                                                       \
    CHECK_STATUS((fx).b.status(), code, "'bad'", "(" op_str ")" __VA_OPT__(, ) __VA_ARGS__); \
  } while (0)

void check_type(const Graph& g, ValueId v, DType dt, const Shape& s) {
  REQUIRE(v < g.values.size());
  CAPTURE(g.values[v].name);
  CHECK(g.values[v].dtype == dt);
  CHECK_MESSAGE(g.values[v].shape == s, "got " << shape_to_string(g.values[v].shape, g.symbols)
                                               << ", want " << shape_to_string(s, g.symbols));
  CHECK(g.values[v].kind == ValueKind::kActivation);
}

}  // namespace

// ---- embedding ---------------------------------------------------------------------------------

TEST_CASE("embedding: [..., ] ids -> [..., D] for every supported table dtype") {
  Fx f;
  const ValueId ids = f.in("ids", Shape::of({f.B(), f.S()}), DType::kI32);
  const ValueId ids3 = f.in("ids3", Shape::of({f.F(2), Dim::sym(f.seq, 3), f.F(5)}), DType::kI32);
  const ValueId t32 = f.w("t32", Shape::fixed({100, 16}));
  const ValueId t16 = f.w("t16", Shape::fixed({100, 16}), DType::kF16);
  const ValueId tb16 = f.w("tb16", Shape::fixed({100, 16}), DType::kBF16);
  const ValueId ti8 = f.w("ti8", Shape::fixed({100, 16}), DType::kI8, per_channel(0, 100));
  const ValueId ti8t = f.w("ti8t", Shape::fixed({100, 16}), DType::kI8, per_tensor(0.1f));
  const ValueId tq8 = f.w("tq8", Shape::fixed({100, 64}), DType::kQ8_0, block_quant());
  const ValueId tq40 = f.w("tq40", Shape::fixed({100, 64}), DType::kQ4_0, block_quant());
  const ValueId tq41 = f.w("tq41", Shape::fixed({100, 64}), DType::kQ4_1, block_quant());
  const ValueId e32 = f.b.embedding(t32, ids);
  const ValueId e16 = f.b.embedding(t16, ids);
  const ValueId eb16 = f.b.embedding(tb16, ids);
  const ValueId ei8 = f.b.embedding(ti8, ids);
  const ValueId ei8t = f.b.embedding(ti8t, ids3);
  const ValueId eq8 = f.b.embedding(tq8, ids);
  const ValueId eq40 = f.b.embedding(tq40, ids);
  const ValueId eq41 = f.b.embedding(tq41, ids);
  const Graph g = f.done();
  const Shape bs16 = Shape::of({f.B(), f.S(), f.F(16)});
  const Shape bs64 = Shape::of({f.B(), f.S(), f.F(64)});
  check_type(g, e32, DType::kF32, bs16);
  check_type(g, e16, DType::kF32, bs16);
  check_type(g, eb16, DType::kF32, bs16);
  check_type(g, ei8, DType::kF32, bs16);
  check_type(g, ei8t, DType::kF32, Shape::of({f.F(2), Dim::sym(f.seq, 3), f.F(5), f.F(16)}));
  check_type(g, eq8, DType::kF32, bs64);
  check_type(g, eq40, DType::kF32, bs64);
  check_type(g, eq41, DType::kF32, bs64);
}

TEST_CASE("embedding errors") {
  SUBCASE("ids not i32") {
    Fx f;
    const ValueId ids = f.in("ids", Shape::of({f.S()}), DType::kF32);
    f.b.embedding(f.w("t", Shape::fixed({10, 4})), ids, "bad");
    CHECK_BAD(f, "embedding", StatusCode::kGraphDtypeMismatch, "ids 'ids' is f32, expected i32");
  }
  SUBCASE("table rank 1") {
    Fx f;
    f.b.embedding(f.w("t", Shape::fixed({40})), f.in("ids", Shape::of({f.S()}), DType::kI32),
                  "bad");
    CHECK_BAD(f, "embedding", StatusCode::kGraphShapeMismatch, "table 't' has rank 1");
  }
  SUBCASE("ids rank too large for the output") {
    Fx f;
    const ValueId ids = f.in("ids", Shape::fixed({1, 1, 1, 1, 1, 2}), DType::kI32);
    f.b.embedding(f.w("t", Shape::fixed({10, 4})), ids, "bad");
    CHECK_BAD(f, "embedding", StatusCode::kGraphShapeMismatch, "ids 'ids' has rank 6");
  }
  SUBCASE("unsupported table dtype / quant") {
    struct Case {
      DType dt;
      Quant q;
      const char* what;
    };
    Quant zp = per_tensor(0.5f);
    zp.zero_points = {3};
    const Case cases[] = {
        {DType::kI8, Quant{}, "i8 with none"},
        {DType::kI8, zp, "i8 with per_tensor"},
        {DType::kI8, per_channel(1, 4), "i8 with per_channel"},
        {DType::kU8, per_tensor(0.5f), "u8 with per_tensor"},
        {DType::kI32, Quant{}, "i32 with none"},
        {DType::kF32, per_tensor(0.5f), "f32 with per_tensor"},
    };
    for (const Case& c : cases) {
      CAPTURE(std::string(c.what));
      Fx f;
      const ValueId t = f.w("t", Shape::fixed({10, 4}), c.dt, c.q);
      f.b.embedding(t, f.in("ids", Shape::of({f.S()}), DType::kI32), "bad");
      CHECK_BAD(f, "embedding", StatusCode::kGraphQuantMismatch, c.what, "not supported");
    }
  }
  SUBCASE("arity") {
    Fx f;
    const ValueId ids = f.in("ids", Shape::of({f.S()}), DType::kI32);
    f.b.node(Op::kEmbedding, {ids}, {}, "bad");
    CHECK_BAD(f, "embedding", StatusCode::kGraphInvalid, "1 inputs, expected 2");
    Fx f2;
    const ValueId t = f2.w("t", Shape::fixed({10, 4}));
    const ValueId ids2 = f2.in("ids", Shape::of({f2.S()}), DType::kI32);
    f2.b.node(Op::kEmbedding, {t, ids2, ids2}, {}, "bad");
    CHECK_BAD(f2, "embedding", StatusCode::kGraphInvalid, "3 inputs, expected 2");
  }
}

// ---- matmul ------------------------------------------------------------------------------------

TEST_CASE("matmul: [..., K] x [N, K] (+ bias [N]) -> [..., N]; leading symbolic dims pass") {
  Fx f;
  const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(64)}));
  const ValueId x1 = f.in("x1", Shape::fixed({64}));
  const ValueId xs = f.in("xs", Shape::of({plus(Dim::sym(f.seq, 3), Dim::fixed(1)), f.F(64)}));
  const ValueId w = f.w("w", Shape::fixed({32, 64}));
  const ValueId bias = f.w("bias", Shape::fixed({32}));
  const ValueId y = f.b.matmul(x, w, bias);
  const ValueId y1 = f.b.matmul(x1, w);
  const ValueId ys = f.b.matmul(xs, w);
  struct W {
    DType dt;
    Quant q;
  };
  const W kinds[] = {{DType::kF16, {}},
                     {DType::kBF16, {}},
                     {DType::kI8, per_tensor(0.02f)},
                     {DType::kI8, per_channel(0, 48)},
                     {DType::kQ8_0, block_quant()},
                     {DType::kQ4_0, block_quant()},
                     {DType::kQ4_1, block_quant()}};
  std::vector<ValueId> ys_by_kind;
  for (const W& k : kinds)
    ys_by_kind.push_back(
        f.b.matmul(x, f.w(std::string("w_") + dtype_name(k.dt) + std::to_string(ys_by_kind.size()),
                          Shape::fixed({48, 64}), k.dt, k.q)));
  const Graph g = f.done();
  check_type(g, y, DType::kF32, Shape::of({f.B(), f.S(), f.F(32)}));
  check_type(g, y1, DType::kF32, Shape::fixed({32}));
  check_type(g, ys, DType::kF32, Shape::of({plus(Dim::sym(f.seq, 3), Dim::fixed(1)), f.F(32)}));
  for (ValueId v : ys_by_kind) check_type(g, v, DType::kF32, Shape::of({f.B(), f.S(), f.F(48)}));
}

TEST_CASE("matmul errors") {
  SUBCASE("K mismatch") {
    Fx f;
    f.b.matmul(f.in("x", Shape::of({f.S(), f.F(64)})), f.w("w", Shape::fixed({32, 48})), kNoValue,
               "bad");
    CHECK_BAD(f, "matmul", StatusCode::kGraphShapeMismatch, "x [..., K] vs w [N, K]: 64 != 48");
  }
  SUBCASE("symbolic K") {
    Fx f;
    f.b.matmul(f.in("x", Shape::of({f.S(), Dim::sym(f.d)})), f.w("w", Shape::fixed({32, 48})),
               kNoValue, "bad");
    CHECK_BAD(f, "matmul", StatusCode::kGraphShapeMismatch, "d != 48");
  }
  SUBCASE("x dtype") {
    Fx f;
    f.b.matmul(f.in("x", Shape::fixed({2, 8}), DType::kF16), f.w("w", Shape::fixed({4, 8})),
               kNoValue, "bad");
    CHECK_BAD(f, "matmul", StatusCode::kGraphDtypeMismatch, "x 'x' is f16, expected f32");
  }
  SUBCASE("x rank 0") {
    Fx f;
    f.b.matmul(f.in("x", Shape{}), f.w("w", Shape::fixed({4, 8})), kNoValue, "bad");
    CHECK_BAD(f, "matmul", StatusCode::kGraphShapeMismatch, "rank 0");
  }
  SUBCASE("weight rank 3") {
    Fx f;
    f.b.matmul(f.in("x", Shape::fixed({2, 8})), f.w("w", Shape::fixed({2, 4, 8})), kNoValue, "bad");
    CHECK_BAD(f, "matmul", StatusCode::kGraphShapeMismatch, "weight 'w' has rank 3, expected 2");
  }
  SUBCASE("bias length / dtype / rank") {
    Fx f;
    const ValueId x = f.in("x", Shape::fixed({2, 8}));
    const ValueId w = f.w("w", Shape::fixed({4, 8}));
    f.b.matmul(x, w, f.w("b", Shape::fixed({8})), "bad");
    CHECK_BAD(f, "matmul", StatusCode::kGraphShapeMismatch, "bias [N] vs w [N, K]: 8 != 4");
    Fx f2;
    f2.b.matmul(f2.in("x", Shape::fixed({2, 8})), f2.w("w", Shape::fixed({4, 8})),
                f2.w("b", Shape::fixed({4}), DType::kF16), "bad");
    CHECK_BAD(f2, "matmul", StatusCode::kGraphDtypeMismatch, "bias 'b' is f16");
    Fx f3;
    f3.b.matmul(f3.in("x", Shape::fixed({2, 8})), f3.w("w", Shape::fixed({4, 8})),
                f3.w("b", Shape::fixed({1, 4})), "bad");
    CHECK_BAD(f3, "matmul", StatusCode::kGraphShapeMismatch, "bias 'b' has rank 2");
  }
  SUBCASE("unsupported weight dtype / quant") {
    struct Case {
      DType dt;
      Quant q;
      const char* what;
    };
    Quant zp = per_channel(0, 4);
    zp.zero_points.assign(4, 1);
    const Case cases[] = {
        {DType::kI8, zp, "i8 with per_channel"},                  // zero points on a weight
        {DType::kI8, per_channel(1, 32), "i8 with per_channel"},  // channel axis must be N
        {DType::kI8, Quant{}, "i8 with none"},
        {DType::kU8, per_tensor(1.0f), "u8 with per_tensor"},
        {DType::kI32, Quant{}, "i32 with none"},
        {DType::kF16, per_tensor(1.0f), "f16 with per_tensor"},
        {DType::kBF16, block_quant(), "bf16 with block"},
    };
    for (const Case& c : cases) {
      CAPTURE(std::string(c.what));
      Fx f;
      const ValueId w = f.w("w", Shape::fixed({4, 32}), c.dt, c.q);
      f.b.matmul(f.in("x", Shape::fixed({2, 32})), w, kNoValue, "bad");
      CHECK_BAD(f, "matmul", StatusCode::kGraphQuantMismatch, c.what, "not supported");
    }
  }
  SUBCASE("arity") {
    Fx f;
    const ValueId x = f.in("x", Shape::fixed({2, 8}));
    f.b.node(Op::kMatMul, {x}, {}, "bad");
    CHECK_BAD(f, "matmul", StatusCode::kGraphInvalid, "1 inputs, expected 2..3");
    Fx f2;
    const ValueId x2 = f2.in("x", Shape::fixed({2, 8}));
    const ValueId w2 = f2.w("w", Shape::fixed({8, 8}));
    f2.b.node(Op::kMatMul, {x2, w2, x2, x2}, {}, "bad");
    CHECK_BAD(f2, "matmul", StatusCode::kGraphInvalid, "4 inputs, expected 2..3");
  }
}

// ---- add / mul ---------------------------------------------------------------------------------

TEST_CASE("add / mul: b equals a or is a suffix of it (broadcast over rows)") {
  for (Op op : {Op::kAdd, Op::kMul}) {
    CAPTURE(std::string(op_name(op)));
    Fx f;
    const Shape full = Shape::of({f.B(), f.T(), Dim::sym(f.d, 3)});
    const ValueId a = f.in("a", full);
    const ValueId same = f.b.node1(op, {a, f.in("b_same", full)});
    const ValueId rows = f.b.node1(op, {a, f.in("b_rows", Shape::of({f.T(), Dim::sym(f.d, 3)}))});
    const ValueId last = f.b.node1(op, {a, f.in("b_last", Shape::of({Dim::sym(f.d, 3)}))});
    const ValueId fixed_a = f.in("fa", Shape::fixed({3, 5, 8}));
    const ValueId wv = f.b.node1(op, {fixed_a, f.w("bias", Shape::fixed({8}))});
    const Graph g = f.done();
    check_type(g, same, DType::kF32, full);
    check_type(g, rows, DType::kF32, full);
    check_type(g, last, DType::kF32, full);
    check_type(g, wv, DType::kF32, Shape::fixed({3, 5, 8}));
  }
}

TEST_CASE("add / mul errors") {
  for (Op op : {Op::kAdd, Op::kMul}) {
    CAPTURE(std::string(op_name(op)));
    const std::string name = op_name(op);
    {  // seq vs past + seq
      Fx f;
      const ValueId a = f.in("a", Shape::of({f.B(), f.S(), f.F(8)}));
      f.b.node1(op, {a, f.in("b", Shape::of({f.T(), f.F(8)}))}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphShapeMismatch, "'bad'", "(" + name + ")",
                   "b [seq + past, 8] is not a suffix of a [batch, seq, 8]");
    }
    {  // 3 * d vs 2 * d
      Fx f;
      const ValueId a = f.in("a", Shape::of({f.S(), Dim::sym(f.d, 3)}));
      f.b.node1(op, {a, f.in("b", Shape::of({Dim::sym(f.d, 2)}))}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphShapeMismatch, "'bad'", "[2 * d]",
                   "[seq, 3 * d]");
    }
    {  // b longer than a
      Fx f;
      const ValueId a = f.in("a", Shape::fixed({8}));
      f.b.node1(op, {a, f.in("b", Shape::fixed({2, 8}))}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphShapeMismatch, "'bad'", "not a suffix");
    }
    {  // leading dim differs
      Fx f;
      const ValueId a = f.in("a", Shape::fixed({3, 4, 8}));
      f.b.node1(op, {a, f.in("b", Shape::fixed({5, 8}))}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphShapeMismatch, "'bad'", "not a suffix");
    }
    {  // dtypes
      Fx f;
      const ValueId a = f.in("a", Shape::fixed({8}), DType::kI32);
      f.b.node1(op, {a, f.in("b", Shape::fixed({8}))}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphDtypeMismatch, "'bad'", "a 'a' is i32");
      Fx f2;
      const ValueId a2 = f2.in("a", Shape::fixed({8}));
      f2.b.node1(op, {a2, f2.w("b", Shape::fixed({8}), DType::kF16)}, {}, "bad");
      CHECK_STATUS(f2.b.status(), StatusCode::kGraphDtypeMismatch, "'bad'", "b 'b' is f16");
    }
    {  // arity
      Fx f;
      const ValueId a = f.in("a", Shape::fixed({8}));
      f.b.node1(op, {a}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphInvalid, "'bad'", "1 inputs, expected 2");
    }
  }
}

// ---- layernorm / rmsnorm -----------------------------------------------------------------------

TEST_CASE("layernorm / rmsnorm: shape preserved, gamma / beta [D]") {
  Fx f;
  const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(16)}));
  const ValueId gamma = f.w("gamma", Shape::fixed({16}));
  const ValueId beta = f.w("beta", Shape::fixed({16}));
  const ValueId ln = f.b.layernorm(x, gamma, beta, 1e-5f);
  const ValueId ln_nobeta = f.b.layernorm(x, gamma, kNoValue, 0.0f);
  const ValueId rms = f.b.rmsnorm(x, gamma, 1e-6f);
  const ValueId x1 = f.in("x1", Shape::fixed({16}));
  const ValueId rms1 = f.b.rmsnorm(x1, gamma, 1e-6f);
  const Graph g = f.done();
  const Shape s = Shape::of({f.B(), f.S(), f.F(16)});
  check_type(g, ln, DType::kF32, s);
  check_type(g, ln_nobeta, DType::kF32, s);
  check_type(g, rms, DType::kF32, s);
  check_type(g, rms1, DType::kF32, Shape::fixed({16}));
}

TEST_CASE("layernorm / rmsnorm errors") {
  SUBCASE("gamma / beta length") {
    Fx f;
    const ValueId x = f.in("x", Shape::of({f.S(), f.F(16)}));
    f.b.layernorm(x, f.w("g", Shape::fixed({8})), kNoValue, 1e-5f, "bad");
    CHECK_BAD(f, "layernorm", StatusCode::kGraphShapeMismatch, "gamma [D] vs x [..., D]: 8 != 16");
    Fx f2;
    const ValueId x2 = f2.in("x", Shape::of({f2.S(), f2.F(16)}));
    f2.b.layernorm(x2, f2.w("g", Shape::fixed({16})), f2.w("b", Shape::fixed({12})), 1e-5f, "bad");
    CHECK_BAD(f2, "layernorm", StatusCode::kGraphShapeMismatch, "beta [D] vs x [..., D]: 12 != 16");
    Fx f3;
    const ValueId x3 = f3.in("x", Shape::of({f3.S(), Dim::sym(f3.d)}));
    f3.b.rmsnorm(x3, f3.w("g", Shape::fixed({16})), 1e-5f, "bad");
    CHECK_BAD(f3, "rmsnorm", StatusCode::kGraphShapeMismatch, "16 != d");
  }
  SUBCASE("dtypes and ranks") {
    Fx f;
    f.b.rmsnorm(f.in("x", Shape::fixed({2, 16})), f.w("g", Shape::fixed({16}), DType::kF16), 1e-5f,
                "bad");
    CHECK_BAD(f, "rmsnorm", StatusCode::kGraphDtypeMismatch, "gamma 'g' is f16");
    Fx f2;
    f2.b.rmsnorm(f2.in("x", Shape::fixed({2, 16}), DType::kI32), f2.w("g", Shape::fixed({16})),
                 1e-5f, "bad");
    CHECK_BAD(f2, "rmsnorm", StatusCode::kGraphDtypeMismatch, "x 'x' is i32");
    Fx f3;
    f3.b.rmsnorm(f3.in("x", Shape::fixed({2, 16})), f3.w("g", Shape::fixed({1, 16})), 1e-5f, "bad");
    CHECK_BAD(f3, "rmsnorm", StatusCode::kGraphShapeMismatch, "gamma 'g' has rank 2, expected 1");
    Fx f4;
    f4.b.layernorm(f4.in("x", Shape{}), f4.w("g", Shape::fixed({16})), kNoValue, 1e-5f, "bad");
    CHECK_BAD(f4, "layernorm", StatusCode::kGraphShapeMismatch, "x 'x' has rank 0");
  }
  SUBCASE("eps") {
    for (float eps : {-1e-5f, NAN}) {
      Fx f;
      f.b.layernorm(f.in("x", Shape::fixed({2, 16})), f.w("g", Shape::fixed({16})), kNoValue, eps,
                    "bad");
      CHECK_BAD(f, "layernorm", StatusCode::kGraphBadAttribute, "eps");
    }
  }
  SUBCASE("arity") {
    Fx f;
    const ValueId x = f.in("x", Shape::fixed({2, 16}));
    const ValueId g = f.w("g", Shape::fixed({16}));
    f.b.node1(Op::kRmsNorm, {x, g, g}, {}, "bad");
    CHECK_BAD(f, "rmsnorm", StatusCode::kGraphInvalid, "3 inputs, expected 2");
    Fx f2;
    f2.b.node1(Op::kLayerNorm, {f2.in("x", Shape::fixed({2, 16}))}, {}, "bad");
    CHECK_BAD(f2, "layernorm", StatusCode::kGraphInvalid, "1 inputs, expected 2..3");
  }
}

// ---- rope --------------------------------------------------------------------------------------

TEST_CASE("rope: x [B, S, H*hd], pos i32 [B, S] -> x's shape") {
  Fx f;
  const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(64)}));
  const ValueId pos = f.in("pos", Shape::of({f.B(), f.S()}), DType::kI32);
  const ValueId r1 = f.b.rope(x, pos, 16, 10000.0f);
  const ValueId r2 = f.b.rope(x, pos, 16, 500000.0f, RopeMode::kGptj, 8);
  const ValueId r3 = f.b.rope(x, pos, 64, 10000.0f, RopeMode::kNeox, 2);
  const Graph g = f.done();
  const Shape s = Shape::of({f.B(), f.S(), f.F(64)});
  check_type(g, r1, DType::kF32, s);
  check_type(g, r2, DType::kF32, s);
  check_type(g, r3, DType::kF32, s);
}

TEST_CASE("rope errors") {
  auto run = [](int32_t head_dim, int32_t rotary_dim, int32_t mode, float theta, StatusCode code,
                const std::string& what) {
    Fx f;
    const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(64)}));
    const ValueId pos = f.in("pos", Shape::of({f.B(), f.S()}), DType::kI32);
    f.b.rope(x, pos, head_dim, theta, static_cast<RopeMode>(mode), rotary_dim, "bad");
    CHECK_BAD(f, "rope", code, what);
  };
  run(24, 0, 0, 1e4f, StatusCode::kGraphBadAttribute, "head_dim 24 does not divide 64");
  run(0, 0, 0, 1e4f, StatusCode::kGraphBadAttribute, "head_dim 0");
  run(-16, 0, 0, 1e4f, StatusCode::kGraphBadAttribute, "head_dim -16");
  run(16, 7, 0, 1e4f, StatusCode::kGraphBadAttribute, "rotary_dim 7 must be even");
  run(16, 32, 0, 1e4f, StatusCode::kGraphBadAttribute, "rotary_dim 32");
  run(16, -2, 0, 1e4f, StatusCode::kGraphBadAttribute, "rotary_dim -2");
  run(16, 0, 2, 1e4f, StatusCode::kGraphBadAttribute, "rope_mode 2");
  run(16, 0, -1, 1e4f, StatusCode::kGraphBadAttribute, "rope_mode -1");
  run(16, 0, 0, 0.0f, StatusCode::kGraphBadAttribute, "rope_theta");
  run(16, 0, 0, NAN, StatusCode::kGraphBadAttribute, "rope_theta");
  {  // odd head_dim with the default rotary_dim (= head_dim)
    Fx f;
    const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(63)}));
    f.b.rope(x, f.in("pos", Shape::of({f.B(), f.S()}), DType::kI32), 9, 1e4f, RopeMode::kNeox, 0,
             "bad");
    CHECK_BAD(f, "rope", StatusCode::kGraphBadAttribute, "must be even");
  }
  {  // positions over past + seq for x over seq
    Fx f;
    const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(64)}));
    f.b.rope(x, f.in("pos", Shape::of({f.B(), f.T()}), DType::kI32), 16, 1e4f, RopeMode::kNeox, 0,
             "bad");
    CHECK_BAD(f, "rope", StatusCode::kGraphShapeMismatch,
              "seq of positions vs x: seq + past != seq");
  }
  {  // batch mismatch
    Fx f;
    const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(64)}));
    f.b.rope(x, f.in("pos", Shape::of({f.F(1), f.S()}), DType::kI32), 16, 1e4f, RopeMode::kNeox, 0,
             "bad");
    CHECK_BAD(f, "rope", StatusCode::kGraphShapeMismatch, "batch of positions vs x: 1 != batch");
  }
  {  // positions dtype, x rank, positions rank
    Fx f;
    const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(64)}));
    f.b.rope(x, f.in("pos", Shape::of({f.B(), f.S()})), 16, 1e4f, RopeMode::kNeox, 0, "bad");
    CHECK_BAD(f, "rope", StatusCode::kGraphDtypeMismatch, "positions 'pos' is f32, expected i32");
    Fx f2;
    const ValueId x2 = f2.in("x", Shape::of({f2.S(), f2.F(64)}));
    f2.b.rope(x2, f2.in("pos", Shape::of({f2.B(), f2.S()}), DType::kI32), 16, 1e4f, RopeMode::kNeox,
              0, "bad");
    CHECK_BAD(f2, "rope", StatusCode::kGraphShapeMismatch, "x 'x' has rank 2, expected 3");
    Fx f3;
    const ValueId x3 = f3.in("x", Shape::of({f3.B(), f3.S(), f3.F(64)}));
    f3.b.rope(x3, f3.in("pos", Shape::of({f3.S()}), DType::kI32), 16, 1e4f, RopeMode::kNeox, 0,
              "bad");
    CHECK_BAD(f3, "rope", StatusCode::kGraphShapeMismatch, "positions 'pos' has rank 1");
  }
  {  // symbolic width
    Fx f;
    const ValueId x = f.in("x", Shape::of({f.B(), f.S(), Dim::sym(f.d, 16)}));
    f.b.rope(x, f.in("pos", Shape::of({f.B(), f.S()}), DType::kI32), 16, 1e4f, RopeMode::kNeox, 0,
             "bad");
    CHECK_BAD(f, "rope", StatusCode::kGraphShapeMismatch, "fixed last dimension, got 16 * d");
  }
}

// ---- attention ---------------------------------------------------------------------------------

namespace {

Attrs attn_attrs(int32_t heads, int32_t kv_heads, int32_t head_dim) {
  Attrs a;
  a.n_heads = heads;
  a.n_kv_heads = kv_heads;
  a.head_dim = head_dim;
  return a;
}

// q [batch, seq, 8*16], k / v [batch, past + seq, 2*16], key_mask i32 [batch, past + seq]
struct AttnFx : Fx {
  ValueId q = in("q", Shape::of({B(), S(), F(128)}));
  ValueId k = in("k", Shape::of({B(), T(), F(32)}));
  ValueId v = in("v", Shape::of({B(), T(), F(32)}));
  ValueId mask = in("mask", Shape::of({B(), T()}), DType::kI32);
};

}  // namespace

TEST_CASE("attention: GQA over a KV cache of past + seq rows, with and without a key mask") {
  AttnFx f;
  Attrs causal = attn_attrs(8, 2, 16);
  causal.mask = MaskKind::kCausal;
  causal.window = 4;
  causal.scale = 0.125f;
  const ValueId o1 = f.b.attention(f.q, f.k, f.v, f.mask, causal);
  const ValueId o2 = f.b.attention(f.q, f.k, f.v, kNoValue, attn_attrs(8, 2, 16));  // no mask
  const ValueId o3 = f.b.attention(f.q, f.k, f.v, kNoValue, attn_attrs(4, 1, 32));  // MQA
  // Encoder self-attention: T = S.
  const ValueId qe = f.in("qe", Shape::of({f.B(), f.S(), f.F(64)}));
  const ValueId me = f.in("me", Shape::of({f.B(), f.S()}), DType::kI32);
  const ValueId o4 = f.b.attention(qe, qe, qe, me, attn_attrs(4, 4, 16));
  const Graph g = f.done();
  check_type(g, o1, DType::kF32, Shape::of({f.B(), f.S(), f.F(128)}));
  check_type(g, o2, DType::kF32, Shape::of({f.B(), f.S(), f.F(128)}));
  check_type(g, o3, DType::kF32, Shape::of({f.B(), f.S(), f.F(128)}));
  check_type(g, o4, DType::kF32, Shape::of({f.B(), f.S(), f.F(64)}));
}

TEST_CASE("attention errors: attributes") {
  struct Case {
    Attrs a;
    const char* what;
  };
  Attrs bad_mask = attn_attrs(8, 2, 16);
  bad_mask.mask = static_cast<MaskKind>(2);
  Attrs bad_window = attn_attrs(8, 2, 16);
  bad_window.window = -2;
  Attrs bad_scale = attn_attrs(8, 2, 16);
  bad_scale.scale = -1.0f;
  Attrs nan_scale = attn_attrs(8, 2, 16);
  nan_scale.scale = NAN;
  const Case cases[] = {
      {attn_attrs(8, 3, 16), "n_heads 8, n_kv_heads 3"},  // n_heads % n_kv_heads != 0
      {attn_attrs(8, 0, 16), "n_kv_heads 0"},
      {attn_attrs(0, 2, 16), "n_heads 0"},
      {attn_attrs(8, 2, 0), "head_dim 0"},
      {attn_attrs(8, -2, 16), "n_kv_heads -2"},
      {bad_mask, "mask 2"},
      {bad_window, "window"},
      {bad_scale, "scale"},
      {nan_scale, "scale"},
  };
  for (const Case& c : cases) {
    CAPTURE(std::string(c.what));
    AttnFx f;
    f.b.attention(f.q, f.k, f.v, f.mask, c.a, "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphBadAttribute, c.what);
  }
}

TEST_CASE("attention errors: widths, batch, lengths, mask, dtypes, ranks, arity") {
  SUBCASE("q width vs n_heads * head_dim (head_dim does not fit)") {
    AttnFx f;
    f.b.attention(f.q, f.k, f.v, f.mask, attn_attrs(8, 2, 12), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphShapeMismatch,
              "q width vs n_heads * head_dim: 128 != 96");
  }
  SUBCASE("k width vs n_kv_heads * head_dim") {
    AttnFx f;
    f.b.attention(f.q, f.k, f.v, f.mask, attn_attrs(8, 4, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphShapeMismatch,
              "k width vs n_kv_heads * head_dim: 32 != 64");
  }
  SUBCASE("v width") {
    AttnFx f;
    const ValueId v = f.in("v2", Shape::of({f.B(), f.T(), f.F(48)}));
    f.b.attention(f.q, f.k, v, f.mask, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphShapeMismatch, "v width vs k width: 48 != 32");
  }
  SUBCASE("batch") {
    AttnFx f;
    const ValueId k = f.in("k2", Shape::of({f.F(2), f.T(), f.F(32)}));
    f.b.attention(f.q, k, f.v, f.mask, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphShapeMismatch, "k batch vs q batch: 2 != batch");
    AttnFx f2;
    const ValueId v2 = f2.in("v2", Shape::of({f2.F(2), f2.T(), f2.F(32)}));
    f2.b.attention(f2.q, f2.k, v2, kNoValue, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f2, "attention", StatusCode::kGraphShapeMismatch, "v batch vs k batch: 2 != batch");
    AttnFx f3;  // keys shared by every batch row (batch 1), but v per row
    const ValueId k3 = f3.in("k3", Shape::of({f3.F(1), f3.T(), f3.F(32)}));
    f3.b.attention(f3.q, k3, f3.v, kNoValue, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f3, "attention", StatusCode::kGraphShapeMismatch, "v batch vs k batch: batch != 1");
  }
  SUBCASE("v length seq vs k length past + seq") {
    AttnFx f;
    const ValueId v = f.in("v2", Shape::of({f.B(), f.S(), f.F(32)}));
    f.b.attention(f.q, f.k, v, f.mask, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphShapeMismatch,
              "v length vs k length: seq != seq + past");
  }
  SUBCASE("key mask over seq while keys span past + seq") {
    AttnFx f;
    const ValueId m = f.in("m2", Shape::of({f.B(), f.S()}), DType::kI32);
    f.b.attention(f.q, f.k, f.v, m, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphShapeMismatch,
              "key_mask length vs k length: seq != seq + past");
    AttnFx f2;
    const ValueId m2 = f2.in("m2", Shape::of({f2.F(3), f2.T()}), DType::kI32);
    f2.b.attention(f2.q, f2.k, f2.v, m2, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f2, "attention", StatusCode::kGraphShapeMismatch, "key_mask batch vs k batch");
    AttnFx f3;
    const ValueId m3 = f3.in("m3", Shape::of({f3.B(), f3.T()}));
    f3.b.attention(f3.q, f3.k, f3.v, m3, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f3, "attention", StatusCode::kGraphDtypeMismatch, "key_mask 'm3' is f32");
    AttnFx f4;
    const ValueId m4 = f4.in("m4", Shape::of({f4.T()}), DType::kI32);
    f4.b.attention(f4.q, f4.k, f4.v, m4, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f4, "attention", StatusCode::kGraphShapeMismatch, "key_mask 'm4' has rank 1");
  }
  SUBCASE("dtypes and ranks of q / k / v") {
    AttnFx f;
    const ValueId k = f.in("k2", Shape::of({f.B(), f.T(), f.F(32)}), DType::kF16);
    f.b.attention(f.q, k, f.v, f.mask, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphDtypeMismatch, "k 'k2' is f16");
    AttnFx f2;
    const ValueId q = f2.in("q2", Shape::of({f2.S(), f2.F(128)}));
    f2.b.attention(q, f2.k, f2.v, f2.mask, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f2, "attention", StatusCode::kGraphShapeMismatch, "q 'q2' has rank 2, expected 3");
  }
  SUBCASE("arity") {
    AttnFx f;
    f.b.node1(Op::kAttention, {f.q, f.k}, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphInvalid, "2 inputs, expected 3..8");
    AttnFx f2;
    f2.b.node1(Op::kAttention,
               {f2.q, f2.k, f2.v, f2.mask, f2.mask, f2.mask, f2.mask, f2.mask, f2.mask},
               attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f2, "attention", StatusCode::kGraphInvalid, "9 inputs, expected 3..8");
  }
}

TEST_CASE("attention with positions and sequence ids: packed rows and KV cache cells") {
  AttnFx f;
  using Ids = GraphBuilder::AttentionIds;
  // Packed rows (encoder): self-attention with seq ids and positions, no key mask (a hole).
  const ValueId qe = f.in("qe", Shape::of({f.B(), f.S(), f.F(64)}));
  const ValueId pe = f.in("pe", Shape::of({f.B(), f.S()}), DType::kI32);
  const ValueId se = f.in("se", Shape::of({f.B(), f.S()}), DType::kI32);
  const ValueId o1 = f.b.attention(qe, qe, qe, kNoValue, Ids{pe, pe, se, se}, attn_attrs(4, 4, 16));
  // Over the cells of a cache shared by every batch row: k / v [1, C, W], k_pos / k_seq [1, C].
  const Dim C = f.F(300);
  const ValueId kc = f.in("kc", Shape::of({f.F(1), C, f.F(32)}));
  const ValueId vc = f.in("vc", Shape::of({f.F(1), C, f.F(32)}));
  const ValueId kp = f.in("kp", Shape::of({f.F(1), C}), DType::kI32);
  const ValueId ks = f.in("ks", Shape::of({f.F(1), C}), DType::kI32);
  const ValueId qp = f.in("qp", Shape::of({f.B(), f.S()}), DType::kI32);
  const ValueId qs = f.in("qs", Shape::of({f.B(), f.S()}), DType::kI32);
  Attrs causal = attn_attrs(8, 2, 16);
  causal.mask = MaskKind::kCausal;
  const ValueId o2 = f.b.attention(f.q, kc, vc, kNoValue, Ids{qp, kp, qs, ks}, causal, "cells");
  // Positions only, and seq ids only, with a key mask.
  const ValueId o3 = f.b.attention(f.q, f.k, f.v, f.mask,
                                   Ids{qp, f.in("tp", Shape::of({f.B(), f.T()}), DType::kI32)},
                                   attn_attrs(8, 2, 16));
  const ValueId o4 =
      f.b.attention(f.q, f.k, f.v, f.mask,
                    Ids{kNoValue, kNoValue, qs, f.in("ts", Shape::of({f.B(), f.T()}), DType::kI32)},
                    attn_attrs(8, 2, 16));
  const Graph g = f.done();
  check_type(g, o1, DType::kF32, Shape::of({f.B(), f.S(), f.F(64)}));
  check_type(g, o2, DType::kF32, Shape::of({f.B(), f.S(), f.F(128)}));
  check_type(g, o3, DType::kF32, Shape::of({f.B(), f.S(), f.F(128)}));
  check_type(g, o4, DType::kF32, Shape::of({f.B(), f.S(), f.F(128)}));
  // The holes stay in their slots; trailing absent inputs are dropped.
  const Node& n1 = g.nodes[g.values[o1].producer];
  CHECK(n1.inputs.size() == 8);
  CHECK(n1.inputs[3] == kNoValue);
  CHECK(n1.input(4) == pe);
  CHECK(g.nodes[g.values[o3].producer].inputs.size() == 6);
  const Node& n4 = g.nodes[g.values[o4].producer];
  CHECK(n4.inputs.size() == 8);
  CHECK(n4.inputs[4] == kNoValue);
  CHECK(n4.inputs[5] == kNoValue);
  CHECK(n4.input(9) == kNoValue);
}

TEST_CASE("attention errors: positions and sequence ids") {
  using Ids = GraphBuilder::AttentionIds;
  auto ids_in = [](AttnFx& f, const char* name, bool query, DType dt = DType::kI32) {
    return f.in(name, Shape::of({f.B(), query ? f.S() : f.T()}), dt);
  };
  SUBCASE("pairs") {
    AttnFx f;
    f.b.attention(f.q, f.k, f.v, kNoValue, Ids{ids_in(f, "qp", true)}, attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphInvalid, "q_pos and k_pos come as a pair");
    AttnFx f2;
    f2.b.attention(f2.q, f2.k, f2.v, kNoValue,
                   Ids{kNoValue, kNoValue, kNoValue, ids_in(f2, "ks", false)}, attn_attrs(8, 2, 16),
                   "bad");
    CHECK_BAD(f2, "attention", StatusCode::kGraphInvalid, "q_seq and k_seq come as a pair");
  }
  SUBCASE("dtypes, ranks and shapes") {
    AttnFx f;
    f.b.attention(f.q, f.k, f.v, kNoValue,
                  Ids{ids_in(f, "qp", true, DType::kF32), ids_in(f, "kp", false)},
                  attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphDtypeMismatch, "q_pos 'qp' is f32");
    AttnFx f2;  // k_pos over the query length
    f2.b.attention(f2.q, f2.k, f2.v, kNoValue, Ids{ids_in(f2, "qp", true), ids_in(f2, "kp", true)},
                   attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f2, "attention", StatusCode::kGraphShapeMismatch,
              "k_pos length vs k length: seq != seq + past");
    AttnFx f3;  // q_seq of another batch
    f3.b.attention(f3.q, f3.k, f3.v, kNoValue,
                   Ids{kNoValue, kNoValue, f3.in("qs", Shape::of({f3.F(1), f3.S()}), DType::kI32),
                       ids_in(f3, "ks", false)},
                   attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f3, "attention", StatusCode::kGraphShapeMismatch,
              "q_seq batch vs q batch: 1 != batch");
    AttnFx f4;
    f4.b.attention(f4.q, f4.k, f4.v, kNoValue,
                   Ids{kNoValue, kNoValue, ids_in(f4, "qs", true),
                       f4.in("ks", Shape::of({f4.T()}), DType::kI32)},
                   attn_attrs(8, 2, 16), "bad");
    CHECK_BAD(f4, "attention", StatusCode::kGraphShapeMismatch, "k_seq 'ks' has rank 1");
  }
  SUBCASE("absent inputs: a required one, or a trailing hole in a hand-made node") {
    AttnFx f;
    f.b.node1(Op::kAttention, {f.q, kNoValue, f.v, f.mask}, attn_attrs(8, 2, 16), "bad");
    CHECK_STATUS(f.b.status(), StatusCode::kInvalidArgument, "'bad'", "input 1 is missing");
    AttnFx f2;
    const ValueId o = f2.b.attention(f2.q, f2.k, f2.v, f2.mask, attn_attrs(8, 2, 16), "attn");
    Graph g = f2.done();
    Node& n = g.nodes[g.values[o].producer];
    n.inputs.push_back(kNoValue);
    CHECK_STATUS(graph_verify(g), StatusCode::kGraphInvalid, "'attn'", "last input is absent");
    n.inputs = {n.inputs[0], kNoValue, n.inputs[2]};
    CHECK_STATUS(graph_verify(g), StatusCode::kGraphUndefinedValue, "'attn'",
                 "input 1 is required but absent");
  }
}

// ---- unary ops ---------------------------------------------------------------------------------

TEST_CASE("gelu / silu / relu / softmax keep the shape at every rank") {
  Fx f;
  const Shape shapes[] = {Shape::fixed({7}), Shape::of({f.B(), f.T(), Dim::sym(f.d, 3)}),
                          Shape::fixed({1, 2, 3, 4, 5, 6})};
  std::vector<std::pair<ValueId, Shape>> outs;
  int i = 0;
  for (const Shape& s : shapes) {
    const ValueId x = f.in("x" + std::to_string(i++), s);
    outs.push_back({f.b.gelu(x, ActKind::kGeluErf), s});
    outs.push_back({f.b.gelu(x, ActKind::kGeluTanh), s});
    outs.push_back({f.b.silu(x), s});
    outs.push_back({f.b.relu(x), s});
    outs.push_back({f.b.softmax(x), s});
  }
  const Graph g = f.done();
  for (const auto& [v, s] : outs) check_type(g, v, DType::kF32, s);
}

TEST_CASE("gelu / silu / relu / softmax errors") {
  for (Op op : {Op::kGelu, Op::kSilu, Op::kRelu, Op::kSoftmax}) {
    const std::string name = op_name(op);
    CAPTURE(name);
    {
      Fx f;
      f.b.node1(op, {f.in("x", Shape::fixed({4}), DType::kI32)}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphDtypeMismatch, "'bad'", "(" + name + ")",
                   "x 'x' is i32, expected f32");
    }
    {
      Fx f;
      f.b.node1(op, {f.in("x", Shape{})}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphShapeMismatch, "'bad'", "rank 0");
    }
    {
      Fx f;
      const ValueId x = f.in("x", Shape::fixed({4}));
      f.b.node1(op, {x, x}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphInvalid, "'bad'", "2 inputs, expected 1");
    }
    {
      Fx f;
      f.b.node1(op, {}, {}, "bad");
      CHECK_STATUS(f.b.status(), StatusCode::kGraphInvalid, "'bad'", "0 inputs, expected 1");
    }
  }
  for (int32_t act :
       {static_cast<int32_t>(ActKind::kSilu), static_cast<int32_t>(ActKind::kRelu), -1, 7}) {
    CAPTURE(act);
    Fx f;
    f.b.gelu(f.in("x", Shape::fixed({4})), static_cast<ActKind>(act), "bad");
    CHECK_BAD(f, "gelu", StatusCode::kGraphBadAttribute, "act");
  }
}

// ---- glu ---------------------------------------------------------------------------------------

TEST_CASE("glu halves the last dimension, every act") {
  Fx f;
  const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(24)}));
  const ValueId x1 = f.in("x1", Shape::fixed({2}));
  std::vector<ValueId> outs;
  for (ActKind act : {ActKind::kGeluErf, ActKind::kGeluTanh, ActKind::kSilu, ActKind::kRelu})
    outs.push_back(f.b.glu(x, act));
  const ValueId small = f.b.glu(x1, ActKind::kSilu);
  const Graph g = f.done();
  for (ValueId v : outs) check_type(g, v, DType::kF32, Shape::of({f.B(), f.S(), f.F(12)}));
  check_type(g, small, DType::kF32, Shape::fixed({1}));
}

TEST_CASE("glu errors") {
  {
    Fx f;
    f.b.glu(f.in("x", Shape::fixed({3, 25})), ActKind::kSilu, "bad");
    CHECK_BAD(f, "glu", StatusCode::kGraphShapeMismatch, "last dimension 25 is odd");
  }
  {
    Fx f;
    f.b.glu(f.in("x", Shape::of({f.S(), Dim::sym(f.d, 2)})), ActKind::kSilu, "bad");
    CHECK_BAD(f, "glu", StatusCode::kGraphShapeMismatch, "fixed last dimension, got 2 * d");
  }
  for (int32_t act : {-1, 4}) {
    Fx f;
    f.b.glu(f.in("x", Shape::fixed({3, 24})), static_cast<ActKind>(act), "bad");
    CHECK_BAD(f, "glu", StatusCode::kGraphBadAttribute, "act " + std::to_string(act));
  }
  {
    Fx f;
    f.b.glu(f.in("x", Shape::fixed({3, 24}), DType::kBF16), ActKind::kSilu, "bad");
    CHECK_BAD(f, "glu", StatusCode::kGraphDtypeMismatch, "x 'x' is bf16");
  }
  {
    Fx f;
    f.b.glu(f.in("x", Shape{}), ActKind::kSilu, "bad");
    CHECK_BAD(f, "glu", StatusCode::kGraphShapeMismatch, "rank 0");
  }
}

// ---- split -------------------------------------------------------------------------------------

TEST_CASE("split: one output per size along the last axis") {
  Fx f;
  const ValueId x = f.in("x", Shape::of({f.B(), f.T(), f.F(24)}));
  const std::vector<ValueId> parts = f.b.split(x, {4, 12, 8}, "qkv");
  const std::vector<ValueId> one = f.b.split(x, {24});
  const std::vector<ValueId> ones = f.b.split(f.in("y", Shape::fixed({3})), {1, 1, 1});
  REQUIRE(parts.size() == 3);
  REQUIRE(one.size() == 1);
  REQUIRE(ones.size() == 3);
  const Graph g = f.done();
  check_type(g, parts[0], DType::kF32, Shape::of({f.B(), f.T(), f.F(4)}));
  check_type(g, parts[1], DType::kF32, Shape::of({f.B(), f.T(), f.F(12)}));
  check_type(g, parts[2], DType::kF32, Shape::of({f.B(), f.T(), f.F(8)}));
  check_type(g, one[0], DType::kF32, Shape::of({f.B(), f.T(), f.F(24)}));
  for (ValueId v : ones) check_type(g, v, DType::kF32, Shape::fixed({1}));
  CHECK(g.values[parts[0]].name == "qkv.0");
  CHECK(g.values[parts[2]].name == "qkv.2");
  for (ValueId v : parts) CHECK(g.values[v].producer == g.values[parts[0]].producer);
}

TEST_CASE("split errors") {
  auto run = [](const std::vector<int64_t>& sizes, StatusCode code, const std::string& what) {
    Fx f;
    f.b.split(f.in("x", Shape::of({f.S(), f.F(24)})), sizes, "bad");
    CHECK_BAD(f, "split", code, what);
  };
  run({4, 12}, StatusCode::kGraphBadAttribute, "sizes sum to 16, last dimension is 24");
  run({4, 12, 8, 1}, StatusCode::kGraphBadAttribute, "sizes sum to 25");
  run({}, StatusCode::kGraphBadAttribute, "at least one size");
  run({0, 24}, StatusCode::kGraphBadAttribute, "positive");
  run({-8, 32}, StatusCode::kGraphBadAttribute, "positive");
  // Sizes whose sum overflows int64 must be rejected, not wrapped around to 24.
  run({INT64_MAX, INT64_MAX, 26}, StatusCode::kGraphBadAttribute, "sizes");
  {
    Fx f;
    f.b.split(f.in("x", Shape::of({f.S(), Dim::sym(f.d)})), {1, 1}, "bad");
    CHECK_BAD(f, "split", StatusCode::kGraphShapeMismatch, "fixed last dimension, got d");
  }
  {
    Fx f;
    f.b.split(f.in("x", Shape::fixed({4}), DType::kI32), {2, 2}, "bad");
    CHECK_BAD(f, "split", StatusCode::kGraphDtypeMismatch, "x 'x' is i32");
  }
}

// ---- gather, concat, reshape, masked_fill, segment_mean, act_features ---------------------------

TEST_CASE("gather: rows of x at idx -> [idx..., D]") {
  Fx f;
  const ValueId h = f.in("h", Shape::of({f.F(1), f.S(), f.F(16)}));
  const ValueId idx = f.in("idx", Shape::of({f.B(), Dim::sym(f.d)}), DType::kI32);
  const ValueId one = f.in("one", Shape::of({f.B()}), DType::kI32);
  const ValueId g1 = f.b.gather(h, idx);
  const ValueId g2 = f.b.gather(h, one);
  // i32 rows (positions, sequence ids) keep their dtype.
  const ValueId g3 = f.b.gather(f.in("pos", Shape::of({f.F(1), f.S(), f.F(1)}), DType::kI32), idx);
  const Graph g = f.done();
  check_type(g, g1, DType::kF32, Shape::of({f.B(), Dim::sym(f.d), f.F(16)}));
  check_type(g, g2, DType::kF32, Shape::of({f.B(), f.F(16)}));
  check_type(g, g3, DType::kI32, Shape::of({f.B(), Dim::sym(f.d), f.F(1)}));
}

TEST_CASE("gather errors") {
  {
    Fx f;
    f.b.gather(f.in("x", Shape::fixed({4, 8})), f.in("i", Shape::fixed({2})), "bad");
    CHECK_BAD(f, "gather", StatusCode::kGraphDtypeMismatch, "idx 'i' is f32, expected i32");
  }
  {
    Fx f;
    f.b.gather(f.in("x", Shape::fixed({4, 8}), DType::kF16),
               f.in("i", Shape::fixed({2}), DType::kI32), "bad");
    CHECK_BAD(f, "gather", StatusCode::kGraphDtypeMismatch, "x 'x' is f16, expected f32 or i32");
  }
  {
    Fx f;
    f.b.gather(f.in("x", Shape::fixed({4, 8})),
               f.in("i", Shape::fixed({1, 1, 1, 1, 1, 1}), DType::kI32), "bad");
    CHECK_BAD(f, "gather", StatusCode::kGraphShapeMismatch, "rank 6");
  }
}

TEST_CASE("concat: along the last axis, leading dims equal") {
  Fx f;
  const ValueId a = f.in("a", Shape::of({f.B(), f.S(), f.F(16)}));
  const ValueId b = f.in("b", Shape::of({f.B(), f.S(), f.F(4)}));
  const ValueId c = f.in("c", Shape::of({f.B(), f.S(), f.F(1)}));
  const ValueId y = f.b.concat({a, b, c});
  const ValueId z = f.b.concat({b, b});
  const Graph g = f.done();
  check_type(g, y, DType::kF32, Shape::of({f.B(), f.S(), f.F(21)}));
  check_type(g, z, DType::kF32, Shape::of({f.B(), f.S(), f.F(8)}));
}

TEST_CASE("concat errors") {
  {
    Fx f;
    f.b.concat({f.in("a", Shape::of({f.B(), f.F(4)})), f.in("b", Shape::of({f.S(), f.F(4)}))},
               "bad");
    CHECK_BAD(f, "concat", StatusCode::kGraphShapeMismatch, "leading dim 0 of input 1");
  }
  {
    Fx f;
    f.b.concat({f.in("a", Shape::of({f.B(), f.F(4)})), f.in("b", Shape::of({f.B(), f.S()}))},
               "bad");
    CHECK_BAD(f, "concat", StatusCode::kGraphShapeMismatch, "fixed last dimension, got seq");
  }
  {
    Fx f;
    f.b.concat({f.in("a", Shape::fixed({2, 4})), f.in("b", Shape::fixed({1, 2, 4}))}, "bad");
    CHECK_BAD(f, "concat", StatusCode::kGraphShapeMismatch, "differ in rank");
  }
  {
    Fx f;
    const ValueId a = f.in("a", Shape::fixed({2, 4}));
    f.b.concat({a}, "bad");
    CHECK_BAD(f, "concat", StatusCode::kGraphInvalid, "1 inputs, expected 2..8");
  }
  {
    Fx f;
    f.b.concat({f.in("a", Shape::fixed({2, 4})), f.in("b", Shape::fixed({2, 4}), DType::kI32)},
               "bad");
    CHECK_BAD(f, "concat", StatusCode::kGraphDtypeMismatch, "'b' is i32");
  }
}

TEST_CASE("reshape: copy symbolic dims in order, fixed products equal") {
  Fx f;
  const ValueId x = f.in("x", Shape::of({f.B(), f.S(), f.F(1)}));
  const ValueId y = f.b.reshape(x, {-1, -2});
  const ValueId h = f.in("h", Shape::of({f.F(1), f.S(), f.F(6)}));
  const ValueId z = f.b.reshape(h, {-2, 2, 3});
  const ValueId w = f.b.reshape(f.in("w", Shape::fixed({2, 6})), {3, 4});
  const ValueId p = f.b.reshape(f.in("p", Shape::of({f.F(1), f.S()}), DType::kI32), {1, -2, 1});
  const Graph g = f.done();
  check_type(g, y, DType::kF32, Shape::of({f.B(), f.S()}));
  check_type(g, z, DType::kF32, Shape::of({f.S(), f.F(2), f.F(3)}));
  check_type(g, w, DType::kF32, Shape::fixed({3, 4}));
  check_type(g, p, DType::kI32, Shape::of({f.F(1), f.S(), f.F(1)}));
}

TEST_CASE("reshape errors") {
  auto run = [](const std::vector<int64_t>& sizes, StatusCode code, const std::string& what) {
    Fx f;
    f.b.reshape(f.in("x", Shape::of({f.B(), f.S(), f.F(6)})), sizes, "bad");
    CHECK_BAD(f, "reshape", code, what);
  };
  run({-2, -1, 6}, StatusCode::kGraphBadAttribute, "copied once, in order");
  run({-1, 6}, StatusCode::kGraphBadAttribute, "symbolic dim 1");
  run({-1, -1, -2, 6}, StatusCode::kGraphBadAttribute, "copied once");
  run({-1, -2, 4}, StatusCode::kGraphShapeMismatch, "has 6 elements");
  run({-1, -2, 0, 6}, StatusCode::kGraphBadAttribute, "neither positive");
  run({-1, -2, -4}, StatusCode::kGraphBadAttribute, "neither positive");
  run({}, StatusCode::kGraphBadAttribute, "0 dims");
  run({-1, -2, 1, 1, 1, 1, 6}, StatusCode::kGraphBadAttribute, "7 dims");
  Fx f;
  f.b.reshape(f.in("x", Shape::fixed({2, 6}), DType::kF16), {12}, "bad");
  CHECK_BAD(f, "reshape", StatusCode::kGraphDtypeMismatch, "x 'x' is f16, expected f32 or i32");
}

TEST_CASE("masked_fill, segment_mean, act_features") {
  Fx f;
  const ValueId x = f.in("x", Shape::of({f.B(), Dim::sym(f.d)}));
  const ValueId m = f.in("m", Shape::of({f.B(), Dim::sym(f.d)}), DType::kI32);
  const ValueId h = f.in("h", Shape::of({f.F(1), f.S(), f.F(16)}));
  const ValueId starts = f.in("starts", Shape::of({f.B()}), DType::kI32);
  const ValueId filled = f.b.masked_fill(x, m, -1e4f);
  const ValueId mean = f.b.segment_mean(h, starts);
  const ValueId feats = f.b.act_features(x, m);
  const Graph g = f.done();
  check_type(g, filled, DType::kF32, Shape::of({f.B(), Dim::sym(f.d)}));
  CHECK(g.nodes[g.values[filled].producer].attrs.value == -1e4f);
  check_type(g, mean, DType::kF32, Shape::of({f.B(), f.F(16)}));
  check_type(g, feats, DType::kF32, Shape::of({f.B(), f.F(4)}));
}

TEST_CASE("masked_fill, segment_mean, act_features errors") {
  {
    Fx f;
    f.b.masked_fill(f.in("x", Shape::fixed({2, 3})), f.in("m", Shape::fixed({2, 4}), DType::kI32),
                    0.0f, "bad");
    CHECK_BAD(f, "masked_fill", StatusCode::kGraphShapeMismatch, "mask [2, 4] differs");
  }
  {
    Fx f;
    f.b.masked_fill(f.in("x", Shape::fixed({2})), f.in("m", Shape::fixed({2})), 0.0f, "bad");
    CHECK_BAD(f, "masked_fill", StatusCode::kGraphDtypeMismatch, "mask 'm' is f32");
  }
  {
    Fx f;
    f.b.masked_fill(f.in("x", Shape::fixed({2})), f.in("m", Shape::fixed({2}), DType::kI32),
                    std::nanf(""), "bad");
    CHECK_BAD(f, "masked_fill", StatusCode::kGraphBadAttribute, "value nan is outside");
  }
  {
    Fx f;
    f.b.masked_fill(f.in("x", Shape::fixed({2})), f.in("m", Shape::fixed({2}), DType::kI32),
                    -INFINITY, "bad");
    CHECK_BAD(f, "masked_fill", StatusCode::kGraphBadAttribute, "value -inf is outside");
  }
  {
    Fx f;
    f.b.segment_mean(f.in("x", Shape::fixed({4, 8})), f.in("s", Shape::fixed({2, 1}), DType::kI32),
                     "bad");
    CHECK_BAD(f, "segment_mean", StatusCode::kGraphShapeMismatch, "starts 's' has rank 2");
  }
  {
    Fx f;
    f.b.act_features(f.in("l", Shape::fixed({2, 3})), f.in("v", Shape::fixed({2, 2}), DType::kI32),
                     "bad");
    CHECK_BAD(f, "act_features", StatusCode::kGraphShapeMismatch, "valid [2, 2] differs");
  }
}

// ---- infer_node on hand-made nodes -------------------------------------------------------------

TEST_CASE("infer_node: output count, missing input ids, unknown op") {
  Fx f;
  const ValueId x = f.in("x", Shape::fixed({2, 6}));
  Graph g = f.done();
  Node n;
  n.name = "hand";
  n.op = Op::kSplit;
  n.inputs = {x};
  n.attrs.sizes = {2, 4};
  n.outputs = {1, 2};
  g.nodes.push_back(n);
  std::vector<InferredOutput> out;
  CHECK_OK(infer_node(g, g.nodes[0], &out));
  REQUIRE(out.size() == 2);
  CHECK(out[0].shape == Shape::fixed({2, 2}));
  CHECK(out[1].shape == Shape::fixed({2, 4}));

  g.nodes[0].outputs = {1};
  CHECK_STATUS(infer_node(g, g.nodes[0], &out), StatusCode::kGraphInvalid, "node 0 'hand' (split)",
               "1 outputs, expected 2");
  g.nodes[0].op = Op::kRelu;
  g.nodes[0].outputs = {1, 2};
  CHECK_STATUS(infer_node(g, g.nodes[0], &out), StatusCode::kGraphInvalid, "'hand' (relu)",
               "2 outputs, expected 1");
  g.nodes[0].outputs = {1};
  g.nodes[0].inputs = {7};
  CHECK_STATUS(infer_node(g, g.nodes[0], &out), StatusCode::kGraphUndefinedValue, "'hand'",
               "input value id 7 does not exist");
  g.nodes[0].inputs = {x};
  CHECK_OK(infer_node(g, g.nodes[0], &out));
  for (uint32_t raw : {static_cast<uint32_t>(Op::kCount), 200u}) {
    g.nodes[0].op = static_cast<Op>(raw);
    CHECK_STATUS(infer_node(g, g.nodes[0], &out), StatusCode::kGraphUnknownOp, "'hand'",
                 std::to_string(raw));
  }
}

// ---- kv_write ----------------------------------------------------------------------------------

TEST_CASE("kv_write: cache [1, C, W] state, rows [B, S, W], cells i32 [B, S] -> the cache's type") {
  Fx f;
  const int cells = f.b.symbol("cells", 1, 64);
  const Shape cache = Shape::of({Fx::F(1), Dim::sym(cells), Fx::F(32)});
  const ValueId st = f.b.state("k_cache", DType::kF32, cache);
  const ValueId rows = f.in("rows", Shape::of({f.B(), f.S(), Fx::F(32)}));
  const ValueId ids = f.in("cells", Shape::of({f.B(), f.S()}), DType::kI32);
  const ValueId out = f.b.kv_write(st, rows, ids, "w");
  const Graph g = f.done();
  check_type(g, out, DType::kF32, cache);
  CHECK(g.values[st].kind == ValueKind::kState);
  CHECK(g.states == std::vector<ValueId>{st});
}

TEST_CASE("kv_write errors") {
  Fx f;
  const Shape cache = Shape::fixed({1, 16, 32});
  const ValueId st = f.b.state("k_cache", DType::kF32, cache);
  const ValueId rows = f.in("rows", Shape::of({f.B(), f.S(), Fx::F(32)}));
  const ValueId ids = f.in("cells", Shape::of({f.B(), f.S()}), DType::kI32);
  SUBCASE("the cache is not a state") {
    const ValueId act = f.in("plain", cache);
    f.b.kv_write(act, rows, ids, "bad");
    CHECK_BAD(f, "kv_write", StatusCode::kGraphInvalid, "'plain' is input, expected a state");
  }
  SUBCASE("row width vs cache width") {
    const ValueId r2 = f.in("rows2", Shape::of({f.B(), f.S(), Fx::F(16)}));
    f.b.kv_write(st, r2, ids, "bad");
    CHECK_BAD(f, "kv_write", StatusCode::kGraphShapeMismatch, "rows width vs cache width");
  }
  SUBCASE("cells shape vs rows") {
    const ValueId c2 = f.in("cells2", Shape::of({f.B(), Fx::F(3)}), DType::kI32);
    f.b.kv_write(st, rows, c2, "bad");
    CHECK_BAD(f, "kv_write", StatusCode::kGraphShapeMismatch, "cells length vs rows length");
  }
  SUBCASE("cells dtype") {
    const ValueId c2 = f.in("cells2", Shape::of({f.B(), f.S()}));
    f.b.kv_write(st, rows, c2, "bad");
    CHECK_BAD(f, "kv_write", StatusCode::kGraphDtypeMismatch, "cells");
  }
  SUBCASE("cache batch must be 1") {
    const ValueId st2 = f.b.state("c2", DType::kF32, Shape::fixed({2, 16, 32}));
    f.b.kv_write(st2, rows, ids, "bad");
    CHECK_BAD(f, "kv_write", StatusCode::kGraphShapeMismatch, "cache batch");
  }
}

TEST_CASE(
    "kv_write / attention: an f16 KV cache (f16 states, attention over their kv_write outputs)") {
  Fx f;
  const int cells = f.b.symbol("cells", 1, 64);
  const Shape cache = Shape::of({Fx::F(1), Dim::sym(cells), Fx::F(32)});
  const ValueId ks = f.b.state("k_cache", DType::kF16, cache);
  const ValueId vs = f.b.state("v_cache", DType::kF16, cache);
  const ValueId rows = f.in("rows", Shape::of({Fx::F(1), f.S(), Fx::F(32)}));
  const ValueId q = f.in("q", Shape::of({Fx::F(1), f.S(), Fx::F(64)}));
  const ValueId ids = f.in("cells", Shape::of({Fx::F(1), f.S()}), DType::kI32);
  const ValueId kc = f.b.kv_write(ks, rows, ids, "kw");
  const ValueId vc = f.b.kv_write(vs, rows, ids, "vw");
  Attrs a;
  a.n_heads = 4;
  a.n_kv_heads = 2;
  a.head_dim = 16;
  const ValueId o = f.b.attention(q, kc, vc, kNoValue, a, "attn");
  const Graph g = f.done();
  check_type(g, kc, DType::kF16, cache);
  check_type(g, vc, DType::kF16, cache);
  check_type(g, o, DType::kF32, Shape::of({Fx::F(1), f.S(), Fx::F(64)}));
}

TEST_CASE("kv_write / attention errors: KV cache dtypes") {
  Fx f;
  const Shape cache = Shape::fixed({1, 16, 32});
  const ValueId rows = f.in("rows", Shape::of({Fx::F(1), f.S(), Fx::F(32)}));
  const ValueId q = f.in("q", Shape::of({Fx::F(1), f.S(), Fx::F(64)}));
  const ValueId ids = f.in("cells", Shape::of({Fx::F(1), f.S()}), DType::kI32);
  Attrs a;
  a.n_heads = 4;
  a.n_kv_heads = 2;
  a.head_dim = 16;
  SUBCASE("a bf16 state") {
    const ValueId st = f.b.state("k_cache", DType::kBF16, cache);
    f.b.kv_write(st, rows, ids, "bad");
    CHECK_BAD(f, "kv_write", StatusCode::kGraphDtypeMismatch, "'k_cache' is bf16",
              "expected f32 or f16");
  }
  SUBCASE("f16 rows") {
    const ValueId st = f.b.state("k_cache", DType::kF16, cache);
    const ValueId r16 = f.in("r16", Shape::of({Fx::F(1), f.S(), Fx::F(32)}), DType::kF16);
    f.b.kv_write(st, r16, ids, "bad");
    CHECK_BAD(f, "kv_write", StatusCode::kGraphDtypeMismatch, "rows", "expected f32");
  }
  SUBCASE("f16 k that is not a kv_write output") {
    const ValueId k16 = f.in("k16", Shape::of({Fx::F(1), Fx::F(16), Fx::F(32)}), DType::kF16);
    f.b.attention(q, k16, k16, kNoValue, a, "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphDtypeMismatch, "'k16' is f16 but not a kv_write");
  }
  SUBCASE("k f16, v f32") {
    const ValueId st = f.b.state("k_cache", DType::kF16, cache);
    const ValueId kc = f.b.kv_write(st, rows, ids, "kw");
    const ValueId v = f.in("v", Shape::of({Fx::F(1), Fx::F(16), Fx::F(32)}));
    f.b.attention(q, kc, v, kNoValue, a, "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphDtypeMismatch, "is f16 but v 'v' is f32");
  }
  SUBCASE("i8 k") {
    const ValueId k8 = f.in("k8", Shape::of({Fx::F(1), Fx::F(16), Fx::F(32)}), DType::kI8);
    f.b.attention(q, k8, k8, kNoValue, a, "bad");
    CHECK_BAD(f, "attention", StatusCode::kGraphDtypeMismatch, "'k8' is i8",
              "expected f32 (or f16");
  }
}

// ---- attribute limits (ir/attrs.inc) -------------------------------------------------------------

TEST_CASE("attribute limits: every scalar attribute, on every node, within its limits") {
  // One attribute set to `v` on a relu node (which reads none of them): the limits hold anyway.
  auto relu_with = [](auto set) {
    Fx f;
    Attrs a;
    set(a);
    f.b.node1(Op::kRelu, {f.in("x", Shape::fixed({2, 16}))}, a, "bad");
    return f.b.status();
  };
  struct Bad {
    const char* what;
    void (*set)(Attrs&);
  };
  const Bad bad[] = {
      {"eps", [](Attrs& a) { a.eps = -1e-5f; }},
      {"eps", [](Attrs& a) { a.eps = NAN; }},
      {"eps", [](Attrs& a) { a.eps = INFINITY; }},
      {"eps 2 is outside [0, 1]", [](Attrs& a) { a.eps = 2.0f; }},
      {"n_heads 4097", [](Attrs& a) { a.n_heads = 4097; }},
      {"n_heads -1", [](Attrs& a) { a.n_heads = -1; }},
      {"n_kv_heads", [](Attrs& a) { a.n_kv_heads = INT32_MAX; }},
      {"head_dim 5000", [](Attrs& a) { a.head_dim = 5000; }},
      {"rotary_dim", [](Attrs& a) { a.rotary_dim = INT32_MIN; }},
      {"rope_theta 0.5", [](Attrs& a) { a.rope_theta = 0.5f; }},
      {"rope_theta", [](Attrs& a) { a.rope_theta = INFINITY; }},
      {"rope_theta", [](Attrs& a) { a.rope_theta = 1e13f; }},
      {"rope_theta", [](Attrs& a) { a.rope_theta = -NAN; }},
      {"rope_mode 7", [](Attrs& a) { a.rope_mode = static_cast<RopeMode>(7); }},
      {"scale inf", [](Attrs& a) { a.scale = INFINITY; }},
      {"scale 3e+38", [](Attrs& a) { a.scale = 3e38f; }},
      {"scale 101", [](Attrs& a) { a.scale = 101.0f; }},
      {"scale", [](Attrs& a) { a.scale = -0.5f; }},
      {"scale", [](Attrs& a) { a.scale = NAN; }},
      {"mask -1", [](Attrs& a) { a.mask = static_cast<MaskKind>(-1); }},
      {"window -2", [](Attrs& a) { a.window = -2; }},
      {"act 4", [](Attrs& a) { a.act = static_cast<ActKind>(kActCount); }},
  };
  for (const Bad& c : bad) {
    CAPTURE(std::string(c.what));
    CHECK_STATUS(relu_with(c.set), StatusCode::kGraphBadAttribute, "'bad'", c.what, "is outside");
  }
  // The limits themselves are accepted.
  CHECK_OK(relu_with([](Attrs& a) {
    a.eps = AttrLimits::eps_min;
    a.n_heads = AttrLimits::n_heads_max;
    a.rope_theta = AttrLimits::rope_theta_max;
    a.scale = AttrLimits::scale_max;
    a.window = AttrLimits::window_max;
    a.act = AttrLimits::act_max;
  }));
  CHECK_OK(relu_with([](Attrs& a) {
    a.eps = AttrLimits::eps_max;
    a.head_dim = AttrLimits::head_dim_max;
    a.rope_theta = AttrLimits::rope_theta_min;
    a.scale = AttrLimits::scale_min;
    a.window = AttrLimits::window_min;
    a.mask = AttrLimits::mask_max;
    a.rope_mode = AttrLimits::rope_mode_max;
  }));
}

TEST_CASE("attribute limits: a .laya-style graph with an absurd attention scale fails to verify") {
  Fx f;
  const ValueId q = f.in("q", Shape::of({f.B(), f.S(), f.F(64)}));
  Attrs a;
  a.n_heads = a.n_kv_heads = 4;
  a.head_dim = 16;
  f.b.attention(q, q, q, kNoValue, a, "attn");
  Graph g = f.done();
  for (float scale : {INFINITY, 3e38f, NAN}) {
    g.nodes[0].attrs.scale = scale;
    CHECK_STATUS(graph_verify(g), StatusCode::kGraphBadAttribute, "'attn'", "scale");
  }
  g.nodes[0].attrs.scale = 100.0f;
  CHECK_OK(graph_verify(g));
}

TEST_CASE("weight_format_check lists what the kernels accept, with the reason") {
  auto ok = [](DType d, const Quant& q) { return weight_format_check(d, q).is_ok(); };
  CHECK(ok(DType::kF32, {}));
  CHECK(ok(DType::kF16, {}));
  CHECK(ok(DType::kBF16, {}));
  CHECK(ok(DType::kI8, per_tensor(1.0f)));
  CHECK(ok(DType::kI8, per_channel(0, 4)));
  Quant zero_zp = per_channel(0, 4);
  zero_zp.zero_points.assign(4, 0);
  CHECK(ok(DType::kI8, zero_zp));  // explicit zeros are still symmetric
  Quant zp = zero_zp;
  zp.zero_points[2] = 1;
  CHECK_STATUS(weight_format_check(DType::kI8, zp), StatusCode::kGraphQuantMismatch, "symmetric");
  CHECK_STATUS(weight_format_check(DType::kI8, per_channel(1, 4)), StatusCode::kGraphQuantMismatch,
               "axis 0");
  CHECK_FALSE(ok(DType::kI8, {}));
  CHECK_FALSE(ok(DType::kU8, per_tensor(1.0f)));
  CHECK_FALSE(ok(DType::kI32, {}));
  CHECK_STATUS(weight_format_check(DType::kF32, per_tensor(1.0f)), StatusCode::kGraphQuantMismatch,
               "f32 with per_tensor");
  for (DType d : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_1}) {
    CHECK(ok(d, block_quant()));
    CHECK_FALSE(ok(d, {}));
  }
}
