// The AX8850 cost model: deterministic *modelled* time of every op, NPU call and group.
//
// One op (or one part of a split op) on a vNPU group of `rg` resource groups:
//   modelled_ms = op_overhead + max(compute, dma)           (the SDMA units overlap the MACs)
//   compute     = padded MACs / (rg * MAC rate per group)   matmul, attention's two products
//               + vector elements / (rg * vector rate)      norms, activations, softmax scores, ...
//   dma         = DRAM bytes / (sustained bandwidth * share of it)
//   DRAM bytes  = weights + the activations that are not resident in OCM + OCM spills
// An activation stays in OCM between two ops of one call when the consumer runs on the group that
// produced it and it fits in half the group's OCM (the other half double-buffers); otherwise it
// is written to DRAM and read back. A matmul whose weights and input both exceed that space
// re-reads the smaller of them once per tile of the other (the spill bytes).
//
// One NPU call = call overhead (chip: call_overhead; PCIe card: + round trip + the inputs and
// outputs over the link) + the makespan of its steps on the groups of the vNPU mode. Steps run in
// the given order; a step waits for its inputs and its group; a step without a group takes the
// group that is free first. Parts of a split node run on their own groups, start together and
// merge through DRAM with a group barrier (group_sync_us). Concurrent steps share the DRAM
// bandwidth equally (a step's share is fixed when it starts).
//
// Activation bytes: 2 (bf16) in both activation modes; i32 index inputs 4. A KV cache (a state,
// hal.h "States") stays in DRAM in its own dtype (f32 4, f16 2): kv_write (SDMA) moves only the
// rows it writes (read as bf16, stored in the cache's dtype), attention reads the cache; on a PCIe
// card the cache lives in device memory and the rows kv_write stores also go through to the
// host's copy (link bytes of every call).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "hal/ax8850/op_support.h"
#include "hal/ax8850/params.h"
#include "ir/graph.h"

namespace laya::hal::ax8850 {

// The part of a node one group runs: attention heads [begin, end) (whole GQA groups), matmul
// output columns [begin, end); begin == end == 0 is the whole node.
struct Part {
  int64_t begin = 0;
  int64_t end = 0;
  bool whole() const { return begin == 0 && end == 0; }
};

struct OpCost {
  Unit unit = Unit::kTeng;
  double overhead_ms = 0;
  double compute_ms = 0;
  double dma_ms = 0;
  double modelled_ms = 0;     // overhead + max(compute, dma)
  uint64_t macs = 0;          // padded to the MAC tile
  uint64_t vector_elems = 0;  // elements through the vector unit
  uint64_t dram_bytes = 0;    // weights, non-resident activations and spills
  uint64_t spill_bytes = 0;   // the OCM-overflow part of dram_bytes
};

// How one op runs inside its call.
struct OpContext {
  int resource_groups = 3;       // size of the vNPU group it runs on
  double bw_share = 1.0;         // its share of the DRAM bandwidth (concurrent groups split it)
  bool bf16 = true;              // w8a16 (true) or the reference mode (i8 weights at the int8 rate)
  uint32_t resident_inputs = 0;  // bit i: input slot i is already in this group's OCM
  bool output_resident = false;  // the output stays in OCM (never written to DRAM)
  uint64_t extra_dram_bytes = 0;  // inputs another group kept in its OCM: written back, read here
};

// Cost of `part` of node `n` at extents `ext` (indexed by ValueId).
OpCost npu_op_cost(const Params& p, const ir::Graph& g, const ir::Node& n, const ir::Extents* ext,
                   Part part, const OpContext& ctx);

// Cost of node `n` on the host CPU (fallback): FLOPs / host_gflops + bytes / host_gbs + host_op.
double host_op_ms(const Params& p, const ir::Graph& g, const ir::Node& n, const ir::Extents* ext);

// ---- one NPU call ----

struct Step {
  ir::NodeId node = 0;
  Part part;
  int group = -1;  // vNPU group index; -1: the one free first
};

struct StepTiming {
  double start_ms = 0;  // from the start of the call's NPU work (after the overhead)
  int group = 0;
  OpCost cost;
};

struct CallTiming {
  double overhead_ms = 0;  // launch, and on a PCIe card the round trip and the link transfers
  double makespan_ms = 0;  // NPU work
  double total_ms = 0;     // overhead + makespan
  uint64_t h2d_bytes = 0;  // inputs the host sends (PCIe card; 0 on the chip)
  uint64_t d2h_bytes = 0;  // outputs it gets back
  std::vector<StepTiming> steps;      // parallel to the steps given
  std::vector<double> group_busy_ms;  // per vNPU group
};

// Models one call of `steps` (nodes of `g`, topological order) at extents `ext`. `on_device`
// (per NodeId; empty = only the call's own nodes) marks every node placed on this device, in any
// call: on a PCIe card a value crosses the link only between the device and the host (a graph
// input or output, or a host node), never between two calls of the device, and weights and
// states never cross it. kInvalidArgument for a group index outside the mode's groups or a part
// outside its node.
Result<CallTiming> model_call(const Params& p, const ir::Graph& g, std::span<const Step> steps,
                              const ir::Extents* ext, bool bf16,
                              std::span<const uint8_t> on_device = {});

// Bytes of value `v` of `g` on the device at extents `e`: 2 per activation element, 4 per i32; a
// state's memory (the state and its kv_write output, a KV cache) in the state's dtype (f32 4,
// f16 2).
uint64_t device_bytes(const ir::Graph& g, ir::ValueId v, const ir::Extents& e);

// Bytes kv_write node `n` stores into its cache at `ext`: its rows in the state's dtype.
uint64_t kv_write_bytes(const ir::Graph& g, const ir::Node& n, const ir::Extents* ext);

}  // namespace laya::hal::ax8850
