#include "runtime/decisions/decision.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/decisions/schema.h"

namespace laya::decision {

namespace {

using json::Value;

// laya.shortlist._rank for one choice question: the kept label indices in rank order and their
// signed cosines (empty scores: a passthrough, nothing dropped).
struct Ranked {
  std::vector<size_t> kept;
  std::vector<double> scores;
  bool passthrough = true;
};

Result<Ranked> rank_labels(const Question& q, const Value& state, int k, Network& net) {
  Ranked r;
  const size_t n = q.labels.size();
  if (static_cast<size_t>(k) >= n) {
    r.kept.resize(n);
    std::iota(r.kept.begin(), r.kept.end(), size_t{0});
    return r;
  }
  r.passthrough = false;
  std::vector<std::string> texts;
  texts.push_back(q.instructions + "\n" + serialize_state(state));
  texts.insert(texts.end(), q.options.begin(), q.options.end());
  std::vector<std::vector<float>> emb;
  LAYA_RETURN_IF_ERROR(net.embed(texts, &emb));
  if (emb.size() != texts.size() || emb.empty() || emb[0].empty())
    return Status(StatusCode::kInternal, "the embedder returned the wrong number of rows");
  const size_t dim = emb[0].size();
  auto vec = [&](size_t i) {
    std::vector<double> v(dim);
    for (size_t d = 0; d < dim && d < emb[i].size(); ++d) {
      const double x = emb[i][d];
      v[d] = std::isfinite(x) ? x : 0.0;  // np.nan_to_num(..., 0.0)
    }
    return v;
  };
  auto norm = [](const std::vector<double>& v) {
    double s = 0.0;
    for (double x : v) s += x * x;
    return std::sqrt(s);
  };
  const std::vector<double> query = vec(0);
  const double qn = norm(query);
  std::vector<double> sims(n, 0.0);
  if (qn != 0.0) {
    for (size_t i = 0; i < n; ++i) {
      const std::vector<double> d = vec(i + 1);
      const double denom = norm(d) * qn;
      if (!(denom > 0.0)) continue;
      double dot = 0.0;
      for (size_t j = 0; j < dim; ++j) dot += d[j] * query[j];
      sims[i] = std::clamp(dot / denom, -1.0, 1.0);
    }
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return -sims[a] < -sims[b]; });
  order.resize(static_cast<size_t>(k));
  r.kept = order;
  for (size_t i : order) r.scores.push_back(sims[i]);
  return r;
}

// predict_shortlist's question reduction; fills the "shortlist" metadata.
Result<std::vector<Question>> shortlist_questions(const DecisionRequest& req, Network& net,
                                                  Value* meta) {
  std::vector<Question> out;
  *meta = Value::object();
  for (const Question& q : req.questions) {
    if (q.type != QType::kChoice) {
      out.push_back(q);
      continue;
    }
    LAYA_ASSIGN_OR_RETURN(Ranked r, rank_labels(q, req.states[0], *req.shortlist_k, net));
    Value m = Value::object();
    Value labels = Value::array();
    for (size_t i : r.kept) labels.push(q.labels[i]);
    m.set("labels", std::move(labels));
    if (r.passthrough) {
      m.set("scores", Value());
    } else {
      Value scores = Value::array();
      for (double s : r.scores) scores.push(Value::number(s));
      m.set("scores", std::move(scores));
    }
    m.set("k", Value::integer(*req.shortlist_k));
    m.set("n", Value::integer(static_cast<int64_t>(q.labels.size())));
    m.set("passthrough", Value::boolean(r.passthrough));
    meta->members().push_back({q.id, std::move(m)});
    if (r.passthrough) {
      out.push_back(q);
      continue;
    }
    Question narrowed = q;
    narrowed.labels.clear();
    narrowed.descriptions.clear();
    narrowed.options.clear();
    narrowed.option_order.clear();
    for (size_t i : r.kept) {
      narrowed.labels.push_back(q.labels[i]);
      narrowed.descriptions.push_back(q.descriptions[i]);
      narrowed.options.push_back(q.options[i]);
    }
    out.push_back(std::move(narrowed));
  }
  return out;
}

// Every state's rows (the whole request is tokenized before the first forward, as upstream
// encodes a window of states before running it).
Result<std::vector<StateRows>> build_rows(const DecisionRequest& req,
                                          const std::vector<Question>& questions,
                                          const TextEncoder& tok, const SpecialTokens& sp,
                                          const DecisionSettings& settings) {
  const int max_len = req.max_len.value_or(settings.max_len);
  const int head_max_len = req.head_max_len.value_or(settings.head_max_len);
  std::vector<Head> heads;
  heads.reserve(questions.size());
  for (const Question& q : questions) {
    LAYA_ASSIGN_OR_RETURN(Head h, build_head(tok, sp, q, head_max_len));
    heads.push_back(std::move(h));
  }
  std::vector<StateRows> out;
  out.reserve(req.states.size());
  for (const Value& state : req.states) {
    LAYA_ASSIGN_OR_RETURN(StateTokens st, encode_state(tok, sp, state));
    StateRows sr;
    sr.rows.reserve(questions.size());
    for (size_t j = 0; j < questions.size(); ++j) {
      LAYA_ASSIGN_OR_RETURN(Row r,
                            build_row(heads[j], questions[j], st, sp, max_len, head_max_len));
      sr.rows.push_back(std::move(r));
    }
    out.push_back(std::move(sr));
  }
  return out;
}

}  // namespace

