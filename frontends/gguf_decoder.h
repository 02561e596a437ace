// The IR graph of a llama-family decoder (GGUF architectures "llama": SmolLM2, TinyLlama, Llama 2 /
// 3; "qwen2": the same with Q/K/V biases) built from an opened GGUF file, with every weight
// referenced in the file's mapping as stored (GraphBuilder::weight_ref: F32, F16, BF16, Q8_0, Q4_0,
// Q4_1, Q4_K, Q5_K, Q6_K; nothing is copied or converted).
//
// The full-sequence (prefill, no KV cache) graph build_decoder_graph makes:
//   inputs   ids        i32 [batch, seq]   token ids (InputRole::kTokenIds)
//            positions  i32 [batch, seq]   RoPE and causal positions (kPositions), 0.. per row
//   output   logits     f32 [batch, seq, vocab]   next-token logits after each prefix
//   x = token_embd[ids]
//   per layer l:  h = rmsnorm(x, attn_norm)
//                 q, k, v = h Wq^T (+bq), h Wk^T (+bk), h Wv^T (+bv)         (GGUF rows as stored)
//                 q, k = rope(q / k, positions, rope_mode_for_arch, freq_base, rotary dims)
//                 x += attention(q, k, v; causal on positions, GQA) Wo^T
//                 h = rmsnorm(x, ffn_norm);  x += (silu(h Wgate^T) * h Wup^T) Wdown^T
//   logits = rmsnorm(x, output_norm) Wout^T     (Wout = token_embd when output.weight is absent)
// Symbols "batch" [1, max_batch] and "seq" [1, max_seq]. Each batch row is its own sequence (its
// own positions; keys of other rows are never visible).
//
// The graph is assembled from the steps below so that a KV-cached variant (prefill chunks and
// decode over cache cells) builds the same layers with its own attention: decoder_qkv gives the
// rotated q, k and v of a layer, the caller attends (here: over the same rows; there: over cache
// cells after writing k, v), and decoder_layer_out finishes the layer.
//
// Errors: kUnsupported naming the architecture (not llama / qwen2), a feature this graph does not
// implement (mixture of experts, RoPE scaling, rope_freqs.weight of Llama 3.1+, key / value
// lengths other than d_model / heads), or a tensor whose type cannot serve its role (naming the
// tensor and the type); kNotFound / kGraphShapeMismatch from check_decoder_tensors; metadata errors
// from decoder_params. A GGUF tensor type the runtime has no dtype for already fails File::open.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontends/gguf.h"
#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace laya::frontends::gguf {

// The decoder as the graph steps need it (decoder_params plus what follows from the tensors).
struct DecoderSpec {
  DecoderParams params;
  ir::RopeMode rope_mode = ir::RopeMode::kGptj;  // rope_mode_for_arch(params.arch)
  int64_t head_dim = 0;                          // d_model / head_count
  int64_t d_ff = 0;                              // feed_forward_length, else ffn_gate's rows
  int64_t vocab = 0;                             // token_embd's rows
  bool tied_output = false;                      // no output.weight: the lm head is token_embd
};
// decoder_params + check_decoder_tensors + the unsupported-feature checks above.
Result<DecoderSpec> decoder_spec(const File& f);

// One layer's weights as graph values; the biases are kNoValue when absent (llama).
struct DecoderLayerWeights {
  ir::ValueId attn_norm = ir::kNoValue;                                 // f32 [d]
  ir::ValueId wq = ir::kNoValue, wk = ir::kNoValue, wv = ir::kNoValue;  // [n_q | n_kv * hd, d]
  ir::ValueId bq = ir::kNoValue, bk = ir::kNoValue, bv = ir::kNoValue;  // f32 [n_q | n_kv * hd]
  ir::ValueId wo = ir::kNoValue;                                        // [d, n_q * hd]
  ir::ValueId ffn_norm = ir::kNoValue;                                  // f32 [d]
  ir::ValueId w_gate = ir::kNoValue, w_up = ir::kNoValue;               // [d_ff, d]
  ir::ValueId w_down = ir::kNoValue;                                    // [d, d_ff]
};
struct DecoderWeights {
  ir::ValueId token_embd = ir::kNoValue;   // [vocab, d]
  ir::ValueId output_norm = ir::kNoValue;  // f32 [d]
  ir::ValueId output = ir::kNoValue;       // [vocab, d]; == token_embd when tied
  std::vector<DecoderLayerWeights> layers;
};

// Adds every decoder weight of `f` to `b` (named as in the file, e.g. "blk.3.attn_q.weight"),
// referencing the mapping; `f` is kept alive by the graph (Graph::keepalive). Checks each tensor's
// type for its role: matmul weights any of the nine dtypes above (block types need rows of whole
// blocks), the embedding table too, norms and biases f32.
Result<DecoderWeights> add_decoder_weights(ir::GraphBuilder& b, std::shared_ptr<const File> f,
                                           const DecoderSpec& spec);

