// Importers: Hugging Face style checkpoint directories -> IR graphs (laya-convert writes them to
// .laya files; tests run them straight away).
//
// Supported directories (detect_checkpoint tells them apart):
//  - Laya decision checkpoints (upstream `laya.load` layout): rl_agent_config.json,
//    model.safetensors (encoder + decision head), encoder/config.json (ModernBERT / mmBERT),
//    tokenizer/ (tokenizer.json, tokenizer_config.json, special_tokens_map.json?).
//  - ModernBERT / mmBERT encoders: config.json (model_type "modernbert"), model.safetensors (or
//    shards + model.safetensors.index.json), tokenizer files. Output: last_hidden_state.
//  - BERT encoders (e.g. sentence-transformers/all-MiniLM-L6-v2): config.json (model_type "bert"),
//    safetensors, tokenizer files. Output: mean-pooled embeddings (before any normalization).
// Reading is strict: every tensor the architecture defines must be present with its exact shape,
// and none may be left over (BERT's pooler and position_ids buffer are known and ignored); errors
// name the file, the tensor and both shapes. Nothing is copied into the heap on the way: see
// WeightFormat.
//
// ---- The Laya decision graph (the contract with the decision path, runtime/decisions) ---------------
//
// Question rows of one request run PACKED: the R rows (one per question, per state for batches)
// are concatenated into one sequence of T tokens; attention only sees keys of the same row
// (attention's q_seq / k_seq inputs) and the sliding window and RoPE use per-token positions, so
// every matmul runs on T rows and nothing is computed on padding. The decision head's last layer
// runs its attention, out_proj and feed-forward only on the rows the outputs read (the markers
// and each row's first token).
//
// Symbols: `tokens` T in [1, max_tokens] (default max_len * max_rows), `rows` R in [1, max_rows]
// (default 64), `options` K in [2, max_options] (default 512; upstream pads the marker axis to at
// least 2).
//
// Inputs (names fixed):
//   ids          i32 [1, T]  token ids, rows back to back                        (role token_ids)
//   pos          i32 [1, T]  position of the token within its row (0 at its [CLS]) (positions)
//   seq          i32 [1, T]  row index of the token (0..R-1, non-decreasing)
//   qtype        i32 [1, T]  question type of the token's row: 0 choice, 1 score, 2 noul
//   row_start    i32 [R]     index in [0, T) of each row's first token (its [CLS])
//   markers      i32 [R, K]  index in [0, T) of each option's [MASK]; empty slots: any valid index
//   marker_valid i32 [R, K]  1 for a real option, 0 for an empty slot
// Outputs:
//   logits       f32 [R, K]  option logits; empty slots exactly -1e4, as upstream
//   act_logits   f32 [R, 2]  the act head (len(act_costs) + 1 columns; 2 for every shipped model)
//   embeddings   f32 [R, D]  mean of each row's final encoder states (upstream's shortlist
//                            embedding, embed_fn_from_agent), before any normalization
// Encoder-only graphs: ModernBERT / mmBERT take ids / pos / seq (symbol `tokens` only) and output
// `last_hidden_state` f32 [1, T, D]; BERT takes ids / pos / seq / row_start (symbols `tokens`,
// `rows`) and `token_type` i32 [1, T] when the checkpoint has token-type embeddings, and outputs
// `embeddings` f32 [R, D]. Default `tokens` bound: min(max_position_embeddings * max_rows, 32768).
//
// Metadata: architecture "laya" / "modernbert" / "bert"; tokenizer_kind "hf-tokenizer-json" with
// tokenizer.json embedded byte for byte; properties "tokenizer.<role>_id" and
// "tokenizer.<role>_token" for role in cls, sep, pad, mask, unk (from tokenizer_config.json /
// special_tokens_map.json / the tokenizer's own tables, never from the encoder config); Laya: the
// decision config (max_len, head_max_len, head_layers, temperature[3] and temperature_by_options
// in file order as the file has them, unclamped: a value that is not a number is stored as NaN,
// which upstream's clamp turns into 1.0; act_costs values in file order) and properties
// "laya.option_layout", "laya.encoder"; "buckets.<symbol>": suggested session bucket bounds;
// "encoder.*": hyperparameters; provenance (source directory, converter version, sha256 of every
// file read).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace laya::frontends {

