#include "runtime/decisions/agent.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace laya::decision {

namespace {

int find_io(const ir::Graph& g, const std::vector<ir::ValueId>& list, const char* name) {
  for (size_t i = 0; i < list.size(); ++i)
    if (g.values[list[i]].name == name) return static_cast<int>(i);
  return -1;
}

std::string property(const ir::Graph& g, const std::string& key) {
  for (const auto& [k, v] : g.meta.properties)
    if (k == key) return v;
  return "";
}

}  // namespace

Result<std::unique_ptr<Agent>> Agent::create(ir::Graph graph, ModelTokenizer tokenizer,
                                             const runtime::SessionOptions& opts) {
  if (graph.meta.architecture != "laya")
    return status_error(StatusCode::kInvalidArgument,
                        "not a Laya decision model (architecture '%s'); convert a Laya checkpoint "
                        "with laya-convert",
                        graph.meta.architecture.c_str());
  if (!graph.meta.decision.present)
    return Status(StatusCode::kInvalidArgument, "the model has no decision config");
  const std::string layout = property(graph, "laya.option_layout");
  if (!layout.empty() && layout != "sequential")
    return status_error(StatusCode::kUnsupported,
                        "option_layout '%s' is not supported (only 'sequential', the layout every "
                        "published checkpoint was trained on)",
                        layout.c_str());
  if (!tokenizer.encoder) return Status(StatusCode::kInvalidArgument, "no tokenizer given");
  std::unique_ptr<Agent> a(new Agent());
  a->tok_ = std::move(tokenizer);
  const ir::DecisionConfig& dc = graph.meta.decision;
  a->settings_.max_len = dc.max_len > 0 ? dc.max_len : 512;
  a->settings_.head_max_len = dc.head_max_len > 0 ? dc.head_max_len : 192;
  a->settings_.temperatures = model_temperatures(graph.meta);

  const ir::Graph& g = graph;
  a->in_ids_ = find_io(g, g.inputs, "ids");
  a->in_pos_ = find_io(g, g.inputs, "pos");
  a->in_seq_ = find_io(g, g.inputs, "seq");
  a->in_qtype_ = find_io(g, g.inputs, "qtype");
  a->in_row_start_ = find_io(g, g.inputs, "row_start");
  a->in_markers_ = find_io(g, g.inputs, "markers");
  a->in_marker_valid_ = find_io(g, g.inputs, "marker_valid");
  for (auto [idx, name] : {std::pair{a->in_ids_, "ids"},
                           {a->in_pos_, "pos"},
                           {a->in_seq_, "seq"},
                           {a->in_qtype_, "qtype"},
                           {a->in_row_start_, "row_start"},
                           {a->in_markers_, "markers"},
                           {a->in_marker_valid_, "marker_valid"}})
    if (idx < 0)
      return status_error(StatusCode::kInvalidArgument, "the decision graph has no input '%s'",
                          name);
  if (g.inputs.size() != 7)
    return status_error(StatusCode::kInvalidArgument,
                        "the decision graph has %zu inputs; the contract has 7 (ids, pos, seq, "
                        "qtype, row_start, markers, marker_valid)",
                        g.inputs.size());
  a->out_logits_ = find_io(g, g.outputs, "logits");
  a->out_act_ = find_io(g, g.outputs, "act_logits");
  a->out_emb_ = find_io(g, g.outputs, "embeddings");
  if (a->out_logits_ < 0 || a->out_act_ < 0)
    return Status(StatusCode::kInvalidArgument,
                  "the decision graph lacks the 'logits' or 'act_logits' output");
  a->sym_tokens_ = g.find_symbol("tokens");
  a->sym_rows_ = g.find_symbol("rows");
  a->sym_options_ = g.find_symbol("options");
  if (a->sym_tokens_ < 0 || a->sym_rows_ < 0 || a->sym_options_ < 0)
    return Status(StatusCode::kInvalidArgument,
                  "the decision graph lacks one of the symbols tokens / rows / options");
  a->max_tokens_ = g.symbols[static_cast<size_t>(a->sym_tokens_)].max;
  a->max_rows_ = g.symbols[static_cast<size_t>(a->sym_rows_)].max;
  a->max_options_ = g.symbols[static_cast<size_t>(a->sym_options_)].max;
  if (a->out_emb_ >= 0) {
    const ir::Value& e = g.values[g.outputs[static_cast<size_t>(a->out_emb_)]];
    if (e.shape.rank != 2 || !e.shape.dims[1].is_fixed())
      return Status(StatusCode::kInvalidArgument, "the 'embeddings' output is not [rows, D]");
    a->dim_ = e.shape.dims[1].c;
  }

  LAYA_ASSIGN_OR_RETURN(a->session_, runtime::Session::prepare(graph, opts));
  LAYA_ASSIGN_OR_RETURN(a->buffers_, runtime::session_buffers_alloc(*a->session_));
  LAYA_RETURN_IF_ERROR(a->session_->bind_memory(a->buffers_.persistent.region(),
                                                a->buffers_.activations.region(),
                                                a->buffers_.scratch.region()));
  const size_t T = static_cast<size_t>(a->max_tokens_), R = static_cast<size_t>(a->max_rows_),
               K = static_cast<size_t>(a->max_options_);
  a->ids_.assign(T, 0);
  a->pos_.assign(T, 0);
  a->seq_.assign(T, 0);
  a->qtype_.assign(T, 0);
  a->row_start_.assign(R, 0);
  a->markers_.assign(R * K, 0);
  a->marker_valid_.assign(R * K, 0);
  a->logits_.assign(R * K, 0.0f);
  a->act_.assign(R * 2, 0.0f);
  a->emb_.assign(R * static_cast<size_t>(std::max<int64_t>(a->dim_, 1)), 0.0f);
  a->symbol_values_.assign(g.symbols.size(), 0);
  for (size_t i = 0; i < g.symbols.size(); ++i) a->symbol_values_[i] = g.symbols[i].min;
  a->graph_ = std::move(graph);
  return a;
}

