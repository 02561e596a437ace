// The hardware abstraction layer: the one interface every backend implements.
//
// A backend is one folder hal/<name>/ with one register function `void <name>_register(Registry&)`,
// switched on by the meson option `hal_<name>`; meson generates register_builtin_backends()
// from the enabled options. There is no central #ifdef list and no static-initializer
// registration. hal/null/ is the skeleton to copy (its README lists the steps).
//
// Lifecycle of one subgraph on one backend (the session drives it; see runtime/session.h):
//   supports(node)   per node, at prepare: ok, or kUnsupported with the reason the scheduler records
//   estimate(sg)     optional, at prepare: modelled time, for the scheduler and modelled profiles
//   prepare(sg)      validate, choose kernels, size memory, compile one shape group per bucket
//                                                                           -> Executable (small, heap)
//   load(exe, mem)   pack weights into caller-owned persistent memory, take them from the device's
//                    WeightCache (shared with other sessions), or upload them to device memory
//                    (still the prepare phase)
//   reshape(exe, v)  new concrete shapes and their bucket: per-shape decisions; allocates nothing
//   execute(exe, c)  run; allocates nothing, validates nothing but indices read from tensors
//
// States: values of kind ir::ValueKind::kState (listed in ir::Graph::states) are tensors the caller
// owns that persist across executes (a KV cache, runtime/kv_cache.h). Only kv_write reads a state
// (as its cache input), and kv_write's output aliases the state's memory: the TensorBindings of the
// state and of that output both point at the caller's memory. The pointer is set before reshape
// and stays the same until the next reshape (the session reshapes again when the caller rebinds
// states), and between executes only the state's owner writes it. So a backend may keep a state
// resident (e.g. the AX8850 card in its device memory): take it in at reshape when the pointer
// changed and keep it current across executes; it must never plan or free that memory. Its copy
// is a cache of the caller's memory, which stays the truth: the backend writes every row its
// kv_write stores through to the caller's memory as well (so the owner, and nodes on other
// backends, read current rows at any time), and when the owner writes rows itself between
// executes (KvCache::copy_seq) it calls state_written, and the backend takes them in again. Only
// one session writes a state through such a backend: another session's writes to the same memory
// would not reach its copy.
//
// Errors: every entry returns Status / Result (ir/status.h); a backend never aborts or throws.
// Threads and packed weights: a backend created with BackendOptions::shared (a runtime::Device,
// runtime/device.h) borrows the device's resources: a thread cap and a WeightCache holding packed
// weights every session of a model shares. The CPU backend's workers come from one oneTBB arena per
// process (hal/cpu/thread_pool.h); no thread type appears here.
// Conformance: tests/hal/test_conformance.cpp runs every op case on every registered backend
// against the reference kernels; docs/adding-a-backend.md walks through a new backend.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace laya::hal {

// Bumped on any change to this header that breaks a backend; checked by Registry::add.
inline constexpr uint32_t kApiVersion = 5;  // 4: Backend::state_written; 5: BackendInfo::workers

// ---- what a backend is -----------------------------------------------------------------------

enum class MemoryKind : uint8_t {
  kHost = 0,    // plain host memory (CPU, the AX8850 simulator, on-chip AX8850 with unified DRAM)
  kDevice = 1,  // memory only the device addresses (an AX8850 PCIe card)
};

inline constexpr int kMaxGroups = 8;

struct Capabilities {
  const char* name = "";         // registry name: "cpu", "null", "ax8850"
  const char* description = "";  // one line for `laya-run backends`
  // Independent compute groups (CPU: its threads; AX8850: the vNPU groups of the mode), and each
  // group's relative throughput (AX8850 big_little: 2, 1).
  uint32_t n_groups = 1;
  uint32_t group_weight[kMaxGroups] = {1, 1, 1, 1, 1, 1, 1, 1};
  // The scheduler may split attention heads and matmul output columns across the groups
  // (Subgraph::parts); a backend without it only ever gets whole nodes.
  bool splits_nodes = false;
  // bit (1 << ir::DType) per weight dtype matmul and embedding accept in some layout; the
  // conformance suite holds a backend to it (a listed dtype must run, an unlisted one be refused).
  uint64_t weight_dtypes = 0;
  // bit (1 << ir::DType) per precision the backend can keep activations in inside an executable
  // (PrepareOptions::activations), and the one it uses unless the session asks otherwise.
  uint64_t activation_dtypes = uint64_t{1} << static_cast<int>(ir::DType::kF32);
  ir::DType default_activations = ir::DType::kF32;
  // bit (1 << MemoryKind) per kind the backend addresses. Without kHost, the values an executable
  // exchanges with the host cross a link (the backend copies them; its estimate counts them).
  uint32_t memory_kinds = 1;
  bool modelled_time = false;  // profile times are modelled by a cost model, not measured
};

