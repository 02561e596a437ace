// graph_verify negatives: take the valid TinyModel graph and corrupt one field at a time.
#include <doctest/doctest.h>

#include <cmath>

#include "tests/ir/ir_test_util.h"

using namespace laya;
using namespace laya::ir;
using namespace laya::ir::test;

TEST_CASE("the tiny model verifies and uses every op") {
  const TinyModel m = make_tiny_model();
  CHECK_OK(graph_verify(m.g));
  std::vector<int> seen(static_cast<size_t>(Op::kCount), 0);
  for (const Node& n : m.g.nodes) seen[static_cast<size_t>(n.op)] = 1;
  for (size_t i = 0; i < seen.size(); ++i)
    CHECK_MESSAGE(seen[i], "op ", op_name(static_cast<Op>(i)), " is not in the tiny model");
  CHECK(m.g.inputs == std::vector<ValueId>{m.ids, m.pos, m.mask, m.cells});
  CHECK(m.g.states == std::vector<ValueId>{m.k_cache});
  CHECK(m.g.outputs == std::vector<ValueId>{m.logits});
}

TEST_CASE("verify: reading a value defined later vs a real cycle") {
  // Nodes: embed(0) attn_norm(1) qkv(2) qkv_split(3) rope_q(4) rope_k(5) attn(6) ...
  SUBCASE("read before definition, no cycle") {
    TinyModel m = make_tiny_model();
    // A node appended at the end that depends only on graph inputs; attn_norm (node 1) then reads
    // its output: defined after use, but no cycle.
    const ValueId late = static_cast<ValueId>(m.g.values.size());
    Value v = m.g.values[m.h];  // same type as embed's output: f32 [batch, seq, 32]
    v.name = "late";
    v.producer = static_cast<NodeId>(m.g.nodes.size());
    m.g.values.push_back(v);
    Node n;
    n.op = Op::kEmbedding;
    n.name = "late_embed";
    n.inputs = {m.tok_emb, m.ids};
    n.outputs = {late};
    m.g.nodes.push_back(n);
    CHECK_OK(graph_verify(m.g));  // the extra node alone is fine
    const NodeId norm = node_named(m.g, "attn_norm");
    m.g.nodes[norm].inputs[0] = late;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphUndefinedValue, "'attn_norm'", "'late'",
                 "before node");
  }
  SUBCASE("cycle through two nodes") {
    TinyModel m = make_tiny_model();
    // attn_norm reads 'residual' (same type as its input), which depends on attn_norm.
    const NodeId norm = node_named(m.g, "attn_norm");
    const ValueId residual = m.g.nodes[node_named(m.g, "residual")].outputs[0];
    m.g.nodes[norm].inputs[0] = residual;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphCycle, "'attn_norm'", "'residual'", "cycle");
  }
  SUBCASE("node reading its own output") {
    TinyModel m = make_tiny_model();
    const NodeId relu = node_named(m.g, "relu");
    m.g.nodes[relu].inputs[0] = m.g.nodes[relu].outputs[0];
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphCycle, "'relu'", "cycle");
  }
  SUBCASE("input id that does not exist") {
    TinyModel m = make_tiny_model();
    m.g.nodes[node_named(m.g, "silu")].inputs[0] = 9999;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphUndefinedValue, "'silu'", "9999");
  }
}