// One layer up to attention: q f32 [B, S, n_q*hd], k, v f32 [B, S, n_kv*hd], q and k rotated at
// `positions` (i32 [B, S]). Node names start with `prefix` ("blk.3.").
struct DecoderQkv {
  ir::ValueId q = ir::kNoValue, k = ir::kNoValue, v = ir::kNoValue;
};
DecoderQkv decoder_qkv(ir::GraphBuilder& b, const DecoderSpec& spec, const DecoderLayerWeights& w,
                       ir::ValueId x, ir::ValueId positions, const std::string& prefix);
// The attention attributes of the spec (heads, kv heads, head_dim, causal, scale 1/sqrt(hd)).
ir::Attrs decoder_attention_attrs(const DecoderSpec& spec);
// The rest of the layer: x + attn Wo^T, then the SwiGLU MLP with its residual. Returns the new x.
ir::ValueId decoder_layer_out(ir::GraphBuilder& b, const DecoderSpec& spec,
                              const DecoderLayerWeights& w, ir::ValueId x, ir::ValueId attn,
                              const std::string& prefix);
// Final norm and lm head: logits f32 [B, S, vocab].
ir::ValueId decoder_logits(ir::GraphBuilder& b, const DecoderSpec& spec, const DecoderWeights& w,
                           ir::ValueId x);
// architecture, chat template and hyperparameters (properties) of the spec into `meta`.
void decoder_metadata(const File& f, const DecoderSpec& spec, ir::Metadata* meta);

struct DecoderGraphOptions {
  int64_t max_batch = 1;
  // Upper bound of the "seq" symbol (the longest prompt); capped at the model's context_length.
  // The activation plan is sized for it: logits alone take max_batch * max_seq * vocab * 4 bytes.
  int64_t max_seq = 512;
};

// The full-sequence graph described at the top. `f` must be non-null; it is kept alive by the
// graph. kInvalidArgument for max_batch / max_seq < 1.
Result<ir::Graph> build_decoder_graph(std::shared_ptr<const File> f,
                                      const DecoderGraphOptions& opts = {});

// The KV-cached graph (runtime/kv_cache.h, runtime/decoder.h): the same layers, with each layer's
// k and v written into cache cells and attention over the cells.
//   inputs   ids, positions, seq_ids, cells   i32 [batch, seq]   each token's id, position,
//                                             sequence id and cache cell (kTokenIds, kPositions,
//                                             kSeqIds, kCacheCells)
//            cell_positions, cell_seq_ids     i32 [1, cells]     the cache's per-cell arrays
//                                             (kCellPositions, kCellSeqIds)
//            logit_rows                       i32 [batch, rows]  the step's rows (indices into
//                                             its batch * seq tokens) whose logits are wanted
//                                             (kLogitRows): the final hidden rows are gathered
//                                             before output_norm and the lm head, so a prefill
//                                             chunk that only needs its last token's logits
//                                             pays one row of the lm head, not seq rows
//   states   blk.<l>.k_cache, blk.<l>.v_cache kv_dtype [1, cells, n_kv * hd]   per layer (f32,
//                                             or f16: kv_write rounds the rows, attention reads
//                                             them as f32; half the cache bytes)
//   output   logits  f32 [batch, rows, vocab]
//   per layer: decoder_qkv -> kv_write(k_cache, k, cells), kv_write(v_cache, v, cells) ->
//   attention(q, k_cache, v_cache; q at positions / seq_ids, keys at the cells' positions /
//   sequence ids, causal, GQA) -> decoder_layer_out.
// Symbols "batch" [1, max_batch], "seq" [1, max_seq] (the longest prefill chunk; decode is 1),
// "cells" [1, max_cells] (both capped at context_length) and "rows" [1, max_seq] (capped alike). A session plans prefill chunks and
// decode as separate buckets of this one graph (runtime::decoder_session_options).
struct CachedDecoderGraphOptions {
  int64_t max_batch = 1;
  int64_t max_seq = 128;     // the prefill chunk
  int64_t max_cells = 4096;  // the largest cache a session may bind
  // The states: kF16 (the default, as llama.cpp keeps K / V: half the bytes, and decode's attention
  // reads half) or kF32 (what the parity tests against f32 references hold).
  ir::DType kv_dtype = ir::DType::kF16;
};
// kInvalidArgument for a bound < 1 or another kv_dtype; otherwise as build_decoder_graph.
Result<ir::Graph> build_cached_decoder_graph(std::shared_ptr<const File> f,
                                             const CachedDecoderGraphOptions& opts = {});

}  // namespace laya::frontends::gguf
