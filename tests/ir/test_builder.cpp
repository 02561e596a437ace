// GraphBuilder (sticky errors, weights, outputs, names), graph_print and graph_equal.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "tests/ir/ir_test_util.h"

using namespace laya;
using namespace laya::ir;
using namespace laya::ir::test;

// ---- builder -----------------------------------------------------------------------------------

TEST_CASE("builder: errors are sticky and finish() returns the first one") {
  GraphBuilder b;
  const int seq = b.symbol("seq", 1, 8);
  const ValueId x = b.input("x", DType::kF32, Shape::of({Dim::sym(seq), Dim::fixed(16)}));
  const ValueId w = zero_weight(b, "w", DType::kF32, Shape::fixed({4, 12}));
  REQUIRE(x != kNoValue);
  REQUIRE(w != kNoValue);
  const ValueId ok_relu = b.relu(x);
  CHECK(ok_relu != kNoValue);
  CHECK(b.status().is_ok());

  CHECK(b.matmul(x, w, kNoValue, "first_bad") == kNoValue);  // K 16 vs 12
  const Status first = b.status();
  CHECK_STATUS(first, StatusCode::kGraphShapeMismatch, "'first_bad'");

  // Everything after the failure is a no-op returning kNoValue, even calls that would be valid.
  CHECK(b.relu(x) == kNoValue);
  CHECK(b.input("y", DType::kF32, Shape::fixed({2})) == kNoValue);
  const float one[4] = {1, 1, 1, 1};
  CHECK(b.weight("w2", DType::kF32, Shape::fixed({4}), one, sizeof one) == kNoValue);
  CHECK(b.symbol("batch", 1, 2) == 0);
  CHECK(b.split(x, {8, 8}).empty());
  CHECK(b.node(Op::kRelu, {x}).empty());
  // A second, different error does not replace the first.
  CHECK(b.glu(x, static_cast<ActKind>(9), "second_bad") == kNoValue);
  b.output(ok_relu, "out");
  CHECK(b.status().code() == first.code());
  CHECK(std::string(b.status().message()) == first.message());

  Result<Graph> g = std::move(b).finish();
  REQUIRE_FALSE(g.is_ok());
  CHECK(g.status().code() == StatusCode::kGraphShapeMismatch);
  CHECK(std::string(g.status().message()) == first.message());
}

TEST_CASE("builder: the error names the failing node by its index and name") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({2, 8}));
  b.relu(x, "r");
  b.glu(x, ActKind::kSilu, "g");
  CHECK(b.status().is_ok());
  b.split(x, {3, 3}, "bad_split");
  CHECK_STATUS(b.status(), StatusCode::kGraphBadAttribute, "node 2 'bad_split' (split)");
}

TEST_CASE("builder: a missing input is only allowed in trailing (optional) positions") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({2, 8}));
  const ValueId w = zero_weight(b, "w", DType::kF32, Shape::fixed({4, 8}));
  CHECK(b.matmul(x, w, kNoValue) != kNoValue);  // absent bias: fine
  CHECK(b.status().is_ok());
  const ValueId bias = zero_weight(b, "bias", DType::kF32, Shape::fixed({4}));
  // A missing weight must not shift the bias into its place.
  CHECK(b.matmul(x, kNoValue, bias, "bad") == kNoValue);
  CHECK_STATUS(b.status(), StatusCode::kInvalidArgument, "'bad'", "input 1");
}

TEST_CASE("builder: node1 refuses a multi-output op instead of returning kNoValue silently") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({2, 12}));
  Attrs a;
  a.sizes = {6, 6};
  CHECK(b.node1(Op::kSplit, {x}, a, "bad") == kNoValue);
  CHECK_STATUS(b.status(), StatusCode::kInvalidArgument, "'bad'", "split", "2 outputs");
  GraphBuilder b2;  // one size: one output, fine
  const ValueId x2 = b2.input("x", DType::kF32, Shape::fixed({2, 12}));
  a.sizes = {12};
  CHECK(b2.node1(Op::kSplit, {x2}, a) != kNoValue);
  CHECK(b2.status().is_ok());
}

