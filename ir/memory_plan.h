// The activation memory planner: liveness -> offsets in one arena.
//
// Every activation that is not a graph output (those live in caller buffers) nor a kv_write output
// (the caller's state memory, ir::aliased_state) gets a byte range in one activation region. A
// value is live from the step that produces it to the last step that reads it, in the order the
// nodes run (the scheduler's, which groups each backend's work and so is not the graph's order);
// two values whose live ranges intersect never share bytes. Placement is greedy by size
// (largest first, each at the lowest aligned offset that fits between the already-placed buffers it
// is live with), as TFLM's greedy planner does. Plans are made per shape bucket (the runtime calls
// this once per bucket with the bucket's largest shapes) at prepare, never at execute.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace laya::ir {

inline constexpr uint64_t kNotPlanned = UINT64_MAX;

struct MemoryPlan {
  uint64_t arena_bytes = 0;      // the peak: bytes of activation region this plan needs
  uint64_t unshared_bytes = 0;   // what the same buffers would need without reuse (for reports)
  std::vector<uint64_t> offset;  // per ValueId: byte offset in the arena, or kNotPlanned
  std::vector<uint64_t> size;    // per ValueId: bytes reserved (0 when not planned)
  std::vector<NodeId> first;     // per ValueId: the step producing it (planned values only)
  std::vector<NodeId> last;      // per ValueId: the last step reading it (planned values only)
};

// `bytes[v]` is the size of value v at the planned shapes (values.size() entries; entries for
// non-activations are ignored). `align` is a power of two (offsets and sizes are multiples of it).
// `run_order` lists the nodes as they run (every node at least once; a node split into parts may
// appear once per part): steps are positions in it. Empty: graph order (step = NodeId).
MemoryPlan memory_plan(const Graph& g, const std::vector<uint64_t>& bytes, uint64_t align = 64,
                       std::span<const NodeId> run_order = {});

// The plan's invariants: every planned buffer fits in the arena, is aligned, holds bytes[v], and
// overlaps no buffer whose live range intersects its own. kInternal naming the pair otherwise.
Status memory_plan_check(const Graph& g, const MemoryPlan& p, const std::vector<uint64_t>& bytes,
                         uint64_t align = 64);

}  // namespace laya::ir
