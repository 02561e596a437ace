// The simulated AX8850 backend through a session: bit-exact functional execution (the reference
// semantics against the CPU reference kernels; splits and the PCIe card's device memory change no
// bit), the w8a16 semantics, link bytes against the cost model, precompiled executables, and the
// scheduler's fusion, cost placement, head split and per-layer partition.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hal/ax8850/ax8850.h"
#include "hal/ax8850/cost_model.h"
#include "ir/builder.h"
#include "kernels/quant.h"
#include "runtime/session.h"
#include "tools/presets.h"

namespace laya::test {
namespace {

using runtime::Session;
using runtime::SessionOptions;

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Small variants of the real structures (same graph builders as the presets).
ir::Graph laya_small(uint64_t seed = 3) {
  tools::PresetOverrides o;
  o.vocab = 300;
  o.d_model = 128;
  o.d_ff = 96;
  o.layers = 3;
  o.heads = 2;
  o.max_seq = 48;
  auto g = tools::make_preset("laya-english", o, seed, tools::WeightFill::kRandom);
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

ir::Graph decoder_small(uint64_t seed = 4) {
  tools::PresetOverrides o;
  o.vocab = 256;
  o.d_model = 192;  // 3 heads of 64 over 1 KV head
  o.d_ff = 160;
  o.layers = 2;
  o.heads = 3;
  o.kv_heads = 1;
  o.max_seq = 40;
  auto g = tools::make_preset("qwen2.5-0.5b", o, seed, tools::WeightFill::kRandom);
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

// Runs `g` at the symbol values with generated inputs (ids in range, positions per row, other
// i32 inputs zero, floats uniform) and returns the first output.
struct Run {
  std::unique_ptr<Session> session;
  runtime::SessionBuffers buffers;
  std::vector<float> out;
};

Run run(const ir::Graph& g, const SessionOptions& o, std::vector<int64_t> sym, uint32_t seed = 5) {
  Run r;
  auto s = Session::prepare(g, o);
  REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
  r.session = std::move(s).value();
  auto b = runtime::session_buffers_alloc(*r.session);
  REQUIRE(b.is_ok());
  r.buffers = std::move(b).value();
  REQUIRE(r.session
              ->bind_memory(r.buffers.persistent.region(), r.buffers.activations.region(),
                            r.buffers.scratch.region())
              .is_ok());
  REQUIRE(r.session->reshape(sym).is_ok());
  std::mt19937 rng(seed);
  std::vector<std::vector<int32_t>> bufs;
  std::vector<const void*> in;
  for (ir::ValueId id : g.inputs) {
    const ir::Value& v = g.values[id];
    const int64_t n = r.session->extents(id).count();
    bufs.emplace_back(static_cast<size_t>(n));
    std::vector<int32_t>& buf = bufs.back();
    for (int64_t i = 0; i < n; ++i) {
      if (v.role == ir::InputRole::kTokenIds)
        buf[static_cast<size_t>(i)] = static_cast<int32_t>(rng() % 200);
      else if (v.role == ir::InputRole::kPositions)
        buf[static_cast<size_t>(i)] = static_cast<int32_t>(i);
      else
        buf[static_cast<size_t>(i)] = static_cast<int32_t>(i % 3);
    }
    in.push_back(buf.data());
  }
  r.out.assign(static_cast<size_t>(r.session->extents(g.outputs[0]).count()), 0.0f);
  void* out[] = {r.out.data()};
  Status st = r.session->execute(in, out);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  return r;
}

SessionOptions ax(const std::string& act,
                  std::vector<std::pair<std::string, std::string>> set = {}) {
  SessionOptions o;
  o.backends = {"ax8850"};
  hal::BackendOptions cpu;
  cpu.settings = {{"kernels", "ref"}};
  hal::BackendOptions npu;
  npu.settings = std::move(set);
  o.backend_options = {{"cpu", cpu}, {"ax8850", npu}};
  o.activations = {{"ax8850", act == "bf16" ? ir::DType::kBF16 : ir::DType::kF32}};
  o.schedule.cost_placement = false;  // tiny models: keep them on the NPU
  return o;
}

SessionOptions cpu_ref() {
  SessionOptions o;
  hal::BackendOptions cpu;
  cpu.settings = {{"kernels", "ref"}};
  o.backend_options = {{"cpu", cpu}};
  return o;
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

double nmse(const std::vector<float>& a, const std::vector<float>& ref) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (double{a[i]} - ref[i]) * (double{a[i]} - ref[i]);
    den += double{ref[i]} * ref[i];
  }
  return num / den;
}

TEST_CASE("ax8850: the reference semantics are the CPU reference kernels, bit for bit") {
  const ir::Graph enc = laya_small(), dec = decoder_small();
  const Run enc_cpu = run(enc, cpu_ref(), {37});
  const Run dec_cpu = run(dec, cpu_ref(), {29});
  // In the split modes, parameters under which every split pays (compute-bound, free barriers),
  // so attention and matmuls are split across the groups.
  const std::pair<std::string, std::string> slow{"mac_efficiency", "0.0001"},
      free{"group_sync_us", "0"};
  for (const auto& set : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {},
           {{"vnpu", "std"}, slow, free},
           {{"vnpu", "big_little"}, slow, free},
           {{"host", "pcie"}},
           {{"vnpu", "std"}, {"host", "pcie"}, slow, free}}) {
    std::string label;
    for (const auto& [k, v] : set) label += k + "=" + v + " ";
    CAPTURE(label);
    const Run a = run(enc, ax("f32", set), {37});
    for (const runtime::NodePlacement& p : a.session->placement()) CHECK(p.backend == "ax8850");
    CHECK(bitwise_equal(a.out, enc_cpu.out));
    const Run b = run(dec, ax("f32", set), {29});
    CHECK(bitwise_equal(b.out, dec_cpu.out));
    if (set.size() > 1) {  // std / big_little: attention and matmuls were split
      int split = 0;
      for (const runtime::NodePlacement& p : a.session->placement()) split += !p.parts.empty();
      CHECK(split > 10);
    }
  }
}

TEST_CASE("ax8850: w8a16 stays close to f32; chip, card and splits agree bit for bit") {
  const ir::Graph enc = laya_small();
  const Run ref = run(enc, cpu_ref(), {40});
  const Run chip = run(enc, ax("bf16"), {40});
  CHECK(nmse(chip.out, ref.out) < 1e-3);
  CHECK_FALSE(bitwise_equal(chip.out, ref.out));  // bf16 activations do change bits
  for (float v : chip.out) CHECK(kernels::bf16_to_f32(kernels::f32_to_bf16(v)) == v);
  CHECK(bitwise_equal(run(enc, ax("bf16", {{"host", "pcie"}}), {40}).out, chip.out));
  CHECK(bitwise_equal(run(enc, ax("bf16", {{"vnpu", "std"}}), {40}).out, chip.out));
}

TEST_CASE("ax8850 card: link bytes are the cost model's; chained calls stay on the device") {
  const ir::Graph dec = decoder_small();
  SessionOptions o = ax("bf16", {{"host", "pcie"}});
  o.schedule.calls = runtime::ScheduleOptions::Calls::kPerLayer;
  const Run r = run(dec, o, {17});
  const Session& s = *r.session;
  // Modelled link bytes of every ax8850 call at these shapes.
  auto params = hal::ax8850::backend_params(*s.backend("ax8850"));
  REQUIRE(params.is_ok());
  std::vector<ir::Extents> ext(dec.values.size());
  std::array<int64_t, ir::kMaxSymbols> sym{};  // shape_eval reads kMaxSymbols values
  sym[0] = 17;
  for (size_t v = 0; v < ext.size(); ++v)
    REQUIRE(ir::shape_eval(dec.values[v].shape, sym.data(), &ext[v]).is_ok());
  std::vector<uint8_t> on_device(dec.nodes.size());
  for (size_t n = 0; n < dec.nodes.size(); ++n) on_device[n] = s.placement()[n].backend == "ax8850";
  uint64_t h2d = 0, d2h = 0, calls = 0;
  for (const runtime::ExecutableInfo& e : s.executables()) {
    if (e.backend != "ax8850") continue;
    ++calls;
    std::vector<hal::ax8850::Step> steps;
    for (size_t i = 0; i < e.nodes.size(); ++i)
      steps.push_back({e.nodes[i], {e.parts[i].begin, e.parts[i].end}, e.parts[i].group});
    auto ct = hal::ax8850::model_call(*params, dec, steps, ext.data(), true, on_device);
    REQUIRE(ct.is_ok());
    h2d += ct->h2d_bytes;
    d2h += ct->d2h_bytes;
  }
  CHECK(calls == 3);  // 2 layers + the post call; the embedding runs on the host
  CHECK(dec.nodes[0].name == "embed");
  CHECK(s.placement()[0].backend == "cpu");
  CHECK(contains(s.placement()[0].fallback_reason, "ax-llm"));
  auto counters = hal::ax8850::device_counters(*s.backend("ax8850"));
  REQUIRE(counters.is_ok());
  CHECK(counters->calls == calls);
  CHECK(counters->h2d_bytes == h2d);
  CHECK(counters->d2h_bytes == d2h);
  // Into the first layer: the embedding (bf16) and the positions (i32); out of the post call:
  // the logits. Nothing else crosses the link.
  CHECK(h2d == 2 * 17 * 192 + 4 * 17 + 4 * 17);
  CHECK(d2h == 2 * 17 * 256);
}

TEST_CASE("ax8850: precompiled executables in the model are used, stale ones refused") {
  ir::Graph g = laya_small();
  SessionOptions o = ax("bf16");
  auto plain = Session::prepare(g, o);
  REQUIRE(plain.is_ok());
  REQUIRE((*plain)->executables().size() == 1);
  hal::Subgraph sg;
  sg.graph = &g;
  sg.nodes = (*plain)->executables()[0].nodes;
  sg.parts = (*plain)->executables()[0].parts;
  auto blob = std::make_shared<std::vector<uint8_t>>(hal::ax8850::compile_blob(sg));
  g.keepalive.push_back(blob);
  g.meta.executables.push_back(
      {"ax8850", hal::ax8850::subgraph_key(sg), {blob->data(), blob->size()}});
  {
    Run r = run(g, o, {20});
    CHECK(hal::ax8850::device_counters(*r.session->backend("ax8850"))->precompiled == 1);
  }
  (*blob)[blob->size() - 1] ^= 1;  // stale
  Status st = Session::prepare(g, o).status();
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "does not match"));
}