TEST_CASE("verify: producers") {
  SUBCASE("activation never produced (no producer)") {
    TinyModel m = make_tiny_model();
    m.g.values[m.h].producer = kNoNode;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphUndefinedValue, "'embed'", "never produced");
  }
  SUBCASE("activation whose producer does not write it") {
    // relu now writes a fresh value; the old output still names relu as its producer, and 'gate'
    // still reads it: nothing writes what 'gate' reads.
    TinyModel m = make_tiny_model();
    const NodeId relu = node_named(m.g, "relu");
    const ValueId old_out = m.g.nodes[relu].outputs[0];
    Value fresh = m.g.values[old_out];
    fresh.name = "relu_fresh";
    m.g.values.push_back(fresh);
    m.g.nodes[relu].outputs[0] = static_cast<ValueId>(m.g.values.size() - 1);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphUndefinedValue, "'relu'", "never produced");
  }
  SUBCASE("two producers") {
    TinyModel m = make_tiny_model();
    // 'silu' also claims to write gelu's output (same type).
    const ValueId gelu_out = m.g.nodes[node_named(m.g, "gelu")].outputs[0];
    m.g.nodes[node_named(m.g, "silu")].outputs[0] = gelu_out;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'gelu'", "written by node",
                 "'silu'");
  }
  SUBCASE("producer out of range") {
    TinyModel m = make_tiny_model();
    m.g.values[m.h].producer = 500;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'embed'", "producer out of range");
  }
  SUBCASE("output id out of range") {
    TinyModel m = make_tiny_model();
    m.g.nodes[node_named(m.g, "silu")].outputs[0] = 4242;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'silu'", "4242");
  }
  SUBCASE("a node writing a weight") {
    TinyModel m = make_tiny_model();
    m.g.nodes[node_named(m.g, "embed")].outputs[0] = m.wo;
    CHECK(graph_verify(m.g).code() == StatusCode::kGraphInvalid);
  }
}

TEST_CASE("verify: weights") {
  SUBCASE("byte size mismatch") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wo].nbytes -= 1;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kFileSizeMismatch, "'wo'", "holds 1023 bytes",
                 "needs 1024");
  }
  SUBCASE("shape changed under the bytes") {
    TinyModel m = make_tiny_model();
    m.g.values[m.tok_emb].shape = Shape::fixed({kTinyVocab + 1, kTinyD});
    CHECK_STATUS(graph_verify(m.g), StatusCode::kFileSizeMismatch, "'tok_emb'", "[51, 32]");
  }
  SUBCASE("symbolic weight shape") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wo].shape.dims[0] = Dim::sym(m.seq);
    m.g.values[m.wo].quant = {};
    m.g.values[m.wo].dtype = DType::kF32;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphShapeMismatch, "'wo'", "fixed shape");
  }
  SUBCASE("weight without data") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wo].data = nullptr;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'wo'", "without data");
  }
  SUBCASE("activation carrying data") {
    TinyModel m = make_tiny_model();
    m.g.values[m.h].data = m.g.values[m.wo].data;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'embed'", "carries data");
  }
}

TEST_CASE("verify: quantization parameters") {
  SUBCASE("block dtype without block quant") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wqkv].quant = {};
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'wq'", "q8_0 with none",
                 "block");
  }
  SUBCASE("block quant on a float dtype") {
    TinyModel m = make_tiny_model();
    m.g.values[m.w_up].quant = block_quant();
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'w_up'", "f16 with block");
  }
  SUBCASE("block quant carrying scales") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wqkv].quant.scales = {1.0f};
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'wq'", "live in the blocks");
  }
  SUBCASE("per-channel scale count wrong") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wo].quant.scales.pop_back();
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'wo'",
                 "31 scales for 32 channels");
  }
  SUBCASE("per-channel axis out of range") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wo].quant.axis = 2;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'wo'", "axis out of range");
  }
  SUBCASE("per-channel zero point count differs") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wo].quant.zero_points = {0, 0};
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'wo'", "zero point count");
  }
  SUBCASE("non-positive or non-finite scale") {
    for (float s : {0.0f, -0.5f, INFINITY, NAN}) {
      CAPTURE(s);
      TinyModel m = make_tiny_model();
      m.g.values[m.wo].quant.scales[3] = s;
      CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'wo'",
                   "finite and positive");
    }
  }
  SUBCASE("zero points on a matmul weight (valid quant, unsupported by matmul)") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wo].quant.zero_points.assign(kTinyD, 0);
    CHECK_OK(graph_verify(m.g));  // explicit zeros are symmetric
    m.g.values[m.wo].quant.zero_points[5] = 3;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'attn_out' (matmul)",
                 "weight dtype i8 with per_channel");
  }
  SUBCASE("per-tensor quant needs exactly one scale, on i8 / u8 only") {
    TinyModel m = make_tiny_model();
    m.g.values[m.wo].quant = per_tensor(0.5f);
    CHECK_OK(graph_verify(m.g));
    m.g.values[m.wo].quant.scales.push_back(0.25f);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'wo'", "exactly one scale");
    TinyModel m2 = make_tiny_model();
    m2.g.values[m2.tok_emb].quant = per_tensor(0.5f);
    CHECK_STATUS(graph_verify(m2.g), StatusCode::kGraphQuantMismatch, "'tok_emb'", "only i8 / u8");
  }
  SUBCASE("plain dtype with stray scales") {
    TinyModel m = make_tiny_model();
    m.g.values[m.tok_emb].quant.scales = {1.0f};
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphQuantMismatch, "'tok_emb'",
                 "unexpected scales");
  }
}

