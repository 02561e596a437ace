// Helpers of the GGUF generation tests: the tiny fixtures, a recompute reference (the full-sequence
// graph run again for every token) and a cached decoder (one session, a KV cache, a runner).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "frontends/gguf_decoder.h"
#include "runtime/decoder.h"
#include "runtime/kv_cache.h"
#include "runtime/session.h"
#include "tests/test_files.h"

namespace laya::test {

using frontends::gguf::File;

inline std::string fixtures_dir() {
  const char* dir = std::getenv("LAYA_FIXTURES");
  REQUIRE(dir != nullptr);
  return std::string(dir) + "/gguf/";
}

inline std::shared_ptr<const File> open_file(const std::string& path) {
  Result<File> f = File::open(path);
  REQUIRE_MESSAGE(f.is_ok(), f.status().to_string());
  return std::make_shared<const File>(std::move(f).value());
}

inline runtime::SessionOptions cpu_options(const std::string& kernels, int threads) {
  runtime::SessionOptions so;
  so.backend.n_threads = threads;
  hal::BackendOptions cpu = so.backend;
  cpu.settings = {{"kernels", kernels}};
  so.backend_options = {{"cpu", cpu}};
  return so;
}

// The full-sequence graph, run on the whole sequence for every new token.
struct Recompute {
  std::unique_ptr<runtime::Session> session;
  runtime::SessionBuffers buffers;
  int64_t vocab = 0;

  Recompute(std::shared_ptr<const File> f, const std::string& kernels, int64_t max_seq) {
    frontends::gguf::DecoderGraphOptions o;
    o.max_seq = max_seq;
    Result<ir::Graph> g = frontends::gguf::build_decoder_graph(f, o);
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    vocab = g->values[g->outputs[0]].shape.dims[2].c;
    auto s = runtime::Session::prepare(*g, cpu_options(kernels, 1));
    REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
    session = std::move(s).value();
    auto buf = runtime::session_buffers_alloc(*session);
    REQUIRE(buf.is_ok());
    buffers = std::move(buf).value();
    REQUIRE(session
                ->bind_memory(buffers.persistent.region(), buffers.activations.region(),
                              buffers.scratch.region())
                .is_ok());
  }
  // Logits f32 [n, vocab] of one sequence at positions 0..n-1.
  std::vector<float> run(const std::vector<int32_t>& ids) {
    const int64_t n = static_cast<int64_t>(ids.size());
    const int64_t sym[2] = {1, n};
    REQUIRE(session->reshape(sym).is_ok());
    std::vector<int32_t> pos(ids.size());
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = static_cast<int32_t>(i);
    std::vector<float> logits(static_cast<size_t>(n * vocab));
    const void* in[2] = {ids.data(), pos.data()};
    void* out[1] = {logits.data()};
    const Status st = session->execute(in, out);
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
    return logits;
  }
  // Greedy generation by recompute: `n` new tokens after `prompt`.
  std::vector<int32_t> generate(std::vector<int32_t> seq, int64_t n) {
    std::vector<int32_t> out;
    for (int64_t t = 0; t < n; ++t) {
      const std::vector<float> l = run(seq);
      const float* last = l.data() + (static_cast<int64_t>(seq.size()) - 1) * vocab;
      out.push_back(runtime::greedy_token({last, static_cast<size_t>(vocab)}, nullptr));
      seq.push_back(out.back());
    }
    return out;
  }
};

// The cached graph of `f` built for `chunk` and `cells`, its KV cache of `kv` (f32 / f16).
inline ir::Graph cached_graph(std::shared_ptr<const File> f, int64_t chunk, int64_t cells,
                              ir::DType kv = ir::DType::kF32) {
  frontends::gguf::CachedDecoderGraphOptions o;
  o.max_seq = chunk;
  o.max_cells = cells;
  o.kv_dtype = kv;
  Result<ir::Graph> g = frontends::gguf::build_cached_decoder_graph(std::move(f), o);
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  return std::move(g).value();
}

// The graph a Cached runs (a base of its own, so that it is built before the session and
// destroyed after it).
struct CachedGraph {
  ir::Graph graph;
};

// A KV-cached decoder graph with one session (prefill chunk and decode buckets), a cache of
// `cells` cells for `seqs` sequences and a runner (runtime::DecoderInstance).
struct Cached : CachedGraph, runtime::DecoderInstance {
  // The graph of `f` built for exactly `chunk` and `cells` (a KV cache of `kv`).
  Cached(std::shared_ptr<const File> f, const std::string& kernels, int threads, int64_t chunk,
         int64_t cells, int32_t seqs = 2, ir::DType kv = ir::DType::kF32)
      : Cached(cached_graph(std::move(f), chunk, cells, kv), kernels, threads, chunk, cells, seqs) {
  }
  // Any cached decoder graph (e.g. a loaded .laya) whose bounds admit `chunk` and `cells`.
  Cached(ir::Graph g, const std::string& kernels, int threads, int64_t chunk, int64_t cells,
         int32_t seqs = 2)
      : CachedGraph{std::move(g)} {
    auto d =
        runtime::DecoderInstance::create(graph, cpu_options(kernels, threads), chunk, cells, seqs);
    REQUIRE_MESSAGE(d.is_ok(), d.status().to_string());
    static_cast<runtime::DecoderInstance&>(*this) = std::move(d).value();
    // Decode and prefill plans, each for one row of logits and (graphs with logit_rows) for all.
    const size_t plans = graph.find_symbol("rows") >= 0 ? 4u : 2u;
    CHECK(session->buckets().size() == (chunk > 1 ? plans : 1u));
  }
};

// The upper bound of symbol `name` in the bucket the session's last reshape picked.
inline int64_t bucket_hi(const runtime::Session& s, const char* name) {
  const int sym = s.graph().find_symbol(name);
  REQUIRE(sym >= 0);
  REQUIRE(s.current_bucket() >= 0);
  return s.buckets()[static_cast<size_t>(s.current_bucket())].hi[static_cast<size_t>(sym)];
}

// max |a - b| relative to the largest |b| (at least 1).
inline double rel_error(const float* a, const float* b, int64_t n) {
  double err = 0, scale = 1;
  for (int64_t i = 0; i < n; ++i) {
    err = std::max(err, std::fabs(double{a[i]} - double{b[i]}));
    scale = std::max(scale, std::fabs(double{b[i]}));
  }
  return err / scale;
}

inline std::vector<int32_t> random_ids(size_t n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, static_cast<int32_t>(vocab - 1));
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = d(rng);
  return v;
}

}  // namespace laya::test