TEST_CASE("ax8850: settings and activation modes are checked") {
  const ir::Graph g = laya_small();
  SessionOptions o = ax("bf16", {{"kernels", "AVX2"}});
  Status st = Session::prepare(g, o).status();
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "'kernels'"));
  o = ax("bf16");
  o.activations = {{"ax8850", ir::DType::kI8}};
  st = Session::prepare(g, o).status();
  CHECK(st.code() == StatusCode::kInvalidArgument);
  CHECK(contains(st.message(), "i8"));
  o.activations = {{"cpu", ir::DType::kBF16}};
  CHECK(Session::prepare(g, o).status().code() == StatusCode::kInvalidArgument);
}

// 64 x 64 weights: s8 per channel (the NPU takes them) and f32 (it refuses them: a fallback).
ir::ValueId weight_s8(ir::GraphBuilder& b, const std::string& name = "w8", int salt = 0) {
  std::vector<int8_t> w8(64 * 64);
  for (size_t i = 0; i < w8.size(); ++i)
    w8[i] = static_cast<int8_t>(static_cast<int>((i * 37 + static_cast<size_t>(salt)) % 255) - 127);
  ir::Quant q;
  q.kind = ir::QuantKind::kPerChannel;
  q.scales.assign(64, 0.01f);
  return b.weight(name, ir::DType::kI8, ir::Shape::fixed({64, 64}), w8.data(), w8.size(), q);
}
ir::ValueId weight_f32(ir::GraphBuilder& b, const std::string& name = "wf", int salt = 0) {
  std::vector<float> wf(64 * 64);
  for (size_t i = 0; i < wf.size(); ++i)
    wf[i] = static_cast<float>((i + static_cast<size_t>(salt)) % 13) * 0.01f - 0.06f;
  return b.weight(name, ir::DType::kF32, ir::Shape::fixed({64, 64}), wf.data(), wf.size() * 4);
}

