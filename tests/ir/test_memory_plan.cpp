// The activation memory planner (ir/memory_plan.h): hand-made cases and a randomized property test
// whose checks (liveness, overlap, lower bound) are computed here independently of the planner.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>

#include "ir/memory_plan.h"
#include "tests/ir/ir_test_util.h"

using namespace laya;
using namespace laya::ir;
using namespace laya::ir::test;

namespace {

uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// Bytes of every value at the given symbol values (f32 activations, any dtype for the rest).
std::vector<uint64_t> bytes_at(const Graph& g, const std::vector<int64_t>& sym_values) {
  int64_t at[kMaxSymbols] = {};
  for (size_t i = 0; i < sym_values.size(); ++i) at[i] = sym_values[i];
  std::vector<uint64_t> bytes;
  for (const Value& v : g.values) {
    Extents e;
    REQUIRE(shape_eval(v.shape, at, &e).is_ok());
    Result<uint64_t> b = dtype_bytes(v.dtype, e.count());
    REQUIRE(b.is_ok());
    bytes.push_back(*b);
  }
  return bytes;
}

std::vector<uint64_t> bytes_at_max(const Graph& g) {
  std::vector<int64_t> v;
  for (const Symbol& s : g.symbols) v.push_back(s.max);
  return bytes_at(g, v);
}

struct Liveness {
  std::vector<char> planned;  // per value: a non-output activation
  std::vector<NodeId> first, last;
};

// Liveness from the graph alone: an activation that is not a graph output nor a kv_write output
// (the caller's state memory) is live from its producer to its last reader (or just at its
// producer if nobody reads it).
Liveness liveness(const Graph& g) {
  Liveness l;
  const size_t nv = g.values.size();
  l.planned.assign(nv, 0);
  l.first.assign(nv, kNoNode);
  l.last.assign(nv, kNoNode);
  for (size_t v = 0; v < nv; ++v) {
    if (g.values[v].kind != ValueKind::kActivation) continue;
    if (std::find(g.outputs.begin(), g.outputs.end(), v) != g.outputs.end()) continue;
    if (g.nodes[g.values[v].producer].op == Op::kKvWrite) continue;
    l.planned[v] = 1;
    l.first[v] = l.last[v] = g.values[v].producer;
  }
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ValueId in : g.nodes[n].inputs)
      if (l.planned[in]) l.last[in] = std::max(l.last[in], static_cast<NodeId>(n));
  return l;
}

// Checks a plan against the graph without trusting the plan's own liveness. Returns the largest
// total size live at one node (a lower bound on any valid arena).
uint64_t check_plan(const Graph& g, const MemoryPlan& p, const std::vector<uint64_t>& bytes,
                    uint64_t align) {
  const Liveness l = liveness(g);
  const size_t nv = g.values.size();
  REQUIRE(p.offset.size() == nv);
  REQUIRE(p.size.size() == nv);
  CHECK_OK(memory_plan_check(g, p, bytes, align));
  uint64_t unshared = 0;
  for (size_t v = 0; v < nv; ++v) {
    CAPTURE(g.values[v].name);
    if (!l.planned[v]) {
      // Graph inputs, weights and graph outputs live elsewhere.
      CHECK(p.offset[v] == kNotPlanned);
      CHECK(p.size[v] == 0);
      continue;
    }
    REQUIRE(p.offset[v] != kNotPlanned);
    CHECK(p.first[v] == l.first[v]);
    CHECK(p.last[v] == l.last[v]);
    CHECK(p.size[v] >= bytes[v]);
    CHECK(p.size[v] % align == 0);
    CHECK(p.offset[v] % align == 0);
    CHECK(p.offset[v] + p.size[v] <= p.arena_bytes);
    unshared += p.size[v];
  }
  CHECK(p.unshared_bytes == unshared);
  CHECK(p.arena_bytes <= p.unshared_bytes);
  // No two values live at the same node share a byte.
  for (size_t a = 0; a < nv; ++a) {
    if (!l.planned[a]) continue;
    for (size_t b = a + 1; b < nv; ++b) {
      if (!l.planned[b]) continue;
      const bool together = l.first[a] <= l.last[b] && l.first[b] <= l.last[a];
      if (!together) continue;
      const bool disjoint =
          p.offset[a] + p.size[a] <= p.offset[b] || p.offset[b] + p.size[b] <= p.offset[a];
      CHECK_MESSAGE(disjoint, g.values[a].name << " and " << g.values[b].name << " overlap");
    }
  }
  // Lower bound: the bytes live at any one node (sizes as reserved: at least 1 byte, aligned).
  uint64_t peak = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    uint64_t live = 0;
    for (size_t v = 0; v < nv; ++v)
      if (l.planned[v] && l.first[v] <= n && n <= l.last[v])
        live += round_up(std::max<uint64_t>(bytes[v], 1), align);
    peak = std::max(peak, live);
  }
  CHECK(p.arena_bytes >= peak);
  return peak;
}

