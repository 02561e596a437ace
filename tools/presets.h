// Random-weight models at the real configurations of the four workloads the AX8850 cost model is
// validated on (docs/ax8850.md), for `laya-make-tiny --preset` and the cost-model fit:
//
//   laya-english       ModernBERT-large encoder + Laya head: 28 layers, d 1024, 16 heads x 64,
//                      GeGLU 2624, vocab 50368, max_len 512        ~0.42 G parameters
//   laya-multilingual  mmBERT-base encoder + Laya head: 22 layers, d 768, 12 heads x 64,
//                      GeGLU 1152, vocab 256000, max_len 1024      ~0.32 G parameters
//   qwen2.5-0.5b       24 layers, d 896, 14 / 2 heads x 64, SwiGLU 4864, vocab 151936, tied
//                      embeddings, q/k/v biases, theta 1e6          ~0.49 G parameters
//   tinyllama-1.1b     22 layers, d 2048, 32 / 4 heads x 64, SwiGLU 5632, vocab 32000
//                                                                   ~1.1 G parameters
//
// Storage: every matrix and embedding table is s8 with one f32 scale per row (the NPU's w8
// format; ~1 byte per parameter), norms and biases f32. Weights are uniform with unit output
// variance for unit-variance input, from a seeded PRNG: a (preset, overrides, seed) triple always
// makes the same bytes.
//
// Laya graphs follow the graph contract (specs/laya-graph-contract.md) as far as the IR's ops go:
// inputs ids / pos / seq / qtype [1, tokens], packed rows (attention sees keys of the token's own
// row, windows over per-row positions), encoder, final norm, type embedding,
// the two pre-norm head layers (LayerNorm with bias, ReLU FFN 4d, biases) -> output "head_hidden"
// [1, tokens, D]. The marker gather, scorer and act head need ops the importer adds (a row gather
// over activations); they run on R * K rows and are negligible next to the encoder.
// Decoder presets are Llama-shaped decoders at the real configuration, sequences up to 2048 tokens
// (the context ax-llm compiles them for; the AX8850's attention length rule allows it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace laya::tools {

struct PresetInfo {
  const char* name;
  const char* description;
};
const std::vector<PresetInfo>& preset_list();

// Reduced variants of the same structure (tests): any field > 0 replaces the preset's value.
struct PresetOverrides {
  int64_t vocab = 0, d_model = 0, d_ff = 0, max_seq = 0;
  int32_t layers = 0, heads = 0, kv_heads = 0;
};

enum class WeightFill : uint8_t {
  kRandom,     // seeded random bytes (what laya-make-tiny writes)
  kShapeOnly,  // every weight reads one shared zero mapping: no memory, for cost modelling only
};

// kNotFound for an unknown name (the message lists the presets); kInvalidArgument for overrides
// that break the structure (d_model not a multiple of 64, ...).
Result<ir::Graph> make_preset(const std::string& name, const PresetOverrides& o, uint64_t seed,
                              WeightFill fill);

}  // namespace laya::tools
