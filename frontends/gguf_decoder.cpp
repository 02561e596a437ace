#include "frontends/gguf_decoder.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

namespace laya::frontends::gguf {

namespace {

using ir::DType;
using ir::ValueId;

Status unsupported(const std::string& arch, const std::string& what) {
  return Status(StatusCode::kUnsupported, "GGUF " + arch + ": " + what + " is not supported");
}

bool is_matmul_dtype(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

ir::Shape shape_of(const TensorInfo& t) {
  ir::Shape s;
  for (uint32_t i = 0; i < t.n_dims; ++i) s.dims[s.rank++] = ir::Dim::fixed(t.shape[i]);
  return s;
}

}  // namespace

Result<DecoderSpec> decoder_spec(const File& f) {
  DecoderSpec s;
  LAYA_ASSIGN_OR_RETURN(s.params, decoder_params(f));
  const DecoderParams& p = s.params;
  LAYA_ASSIGN_OR_RETURN(s.rope_mode, rope_mode_for_arch(p.arch));
  const std::string a = p.arch + ".";
  if (const Value* v = f.find(a + "expert_count");
      v != nullptr && v->as_int().is_ok() && *v->as_int() > 0)
    return unsupported(p.arch, "a mixture of experts (" + a + "expert_count)");
  if (f.find(a + "rope.scaling.type") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(std::string_view type, f.get_string(a + "rope.scaling.type"));
    if (type != "none") return unsupported(p.arch, "RoPE scaling '" + std::string(type) + "'");
  }
  if (f.tensor("rope_freqs.weight") != nullptr)
    return unsupported(p.arch, "RoPE frequency factors (rope_freqs.weight, Llama 3.1+)");
  s.head_dim = p.embedding_length / p.head_count;
  for (const char* key : {"attention.key_length", "attention.value_length"}) {
    if (f.find(a + key) == nullptr) continue;
    LAYA_ASSIGN_OR_RETURN(int64_t len, f.get_int(a + key));
    if (len != s.head_dim)
      return unsupported(p.arch, a + key + " " + std::to_string(len) + " (head_dim is " +
                                     std::to_string(s.head_dim) + ")");
  }
  // The FFN width and the vocabulary come from the tensors when the metadata lacks them.
  DecoderParams checked = p;
  if (checked.feed_forward_length <= 0) {
    const TensorInfo* gate = f.tensor(layer_tensor_name(0, "ffn_gate", "weight"));
    if (gate != nullptr && gate->n_dims == 2) checked.feed_forward_length = gate->shape[0];
  }
  LAYA_RETURN_IF_ERROR(check_decoder_tensors(f, checked));
  s.d_ff = checked.feed_forward_length;
  s.vocab = f.tensor("token_embd.weight")->shape[0];
  s.tied_output = f.tensor("output.weight") == nullptr;
  return s;
}

Result<DecoderWeights> add_decoder_weights(ir::GraphBuilder& b, std::shared_ptr<const File> f,
                                           const DecoderSpec& spec) {
  if (f == nullptr) return Status(StatusCode::kInvalidArgument, "GGUF decoder: no file");
  const std::shared_ptr<const void> owner = f;
  const std::string& arch = spec.params.arch;
  enum class Role { kMatmul, kVector };
  auto add = [&](const std::string& name, Role role, bool required) -> Result<ValueId> {
    const TensorInfo* t = f->tensor(name);
    if (t == nullptr) {
      if (!required) return ir::kNoValue;
      return Status(StatusCode::kNotFound, "GGUF " + arch + ": no tensor '" + name + "'");
    }
    const bool ok = role == Role::kMatmul ? is_matmul_dtype(t->dtype) : t->dtype == DType::kF32;
    if (!ok)
      return unsupported(arch, std::string("tensor '") + name + "' of type " +
                                   ggml_type_name(t->ggml_type) +
                                   (role == Role::kMatmul ? " as a matrix" : " as a norm / bias"));
    const ir::DTypeInfo& info = ir::dtype_info(t->dtype);
    if (info.kind == ir::DTypeKind::kBlock && t->shape[t->n_dims - 1] % info.block_elems != 0)
      return unsupported(arch, "tensor '" + name + "' of type " + ggml_type_name(t->ggml_type) +
                                   " with rows of " + std::to_string(t->shape[t->n_dims - 1]) +
                                   " (not whole blocks)");
    ir::Quant q;
    if (info.kind == ir::DTypeKind::kBlock) q.kind = ir::QuantKind::kBlock;
    const ValueId id = b.weight_ref(name, t->dtype, shape_of(*t), t->data, t->bytes, owner, q);
    if (id == ir::kNoValue) return b.status();
    return id;
  };
  DecoderWeights w;
  LAYA_ASSIGN_OR_RETURN(w.token_embd, add("token_embd.weight", Role::kMatmul, true));
  LAYA_ASSIGN_OR_RETURN(w.output_norm, add("output_norm.weight", Role::kVector, true));
  if (spec.tied_output) {
    w.output = w.token_embd;
  } else {
    LAYA_ASSIGN_OR_RETURN(w.output, add("output.weight", Role::kMatmul, true));
  }
  w.layers.resize(static_cast<size_t>(spec.params.block_count));
  for (int64_t l = 0; l < spec.params.block_count; ++l) {
    DecoderLayerWeights& lw = w.layers[static_cast<size_t>(l)];
    auto n = [&](const char* what, const char* suffix = "weight") {
      return layer_tensor_name(l, what, suffix);
    };
    LAYA_ASSIGN_OR_RETURN(lw.attn_norm, add(n("attn_norm"), Role::kVector, true));
    LAYA_ASSIGN_OR_RETURN(lw.wq, add(n("attn_q"), Role::kMatmul, true));
    LAYA_ASSIGN_OR_RETURN(lw.wk, add(n("attn_k"), Role::kMatmul, true));
    LAYA_ASSIGN_OR_RETURN(lw.wv, add(n("attn_v"), Role::kMatmul, true));
    // qwen2 always has the biases (check_decoder_tensors); llama.cpp also honours them in llama.
    LAYA_ASSIGN_OR_RETURN(lw.bq, add(n("attn_q", "bias"), Role::kVector, false));
    LAYA_ASSIGN_OR_RETURN(lw.bk, add(n("attn_k", "bias"), Role::kVector, false));
    LAYA_ASSIGN_OR_RETURN(lw.bv, add(n("attn_v", "bias"), Role::kVector, false));
    LAYA_ASSIGN_OR_RETURN(lw.wo, add(n("attn_output"), Role::kMatmul, true));
    LAYA_ASSIGN_OR_RETURN(lw.ffn_norm, add(n("ffn_norm"), Role::kVector, true));
    LAYA_ASSIGN_OR_RETURN(lw.w_gate, add(n("ffn_gate"), Role::kMatmul, true));
    LAYA_ASSIGN_OR_RETURN(lw.w_up, add(n("ffn_up"), Role::kMatmul, true));
    LAYA_ASSIGN_OR_RETURN(lw.w_down, add(n("ffn_down"), Role::kMatmul, true));
  }
  return w;
}

DecoderQkv decoder_qkv(ir::GraphBuilder& b, const DecoderSpec& spec, const DecoderLayerWeights& w,
                       ValueId x, ValueId positions, const std::string& prefix) {
  const DecoderParams& p = spec.params;
  const float eps = static_cast<float>(p.rms_norm_eps);
  const ValueId h = b.rmsnorm(x, w.attn_norm, eps, prefix + "attn_norm");
  DecoderQkv r;
  r.q = b.matmul(h, w.wq, w.bq, prefix + "q");
  r.k = b.matmul(h, w.wk, w.bk, prefix + "k");
  r.v = b.matmul(h, w.wv, w.bv, prefix + "v");
  const int32_t hd = static_cast<int32_t>(spec.head_dim);
  const int32_t rot =
      p.rope_dimension_count == spec.head_dim ? 0 : static_cast<int32_t>(p.rope_dimension_count);
  const float theta = static_cast<float>(p.rope_freq_base);
  r.q = b.rope(r.q, positions, hd, theta, spec.rope_mode, rot, prefix + "rope_q");
  r.k = b.rope(r.k, positions, hd, theta, spec.rope_mode, rot, prefix + "rope_k");
  return r;
}

ir::Attrs decoder_attention_attrs(const DecoderSpec& spec) {
  ir::Attrs a;
  a.n_heads = static_cast<int32_t>(spec.params.head_count);
  a.n_kv_heads = static_cast<int32_t>(spec.params.head_count_kv);
  a.head_dim = static_cast<int32_t>(spec.head_dim);
  a.scale = 0.0f;  // 1 / sqrt(head_dim), as llama.cpp's llama and qwen2 graphs
  a.mask = ir::MaskKind::kCausal;
  return a;
}

ValueId decoder_layer_out(ir::GraphBuilder& b, const DecoderSpec& spec,
                          const DecoderLayerWeights& w, ValueId x, ValueId attn,
                          const std::string& prefix) {
  const float eps = static_cast<float>(spec.params.rms_norm_eps);
  x = b.add(x, b.matmul(attn, w.wo, ir::kNoValue, prefix + "attn_out"), prefix + "attn_res");
  ValueId h = b.rmsnorm(x, w.ffn_norm, eps, prefix + "ffn_norm");
  const ValueId gate = b.matmul(h, w.w_gate, ir::kNoValue, prefix + "gate");
  const ValueId up = b.matmul(h, w.w_up, ir::kNoValue, prefix + "up");
  h = b.mul(b.silu(gate, prefix + "silu"), up, prefix + "swiglu");
  h = b.matmul(h, w.w_down, ir::kNoValue, prefix + "down");
  return b.add(x, h, prefix + "ffn_res");
}

ValueId decoder_logits(ir::GraphBuilder& b, const DecoderSpec& spec, const DecoderWeights& w,
                       ValueId x) {
  x = b.rmsnorm(x, w.output_norm, static_cast<float>(spec.params.rms_norm_eps), "output_norm");
  return b.matmul(x, w.output, ir::kNoValue, "lm_head");
}

void decoder_metadata(const File& f, const DecoderSpec& spec, ir::Metadata* meta) {
  const DecoderParams& p = spec.params;
  meta->architecture = p.arch;
  if (Result<std::string_view> t = f.get_string("tokenizer.chat_template"); t.is_ok())
    meta->chat_template = std::string(*t);
  std::string source = "GGUF";
  if (Result<std::string_view> name = f.get_string("general.name"); name.is_ok())
    source = std::string(*name) + " (GGUF)";
  meta->provenance.source = source;
  char eps[32], base[32];
  std::snprintf(eps, sizeof eps, "%.9g", p.rms_norm_eps);
  std::snprintf(base, sizeof base, "%.9g", p.rope_freq_base);
  auto& props = meta->properties;
  props.emplace_back("context_length", std::to_string(p.context_length));
  props.emplace_back("embedding_length", std::to_string(p.embedding_length));
  props.emplace_back("block_count", std::to_string(p.block_count));
  props.emplace_back("feed_forward_length", std::to_string(spec.d_ff));
  props.emplace_back("head_count", std::to_string(p.head_count));
  props.emplace_back("head_count_kv", std::to_string(p.head_count_kv));
  props.emplace_back("rope_dimension_count", std::to_string(p.rope_dimension_count));
  props.emplace_back("rope_freq_base", base);
  props.emplace_back("rope_mode", ir::rope_mode_name(spec.rope_mode));
  props.emplace_back("rms_norm_eps", eps);
  props.emplace_back("vocab_size", std::to_string(spec.vocab));
  props.emplace_back("tied_output", spec.tied_output ? "true" : "false");
}

Result<ir::Graph> build_decoder_graph(std::shared_ptr<const File> f,
                                      const DecoderGraphOptions& opts) {
  if (f == nullptr) return Status(StatusCode::kInvalidArgument, "GGUF decoder: no file");
  if (opts.max_batch < 1 || opts.max_seq < 1)
    return status_error(
        StatusCode::kInvalidArgument, "GGUF decoder: max_batch %lld and max_seq %lld must be >= 1",
        static_cast<long long>(opts.max_batch), static_cast<long long>(opts.max_seq));
  LAYA_ASSIGN_OR_RETURN(DecoderSpec spec, decoder_spec(*f));
  ir::GraphBuilder b;
  const int batch = b.symbol("batch", 1, opts.max_batch);
  const int seq = b.symbol("seq", 1, std::min(opts.max_seq, spec.params.context_length));
  const ir::Shape bs = ir::Shape::of({ir::Dim::sym(batch), ir::Dim::sym(seq)});
  const ValueId ids = b.input("ids", DType::kI32, bs, ir::InputRole::kTokenIds);
  const ValueId pos = b.input("positions", DType::kI32, bs, ir::InputRole::kPositions);
  LAYA_ASSIGN_OR_RETURN(DecoderWeights w, add_decoder_weights(b, f, spec));
  const ir::Attrs attn_attrs = decoder_attention_attrs(spec);
  ir::GraphBuilder::AttentionIds attn_ids;
  attn_ids.q_pos = pos;
  attn_ids.k_pos = pos;
  ValueId x = b.embedding(w.token_embd, ids, "embed");
  for (int64_t l = 0; l < spec.params.block_count; ++l) {
    const std::string prefix = "blk." + std::to_string(l) + ".";
    const DecoderLayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const DecoderQkv qkv = decoder_qkv(b, spec, lw, x, pos, prefix);
    const ValueId att =
        b.attention(qkv.q, qkv.k, qkv.v, ir::kNoValue, attn_ids, attn_attrs, prefix + "attn");
    x = decoder_layer_out(b, spec, lw, x, att, prefix);
  }
  b.output(decoder_logits(b, spec, w, x), "logits");
  decoder_metadata(*f, spec, &b.meta());
  return std::move(b).finish();
}

Result<ir::Graph> build_cached_decoder_graph(std::shared_ptr<const File> f,
                                             const CachedDecoderGraphOptions& opts) {
  if (f == nullptr) return Status(StatusCode::kInvalidArgument, "GGUF decoder: no file");
  if (opts.max_batch < 1 || opts.max_seq < 1 || opts.max_cells < 1)
    return status_error(
        StatusCode::kInvalidArgument,
        "GGUF decoder: max_batch %lld, max_seq %lld and max_cells %lld must be >= 1",
        static_cast<long long>(opts.max_batch), static_cast<long long>(opts.max_seq),
        static_cast<long long>(opts.max_cells));
  if (opts.kv_dtype != DType::kF32 && opts.kv_dtype != DType::kF16)
    return status_error(StatusCode::kInvalidArgument,
                        "GGUF decoder: KV cache dtype %s; expected f32 or f16",
                        ir::dtype_name(opts.kv_dtype));
  LAYA_ASSIGN_OR_RETURN(DecoderSpec spec, decoder_spec(*f));
  const int64_t ctx = spec.params.context_length;
  ir::GraphBuilder b;
  const int batch = b.symbol("batch", 1, opts.max_batch);
  const int seq = b.symbol("seq", 1, std::min(opts.max_seq, ctx));
  const int cells = b.symbol("cells", 1, std::min(opts.max_cells, ctx));
  const ir::Shape bs = ir::Shape::of({ir::Dim::sym(batch), ir::Dim::sym(seq)});
  const ir::Shape cs = ir::Shape::of({ir::Dim::fixed(1), ir::Dim::sym(cells)});
  const ValueId ids = b.input("ids", DType::kI32, bs, ir::InputRole::kTokenIds);
  const ValueId pos = b.input("positions", DType::kI32, bs, ir::InputRole::kPositions);
  const ValueId seq_ids = b.input("seq_ids", DType::kI32, bs, ir::InputRole::kSeqIds);
  const ValueId tok_cells = b.input("cells", DType::kI32, bs, ir::InputRole::kCacheCells);
  const ValueId cell_pos =
      b.input("cell_positions", DType::kI32, cs, ir::InputRole::kCellPositions);
  const ValueId cell_seq = b.input("cell_seq_ids", DType::kI32, cs, ir::InputRole::kCellSeqIds);
  const int rows = b.symbol("rows", 1, std::min(opts.max_seq, ctx));
  const ValueId logit_rows =
      b.input("logit_rows", DType::kI32, ir::Shape::of({ir::Dim::sym(batch), ir::Dim::sym(rows)}),
              ir::InputRole::kLogitRows);
  const int64_t kv_width = spec.params.head_count_kv * spec.head_dim;
  const ir::Shape cache =
      ir::Shape::of({ir::Dim::fixed(1), ir::Dim::sym(cells), ir::Dim::fixed(kv_width)});
  LAYA_ASSIGN_OR_RETURN(DecoderWeights w, add_decoder_weights(b, f, spec));
  const ir::Attrs attn_attrs = decoder_attention_attrs(spec);
  ValueId x = b.embedding(w.token_embd, ids, "embed");
  for (int64_t l = 0; l < spec.params.block_count; ++l) {
    const std::string prefix = "blk." + std::to_string(l) + ".";
    const DecoderLayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const ValueId k_cache = b.state(prefix + "k_cache", opts.kv_dtype, cache);
    const ValueId v_cache = b.state(prefix + "v_cache", opts.kv_dtype, cache);
    const DecoderQkv qkv = decoder_qkv(b, spec, lw, x, pos, prefix);
    const ValueId kc = b.kv_write(k_cache, qkv.k, tok_cells, prefix + "k_write");
    const ValueId vc = b.kv_write(v_cache, qkv.v, tok_cells, prefix + "v_write");
    const ValueId att = b.attention(qkv.q, kc, vc, ir::kNoValue, {pos, cell_pos, seq_ids, cell_seq},
                                    attn_attrs, prefix + "attn");
    x = decoder_layer_out(b, spec, lw, x, att, prefix);
  }
  x = b.gather(x, logit_rows, "logit_rows");
  b.output(decoder_logits(b, spec, w, x), "logits");
  decoder_metadata(*f, spec, &b.meta());
  return std::move(b).finish();
}

}  // namespace laya::frontends::gguf
