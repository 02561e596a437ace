// Plain Hugging Face encoders (ModernBERT / mmBERT, BERT) and checkpoint detection.
#include <algorithm>

#include "frontends/checkpoint.h"
#include "frontends/encoders.h"
#include "frontends/import.h"

namespace laya::frontends {

namespace {

constexpr int64_t kEncoderMaxTokens = 32768;  // default bound of `tokens` for encoder-only graphs

int64_t encoder_max_tokens(const ImportOptions& opts, int64_t max_len) {
  if (opts.max_tokens > 0) return opts.max_tokens;
  return std::min(max_len * opts.max_rows, kEncoderMaxTokens);
}

Status check_options(const ImportOptions& opts) {
  LAYA_RETURN_IF_ERROR(check_formats(opts));
  if (opts.max_rows < 1 || opts.max_tokens < 0)
    return status_error(StatusCode::kInvalidArgument, "max_rows must be >= 1, max_tokens >= 0");
  return Status::ok();
}

// Tokenizer, provenance and bucket suggestions shared by the encoder importers.
Status finish_encoder(ir::Graph& g, const std::string& dir, const std::string& config_path,
                      const WeightSource& w, const TokenizerFiles& tok, int64_t max_tokens,
                      int64_t max_rows, const ImportOptions& opts) {
  add_bucket_properties(g, max_tokens, max_rows, 0);
  attach_tokenizer(g, tok);
  std::vector<std::string> files{config_path};
  for (const std::string& f : w.checkpoint().source_paths()) files.push_back(f);
  for (const std::string& f : tok.files) files.push_back(f);
  return set_provenance(g, dir, files, opts);
}

}  // namespace

const char* weight_format_name(WeightFormat f) {
  switch (f) {
    case WeightFormat::kSource:
      return "source";
    case WeightFormat::kF32:
      return "f32";
    case WeightFormat::kF16:
      return "f16";
    case WeightFormat::kBF16:
      return "bf16";
    case WeightFormat::kInt8:
      return "int8";
  }
  return "?";
}

Result<WeightFormat> weight_format_from_name(const std::string& name) {
  for (WeightFormat f : {WeightFormat::kSource, WeightFormat::kF32, WeightFormat::kF16,
                         WeightFormat::kBF16, WeightFormat::kInt8})
    if (name == weight_format_name(f)) return f;
  return status_error(StatusCode::kInvalidArgument,
                      "unknown weight format '%s' (source, f32, f16, bf16, int8)", name.c_str());
}

Result<FormatOverride> parse_format_override(const std::string& spec) {
  const size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0)
    return status_error(StatusCode::kInvalidArgument, "override '%s' is not PATTERN=DTYPE",
                        spec.c_str());
  LAYA_ASSIGN_OR_RETURN(const WeightFormat f, weight_format_from_name(spec.substr(eq + 1)));
  return FormatOverride{spec.substr(0, eq), f};
}

const char* checkpoint_kind_name(CheckpointKind k) {
  switch (k) {
    case CheckpointKind::kLaya:
      return "laya";
    case CheckpointKind::kModernBert:
      return "modernbert";
    case CheckpointKind::kBert:
      return "bert";
  }
  return "?";
}

Result<CheckpointKind> detect_checkpoint(const std::string& dir) {
  if (!path_is_dir(dir))
    return status_error(StatusCode::kIoError, "'%s' is not a directory", dir.c_str());
  if (path_exists(path_join(dir, "rl_agent_config.json"))) return CheckpointKind::kLaya;
  const std::string config = path_join(dir, "config.json");
  if (!path_exists(config))
    return status_error(StatusCode::kInvalidArgument,
                        "'%s' has neither rl_agent_config.json (a Laya checkpoint) nor config.json "
                        "(a Hugging Face encoder)",
                        dir.c_str());
  LAYA_ASSIGN_OR_RETURN(json::Value root, read_json(config));
  const json::Value* type = root.find("model_type");
  const std::string t = type != nullptr && type->is_string() ? type->as_string() : "";
  if (t == "modernbert") return CheckpointKind::kModernBert;
  if (t == "bert") return CheckpointKind::kBert;
  return status_error(StatusCode::kInvalidArgument,
                      "%s: model_type \"%s\" is not supported (modernbert, bert)", config.c_str(),
                      t.c_str());
}

Result<ir::Graph> import_checkpoint(const std::string& dir, const ImportOptions& opts) {
  LAYA_ASSIGN_OR_RETURN(const CheckpointKind kind, detect_checkpoint(dir));
  switch (kind) {
    case CheckpointKind::kLaya:
      return import_laya(dir, opts);
    case CheckpointKind::kModernBert:
      return import_modernbert(dir, opts);
    case CheckpointKind::kBert:
      return import_bert(dir, opts);
  }
  return status_error(StatusCode::kInternal, "unknown checkpoint kind");
}