TEST_CASE("verify: stored output type differs from inference") {
  SUBCASE("dtype") {
    TinyModel m = make_tiny_model();
    m.g.values[m.attn].dtype = DType::kI32;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphDtypeMismatch, "'attn'",
                 "stored dtype i32, node computes f32");
  }
  SUBCASE("shape") {
    TinyModel m = make_tiny_model();
    m.g.values[m.qkv0].shape.dims[2] = Dim::fixed(16);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphShapeMismatch, "'qkv_split.0'",
                 "stored shape [batch, seq, 16], node computes [batch, seq, 32]");
  }
  SUBCASE("symbolic dim") {
    TinyModel m = make_tiny_model();
    m.g.values[m.h].shape.dims[1] = plus(Dim::sym(m.seq), Dim::fixed(1));
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphShapeMismatch, "'embed'", "seq + 1");
  }
  SUBCASE("quantized activation") {
    TinyModel m = make_tiny_model();
    m.g.values[m.h].dtype = DType::kI8;
    m.g.values[m.h].quant = per_tensor(1.0f);
    // The producer's inferred dtype (f32) is reported first.
    CHECK(graph_verify(m.g).code() == StatusCode::kGraphDtypeMismatch);
  }
  SUBCASE("attribute made invalid after building") {
    TinyModel m = make_tiny_model();
    m.g.nodes[node_named(m.g, "attn")].attrs.n_kv_heads = 3;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphBadAttribute, "'attn' (attention)",
                 "n_kv_heads 3");
  }
}

TEST_CASE("verify: graph inputs and outputs") {
  SUBCASE("input value not listed") {
    TinyModel m = make_tiny_model();
    m.g.inputs.pop_back();
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'cells'",
                 "missing from the graph inputs");
  }
  SUBCASE("input listed twice") {
    TinyModel m = make_tiny_model();
    m.g.inputs.push_back(m.ids);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'ids'", "graph input");
  }
  SUBCASE("a weight listed as an input") {
    TinyModel m = make_tiny_model();
    m.g.inputs.push_back(m.wo);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'wo'", "graph input");
  }
  SUBCASE("input id out of range") {
    TinyModel m = make_tiny_model();
    m.g.inputs.push_back(777);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "777");
  }
  SUBCASE("graph output that is an input / listed twice / out of range") {
    TinyModel m = make_tiny_model();
    m.g.outputs.push_back(m.ids);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'ids'", "graph outputs");
    TinyModel m2 = make_tiny_model();
    m2.g.outputs.push_back(m2.logits);
    CHECK_STATUS(graph_verify(m2.g), StatusCode::kGraphInvalid, "'logits'", "distinct");
    TinyModel m3 = make_tiny_model();
    m3.g.outputs.push_back(888);
    CHECK_STATUS(graph_verify(m3.g), StatusCode::kGraphInvalid, "888");
  }
  SUBCASE("inputs and outputs are bound by name: names unique and non-empty") {
    TinyModel m = make_tiny_model();
    m.g.values[m.g.inputs[1]].name = m.g.values[m.g.inputs[0]].name;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "two graph inputs share");
    TinyModel m2 = make_tiny_model();
    m2.g.values[m2.logits].name = "";
    CHECK_STATUS(graph_verify(m2.g), StatusCode::kGraphInvalid, "need a name");
  }
}

