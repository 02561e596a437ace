// The session: one graph placed on HAL backends, with caller-owned memory, driven through the
// lifecycle phases of docs/architecture.md. It is what laya-run and the tests hold (and what the
// planned C API will wrap).
//
//   auto s = Session::prepare(graph, opts);          // prepare: schedule, plan, size (allocates)
//   SessionBuffers buf = *session_buffers_alloc(**s)  // (or the caller's own regions)
//   (*s)->bind_memory(buf.persistent.region(), ...);  // prepare: backends pack weights (load)
//   (*s)->bind_states(kv_cache.state_regions());     // graphs with states (runtime/kv_cache.h)
//   (*s)->reshape({batch, seq});                      // reshape: pick the bucket, bind activations
//   (*s)->execute(inputs, outputs);                   // execute: run; allocates nothing
//
// Phases and what each call may do:
//   prepare      verifies the graph, creates the backends, plans activation memory once per shape
//                bucket, runs the scheduler (runtime/scheduler.h: placement with fallback reasons,
//                executables as few as the dependencies allow, splits across a backend's groups),
//                and has each backend prepare its executables (one shape group per bucket) and
//                report its persistent / scratch / device needs. Allocates.
//   bind_memory  takes the three caller-owned regions, checks size and alignment, and has every
//                backend write its packed weights into its slice of `persistent`, or take them
//                from the device's packed-weight cache (runtime/device.h: the CPU backend when the
//                device shares weights). Allocates only inside backends' load (temporary buffers
//                while packing) and in the cache (a weight no session of the device holds yet).
//   bind_states  (graphs with state values, ir/graph.h) the caller's memory of every state, e.g.
//                a KV cache's; several sessions of one graph may share it (a prefill and a decode
//                session write one cache). Allocates nothing.
//   reshape      concrete symbol values (within bounds) -> the smallest bucket that fits; fills
//                every value's extents and activation pointer; checks the bound states are large
//                enough for the new extents. Allocates nothing.
//   execute      binds the caller's input / output pointers and runs the executables in order.
//                Allocates nothing; checks nothing but the argument counts, and the indices the
//                kernels read from tensors (kIndexOutOfRange naming the node, position and id).
// A failed call leaves the session as it was before it (still usable); calls out of order fail
// with kFailedPrecondition. One thread at a time may call into a session.
//
// Ownership: the session copies the graph (weights are shared through Graph::keepalive, never
// copied), owns its backends and executables, and holds its device (SessionOptions::device), whose
// threads and packed weights it shares with the device's other sessions. The memory regions are the caller's: they must
// stay valid and untouched from bind_memory until the session is destroyed or rebound; state
// memory stays valid from bind_states until then, and only executes (kv_write) and the owner of
// the states (e.g. KvCache) write it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hal/hal.h"
#include "ir/graph.h"
#include "runtime/device.h"
#include "ir/memory_plan.h"
#include "ir/status.h"
#include "runtime/scheduler.h"