// One part of a node the scheduler split across groups, or where a whole node runs.
struct NodePart {
  int64_t begin = 0, end = 0;  // attention heads / matmul output columns [begin, end); 0, 0: whole
  int32_t group = -1;          // group index (< n_groups); -1: the backend's choice
};

// Nodes of one graph placed on one backend, in topological order. Values read from outside the
// list are subgraph inputs; values read after it, or graph outputs, are subgraph outputs. A split
// node appears once per part.
struct Subgraph {
  const ir::Graph* graph = nullptr;  // borrowed; outlives every Executable made from it
  std::vector<ir::NodeId> nodes;
  std::vector<NodePart> parts;  // empty (whole nodes, any group), or one per entry of `nodes`
  // Per NodeId (empty: unknown): 1 when the node runs on this backend, in any executable. A device
  // backend keeps the values its own executables pass to each other in device memory.
  std::vector<uint8_t> same_backend;
};

// Concrete tensor at execute: every value id of the graph has one (weights point at their file
// bytes; activations into the activation region; graph inputs / outputs at caller buffers).
struct TensorBinding {
  void* data = nullptr;  // borrowed for the duration of the call
  ir::Extents extents;
};

struct PrepareOptions {
  // Largest extents each value takes (indexed by ValueId): the shapes at the biggest bucket.
  // Scratch sizes are computed for these. Borrowed for the call.
  const ir::Extents* max_extents = nullptr;
  // The shape buckets reshape() will name: buckets[b][v] = extents of value v at bucket b's
  // largest shapes. An NPU compiles one shape group per bucket.
  std::span<const std::vector<ir::Extents>> buckets;
  // The model file's precompiled executables for this backend (ir::Metadata::executables).
  std::span<const ir::PrecompiledExecutable> precompiled;
  // Precision of activations inside the executable (a capabilities().activation_dtypes bit).
  // Values crossing the executable's boundary are f32 in host memory either way.
  ir::DType activations = ir::DType::kF32;
};

// Alignment of the persistent region and of every slice of it (each executable's, and each block
// a backend reserves inside its slice): 2 MiB, a huge page, for blocks of at least 2 MiB (so
// MADV_HUGEPAGE can back them), 64 bytes otherwise. The session and the backends use this one rule.
inline constexpr uint64_t kHugePageBytes = uint64_t{2} << 20;
inline constexpr uint64_t persistent_alignment(uint64_t block_bytes) {
  return block_bytes >= kHugePageBytes ? kHugePageBytes : 64;
}

// What an executable needs from the caller-owned regions.
struct MemoryNeeds {
  uint64_t persistent_bytes = 0;  // packed weights, constant tables: written by load()
  uint64_t scratch_bytes = 0;  // per execute, at PrepareOptions::max_extents; reused across calls
  uint64_t device_bytes = 0;   // device memory the backend allocates itself at load (kDevice)
  // Packed weights load() takes from the WeightCache (SharedResources::weights) instead of
  // `persistent`: shared with every other executable packing the same weights the same way.
  uint64_t shared_bytes = 0;
};

// ---- resources shared across sessions (owned by runtime::Device) ------------------------------

// What identifies one packed weight. `source` / `source_bytes` are the stored bytes it is packed
// from: the address is the identity, which is sound because every holder of an entry keeps its
// graph, and so those bytes, alive and unchanged (a second mapping of the same file has another
// address and shares nothing). `packing` names everything else the packed bytes depend on (backend,
// kernel target, weight type, shape); `side` holds side data the packing reads (e.g. i8 scales),
// compared byte for byte.
struct PackedWeightKey {
  const void* source = nullptr;
  uint64_t source_bytes = 0;
  std::string packing;
  std::vector<uint8_t> side;
};