Status prepare_decision(const DecisionRequest& req, const TextEncoder& tok, const SpecialTokens& sp,
                        const DecisionSettings& settings, Network& net, PreparedDecision* out) {
  *out = PreparedDecision();
  out->questions = req.questions;
  if (req.shortlist_k) {
    LAYA_ASSIGN_OR_RETURN(out->questions, shortlist_questions(req, net, &out->shortlist));
  }
  if (out->questions.empty()) return Status::ok();
  LAYA_ASSIGN_OR_RETURN(out->states, build_rows(req, out->questions, tok, sp, settings));
  for (const StateRows& sr : out->states)
    for (const Row& r : sr.rows) out->K = std::max(out->K, static_cast<int>(r.markers.size()));
  return Status::ok();
}

Status forward_decisions(std::span<PreparedDecision* const> decisions, Network& net,
                         std::vector<float>* logits, std::vector<float>* act, int* K) {
  std::vector<Row> packed;
  *K = 2;
  for (const PreparedDecision* d : decisions) {
    *K = std::max(*K, d->K);
    for (const StateRows& sr : d->states)
      for (const Row& r : sr.rows) packed.push_back(r);
  }
  logits->assign(packed.size() * static_cast<size_t>(*K), -1e4f);
  act->assign(packed.size() * 2, 0.0f);
  if (packed.empty()) return Status::ok();
  return net.forward(packed, *K, logits->data(), act->data());
}

void finish_decision(const DecisionRequest& req, PreparedDecision&& prep, const float* logits,
                     const float* act, int K, const DecisionSettings& settings,
                     DecisionOutput* out) {
  out->questions = std::move(prep.questions);
  out->states.clear();
  const std::vector<Question>& questions = out->questions;
  std::vector<Value> results;
  if (questions.empty()) {
    out->states.resize(req.states.size());
    for (size_t i = 0; i < req.states.size(); ++i) results.push_back(empty_result());
  } else {
    size_t row = 0;
    for (const StateRows& st : prep.states) {
      const std::vector<Row>& rows = st.rows;
      StateResult sr;
      for (size_t j = 0; j < rows.size(); ++j, ++row) {
        Answer a = compute_answer(questions[j], rows[j].markers.size(),
                                  logits + row * static_cast<size_t>(K), act + row * 2,
                                  settings.temperatures);
        gate_answer(req.min_confidence, &a);
        sr.answers.push_back(std::move(a));
        sr.usage.input_tokens += static_cast<int64_t>(rows[j].ids.size());
        sr.usage.state_tokens_dropped = std::max(sr.usage.state_tokens_dropped,
                                                 rows[j].state_tokens - rows[j].state_tokens_used);
        sr.usage.truncated_questions += rows[j].truncated() ? 1 : 0;
      }
      sr.usage.state_tokens = rows.empty() ? 0 : rows[0].state_tokens;
      results.push_back(make_result(questions, sr.answers, usage_block(questions, rows)));
      out->states.push_back(std::move(sr));
    }
  }
  if (req.shortlist_k && !results.empty()) results[0].set("shortlist", std::move(prep.shortlist));
  if (req.schema)
    for (Value& r : results) {
      Value details = decision_details(req.fields, r);
      r = req.return_details ? std::move(details) : *details.find("values");
    }
  if (!req.batch && !results.empty())
    out->json = std::move(results[0]);
  else
    out->json = Value::array(std::move(results));
}

Status run_decision(const DecisionRequest& req, const TextEncoder& tok, const SpecialTokens& sp,
                    const DecisionSettings& settings, Network& net, DecisionOutput* out) {
  PreparedDecision prep;
  LAYA_RETURN_IF_ERROR(prepare_decision(req, tok, sp, settings, net, &prep));
  std::vector<float> logits, act;
  int K = 2;
  PreparedDecision* one[1] = {&prep};
  LAYA_RETURN_IF_ERROR(forward_decisions(one, net, &logits, &act, &K));
  finish_decision(req, std::move(prep), logits.data(), act.data(), K, settings, out);
  return Status::ok();
}

Result<Value> explain_decision(const DecisionRequest& req, const TextEncoder& tok,
                               const SpecialTokens& sp, const DecisionSettings& settings,
                               Network* net) {
  std::vector<Question> questions = req.questions;
  if (req.shortlist_k) {
    if (!net)
      return Status(StatusCode::kFailedPrecondition,
                    "a shortlist request needs the encoder's embeddings to decide its rows");
    Value meta;
    LAYA_ASSIGN_OR_RETURN(questions, shortlist_questions(req, *net, &meta));
  }
  Value rows = Value::array();
  std::vector<Value> usages;
  if (questions.empty()) {
    for (size_t i = 0; i < req.states.size(); ++i) usages.push_back(*empty_result().find("usage"));
  } else {
    LAYA_ASSIGN_OR_RETURN(std::vector<StateRows> per_state,
                          build_rows(req, questions, tok, sp, settings));
    for (const StateRows& sr : per_state) {
      for (size_t j = 0; j < sr.rows.size(); ++j) {
        const Row& r = sr.rows[j];
        Value row = Value::object();
        row.set("question", Value::string(questions[j].id));
        Value ids = Value::array(), markers = Value::array();
        for (int32_t id : r.ids) ids.push(Value::integer(id));
        for (int32_t m : r.markers) markers.push(Value::integer(m));
        row.set("input_ids", std::move(ids));
        row.set("marker_positions", std::move(markers));
        row.set("truncated", Value::boolean(r.truncated()));
        rows.push(std::move(row));
      }
      usages.push_back(usage_block(questions, sr.rows));
    }
  }
  Value out = Value::object();
  out.set("rows", std::move(rows));
  out.set("usage", req.batch ? Value::array(std::move(usages)) : std::move(usages[0]));
  return out;
}

}  // namespace laya::decision
