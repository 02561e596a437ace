// The Laya checkpoint importer: upstream's DecisionModel (laya/common.py) as one packed graph.
#include <cmath>
#include <cstdlib>

#include "frontends/checkpoint.h"
#include "frontends/encoders.h"
#include "frontends/import.h"

namespace laya::frontends {

namespace {

// A temperature as upstream's clamp_temperature reads it: a number, or a string Python's float()
// parses; anything else (bool, null, list, unparsable text) is NaN, which the clamp maps to 1.0.
float temperature_value(const json::Value& v) {
  if (v.is_number()) return static_cast<float>(v.as_double());
  if (v.is_string()) {
    const std::string& s = v.as_string();
    size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
    const std::string t = s.substr(b, e - b);
    char* end = nullptr;
    const double d = std::strtod(t.c_str(), &end);
    if (!t.empty() && end == t.c_str() + t.size()) return static_cast<float>(d);
  }
  return std::nanf("");
}

struct AgentConfig {
  std::string encoder;
  int64_t head_layers = 2, max_len = 512, head_max_len = 192, n_act = 2;
  ir::DecisionConfig decision;
};

// rl_agent_config.json: every key laya.load (0.4.15) reads.
Result<AgentConfig> read_agent_config(const std::string& path) {
  LAYA_ASSIGN_OR_RETURN(json::Value root, read_json(path));
  if (!root.is_object())
    return status_error(StatusCode::kInvalidArgument, "%s: not a JSON object", path.c_str());
  const JsonFields f(root, path);
  AgentConfig c;
  const json::Value* enc = f.find("encoder");
  if (enc == nullptr) return f.error("encoder", "is missing (a required key)");
  c.encoder = enc->is_string() ? enc->as_string() : json::dump(*enc);
  if (f.find("head_layers") == nullptr)
    return f.error("head_layers", "is missing (a required key)");
  LAYA_ASSIGN_OR_RETURN(c.head_layers, f.integer("head_layers"));
  if (c.head_layers < 0) return f.error("head_layers", "must be >= 0");
  LAYA_ASSIGN_OR_RETURN(c.max_len, f.integer("max_len", 512));
  LAYA_ASSIGN_OR_RETURN(c.head_max_len, f.integer("head_max_len", 192));
  if (c.max_len <= 0 || c.head_max_len <= 0)
    return f.error("max_len", "and head_max_len must be positive");

  ir::DecisionConfig& d = c.decision;
  d.present = true;
  d.max_len = static_cast<int32_t>(c.max_len);
  d.head_max_len = static_cast<int32_t>(c.head_max_len);
  d.head_layers = static_cast<int32_t>(c.head_layers);
  if (const json::Value* costs = f.find("act_costs"); costs != nullptr && !costs->is_null()) {
    if (costs->is_object()) {
      for (const json::Member& m : costs->members())
        d.act_costs.push_back(temperature_value(m.value));
    } else if (costs->is_array()) {
      for (const json::Value& v : costs->items()) d.act_costs.push_back(temperature_value(v));
    } else {
      return f.error("act_costs", "must be an object or a list");
    }
  }
  c.n_act = static_cast<int64_t>(d.act_costs.size()) + 1;
  if (const json::Value* t = f.find("temperature")) {
    if (!t->is_array() || t->items().size() != 3)
      return f.error("temperature", "must be a list of 3 floats, got " + json::dump(*t));
    for (int i = 0; i < 3; ++i) d.temperature[i] = temperature_value(t->items()[i]);
  }
  if (const json::Value* t = f.find("temperature_by_options")) {
    if (!t->is_object())
      return f.error("temperature_by_options", "must be an object of bucket -> float");
    for (const json::Member& m : t->members())
      d.temperature_by_options.emplace_back(m.key, temperature_value(m.value));
  }
  LAYA_ASSIGN_OR_RETURN(const std::string layout, f.string("option_layout", "sequential"));
  if (layout == "parallel")
    return f.error("option_layout",
                   "is \"parallel\", which this runtime does not implement (no shipped checkpoint "
                   "uses it; only \"sequential\")");
  if (layout != "sequential")
    return f.error("option_layout",
                   "must be \"sequential\" or \"parallel\", got \"" + layout + "\"");
  return c;
}

}  // namespace

const char* const kLayaHeadPatterns[4] = {"type_emb.*", "head.*", "scorer.*", "act_head.*"};

Result<ir::Graph> import_laya(const std::string& dir, const ImportOptions& opts) {
  LAYA_RETURN_IF_ERROR(check_formats(opts));
  const std::string cfg_path = path_join(dir, "rl_agent_config.json");
  const std::string weights_path = path_join(dir, "model.safetensors");
  const std::string enc_path = path_join(dir, "encoder/config.json");
  const std::string tok_dir = path_join(dir, "tokenizer");
  if (!path_exists(cfg_path))
    return status_error(StatusCode::kInvalidArgument,
                        "'%s' is not a Laya checkpoint: rl_agent_config.json is missing",
                        dir.c_str());
  LAYA_ASSIGN_OR_RETURN(const AgentConfig ac, read_agent_config(cfg_path));
  if (!path_exists(enc_path))
    return status_error(StatusCode::kInvalidArgument,
                        "%s is missing (upstream would fetch the config of '%s' from the Hub; a "
                        "converted model must not depend on the network)",
                        enc_path.c_str(), ac.encoder.c_str());
  if (!path_is_dir(tok_dir))
    return status_error(StatusCode::kInvalidArgument,
                        "%s/ is missing (tokenizer.json and its "
                        "configs)",
                        tok_dir.c_str());
  LAYA_ASSIGN_OR_RETURN(const ModernBertConfig ec, read_modernbert_config(enc_path));
  LAYA_ASSIGN_OR_RETURN(TokenizerFiles tok, read_tokenizer(tok_dir, {"cls", "sep", "pad", "mask"}));
  if (!path_exists(weights_path))
    return status_error(StatusCode::kIoError, "%s is missing", weights_path.c_str());
  LAYA_ASSIGN_OR_RETURN(SafetensorsCheckpoint ck, SafetensorsCheckpoint::open(weights_path));
  WeightSource w(std::move(ck), opts, "Laya checkpoint " + weights_path);

  const int64_t d = ec.hidden;
  if (opts.max_rows < 1 || opts.max_options < 1 || opts.max_tokens < 0)
    return status_error(StatusCode::kInvalidArgument, "max_rows / max_options must be >= 1");
  const int64_t max_tokens = opts.max_tokens > 0 ? opts.max_tokens : ac.max_len * opts.max_rows;
  ir::GraphBuilder b;
  const PackedInputs in = packed_inputs(b, max_tokens, opts.max_rows);
  const int options = b.symbol("options", 1, opts.max_options);
  const ir::Shape tok_shape = ir::Shape::of({ir::Dim::fixed(1), ir::Dim::sym(in.tokens)});
  const ir::Shape opt_shape = ir::Shape::of({ir::Dim::sym(in.rows), ir::Dim::sym(options)});
  const ir::ValueId qtype = b.input("qtype", ir::DType::kI32, tok_shape);
  const ir::ValueId markers = b.input("markers", ir::DType::kI32, opt_shape);
  const ir::ValueId valid = b.input("marker_valid", ir::DType::kI32, opt_shape);

  LAYA_ASSIGN_OR_RETURN(const ir::ValueId enc, build_modernbert(b, w, ec, "encoder.", in));
  const ir::ValueId pooled_rows = b.segment_mean(enc, in.row_start, "embeddings");

  // The decision head (DecisionModel.forward), all in f32 activations.
  auto vector = [&](const std::string& name, int64_t n) {
    return w.take(b, name, {n}, WeightRole::kVector);
  };
  auto layernorm = [&](ir::ValueId x, const std::string& p,
                       const std::string& node) -> Result<ir::ValueId> {
    LAYA_ASSIGN_OR_RETURN(ir::ValueId g, vector(p + ".weight", d));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId beta, vector(p + ".bias", d));
    return b.layernorm(x, g, beta, 1e-5f, node);
  };
  struct Linear {
    ir::ValueId w = ir::kNoValue, b = ir::kNoValue;
  };
  auto linear_weights = [&](const std::string& weight, const std::string& bias, int64_t n,
                            int64_t k) -> Result<Linear> {
    Linear l;
    LAYA_ASSIGN_OR_RETURN(l.w, w.take(b, weight, {n, k}, WeightRole::kMatrix));
    LAYA_ASSIGN_OR_RETURN(l.b, vector(bias, n));
    return l;
  };
  auto linear = [&](ir::ValueId x, const std::string& weight, const std::string& bias, int64_t n,
                    int64_t k, const std::string& node) -> Result<ir::ValueId> {
    LAYA_ASSIGN_OR_RETURN(const Linear l, linear_weights(weight, bias, n, k));
    return b.matmul(x, l.w, l.b, node);
  };

