// The AX8850 op support table: which unit runs each IR op, what it accepts, and the one-line
// reason for every refusal (the scheduler records it and runs the node on the CPU instead).
//
// Rules (docs/ax8850.md has the same table for readers):
//  - Weights: s8 (symmetric, per output channel or per tensor), bf16 or f16, as Pulsar2 takes them
//    (published). f32 weights and GGUF block weights (q8_0 / q4_0 / q4_1 / q5_0 / q5_1) are refused: convert
//    them at model conversion. Small parameter vectors (norm gamma / beta, biases) may be f32:
//    the compiler folds them into the op.
//  - Activations are f32 in the IR and bf16 (or the reference semantics, PrepareOptions) on the
//    device; index inputs (ids, positions, masks, sequence ids) are i32.
//  - Lengths: attention keeps one KV head's keys and values (bf16) plus one tile of f32 score rows
//    in a group's OCM, so 2 * T * head_dim * 2 + tile_m * T * 4 bytes must fit in ocm_bytes; past
//    that length the node falls back (a modelled limit: the OCM size is not published, see
//    params.h). head_dim must be a multiple of tile_k and at most 256.
//  - kv_write (SDMA) writes rows into a KV cache (a state value, f32 or f16) where it lives:
//    shared DRAM on the chip, device memory on a PCIe card (hal.h "States"); attention reads the
//    cache in place. Caches of more than 2^31 - 1 cells are refused (cells are i32).
//  - Everything else (padding to the MAC tile, OCM spills of large matrices) costs time in the cost
//    model but is not a refusal.
#pragma once

#include "hal/ax8850/params.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace laya::hal::ax8850 {

// Where an op's time goes on the device.
enum class Unit : uint8_t {
  kConv,  // MAC arrays: matmul, the two products of attention
  kTeng,  // vector unit: norms, activations, softmax, rope, elementwise, layout
  kSdma,  // DMA only: embedding gather, KV-cache writes
};
const char* unit_name(Unit u);  // "conv", "teng", "sdma"

struct OpRule {
  Unit unit = Unit::kTeng;
  const char* accepts = "";  // one line for readers: dtypes and limits
};
// Precondition: op < ir::Op::kCount.
const OpRule& op_rule(ir::Op op);

// Whether the simulated NPU runs node `n` of `g`: ok, or kUnsupported with a one-line reason
// naming the node ("matmul 'l0.q': f32 weights: ..."). `max_extents` (indexed by ValueId,
// nullable) are the largest shapes the node will see; without them only shape-independent rules
// are checked.
Status op_supported(const Params& p, const ir::Graph& g, const ir::Node& n,
                    const ir::Extents* max_extents);

// The OCM bytes attention needs per group at `keys` keys (the length rule above).
uint64_t attention_ocm_bytes(const Params& p, int64_t keys, int32_t head_dim);

}  // namespace laya::hal::ax8850