Status Agent::run_pass(std::span<const std::vector<int32_t>> ids,
                       std::span<const std::vector<int32_t>> markers, std::span<const QType> qtypes,
                       int K) {
  const size_t R = ids.size();
  size_t t = 0;
  for (size_t r = 0; r < R; ++r) {
    row_start_[r] = static_cast<int32_t>(t);
    const int32_t q = static_cast<int32_t>(qtypes[r]);
    for (size_t i = 0; i < ids[r].size(); ++i, ++t) {
      ids_[t] = ids[r][i];
      pos_[t] = static_cast<int32_t>(i);
      seq_[t] = static_cast<int32_t>(r);
      qtype_[t] = q;
    }
    for (int s = 0; s < K; ++s) {
      const size_t at = r * static_cast<size_t>(K) + static_cast<size_t>(s);
      const bool valid = static_cast<size_t>(s) < markers[r].size();
      markers_[at] = row_start_[r] + (valid ? markers[r][static_cast<size_t>(s)] : 0);
      marker_valid_[at] = valid ? 1 : 0;
    }
  }
  symbol_values_[static_cast<size_t>(sym_tokens_)] = static_cast<int64_t>(t);
  symbol_values_[static_cast<size_t>(sym_rows_)] = static_cast<int64_t>(R);
  symbol_values_[static_cast<size_t>(sym_options_)] = K;
  LAYA_RETURN_IF_ERROR(session_->reshape(symbol_values_));
  const void* in[7] = {};
  in[in_ids_] = ids_.data();
  in[in_pos_] = pos_.data();
  in[in_seq_] = seq_.data();
  in[in_qtype_] = qtype_.data();
  in[in_row_start_] = row_start_.data();
  in[in_markers_] = markers_.data();
  in[in_marker_valid_] = marker_valid_.data();
  std::vector<void*> out(graph_.outputs.size(), nullptr);
  out[static_cast<size_t>(out_logits_)] = logits_.data();
  out[static_cast<size_t>(out_act_)] = act_.data();
  if (out_emb_ >= 0) out[static_cast<size_t>(out_emb_)] = emb_.data();
  for (size_t i = 0; i < out.size(); ++i)
    if (!out[i])
      return status_error(StatusCode::kInvalidArgument,
                          "the decision graph has an unknown output '%s'",
                          graph_.values[graph_.outputs[i]].name.c_str());
  return session_->execute(std::span<const void* const>(in, 7), out);
}

