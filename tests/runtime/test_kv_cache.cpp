// The KV cache (runtime/kv_cache.h): cell bookkeeping, and the tiny decoder run through it, where
// decoding token by token (and prefilling in chunks, interleaving sequences, sharing a prefix,
// decoding two sequences in one batch) gives the logits of one full causal forward pass; the same
// with the layers and the cache on the AX8850 simulator (chip and card, the card's link bytes,
// the runner's prefix cache on the card); kv_write's cpu rules and cost.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "hal/ax8850/ax8850.h"
#include "hal/ax8850/cost_model.h"
#include "hal/hal.h"
#include "ir/builder.h"
#include "kernels/kernels.h"
#include "runtime/decoder.h"
#include "runtime/prefix_cache.h"
#include "tests/ir/ir_test_util.h"
#include "tests/runtime/session_util.h"

namespace laya::test {
namespace {

using ir::Dim;
using ir::DType;
using ir::Shape;
using ir::ValueId;

// A graph of two states [1, C, W] (W = 8 and 24) written by kv_write: only what the cache reads.
ir::Graph two_state_graph(int64_t max_cells) {
  ir::GraphBuilder b;
  const int cells = b.symbol("cells", 1, max_cells);
  const int seq = b.symbol("seq", 1, 16);
  const Shape tok = Shape::of({Dim::fixed(1), Dim::sym(seq)});
  const ValueId ids = b.input("cells", DType::kI32, tok, ir::InputRole::kCacheCells);
  for (int64_t w : {8, 24}) {
    const std::string n = std::to_string(w);
    const ValueId rows =
        b.input("rows" + n, DType::kF32, Shape::of({Dim::fixed(1), Dim::sym(seq), Dim::fixed(w)}));
    const ValueId st = b.state("state" + n, DType::kF32,
                               Shape::of({Dim::fixed(1), Dim::sym(cells), Dim::fixed(w)}));
    const ValueId out = b.kv_write(st, rows, ids, "write" + n);
    b.output(b.relu(b.input("x" + n, DType::kF32, Shape::fixed({1})), "r" + n));
    (void)out;
  }
  Result<ir::Graph> g = std::move(b).finish();
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

TEST_CASE("kv cache: layout, region size, budget, create errors") {
  const ir::Graph g = two_state_graph(100);
  auto layout = runtime::kv_cache_layout(g);
  REQUIRE_MESSAGE(layout.is_ok(), layout.status().to_string());
  CHECK(layout->states.size() == 2);
  CHECK(layout->bytes_per_cell == (8 + 24) * 4);
  CHECK(layout->max_cells == 100);
  CHECK(layout->cells_symbol == g.find_symbol("cells"));
  // 10 cells: 320 and 960 bytes of rows, two i32 arrays of 40 bytes, each part 64-aligned.
  CHECK(runtime::KvCache::region_bytes(*layout, 10) == 320 + 960 + 64 + 64);

  // The budget: the most cells that fit (capped at the model's max), or an error naming it.
  auto fit = runtime::KvCache::cells_for_budget(*layout, 10000);
  REQUIRE(fit.is_ok());
  CHECK(runtime::KvCache::region_bytes(*layout, *fit) <= 10000);
  CHECK(runtime::KvCache::region_bytes(*layout, *fit + 1) > 10000 - 256);
  CHECK(*runtime::KvCache::cells_for_budget(*layout, uint64_t{1} << 30) == 100);
  CHECK_STATUS(runtime::KvCache::cells_for_budget(*layout, 100).status(),
               StatusCode::kResourceExhausted, "budget of 100 bytes");

  auto mem = runtime::RegionBuffer::alloc(runtime::KvCache::region_bytes(*layout, 10), 64, false);
  REQUIRE(mem.is_ok());
  runtime::MemoryRegion r = mem->region();
  CHECK_STATUS(runtime::KvCache::create(*layout, 11, 2, r).status(), StatusCode::kResourceExhausted,
               "needed for 11 cells");
  CHECK_STATUS(runtime::KvCache::create(*layout, 0, 2, r).status(), StatusCode::kInvalidArgument,
               "0 cells");
  CHECK_STATUS(runtime::KvCache::create(*layout, 101, 2, r).status(), StatusCode::kInvalidArgument,
               "[1, 100]");
  CHECK_STATUS(runtime::KvCache::create(*layout, 10, 0, r).status(), StatusCode::kInvalidArgument,
               "0 sequences");
  runtime::MemoryRegion shifted{static_cast<uint8_t*>(r.data) + 4, r.bytes - 4};
  CHECK_STATUS(runtime::KvCache::create(*layout, 5, 2, shifted).status(),
               StatusCode::kInvalidArgument, "not 64-byte aligned");

  // A graph without states, or states that disagree on C.
  const tools::TinyModelConfig cfg;
  auto enc = tools::make_tiny_encoder(cfg, 1);
  REQUIRE(enc.is_ok());
  CHECK_STATUS(runtime::kv_cache_layout(*enc).status(), StatusCode::kInvalidArgument,
               "no state values");
  ir::Graph bad = g;
  bad.values[bad.states[1]].shape.dims[1] = Dim::fixed(7);
  CHECK_STATUS(runtime::kv_cache_layout(bad).status(), StatusCode::kInvalidArgument, "'state24'",
               "same C");
}

TEST_CASE("kv cache: alloc places sequences contiguously; remove, clear, full, copy_seq") {
  const ir::Graph g = two_state_graph(100);
  auto layout = runtime::kv_cache_layout(g);
  REQUIRE(layout.is_ok());
  const int64_t C = 12;
  auto mem = runtime::RegionBuffer::alloc(runtime::KvCache::region_bytes(*layout, C), 64, false);
  REQUIRE(mem.is_ok());
  std::fill_n(static_cast<uint8_t*>(mem->data()), mem->bytes(), uint8_t{0xff});
  auto created = runtime::KvCache::create(*layout, C, 3, mem->region());
  REQUIRE_MESSAGE(created.is_ok(), created.status().to_string());
  runtime::KvCache& kv = **created;
  CHECK(kv.capacity() == C);
  CHECK(kv.n_free() == C);
  CHECK(kv.max_seqs() == 3);
  // Zero-filled rows, every cell empty.
  const auto regions = kv.state_regions();
  REQUIRE(regions.size() == 2);
  CHECK(regions[0].bytes == C * 8 * 4);
  CHECK(regions[1].bytes == C * 24 * 4);
  for (const runtime::MemoryRegion& s : regions)
    for (uint64_t i = 0; i < s.bytes; ++i) REQUIRE(static_cast<uint8_t*>(s.data)[i] == 0);
  for (int64_t c = 0; c < C; ++c) CHECK(kv.cell_seq_ids()[c] == -1);

  int32_t cells[12], pos[12];
  REQUIRE(kv.alloc(0, 3, cells, pos).is_ok());  // seq 0: cells 0..2
  CHECK(std::vector<int32_t>(cells, cells + 3) == std::vector<int32_t>{0, 1, 2});
  CHECK(std::vector<int32_t>(pos, pos + 3) == std::vector<int32_t>{0, 1, 2});
  REQUIRE(kv.alloc(1, 2, cells, pos).is_ok());  // seq 1: cells 3, 4
  CHECK(cells[0] == 3);
  CHECK(pos[0] == 0);
  REQUIRE(kv.alloc(0, 2, cells, pos).is_ok());  // seq 0 continues after its cell 2? taken: 5, 6
  CHECK(std::vector<int32_t>(cells, cells + 2) == std::vector<int32_t>{5, 6});
  CHECK(std::vector<int32_t>(pos, pos + 2) == std::vector<int32_t>{3, 4});
  REQUIRE(kv.alloc(0, 1, cells, pos).is_ok());  // right after its last cell (6)
  CHECK(cells[0] == 7);
  CHECK(pos[0] == 5);
  CHECK(kv.seq_length(0) == 6);
  CHECK(kv.seq_length(1) == 2);
  CHECK(kv.n_free() == C - 8);
  for (int64_t c : {0, 1, 2, 5, 6, 7}) CHECK(kv.cell_seq_ids()[c] == 0);
  CHECK(kv.cell_positions()[7] == 5);

  // Full: nothing changes.
  CHECK_STATUS(kv.alloc(2, 5, cells, pos), StatusCode::kResourceExhausted, "KV cache full");
  CHECK(kv.n_free() == C - 8);
  CHECK(kv.seq_length(2) == 0);
  CHECK_STATUS(kv.alloc(3, 1, cells, pos), StatusCode::kInvalidArgument, "sequence id 3");
  CHECK_STATUS(kv.alloc(0, 0, cells, pos), StatusCode::kInvalidArgument, "0 tokens");

  // remove(0, 2): positions 2..5 of seq 0 go (cells 2, 5, 6, 7); fragmented free space is used
  // in order when no run is long enough.
  REQUIRE(kv.remove(0, 2).is_ok());
  CHECK(kv.seq_length(0) == 2);
  CHECK(kv.n_free() == C - 4);
  for (int64_t c : {2, 5, 6, 7}) CHECK(kv.cell_seq_ids()[c] == -1);
  REQUIRE(kv.alloc(0, 1, cells, pos).is_ok());  // right after its last cell (1): cell 2
  CHECK(cells[0] == 2);
  CHECK(pos[0] == 2);
  REQUIRE(kv.alloc(2, 7, cells, pos).is_ok());  // 5..11 is a run of 7
  CHECK(cells[0] == 5);
  CHECK(cells[6] == 11);
  CHECK(kv.n_free() == 0);
  REQUIRE(kv.remove(1).is_ok());                // cells 3, 4
  REQUIRE(kv.remove(2, 6).is_ok());             // cell 11
  REQUIRE(kv.remove(0, 1).is_ok());             // cells 1, 2: free are 1, 2, 3, 4, 11
  REQUIRE(kv.alloc(1, 5, cells, pos).is_ok());  // no run of 5: scattered, in order
  CHECK(std::vector<int32_t>(cells, cells + 5) == std::vector<int32_t>{1, 2, 3, 4, 11});
  CHECK_STATUS(kv.remove(0, -1), StatusCode::kInvalidArgument, "remove");

  // copy_seq: rows of every state follow the positions.
  kv.clear();
  CHECK(kv.n_free() == C);
  REQUIRE(kv.alloc(0, 4, cells, pos).is_ok());
  for (size_t s = 0; s < regions.size(); ++s) {
    float* rows = static_cast<float*>(regions[s].data);
    const int64_t w = s == 0 ? 8 : 24;
    for (int32_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < w; ++j) rows[cells[i] * w + j] = static_cast<float>(100 * i + j);
  }
  CHECK_STATUS(kv.copy_seq(0, 1, 5), StatusCode::kInvalidArgument, "5 tokens");
  REQUIRE(kv.copy_seq(0, 1, 3).is_ok());
  CHECK(kv.seq_length(1) == 3);
  CHECK_STATUS(kv.copy_seq(0, 1), StatusCode::kInvalidArgument, "must be empty");
  for (int64_t c = 0; c < C; ++c) {
    if (kv.cell_seq_ids()[c] != 1) continue;
    const int32_t p = kv.cell_positions()[c];
    for (size_t s = 0; s < regions.size(); ++s) {
      const float* rows = static_cast<const float*>(regions[s].data);
      const int64_t w = s == 0 ? 8 : 24;
      for (int64_t j = 0; j < w; ++j) REQUIRE(rows[c * w + j] == static_cast<float>(100 * p + j));
    }
  }
}

// ---- the tiny decoder through the cache --------------------------------------------------------

struct Logits {
  std::vector<float> v;  // [tokens, vocab]
  int64_t vocab = 0;
  const float* row(int64_t t) const { return v.data() + t * vocab; }
};

// max |a - b| over a row, relative to the row's largest |b| (at least 1).
double row_error(const float* a, const float* b, int64_t n) {
  double err = 0, scale = 1;
  for (int64_t i = 0; i < n; ++i) {
    err = std::max(err, std::fabs(double{a[i]} - double{b[i]}));
    scale = std::max(scale, std::fabs(double{b[i]}));
  }
  return err / scale;
}

struct Decoder {
  tools::TinyModelConfig cfg;
  ir::Graph g;
  TinyRun run;
  std::vector<float> out;

  // `npu_host` (non-empty: "chip" or "pcie") puts the layers on the ax8850 in its f32 reference
  // mode, whole nodes, with the cpu as the fallback.
  Decoder(const std::string& kernels, int threads, int64_t cells, DType matmul_dtype = DType::kF32,
          const std::string& npu_host = "", DType kv_dtype = DType::kF32) {
    cfg.matmul_dtype = matmul_dtype;
    cfg.kv_dtype = kv_dtype;
    cfg.max_seq = 32;
    cfg.max_cells = 256;
    auto made = tools::make_tiny_decoder(cfg, 11);
    REQUIRE(made.is_ok());
    g = std::move(made).value();
    runtime::SessionOptions o = cpu_options(kernels, threads);
    if (!npu_host.empty()) {
      o.backends = {"ax8850"};
      hal::BackendOptions npu;
      npu.settings = {{"host", npu_host}};
      o.backend_options.emplace_back("ax8850", npu);
      o.activations = {{"ax8850", DType::kF32}};
      o.schedule.cost_placement = false;
      o.schedule.split = false;
    }
    // One session, two planned shapes for the token axis: decode (1) and prefill chunks (<= 32).
    o.bucket_bounds = {{"seq", {1, 32}}, {"cells", {cells}}};
    o.symbol_max = {{"cells", cells}};
    run = make_run(g, o, cells);
  }
  runtime::KvCache& cache() { return *run.kv.cache; }

  // Tokens `ids` of sequence `seq` appended in one step (a prefill chunk or, n = 1, a decode step);
  // returns their logits [n, vocab].
  Logits step(int32_t seq, const std::vector<int32_t>& ids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    TinyInputs in;
    in.batch = 1;
    in.seq = n;
    in.ids = ids;
    in.positions.resize(ids.size());
    TokenCells tc;
    tc.cells.resize(ids.size());
    tc.seq_ids.assign(ids.size(), seq);
    Status st = cache().alloc(seq, n, tc.cells.data(), in.positions.data());
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
    st = run_step(*run.session, &cache(), in, tc, &out);
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
    return Logits{out, cfg.vocab};
  }
};

std::vector<int32_t> random_tokens(int64_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = d(rng);
  return t;
}

std::vector<int32_t> slice(const std::vector<int32_t>& v, size_t b, size_t e) {
  return std::vector<int32_t>(v.begin() + static_cast<std::ptrdiff_t>(b),
                              v.begin() + static_cast<std::ptrdiff_t>(e));
}

// Tolerance, relative to the largest logit. The reference kernels sum in one order whatever the
// row and cell counts: exact. Highway matmuls tile rows, so a one-row GEMV and a 24-row GEMM round
// differently: about 1e-6 with f32 weights. With block-quantized weights the Highway kernels
// quantize activations to int8 per block, and such a last-bit difference can flip one rounding;
// the flipped K / V row then stays in the cache for every later token (measured up to 1.3e-2 on
// SSE4, q4_1). A wrong cell, position or sequence id changes logits by O(1).
double tolerance(const std::string& kernels, DType dt) {
  if (kernels == "ref") return 0.0;
  return dt == DType::kF32 ? 1e-5 : 3e-2;
}

// "ref" and every Highway target this CPU runs.
std::vector<std::string> kernel_names() {
  std::vector<std::string> names = {"ref"};
  for (int64_t t : kernels::kernel_hwy_targets()) names.push_back(kernels::kernel_target_name(t));
  return names;
}

TEST_CASE("decoding token by token through the KV cache gives the full causal forward's logits") {
  for (const std::string& kn : kernel_names())
    for (DType dt : {DType::kF32, DType::kQ4_1})
      for (int threads : {1, 2}) {
        CAPTURE(kn);
        const std::string dtype = ir::dtype_name(dt);
        CAPTURE(dtype);
        CAPTURE(threads);
        Decoder d(kn, threads, 64, dt);
        const double tol = tolerance(kn, dt);
        const int64_t N = 24;
        const std::vector<int32_t> toks = random_tokens(N, d.cfg.vocab, 3);
        d.cache().clear();
        const Logits full = d.step(0, toks);  // one full causal forward
        REQUIRE(d.run.session->current_bucket() == 1);

        {  // one token at a time
          d.cache().clear();
          for (int64_t t = 0; t < N; ++t) {
            CAPTURE(t);
            const Logits one = d.step(0, {toks[static_cast<size_t>(t)]});
            CHECK(d.run.session->current_bucket() == 0);  // the decode plan
            CHECK(row_error(one.row(0), full.row(t), d.cfg.vocab) <= tol);
          }
          CHECK(d.cache().seq_length(0) == N);
        }
        {  // prefill in chunks of 5, then decode
          d.cache().clear();
          int64_t t = 0;
          for (; t + 5 <= 15; t += 5) {
            const Logits chunk =
                d.step(0, slice(toks, static_cast<size_t>(t), static_cast<size_t>(t + 5)));
            for (int64_t i = 0; i < 5; ++i)
              CHECK(row_error(chunk.row(i), full.row(t + i), d.cfg.vocab) <= tol);
          }
          for (; t < N; ++t)
            CHECK(row_error(d.step(0, {toks[static_cast<size_t>(t)]}).row(0), full.row(t),
                            d.cfg.vocab) <= tol);
        }
        {  // two sequences interleaved in one cache see only their own cells
          const std::vector<int32_t> other = random_tokens(N, d.cfg.vocab, 4);
          d.cache().clear();
          const Logits full_other = d.step(1, other);
          d.cache().clear();
          for (int64_t t = 0; t < N; ++t) {
            CAPTURE(t);
            const Logits a = d.step(0, {toks[static_cast<size_t>(t)]});
            CHECK(row_error(a.row(0), full.row(t), d.cfg.vocab) <= tol);
            const Logits b = d.step(1, {other[static_cast<size_t>(t)]});
            CHECK(row_error(b.row(0), full_other.row(t), d.cfg.vocab) <= tol);
          }
          // Dropping sequence 0's tail and decoding it again reproduces the same logits.
          REQUIRE(d.cache().remove(0, 10).is_ok());
          for (int64_t t = 10; t < 14; ++t)
            CHECK(row_error(d.step(0, {toks[static_cast<size_t>(t)]}).row(0), full.row(t),
                            d.cfg.vocab) <= tol);
        }
        {  // a shared prefix copied to a second sequence continues like a full forward
          std::vector<int32_t> branch = slice(toks, 0, 12);
          const std::vector<int32_t> tail = random_tokens(8, d.cfg.vocab, 5);
          branch.insert(branch.end(), tail.begin(), tail.end());
          d.cache().clear();
          const Logits full_branch = d.step(2, branch);
          d.cache().clear();
          (void)d.step(0, slice(toks, 0, 16));
          REQUIRE(d.cache().copy_seq(0, 1, 12).is_ok());
          for (int64_t t = 12; t < 20; ++t)
            CHECK(row_error(d.step(1, {branch[static_cast<size_t>(t)]}).row(0), full_branch.row(t),
                            d.cfg.vocab) <= tol);
        }
        {  // two sequences decoded in one batch of 2 over the shared cache
          const std::vector<int32_t> other = random_tokens(N, d.cfg.vocab, 6);
          d.cache().clear();
          const Logits full_other = d.step(1, other);
          d.cache().clear();
          (void)d.step(0, slice(toks, 0, 8));
          (void)d.step(1, slice(other, 0, 8));
          for (int64_t t = 8; t < 16; ++t) {
            TinyInputs in;
            in.batch = 2;
            in.seq = 1;
            in.ids = {toks[static_cast<size_t>(t)], other[static_cast<size_t>(t)]};
            in.positions.resize(2);
            TokenCells tc;
            tc.cells.resize(2);
            tc.seq_ids = {0, 1};
            for (int32_t s = 0; s < 2; ++s)
              REQUIRE(d.cache()
                          .alloc(s, 1, &tc.cells[static_cast<size_t>(s)],
                                 &in.positions[static_cast<size_t>(s)])
                          .is_ok());
            std::vector<float> out;
            Status st = run_step(*d.run.session, &d.cache(), in, tc, &out);
            REQUIRE_MESSAGE(st.is_ok(), st.to_string());
            const int64_t V = d.cfg.vocab;
            CHECK(row_error(out.data(), full.row(t), V) <= tol);
            CHECK(row_error(out.data() + V, full_other.row(t), V) <= tol);
          }
        }
      }
}

// The ax8850 backend's counters.
hal::ax8850::DeviceCounters npu_counters(const Decoder& d) {
  auto c = hal::ax8850::device_counters(*d.run.session->backend("ax8850"));
  REQUIRE(c.is_ok());
  return *c;
}

TEST_CASE(
    "ax8850: kv_write and attention run on the NPU over the KV cache, bit for bit the "
    "reference; the card keeps the cache in device memory") {
  for (DType kv : {DType::kF32, DType::kF16})
    for (const char* host : {"chip", "pcie"}) {
      CAPTURE(std::string(host));
      const std::string kv_name = ir::dtype_name(kv);
      CAPTURE(kv_name);
      const bool card = std::string(host) == "pcie";
      Decoder ref("ref", 1, 64, DType::kBF16, "", kv);
      Decoder npu("ref", 1, 64, DType::kBF16, host, kv);
      int writes = 0;
      for (size_t id = 0; id < npu.g.nodes.size(); ++id) {
        const runtime::NodePlacement& p = npu.run.session->placement()[id];
        const ir::Op op = npu.g.nodes[id].op;
        if (op == ir::Op::kKvWrite) ++writes;
        if (op == ir::Op::kKvWrite || op == ir::Op::kAttention || op == ir::Op::kMatMul)
          CHECK_MESSAGE(p.backend == "ax8850", npu.g.nodes[id].name, ": ", p.fallback_reason);
      }
      CHECK(writes == 2 * ref.cfg.n_layers);
      // What one token's rows of every state take: the rows a call writes through.
      auto layout = runtime::kv_cache_layout(npu.g);
      REQUIRE(layout.is_ok());
      const uint64_t cell_bytes = layout->bytes_per_cell;
      CHECK(cell_bytes == 2 * 2 * 32 * (kv == DType::kF16 ? 2 : 4));  // K, V x 2 layers x 32

      const std::vector<int32_t> toks = random_tokens(12, ref.cfg.vocab, 7);
      for (Decoder* d : {&ref, &npu}) d->cache().clear();
      // A prefill chunk, then one token at a time.
      const Logits a = ref.step(0, slice(toks, 0, 5)), b = npu.step(0, slice(toks, 0, 5));
      CHECK(std::equal(a.v.begin(), a.v.end(), b.v.begin()));
      // The card took the cache in once (the first reshape), whole.
      const uint64_t whole = cell_bytes * 64;
      CHECK(npu_counters(npu).state_h2d_bytes == (card ? whole : 0));
      for (size_t t = 5; t < toks.size(); ++t) {
        CAPTURE(t);
        const hal::ax8850::DeviceCounters before = npu_counters(npu);
        const Logits x = ref.step(0, {toks[t]}), y = npu.step(0, {toks[t]});
        CHECK(std::equal(x.v.begin(), x.v.end(), y.v.begin()));
        const hal::ax8850::DeviceCounters after = npu_counters(npu);
        if (card) {
          // The link bytes of the step are the cost model's, call by call.
          const runtime::Session& s = *npu.run.session;
          auto params = hal::ax8850::backend_params(*s.backend("ax8850"));
          REQUIRE(params.is_ok());
          std::vector<ir::Extents> ext;
          for (size_t v = 0; v < npu.g.values.size(); ++v)
            ext.push_back(s.extents(static_cast<ir::ValueId>(v)));
          std::vector<uint8_t> on_device(npu.g.nodes.size());
          for (size_t n = 0; n < on_device.size(); ++n)
            on_device[n] = s.placement()[n].backend == "ax8850";
          uint64_t h2d = 0, d2h = 0;
          for (const runtime::ExecutableInfo& e : s.executables()) {
            if (e.backend != "ax8850") continue;
            std::vector<hal::ax8850::Step> steps;
            for (size_t i = 0; i < e.nodes.size(); ++i)
              steps.push_back({e.nodes[i], {e.parts[i].begin, e.parts[i].end}, e.parts[i].group});
            auto ct = hal::ax8850::model_call(*params, npu.g, steps, ext.data(), false, on_device);
            REQUIRE(ct.is_ok());
            h2d += ct->h2d_bytes;
            d2h += ct->d2h_bytes;
          }
          CHECK(after.h2d_bytes - before.h2d_bytes == h2d);
          CHECK(after.d2h_bytes - before.d2h_bytes == d2h);
          // Out of a decode step: the token's K / V rows (written through) and the layers'
          // output; never the cache, which a per-call copy would move (whole bytes each way).
          CHECK(after.d2h_bytes - before.d2h_bytes >= cell_bytes);
          CHECK(after.d2h_bytes - before.d2h_bytes < cell_bytes + whole / 2);
          CHECK(after.h2d_bytes - before.h2d_bytes < whole / 2);
          CHECK(after.state_h2d_bytes == before.state_h2d_bytes);
        } else {
          CHECK(after.d2h_bytes + after.h2d_bytes == 0);
        }
      }
      // The caller's memory holds what the device wrote (written through): the same bytes as
      // the reference's cache.
      for (size_t st = 0; st < ref.cache().state_regions().size(); ++st) {
        const runtime::MemoryRegion r = ref.cache().state_regions()[st],
                                    n = npu.cache().state_regions()[st];
        CHECK(std::memcmp(r.data, n.data, cell_bytes / 4 * 64) == 0);  // one K or V, 64 cells
      }
      // A prefix the owner copies (copy_seq, as a prefix-cache hit does) continues like the
      // reference: the bound session tells the card which rows the copy wrote.
      const uint64_t before_copy = npu_counters(npu).state_h2d_bytes;
      for (Decoder* d : {&ref, &npu}) REQUIRE(d->cache().copy_seq(0, 1, 8).is_ok());
      CHECK(npu_counters(npu).state_h2d_bytes - before_copy == (card ? 8 * cell_bytes : 0));
      for (int32_t tok : random_tokens(4, ref.cfg.vocab, 8)) {
        const Logits x = ref.step(1, {tok}), y = npu.step(1, {tok});
        CHECK(std::equal(x.v.begin(), x.v.end(), y.v.begin()));
      }
    }
}

TEST_CASE("ax8850 card: the runner's prefix-cache hits give the tokens of a cold run") {
  tools::TinyModelConfig cfg;
  cfg.matmul_dtype = DType::kBF16;
  cfg.max_seq = 32;
  auto made = tools::make_tiny_decoder(cfg, 11);
  REQUIRE(made.is_ok());
  const ir::Graph g = std::move(made).value();
  const int64_t chunk = 8, cells = 96;
  runtime::SessionOptions card = cpu_options("ref", 1);
  card.backends = {"ax8850"};
  hal::BackendOptions npu;
  npu.settings = {{"host", "pcie"}};
  card.backend_options.emplace_back("ax8850", npu);
  card.activations = {{"ax8850", DType::kF32}};
  card.schedule.cost_placement = false;
  auto layout = runtime::kv_cache_layout(g);
  REQUIRE(layout.is_ok());
  const std::vector<int32_t> system = random_tokens(12, cfg.vocab, 21);
  // Per setup: the tokens of three requests (a system prompt + a question each; greedy, 6 new
  // tokens), with and without the prefix cache.
  auto run = [&](const runtime::SessionOptions& base, bool prefix, uint64_t* taken_in) {
    auto so = runtime::decoder_session_options(base, g, chunk, cells);
    REQUIRE_MESSAGE(so.is_ok(), so.status().to_string());
    TinyRun r = make_run(g, *so, cells);
    auto lb = runtime::DecoderRunner::logits_bytes(g, chunk);
    REQUIRE(lb.is_ok());
    auto logits = runtime::RegionBuffer::alloc(*lb, runtime::kRegionAlign, false);
    REQUIRE(logits.is_ok());
    auto runner = runtime::DecoderRunner::create(*r.session, *r.kv.cache, logits->region(), chunk);
    REQUIRE_MESSAGE(runner.is_ok(), runner.status().to_string());
    runtime::PrefixCacheOptions po;
    po.block_tokens = 4;
    po.slots = 2;
    po.budget_bytes = 32 * layout->bytes_per_cell;
    auto pc = runtime::PrefixCache::create(*r.kv.cache, *layout, po);
    REQUIRE_MESSAGE(pc.is_ok(), pc.status().to_string());
    std::vector<std::vector<int32_t>> outs;
    for (uint32_t q = 0; q < 3; ++q) {
      std::vector<int32_t> prompt = system;
      const std::vector<int32_t> question = random_tokens(5, cfg.vocab, 30 + q);
      prompt.insert(prompt.end(), question.begin(), question.end());
      runtime::GenerateRequest req;
      req.prompt = prompt;
      req.max_tokens = 6;
      req.prefix_cache = prefix ? pc->get() : nullptr;
      std::vector<int32_t> out;
      runtime::DecoderStats stats;
      Status st = (*runner)->generate(req, &out, &stats);
      REQUIRE_MESSAGE(st.is_ok(), st.to_string());
      CHECK(stats.prefix_hit_tokens == (prefix && q > 0 ? 12 : 0));
      outs.push_back(out);
      REQUIRE(r.kv.cache->remove(0).is_ok());
    }
    if (taken_in != nullptr)
      *taken_in = hal::ax8850::device_counters(*r.session->backend("ax8850"))->state_h2d_bytes;
    return outs;
  };
  const auto cold = run(cpu_options("ref", 1), false, nullptr);
  CHECK(run(cpu_options("ref", 1), true, nullptr) == cold);
  uint64_t cold_in = 0, hit_in = 0;
  CHECK(run(card, false, &cold_in) == cold);
  CHECK(run(card, true, &hit_in) == cold);
  // The card took the cache in once; with the prefix cache also the rows the cache's copies wrote:
  // each request's store of its 16 whole-block prompt tokens into a slot, and the 12-token
  // restores of requests 1 and 2.
  CHECK(cold_in == cells * layout->bytes_per_cell);
  CHECK(hit_in - cold_in == (3 * 16 + 2 * 12) * layout->bytes_per_cell);
}

TEST_CASE("cpu backend: kv_write's length rule and its cost, which is the rows written") {
  const ir::Graph g = two_state_graph(int64_t{1} << 40);
  auto cpu = hal::builtin_registry().create("cpu", {});
  REQUIRE(cpu.is_ok());
  const ir::Node& w = g.nodes[0];
  REQUIRE(w.op == ir::Op::kKvWrite);
  auto at = [&](int64_t cells, int64_t seq) {
    std::vector<ir::Extents> e(g.values.size());
    const int64_t vals[ir::kMaxSymbols] = {cells, seq};
    for (size_t v = 0; v < g.values.size(); ++v)
      REQUIRE(ir::shape_eval(g.values[v].shape, vals, &e[v]).is_ok());
    return e;
  };
  CHECK((*cpu)->supports(g, w, nullptr).is_ok());
  CHECK((*cpu)->supports(g, w, at(INT32_MAX, 16).data()).is_ok());
  CHECK_STATUS((*cpu)->supports(g, w, at(int64_t{INT32_MAX} + 1, 16).data()),
               StatusCode::kUnsupported, "kv_write 'write8'", "2147483648 cache cells",
               "i32 cell indices");
  hal::Subgraph sg;
  sg.graph = &g;
  sg.nodes = {0};
  // 3 rows of 8 floats read and written, 3 cell ids: the same for 16 cells and for a million.
  for (int64_t cells : {16, 1 << 20}) {
    CAPTURE(cells);
    auto est = (*cpu)->estimate(sg, at(cells, 3).data(), DType::kF32);
    REQUIRE(est.is_ok());
    CHECK(est->nodes.at(0).dram_bytes == 8 * 3 * 8 + 4 * 3);
  }
}

TEST_CASE("kv_write: a cell outside the cache fails execute and writes nothing") {
  Decoder d("auto", 1, 16);
  d.cache().clear();
  (void)d.step(0, {1, 2, 3});
  const auto regions = d.cache().state_regions();
  std::vector<std::vector<uint8_t>> before;
  for (const runtime::MemoryRegion& r : regions)
    before.emplace_back(static_cast<uint8_t*>(r.data), static_cast<uint8_t*>(r.data) + r.bytes);
  TinyInputs in;
  in.batch = 1;
  in.seq = 2;
  in.ids = {4, 5};
  in.positions = {3, 4};
  TokenCells tc;
  tc.cells = {3, 16};  // 16 is outside [0, 16)
  tc.seq_ids = {0, 0};
  std::vector<float> out;
  Status st = run_step(*d.run.session, &d.cache(), in, tc, &out);
  CHECK_STATUS(st, StatusCode::kIndexOutOfRange, "kv_write", "cell 16", "[0, 16)");
  for (size_t i = 0; i < regions.size(); ++i)
    CHECK(std::equal(before[i].begin(), before[i].end(), static_cast<uint8_t*>(regions[i].data)));
}

}  // namespace
}  // namespace laya::test