Result<ir::Graph> import_modernbert(const std::string& dir, const ImportOptions& opts) {
  LAYA_RETURN_IF_ERROR(check_options(opts));
  const std::string config_path = path_join(dir, "config.json");
  LAYA_ASSIGN_OR_RETURN(const ModernBertConfig c, read_modernbert_config(config_path));
  LAYA_ASSIGN_OR_RETURN(TokenizerFiles tok, read_tokenizer(dir, {}));
  LAYA_ASSIGN_OR_RETURN(SafetensorsCheckpoint ck, SafetensorsCheckpoint::open(dir));
  // ModernBertForMaskedLM checkpoints (the published ones) prefix the encoder with "model." and
  // carry the MLM head, which an encoder graph does not use.
  const bool mlm = ck.find("model.embeddings.tok_embeddings.weight") != nullptr;
  std::vector<std::string> unused;
  if (mlm)
    for (const auto& [t, f] : ck.all())
      if (t->name.rfind("head.", 0) == 0 || t->name.rfind("decoder.", 0) == 0)
        unused.push_back(t->name);
  WeightSource w(std::move(ck), opts, "ModernBERT checkpoint " + dir);
  for (const std::string& n : unused) w.ignore(n);

  const int64_t max_tokens = encoder_max_tokens(opts, c.max_positions);
  ir::GraphBuilder b;
  const PackedInputs in = packed_inputs(b, max_tokens, 0);
  LAYA_ASSIGN_OR_RETURN(const ir::ValueId h, build_modernbert(b, w, c, mlm ? "model." : "", in));
  LAYA_RETURN_IF_ERROR(w.check_all_used());
  b.output(h, "last_hidden_state");
  b.meta().architecture = "modernbert";
  LAYA_ASSIGN_OR_RETURN(ir::Graph g, std::move(b).finish());
  add_modernbert_properties(g, c);
  LAYA_RETURN_IF_ERROR(finish_encoder(g, dir, config_path, w, tok, max_tokens, 0, opts));
  return g;
}