TEST_CASE("builder: an op value outside the op list is kGraphUnknownOp") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({2}));
  CHECK(b.node(static_cast<Op>(99), {x}, {}, "bad").empty());
  CHECK_STATUS(b.status(), StatusCode::kGraphUnknownOp, "'bad'", "op 99");
  GraphBuilder b2;
  const ValueId x2 = b2.input("x", DType::kF32, Shape::fixed({2}));
  CHECK(b2.node1(Op::kCount, {x2}) == kNoValue);
  CHECK(b2.status().code() == StatusCode::kGraphUnknownOp);
}

TEST_CASE("builder: weight byte counts, shapes, data copies") {
  SUBCASE("byte count off by one") {
    GraphBuilder b;
    const std::vector<uint8_t> bytes(15);
    CHECK(b.weight("w", DType::kF32, Shape::fixed({2, 2}), bytes.data(), 15) == kNoValue);
    CHECK_STATUS(b.status(), StatusCode::kFileSizeMismatch, "'w'", "15 bytes given, 16 needed");
  }
  SUBCASE("block dtype with a partial block") {
    GraphBuilder b;
    const std::vector<uint8_t> bytes(64);
    CHECK(b.weight("wq", DType::kQ4_0, Shape::fixed({3, 16}), bytes.data(), 36, block_quant()) ==
          kNoValue);
    CHECK_STATUS(b.status(), StatusCode::kGraphShapeMismatch, "48 elements", "q4_0", "32");
  }
  SUBCASE("block dtype whose rows are not whole blocks: accepted by count, refused by finish") {
    GraphBuilder b;
    const std::vector<uint8_t> bytes(18);
    CHECK(b.weight("wq", DType::kQ4_0, Shape::fixed({2, 16}), bytes.data(), 18, block_quant()) !=
          kNoValue);
    CHECK_STATUS(std::move(b).finish().status(), StatusCode::kGraphQuantMismatch, "'wq'",
                 "fixed multiple of 32");
  }
  SUBCASE("block dtype sized right") {
    GraphBuilder b;
    const std::vector<uint8_t> bytes(2 * 34);
    CHECK(b.weight("wq", DType::kQ8_0, Shape::fixed({2, 32}), bytes.data(), bytes.size(),
                   block_quant()) != kNoValue);
    CHECK(b.status().is_ok());
  }
  SUBCASE("symbolic shape") {
    GraphBuilder b;
    const int s = b.symbol("s", 1, 4);
    const float v[4] = {};
    CHECK(b.weight("w", DType::kF32, Shape::of({Dim::sym(s)}), v, sizeof v) == kNoValue);
    CHECK_STATUS(b.status(), StatusCode::kGraphShapeMismatch, "'w'", "fixed shape");
  }
  SUBCASE("element count overflow") {
    GraphBuilder b;
    const float v[1] = {};
    CHECK(b.weight("w", DType::kF32, Shape::fixed({int64_t{1} << 40, int64_t{1} << 30}), v, 4) ==
          kNoValue);
    CHECK(b.status().code() == StatusCode::kFileSizeOverflow);
  }
  SUBCASE("byte count overflow") {
    GraphBuilder b;
    const float v[1] = {};
    CHECK(b.weight("w", DType::kF32, Shape::fixed({int64_t{1} << 31, int64_t{1} << 31}), v, 4) ==
          kNoValue);
    CHECK(b.status().code() == StatusCode::kFileSizeOverflow);
  }
  SUBCASE("missing data") {
    GraphBuilder b;
    CHECK(b.weight("w", DType::kF32, Shape::fixed({4}), nullptr, 16) == kNoValue);
    CHECK_STATUS(b.status(), StatusCode::kInvalidArgument, "'w'");
  }
  SUBCASE("empty weight") {
    GraphBuilder b;
    const ValueId w = b.weight("w", DType::kF32, Shape::fixed({0, 4}), nullptr, 0);
    CHECK(w != kNoValue);
    Result<Graph> g = std::move(b).finish();
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    CHECK(g->values[w].nbytes == 0);
  }
  SUBCASE("bytes are copied into 64-byte-aligned graph storage") {
    GraphBuilder b;
    std::vector<float> src = {1.5f, -2.0f, 3.25f};
    const ValueId w = b.weight("w", DType::kF32, Shape::fixed({3}), src.data(), 12);
    src[0] = 99.0f;  // the graph keeps its own copy
    src.clear();
    src.shrink_to_fit();
    Result<Graph> g = std::move(b).finish();
    REQUIRE(g.is_ok());
    const Value& v = g->values[w];
    REQUIRE(v.data != nullptr);
    CHECK(reinterpret_cast<uintptr_t>(v.data) % 64 == 0);
    CHECK(v.kind == ValueKind::kWeight);
    float back[3];
    std::memcpy(back, v.data, sizeof back);
    CHECK(back[0] == 1.5f);
    CHECK(back[1] == -2.0f);
    CHECK(back[2] == 3.25f);
    // A copy of the graph shares the bytes and keeps them alive after the original is gone.
    Graph copy = *g;
    g = Status(StatusCode::kInternal, "drop the original");
    std::memcpy(back, copy.values[w].data, sizeof back);
    CHECK(back[2] == 3.25f);
  }
}

