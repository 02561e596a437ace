// Session lifecycle, errors, shape buckets, the scheduler, and the backend registry.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "hal/cpu/thread_pool.h"
#include "ir/builder.h"
#include "kernels/kernels.h"
#include "kernels/quant.h"
#include "tests/runtime/session_util.h"

namespace laya::test {
namespace {

using runtime::MemoryRegion;
using runtime::Session;
using runtime::SessionOptions;

ir::Graph encoder(ir::DType dtype = ir::DType::kF32) {
  tools::TinyModelConfig cfg;
  cfg.matmul_dtype = dtype;
  auto g = tools::make_tiny_encoder(cfg, 11);
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

bool contains(const char* haystack, const std::string& needle) {
  return std::string(haystack).find(needle) != std::string::npos;
}

TEST_CASE("lifecycle: calls out of order fail with kFailedPrecondition") {
  const ir::Graph g = encoder();
  auto s = Session::prepare(g, cpu_options("ref"));
  REQUIRE(s.is_ok());
  Session& session = **s;
  const TinyInputs in = tiny_inputs(1, 8, 101);
  std::vector<float> out(8 * 64);
  const void* inputs[3] = {in.ids.data(), in.positions.data(), in.key_mask.data()};
  void* outputs[1] = {out.data()};
  CHECK(session.execute(inputs, outputs).code() == StatusCode::kFailedPrecondition);
  const int64_t sym[2] = {1, 8};
  CHECK(session.reshape(sym).code() == StatusCode::kFailedPrecondition);

  auto buf = runtime::session_buffers_alloc(session);
  REQUIRE(buf.is_ok());
  REQUIRE(
      session
          .bind_memory(buf->persistent.region(), buf->activations.region(), buf->scratch.region())
          .is_ok());
  Status st = session.execute(inputs, outputs);
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK(contains(st.message(), "reshape"));
  REQUIRE(session.reshape(sym).is_ok());
  CHECK(session.execute(inputs, outputs).is_ok());
  const std::vector<float> first = out;
  // The same values again (a decoder's every decode step) and after another shape: the same run.
  REQUIRE(session.reshape(sym).is_ok());
  std::fill(out.begin(), out.end(), 0.0f);
  CHECK(session.execute(inputs, outputs).is_ok());
  CHECK(out == first);
  const int64_t sym4[2] = {1, 4};
  REQUIRE(session.reshape(sym4).is_ok());
  REQUIRE(session.reshape(sym).is_ok());
  std::fill(out.begin(), out.end(), 0.0f);
  CHECK(session.execute(inputs, outputs).is_ok());
  CHECK(out == first);
  // New memory (bind_memory rebinds the current shapes to it), then the same values again.
  auto buf2 = runtime::session_buffers_alloc(session);
  REQUIRE(buf2.is_ok());
  REQUIRE(session
              .bind_memory(buf2->persistent.region(), buf2->activations.region(),
                           buf2->scratch.region())
              .is_ok());
  std::fill(out.begin(), out.end(), 0.0f);
  CHECK(session.execute(inputs, outputs).is_ok());
  CHECK(out == first);
  REQUIRE(session.reshape(sym).is_ok());
  std::fill(out.begin(), out.end(), 0.0f);
  CHECK(session.execute(inputs, outputs).is_ok());
  CHECK(out == first);
  // Wrong argument counts are refused, not read past.
  CHECK(session.execute(std::span<const void* const>(inputs, 2), outputs).code() ==
        StatusCode::kInvalidArgument);
}

// Options whose device packs weights into the session's persistent region (no shared cache).
runtime::SessionOptions unshared(runtime::SessionOptions o) {
  runtime::DeviceOptions d;
  d.share_weights = false;
  o.device = *runtime::Device::create(d);
  return o;
}

TEST_CASE("errors leave the session usable: regions, bounds, alignment, ids") {
  const ir::Graph g = encoder();
  TinyRun run = make_run(g, unshared(cpu_options("ref")));
  Session& s = *run.session;
  const TinyInputs in = tiny_inputs(2, 9, 101, 2);
  std::vector<float> want, got;
  REQUIRE(run_tiny(s, in, &want).is_ok());
  auto same_again = [&] {
    Status st = run_tiny(s, in, &got);
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
    CHECK(got == want);
  };

  const runtime::MemoryRequirements& req = s.requirements();
  REQUIRE(req.persistent_bytes > 0);
  REQUIRE(req.activation_bytes > 0);
  REQUIRE(req.scratch_bytes > 0);
  MemoryRegion p = run.buffers.persistent.region(), a = run.buffers.activations.region(),
               sc = run.buffers.scratch.region();

  SUBCASE("too-small regions: kResourceExhausted naming the region and the bytes needed") {
    const struct {
      const char* name;
      int which;
      uint64_t need;
    } cases[] = {{"persistent", 0, req.persistent_bytes},
                 {"activations", 1, req.activation_bytes},
                 {"scratch", 2, req.scratch_bytes}};
    for (const auto& c : cases) {
      MemoryRegion r[3] = {p, a, sc};
      r[c.which].bytes = c.need - 1;
      Status st = s.bind_memory(r[0], r[1], r[2]);
      CHECK(st.code() == StatusCode::kResourceExhausted);
      CHECK(contains(st.message(), c.name));
      CHECK(contains(st.message(), std::to_string(c.need)));
      same_again();
    }
    MemoryRegion none;
    CHECK(s.bind_memory(p, none, sc).code() == StatusCode::kResourceExhausted);
    same_again();
  }

  SUBCASE("misaligned regions: kInvalidArgument") {
    // Regions one cache line larger, then offset by 32 bytes.
    auto big_p = runtime::RegionBuffer::alloc(req.persistent_bytes + 64, 64, false);
    auto big_a = runtime::RegionBuffer::alloc(req.activation_bytes + 64, 64, false);
    auto big_s = runtime::RegionBuffer::alloc(req.scratch_bytes + 64, 64, false);
    REQUIRE(big_p.is_ok());
    REQUIRE(big_a.is_ok());
    REQUIRE(big_s.is_ok());
    auto shifted = [](const runtime::RegionBuffer& b) {
      return MemoryRegion{static_cast<uint8_t*>(b.data()) + 32, b.bytes() - 32};
    };
    Status st = s.bind_memory(shifted(*big_p), a, sc);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(contains(st.message(), "persistent"));
    CHECK(s.bind_memory(p, shifted(*big_a), sc).code() == StatusCode::kInvalidArgument);
    CHECK(s.bind_memory(p, a, shifted(*big_s)).code() == StatusCode::kInvalidArgument);
    same_again();
    // Rebinding to other (aligned) regions works and gives the same results.
    REQUIRE(s.bind_memory(big_p->region(), big_a->region(), big_s->region()).is_ok());
    same_again();
    REQUIRE(s.bind_memory(p, a, sc).is_ok());
  }

  SUBCASE("reshape outside the bounds: kOutOfRange naming the symbol") {
    const int64_t bad[][2] = {{1, 65}, {1, 0}, {3, 8}, {0, 8}};
    for (const auto& v : bad) {
      Status st = s.reshape(v);
      CHECK(st.code() == StatusCode::kOutOfRange);
      CHECK(contains(st.message(), v[0] < 1 || v[0] > 2 ? "batch" : "seq"));
    }
    const int64_t three[3] = {1, 8, 1};
    CHECK(s.reshape(three).code() == StatusCode::kInvalidArgument);
    // The previous shape is still in place: execute runs at (2, 9).
    std::vector<float> out(want.size());
    const void* inputs[3] = {in.ids.data(), in.positions.data(), in.key_mask.data()};
    void* outputs[1] = {out.data()};
    REQUIRE(s.execute(inputs, outputs).is_ok());
    CHECK(out == want);
    same_again();
  }

  SUBCASE("an embedding id out of range: kIndexOutOfRange naming node, position and id") {
    for (int32_t bad_id : {101, -1, 1 << 30}) {
      TinyInputs bad = in;
      bad.ids[5] = bad_id;
      std::vector<float> out;
      Status st = run_tiny(s, bad, &out);
      CHECK(st.code() == StatusCode::kIndexOutOfRange);
      CHECK(contains(st.message(), "embed"));
      CHECK(contains(st.message(), "position 5"));
      CHECK(contains(st.message(), "id " + std::to_string(bad_id)));
      same_again();
    }
  }
}

TEST_CASE("a large persistent region must be 2 MiB aligned; large weights sit on 2 MiB") {
  tools::TinyModelConfig cfg;
  cfg.d_model = 512;
  cfg.d_ff = 1024;
  cfg.n_heads = 8;
  cfg.n_layers = 1;
  cfg.max_seq = 16;
  auto g = tools::make_tiny_encoder(cfg, 3);
  REQUIRE(g.is_ok());
  auto s = Session::prepare(*g, unshared(cpu_options("ref")));
  REQUIRE(s.is_ok());
  const runtime::MemoryRequirements& req = (*s)->requirements();
  REQUIRE(req.persistent_bytes >= hal::kHugePageBytes);
  auto buf = runtime::session_buffers_alloc(**s);
  REQUIRE(buf.is_ok());
  CHECK(reinterpret_cast<uintptr_t>(buf->persistent.data()) % hal::kHugePageBytes == 0);
  auto off = runtime::RegionBuffer::alloc(req.persistent_bytes + 4096, 64, false);
  REQUIRE(off.is_ok());
  uint8_t* base = static_cast<uint8_t*>(off->data());
  if (reinterpret_cast<uintptr_t>(base) % hal::kHugePageBytes == 0) base += 64;
  Status st = (*s)->bind_memory(MemoryRegion{base, req.persistent_bytes}, buf->activations.region(),
                                buf->scratch.region());
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "persistent"));
  REQUIRE(
      (*s)->bind_memory(buf->persistent.region(), buf->activations.region(), buf->scratch.region())
          .is_ok());
  CHECK((*s)->high_water().persistent_bytes == req.persistent_bytes);
  // The wi weight ([2048, 512] f32 = 4 MiB) is packed at a 2 MiB boundary: with ref kernels the
  // packed layout is the file layout, so its bytes are findable in the region.
  const ir::Value& wi = g->values[g->find_value("l0.wi")];
  bool found = false;
  for (uint64_t off2 = 0; off2 + wi.nbytes <= req.persistent_bytes; off2 += hal::kHugePageBytes)
    found = found || std::memcmp(static_cast<uint8_t*>(buf->persistent.data()) + off2, wi.data,
                                 wi.nbytes) == 0;
  CHECK(found);
}

TEST_CASE("buckets: symbol bounds up to INT64_MAX, and plans that would overflow, are errors") {
  {  // default bucket bounds double up to the max without overflowing
    ir::GraphBuilder b;
    b.symbol("n", 1, INT64_MAX);
    b.input("bytes", ir::DType::kU8, ir::Shape::of({ir::Dim::fixed(4)}));
    auto g = std::move(b).finish();
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    auto s = runtime::Session::prepare(*g, {});
    REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
    const std::vector<runtime::Bucket>& buckets = (*s)->buckets();
    CHECK(buckets.back().hi[0] == INT64_MAX);
    CHECK(buckets[buckets.size() - 2].hi[0] == int64_t{1} << 62);
  }
  {  // two activations of 2^47 bytes and an input of 2^47: over the 2^48 bytes of a bucket
    ir::GraphBuilder b;
    const int n = b.symbol("n", 1, int64_t{1} << 45);
    const ir::ValueId x = b.input("x", ir::DType::kF32, ir::Shape::of({ir::Dim::sym(n)}));
    const ir::ValueId y = b.relu(x, "y");
    b.output(b.add(y, b.relu(y, "z"), "sum"), "out");
    auto g = std::move(b).finish();
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    auto s = runtime::Session::prepare(*g, {});
    CHECK(s.status().code() == StatusCode::kOutOfRange);
    CHECK(contains(s.status().message(), "shape bucket"));
  }
}

TEST_CASE("buckets: lengths across buckets match per-length runs; high-water marks grow") {
  const ir::Graph g = encoder();
  TinyRun run = make_run(g, cpu_options("ref"));
  Session& s = *run.session;
  // batch max 2 -> {2}; seq max 64 -> {16, 32, 64}.
  REQUIRE(s.buckets().size() == 3);
  CHECK(s.buckets()[0].lo == std::vector<int64_t>{1, 1});
  CHECK(s.buckets()[0].hi == std::vector<int64_t>{2, 16});
  CHECK(s.buckets()[1].lo == std::vector<int64_t>{1, 17});
  CHECK(s.buckets()[2].hi == std::vector<int64_t>{2, 64});
  CHECK(s.buckets()[0].plan.arena_bytes < s.buckets()[2].plan.arena_bytes);
  CHECK(s.requirements().activation_bytes == s.buckets()[2].plan.arena_bytes);
  CHECK(s.high_water().activation_bytes == 0);
  CHECK(s.high_water().persistent_bytes == s.requirements().persistent_bytes);

  // One bucket only (the max): the per-length reference runs.
  SessionOptions one = cpu_options("ref");
  one.bucket_bounds = {{"seq", {64}}};
  TinyRun ref = make_run(g, one);
  REQUIRE(ref.session->buckets().size() == 1);

  const struct {
    int64_t seq;
    int bucket;
  } steps[] = {{5, 0}, {16, 0}, {17, 1}, {40, 2}, {64, 2}, {3, 0}, {33, 2}};
  uint64_t prev_act = 0, prev_scratch = 0;
  for (const auto& step : steps) {
    CAPTURE(step.seq);
    const TinyInputs in = tiny_inputs(2, step.seq, 101, 1, static_cast<uint32_t>(step.seq));
    std::vector<float> got, want;
    REQUIRE(run_tiny(s, in, &got).is_ok());
    CHECK(s.current_bucket() == step.bucket);
    REQUIRE(run_tiny(*ref.session, in, &want).is_ok());
    CHECK(got == want);
    const runtime::HighWater hw = s.high_water();
    CHECK(hw.activation_bytes >= s.buckets()[static_cast<size_t>(step.bucket)].plan.arena_bytes);
    CHECK(hw.activation_bytes >= prev_act);
    CHECK(hw.activation_bytes <= s.requirements().activation_bytes);
    CHECK(hw.scratch_bytes >= prev_scratch);
    CHECK(hw.scratch_bytes <= s.requirements().scratch_bytes);
    if (step.seq == 5) {
      CHECK(hw.activation_bytes == s.buckets()[0].plan.arena_bytes);
      CHECK(hw.activation_bytes < s.requirements().activation_bytes);
    }
    if (step.seq == 64) {
      CHECK(hw.activation_bytes == s.requirements().activation_bytes);
      CHECK(hw.scratch_bytes == s.requirements().scratch_bytes);
    }
    prev_act = hw.activation_bytes;
    prev_scratch = hw.scratch_bytes;
  }

  SUBCASE("custom bounds") {
    SessionOptions o = cpu_options("ref");
    o.bucket_bounds = {{"seq", {24, 8}}};
    auto c = Session::prepare(g, o);
    REQUIRE(c.is_ok());
    REQUIRE((*c)->buckets().size() == 3);
    CHECK((*c)->buckets()[1].lo[1] == 9);
    CHECK((*c)->buckets()[1].hi[1] == 24);
    o.bucket_bounds = {{"seq", {65}}};
    CHECK(Session::prepare(g, o).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("scheduler: null refuses, every node falls back to cpu with the reason") {
  const ir::Graph g = encoder();
  for (const std::vector<std::string>& list :
       {std::vector<std::string>{"null", "cpu"}, std::vector<std::string>{"null"}}) {
    SessionOptions o = cpu_options("ref");
    o.backends = list;
    TinyRun run = make_run(g, o);
    const Session& s = *run.session;
    REQUIRE(s.placement().size() == g.nodes.size());
    for (const runtime::NodePlacement& p : s.placement()) {
      CHECK(p.backend == "cpu");
      CHECK(p.executable == 0);
      CHECK(contains(p.fallback_reason.c_str(), "null: "));
      CHECK(contains(p.fallback_reason.c_str(), "the null backend runs no ops"));
    }
    REQUIRE(s.executables().size() == 1);  // contiguous nodes on one backend: one executable
    CHECK(s.executables()[0].nodes.size() == g.nodes.size());
    REQUIRE(s.backend("cpu") != nullptr);
    CHECK(s.backend("null") != nullptr);
    const TinyInputs in = tiny_inputs(1, 6, 101);
    std::vector<float> a, b;
    REQUIRE(run_tiny(*run.session, in, &a).is_ok());
    TinyRun plain = make_run(g, cpu_options("ref"));
    REQUIRE(run_tiny(*plain.session, in, &b).is_ok());
    CHECK(a == b);
    for (const runtime::NodePlacement& p : plain.session->placement())
      CHECK(p.fallback_reason.empty());
  }
}

TEST_CASE("scheduler: unknown backend names fail with kNotFound") {
  const ir::Graph g = encoder();
  for (const std::vector<std::string>& list :
       {std::vector<std::string>{"nope"}, std::vector<std::string>{"cpu", "npu9000"}}) {
    SessionOptions o;
    o.backends = list;
    Status st = Session::prepare(g, o).status();
    CHECK(st.code() == StatusCode::kNotFound);
    CHECK(contains(st.message(), list.back()));
  }
}

TEST_CASE("scheduler: a node nobody runs fails prepare with the reasons") {
  // A matmul whose weight is computed (here: a graph input): valid IR, but the CPU backend packs
  // weights at load, so it refuses; with no other backend, prepare fails naming node and reason.
  ir::GraphBuilder b;
  const int seq = b.symbol("seq", 1, 4);
  const ir::ValueId x =
      b.input("x", ir::DType::kF32, ir::Shape::of({ir::Dim::sym(seq), ir::Dim::fixed(32)}));
  const ir::ValueId w = b.input("w", ir::DType::kF32, ir::Shape::fixed({8, 32}));
  b.output(b.matmul(x, w, ir::kNoValue, "mm_act"), "y");
  auto g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  for (const std::vector<std::string>& list :
       {std::vector<std::string>{"cpu"}, std::vector<std::string>{"null"}}) {
    SessionOptions o = cpu_options("ref");
    o.backends = list;
    Status st = Session::prepare(*g, o).status();
    CHECK(st.code() == StatusCode::kUnsupported);
    CHECK(contains(st.message(), "mm_act"));
    CHECK(contains(st.message(), "constant"));
    if (list[0] == "null") CHECK(contains(st.message(), "null backend runs no ops"));
  }
}

TEST_CASE("profile sink gets one measured time per node") {
  const ir::Graph g = encoder();
  TinyRun run = make_run(g, cpu_options("ref"));
  const TinyInputs in = tiny_inputs(1, 8, 101);
  const int64_t sym[2] = {1, 8};
  REQUIRE(run.session->reshape(sym).is_ok());
  struct Seen {
    std::vector<int> count;
    bool negative = false, modelled = false;
  } seen;
  seen.count.assign(g.nodes.size(), 0);
  hal::ProfileSink sink;
  sink.user = &seen;
  sink.on_node = [](void* user, ir::NodeId n, double ms, bool modelled) {
    auto* s = static_cast<Seen*>(user);
    s->count[n]++;
    s->negative = s->negative || ms < 0;
    s->modelled = s->modelled || modelled;
  };
  std::vector<float> out(static_cast<size_t>(run.session->extents(g.outputs[0]).count()));
  const void* inputs[3] = {in.ids.data(), in.positions.data(), in.key_mask.data()};
  void* outputs[1] = {out.data()};
  REQUIRE(run.session->execute(inputs, outputs, &sink).is_ok());
  for (int c : seen.count) CHECK(c == 1);
  CHECK_FALSE(seen.negative);
  CHECK_FALSE(seen.modelled);
}

// Three matmuls of one type: [128, K], [64, K] with a bias, [40, K] with a bias; `shared_x`: all
// read one input x (the CPU backend stacks them), else each its own input (it cannot).
ir::Graph three_matmuls(ir::DType dtype, bool shared_x, const std::vector<uint8_t>* w,
                        const std::vector<float>* bias) {
  ir::GraphBuilder b;
  const int seq = b.symbol("seq", 1, 4);
  const int64_t k = 256, rows[3] = {128, 64, 40};
  const ir::Shape xs = ir::Shape::of({ir::Dim::sym(seq), ir::Dim::fixed(k)});
  ir::ValueId x = b.input("x", ir::DType::kF32, xs);
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    if (!shared_x && i > 0) x = b.input("x" + n, ir::DType::kF32, xs);
    ir::Quant block;
    block.kind = ir::QuantKind::kBlock;
    const ir::ValueId wv =
        b.weight("w" + n, dtype, ir::Shape::fixed({rows[i], k}), w[i].data(), w[i].size(), block);
    const ir::ValueId bv = i == 0 ? ir::kNoValue
                                  : b.weight("b" + n, ir::DType::kF32, ir::Shape::fixed({rows[i]}),
                                             bias[i].data(), bias[i].size() * sizeof(float));
    b.output(b.matmul(x, wv, bv, "mm" + n), "y" + n);
  }
  auto g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

TEST_CASE("cpu: matmuls sharing x run as one stacked GEMV, with each one's own results") {
  const int64_t k = 256, rows[3] = {128, 64, 40};
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (ir::DType dtype : {ir::DType::kQ4_0, ir::DType::kQ5_0, ir::DType::kQ8_0, ir::DType::kQ4_K}) {
    std::vector<uint8_t> w[3];
    std::vector<float> bias[3];
    for (int i = 0; i < 3; ++i) {
      std::vector<float> f(static_cast<size_t>(rows[i] * k));
      for (float& v : f) v = dist(rng);
      for (int64_t r = 0; r < rows[i]; ++r) {
        const float* src = f.data() + r * k;
        const size_t at = w[i].size();
        switch (dtype) {
          case ir::DType::kQ4_0:
            w[i].resize(at + (k / 32) * sizeof(kernels::BlockQ4_0));
            kernels::quantize_row_q4_0(src, reinterpret_cast<kernels::BlockQ4_0*>(&w[i][at]), k);
            break;
          case ir::DType::kQ5_0:
            w[i].resize(at + (k / 32) * sizeof(kernels::BlockQ5_0));
            kernels::quantize_row_q5_0(src, reinterpret_cast<kernels::BlockQ5_0*>(&w[i][at]), k);
            break;
          case ir::DType::kQ8_0:
            w[i].resize(at + (k / 32) * sizeof(kernels::BlockQ8_0));
            kernels::quantize_row_q8_0(src, reinterpret_cast<kernels::BlockQ8_0*>(&w[i][at]), k);
            break;
          default:
            w[i].resize(at + sizeof(kernels::BlockQ4_K));
            kernels::quantize_row_q4_K(src, reinterpret_cast<kernels::BlockQ4_K*>(&w[i][at]), k);
            break;
        }
      }
      bias[i].resize(static_cast<size_t>(rows[i]));
      for (float& v : bias[i]) v = dist(rng);
    }
    const ir::Graph stacked = three_matmuls(dtype, true, w, bias);
    const ir::Graph apart = three_matmuls(dtype, false, w, bias);
    for (const char* kern : {"auto", "ref"})
      for (bool share : {true, false}) {
        INFO(ir::dtype_name(dtype), " kernels ", kern, share ? " (weight cache)" : " (persistent)");
        const SessionOptions o = share ? cpu_options(kern) : unshared(cpu_options(kern));
        TinyRun a = make_run(stacked, o), b = make_run(apart, o);
        for (int64_t seq : {1, 3}) {  // the stacked GEMV, then each matmul on its part (GEMM)
          std::vector<float> x(static_cast<size_t>(seq * k));
          for (float& v : x) v = dist(rng);
          std::vector<std::vector<float>> ya(3), yb(3);
          void* outs_a[3];
          void* outs_b[3];
          for (int i = 0; i < 3; ++i) {
            ya[i].assign(static_cast<size_t>(seq * rows[i]), -1.0f);
            yb[i].assign(static_cast<size_t>(seq * rows[i]), -2.0f);
            outs_a[i] = ya[i].data();
            outs_b[i] = yb[i].data();
          }
          const void* in_a[1] = {x.data()};
          const void* in_b[3] = {x.data(), x.data(), x.data()};
          REQUIRE(a.session->reshape(std::span<const int64_t>(&seq, 1)).is_ok());
          REQUIRE(b.session->reshape(std::span<const int64_t>(&seq, 1)).is_ok());
          // The profile shows whether the stack ran: one time, split by packed bytes.
          std::vector<double> ms(stacked.nodes.size(), 0.0);
          hal::ProfileSink sink;
          sink.user = &ms;
          sink.on_node = [](void* user, ir::NodeId n, double t, bool) {
            (*static_cast<std::vector<double>*>(user))[n] += t;
          };
          REQUIRE(a.session->execute(in_a, outs_a, &sink).is_ok());
          REQUIRE(b.session->execute(in_b, outs_b).is_ok());
          for (int i = 0; i < 3; ++i) {
            INFO("seq ", seq, " matmul ", i);
            CHECK(std::memcmp(ya[i].data(), yb[i].data(), ya[i].size() * sizeof(float)) == 0);
          }
          kernels::KernelTable t;
          REQUIRE(kernels::kernel_table_by_name(kern, &t));
          const kernels::MatmulKernel& mm =
              t.matmul[static_cast<int>(dtype == ir::DType::kQ4_0   ? kernels::WType::kQ4_0
                                        : dtype == ir::DType::kQ5_0 ? kernels::WType::kQ5_0
                                        : dtype == ir::DType::kQ8_0 ? kernels::WType::kQ8_0
                                                                    : kernels::WType::kQ4_K)];
          std::vector<double> mm_ms;
          for (size_t n = 0; n < stacked.nodes.size(); ++n)
            if (stacked.nodes[n].op == ir::Op::kMatMul) mm_ms.push_back(ms[n]);
          REQUIRE(mm_ms.size() == 3);
          const double want = static_cast<double>(mm.packed_bytes(rows[1], k)) /
                              static_cast<double>(mm.packed_bytes(rows[0], k));
          const bool split = mm_ms[0] > 0 && std::fabs(mm_ms[1] / mm_ms[0] - want) < 1e-9 * want;
          CHECK(split == (seq == 1));
        }
      }
  }
}

hal::BackendInfo fake_info(uint32_t version, const char* name) {
  hal::BackendInfo info;
  info.api_version = version;
  info.name = name;
  info.create = [](const hal::BackendOptions&) -> Result<std::unique_ptr<hal::Backend>> {
    return status_error(StatusCode::kUnsupported, "fake");
  };
  return info;
}

TEST_CASE("registry: builtin backends, API version check, duplicates, unknown names") {
  const hal::Registry& reg = hal::builtin_registry();
  REQUIRE(reg.find("cpu") != nullptr);
  REQUIRE(reg.find("null") != nullptr);
  CHECK(reg.find("ax9999") == nullptr);
  std::vector<std::string> names;
  for (const hal::BackendInfo& i : reg.list()) names.push_back(i.name);
  CHECK(std::find(names.begin(), names.end(), "cpu") != names.end());
  CHECK(std::find(names.begin(), names.end(), "null") != names.end());

  CHECK(reg.refused().empty());

  hal::Registry r;
  Status st = r.add(fake_info(hal::kApiVersion + 1, "future"));
  CHECK(st.code() == StatusCode::kBackendVersionMismatch);
  CHECK(contains(st.message(), "future"));
  CHECK(r.find("future") == nullptr);
  CHECK(r.add(fake_info(hal::kApiVersion, "fake")).is_ok());
  CHECK(r.add(fake_info(hal::kApiVersion, "fake")).code() == StatusCode::kInvalidArgument);
  CHECK(r.create("missing", {}).status().code() == StatusCode::kNotFound);
}

TEST_CASE("registry: a refused backend stays visible, with its reason") {
  // A register function ignores add()'s result ((void)r.add(info)); the refusal must not vanish.
  hal::Registry r;
  (void)r.add(fake_info(hal::kApiVersion + 1, "stale"));
  (void)r.add(fake_info(hal::kApiVersion, ""));
  REQUIRE(r.refused().size() == 2);
  CHECK(r.refused()[0].name == "stale");
  CHECK(r.refused()[0].reason.code() == StatusCode::kBackendVersionMismatch);
  CHECK(contains(r.refused()[0].reason.message(), "HAL API"));
  CHECK(r.refused()[1].reason.code() == StatusCode::kInvalidArgument);
  CHECK(r.list().empty());
  // Asking for it by name gives the refusal, not "no such backend".
  Status st = r.create("stale", {}).status();
  CHECK(st.code() == StatusCode::kBackendVersionMismatch);
  CHECK(contains(st.message(), "stale"));
  // A duplicate is refused, the first registration stays usable.
  CHECK(r.add(fake_info(hal::kApiVersion, "fake")).is_ok());
  (void)r.add(fake_info(hal::kApiVersion, "fake"));
  CHECK(r.refused().size() == 3);
  CHECK(r.find("fake") != nullptr);
}

TEST_CASE("cpu backend: capabilities and kernel selection") {
  const hal::Registry& reg = hal::builtin_registry();
  hal::BackendOptions o;
  o.n_threads = 2;
  o.settings = {{"kernels", "ref"}};
  auto cpu = reg.create("cpu", o);
  REQUIRE(cpu.is_ok());
  const hal::Capabilities& caps = (*cpu)->capabilities();
  CHECK(std::string(caps.name) == "cpu");
  CHECK(caps.n_groups == std::min(2, hal::cpu::ArenaPool::max_threads()));  // capped at the CPUs
  CHECK_FALSE(caps.modelled_time);
  for (ir::DType d : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16, ir::DType::kI8,
                      ir::DType::kQ8_0, ir::DType::kQ4_0, ir::DType::kQ4_1})
    CHECK((caps.weight_dtypes >> static_cast<int>(d) & 1) == 1);
  CHECK((caps.weight_dtypes >> static_cast<int>(ir::DType::kI32) & 1) == 0);
  CHECK(contains(caps.description, "ref"));

  for (int64_t t : kernels::kernel_hwy_targets()) {
    const std::string target = kernels::kernel_target_name(t);
    o.settings = {{"kernels", target}};
    auto b = reg.create("cpu", o);
    REQUIRE_MESSAGE(b.is_ok(), target);
    CHECK(contains((*b)->capabilities().description, target));
  }
  o.settings = {{"kernels", "AVX9000"}};
  Status st = reg.create("cpu", o).status();
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "AVX9000"));
  o.settings = {{"vnpu", "std"}};  // another backend's setting
  st = reg.create("cpu", o).status();
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "'vnpu'"));
  o.settings = {{"model_gflops", "-3"}};
  CHECK(reg.create("cpu", o).status().code() == StatusCode::kInvalidArgument);
  for (const char* v : {"f32", "i8"}) {
    o.settings = {{"int8_activations", v}};
    CHECK(reg.create("cpu", o).is_ok());
  }
  o.settings = {{"int8_activations", "bf16"}};
  st = reg.create("cpu", o).status();
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "int8_activations=bf16"));
  o.settings = {{"kernels", "auto"}};
  o.n_threads = -1;
  CHECK(reg.create("cpu", o).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("cpu backend: supports() refuses with reasons") {
  ir::GraphBuilder b;
  const int seq = b.symbol("seq", 1, 4);
  const ir::Shape xs = ir::Shape::of({ir::Dim::sym(seq), ir::Dim::fixed(32)});
  const ir::ValueId x = b.input("x", ir::DType::kF32, xs);
  const ir::ValueId w = b.input("w", ir::DType::kF32, ir::Shape::fixed({8, 32}));
  b.output(b.matmul(x, w, ir::kNoValue, "mm_act"), "y");
  auto g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  auto cpu = hal::builtin_registry().create("cpu", {});
  REQUIRE(cpu.is_ok());
  Status st = (*cpu)->supports(*g, g->nodes[0], nullptr);
  CHECK(st.code() == StatusCode::kUnsupported);
  CHECK(contains(st.message(), "constant"));
  // The whole tiny encoder and decoder are supported, in every matmul dtype the builders make.
  for (ir::DType d : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16, ir::DType::kQ8_0,
                      ir::DType::kQ4_0, ir::DType::kQ4_1}) {
    tools::TinyModelConfig cfg;
    cfg.matmul_dtype = d;
    for (bool enc : {true, false}) {
      auto m = enc ? tools::make_tiny_encoder(cfg, 1) : tools::make_tiny_decoder(cfg, 1);
      REQUIRE(m.is_ok());
      for (const ir::Node& n : m->nodes)
        CHECK_MESSAGE((*cpu)->supports(*m, n, nullptr).is_ok(), n.name);
    }
  }
}

}  // namespace
}  // namespace laya::test