Status Agent::forward(std::span<const Row> rows, int K, float* logits, float* act_logits) {
  if (K > max_options_)
    return status_error(StatusCode::kInvalidArgument,
                        "a question has %d options; this model was converted for at most %lld", K,
                        static_cast<long long>(max_options_));
  std::vector<std::vector<int32_t>> ids, markers;
  std::vector<QType> qtypes;
  size_t done = 0;
  while (done < rows.size()) {
    ids.clear();
    markers.clear();
    qtypes.clear();
    int64_t tokens = 0;
    size_t n = 0;
    while (done + n < rows.size() && static_cast<int64_t>(n) < max_rows_) {
      const Row& r = rows[done + n];
      if (tokens + static_cast<int64_t>(r.ids.size()) > max_tokens_) break;
      tokens += static_cast<int64_t>(r.ids.size());
      ids.push_back(r.ids);
      markers.push_back(r.markers);
      qtypes.push_back(r.qtype);
      ++n;
    }
    if (n == 0)
      return status_error(StatusCode::kInvalidArgument,
                          "a row of %zu tokens is longer than this model's token bound %lld",
                          rows[done].ids.size(), static_cast<long long>(max_tokens_));
    LAYA_RETURN_IF_ERROR(run_pass(ids, markers, qtypes, K));
    std::memcpy(logits + done * static_cast<size_t>(K), logits_.data(),
                n * static_cast<size_t>(K) * sizeof(float));
    std::memcpy(act_logits + done * 2, act_.data(), n * 2 * sizeof(float));
    done += n;
  }
  return Status::ok();
}

Status Agent::embed(const std::vector<std::string>& texts, std::vector<std::vector<float>>* out) {
  if (out_emb_ < 0)
    return Status(StatusCode::kUnsupported,
                  "this model has no 'embeddings' output, which a shortlist needs");
  out->clear();
  constexpr size_t kMaxLength = 512;  // embed_fn_from_agent's max_length
  std::vector<std::vector<int32_t>> rows;
  for (const std::string& t : texts) {
    std::vector<int32_t> body;
    LAYA_RETURN_IF_ERROR(tok_.encoder->encode(t, &body));
    if (body.size() > kMaxLength - 2) body.resize(kMaxLength - 2);
    std::vector<int32_t> ids = {tok_.specials.cls};
    ids.insert(ids.end(), body.begin(), body.end());
    ids.push_back(tok_.specials.sep);
    rows.push_back(std::move(ids));
  }
  const std::vector<int32_t> no_markers;
  size_t done = 0;
  while (done < rows.size()) {
    int64_t tokens = 0;
    size_t n = 0;
    while (done + n < rows.size() && static_cast<int64_t>(n) < max_rows_ &&
           tokens + static_cast<int64_t>(rows[done + n].size()) <= max_tokens_)
      tokens += static_cast<int64_t>(rows[done + n++].size());
    if (n == 0)
      return Status(StatusCode::kInvalidArgument, "a text is longer than the token bound");
    std::vector<std::vector<int32_t>> markers(n, no_markers);
    std::vector<QType> qtypes(n, QType::kChoice);
    LAYA_RETURN_IF_ERROR(run_pass(std::span(rows).subspan(done, n), markers, qtypes, 2));
    for (size_t r = 0; r < n; ++r)
      out->emplace_back(
          emb_.begin() + static_cast<std::ptrdiff_t>(r * static_cast<size_t>(dim_)),
          emb_.begin() + static_cast<std::ptrdiff_t>((r + 1) * static_cast<size_t>(dim_)));
    done += n;
  }
  return Status::ok();
}

Result<json::Value> Agent::decide(const DecisionRequest& req) {
  return run_decision(req, *tok_.encoder, tok_.specials, settings_, *this);
}

Result<json::Value> Agent::explain(const DecisionRequest& req) {
  return explain_decision(req, *tok_.encoder, tok_.specials, settings_, this);
}

}  // namespace laya::decision