// x -> [s8 matmul a] ; x -> [f32 matmul f] (the NPU refuses f32 weights) ; y = gelu(a) + f.
// With `chained`: a = npu_mm(x), f = cpu_mm(a) (the fallback reads a), y = f + gelu(x).
ir::Graph branch_graph(bool chained = false) {
  ir::GraphBuilder b;
  const int seq = b.symbol("seq", 1, 16);
  const ir::ValueId x =
      b.input("x", ir::DType::kF32,
              ir::Shape::of({ir::Dim::fixed(1), ir::Dim::sym(seq), ir::Dim::fixed(64)}));
  const ir::ValueId a = b.matmul(x, weight_s8(b), ir::kNoValue, "npu_mm");
  const ir::ValueId f = b.matmul(chained ? a : x, weight_f32(b), ir::kNoValue, "cpu_mm");
  const ir::ValueId act = b.gelu(chained ? x : a, ir::ActKind::kGeluErf, "act");
  b.output(b.add(chained ? f : act, chained ? act : f, "sum"), "y");
  auto g = std::move(b).finish();
  REQUIRE(g.is_ok());
  return std::move(g).value();
}

TEST_CASE("scheduler: independent work around a fallback joins one NPU call") {
  const ir::Graph g = branch_graph();
  // Node order npu_mm, cpu_mm, act, sum: by contiguity two ax8850 calls; by dependencies one.
  const Run r = run(g, ax("f32"), {9});
  const Session& s = *r.session;
  int npu_calls = 0;
  for (const runtime::ExecutableInfo& e : s.executables()) npu_calls += e.backend == "ax8850";
  CHECK(npu_calls == 1);
  CHECK(s.executables().size() == 2);
  CHECK(s.executables()[0].backend == "cpu");  // the fallback runs first, then one call
  const runtime::NodePlacement& p = s.placement()[1];
  CHECK(p.backend == "cpu");
  CHECK(contains(p.fallback_reason, "ax8850: matmul 'cpu_mm': f32 weights"));
  CHECK(bitwise_equal(r.out, run(g, cpu_ref(), {9}).out));
}