namespace laya::test {
namespace {

// embedding (i8 table) -> matmul (i8 weight) with the given quantization of both.
ir::Graph i8_graph(bool per_tensor, const std::vector<int8_t>& table, const std::vector<int8_t>& w,
                   float s_table, float s_w) {
  ir::GraphBuilder b;
  const int seq = b.symbol("seq", 1, 8);
  const ir::ValueId ids =
      b.input("ids", ir::DType::kI32, ir::Shape::of({ir::Dim::sym(seq)}), ir::InputRole::kTokenIds);
  auto quant = [&](float s, int64_t rows) {
    ir::Quant q;
    q.kind = per_tensor ? ir::QuantKind::kPerTensor : ir::QuantKind::kPerChannel;
    q.axis = 0;
    q.scales.assign(per_tensor ? 1 : static_cast<size_t>(rows), s);
    return q;
  };
  const ir::ValueId t = b.weight("table", ir::DType::kI8, ir::Shape::fixed({10, 32}), table.data(),
                                 table.size(), quant(s_table, 10));
  const ir::ValueId wv =
      b.weight("w", ir::DType::kI8, ir::Shape::fixed({6, 32}), w.data(), w.size(), quant(s_w, 6));
  b.output(b.matmul(b.embedding(t, ids, "embed"), wv, ir::kNoValue, "mm"), "y");
  auto g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

TEST_CASE("i8 weights: per-tensor scales behave as the same scale per row") {
  std::vector<int8_t> table(320), w(192);
  for (size_t i = 0; i < table.size(); ++i) table[i] = static_cast<int8_t>((i * 37) % 255 - 127);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>((i * 91) % 255 - 127);
  const float st = 0.01f, sw = 0.02f;
  const std::vector<int32_t> ids = {3, 0, 9, 4, 4};
  std::vector<std::vector<float>> outs;
  for (bool per_tensor : {true, false}) {
    const ir::Graph g = i8_graph(per_tensor, table, w, st, sw);
    TinyRun run = make_run(g, cpu_options("ref"));
    const int64_t sym[1] = {5};
    REQUIRE(run.session->reshape(sym).is_ok());
    std::vector<float> y(30);
    const void* in[1] = {ids.data()};
    void* out[1] = {y.data()};
    REQUIRE(run.session->execute(in, out).is_ok());
    outs.push_back(y);
  }
  CHECK(outs[0] == outs[1]);
  // And close to the float product (the kernel quantizes x to int8 per row: ~1% error).
  for (size_t r = 0; r < ids.size(); ++r)
    for (int j = 0; j < 6; ++j) {
      double acc = 0, mag = 0;
      for (int i = 0; i < 32; ++i) {
        const double p = st * table[ids[r] * 32 + i] * sw * w[j * 32 + i];
        acc += p;
        mag += std::abs(p);
      }
      CHECK(std::abs(outs[0][r * 6 + j] - acc) <= 0.02 * mag);
    }
}

}  // namespace
}  // namespace laya::test

namespace laya::test {
namespace {

// Runs a fixed-shape graph (no symbols) once: inputs in graph order, the first output returned.
std::vector<float> run_fixed(const ir::Graph& g, const runtime::SessionOptions& o,
                             const std::vector<const void*>& inputs) {
  TinyRun run = make_run(g, o);
  REQUIRE(run.session->reshape({}).is_ok());
  std::vector<float> y(static_cast<size_t>(run.session->extents(g.outputs[0]).count()));
  void* out[1] = {y.data()};
  Status st = run.session->execute(inputs, out);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  return y;
}

ir::Attrs attention_attrs(bool causal, int32_t window) {
  ir::Attrs a;
  a.n_heads = 2;
  a.n_kv_heads = 2;
  a.head_dim = 16;
  a.mask = causal ? ir::MaskKind::kCausal : ir::MaskKind::kNone;
  a.window = window;
  return a;
}

TEST_CASE("cpu backend: packed rows with positions and sequence ids equal separate rows") {
  const std::vector<int64_t> lens = {5, 64, 17, 1, 30, 40};
  const int64_t R = static_cast<int64_t>(lens.size()), L = 64, W = 32;
  int64_t N = 0;
  for (int64_t n : lens) N += n;
  std::vector<float> xs(static_cast<size_t>(R * L * W), 0.0f), xp;
  std::vector<int32_t> mask(static_cast<size_t>(R * L), 0), pos, seq;
  uint32_t h = 1;
  for (int64_t r = 0; r < R; ++r)
    for (int64_t i = 0; i < lens[static_cast<size_t>(r)]; ++i) {
      mask[static_cast<size_t>(r * L + i)] = 1;
      pos.push_back(static_cast<int32_t>(i));
      seq.push_back(static_cast<int32_t>(r));
      for (int64_t c = 0; c < W; ++c) {
        h = h * 1664525u + 1013904223u;
        const float x = static_cast<float>(h >> 8) / 16777216.0f - 0.5f;
        xs[static_cast<size_t>((r * L + i) * W + c)] = x;
        xp.push_back(x);
      }
    }
  for (bool causal : {false, true})
    for (int32_t window : {-1, 7})
      for (const char* kernels : {"ref", "auto"}) {
        CAPTURE(causal);
        CAPTURE(window);
        CAPTURE(std::string(kernels));
        ir::GraphBuilder bp;  // packed: [1, N]
        const ir::ValueId x = bp.input("x", ir::DType::kF32, ir::Shape::fixed({1, N, W}));
        const ir::ValueId p = bp.input("pos", ir::DType::kI32, ir::Shape::fixed({1, N}));
        const ir::ValueId s = bp.input("seq", ir::DType::kI32, ir::Shape::fixed({1, N}));
        bp.output(bp.attention(x, x, x, ir::kNoValue, {p, p, s, s}, attention_attrs(causal, window),
                               "attn"),
                  "y");
        auto gp = std::move(bp).finish();
        REQUIRE_MESSAGE(gp.is_ok(), gp.status().to_string());
        ir::GraphBuilder bs;  // separate rows: [R, L] with a key mask
        const ir::ValueId x2 = bs.input("x", ir::DType::kF32, ir::Shape::fixed({R, L, W}));
        const ir::ValueId m2 = bs.input("mask", ir::DType::kI32, ir::Shape::fixed({R, L}));
        bs.output(bs.attention(x2, x2, x2, m2, attention_attrs(causal, window), "attn"), "y");
        auto gs = std::move(bs).finish();
        REQUIRE_MESSAGE(gs.is_ok(), gs.status().to_string());
        const runtime::SessionOptions o = cpu_options(kernels, 2);
        const std::vector<float> yp = run_fixed(*gp, o, {xp.data(), pos.data(), seq.data()});
        const std::vector<float> ys = run_fixed(*gs, o, {xs.data(), mask.data()});
        double worst = 0;
        int64_t t = 0;
        for (int64_t r = 0; r < R; ++r)
          for (int64_t i = 0; i < lens[static_cast<size_t>(r)]; ++i, ++t)
            for (int64_t c = 0; c < W; ++c)
              worst = std::max(worst, std::abs(double{yp[static_cast<size_t>(t * W + c)]} -
                                               ys[static_cast<size_t>((r * L + i) * W + c)]));
        CHECK(worst <= 1e-6);
      }
}

TEST_CASE("cpu backend: keys of batch 1 are shared by every batch row") {
  // q [2, S], k / v [1, T] with cell positions and seq ids, against the same keys copied per row.
  const int64_t S = 3, T = 150, W = 32;
  std::vector<float> q(static_cast<size_t>(2 * S * W)), k(static_cast<size_t>(T * W));
  uint32_t h = 7;
  auto next = [&] {
    h = h * 1664525u + 1013904223u;
    return static_cast<float>(h >> 8) / 16777216.0f - 0.5f;
  };
  for (float& v : q) v = next();
  for (float& v : k) v = next();
  std::vector<int32_t> kpos(static_cast<size_t>(T)), kseq(static_cast<size_t>(T));
  for (int64_t j = 0; j < T; ++j) {
    kseq[static_cast<size_t>(j)] = j % 7 == 3 ? -1 : static_cast<int32_t>((j / 20) % 2);
    kpos[static_cast<size_t>(j)] = static_cast<int32_t>(j / 2);
  }
  const std::vector<int32_t> qpos = {80, 20, 50, 74, 10, 0}, qseq = {0, 1, 0, 1, 1, 0};
  std::vector<float> k2 = k;
  k2.insert(k2.end(), k.begin(), k.end());
  std::vector<int32_t> kpos2 = kpos, kseq2 = kseq;
  kpos2.insert(kpos2.end(), kpos.begin(), kpos.end());
  kseq2.insert(kseq2.end(), kseq.begin(), kseq.end());
  std::vector<std::vector<float>> outs;
  for (int64_t kb : {1, 2}) {
    ir::GraphBuilder b;
    const ir::ValueId qv = b.input("q", ir::DType::kF32, ir::Shape::fixed({2, S, W}));
    const ir::ValueId kv = b.input("k", ir::DType::kF32, ir::Shape::fixed({kb, T, W}));
    const ir::ValueId qp = b.input("q_pos", ir::DType::kI32, ir::Shape::fixed({2, S}));
    const ir::ValueId kp = b.input("k_pos", ir::DType::kI32, ir::Shape::fixed({kb, T}));
    const ir::ValueId qs = b.input("q_seq", ir::DType::kI32, ir::Shape::fixed({2, S}));
    const ir::ValueId ks = b.input("k_seq", ir::DType::kI32, ir::Shape::fixed({kb, T}));
    b.output(
        b.attention(qv, kv, kv, ir::kNoValue, {qp, kp, qs, ks}, attention_attrs(true, -1), "attn"),
        "y");
    auto g = std::move(b).finish();
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    outs.push_back(run_fixed(
        *g, cpu_options("auto", 2),
        {q.data(), kb == 1 ? k.data() : k2.data(), qpos.data(),
         kb == 1 ? kpos.data() : kpos2.data(), qseq.data(), kb == 1 ? kseq.data() : kseq2.data()}));
  }
  CHECK(outs[0] == outs[1]);
  bool nonzero = false;
  for (float v : outs[0]) nonzero = nonzero || v != 0.0f;
  CHECK(nonzero);
}

}  // namespace
}  // namespace laya::test

namespace laya::test {
namespace {

TEST_CASE("states: bind_states and symbol_max, their errors; execute needs the states bound") {
  tools::TinyModelConfig cfg;
  auto made = tools::make_tiny_decoder(cfg, 3);
  REQUIRE(made.is_ok());
  const ir::Graph& g = *made;
  REQUIRE(g.states.size() == 2 * static_cast<size_t>(cfg.n_layers));

  runtime::SessionOptions bad = cpu_options("ref");
  bad.symbol_max = {{"nope", 3}};
  CHECK(Session::prepare(g, bad).status().code() == StatusCode::kInvalidArgument);
  bad.symbol_max = {{"cells", cfg.max_cells + 1}};
  auto r = Session::prepare(g, bad);
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(contains(r.status().message(), "symbol_max"));

  runtime::SessionOptions o = cpu_options("ref");
  o.symbol_max = {{"cells", 32}, {"seq", 8}};
  auto s = Session::prepare(g, o);
  REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
  Session& session = **s;
  CHECK(session.symbols()[static_cast<size_t>(g.find_symbol("cells"))].max == 32);
  auto buf = runtime::session_buffers_alloc(session);
  REQUIRE(buf.is_ok());
  REQUIRE(
      session
          .bind_memory(buf->persistent.region(), buf->activations.region(), buf->scratch.region())
          .is_ok());
  TinyCache kv = make_cache(g, 16);
  TinyInputs in = tiny_inputs(1, 4, cfg.vocab, 0);
  TokenCells tc;
  tc.cells.resize(4);
  tc.seq_ids.assign(4, 0);
  REQUIRE(kv.cache->alloc(0, 4, tc.cells.data(), nullptr).is_ok());
  std::vector<float> out(static_cast<size_t>(4 * cfg.vocab));
  void* outputs[1] = {out.data()};
  const std::vector<const void*> inputs = tiny_input_ptrs(g, kv.cache.get(), in, tc);

  // Beyond the session's max; within it but before the states are bound.
  int64_t sym[3] = {1, 9, 16};
  CHECK(session.reshape(sym).code() == StatusCode::kOutOfRange);
  sym[1] = 4;
  REQUIRE(session.reshape(sym).is_ok());
  Status st = session.execute(inputs, outputs);
  CHECK(st.code() == StatusCode::kFailedPrecondition);
  CHECK(contains(st.message(), "bind_states"));

  // Wrong count, misaligned, too small for the current shapes (cells = 32 > 16).
  std::vector<runtime::MemoryRegion> regions(kv.cache->state_regions().begin(),
                                             kv.cache->state_regions().end());
  CHECK(session.bind_states(std::span(regions.data(), 1)).code() == StatusCode::kInvalidArgument);
  std::vector<runtime::MemoryRegion> shifted = regions;
  shifted[1].data = static_cast<uint8_t*>(shifted[1].data) + 4;
  st = session.bind_states(shifted);
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "aligned"));
  sym[2] = 32;
  REQUIRE(session.reshape(sym).is_ok());
  st = session.bind_states(regions);
  CHECK(st.code() == StatusCode::kResourceExhausted);
  CHECK(contains(st.message(), "l0.k_cache"));
  sym[2] = 16;
  REQUIRE(session.reshape(sym).is_ok());
  REQUIRE(session.bind_states(regions).is_ok());
  sym[2] = 32;  // now reshape checks the bound states
  st = session.reshape(sym);
  CHECK(st.code() == StatusCode::kResourceExhausted);
  sym[2] = 16;
  REQUIRE(session.reshape(sym).is_ok());
  st = session.execute(inputs, outputs);
  CHECK_MESSAGE(st.is_ok(), st.to_string());
  // kv_write wrote the rows of the 4 cells into the caller's state memory, nothing else.
  const float* k0 = static_cast<const float*>(regions[0].data);
  const int64_t w = regions[0].bytes / 16 / sizeof(float);
  bool written = false;
  for (int64_t i = 0; i < 4 * w; ++i) written = written || k0[i] != 0.0f;
  CHECK(written);
  for (int64_t i = 4 * w; i < 16 * w; ++i) REQUIRE(k0[i] == 0.0f);
}

}  // namespace
}  // namespace laya::test
