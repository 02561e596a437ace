// Tiny random-weight models with the shapes of the two families the runtime serves, for tests and
// laya-make-tiny (tools/laya-make-tiny). Weights come from a seeded PRNG, so a (config, seed) pair
// always makes the same graph.
//
// Encoder (ModernBERT-shaped), value names used by tests to read weights back:
//   tok_emb [V, D] f32 -> emb_norm (layernorm, no bias)
//   layer l: [attn_norm (layers > 0)] -> l<l>.wqkv [3D, D] -> split q, k, v -> rope NeoX on q, k
//     (theta: rope_theta_global, or rope_theta_local on local layers) -> bidirectional attention
//     with key_mask (local layers: window = local_window, |i - j| <= window) -> l<l>.wo [D, D]
//     -> residual add -> l<l>.mlp_norm -> l<l>.wi [2F, D] -> glu (GeGLU, erf) -> l<l>.wo2 [D, F]
//     -> add
//   final_norm -> output "hidden" [batch, seq, D]
//   Layer l is global when l % global_every == 0, else local. Norm weights: <name>.gamma.
//   Inputs: "ids", "positions", "key_mask" i32 [batch, seq] (kTokenIds, kPositions, kKeyMask).
//   Symbols "batch", "seq".
// Decoder (Llama-shaped, over a KV cache: runtime/kv_cache.h):
//   tok_emb [V, D] -> per layer: l<l>.attn_norm (rmsnorm) -> l<l>.wq [Hq*hd, D], l<l>.wk,
//     l<l>.wv [Hkv*hd, D] -> rope NeoX on q, k (token positions) -> kv_write k, v into the layer's
//     states l<l>.k_cache, l<l>.v_cache kv_dtype [1, cells, Hkv*hd] at the tokens' cells -> causal
//     GQA attention of q over the cache cells (positions and sequence ids) -> l<l>.wo [D, D] ->
//     add -> l<l>.mlp_norm (rmsnorm) -> l<l>.w_gate, l<l>.w_up [F, D] -> silu(gate) * up ->
//     l<l>.w_down [D, F] -> add
//   final_norm (rmsnorm) -> lm_head [V, D] -> output "logits" [batch, seq, V]
//   Inputs: "ids", "positions", "seq_ids", "cells" i32 [batch, seq] (kTokenIds, kPositions,
//   kSeqIds, kCacheCells: each token's id, position, sequence and cache cell), "cell_positions",
//   "cell_seq_ids" i32 [1, cells] (kCellPositions, kCellSeqIds: the cache's per-cell arrays).
//   Symbols "batch", "seq", "cells". A prefill chunk or a decode step of one sequence is batch 1;
//   several sequences go in one batch row (packed, told apart by seq_ids) or one per row.
#pragma once

#include <cstdint>

#include "ir/graph.h"

namespace laya::tools {

struct TinyModelConfig {
  int64_t vocab = 101;
  int64_t d_model = 64;
  int64_t d_ff = 96;  // F: the MLP's intermediate width
  int32_t n_layers = 2;
  int32_t n_heads = 4;     // head_dim = d_model / n_heads
  int32_t n_kv_heads = 2;  // decoder only (the encoder has n_heads K/V heads)
  int64_t max_batch = 2;
  int64_t max_seq = 64;
  int64_t max_cells = 256;  // decoder: the most KV cache cells (the "cells" symbol's max)
  float eps = 1e-5f;
  float rope_theta_global = 160000.0f;  // encoder global layers; the decoder's theta
  float rope_theta_local = 10000.0f;    // encoder local layers
  int32_t global_every = 2;             // encoder: layer l is global when l % global_every == 0
  int32_t local_window = 4;             // encoder local layers: |i - j| <= local_window
  // Dtype of every matmul weight: f32, f16, bf16, q8_0, q4_0 or q4_1 (block types need d_model
  // and d_ff multiples of 32). Embeddings, norms stay f32.
  ir::DType matmul_dtype = ir::DType::kF32;
  ir::DType kv_dtype = ir::DType::kF32;  // decoder: the KV cache states, f32 or f16
};

inline constexpr int64_t kTinyMaxParams = int64_t{1} << 31;

// kInvalidArgument naming the problem when `cfg` cannot make a model: a size <= 0, d_model not an
// even head_dim (at most ir::AttrLimits::head_dim_max) times n_heads, n_heads not a multiple of
// n_kv_heads, a matmul dtype other than the six above, a block dtype with d_model or d_ff not a
// multiple of 32, or more than kTinyMaxParams weight elements (counted with checked arithmetic).
// make_tiny_* run it first.
Status tiny_config_check(const TinyModelConfig& cfg);

Result<ir::Graph> make_tiny_encoder(const TinyModelConfig& cfg, uint64_t seed);
Result<ir::Graph> make_tiny_decoder(const TinyModelConfig& cfg, uint64_t seed);

}  // namespace laya::tools
