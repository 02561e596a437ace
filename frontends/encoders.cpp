#include "frontends/encoders.h"

#include <cmath>
#include <cstdio>

namespace laya::frontends {

namespace {

// rope_parameters[layer_type] (or a flat rope_parameters): theta, when given; "default" RoPE only.
Result<std::optional<double>> rope_theta(const JsonFields& f, const char* layer_type) {
  const json::Value* rp = f.find("rope_parameters");
  if (rp == nullptr || rp->is_null()) return std::optional<double>();
  if (!rp->is_object()) return f.error("rope_parameters", "must be an object");
  const json::Value* p = rp->find(layer_type);
  if (p == nullptr || p->is_null()) {
    // A flat rope_parameters (one set for every layer type) when neither per-type entry exists.
    if (rp->find("full_attention") != nullptr || rp->find("sliding_attention") != nullptr)
      return std::optional<double>();
    p = rp;
  }
  if (!p->is_object())
    return f.error("rope_parameters", std::string(layer_type) + " is not an object");
  if (const json::Value* type = p->find("rope_type"); type != nullptr && !type->is_null())
    if (!type->is_string() || type->as_string() != "default")
      return f.error("rope_parameters", std::string(layer_type) + ".rope_type " +
                                            json::dump(*type) +
                                            " is not supported (only \"default\")");
  const json::Value* theta = p->find("rope_theta");
  if (theta == nullptr || theta->is_null()) return std::optional<double>();
  if (!theta->is_number() || !(theta->as_double() > 0))
    return f.error("rope_parameters",
                   std::string(layer_type) + ".rope_theta must be a positive number");
  return std::optional<double>(theta->as_double());
}

}  // namespace

Result<ModernBertConfig> read_modernbert_config(const std::string& path) {
  LAYA_ASSIGN_OR_RETURN(json::Value root, read_json(path));
  if (!root.is_object())
    return status_error(StatusCode::kInvalidArgument, "%s: not a JSON object", path.c_str());
  const JsonFields f(root, path);
  ModernBertConfig c;
  LAYA_ASSIGN_OR_RETURN(c.hidden, f.integer("hidden_size"));
  LAYA_ASSIGN_OR_RETURN(c.layers, f.integer("num_hidden_layers"));
  LAYA_ASSIGN_OR_RETURN(c.heads, f.integer("num_attention_heads"));
  LAYA_ASSIGN_OR_RETURN(c.intermediate, f.integer("intermediate_size"));
  LAYA_ASSIGN_OR_RETURN(c.vocab, f.integer("vocab_size"));
  LAYA_ASSIGN_OR_RETURN(c.max_positions, f.integer("max_position_embeddings", 8192));
  LAYA_ASSIGN_OR_RETURN(const double eps, f.number("norm_eps", 1e-5));
  c.norm_eps = static_cast<float>(eps);
  LAYA_ASSIGN_OR_RETURN(c.norm_bias, f.boolean("norm_bias", false));
  LAYA_ASSIGN_OR_RETURN(c.attention_bias, f.boolean("attention_bias", false));
  LAYA_ASSIGN_OR_RETURN(c.mlp_bias, f.boolean("mlp_bias", false));
  if (c.hidden <= 0 || c.layers <= 0 || c.heads <= 0 || c.intermediate <= 0 || c.vocab <= 0 ||
      c.hidden % c.heads != 0 || c.max_positions <= 0 || !(eps >= 0))
    return status_error(StatusCode::kInvalidArgument,
                        "%s: sizes must be positive with hidden_size %% num_attention_heads == 0 "
                        "(hidden %lld, heads %lld, layers %lld, intermediate %lld, vocab %lld)",
                        path.c_str(), static_cast<long long>(c.hidden),
                        static_cast<long long>(c.heads), static_cast<long long>(c.layers),
                        static_cast<long long>(c.intermediate), static_cast<long long>(c.vocab));
  if (const json::Value* hd = f.find("head_dim"); hd != nullptr && !hd->is_null())
    if (hd->as_int64() != c.hidden / c.heads)
      return f.error("head_dim", "must equal hidden_size / num_attention_heads");
  LAYA_ASSIGN_OR_RETURN(const std::string act, f.string("hidden_activation", "gelu"));
  if (act == "gelu")
    c.act = ir::ActKind::kGeluErf;
  else if (act == "gelu_pytorch_tanh" || act == "gelu_new")
    c.act = ir::ActKind::kGeluTanh;
  else
    return f.error("hidden_activation",
                   "\"" + act + "\" is not supported (gelu, gelu_pytorch_tanh)");
  LAYA_ASSIGN_OR_RETURN(const int64_t local, f.integer("local_attention", 128));
  if (local < 0) return f.error("local_attention", "must be >= 0");
  c.window = static_cast<int32_t>(local / 2);

  // Layer types: the list when given (transformers 5), else the legacy period.
  const json::Value* types = f.find("layer_types");
  if (types != nullptr && !types->is_null()) {
    if (!types->is_array() || static_cast<int64_t>(types->items().size()) != c.layers)
      return f.error("layer_types", "must be a list of num_hidden_layers strings");
    for (const json::Value& t : types->items()) {
      if (t.is_string() && t.as_string() == "full_attention")
        c.full_attention.push_back(true);
      else if (t.is_string() && t.as_string() == "sliding_attention")
        c.full_attention.push_back(false);
      else
        return f.error("layer_types",
                       "has " + json::dump(t) + " (full_attention or sliding_attention)");
    }
  } else {
    LAYA_ASSIGN_OR_RETURN(const int64_t every, f.integer("global_attn_every_n_layers", 3));
    if (every <= 0) return f.error("global_attn_every_n_layers", "must be positive");
    for (int64_t i = 0; i < c.layers; ++i) c.full_attention.push_back(i % every == 0);
  }

  LAYA_ASSIGN_OR_RETURN(const std::optional<double> tf, rope_theta(f, "full_attention"));
  LAYA_ASSIGN_OR_RETURN(const std::optional<double> ts, rope_theta(f, "sliding_attention"));
  LAYA_ASSIGN_OR_RETURN(const double g, f.number("global_rope_theta", 160000.0));
  LAYA_ASSIGN_OR_RETURN(const double l, f.number("local_rope_theta", 10000.0));
  c.theta_full = static_cast<float>(tf.value_or(g));
  c.theta_sliding = static_cast<float>(ts.value_or(l));
  if (!(c.theta_full > 0) || !(c.theta_sliding > 0))
    return f.error("rope_parameters", "thetas must be positive");
  return c;
}

PackedInputs packed_inputs(ir::GraphBuilder& b, int64_t max_tokens, int64_t max_rows) {
  PackedInputs in;
  in.tokens = b.symbol("tokens", 1, max_tokens);
  if (max_rows > 0) in.rows = b.symbol("rows", 1, max_rows);
  const ir::Shape row_vec = ir::Shape::of({ir::Dim::fixed(1), ir::Dim::sym(in.tokens)});
  in.ids = b.input("ids", ir::DType::kI32, row_vec, ir::InputRole::kTokenIds);
  in.pos = b.input("pos", ir::DType::kI32, row_vec, ir::InputRole::kPositions);
  in.seq = b.input("seq", ir::DType::kI32, row_vec);
  if (max_rows > 0)
    in.row_start = b.input("row_start", ir::DType::kI32, ir::Shape::of({ir::Dim::sym(in.rows)}));
  return in;
}

ir::ValueId packed_attention(ir::GraphBuilder& b, const PackedInputs& in, ir::ValueId q,
                             ir::ValueId k, ir::ValueId v, int32_t heads, int32_t head_dim,
                             int32_t window, const std::string& name) {
  ir::Attrs a;
  a.n_heads = heads;
  a.n_kv_heads = heads;
  a.head_dim = head_dim;
  a.window = window;
  return b.attention(q, k, v, ir::kNoValue, {in.pos, in.pos, in.seq, in.seq}, a, name);
}

Result<ir::ValueId> build_modernbert(ir::GraphBuilder& b, WeightSource& w,
                                     const ModernBertConfig& c, const std::string& prefix,
                                     const PackedInputs& in) {
  const int64_t d = c.hidden, f = c.intermediate;
  const int32_t hd = static_cast<int32_t>(d / c.heads);
  const std::vector<int64_t> vec{d};
  auto norm = [&](ir::ValueId x, const std::string& name,
                  const std::string& node) -> Result<ir::ValueId> {
    LAYA_ASSIGN_OR_RETURN(ir::ValueId g, w.take(b, name + ".weight", vec, WeightRole::kVector));
    ir::ValueId beta = ir::kNoValue;
    if (c.norm_bias) {
      LAYA_ASSIGN_OR_RETURN(beta, w.take(b, name + ".bias", vec, WeightRole::kVector));
    }
    return b.layernorm(x, g, beta, c.norm_eps, node);
  };
  auto linear = [&](ir::ValueId x, const std::string& name, int64_t n, int64_t k, bool bias,
                    const std::string& node) -> Result<ir::ValueId> {
    LAYA_ASSIGN_OR_RETURN(ir::ValueId wt, w.take(b, name + ".weight", {n, k}, WeightRole::kMatrix));
    ir::ValueId bv = ir::kNoValue;
    if (bias) {
      LAYA_ASSIGN_OR_RETURN(bv, w.take(b, name + ".bias", {n}, WeightRole::kVector));
    }
    return b.matmul(x, wt, bv, node);
  };

  LAYA_ASSIGN_OR_RETURN(ir::ValueId table, w.take(b, prefix + "embeddings.tok_embeddings.weight",
                                                  {c.vocab, d}, WeightRole::kTable));
  ir::ValueId x = b.embedding(table, in.ids, "embed");
  LAYA_ASSIGN_OR_RETURN(x, norm(x, prefix + "embeddings.norm", "embed.norm"));
  for (int64_t i = 0; i < c.layers; ++i) {
    const std::string p = prefix + "layers." + std::to_string(i) + ".";
    const std::string n = "layer" + std::to_string(i) + ".";
    ir::ValueId y = x;  // layer 0's attn_norm is the identity
    if (i > 0) {
      LAYA_ASSIGN_OR_RETURN(y, norm(x, p + "attn_norm", n + "attn_norm"));
    }
    LAYA_ASSIGN_OR_RETURN(ir::ValueId qkv,
                          linear(y, p + "attn.Wqkv", 3 * d, d, c.attention_bias, n + "qkv"));
    const std::vector<ir::ValueId> parts = b.split(qkv, {d, d, d}, n + "qkv_split");
    if (parts.size() != 3) return b.status();
    const bool full = c.full_attention[static_cast<size_t>(i)];
    const float theta = full ? c.theta_full : c.theta_sliding;
    const ir::ValueId q = b.rope(parts[0], in.pos, hd, theta, ir::RopeMode::kNeox, 0, n + "rope_q");
    const ir::ValueId k = b.rope(parts[1], in.pos, hd, theta, ir::RopeMode::kNeox, 0, n + "rope_k");
    const ir::ValueId a = packed_attention(b, in, q, k, parts[2], static_cast<int32_t>(c.heads), hd,
                                           full ? -1 : c.window, n + "attn");
    LAYA_ASSIGN_OR_RETURN(ir::ValueId o,
                          linear(a, p + "attn.Wo", d, d, c.attention_bias, n + "wo"));
    x = b.add(x, o, n + "attn_residual");
    LAYA_ASSIGN_OR_RETURN(y, norm(x, p + "mlp_norm", n + "mlp_norm"));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId wi, linear(y, p + "mlp.Wi", 2 * f, d, c.mlp_bias, n + "wi"));
    const ir::ValueId gl = b.glu(wi, c.act, n + "glu");
    LAYA_ASSIGN_OR_RETURN(ir::ValueId wo, linear(gl, p + "mlp.Wo", d, f, c.mlp_bias, n + "wo_mlp"));
    x = b.add(x, wo, n + "mlp_residual");
  }
  LAYA_ASSIGN_OR_RETURN(x, norm(x, prefix + "final_norm", "final_norm"));
  if (!b.status().is_ok()) return b.status();
  return x;
}

void add_modernbert_properties(ir::Graph& g, const ModernBertConfig& c) {
  auto add = [&](const char* k, const std::string& v) { add_property(g, k, v); };
  add("encoder.hidden_size", std::to_string(c.hidden));
  add("encoder.num_hidden_layers", std::to_string(c.layers));
  add("encoder.num_attention_heads", std::to_string(c.heads));
  add("encoder.intermediate_size", std::to_string(c.intermediate));
  add("encoder.vocab_size", std::to_string(c.vocab));
  std::string types;
  for (bool full : c.full_attention) types += full ? 'F' : 'S';
  add("encoder.layer_types", types);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(c.theta_full));
  add("encoder.rope_theta_full", buf);
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(c.theta_sliding));
  add("encoder.rope_theta_sliding", buf);
  add("encoder.sliding_window", std::to_string(c.window));
}

}  // namespace laya::frontends