TEST_CASE("scheduler: work joined ahead of a fallback does not take the bytes it still reads") {
  // Node order: a = npu_mm(x), f = cpu_mm(a) (a fallback reading a), u = gelu(x) (independent),
  // y = f + u. In graph order a is dead once f ran, so u could take its bytes; the scheduler runs
  // u in the NPU call with a, ahead of f, so the activation plan must follow the run order.
  const ir::Graph g = branch_graph(true);
  const Run r = run(g, ax("f32"), {16});
  const std::vector<runtime::ExecutableInfo>& exes = r.session->executables();
  REQUIRE(exes.size() == 3);
  CHECK(exes[0].backend == "ax8850");
  CHECK(exes[0].nodes == std::vector<ir::NodeId>{0, 2});  // u joined a's call
  CHECK(exes[1].backend == "cpu");
  CHECK(bitwise_equal(r.out, run(g, cpu_ref(), {16}).out));
}

TEST_CASE("scheduler: random graphs with fallbacks answer as the cpu, bit for bit") {
  // Random DAGs of NPU work (s8 matmuls, gelu, relu, layernorm, add, mul) and fallbacks (f32
  // matmuls), every value [1, seq, 64]: however the scheduler groups and orders them into calls,
  // the reference semantics must give the CPU reference kernels' output, on the chip, on a card
  // and with splits.
  const std::pair<std::string, std::string> slow{"mac_efficiency", "0.0001"},
      free{"group_sync_us", "0"};
  const std::vector<std::vector<std::pair<std::string, std::string>>> modes = {
      {}, {{"host", "pcie"}}, {{"vnpu", "std"}, slow, free}};
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    std::mt19937 rng(seed);
    ir::GraphBuilder b;
    const int seq = b.symbol("seq", 1, 16);
    std::vector<ir::ValueId> vals = {
        b.input("x", ir::DType::kF32,
                ir::Shape::of({ir::Dim::fixed(1), ir::Dim::sym(seq), ir::Dim::fixed(64)}))};
    std::vector<float> gamma(64);
    for (size_t i = 0; i < gamma.size(); ++i) gamma[i] = 0.5f + 0.01f * static_cast<float>(i);
    const ir::ValueId g_w =
        b.weight("gamma", ir::DType::kF32, ir::Shape::fixed({64}), gamma.data(), gamma.size() * 4);
    // Inputs favour recent values, so chains and branches both occur.
    auto pick = [&]() {
      const size_t n = vals.size();
      return vals[n - 1 - std::min<size_t>(n - 1, rng() % 4 == 0 ? rng() % n : rng() % 2)];
    };
    const int nodes = 6 + static_cast<int>(rng() % 10);
    for (int i = 0; i < nodes; ++i) {
      const std::string id = std::to_string(i);
      const ir::ValueId x = pick();
      switch (rng() % 7) {
        case 0:
          vals.push_back(b.matmul(x, weight_s8(b, "w8_" + id, i), ir::kNoValue, "npu_mm" + id));
          break;
        case 1:
        case 2:
          vals.push_back(b.matmul(x, weight_f32(b, "wf_" + id, i), ir::kNoValue, "cpu_mm" + id));
          break;
        case 3:
          vals.push_back(b.gelu(x, ir::ActKind::kGeluErf, "gelu" + id));
          break;
        case 4:
          vals.push_back(b.layernorm(x, g_w, ir::kNoValue, 1e-5f, "norm" + id));
          break;
        case 5:
          vals.push_back(b.add(x, pick(), "add" + id));
          break;
        default:
          vals.push_back(b.mul(b.relu(x, "relu" + id), pick(), "mul" + id));
          break;
      }
    }
    // The output sums the last value and two earlier ones (earlier values stay live longer).
    ir::ValueId y = vals.back();
    for (int j = 0; j < 2; ++j) y = b.add(y, vals[rng() % vals.size()], "out" + std::to_string(j));
    b.output(y, "y");
    Result<ir::Graph> g = std::move(b).finish();
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    const int64_t len = 1 + static_cast<int64_t>(rng() % 16);
    const std::vector<float> want = run(*g, cpu_ref(), {len}).out;
    for (const auto& set : modes) {
      CAPTURE(seed);
      CAPTURE(set.size());
      const Run r = run(*g, ax("f32", set), {len});
      CHECK(bitwise_equal(r.out, want));
    }
  }
}