// A chain x -> relu -> relu -> ... (n nodes); the last value is the graph output.
Graph relu_chain(int n) {
  GraphBuilder b;
  ValueId v = b.input("x", DType::kF32, Shape::fixed({4}));
  for (int i = 0; i < n; ++i) v = b.relu(v, "r" + std::to_string(i));
  b.output(v);
  Result<Graph> g = std::move(b).finish();
  REQUIRE(g.is_ok());
  return std::move(g).value();
}

}  // namespace

TEST_CASE("memory plan: a chain reuses memory; the arena is the two largest adjacent buffers") {
  const Graph g = relu_chain(6);  // values: x, r0..r5 (r5 is the output)
  // r0..r4 sizes; after rounding to 64: 1024, 2048, 512, 3008, 704
  std::vector<uint64_t> bytes = {16, 1000, 2000, 500, 3000, 700, 5000};
  const MemoryPlan p = memory_plan(g, bytes, 64);
  check_plan(g, p, bytes, 64);
  CHECK(p.arena_bytes == 3008 + 704);
  CHECK(p.unshared_bytes == 1024 + 2048 + 512 + 3008 + 704);
  CHECK(p.offset[6] == kNotPlanned);  // the output
  CHECK(p.offset[0] == kNotPlanned);  // the input
  // r0 and r2 are never live together: they may share, and here they do (both next to r1/r3).
  const auto overlaps = [&](ValueId a, ValueId b) {
    return !(p.offset[a] + p.size[a] <= p.offset[b] || p.offset[b] + p.size[b] <= p.offset[a]);
  };
  CHECK(overlaps(2, 4));  // r1 and r3 both start at 0
  CHECK_FALSE(overlaps(1, 2));
  CHECK_FALSE(overlaps(3, 4));

  // Equal sizes: a chain needs exactly two buffers whatever its length.
  const Graph long_chain = relu_chain(40);
  const std::vector<uint64_t> equal(long_chain.values.size(), 4096);
  const MemoryPlan q = memory_plan(long_chain, equal, 64);
  check_plan(long_chain, q, equal, 64);
  CHECK(q.arena_bytes == 2 * 4096);
  CHECK(q.unshared_bytes == 39 * 4096);
}

TEST_CASE("memory plan: a value read by a late node stays live until then") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({256}));
  const ValueId a = b.relu(x, "a");     // node 0
  const ValueId v1 = b.relu(a, "b");    // node 1
  const ValueId v2 = b.relu(v1, "c");   // node 2
  const ValueId v3 = b.relu(v2, "d");   // node 3
  const ValueId e = b.add(v3, a, "e");  // node 4 reads a again
  b.output(e);
  Result<Graph> g = std::move(b).finish();
  REQUIRE(g.is_ok());
  const std::vector<uint64_t> bytes = bytes_at_max(*g);  // 1024 bytes each
  const MemoryPlan p = memory_plan(*g, bytes, 64);
  const uint64_t peak = check_plan(*g, p, bytes, 64);
  CHECK(p.first[a] == 0);
  CHECK(p.last[a] == 4);
  CHECK(p.last[v1] == 2);
  CHECK(p.last[v3] == 4);
  CHECK(peak == 3 * 1024);
  CHECK(p.arena_bytes == 3 * 1024);  // a, plus b / c / d alternating in two slots
  for (ValueId v : {v1, v2, v3})
    CHECK((p.offset[a] + 1024 <= p.offset[v] || p.offset[v] + 1024 <= p.offset[a]));

  // Without the late read the same chain needs two slots.
  const Graph chain = relu_chain(5);
  const MemoryPlan q = memory_plan(chain, std::vector<uint64_t>(chain.values.size(), 1024), 64);
  CHECK(q.arena_bytes == 2 * 1024);
}