namespace laya::runtime {

// A caller-owned byte range. `data` is borrowed (see the ownership note above).
struct MemoryRegion {
  void* data = nullptr;
  uint64_t bytes = 0;
};

// Every region's alignment; `persistent` is aligned to hal::persistent_alignment of its size.
inline constexpr uint64_t kRegionAlign = 64;

struct SessionOptions {
  // The device whose threads and packed-weight cache the session's backends use; null: the
  // process default (Device::process_default()).
  std::shared_ptr<Device> device;
  // Backends by registry name, in order of preference. A node goes to the first one whose
  // supports() accepts it, else to "cpu" (always created: the fallback) with the refusals
  // recorded in the placement report.
  std::vector<std::string> backends = {"cpu"};
  hal::BackendOptions
      backend;  // given to every backend's create (its `shared` set to the device's)...
  // ...unless a backend has its own here (by name): settings such as cpu "kernels", ax8850 "vnpu".
  std::vector<std::pair<std::string, hal::BackendOptions>> backend_options;
  // Activation precision per backend (by name); a backend not listed uses its default
  // (hal::Capabilities::default_activations). kInvalidArgument for one it does not offer.
  std::vector<std::pair<std::string, ir::DType>> activations;
  ScheduleOptions schedule;
  // Upper bounds of the shape buckets per symbol (by name). A symbol not listed gets the powers
  // of two from 16 below its max, plus its max. Bounds must lie within the symbol's [min, max];
  // the max is always added. Buckets are the cross product over symbols (at most 4096).
  std::vector<std::pair<std::string, std::vector<int64_t>>> bucket_bounds;
  // A smaller max per symbol (by name): the session plans, and reshape accepts, values up to it
  // only. A decode session of a graph whose `seq` goes to 512 takes {"seq", 1}: its memory plan is
  // that of one token. Within the symbol's [min, max]; kInvalidArgument otherwise or for an
  // unknown name. Applied before bucket_bounds (which must then lie within the smaller max).
  std::vector<std::pair<std::string, int64_t>> symbol_max;
};

// Bytes the caller's regions must have (each at least 64-byte aligned; `persistent` aligned to
// hal::persistent_alignment(persistent_bytes): 2 MiB when it is 2 MiB or more, for huge pages).
struct MemoryRequirements {
  uint64_t persistent_bytes = 0;  // packed weights of every executable
  uint64_t activation_bytes = 0;  // the largest bucket plan
  uint64_t scratch_bytes = 0;     // the largest executable scratch (executables run in turn)
  uint64_t device_bytes = 0;      // device memory the backends allocate themselves (reported)
  // Packed weights in the device's cache (not in `persistent`; shared with the device's other
  // sessions of the same graph, so N sessions use these bytes once). Reported.
  uint64_t shared_bytes = 0;
};

// What the regions actually used so far.
struct HighWater {
  uint64_t persistent_bytes = 0;  // bytes the backends' load wrote (the end of the last slice)
  uint64_t activation_bytes = 0;  // the largest bucket plan an execute ran with
  uint64_t scratch_bytes = 0;     // the largest scratch an execute's shapes needed
};

// Where one node runs, and why it is not on a preferred backend.
struct NodePlacement {
  std::string backend;
  int executable = -1;  // index into Session::executables()
  // The refusals of the backends listed before the one it runs on, or the scheduler's cost
  // decision ("" when it runs on the first).
  std::string fallback_reason;
  std::vector<hal::NodePart> parts;  // its parts when split across the backend's groups
};

struct ExecutableInfo {
  std::string backend;
  std::vector<ir::NodeId> nodes;     // run order (dependencies respected); a split node per part
  std::vector<hal::NodePart> parts;  // parallel to nodes
  ir::DType activations = ir::DType::kF32;
  hal::MemoryNeeds needs;
  uint64_t persistent_offset = 0;  // its slice of the persistent region
};

// One executable in a modelled timeline (Session::model).
struct ModelledExecutable {
  int executable = 0;      // index into Session::executables()
  double start_ms = 0;     // executables run one after another
  hal::Estimate estimate;  // nodes parallel to ExecutableInfo::nodes
};

// One shape bucket: for each symbol (graph order) the range of values it covers, and the
// activation plan made at the bucket's largest shapes.
struct Bucket {
  std::vector<int64_t> lo, hi;  // inclusive, per symbol
  ir::MemoryPlan plan;
};

class Session {
 public:
  // Prepare phase. kNotFound for an unknown backend name; kUnsupported when no backend (cpu
  // included) runs a node; kInvalidArgument for bad bucket bounds; kOutOfRange when a bucket's
  // inputs and activations together would need more than 2^48 bytes (256 TiB; below that no size
  // derived from extents can overflow); graph errors from the verifier; kFailedPrecondition for a
  // graph with deferred weights (ir::WeightFill).
  static Result<std::unique_ptr<Session>> prepare(const ir::Graph& graph,
                                                  const SessionOptions& opts);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // ---- reports (valid after prepare) ----
  const ir::Graph& graph() const { return graph_; }
  const MemoryRequirements& requirements() const { return req_; }
  const std::vector<NodePlacement>& placement() const { return placement_; }  // per NodeId
  const std::vector<ExecutableInfo>& executables() const { return exe_info_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  // The graph's symbols with this session's bounds (SessionOptions::symbol_max applied).
  const std::vector<ir::Symbol>& symbols() const { return symbols_; }
  // The backends in use, by name (for their capabilities).
  const hal::Backend* backend(const std::string& name) const;
  Device& device() const { return *device_; }

  // The modelled timeline of one execute at these symbol values (graph order; within bounds):
  // every executable's estimate, one after another. Needs no memory and runs nothing (for
  // `laya-run profile`). kUnsupported naming a backend without a cost model; kOutOfRange for a
  // value outside its symbol's bounds.
  Result<std::vector<ModelledExecutable>> model(std::span<const int64_t> symbol_values) const;

  // Prepare phase (second half). kResourceExhausted naming the region and the bytes needed when
  // one is too small; kInvalidArgument when one is misaligned (null is fine for a 0-byte need).
  // May be called again with other regions (the weights are packed again).
  Status bind_memory(MemoryRegion persistent, MemoryRegion activations, MemoryRegion scratch);

  // The memory of every state value, in Graph::states order (each 64-byte aligned; at least the
  // state's bytes at the extents of each reshape; borrowed until the session is destroyed or
  // rebound). kInvalidArgument for a wrong count, a null or misaligned region;
  // kResourceExhausted naming the state when the session is reshaped already and a region is
  // too small. Allocates nothing. Graphs without states need no call.
  Status bind_states(std::span<const MemoryRegion> states);

  // The owner of the states wrote rows [first_row, first_row + n_rows) of every state ([1, C, W],
  // row c is cell c) in their memory between executes (KvCache::copy_seq): each backend keeping
  // states resident takes them in (hal::Backend::state_written). Nothing to do before the first
  // reshape (backends take the states in there). kInvalidArgument for rows outside the states.
  // Allocates nothing.
  Status state_written(int64_t first_row, int64_t n_rows);

  // Reshape phase: one value per graph symbol, in graph order. kFailedPrecondition before
  // bind_memory; kInvalidArgument for a wrong count; kOutOfRange naming the symbol when a value is
  // outside its bounds (the session's, see symbols()); kResourceExhausted naming the state when a
  // bound state region is smaller than the state at these values. Allocates nothing. The same
  // values as the last successful reshape cost only the bounds check (a decoder's every decode
  // step): nothing it sets depends on anything else.
  Status reshape(std::span<const int64_t> symbol_values);
  // After reshape: the concrete shape of value `v` (size the input / output buffers with it).
  const ir::Extents& extents(ir::ValueId v) const { return bindings_[v].extents; }
  // The bucket the last reshape picked (-1 before any).
  int current_bucket() const { return bucket_; }

  // Execute phase. `inputs[i]` is the buffer of graph.inputs[i], `outputs[i]` of graph.outputs[i]
  // (at the extents above; borrowed for the call). kFailedPrecondition before bind_memory,
  // bind_states (graphs with states) and reshape; kInvalidArgument for wrong counts;
  // kIndexOutOfRange from an embedding id or a kv_write cell; `profile` (nullable) gets per-node
  // times. Allocates nothing.
  Status execute(std::span<const void* const> inputs, std::span<void* const> outputs,
                 const hal::ProfileSink* profile = nullptr);

  HighWater high_water() const { return hw_; }

 private:
  Session() = default;
  Status reshape_backends();
  Status check_states(std::span<const MemoryRegion> regions, bool staged) const;

  struct Exe {
    hal::Backend* backend = nullptr;
    std::unique_ptr<hal::Executable> exe;
    hal::Subgraph sg;
  };

  std::shared_ptr<Device> device_;  // first: outlives the backends and executables below
  ir::Graph graph_;
  std::vector<std::pair<std::string, std::unique_ptr<hal::Backend>>> backends_;
  std::vector<Exe> exes_;
  std::vector<ExecutableInfo> exe_info_;
  std::vector<NodePlacement> placement_;
  std::vector<Bucket> buckets_;
  std::vector<ir::Symbol> symbols_;           // the graph's, with SessionOptions::symbol_max
  std::vector<std::vector<int64_t>> bounds_;  // per symbol: sorted bucket upper bounds
  MemoryRequirements req_;
  HighWater hw_;

  std::vector<hal::TensorBinding> bindings_;  // per ValueId
  std::vector<ir::Extents> staged_;           // per ValueId: reshape computes here first
  MemoryRegion persistent_, activations_, scratch_;
  std::vector<MemoryRegion> states_;  // per Graph::states entry
  bool states_bound_ = false;
  bool bound_ = false;
  bool reshaped_ = false;
  int bucket_ = -1;
  std::array<int64_t, ir::kMaxSymbols> symbol_values_{};
  uint64_t cur_scratch_ = 0;
};

// ---- regions for tools and tests ------------------------------------------------------------

// An owned, aligned allocation (freed on destruction). Move-only.
class RegionBuffer {
 public:
  RegionBuffer() = default;
  ~RegionBuffer();
  RegionBuffer(RegionBuffer&& o) noexcept;
  RegionBuffer& operator=(RegionBuffer&& o) noexcept;

  // `bytes` rounded up to `align` (a power of two >= 64); `huge` adds madvise(MADV_HUGEPAGE).
  // kResourceExhausted when the allocation fails. 0 bytes gives an empty buffer.
  static Result<RegionBuffer> alloc(uint64_t bytes, uint64_t align, bool huge);

  MemoryRegion region() const { return {data_, bytes_}; }
  void* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  uint64_t bytes_ = 0;
};

struct SessionBuffers {
  RegionBuffer persistent;  // 2 MiB aligned, MADV_HUGEPAGE
  RegionBuffer activations;
  RegionBuffer scratch;
};

// Allocates the three regions at `s.requirements()`.
Result<SessionBuffers> session_buffers_alloc(const Session& s);

}  // namespace laya::runtime