TEST_CASE("builder: weight_ref keeps the caller's bytes and their owner once, checks alignment") {
  auto bytes =
      std::shared_ptr<float>(static_cast<float*>(std::aligned_alloc(64, 64 * 4)), std::free);
  for (int i = 0; i < 64; ++i) bytes.get()[i] = static_cast<float>(i);
  std::weak_ptr<float> watch = bytes;
  Result<Graph> g = [&] {
    GraphBuilder b;
    const ValueId w = b.weight_ref("w", DType::kF32, Shape::fixed({8, 8}), bytes.get(), 256, bytes);
    CHECK(w != kNoValue);
    CHECK(b.weight_ref("w2", DType::kF32, Shape::fixed({16}), bytes.get() + 48, 64, bytes) !=
          kNoValue);
    b.output(b.relu(b.input("x", DType::kF32, Shape::fixed({2, 8}))), "y");
    return std::move(b).finish();
  }();
  REQUIRE(g.is_ok());
  const float* data = bytes.get();
  bytes.reset();
  CHECK_FALSE(watch.expired());  // the graph keeps the owner, once
  CHECK(g->keepalive.size() == 1);
  CHECK(g->values[g->find_value("w")].data == reinterpret_cast<const uint8_t*>(data));  // no copy
  CHECK(reinterpret_cast<const float*>(g->values[g->find_value("w")].data)[63] == 63.0f);
  g = Status(StatusCode::kInternal, "drop the graph");
  CHECK(watch.expired());

  GraphBuilder b;
  alignas(64) static const float storage[17] = {};
  b.weight_ref("w", DType::kF32, Shape::fixed({4}), reinterpret_cast<const uint8_t*>(storage) + 2,
               16, nullptr);
  CHECK_STATUS(b.status(), StatusCode::kInvalidArgument, "not aligned to 4 bytes");
  GraphBuilder c;
  c.weight_ref("w", DType::kF32, Shape::fixed({4}), storage, 12, nullptr);
  CHECK_STATUS(c.status(), StatusCode::kFileSizeMismatch, "12 bytes given");
}

