// The scheduler: which backend runs each node, how the nodes of each backend are grouped into
// executables (one NPU call each), and which nodes are split across a backend's groups. It knows
// no backend: it asks supports() and, where a backend has a cost model, estimate().
//
//  1. Placement: the first backend (preference order) whose supports() accepts the node at the
//     largest shapes, with every refusal before it recorded.
//  2. Executables: nodes are emitted in a dependency order that keeps one backend as long as any
//     node of it is ready (not only runs of consecutive nodes), so independent work around a
//     fallback node joins the same call. When the current backend has nothing ready, the fallback
//     goes first (its executables cost no call), then the backend of the earliest ready node.
//     Calls::kPerLayer instead closes a call at every layer boundary and runs the nodes before the
//     first layer on the host: the partition of Axera's ax-llm (one call per layer plus a "post"
//     call), kept for comparisons.
//  3. Cost placement: an executable of a modelled backend whose estimate is worse than the
//     fallback's estimate for the same nodes moves to the fallback (reason "cost: ..."), and step
//     2 runs again, until nothing moves.
//  4. Splits: on a backend that splits nodes and has several groups, an attention node is split
//     by heads (whole GQA groups; 16 heads on 3 equal groups -> 6 / 5 / 5) and a matmul by output
//     columns (multiples of 16), in proportion to the groups' weights, when the estimate of the
//     split node (slowest part plus the merge) beats the whole node on one group. The parts write
//     disjoint slices of one output tensor: the merge is in place.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "hal/hal.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace laya::runtime {

struct ScheduleOptions {
  enum class Calls : uint8_t {
    kFused,     // as few calls as the dependencies allow
    kPerLayer,  // the vendor runtime's partition (comparisons only)
  };
  Calls calls = Calls::kFused;
  bool split = true;           // step 4
  bool cost_placement = true;  // step 3
};

struct ScheduleBackend {
  std::string name;
  hal::Backend* backend = nullptr;  // borrowed for the call
  ir::DType activations = ir::DType::kF32;
};

struct Schedule {
  struct Exe {
    size_t backend = 0;  // index into the backends given
    hal::Subgraph sg;
  };
  std::vector<size_t> backend_of;                 // per NodeId
  std::vector<std::string> reason;                // per NodeId: refusals / the cost decision
  std::vector<std::vector<hal::NodePart>> parts;  // per NodeId: its parts (empty: whole)
  std::vector<Exe> executables;                   // in run order
};

// `backends` in preference order; `fallback` indexes the host backend (the cpu) that cost
// decisions move nodes to. `max_extents` (indexed by ValueId) are the shapes at the largest
// bucket. kUnsupported when every backend refuses a node (naming it and every refusal).
Result<Schedule> schedule(const ir::Graph& g, std::span<const ScheduleBackend> backends,
                          size_t fallback, const ir::Extents* max_extents,
                          const ScheduleOptions& opts);

// The transformer layer a node belongs to, from its name: "l3.qkv", "layers.3.attn",
// "blk.3.ffn" -> 3; -1 for a node of no layer ("embed", "final_norm", "lm_head").
int layer_of(const std::string& node_name);

// `units` split over groups in proportion to `weights` (largest remainders to the lowest groups):
// 16 over {1, 1, 1} -> {6, 5, 5}; 16 over {2, 1} -> {11, 5}.
std::vector<int64_t> split_units(int64_t units, std::span<const uint32_t> weights);

}  // namespace laya::runtime
