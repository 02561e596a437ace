// Encoder graphs on packed rows (shared by the Laya importer and the plain encoder importers).
// Internal to frontends/.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontends/checkpoint.h"
#include "ir/builder.h"

namespace laya::frontends {

// What a ModernBERT / mmBERT config.json says (transformers 5 semantics; see
// read_modernbert_config for every key read and its default).
struct ModernBertConfig {
  int64_t vocab = 0, hidden = 0, layers = 0, heads = 0, intermediate = 0;
  int64_t max_positions = 0;
  float norm_eps = 1e-5f;
  bool norm_bias = false, attention_bias = false, mlp_bias = false;
  std::vector<bool> full_attention;  // per layer: true = global, false = sliding window
  float theta_full = 160000.0f, theta_sliding = 10000.0f;
  int32_t window = 64;  // sliding layers keep keys with |i - j| <= window (local_attention / 2)
  ir::ActKind act = ir::ActKind::kGeluErf;
};

// Reads `path` (a ModernBERT config.json). Keys: hidden_size, num_hidden_layers,
// num_attention_heads, intermediate_size, vocab_size (required); norm_eps (1e-5), norm_bias,
// attention_bias, mlp_bias (false), hidden_activation ("gelu" = erf; "gelu_pytorch_tanh" /
// "gelu_new" = tanh), max_position_embeddings (8192), local_attention (128), layer_types
// (authoritative), else global_attn_every_n_layers (3: layer i is global when i % n == 0),
// rope_parameters.{full_attention,sliding_attention}.rope_theta, else global_rope_theta /
// local_rope_theta (transformers 4), else 160000 / 10000; rope_type must be "default" and
// head_dim (if given) hidden / heads. Anything else is an error naming the key.
Result<ModernBertConfig> read_modernbert_config(const std::string& path);

// The packed-row inputs every encoder graph has.
struct PackedInputs {
  int tokens = 0, rows = 0;  // symbol indices
  ir::ValueId ids = ir::kNoValue, pos = ir::kNoValue, seq = ir::kNoValue;
  ir::ValueId row_start = ir::kNoValue;
};
// Declares `tokens` [1, max_tokens] and the inputs ids, pos, seq ([1, T] each), and with
// max_rows > 0 also `rows` [1, max_rows] and the input row_start [R].
PackedInputs packed_inputs(ir::GraphBuilder& b, int64_t max_tokens, int64_t max_rows);

// Attention of q / k / v [1, T, H * hd] where keys are visible only within the same row (seq) and,
// with window >= 0, within |pos_i - pos_j| <= window.
ir::ValueId packed_attention(ir::GraphBuilder& b, const PackedInputs& in, ir::ValueId q,
                             ir::ValueId k, ir::ValueId v, int32_t heads, int32_t head_dim,
                             int32_t window, const std::string& name);

// The ModernBERT encoder on packed rows; tensors `prefix` + "embeddings.tok_embeddings.weight",
// ... Returns final_norm(x) [1, T, D].
Result<ir::ValueId> build_modernbert(ir::GraphBuilder& b, WeightSource& w,
                                     const ModernBertConfig& c, const std::string& prefix,
                                     const PackedInputs& in);

void add_modernbert_properties(ir::Graph& g, const ModernBertConfig& c);

}  // namespace laya::frontends