TEST_CASE("memory plan: lifetimes follow the run order, not the graph order") {
  // a = relu(x) (node 0) is read by node 1 only; u = relu(x) (node 2) is independent of both. In
  // graph order a and u may share bytes; a scheduler that runs node 2 before node 1 (independent
  // work joined into one backend's call ahead of a fallback node) needs them apart.
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({256}));
  const ValueId a = b.relu(x, "a");    // node 0
  const ValueId y = b.relu(a, "y");    // node 1
  const ValueId u = b.relu(x, "u");    // node 2
  const ValueId z = b.add(y, u, "z");  // node 3
  b.output(z);
  Result<Graph> g = std::move(b).finish();
  REQUIRE(g.is_ok());
  const std::vector<uint64_t> bytes = bytes_at_max(*g);
  const MemoryPlan in_graph_order = memory_plan(*g, bytes, 64);
  CHECK(in_graph_order.offset[a] == in_graph_order.offset[u]);  // a is dead when u is made
  const std::vector<NodeId> order = {0, 2, 1, 3};
  const MemoryPlan p = memory_plan(*g, bytes, 64, order);
  CHECK(p.first[a] == 0);
  CHECK(p.last[a] == 2);  // read at step 2 (node 1)
  CHECK(p.first[u] == 1);
  CHECK(p.last[u] == 3);
  CHECK((p.offset[a] + 1024 <= p.offset[u] || p.offset[u] + 1024 <= p.offset[a]));
  CHECK(memory_plan_check(*g, p, bytes, 64).is_ok());
  // A node split into parts appears once per part: live from its first part to its last reader.
  const std::vector<NodeId> parts = {0, 0, 2, 1, 1, 3};
  const MemoryPlan q = memory_plan(*g, bytes, 64, parts);
  CHECK(q.first[a] == 0);
  CHECK(q.last[a] == 4);
  CHECK(q.first[y] == 3);
  CHECK(q.last[y] == 5);
}

TEST_CASE("memory plan: all outputs of a node are live together, even unread ones") {
  GraphBuilder b;
  const ValueId x = b.input("x", DType::kF32, Shape::fixed({2, 96}));
  const std::vector<ValueId> parts = b.split(x, {32, 32, 32}, "s");  // node 0; parts[2] unread
  const ValueId y = b.mul(parts[0], parts[1], "y");                  // node 1
  const ValueId z = b.relu(y, "z");                                  // node 2
  b.output(z);
  Result<Graph> g = std::move(b).finish();
  REQUIRE(g.is_ok());
  const std::vector<uint64_t> bytes = bytes_at_max(*g);
  const MemoryPlan p = memory_plan(*g, bytes, 64);
  check_plan(*g, p, bytes, 64);
  CHECK(p.first[parts[2]] == 0);
  CHECK(p.last[parts[2]] == 0);
  CHECK(p.arena_bytes == 3 * 256);  // the three parts at node 0; y reuses one slot at node 1
}

TEST_CASE("memory plan: planned at a bucket's max shape, valid at smaller shapes") {
  GraphBuilder b;
  const int seq = b.symbol("seq", 1, 128);
  const int batch = b.symbol("batch", 1, 4);
  const ValueId x =
      b.input("x", DType::kF32, Shape::of({Dim::sym(batch), Dim::sym(seq), Dim::fixed(64)}));
  const ValueId w1 = zero_weight(b, "w1", DType::kF32, Shape::fixed({256, 64}));
  const ValueId w2 = zero_weight(b, "w2", DType::kQ8_0, Shape::fixed({64, 128}), block_quant());
  const ValueId h = b.matmul(x, w1, kNoValue, "up");
  const ValueId r = b.relu(h, "act");
  const std::vector<ValueId> halves = b.split(r, {128, 128}, "halves");
  const ValueId m = b.mul(halves[0], halves[1], "gate");
  const ValueId d = b.matmul(b.glu(r, ActKind::kSilu, "glu"), w2, kNoValue, "down");
  const ValueId s = b.add(d, x, "res");
  const ValueId o = b.add(
      s, b.softmax(b.matmul(m, zero_weight(b, "w3", DType::kF32, Shape::fixed({64, 128}))), "sm"),
      "out");
  b.output(o);
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());

  const std::vector<uint64_t> at_max = bytes_at_max(*g);
  CHECK(at_max[h] == 4 * 128 * 256 * 4);
  for (uint64_t align : {uint64_t{1}, uint64_t{64}, uint64_t{4096}}) {
    CAPTURE(align);
    const MemoryPlan p = memory_plan(*g, at_max, align);
    check_plan(*g, p, at_max, align);
    for (int64_t sv : {1, 5, 127, 128})
      for (int64_t bv : {1, 3, 4}) {
        CAPTURE(sv);
        CAPTURE(bv);
        const std::vector<uint64_t> smaller = bytes_at(*g, {sv, bv});
        for (size_t v = 0; v < smaller.size(); ++v) CHECK(smaller[v] <= at_max[v]);
        // The same offsets remain valid: every buffer only shrinks.
        CHECK_OK(memory_plan_check(*g, p, smaller, align));
      }
    // Beyond the bucket the plan no longer holds the values.
    CHECK_STATUS(memory_plan_check(*g, p, bytes_at(*g, {129, 4}), align), StatusCode::kInternal,
                 "bad placement");
  }
}