TEST_CASE("verify: ops and symbols") {
  SUBCASE("unknown op value") {
    TinyModel m = make_tiny_model();
    m.g.nodes[node_named(m.g, "gelu")].op = static_cast<Op>(77);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphUnknownOp, "'gelu'", "op 77");
    m.g.nodes[node_named(m.g, "gelu")].op = Op::kCount;
    CHECK(graph_verify(m.g).code() == StatusCode::kGraphUnknownOp);
  }
  SUBCASE("too many symbols") {
    TinyModel m = make_tiny_model();
    for (int i = 0; static_cast<int>(m.g.symbols.size()) < kMaxSymbols; ++i)
      m.g.symbols.push_back({"extra" + std::to_string(i), 1, 2});
    CHECK_OK(graph_verify(m.g));  // exactly kMaxSymbols is fine
    m.g.symbols.push_back({"one_too_many", 1, 2});
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "9 symbols, at most 8");
  }
  SUBCASE("symbol bounds min > max") {
    TinyModel m = make_tiny_model();
    m.g.symbols[m.seq].min = 65;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'seq'", "[65, 64]");
  }
  SUBCASE("negative symbol min, empty or duplicate name") {
    TinyModel m = make_tiny_model();
    m.g.symbols[m.seq].min = -1;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'seq'", "[-1, 64]");
    TinyModel m2 = make_tiny_model();
    m2.g.symbols[m2.seq].name = "";
    CHECK(graph_verify(m2.g).code() == StatusCode::kGraphInvalid);
    TinyModel m3 = make_tiny_model();
    m3.g.symbols[m3.seq].name = "batch";
    CHECK_STATUS(graph_verify(m3.g), StatusCode::kGraphInvalid, "'batch' defined twice");
  }
  SUBCASE("dimension over an undefined symbol") {
    TinyModel m = make_tiny_model();
    m.g.values[m.ids].shape.dims[1] = Dim::sym(5);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphShapeMismatch, "'ids'", "undefined symbol 5");
  }
  SUBCASE("dimension that can be negative") {
    TinyModel m = make_tiny_model();
    m.g.values[m.ids].shape.dims[1] = plus(Dim::sym(m.seq), Dim::fixed(-2));
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphShapeMismatch, "'ids'", "can be negative");
  }
  SUBCASE("rank out of range") {
    TinyModel m = make_tiny_model();
    m.g.values[m.ids].shape.rank = kMaxRank + 1;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphShapeMismatch, "'ids'", "rank");
  }
}

TEST_CASE("graph_weight_stats counts parameters and bytes per dtype") {
  const TinyModel m = make_tiny_model();
  const WeightStats s = graph_weight_stats(m.g);
  const int64_t d = kTinyD;
  // tok_emb, norm_w, wq, wo, ln_b, w_up, w_down, w_out, starts (i32 [2]), w_score
  CHECK(s.params ==
        kTinyVocab * d + d + 64 * d + d * d + d + 4 * d * d + d * 2 * d + kTinyVocab * d + 2 + d);
  CHECK(s.bytes_by_dtype[static_cast<size_t>(DType::kF32)] ==
        static_cast<uint64_t>(4 * (kTinyVocab * d + 3 * d)));
  CHECK(s.bytes_by_dtype[static_cast<size_t>(DType::kI32)] == 8);
  CHECK(s.bytes_by_dtype[static_cast<size_t>(DType::kQ8_0)] == 64 * 34);
  CHECK(s.bytes_by_dtype[static_cast<size_t>(DType::kQ4_0)] == kTinyVocab * 18);
  CHECK(s.bytes_by_dtype[static_cast<size_t>(DType::kI8)] == d * d);
  CHECK(s.bytes_by_dtype[static_cast<size_t>(DType::kF16)] == 2 * 4 * d * d);
  CHECK(s.bytes_by_dtype[static_cast<size_t>(DType::kBF16)] == 2 * 2 * d * d);
  CHECK(s.params_by_dtype[static_cast<size_t>(DType::kF32)] == kTinyVocab * d + 3 * d);
  CHECK(s.params_by_dtype[static_cast<size_t>(DType::kI32)] == 2);
  CHECK(s.params_by_dtype[static_cast<size_t>(DType::kQ4_0)] == kTinyVocab * d);
  CHECK(s.params_by_dtype[static_cast<size_t>(DType::kI8)] == d * d);
  // An unverified graph whose counts overflow saturates instead of wrapping.
  Graph huge = m.g;
  huge.values[m.tok_emb].shape = Shape::fixed({int64_t{1} << 40, int64_t{1} << 40});
  const WeightStats h = graph_weight_stats(huge);
  CHECK(h.params == INT64_MAX);
  CHECK(h.params_by_dtype[static_cast<size_t>(DType::kF32)] == INT64_MAX);
}