// How weights are stored in the imported graph.
//  kSource: as in the checkpoint (F32 / F16 / BF16), REFERENCED from the memory-mapped safetensors
//           file (ir::GraphBuilder::weight_ref, zero copy) so the graph runs at once; only the 1-D
//           norm / bias vectors are converted to f32 in memory (kilobytes).
//  kF32, kF16, kBF16, kInt8: converted, as DEFERRED weights (ir::WeightFill): model_write streams
//           each tensor from the mapping through a small buffer and releases the source pages, so
//           a conversion needs memory for neither the checkpoint nor the output. Vectors are f32.
//           kBF16: matrices bf16; embedding tables keep the source's 16 bits (f16 is 3 mantissa
//           bits closer to the checkpoint at the same size; a table is gathered, not multiplied),
//           bf16 from an f32 source.
//           kInt8: matmul weights symmetric int8 with one f32 scale per output row (amax / 127);
//           the CPU backend multiplies them with f32 activations (weight-only, kernels' i8w;
//           docs/precision.md), so no answer depends on which rows share a batch; embedding
//           tables keep 16 bits (the source's f16 / bf16, else bf16).
// A format per tensor (a mixed-precision plan) comes from ImportOptions::overrides.
enum class WeightFormat : uint8_t { kSource, kF32, kF16, kBF16, kInt8 };
const char* weight_format_name(WeightFormat f);  // "source", "f32", "f16", "bf16", "int8"
Result<WeightFormat> weight_format_from_name(const std::string& name);

// A tensor-name pattern ('*' matches any run of characters, dots included) and the format of the
// tensors it matches, e.g. {"encoder.layers.*.mlp.Wo.weight", kF16}.
struct FormatOverride {
  std::string pattern;
  WeightFormat format = WeightFormat::kSource;
};

// "PATTERN=DTYPE" (DTYPE one of weight_format_name's), as laya-convert's --override takes it.
Result<FormatOverride> parse_format_override(const std::string& spec);

// The tensors of the Laya decision head (type_emb, head layers, scorer, act head): patterns for
// ImportOptions::overrides.
extern const char* const kLayaHeadPatterns[4];

struct ImportOptions {
  WeightFormat format = WeightFormat::kSource;
  // Per-tensor formats, the first matching pattern winning over `format` (a conversion format
  // with kSource as `format` is refused: a graph is either all in place or all converted).
  std::vector<FormatOverride> overrides;
  int64_t max_rows = 64;      // bound of `rows`
  int64_t max_options = 512;  // bound of `options` (Laya)
  int64_t max_tokens = 0;     // bound of `tokens`; 0: max_len * max_rows
  bool hash_sources = true;   // sha256 of every source file into the provenance
  std::string converter_version = "laya-frontends 0.1.0";
};

enum class CheckpointKind : uint8_t { kLaya, kModernBert, kBert };
const char* checkpoint_kind_name(CheckpointKind k);  // "laya", "modernbert", "bert"

// Laya when rl_agent_config.json exists, else config.json's model_type. kInvalidArgument naming
// the directory when it is none of these.
Result<CheckpointKind> detect_checkpoint(const std::string& dir);

Result<ir::Graph> import_laya(const std::string& dir, const ImportOptions& opts);
Result<ir::Graph> import_modernbert(const std::string& dir, const ImportOptions& opts);
Result<ir::Graph> import_bert(const std::string& dir, const ImportOptions& opts);
// detect_checkpoint, then the matching importer.
Result<ir::Graph> import_checkpoint(const std::string& dir, const ImportOptions& opts);

}  // namespace laya::frontends