// Writes `bytes` packed bytes (the size given to acquire) to `dst`.
using PackFn = void (*)(void* ctx, void* dst);

// Packed weights shared by reference count. Thread-safe: sessions bind concurrently.
class WeightCache {
 public:
  virtual ~WeightCache() = default;
  // The packed bytes for `key` (`bytes` long, aligned to persistent_alignment(bytes)): an entry
  // already there (a hit: nothing is packed), or new memory filled by pack(ctx, dst) once (a miss;
  // a concurrent acquire of the same key waits for that packing, other keys do not). Each success
  // holds one reference until release(). kResourceExhausted when the memory cannot be had;
  // kInvalidArgument when an entry of that key has another size.
  virtual Result<const void*> acquire(const PackedWeightKey& key, uint64_t bytes, PackFn pack,
                                      void* ctx) = 0;
  // Drops one reference to what acquire returned; the memory is freed with the last one.
  virtual void release(const void* packed) = 0;
};

// A device's resources, given to every backend it creates. Borrowed: outlives the backend and
// everything it prepared.
struct SharedResources {
  int max_threads = 0;             // cap on a backend's threads (>= 1); 0: no cap
  WeightCache* weights = nullptr;  // null: load() packs into `persistent` as before
};

// A prepared subgraph. Opaque to the session except for its needs.
class Executable {
 public:
  virtual ~Executable() = default;
  virtual MemoryNeeds needs() const = 0;
  // Scratch bytes the shapes of the last reshape() use (<= needs().scratch_bytes): what the
  // session reports as the scratch high-water mark. Defaults to the prepare-time size.
  virtual uint64_t reshaped_scratch_bytes() const { return needs().scratch_bytes; }
};

// Modelled time of one entry of Subgraph::nodes.
struct NodeEstimate {
  double start_ms = 0;  // from the start of the executable's work (after its overhead)
  double ms = 0;
  int32_t group = 0;
  uint64_t macs = 0;        // multiply-accumulates (padded to the hardware's tiles)
  uint64_t dram_bytes = 0;  // memory traffic
};

// Modelled time of one executable (one NPU call).
struct Estimate {
  double overhead_ms = 0;           // call overhead and link transfers
  double total_ms = 0;              // overhead + the work's makespan
  std::vector<NodeEstimate> nodes;  // parallel to Subgraph::nodes
};

// Per-node timing, if the caller wants it. `modelled` is true for cost-model figures (simulator).
struct ProfileSink {
  void (*on_node)(void* user, ir::NodeId node, double ms, bool modelled) = nullptr;
  void* user = nullptr;
};

// Everything execute reads. Borrowed for the duration of the call.
struct ExecContext {
  const TensorBinding* values = nullptr;  // [graph->values.size()], indexed by ValueId
  void* scratch = nullptr;                // >= needs().scratch_bytes, 64-byte aligned
  const ProfileSink* profile = nullptr;   // nullable
};

// ---- the interface ---------------------------------------------------------------------------

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const Capabilities& capabilities() const = 0;

  // Whether this backend can run node `n` of `g` with its dtypes, shapes and attributes.
  // kUnsupported with a one-line reason otherwise ("matmul: q4_1 weights not supported").
  // `max_extents` (indexed by ValueId; nullable: shape-independent rules only) are the largest
  // shapes the node will see, for limits that depend on a length.
  virtual Status supports(const ir::Graph& g, const ir::Node& n,
                          const ir::Extents* max_extents) const = 0;

  // Modelled time of `sg` at `extents` (indexed by ValueId) with activations in `activations`,
  // without preparing it. kUnsupported when the backend has no cost model (the default).
  virtual Result<Estimate> estimate(const Subgraph& sg, const ir::Extents* extents,
                                    ir::DType activations) const;

  // Validates `sg` (every node must pass supports()), chooses kernels and sizes memory.
  virtual Result<std::unique_ptr<Executable>> prepare(const Subgraph& sg,
                                                      const PrepareOptions& opts) = 0;

  // Writes packed weights into `persistent` (caller-owned, >= needs().persistent_bytes, aligned to
  // persistent_alignment(needs().persistent_bytes)), or uploads them to device memory it allocates
  // (needs().device_bytes). `persistent` must outlive `exe`.
  virtual Status load(Executable& exe, void* persistent, uint64_t bytes) = 0;

  // Concrete shapes for the next executes (`values` as in ExecContext: extents are final, and so
  // are the data pointers of weights, activations and states; graph inputs and outputs come at
  // execute), which fall in PrepareOptions::buckets[bucket]. Each extent is at most the
  // max_extents given to prepare. Allocates nothing.
  virtual Status reshape(Executable& exe, const TensorBinding* values, int bucket) = 0;

  // Runs the subgraph. Allocates nothing; the only data check is on indices read from tensors
  // (kIndexOutOfRange naming the node).
  virtual Status execute(Executable& exe, const ExecContext& ctx) = 0;

  // The owner of state `state` ([1, C, W]; row c is cell c) wrote rows [first_row, first_row +
  // n_rows) in its memory between executes, after a reshape (`values` as there): a backend that
  // keeps the state resident takes them in (see "States" above); one that keeps no state resident
  // (the default) has nothing to do. kInvalidArgument for rows outside the state. Allocates
  // nothing.
  virtual Status state_written(Executable& exe, const TensorBinding* values, ir::ValueId state,
                               int64_t first_row, int64_t n_rows) {
    (void)exe, (void)values, (void)state, (void)first_row, (void)n_rows;
    return Status::ok();
  }
};