namespace {

// Bytes i, i + 1, ... for a deferred weight; counts its calls.
struct CountingFill final : WeightFill {
  mutable int calls = 0;
  Status fill(uint64_t offset, uint8_t* dst, uint64_t n) const override {
    ++calls;
    for (uint64_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(offset + i);
    return Status::ok();
  }
};

}  // namespace

TEST_CASE("builder: deferred weights carry a fill and no bytes until the file is written") {
  auto fill = std::make_shared<CountingFill>();
  GraphBuilder b;
  const ValueId w =
      b.weight_deferred("w", DType::kI8, Shape::fixed({2, 4}), fill, per_channel(0, 2));
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  const Value& v = g->values[w];
  CHECK(v.data == nullptr);
  CHECK(v.nbytes == 8);
  CHECK(v.fill == fill);
  CHECK(fill->calls == 0);  // nothing is made before the file is written

  GraphBuilder none;
  CHECK(none.weight_deferred("w", DType::kF32, Shape::fixed({2}), nullptr) == kNoValue);
  CHECK_STATUS(none.status(), StatusCode::kInvalidArgument, "no fill");
  GraphBuilder sym;
  const int s = sym.symbol("s", 1, 4);
  CHECK(sym.weight_deferred("w", DType::kF32, Shape::of({Dim::sym(s)}), fill) == kNoValue);
  CHECK_STATUS(sym.status(), StatusCode::kGraphShapeMismatch, "fixed shape");

  // The verifier: a weight needs data or a fill, not both; other values neither.
  Graph both = *g;
  uint8_t bytes[8] = {};
  both.values[w].data = bytes;
  CHECK_STATUS(graph_verify(both), StatusCode::kGraphInvalid, "both data and a fill");
  Graph neither = *g;
  neither.values[w].fill = nullptr;
  CHECK_STATUS(graph_verify(neither), StatusCode::kGraphInvalid, "weight without data");
  // graph_equal: the same fill object is equal, another one is not.
  CHECK(graph_equal(*g, *g));
  Graph other = *g;
  other.values[w].fill = std::make_shared<CountingFill>();
  CHECK_FALSE(graph_equal(*g, other));
}

TEST_CASE("builder: outputs are renamed and listed; non-activations are refused") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({2, 8}));
  const ValueId r = b.relu(x);
  const ValueId s = b.silu(r, "act");
  b.output(r, "hidden");
  b.output(s);  // keeps its name
  Result<Graph> g = std::move(b).finish();
  REQUIRE(g.is_ok());
  CHECK(g->outputs == std::vector<ValueId>{r, s});
  CHECK(g->values[r].name == "hidden");
  CHECK(g->values[s].name == "act");
  CHECK(g->find_value("hidden") == r);
  CHECK(g->find_value("relu_0") == kNoValue);
  CHECK(g->find_value("nope") == kNoValue);
  CHECK(g->nodes[0].name == "relu_0");  // the node keeps its name

  GraphBuilder b2;
  const ValueId x2 = b2.input("x", DType::kF32, Shape::fixed({2}));
  b2.output(x2, "y");
  CHECK_STATUS(b2.status(), StatusCode::kGraphInvalid, "not a node output");
  GraphBuilder b3;
  b3.output(kNoValue);
  CHECK(b3.status().code() == StatusCode::kGraphInvalid);
  GraphBuilder b4;
  const ValueId w4 = zero_weight(b4, "w", DType::kF32, Shape::fixed({2}));
  b4.output(w4);
  CHECK(b4.status().code() == StatusCode::kGraphInvalid);
  GraphBuilder b5;  // the same output twice: caught by the verifier in finish()
  const ValueId r5 = b5.relu(b5.input("x", DType::kF32, Shape::fixed({2})));
  b5.output(r5);
  b5.output(r5);
  CHECK(b5.status().is_ok());
  CHECK_STATUS(std::move(b5).finish().status(), StatusCode::kGraphInvalid, "distinct");
}

TEST_CASE("builder: node and value names") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({2, 12}));
  const ValueId r = b.relu(x);                                  // node 0
  const ValueId m = b.mul(r, x, "gate");                        // node 1
  const std::vector<ValueId> parts = b.split(m, {4, 8});        // node 2
  const std::vector<ValueId> named = b.split(m, {6, 6}, "qk");  // node 3
  const ValueId one = b.node1(Op::kSoftmax, {parts[1]});        // node 4
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  CHECK(g->values[r].name == "relu_0");
  CHECK(g->nodes[0].name == "relu_0");
  CHECK(g->values[m].name == "gate");
  CHECK(g->nodes[1].name == "gate");
  REQUIRE(parts.size() == 2);
  CHECK(g->nodes[2].name == "split_2");
  CHECK(g->values[parts[0]].name == "split_2.0");
  CHECK(g->values[parts[1]].name == "split_2.1");
  CHECK(g->values[named[1]].name == "qk.1");
  CHECK(g->values[one].name == "softmax_4");
  CHECK(g->nodes.size() == 5);
  CHECK(g->values[r].producer == 0);
  CHECK(g->values[named[0]].producer == 3);
  CHECK(g->values[x].kind == ValueKind::kInput);
  CHECK(g->values[x].producer == kNoNode);
}

TEST_CASE("builder: symbols") {
  GraphBuilder b;
  for (int i = 0; i < kMaxSymbols; ++i) CHECK(b.symbol("s" + std::to_string(i), 1, 2) == i);
  CHECK(b.status().is_ok());
  b.symbol("ninth", 1, 2);
  CHECK_STATUS(b.status(), StatusCode::kGraphInvalid, "more than 8 symbols");

  GraphBuilder b2;
  b2.symbol("seq", 1, 4);
  b2.symbol("seq", 1, 8);
  CHECK_STATUS(b2.status(), StatusCode::kGraphInvalid, "'seq' defined twice");

  GraphBuilder b3;  // bad bounds are caught by finish()'s verify
  const int s = b3.symbol("seq", 9, 4);
  b3.relu(b3.input("x", DType::kF32, Shape::of({Dim::sym(s)})));
  CHECK(b3.status().is_ok());
  CHECK_STATUS(std::move(b3).finish().status(), StatusCode::kGraphInvalid, "'seq'", "[9, 4]");
}