TEST_CASE("memory_plan_check rejects overlaps, misalignment, overflow of the arena, short sizes") {
  const Graph g = relu_chain(4);  // x, r0, r1, r2, r3(output)
  const std::vector<uint64_t> bytes(g.values.size(), 100);
  const MemoryPlan good = memory_plan(g, bytes, 64);
  CHECK_OK(memory_plan_check(g, good, bytes, 64));
  {
    MemoryPlan p = good;  // r0 and r1 are live together at node 1
    p.offset[2] = p.offset[1];
    CHECK_STATUS(memory_plan_check(g, p, bytes, 64), StatusCode::kInternal, "'r0'", "'r1'",
                 "overlap");
  }
  {
    MemoryPlan p = good;
    p.offset[1] += 32;
    p.arena_bytes += 64;
    CHECK_STATUS(memory_plan_check(g, p, bytes, 64), StatusCode::kInternal, "'r0'", "placement");
  }
  {
    MemoryPlan p = good;
    p.arena_bytes -= 1;
    CHECK(memory_plan_check(g, p, bytes, 64).code() == StatusCode::kInternal);
  }
  {
    std::vector<uint64_t> bigger = bytes;
    bigger[3] = 129;
    CHECK_STATUS(memory_plan_check(g, good, bigger, 64), StatusCode::kInternal, "'r2'");
  }
  {
    MemoryPlan p = good;  // r0 and r2 are never live together: sharing is fine
    p.offset[1] = 256;    // r0 [256, 384), r1 [128, 256), r2 [256, 384)
    p.offset[2] = 128;
    p.offset[3] = 256;
    p.arena_bytes = 384;
    CHECK_OK(memory_plan_check(g, p, bytes, 64));
    p.offset[2] = 192;  // now r1 overlaps r0, and they are live together
    CHECK(memory_plan_check(g, p, bytes, 64).code() == StatusCode::kInternal);
  }
}

TEST_CASE("memory plan: kv_write outputs live in the state's memory, not the arena") {
  const TinyModel m = make_tiny_model();
  const std::vector<uint64_t> bytes = bytes_at_max(m.g);
  const MemoryPlan p = memory_plan(m.g, bytes, 64);
  check_plan(m.g, p, bytes, 64);
  CHECK(p.offset[m.k_write] == kNotPlanned);
  CHECK(p.offset[m.k_cache] == kNotPlanned);
  CHECK(p.offset[m.attn] != kNotPlanned);
}

TEST_CASE("memory plan: a graph without planned values needs no arena") {
  const Graph g = relu_chain(1);  // the only activation is the output
  const MemoryPlan p = memory_plan(g, {16, 16}, 64);
  CHECK(p.arena_bytes == 0);
  CHECK(p.unshared_bytes == 0);
  CHECK(p.offset[1] == kNotPlanned);
  CHECK_OK(memory_plan_check(g, p, {16, 16}, 64));
}

// ---- randomized property test ------------------------------------------------------------------