TEST_CASE("scheduler: a call that costs more than it saves moves to the cpu") {
  const ir::Graph g = branch_graph();
  SessionOptions o = ax("bf16");
  o.schedule.cost_placement = true;
  auto s = Session::prepare(g, o);
  REQUIRE(s.is_ok());
  for (const runtime::NodePlacement& p : (*s)->placement()) CHECK(p.backend == "cpu");
  CHECK(contains((*s)->placement()[0].fallback_reason, "cost: its own ax8850 call takes"));
  CHECK((*s)->executables().size() == 1);
}

TEST_CASE("scheduler: STD mode splits heads 6 / 5 / 5, GQA groups whole, when it pays") {
  // 16 heads of 64, bidirectional, 256 tokens: compute-bound enough to split.
  ir::GraphBuilder b;
  const int seq = b.symbol("seq", 1, 256);
  auto in = [&](const char* name, int64_t w) {
    return b.input(name, ir::DType::kF32,
                   ir::Shape::of({ir::Dim::fixed(1), ir::Dim::sym(seq), ir::Dim::fixed(w)}));
  };
  ir::Attrs a;
  a.n_heads = 16;
  a.n_kv_heads = 16;
  a.head_dim = 64;
  const ir::ValueId q = in("q", 1024), k = in("k", 1024), v = in("v", 1024);
  b.output(b.attention(q, k, v, ir::kNoValue, a, "mha"), "o");
  ir::Attrs gq = a;
  gq.n_kv_heads = 2;  // 8 heads per KV head: 2 units for 3 groups
  const ir::ValueId kk = in("kk", 128), vv = in("vv", 128);
  b.output(b.attention(q, kk, vv, ir::kNoValue, gq, "gqa"), "o2");
  auto g = std::move(b).finish();
  REQUIRE(g.is_ok());
  auto s = Session::prepare(*g, ax("bf16", {{"vnpu", "std"}}));
  REQUIRE(s.is_ok());
  const std::vector<hal::NodePart>& mha = (*s)->placement()[0].parts;
  REQUIRE(mha.size() == 3);
  CHECK(mha[0].begin == 0);
  CHECK(mha[0].end == 6);
  CHECK(mha[1].end == 11);
  CHECK(mha[2].end == 16);
  CHECK(mha[2].group == 2);
  const std::vector<hal::NodePart>& gqa = (*s)->placement()[1].parts;
  REQUIRE(gqa.size() == 2);
  CHECK(gqa[0].end == 8);
  CHECK(gqa[1].end == 16);
  // Without the split option, and in DISABLE mode, nothing is split.
  SessionOptions off = ax("bf16", {{"vnpu", "std"}});
  off.schedule.split = false;
  for (const SessionOptions& o : {off, ax("bf16")}) {
    auto t = Session::prepare(*g, o);
    REQUIRE(t.is_ok());
    for (const runtime::NodePlacement& p : (*t)->placement()) CHECK(p.parts.empty());
  }
  // With a slow barrier the split does not pay.
  auto d = Session::prepare(*g, ax("bf16", {{"vnpu", "std"}, {"group_sync_us", "500"}}));
  REQUIRE(d.is_ok());
  CHECK((*d)->placement()[0].parts.empty());
}

