// Helpers shared by the runtime tests: run a tiny model through a Session.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

// A prepared session with its own regions.
struct TinyRun {
  std::unique_ptr<runtime::Session> session;
  runtime::SessionBuffers buffers;
};

inline TinyRun make_run(const ir::Graph& g, const runtime::SessionOptions& opts) {
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

// Reshapes to (batch, seq), executes, and returns the first output ([batch, seq, ...]) in `out`.
inline Status run_tiny(runtime::Session& s, const TinyInputs& in, std::vector<float>* out) {
  const int64_t sym[2] = {in.batch, in.seq};
  LAYA_RETURN_IF_ERROR(s.reshape(sym));
  const ir::Graph& g = s.graph();
  std::vector<const void*> inputs;
  for (ir::ValueId v : g.inputs) {
    const std::string& name = g.values[v].name;
    inputs.push_back(name == "ids"         ? in.ids.data()
                     : name == "positions" ? in.positions.data()
                                           : in.key_mask.data());
  }
  out->assign(static_cast<size_t>(s.extents(g.outputs[0]).count()), 0.0f);
  void* outputs[1] = {out->data()};
  return s.execute(inputs, outputs);
}

}  // namespace laya::test
