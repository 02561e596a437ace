// Tiny random-weight models with the shapes of the two families the runtime serves, for tests and
// (later) a generator tool. Weights come from a seeded PRNG, so a (config, seed) pair always makes
// the same graph.
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
// Decoder (Llama-shaped):
//   tok_emb [V, D] -> per layer: l<l>.attn_norm (rmsnorm) -> l<l>.wq [Hq*hd, D], l<l>.wk,
//     l<l>.wv [Hkv*hd, D] -> rope NeoX on q, k -> causal GQA attention -> l<l>.wo [D, D] -> add ->
//     l<l>.mlp_norm (rmsnorm) -> l<l>.w_gate, l<l>.w_up [F, D] -> silu(gate) * up ->
//     l<l>.w_down [D, F] -> add
//   final_norm (rmsnorm) -> lm_head [V, D] -> output "logits" [batch, seq, V]
// Inputs (both): "ids" i32 [batch, seq] (kTokenIds), "positions" i32 [batch, seq] (kPositions);
// the encoder also "key_mask" i32 [batch, seq] (kKeyMask). Symbols "batch" and "seq".
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
  float eps = 1e-5f;
  float rope_theta_global = 160000.0f;  // encoder global layers; the decoder's theta
  float rope_theta_local = 10000.0f;    // encoder local layers
  int32_t global_every = 2;             // encoder: layer l is global when l % global_every == 0
  int32_t local_window = 4;             // encoder local layers: |i - j| <= local_window
  // Dtype of every matmul weight: f32, f16, bf16, q8_0, q4_0 or q4_1 (block types need d_model
  // and d_ff multiples of 32). Embeddings, norms stay f32.
  ir::DType matmul_dtype = ir::DType::kF32;
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