namespace {

const int64_t kWidths[] = {1, 2, 3, 5, 8, 16, 33, 64, 100, 256, 1000, 4096};

// A random DAG over f32 [rows, w] values: relu / add / mul / split / matmul, random fan-out
// (sources drawn from recent values, sometimes from any earlier value: long-lived values), random
// graph outputs. `rows` is a symbol with a random upper bound.
Graph random_dag(std::mt19937_64& rng, int n_nodes) {
  auto pick = [&](int64_t n) { return static_cast<int64_t>(rng() % static_cast<uint64_t>(n)); };
  const int64_t max_rows[] = {1, 2, 7, 64, 512, 4096};
  GraphBuilder b;
  const int rows = b.symbol("rows", 1, max_rows[pick(6)]);
  std::vector<ValueId> pool;
  std::vector<int64_t> width;  // parallel to pool
  auto add_value = [&](ValueId v, int64_t w) {
    REQUIRE_MESSAGE(v != kNoValue, b.status().to_string());
    pool.push_back(v);
    width.push_back(w);
  };
  const int n_inputs = 1 + static_cast<int>(pick(3));
  for (int i = 0; i < n_inputs; ++i) {
    const int64_t w = kWidths[pick(12)];
    add_value(
        b.input("in" + std::to_string(i), DType::kF32, Shape::of({Dim::sym(rows), Dim::fixed(w)})),
        w);
  }
  int n_weights = 0;
  for (int i = 0; i < n_nodes; ++i) {
    // Source: mostly one of the last few values, sometimes any (a long-lived value).
    const int64_t np = static_cast<int64_t>(pool.size());
    const size_t si = pick(5) == 0 ? static_cast<size_t>(pick(np))
                                   : static_cast<size_t>(np - 1 - pick(std::min<int64_t>(np, 4)));
    const ValueId src = pool[si];
    const int64_t w = width[si];
    const std::string name = "n" + std::to_string(i);
    switch (pick(6)) {
      case 0:
        add_value(b.relu(src, name), w);
        break;
      case 1:
      case 2: {  // add / mul with another value of the same width (or itself, or a bias)
        std::vector<size_t> same;
        for (size_t j = 0; j < pool.size(); ++j)
          if (width[j] == w) same.push_back(j);
        ValueId other = pool[same[pick(static_cast<int64_t>(same.size()))]];
        if (pick(4) == 0) {
          other =
              zero_weight(b, "bias" + std::to_string(n_weights++), DType::kF32, Shape::fixed({w}));
        }
        add_value(pick(2) ? b.add(src, other, name) : b.mul(src, other, name), w);
        break;
      }
      case 3: {  // split into 2..4 parts
        if (w < 2) {
          add_value(b.relu(src, name), w);
          break;
        }
        const int64_t parts = std::min<int64_t>(w, 2 + pick(3));
        std::vector<int64_t> sizes(static_cast<size_t>(parts), 1);
        for (int64_t rest = w - parts; rest > 0; --rest) ++sizes[static_cast<size_t>(pick(parts))];
        const std::vector<ValueId> outs = b.split(src, sizes, name);
        REQUIRE(outs.size() == sizes.size());
        for (size_t k = 0; k < outs.size(); ++k) add_value(outs[k], sizes[k]);
        break;
      }
      default: {  // matmul to a random width, keeping the weight small
        std::vector<int64_t> fits;
        for (int64_t n : kWidths)
          if (n * w <= 65536) fits.push_back(n);
        const int64_t n = fits[pick(static_cast<int64_t>(fits.size()))];
        const ValueId wt =
            zero_weight(b, "w" + std::to_string(n_weights++), DType::kF32, Shape::fixed({n, w}));
        add_value(b.matmul(src, wt, kNoValue, name), n);
        break;
      }
    }
  }
  // Graph outputs: the last value plus a random subset of the other activations.
  std::vector<ValueId> outs = {pool.back()};
  for (size_t j = static_cast<size_t>(n_inputs); j + 1 < pool.size(); ++j)
    if (pick(8) == 0) outs.push_back(pool[j]);
  for (ValueId o : outs) b.output(o);
  Result<Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

}  // namespace

TEST_CASE("memory plan property: random DAGs give valid plans within the bounds") {
  std::mt19937_64 rng(20240611);
  const uint64_t aligns[] = {1, 16, 64, 4096};
  int total_nodes = 0;
  uint64_t largest_value = 0, smallest_value = UINT64_MAX;
  for (int iter = 0; iter < 300; ++iter) {
    CAPTURE(iter);
    const int n_nodes = 1 + static_cast<int>(rng() % 60);
    const Graph g = random_dag(rng, n_nodes);
    total_nodes += static_cast<int>(g.nodes.size());
    const uint64_t align = aligns[rng() % 4];
    const std::vector<uint64_t> at_max = bytes_at_max(g);
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].kind == ValueKind::kActivation) {
        largest_value = std::max(largest_value, at_max[v]);
        smallest_value = std::min(smallest_value, at_max[v]);
      }
    const MemoryPlan p = memory_plan(g, at_max, align);
    check_plan(g, p, at_max, align);
    // A smaller shape in the same bucket fits the same plan.
    const int64_t rows = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(g.symbols[0].max));
    CHECK_OK(memory_plan_check(g, p, bytes_at(g, {rows}), align));
    // Random byte sizes unrelated to the shapes (incl. 0 and odd sizes) plan just as well.
    std::vector<uint64_t> random_bytes(g.values.size());
    for (uint64_t& x : random_bytes) {
      const uint64_t kind = rng() % 4;
      x = kind == 0 ? 0 : kind == 1 ? rng() % 64 : kind == 2 ? rng() % 100000 : rng() % (1u << 26);
    }
    check_plan(g, memory_plan(g, random_bytes, align), random_bytes, align);
  }
  // The generator covers what it claims to.
  CHECK(total_nodes > 300 * 20);
  CHECK(smallest_value <= 8);
  CHECK(largest_value >= uint64_t{1} << 24);
}