TEST_CASE("scheduler: layer names and proportional splits") {
  CHECK(runtime::layer_of("l3.qkv") == 3);
  CHECK(runtime::layer_of("l12.attn_norm") == 12);
  CHECK(runtime::layer_of("encoder.layers.7.attn") == 7);
  CHECK(runtime::layer_of("blk.0.ffn_up") == 0);
  CHECK(runtime::layer_of("final_norm") == -1);
  CHECK(runtime::layer_of("lm_head") == -1);
  CHECK(runtime::layer_of("embed") == -1);
  CHECK(runtime::layer_of("l.x") == -1);
  const uint32_t eq[3] = {1, 1, 1}, bl[2] = {2, 1}, lb[2] = {1, 2};
  CHECK(runtime::split_units(16, eq) == std::vector<int64_t>{6, 5, 5});
  CHECK(runtime::split_units(12, eq) == std::vector<int64_t>{4, 4, 4});
  CHECK(runtime::split_units(2, eq) == std::vector<int64_t>{1, 1, 0});
  CHECK(runtime::split_units(16, bl) == std::vector<int64_t>{11, 5});
  CHECK(runtime::split_units(16, lb) == std::vector<int64_t>{5, 11});
}

TEST_CASE("session model: the modelled timeline needs no memory and matches the backend") {
  const ir::Graph g = laya_small();
  auto s = Session::prepare(g, ax("bf16"));
  REQUIRE(s.is_ok());
  const int64_t sym[1] = {32};
  auto m = (*s)->model(sym);
  REQUIRE(m.is_ok());
  REQUIRE(m->size() == 1);
  CHECK((*m)[0].estimate.nodes.size() == (*s)->executables()[0].nodes.size());
  CHECK((*m)[0].estimate.total_ms > (*m)[0].estimate.overhead_ms);
  const int64_t bad[1] = {4096};
  CHECK((*s)->model(bad).status().code() == StatusCode::kOutOfRange);
  // A cpu-only session models the cpu with its roofline.
  auto c = Session::prepare(g, cpu_ref());
  REQUIRE(c.is_ok());
  auto cm = (*c)->model(sym);
  REQUIRE(cm.is_ok());
  CHECK((*cm)[0].estimate.total_ms > 0);
}

}  // namespace
}  // namespace laya::test