// ---- graph_print -------------------------------------------------------------------------------

namespace {

std::string ref(const Graph& g, ValueId v) {
  return "%" + std::to_string(v) + " " + g.values[v].name;
}

std::string node_line(const Graph& g, const std::string& name) {
  const std::string out = graph_print(g);
  const std::string tag = "  [" + name + "]\n";
  const size_t end = out.find(tag);
  if (end == std::string::npos) return "";
  const size_t begin = out.rfind('\n', end) + 1;
  return out.substr(begin, end - begin);
}

}  // namespace

TEST_CASE("graph_print: symbols, inputs with roles, weights, nodes, outputs") {
  const TinyModel m = make_tiny_model();
  const Graph& g = m.g;
  const std::string out = graph_print(g);
  INFO(out);
  CHECK(contains(out, "architecture: test\n"));
  CHECK(contains(out, "symbols: batch in [1, 4] seq in [1, 64]\n"));
  CHECK(contains(out,
                 "inputs:\n  %0 ids: i32 [batch, seq] (token_ids)\n"
                 "  %1 pos: i32 [batch, seq] (positions)\n"
                 "  %2 mask: i32 [batch, seq] (key_mask)\n"));
  CHECK(contains(out, "weights:\n  %3 tok_emb: f32 [50, 32] (6400 bytes)\n"));
  CHECK(contains(out, "  %5 wq: q8_0 [64, 32] quant=block (2176 bytes)\n"));
  CHECK(contains(out, "  %6 wo: i8 [32, 32] quant=per_channel(axis 0) (1024 bytes)\n"));
  CHECK(contains(out, "  %8 w_up: f16 [128, 32] (8192 bytes)\n"));
  CHECK(contains(out, "  %10 w_out: q4_0 [50, 32] quant=block (900 bytes)\n"));
  // Every value appears once in "weights:" only if it is a weight.
  CHECK_FALSE(contains(out, "ids: i32 [batch, seq] (0 bytes)"));

  CHECK(node_line(g, "embed") ==
        "  #0 " + ref(g, m.h) + " = embedding(%3 tok_emb, %0 ids) -> f32 [batch, seq, 32]");
  CHECK(contains(node_line(g, "attn_norm"),
                 " = rmsnorm(" + ref(g, m.h) + ", %4 norm_w) {eps=1e-06} -> f32 [batch, seq, 32]"));
  // Default attributes are not printed: layernorm eps = 1e-5 is the default.
  CHECK(contains(node_line(g, "ffn_norm"), ", %4 norm_w, %7 ln_b) -> f32 [batch, seq, 32]"));
  CHECK(contains(node_line(g, "rope_q"), "{head_dim=8} -> f32 [batch, seq, 32]"));
  CHECK(contains(node_line(g, "attn"),
                 "{n_heads=4, n_kv_heads=2, head_dim=8, mask=causal} -> f32 [batch, seq, 32]"));
  CHECK(contains(node_line(g, "attn"), "= attention(%"));
  CHECK(contains(node_line(g, "attn"), ", %2 mask)"));
  {  // An absent optional input before a present one prints as "-".
    GraphBuilder b;
    const ValueId x = b.input("x", DType::kF32, Shape::fixed({1, 4, 8}));
    const ValueId p = b.input("p", DType::kI32, Shape::fixed({1, 4}));
    Attrs a;
    a.n_heads = a.n_kv_heads = 1;
    a.head_dim = 8;
    b.output(b.attention(x, x, x, kNoValue, {p, p}, a, "attn_pos"), "y");
    Result<Graph> g2 = std::move(b).finish();
    REQUIRE(g2.is_ok());
    CHECK(contains(node_line(*g2, "attn_pos"), "= attention(%0 x, %0 x, %0 x, -, %1 p, %1 p)"));
  }
  CHECK(contains(node_line(g, "swiglu"), "= glu("));
  CHECK(contains(node_line(g, "swiglu"), "{act=silu} -> f32 [batch, seq, 64]"));
  CHECK(contains(node_line(g, "gelu"), "{act=gelu_tanh}"));
  // A multi-output node lists every output and every output's type.
  const NodeId split = node_named(g, "qkv_split");
  const std::vector<ValueId>& parts = g.nodes[split].outputs;
  CHECK(node_line(g, "qkv_split") ==
        "  #" + std::to_string(split) + " " + ref(g, parts[0]) + ", " + ref(g, parts[1]) + ", " +
            ref(g, parts[2]) + " = split(%" + std::to_string(g.nodes[split].inputs[0]) +
            " qkv) {sizes=[32, 16, 16]} -> f32 [batch, seq, 32], f32 [batch, seq, 16], f32 "
            "[batch, seq, 16]");
  // The renamed graph output is printed under its new name, on the node named "probs".
  CHECK(contains(node_line(g, "probs"), ref(g, m.logits) + " = softmax("));
  CHECK(contains(out, "outputs: " + ref(g, m.logits) + "\n"));
  // One line per node.
  size_t lines = 0;
  for (size_t p = out.find("\n  #"); p != std::string::npos; p = out.find("\n  #", p + 1)) ++lines;
  CHECK(lines == g.nodes.size());
}

