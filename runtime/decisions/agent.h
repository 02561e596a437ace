// The Laya agent: a decision graph on a session, fed packed question rows.
//
//   LAYA_ASSIGN_OR_RETURN(ir::Graph g, ir::model_load("laya.laya"));
//   LAYA_ASSIGN_OR_RETURN(ModelTokenizer t, model_tokenizer(g));          // tokenizer.h
//   LAYA_ASSIGN_OR_RETURN(auto agent, Agent::create(std::move(g), std::move(t), session_opts));
//   LAYA_ASSIGN_OR_RETURN(DecisionRequest req, parse_request(body));      // request.h
//   LAYA_ASSIGN_OR_RETURN(json::Value result, agent->decide(req));
//
// The graph follows the decision-graph contract (frontends/import.h): inputs ids / pos / seq /
// qtype [1, T], row_start [R], markers / marker_valid [R, K]; outputs logits [R, K], act_logits
// [R, 2] and, for shortlists, embeddings [R, D]; symbols `tokens`, `rows`, `options`. The rows of
// a request are concatenated into one sequence (no padding is computed); a request with more rows
// or tokens than the graph's bounds runs in as few passes as fit them (rows never interact, so the
// answers do not depend on how rows are grouped). Settings come from the model's decision config:
// max_len, head_max_len, temperatures (unclamped, as the checkpoint ships them).
//
// Errors: kInvalidArgument naming what the model lacks (not a Laya decision graph, no tokenizer,
// no decision config, a missing input or output); kUnsupported for option_layout "parallel"
// (upstream 0.4.15's experimental layout, which no shipped checkpoint uses); request errors as
// request.h; session errors as session.h. One thread at a time may use an Agent.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/text/json.h"
#include "runtime/decisions/decision.h"
#include "runtime/session.h"

namespace laya::decision {

// A tokenizer for the sequence builder with the special tokens it names.
struct ModelTokenizer {
  std::unique_ptr<TextEncoder> encoder;
  SpecialTokens specials;
};

class Agent final : public Network {
 public:
  // Prepares the session (allocating its regions) and the packed input / output buffers at the
  // graph's bounds. `graph` is consumed; its weights stay where they are (mapped file).
  static Result<std::unique_ptr<Agent>> create(ir::Graph graph, ModelTokenizer tokenizer,
                                               const runtime::SessionOptions& opts);

  Result<json::Value> decide(const DecisionRequest& req);
  Result<json::Value> explain(const DecisionRequest& req);

  const DecisionSettings& settings() const { return settings_; }
  const TextEncoder& tokenizer() const { return *tok_.encoder; }
  const SpecialTokens& specials() const { return tok_.specials; }
  runtime::Session& session() { return *session_; }

  // Network
  Status forward(std::span<const Row> rows, int K, float* logits, float* act_logits) override;
  Status embed(const std::vector<std::string>& texts,
               std::vector<std::vector<float>>* out) override;

 private:
  Agent() = default;
  // Runs rows [first, first + n) of `rows` as one pass (they fit the bounds).
  Status run_pass(std::span<const std::vector<int32_t>> ids,
                  std::span<const std::vector<int32_t>> markers, std::span<const QType> qtypes,
                  int K);

  ir::Graph graph_;
  ModelTokenizer tok_;
  DecisionSettings settings_;
  std::unique_ptr<runtime::Session> session_;
  runtime::SessionBuffers buffers_;
  // graph symbols: index of tokens / rows / options, and their upper bounds
  int sym_tokens_ = -1, sym_rows_ = -1, sym_options_ = -1;
  int64_t max_tokens_ = 0, max_rows_ = 0, max_options_ = 0;
  int64_t dim_ = 0;  // embeddings width (0: the graph has no embeddings output)
  // positions in graph.inputs / graph.outputs
  int in_ids_ = -1, in_pos_ = -1, in_seq_ = -1, in_qtype_ = -1, in_row_start_ = -1,
      in_markers_ = -1, in_marker_valid_ = -1;
  int out_logits_ = -1, out_act_ = -1, out_emb_ = -1;
  // packed buffers, sized at the bounds
  std::vector<int32_t> ids_, pos_, seq_, qtype_, row_start_, markers_, marker_valid_;
  std::vector<float> logits_, act_, emb_;
  std::vector<int64_t> symbol_values_;
};

}  // namespace laya::decision