TEST_CASE("verify: states and kv_write") {
  SUBCASE("a state missing from Graph::states, listed twice, or not a state") {
    TinyModel m = make_tiny_model();
    m.g.states.clear();
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'k_cache'",
                 "missing from the graph states");
    m.g.states = {m.k_cache, m.k_cache};
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'k_cache'", "graph state");
    m.g.states = {m.k_cache, m.ids};
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'ids'", "graph state");
    m.g.states = {12345};
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "state id 12345 out of range");
  }
  SUBCASE("a state read by another op, or through another slot") {
    TinyModel m = make_tiny_model();
    m.g.nodes[node_named(m.g, "k_write")].inputs[1] = m.k_cache;  // rows := the state
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'k_write' (kv_write)",
                 "reads state 'k_cache'", "only as the cache of kv_write");
    TinyModel m2 = make_tiny_model();
    Node relu;
    relu.op = Op::kRelu;
    relu.name = "peek";
    relu.inputs = {m2.k_cache};
    Value out = m2.g.values[m2.k_cache];
    out.name = "peek";
    out.kind = ValueKind::kActivation;
    out.producer = static_cast<NodeId>(m2.g.nodes.size());
    relu.outputs = {static_cast<ValueId>(m2.g.values.size())};
    m2.g.values.push_back(out);
    m2.g.nodes.push_back(relu);
    CHECK_STATUS(graph_verify(m2.g), StatusCode::kGraphInvalid, "'peek' (relu)",
                 "reads state 'k_cache'");
  }
  SUBCASE("two kv_write nodes of one state") {
    TinyModel m = make_tiny_model();
    const Node w = m.g.nodes[node_named(m.g, "k_write")];
    Node w2 = w;
    w2.name = "k_write2";
    w2.outputs = {static_cast<ValueId>(m.g.values.size())};
    Value out = m.g.values[w.outputs[0]];
    out.name = "k_write2";
    out.producer = static_cast<NodeId>(m.g.nodes.size());
    m.g.values.push_back(out);
    m.g.nodes.push_back(w2);
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "state 'k_cache'",
                 "one writer per state");
  }
  SUBCASE("the cache of kv_write must be a state; its output is not a graph output") {
    TinyModel m = make_tiny_model();
    m.g.nodes[node_named(m.g, "k_write")].inputs[0] = m.qkv0;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'k_write' (kv_write)",
                 "expected a state value");
    TinyModel m2 = make_tiny_model();
    m2.g.outputs.push_back(m2.k_write);
    CHECK_STATUS(graph_verify(m2.g), StatusCode::kGraphInvalid, "'k_write'",
                 "cannot be a graph output");
  }
  SUBCASE("a state carrying data, or without a name") {
    TinyModel m = make_tiny_model();
    static const uint8_t bytes[64] = {};
    m.g.values[m.k_cache].data = bytes;
    CHECK_STATUS(graph_verify(m.g), StatusCode::kGraphInvalid, "'k_cache'", "carries data");
    TinyModel m2 = make_tiny_model();
    m2.g.values[m2.k_cache].name.clear();
    CHECK_STATUS(graph_verify(m2.g), StatusCode::kGraphInvalid, "states need a name");
  }
  SUBCASE("aliased_state") {
    const TinyModel m = make_tiny_model();
    CHECK(aliased_state(m.g, m.k_cache) == m.k_cache);
    CHECK(aliased_state(m.g, m.k_write) == m.k_cache);
    CHECK(aliased_state(m.g, m.logits) == kNoValue);
    CHECK(aliased_state(m.g, m.ids) == kNoValue);
  }
}