TEST_CASE("graph_print of a graph without symbols, with rope / non-default attrs") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({1, 3, 8}));
  const ValueId p = b.input("p", DType::kI32, Shape::fixed({1, 3}), InputRole::kPositions);
  const ValueId r = b.rope(x, p, 4, 500000.0f, RopeMode::kGptj, 2, "rot");
  const ValueId i8w = zero_weight(b, "wt", DType::kI8, Shape::fixed({4, 8}), per_tensor(0.5f));
  b.output(b.matmul(r, i8w, kNoValue, "proj"), "y");
  Result<Graph> g = std::move(b).finish();
  REQUIRE(g.is_ok());
  const std::string out = graph_print(*g);
  INFO(out);
  CHECK_FALSE(contains(out, "symbols:"));
  CHECK_FALSE(contains(out, "architecture:"));
  CHECK(contains(out, "  %0 x: f32 [1, 3, 8] (data)\n"));
  CHECK(contains(out, "  %1 p: i32 [1, 3] (positions)\n"));
  CHECK(contains(out, "wt: i8 [4, 8] quant=per_tensor (32 bytes)"));
  CHECK(contains(out,
                 "= rope(%0 x, %1 p) {head_dim=4, rotary_dim=2, rope_theta=500000, "
                 "rope_mode=gptj} -> f32 [1, 3, 8]  [rot]\n"));
  CHECK(contains(out, "y = matmul(%2 rot, %3 wt) -> f32 [1, 3, 4]  [proj]\n"));
}

// ---- graph_equal -------------------------------------------------------------------------------

TEST_CASE("graph_equal: identical graphs are equal") {
  const TinyModel a = make_tiny_model();
  const TinyModel b = make_tiny_model();  // separate weight buffers, same bytes
  REQUIRE(a.g.values[a.wqkv].data != b.g.values[b.wqkv].data);
  std::string why = "untouched";
  CHECK(graph_equal(a.g, b.g, &why));
  CHECK(why == "untouched");
  CHECK(graph_equal(a.g, a.g));
  const Graph copy = a.g;
  CHECK(graph_equal(a.g, copy, &why));
}