  LAYA_ASSIGN_OR_RETURN(ir::ValueId type_table,
                        w.take(b, "type_emb.weight", {3, d}, WeightRole::kTable));
  ir::ValueId h = b.add(enc, b.embedding(type_table, qtype, "type_emb"), "head.input");
  const int64_t nhead = std::max<int64_t>(1, d / 64);
  if (d % nhead != 0)
    return status_error(StatusCode::kInvalidArgument,
                        "%s: hidden size %lld is not divisible by the head's %lld attention heads",
                        enc_path.c_str(), static_cast<long long>(d), static_cast<long long>(nhead));
  ir::Attrs attn;
  attn.n_heads = attn.n_kv_heads = static_cast<int32_t>(nhead);
  attn.head_dim = static_cast<int32_t>(d / nhead);
  attn.window = -1;
  // Only two kinds of rows leave the head: the option markers (the scorer) and each row's first
  // token (the act head). So its last layer runs, after the keys and values of every token, on
  // those rows alone: `markers` [R, K] and the row starts as [R, 1] (two query sets, since rows of
  // symbolic counts cannot be concatenated). Each set's queries attend the shared keys [1, T, D]
  // under their own rows' sequence ids, so every output row is what the full layer gives there.
  const ir::ValueId start_idx = b.reshape(in.row_start, {-1, 1}, "head.start_rows");
  ir::ValueId m = ir::kNoValue, first = ir::kNoValue;  // [R, K, D], [R, 1, D]
  for (int64_t l = 0; l < ac.head_layers; ++l) {
    const std::string p = "head.layers." + std::to_string(l) + ".";
    const std::string n = "head" + std::to_string(l) + ".";
    LAYA_ASSIGN_OR_RETURN(ir::ValueId y, layernorm(h, p + "norm1", n + "norm1"));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId qkv,
                          linear(y, p + "self_attn.in_proj_weight", p + "self_attn.in_proj_bias",
                                 3 * d, d, n + "in_proj"));
    const std::vector<ir::ValueId> parts = b.split(qkv, {d, d, d}, n + "qkv_split");
    if (parts.size() != 3) return b.status();
    LAYA_ASSIGN_OR_RETURN(
        const Linear out_proj,
        linear_weights(p + "self_attn.out_proj.weight", p + "self_attn.out_proj.bias", d, d));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId norm2_g, vector(p + "norm2.weight", d));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId norm2_b, vector(p + "norm2.bias", d));
    LAYA_ASSIGN_OR_RETURN(const Linear linear1,
                          linear_weights(p + "linear1.weight", p + "linear1.bias", 4 * d, d));
    LAYA_ASSIGN_OR_RETURN(const Linear linear2,
                          linear_weights(p + "linear2.weight", p + "linear2.bias", d, 4 * d));
    // Attention output -> out_proj, residual, norm2, feed-forward, residual (norm_first layers).
    auto rest = [&](ir::ValueId x, ir::ValueId a, const std::string& s) {
      x = b.add(x, b.matmul(a, out_proj.w, out_proj.b, n + "out_proj" + s),
                n + "attn_residual" + s);
      const ir::ValueId z = b.layernorm(x, norm2_g, norm2_b, 1e-5f, n + "norm2" + s);
      const ir::ValueId f1 = b.matmul(z, linear1.w, linear1.b, n + "linear1" + s);
      const ir::ValueId f2 =
          b.matmul(b.relu(f1, n + "relu" + s), linear2.w, linear2.b, n + "linear2" + s);
      return b.add(x, f2, n + "ffn_residual" + s);
    };
    if (l + 1 < ac.head_layers) {
      h = rest(h,
               packed_attention(b, in, parts[0], parts[1], parts[2], attn.n_heads, attn.head_dim,
                                -1, n + "attn"),
               "");
      continue;
    }
    const ir::ValueId pos_col = b.reshape(in.pos, {1, -2, 1}, n + "pos_col");
    const ir::ValueId seq_col = b.reshape(in.seq, {1, -2, 1}, n + "seq_col");
    auto rows_of = [&](ir::ValueId idx, const std::string& s) {
      const ir::ValueId q_pos = b.reshape(b.gather(pos_col, idx, n + "q_pos" + s), {-1, -2},
                                          n + "q_pos" + s + ".squeeze");
      const ir::ValueId q_seq = b.reshape(b.gather(seq_col, idx, n + "q_seq" + s), {-1, -2},
                                          n + "q_seq" + s + ".squeeze");
      const ir::ValueId a =
          b.attention(b.gather(parts[0], idx, n + "q" + s), parts[1], parts[2], ir::kNoValue,
                      {q_pos, in.pos, q_seq, in.seq}, attn, n + "attn" + s);
      return rest(b.gather(h, idx, n + "rows" + s), a, s);
    };
    m = rows_of(markers, ".markers");
    first = rows_of(start_idx, ".first");
  }
  if (ac.head_layers == 0) {
    m = b.gather(h, markers, "markers");
    first = b.gather(h, start_idx, "first_rows");
  }

  // Scorer over the marker rows; empty slots get -1e4.
  LAYA_ASSIGN_OR_RETURN(ir::ValueId s, layernorm(m, "scorer.0", "scorer.norm"));
  LAYA_ASSIGN_OR_RETURN(s, linear(s, "scorer.1.weight", "scorer.1.bias", d, d, "scorer.linear1"));
  s = b.gelu(s, ir::ActKind::kGeluErf, "scorer.gelu");
  LAYA_ASSIGN_OR_RETURN(s, linear(s, "scorer.3.weight", "scorer.3.bias", 1, d, "scorer.linear2"));
  const ir::ValueId logits =
      b.masked_fill(b.reshape(s, {-1, -2}, "scorer.squeeze"), valid, -1e4f, "logits");

  // Act head: [h at the row's first token, features of softmax(logits)].
  const ir::ValueId feats = b.act_features(logits, valid, "act.features");
  const ir::ValueId act_in =
      b.concat({b.reshape(first, {-1, d}, "act.pooled"), feats}, "act.input");
  LAYA_ASSIGN_OR_RETURN(ir::ValueId act, linear(act_in, "act_head.0.weight", "act_head.0.bias", 256,
                                                d + 4, "act.linear1"));
  act = b.gelu(act, ir::ActKind::kGeluErf, "act.gelu");
  LAYA_ASSIGN_OR_RETURN(
      act, linear(act, "act_head.2.weight", "act_head.2.bias", ac.n_act, 256, "act_logits"));
  LAYA_RETURN_IF_ERROR(w.expect("temperature", {3}));  // upstream's strict load requires it
  LAYA_RETURN_IF_ERROR(w.check_all_used());

  b.output(logits, "logits");
  b.output(act, "act_logits");
  b.output(pooled_rows, "embeddings");
  ir::Metadata& meta = b.meta();
  meta.architecture = "laya";
  meta.decision = ac.decision;
  LAYA_ASSIGN_OR_RETURN(ir::Graph g, std::move(b).finish());

  add_property(g, "laya.encoder", ac.encoder);
  add_property(g, "laya.option_layout", "sequential");
  add_modernbert_properties(g, ec);
  add_bucket_properties(g, max_tokens, opts.max_rows, opts.max_options);
  attach_tokenizer(g, tok);
  std::vector<std::string> files{cfg_path, enc_path};
  for (const std::string& f : w.checkpoint().source_paths()) files.push_back(f);
  for (const std::string& f : tok.files) files.push_back(f);
  LAYA_RETURN_IF_ERROR(set_provenance(g, dir, files, opts));
  return g;
}

}  // namespace laya::frontends
