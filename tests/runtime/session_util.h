// Helpers shared by the runtime tests: run a tiny model through a Session (a decoder over a KV
// cache that holds one sequence per batch row).
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/kv_cache.h"
#include "runtime/session.h"
#include "tools/tiny_models.h"

namespace laya::test {

// Token ids, positions and key mask of one request, [batch, seq] each.
struct TinyInputs {
  int64_t batch = 1, seq = 1;
  std::vector<int32_t> ids, positions, key_mask;
};

// Deterministic ids in [0, vocab), positions 0..seq-1 per row, and (when `pad` > 0) the last
// `pad` keys of the last row masked out.
inline TinyInputs tiny_inputs(int64_t batch, int64_t seq, int64_t vocab, int64_t pad = 0,
                              uint32_t salt = 0) {
  TinyInputs in;
  in.batch = batch;
  in.seq = seq;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s = 0; s < seq; ++s) {
      const uint32_t h = static_cast<uint32_t>(b * 7919 + s * 104729) * 2654435761u + salt * 97u;
      in.ids.push_back(static_cast<int32_t>((h >> 8) % static_cast<uint32_t>(vocab)));
      in.positions.push_back(static_cast<int32_t>(s));
      in.key_mask.push_back(b == batch - 1 && s >= seq - pad ? 0 : 1);
    }
  return in;
}

// A KV cache of `cells` cells (0: the graph's most) for a graph with states, in its own memory.
struct TinyCache {
  runtime::RegionBuffer memory;
  std::unique_ptr<runtime::KvCache> cache;
};

inline TinyCache make_cache(const ir::Graph& g, int64_t cells = 0, int32_t max_seqs = 8) {
  TinyCache c;
  auto layout = runtime::kv_cache_layout(g);
  REQUIRE_MESSAGE(layout.is_ok(), layout.status().to_string());
  if (cells == 0) cells = layout->max_cells;
  auto mem = runtime::RegionBuffer::alloc(runtime::KvCache::region_bytes(*layout, cells),
                                          runtime::kRegionAlign, true);
  REQUIRE_MESSAGE(mem.is_ok(), mem.status().to_string());
  c.memory = std::move(mem).value();
  auto kv = runtime::KvCache::create(*layout, cells, max_seqs, c.memory.region());
  REQUIRE_MESSAGE(kv.is_ok(), kv.status().to_string());
  c.cache = std::move(kv).value();
  return c;
}

// A prepared session with its own regions (and, for a graph with states, its own KV cache of
// `cells` cells, 0: the graph's most).
struct TinyRun {
  std::unique_ptr<runtime::Session> session;
  runtime::SessionBuffers buffers;
  TinyCache kv;
};

inline TinyRun make_run(const ir::Graph& g, const runtime::SessionOptions& opts,
                        int64_t cells = 0) {
  TinyRun r;
  auto s = runtime::Session::prepare(g, opts);
  REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
  r.session = std::move(s).value();
  auto b = runtime::session_buffers_alloc(*r.session);
  REQUIRE_MESSAGE(b.is_ok(), b.status().to_string());
  r.buffers = std::move(b).value();
  Status st = r.session->bind_memory(r.buffers.persistent.region(), r.buffers.activations.region(),
                                     r.buffers.scratch.region());
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  if (!g.states.empty()) {
    r.kv = make_cache(g, cells);
    st = r.kv.cache->bind(*r.session);
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  }
  return r;
}

inline runtime::SessionOptions cpu_options(const std::string& kernels, int threads = 1) {
  runtime::SessionOptions o;
  o.backend.n_threads = threads;
  hal::BackendOptions cpu = o.backend;
  cpu.settings = {{"kernels", kernels}};
  o.backend_options = {{"cpu", cpu}};
  return o;
}

// The per-token cache inputs of one step: cell, sequence id ([batch, seq] each).
struct TokenCells {
  std::vector<int32_t> cells, seq_ids;
};