// ---- registration ----------------------------------------------------------------------------

struct BackendOptions {
  int n_threads = 0;  // 0: one per core (capped at the cores and at shared->max_threads)
  const SharedResources* shared = nullptr;  // borrowed (see SharedResources); null: none
  // Backend-specific settings, checked by the backend's create (kInvalidArgument naming an
  // unknown key or a bad value): cpu "kernels" (auto | ref | a Highway target),
  // "int8_activations" (f32: i8 weights run the weight-only i8w kernels, the default; i8: the
  // a8w8 kernels, activations quantized per token) and "model_gflops", "model_gbps",
  // "model_op_us" (its cost model); ax8850 "vnpu", "host", "chip" and any field of
  // hal/ax8850/params.h.
  std::vector<std::pair<std::string, std::string>> settings;

  // The last value given for `key`, or `def`.
  std::string get(const std::string& key, const std::string& def) const;
};

// Host threads a backend keeps for the sessions of a device (the CPU backend's oneTBB workers),
// so that a runtime::Device can start them once and hold them without knowing the backend.
class Workers {
 public:
  virtual ~Workers() = default;
  // Threads including the caller (>= 1): the cores this process may use.
  virtual int n_threads() const = 0;
  // Waits up to `timeout_ms` until every worker runs; returns how many do.
  virtual int warm_up(int timeout_ms) = 0;
};

struct BackendInfo {
  uint32_t api_version = kApiVersion;  // the kApiVersion the backend was compiled against
  const char* name = "";
  Result<std::unique_ptr<Backend>> (*create)(const BackendOptions& opts) = nullptr;
  // Optional: the process's workers of this backend, shared by every holder (a device holds them
  // while it lives). Null for a backend that runs on no host threads of its own.
  std::shared_ptr<Workers> (*workers)() = nullptr;
};

// A backend the registry refused, and why (e.g. built against another kApiVersion).
struct RefusedBackend {
  std::string name;
  Status reason;
};

class Registry {
 public:
  // kBackendVersionMismatch if info.api_version != kApiVersion; kInvalidArgument without a name or
  // a create function, or on a duplicate. A refusal is also kept in refused(), so a register
  // function need not pass it on: `laya-run backends` lists it and create() returns it.
  Status add(const BackendInfo& info);
  // nullptr if absent (or refused).
  const BackendInfo* find(const std::string& name) const;
  const std::vector<BackendInfo>& list() const { return backends_; }
  const std::vector<RefusedBackend>& refused() const { return refused_; }
  // kNotFound for an unknown name; a refused backend's refusal.
  Result<std::unique_ptr<Backend>> create(const std::string& name,
                                          const BackendOptions& opts) const;

 private:
  std::vector<BackendInfo> backends_;
  std::vector<RefusedBackend> refused_;
};

// Adds every backend enabled at configure time (generated by meson into backends.gen.cpp).
void register_builtin_backends(Registry& r);

// The registry with the built-in backends, made on first use.
const Registry& builtin_registry();

}  // namespace laya::hal
