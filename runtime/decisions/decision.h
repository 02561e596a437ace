// One decision request from parsed body to the SDK's result object, around a network.
//
//   Result<DecisionRequest> req = parse_request(body);          // request.h
//   Result<json::Value> out = run_decision(*req, tok, specials, settings, net);
//
// What it does, as the upstream SDK does it (laya 0.4.15):
//   - a request without questions answers {"model", "answers": {}, "usage": {0, 0}} per state with
//     no tokenization and no forward pass;
//   - `shortlist`: every choice question with more labels than k is narrowed to the k labels whose
//     embeddings are nearest (signed cosine, ties to the earlier label) to the embedding of
//     "instructions\nstate" (laya.shortlist.predict_shortlist; the kept labels then come in rank
//     order, a narrowed question drops its option_order, and the result gains "shortlist");
//   - the state is tokenized once and every question's head once; each (state, question) is one
//     row; rows of `batch_size` states (all states by default) go through the network together;
//   - answers, usage and the min_confidence gate per state (answers.h);
//   - `schema` requests return Agent.decide's values, or with `return_details` its
//     DecisionResult as an object (schema.h); the batch form returns a list of results.
// Refusals (a question whose options do not fit max_len) carry the request error classes.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/text/json.h"
#include "runtime/decisions/answers.h"
#include "runtime/decisions/request.h"
#include "runtime/decisions/sequence.h"

namespace laya::decision {

// The checkpoint's decision settings (rl_agent_config.json).
struct DecisionSettings {
  int max_len = 512;
  int head_max_len = 192;
  Temperatures temperatures;
};

// The forward passes a decision needs; implemented over a Session by the agent (agent.h) and by
// recorded outputs in tests.
class Network {
 public:
  virtual ~Network() = default;
  // The decision graph over `rows` packed back to back. `K` >= the widest row's marker count and
  // >= 2. Writes `logits` f32 [rows.size(), K] (slots past a row's markers: -1e4) and
  // `act_logits` f32 [rows.size(), 2]; both are the caller's.
  virtual Status forward(std::span<const Row> rows, int K, float* logits, float* act_logits) = 0;
  // Mean-pooled final encoder states (over every token, [CLS] and [SEP] included) of each text
  // tokenized with the tokenizer's special-token template and cut to 512 tokens, as upstream's
  // embed_fn_from_agent computes them; one row of `out` per text.
  virtual Status embed(const std::vector<std::string>& texts,
                       std::vector<std::vector<float>>* out) = 0;
};

// The SDK's result object: Agent.predict's (an object), predict_batch's (a list), predict_shortlist's
// (the object plus "shortlist") or decide's details for a schema request.
Result<json::Value> run_decision(const DecisionRequest& req, const TextEncoder& tok,
                                 const SpecialTokens& sp, const DecisionSettings& settings,
                                 Network& net);

// What the network would read, without running it:
//   {"rows": [{"question", "input_ids", "marker_positions", "truncated"}...], "usage": ...}
// rows in the order the network reads them (state by state, questions in order); usage is the
// result's usage object, or a list of them for the batch form. A shortlist request needs `net`
// (the embeddings decide which labels the rows carry); other requests never touch it.
Result<json::Value> explain_decision(const DecisionRequest& req, const TextEncoder& tok,
                                     const SpecialTokens& sp, const DecisionSettings& settings,
                                     Network* net);

}  // namespace laya::decision
