// The hardware abstraction layer: the one interface every backend implements.
//
// A backend is one folder hal/<name>/ with one register function `void <name>_register(Registry&)`,
// switched on by the meson option `hal_<name>`; meson generates register_builtin_backends()
// from the enabled options. There is no central #ifdef list and no static-initializer
// registration. hal/null/ is the skeleton to copy (its README lists the steps).
//
// Lifecycle of one subgraph on one backend (the session drives it; see runtime/session.h):
//   supports(node)   per node, at prepare: ok, or kUnsupported with the reason the scheduler records
//   prepare(sg)      validate, choose kernels, size memory                  -> Executable (small, heap)
//   load(exe, mem)   pack weights into caller-owned persistent memory (still the prepare phase)
//   reshape(exe, v)  new concrete shapes: per-shape decisions; allocates nothing
//   execute(exe, c)  run; allocates nothing, validates nothing but indices read from tensors
//
// Errors: every entry returns Status / Result (ir/status.h); a backend never aborts or throws.
// Threads: a backend owns its workers (the CPU backend a oneTBB arena); none appear here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace laya::hal {

// Bumped on any change to this header that breaks a backend; checked by Registry::add.
inline constexpr uint32_t kApiVersion = 1;

// ---- what a backend is -----------------------------------------------------------------------

enum class MemoryKind : uint8_t {
  kHost = 0,    // plain host memory (CPU, the AX8850 simulator, on-chip AX8850 with unified DRAM)
  kDevice = 1,  // memory only the device addresses (an AX8850 PCIe card)
};

struct Capabilities {
  const char* name = "";         // registry name: "cpu", "null", "ax8850"
  const char* description = "";  // one line for `laya-run backends`
  uint32_t n_groups = 1;         // independent compute groups: CPU threads, AX8850 NPU groups
  uint64_t weight_dtypes = 0;    // bit (1 << ir::DType) per weight dtype accepted by matmul
  uint32_t memory_kinds = 1;     // bit (1 << MemoryKind) per kind the backend addresses
  bool modelled_time = false;    // profile times are modelled by a cost model, not measured
};

// Nodes of one graph placed on one backend, in topological order. Values read from outside the
// list are subgraph inputs; values read after it, or graph outputs, are subgraph outputs.
struct Subgraph {
  const ir::Graph* graph = nullptr;  // borrowed; outlives every Executable made from it
  std::vector<ir::NodeId> nodes;
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
  virtual Status supports(const ir::Graph& g, const ir::Node& n) const = 0;

  // Validates `sg` (every node must pass supports()), chooses kernels and sizes memory.
  virtual Result<std::unique_ptr<Executable>> prepare(const Subgraph& sg,
                                                      const PrepareOptions& opts) = 0;

  // Writes packed weights into `persistent` (caller-owned, >= needs().persistent_bytes, aligned to
  // persistent_alignment(needs().persistent_bytes)). It must outlive `exe`.
  virtual Status load(Executable& exe, void* persistent, uint64_t bytes) = 0;

  // Concrete shapes for the next executes (`values` as in ExecContext; only extents are read).
  // Each extent is at most the max_extents given to prepare. Allocates nothing.
  virtual Status reshape(Executable& exe, const TensorBinding* values) = 0;

  // Runs the subgraph. Allocates nothing; the only data check is on indices read from tensors
  // (kIndexOutOfRange naming the node).
  virtual Status execute(Executable& exe, const ExecContext& ctx) = 0;
};

// ---- registration ----------------------------------------------------------------------------

struct BackendOptions {
  int n_threads = 0;             // 0: one per core
  std::string kernels = "auto";  // CPU: "auto" (best Highway target), "ref", or a target ("AVX2")
};

struct BackendInfo {
  uint32_t api_version = kApiVersion;  // the kApiVersion the backend was compiled against
  const char* name = "";
  Result<std::unique_ptr<Backend>> (*create)(const BackendOptions& opts) = nullptr;
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