// The symbol values of a tiny model: batch, seq and (decoders) cells = the cache's capacity.
inline std::vector<int64_t> tiny_symbols(const ir::Graph& g, const runtime::KvCache* cache,
                                         int64_t batch, int64_t seq) {
  std::vector<int64_t> sym;
  for (const ir::Symbol& y : g.symbols)
    sym.push_back(y.name == "batch" ? batch : y.name == "seq" ? seq : cache->capacity());
  return sym;
}

// The graph's input pointers, picked by role (the cache's arrays for kCellPositions /
// kCellSeqIds). Borrowed from `in`, `tc` and `cache`.
inline std::vector<const void*> tiny_input_ptrs(const ir::Graph& g, const runtime::KvCache* cache,
                                                const TinyInputs& in, const TokenCells& tc) {
  std::vector<const void*> inputs;
  for (ir::ValueId v : g.inputs) {
    switch (g.values[v].role) {
      case ir::InputRole::kTokenIds:
        inputs.push_back(in.ids.data());
        break;
      case ir::InputRole::kPositions:
        inputs.push_back(in.positions.data());
        break;
      case ir::InputRole::kKeyMask:
        inputs.push_back(in.key_mask.data());
        break;
      case ir::InputRole::kSeqIds:
        inputs.push_back(tc.seq_ids.data());
        break;
      case ir::InputRole::kCacheCells:
        inputs.push_back(tc.cells.data());
        break;
      case ir::InputRole::kCellPositions:
        inputs.push_back(cache->cell_positions());
        break;
      case ir::InputRole::kCellSeqIds:
        inputs.push_back(cache->cell_seq_ids());
        break;
      case ir::InputRole::kLogitRows:  // tiny decoders have none (their logits cover every row)
      case ir::InputRole::kNone:
        inputs.push_back(nullptr);
        break;
    }
  }
  return inputs;
}

// Reshapes to (batch, seq[, cells = the cache's capacity]), executes with the inputs picked by
// role, and returns the first output ([batch, seq, ...]) in `out`.
inline Status run_step(runtime::Session& s, const runtime::KvCache* cache, const TinyInputs& in,
                       const TokenCells& tc, std::vector<float>* out) {
  const ir::Graph& g = s.graph();
  LAYA_RETURN_IF_ERROR(s.reshape(tiny_symbols(g, cache, in.batch, in.seq)));
  const std::vector<const void*> inputs = tiny_input_ptrs(g, cache, in, tc);
  out->assign(static_cast<size_t>(s.extents(g.outputs[0]).count()), 0.0f);
  void* outputs[1] = {out->data()};
  return s.execute(inputs, outputs);
}

// A graph without states: reshapes to (batch, seq) and executes `in`.
inline Status run_tiny(runtime::Session& s, const TinyInputs& in, std::vector<float>* out) {
  return run_step(s, nullptr, in, {}, out);
}

// Clears `cache` and allocates `seq` cells for each of `batch` sequences (sequence b for batch
// row b, positions 0 .. seq - 1, as tiny_inputs makes them): `tc` gets the cells and sequence ids
// of the step that prefills them.
inline Status prefill_cells(runtime::KvCache& cache, int64_t batch, int64_t seq, TokenCells* tc) {
  cache.clear();
  tc->cells.resize(static_cast<size_t>(batch * seq));
  tc->seq_ids.resize(tc->cells.size());
  for (int64_t b = 0; b < batch; ++b) {
    LAYA_RETURN_IF_ERROR(
        cache.alloc(static_cast<int32_t>(b), seq, tc->cells.data() + b * seq, nullptr));
    std::fill(tc->seq_ids.begin() + b * seq, tc->seq_ids.begin() + (b + 1) * seq,
              static_cast<int32_t>(b));
  }
  return Status::ok();
}

// Any tiny model: a decoder's batch row b becomes sequence b of its cleared cache (prefill_cells),
// prefilled in one step.
inline Status run_tiny(TinyRun& r, const TinyInputs& in, std::vector<float>* out) {
  runtime::KvCache* cache = r.kv.cache.get();
  if (cache == nullptr) return run_tiny(*r.session, in, out);
  TokenCells tc;
  LAYA_RETURN_IF_ERROR(prefill_cells(*cache, in.batch, in.seq, &tc));
  return run_step(*r.session, cache, in, tc, out);
}

}  // namespace laya::test