TEST_CASE("graph_equal reports the first difference") {
  const TinyModel base = make_tiny_model();
  auto differs = [&](const Graph& other, const std::string& want) {
    std::string why;
    CHECK_FALSE(graph_equal(base.g, other, &why));
    CHECK(why == want);
    CHECK_FALSE(graph_equal(base.g, other));  // `why` is optional
  };
  SUBCASE("weight byte") {
    const TinyModel m = make_tiny_model(/*weight_fill=*/1);
    differs(m.g, "weight bytes of wq");
  }
  SUBCASE("one weight byte changed in a private copy") {
    TinyModel m = make_tiny_model();
    Value& w = m.g.values[m.wo];
    auto mine = std::make_shared<std::vector<uint8_t>>(w.data, w.data + w.nbytes);
    (*mine)[w.nbytes - 1] ^= 1;
    w.data = mine->data();
    m.g.keepalive.push_back(mine);
    differs(m.g, "weight bytes of wo");
  }
  SUBCASE("attribute") {
    TinyModel m = make_tiny_model();
    const NodeId n = node_named(m.g, "ffn_norm");
    m.g.nodes[n].attrs.eps = 1e-3f;
    differs(m.g, "node " + std::to_string(n) + " (ffn_norm)");
  }
  SUBCASE("split sizes attribute") {
    TinyModel m = make_tiny_model();
    const NodeId n = node_named(m.g, "qkv_split");
    m.g.nodes[n].attrs.sizes[0] = 31;
    differs(m.g, "node " + std::to_string(n) + " (qkv_split)");
  }
  SUBCASE("symbol bound") {
    TinyModel m = make_tiny_model();
    m.g.symbols[m.seq].max = 128;
    differs(m.g, "symbol seq");
  }
  SUBCASE("symbol bound and metadata: the symbol comes first") {
    TinyModel m = make_tiny_model();
    m.g.meta.chat_template = "x";
    m.g.symbols[m.batch].min = 2;
    differs(m.g, "symbol batch");
  }
  SUBCASE("value type / name") {
    TinyModel m = make_tiny_model();
    m.g.values[m.tok_emb].name = "emb";
    differs(m.g, "value name tok_emb vs emb");
    TinyModel m2 = make_tiny_model();
    m2.g.values[m2.ids].role = InputRole::kNone;
    differs(m2.g, "value ids (dtype/shape/quant/kind/role/producer)");
    TinyModel m3 = make_tiny_model();
    m3.g.values[m3.wo].quant.scales[0] = 0.25f;
    differs(m3.g, "value wo (dtype/shape/quant/kind/role/producer)");
  }
  SUBCASE("graph inputs / outputs") {
    TinyModel m = make_tiny_model();
    std::swap(m.g.inputs[0], m.g.inputs[1]);
    differs(m.g, "graph inputs");
    TinyModel m2 = make_tiny_model();
    m2.g.outputs.push_back(m2.h);
    differs(m2.g, "graph outputs");
  }
  SUBCASE("metadata fields") {
    struct Case {
      void (*change)(Metadata&);
      const char* why;
    };
    static const uint8_t tok_bytes[] = {1, 2, 3};
    static const uint8_t exe_bytes[] = {9, 9};
    const Case cases[] = {
        {[](Metadata& md) { md.architecture = "llama"; }, "architecture"},
        {[](Metadata& md) { md.tokenizer_kind = "gguf"; }, "tokenizer"},
        {[](Metadata& md) {
           md.tokenizer = {tok_bytes, 3};
         },
         "tokenizer"},
        {[](Metadata& md) { md.decision.present = true; }, "decision config"},
        {[](Metadata& md) { md.decision.temperature[2] = 0.5f; }, "decision config"},
        {[](Metadata& md) {
           md.decision.temperature_by_options.push_back({"choice:2", 1.1f});
         },
         "decision config"},
        {[](Metadata& md) { md.decision.act_costs = {0.1f}; }, "decision config"},
        {[](Metadata& md) { md.chat_template = "{{ messages }}"; }, "chat template"},
        {[](Metadata& md) { md.provenance.source = "hf"; }, "provenance"},
        {[](Metadata& md) { md.provenance.converter_version = "1"; }, "provenance"},
        {[](Metadata& md) {
           md.properties.push_back({"n_layer", "1"});
         },
         "properties"},
        {[](Metadata& md) {
           md.executables.push_back({"ax8850", "all", {exe_bytes, 2}});
         },
         "executables"},
    };
    for (const Case& c : cases) {
      CAPTURE(std::string(c.why));
      TinyModel m = make_tiny_model();
      c.change(m.g.meta);
      differs(m.g, c.why);
    }
  }
  SUBCASE("metadata list entries with the same length") {
    static const uint8_t e1[] = {1, 2}, e2[] = {1, 3};
    TinyModel a = make_tiny_model(), b = make_tiny_model();
    a.g.meta.provenance.files = {{"model.safetensors", "ab"}};
    b.g.meta.provenance.files = {{"model.safetensors", "ac"}};
    std::string why;
    CHECK_FALSE(graph_equal(a.g, b.g, &why));
    CHECK(why == "provenance file model.safetensors");
    b.g.meta.provenance.files = a.g.meta.provenance.files;
    a.g.meta.executables = {{"ax8850", "layers0-3", {e1, 2}}};
    b.g.meta.executables = {{"ax8850", "layers0-3", {e2, 2}}};
    CHECK_FALSE(graph_equal(a.g, b.g, &why));
    CHECK(why == "executable layers0-3");
    b.g.meta.executables[0].bytes = {e1, 2};
    CHECK(graph_equal(a.g, b.g, &why));
  }
}
