// The device's packed-weight cache (runtime/device.h): what a second session of a model costs with
// and without it.
//
//   build/bench/laya-bench-device --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//   LAYA_SMOLLM2_GGUF=.../SmolLM2-135M-Instruct.Q4_1.gguf build/bench/laya-bench-device ...
//
// Models (the benchmark's first argument): 0 = a synthetic encoder (tools/tiny_models.h: 4 layers,
// d_model 512, d_ff 2048, q4_0 matmul weights, ~6.6 MB of them), always there; 1 = SmolLM2-135M
// Q4_1 as a KV-cached decoder (frontends/gguf_decoder.h, 128-token prefill plans), skipped with a
// message without LAYA_SMOLLM2_GGUF. Second argument: 1 = the device shares packed weights, 0 = it
// does not (each session packs into its own persistent region, as before the device).
//
// BM_second_session: with a first session of the model live on the device, the time to prepare,
// allocate and bind a second one (destroying it is not timed). Counter packed_bytes_added: the
// packed-weight bytes the second session added (its persistent region plus what the cache grew).
// BM_sessions_memory/N: N live sessions of the model; counter packed_bytes: all packed weights in
// memory (every session's persistent region plus the cache), sessions_per_s is meaningless there.
// LAYA_THREADS (default 1) sets the CPU threads.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "frontends/gguf.h"
#include "frontends/gguf_decoder.h"
#include "runtime/decoder.h"
#include "runtime/device.h"
#include "runtime/session.h"
#include "tools/tiny_models.h"

namespace {

using namespace laya;

struct Model {
  std::string error;
  ir::Graph graph;
  runtime::SessionOptions options;  // without a device
};

runtime::SessionOptions base_options() {
  runtime::SessionOptions o;
  const char* threads = std::getenv("LAYA_THREADS");
  o.backend.n_threads = threads ? std::atoi(threads) : 1;
  return o;
}

Status make_synthetic(Model* m) {
  tools::TinyModelConfig cfg;
  cfg.vocab = 1000;
  cfg.d_model = 512;
  cfg.d_ff = 2048;
  cfg.n_heads = 8;
  cfg.n_layers = 4;
  cfg.max_seq = 128;
  cfg.matmul_dtype = ir::DType::kQ4_0;
  LAYA_ASSIGN_OR_RETURN(m->graph, tools::make_tiny_encoder(cfg, 7));
  m->options = base_options();
  return Status::ok();
}

Status make_smollm2(Model* m) {
  const char* path = std::getenv("LAYA_SMOLLM2_GGUF");
  if (path == nullptr)
    return status_error(StatusCode::kNotFound, "set LAYA_SMOLLM2_GGUF for the SmolLM2 model");
  LAYA_ASSIGN_OR_RETURN(frontends::gguf::File f, frontends::gguf::File::open(path));
  auto file = std::make_shared<const frontends::gguf::File>(std::move(f));
  frontends::gguf::CachedDecoderGraphOptions o;
  o.max_seq = 128;
  o.max_cells = 512;
  LAYA_ASSIGN_OR_RETURN(m->graph, frontends::gguf::build_cached_decoder_graph(file, o));
  LAYA_ASSIGN_OR_RETURN(m->options,
                        runtime::decoder_session_options(base_options(), m->graph, 128, 512));
  return Status::ok();
}

Model* model(int64_t which) {
  static Model* models[2] = {nullptr, nullptr};
  if (models[which] == nullptr) {
    auto* m = new Model();
    const Status st = which == 0 ? make_synthetic(m) : make_smollm2(m);
    if (!st.is_ok()) m->error = st.to_string();
    models[which] = m;
  }
  return models[which];
}

// A live session with its regions.
struct Live {
  std::unique_ptr<runtime::Session> session;
  runtime::SessionBuffers buffers;
};

Result<Live> open(const Model& m, const std::shared_ptr<runtime::Device>& dev) {
  runtime::SessionOptions so = m.options;
  so.device = dev;
  Live l;
  LAYA_ASSIGN_OR_RETURN(l.session, runtime::Session::prepare(m.graph, so));
  LAYA_ASSIGN_OR_RETURN(l.buffers, runtime::session_buffers_alloc(*l.session));
  LAYA_RETURN_IF_ERROR(l.session->bind_memory(
      l.buffers.persistent.region(), l.buffers.activations.region(), l.buffers.scratch.region()));
  return l;
}

std::shared_ptr<runtime::Device> device(bool share) {
  runtime::DeviceOptions o;
  o.share_weights = share;
  return *runtime::Device::create(o);
}

void BM_second_session(benchmark::State& state) {
  const Model* m = model(state.range(0));
  if (!m->error.empty()) {
    state.SkipWithError(m->error.c_str());
    return;
  }
  auto dev = device(state.range(1) != 0);
  Result<Live> first = open(*m, dev);
  if (!first.is_ok()) {
    state.SkipWithError(first.status().to_string().c_str());
    return;
  }
  const uint64_t cache_before = dev->weight_stats().bytes;
  uint64_t added = 0;
  for (auto _ : state) {
    Result<Live> second = open(*m, dev);
    if (!second.is_ok()) {
      state.SkipWithError(second.status().to_string().c_str());
      return;
    }
    added =
        second->session->requirements().persistent_bytes + dev->weight_stats().bytes - cache_before;
    state.PauseTiming();
    second = Live();
    state.ResumeTiming();
  }
  state.counters["packed_bytes_added"] = static_cast<double>(added);
}

void BM_sessions_memory(benchmark::State& state) {
  const Model* m = model(state.range(0));
  if (!m->error.empty()) {
    state.SkipWithError(m->error.c_str());
    return;
  }
  const int64_t n = state.range(2);
  uint64_t packed = 0;
  for (auto _ : state) {
    auto dev = device(state.range(1) != 0);
    std::vector<Live> live;
    for (int64_t i = 0; i < n; ++i) {
      Result<Live> l = open(*m, dev);
      if (!l.is_ok()) {
        state.SkipWithError(l.status().to_string().c_str());
        return;
      }
      live.push_back(std::move(l).value());
    }
    packed = dev->weight_stats().bytes;
    for (const Live& l : live) packed += l.session->requirements().persistent_bytes;
  }
  state.counters["packed_bytes"] = static_cast<double>(packed);
}

BENCHMARK(BM_second_session)
    ->ArgNames({"model", "shared"})
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_sessions_memory)
    ->ArgNames({"model", "shared", "sessions"})
    ->ArgsProduct({{0, 1}, {0, 1}, {1, 2, 4}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