Result<ir::Graph> import_bert(const std::string& dir, const ImportOptions& opts) {
  LAYA_RETURN_IF_ERROR(check_options(opts));
  const std::string config_path = path_join(dir, "config.json");
  LAYA_ASSIGN_OR_RETURN(json::Value root, read_json(config_path));
  if (!root.is_object())
    return status_error(StatusCode::kInvalidArgument, "%s: not a JSON object", config_path.c_str());
  const JsonFields f(root, config_path);
  LAYA_ASSIGN_OR_RETURN(const int64_t d, f.integer("hidden_size"));
  LAYA_ASSIGN_OR_RETURN(const int64_t layers, f.integer("num_hidden_layers"));
  LAYA_ASSIGN_OR_RETURN(const int64_t heads, f.integer("num_attention_heads"));
  LAYA_ASSIGN_OR_RETURN(const int64_t inter, f.integer("intermediate_size"));
  LAYA_ASSIGN_OR_RETURN(const int64_t vocab, f.integer("vocab_size"));
  LAYA_ASSIGN_OR_RETURN(const int64_t max_pos, f.integer("max_position_embeddings", 512));
  LAYA_ASSIGN_OR_RETURN(const int64_t type_vocab, f.integer("type_vocab_size", 2));
  LAYA_ASSIGN_OR_RETURN(const double eps_d, f.number("layer_norm_eps", 1e-12));
  LAYA_ASSIGN_OR_RETURN(const std::string act_name, f.string("hidden_act", "gelu"));
  LAYA_ASSIGN_OR_RETURN(const std::string pos_type,
                        f.string("position_embedding_type", "absolute"));
  if (d <= 0 || layers <= 0 || heads <= 0 || inter <= 0 || vocab <= 0 || max_pos <= 0 ||
      type_vocab < 0 || d % heads != 0 || !(eps_d >= 0))
    return status_error(StatusCode::kInvalidArgument,
                        "%s: sizes must be positive with hidden_size %% num_attention_heads == 0",
                        config_path.c_str());
  if (pos_type != "absolute")
    return f.error("position_embedding_type", "\"" + pos_type + "\" is not supported (absolute)");
  ir::ActKind act;
  if (act_name == "gelu")
    act = ir::ActKind::kGeluErf;
  else if (act_name == "gelu_new" || act_name == "gelu_pytorch_tanh")
    act = ir::ActKind::kGeluTanh;
  else if (act_name == "relu")
    act = ir::ActKind::kRelu;
  else
    return f.error("hidden_act", "\"" + act_name + "\" is not supported (gelu, gelu_new, relu)");
  const float eps = static_cast<float>(eps_d);

  LAYA_ASSIGN_OR_RETURN(TokenizerFiles tok, read_tokenizer(dir, {}));
  LAYA_ASSIGN_OR_RETURN(SafetensorsCheckpoint ck, SafetensorsCheckpoint::open(dir));
  // BertModel checkpoints have no prefix; BertFor* ones prefix "bert." and add their heads.
  const std::string p = ck.find("bert.embeddings.word_embeddings.weight") != nullptr ? "bert." : "";
  std::vector<std::string> unused;
  for (const auto& [t, file] : ck.all()) {
    const std::string& n = t->name;
    if (n == p + "embeddings.position_ids" || n.rfind(p + "pooler.", 0) == 0 ||
        (!p.empty() && n.rfind(p, 0) != 0))
      unused.push_back(n);
  }
  WeightSource w(std::move(ck), opts, "BERT checkpoint " + dir);
  for (const std::string& n : unused) w.ignore(n);

  const int64_t max_tokens = encoder_max_tokens(opts, max_pos);
  ir::GraphBuilder b;
  const PackedInputs in = packed_inputs(b, max_tokens, opts.max_rows);
  const bool has_types = type_vocab > 0 && w.has(p + "embeddings.token_type_embeddings.weight");
  ir::ValueId token_type = ir::kNoValue;
  if (has_types)
    token_type = b.input("token_type", ir::DType::kI32,
                         ir::Shape::of({ir::Dim::fixed(1), ir::Dim::sym(in.tokens)}));
  const std::vector<int64_t> vec{d};
  auto layernorm = [&](ir::ValueId x, const std::string& name,
                       const std::string& node) -> Result<ir::ValueId> {
    LAYA_ASSIGN_OR_RETURN(ir::ValueId g, w.take(b, name + ".weight", vec, WeightRole::kVector));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId beta, w.take(b, name + ".bias", vec, WeightRole::kVector));
    return b.layernorm(x, g, beta, eps, node);
  };
  auto linear = [&](ir::ValueId x, const std::string& name, int64_t n, int64_t k,
                    const std::string& node) -> Result<ir::ValueId> {
    LAYA_ASSIGN_OR_RETURN(ir::ValueId wt, w.take(b, name + ".weight", {n, k}, WeightRole::kMatrix));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId bv, w.take(b, name + ".bias", {n}, WeightRole::kVector));
    return b.matmul(x, wt, bv, node);
  };

  LAYA_ASSIGN_OR_RETURN(ir::ValueId words, w.take(b, p + "embeddings.word_embeddings.weight",
                                                  {vocab, d}, WeightRole::kTable));
  LAYA_ASSIGN_OR_RETURN(
      ir::ValueId positions,
      w.take(b, p + "embeddings.position_embeddings.weight", {max_pos, d}, WeightRole::kTable));
  ir::ValueId x = b.add(b.embedding(words, in.ids, "embed.words"),
                        b.embedding(positions, in.pos, "embed.positions"), "embed.sum");
  if (has_types) {
    LAYA_ASSIGN_OR_RETURN(ir::ValueId types,
                          w.take(b, p + "embeddings.token_type_embeddings.weight", {type_vocab, d},
                                 WeightRole::kTable));
    x = b.add(x, b.embedding(types, token_type, "embed.types"), "embed.sum_types");
  }
  LAYA_ASSIGN_OR_RETURN(x, layernorm(x, p + "embeddings.LayerNorm", "embed.norm"));
  const int32_t hd = static_cast<int32_t>(d / heads);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string lp = p + "encoder.layer." + std::to_string(i) + ".";
    const std::string n = "layer" + std::to_string(i) + ".";
    LAYA_ASSIGN_OR_RETURN(ir::ValueId q, linear(x, lp + "attention.self.query", d, d, n + "q"));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId k, linear(x, lp + "attention.self.key", d, d, n + "k"));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId v, linear(x, lp + "attention.self.value", d, d, n + "v"));
    const ir::ValueId a =
        packed_attention(b, in, q, k, v, static_cast<int32_t>(heads), hd, -1, n + "attn");
    LAYA_ASSIGN_OR_RETURN(ir::ValueId o, linear(a, lp + "attention.output.dense", d, d, n + "o"));
    LAYA_ASSIGN_OR_RETURN(x, layernorm(b.add(x, o, n + "attn_residual"),
                                       lp + "attention.output.LayerNorm", n + "attn_norm"));
    LAYA_ASSIGN_OR_RETURN(ir::ValueId up, linear(x, lp + "intermediate.dense", inter, d, n + "up"));
    const ir::ValueId actv =
        act == ir::ActKind::kRelu ? b.relu(up, n + "act") : b.gelu(up, act, n + "act");
    LAYA_ASSIGN_OR_RETURN(ir::ValueId down,
                          linear(actv, lp + "output.dense", d, inter, n + "down"));
    LAYA_ASSIGN_OR_RETURN(
        x, layernorm(b.add(x, down, n + "ffn_residual"), lp + "output.LayerNorm", n + "ffn_norm"));
  }
  LAYA_RETURN_IF_ERROR(w.check_all_used());
  b.output(b.segment_mean(x, in.row_start, "mean_pool"), "embeddings");
  b.meta().architecture = "bert";
  LAYA_ASSIGN_OR_RETURN(ir::Graph g, std::move(b).finish());
  add_property(g, "encoder.hidden_size", std::to_string(d));
  add_property(g, "encoder.num_hidden_layers", std::to_string(layers));
  add_property(g, "encoder.num_attention_heads", std::to_string(heads));
  add_property(g, "encoder.max_position_embeddings", std::to_string(max_pos));
  LAYA_RETURN_IF_ERROR(
      finish_encoder(g, dir, config_path, w, tok, max_tokens, opts.max_rows, opts));
  return g;
}

}  // namespace laya::frontends
