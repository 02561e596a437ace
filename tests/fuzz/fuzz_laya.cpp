// Fuzz target: a .laya image through the loader and the verifier (model_parse), the printer, and,
// for a graph that loads, a session on it: prepare (scheduler with the null backend's refusals,
// bucket plans, the CPU backend's kernel choices and sizes), and when the memory it asks for is
// small, bind_memory (weight packing), reshape at the smallest symbol values, zeroed states (a
// KV cache) and one execute on zero inputs. Any input must give a Status, never a crash, a sanitizer report or a leak.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "ir/model_file.h"
#include "runtime/session.h"

namespace {

using namespace laya;

constexpr uint64_t kMaxRunBytes = uint64_t{32} << 20;  // regions larger than this are not made

void run_session(const ir::Graph& g) {
  runtime::SessionOptions opts;
  opts.backends = {"null", "cpu"};
  opts.backend.n_threads = 1;
  Result<std::unique_ptr<runtime::Session>> s = runtime::Session::prepare(g, opts);
  if (!s.is_ok()) return;
  const runtime::MemoryRequirements& req = (*s)->requirements();
  if (req.persistent_bytes + req.activation_bytes + req.scratch_bytes > kMaxRunBytes) return;
  Result<runtime::SessionBuffers> buf = runtime::session_buffers_alloc(**s);
  if (!buf.is_ok()) return;
  if (!(*s)->bind_memory(buf->persistent.region(), buf->activations.region(), buf->scratch.region())
           .is_ok())
    return;
  std::vector<int64_t> sym;
  for (const ir::Symbol& y : g.symbols) sym.push_back(y.min);
  if (!(*s)->reshape(sym).is_ok()) return;
  uint64_t io_bytes = 0;
  for (const std::vector<ir::ValueId>* list : {&g.inputs, &g.outputs, &g.states})
    for (ir::ValueId v : *list) io_bytes += static_cast<uint64_t>((*s)->extents(v).count()) * 4;
  if (io_bytes > kMaxRunBytes) return;
  // States (a KV cache): zeroed regions at these shapes, bound after reshape (which reshapes the
  // backends again).
  std::vector<runtime::RegionBuffer> state_mem;
  std::vector<runtime::MemoryRegion> state_regions;
  for (ir::ValueId v : g.states) {
    Result<uint64_t> bytes = ir::dtype_bytes(g.values[v].dtype, (*s)->extents(v).count());
    if (!bytes.is_ok()) return;
    Result<runtime::RegionBuffer> m =
        runtime::RegionBuffer::alloc(*bytes, runtime::kRegionAlign, false);
    if (!m.is_ok()) return;
    if (*bytes > 0) std::memset(m->region().data, 0, *bytes);
    state_regions.push_back(m->region());
    state_mem.push_back(std::move(m).value());
  }
  if (!g.states.empty() && !(*s)->bind_states(state_regions).is_ok()) return;
  std::vector<std::vector<uint8_t>> in(g.inputs.size()), out(g.outputs.size());
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    in[i].assign(static_cast<size_t>((*s)->extents(g.inputs[i]).count()) * 4, 0);
    in_ptrs.push_back(in[i].data());
  }
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    out[i].assign(static_cast<size_t>((*s)->extents(g.outputs[i]).count()) * 4, 0);
    out_ptrs.push_back(out[i].data());
  }
  (void)(*s)->execute(in_ptrs, out_ptrs);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // model_parse wants 64-byte aligned bytes, as a mapping gives.
  const size_t cap = (size + 63) / 64 * 64 + 64;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(
      static_cast<uint8_t*>(std::aligned_alloc(64, cap)), &std::free);
  if (size > 0) std::memcpy(buf.get(), data, size);
  Result<ir::Graph> g = ir::model_parse(buf.get(), size, nullptr);
  if (!g.is_ok()) return 0;
  (void)ir::graph_print(*g);
  run_session(*g);
  return 0;
}
