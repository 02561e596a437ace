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

// The forward passes a decision needs; implemented over a Session by EncoderNetwork (encoder.h) and by
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

// The usage counts of one state's result (the typed view of its usage block).
struct Usage {
  int64_t input_tokens = 0;   // tokens the network read for this state (decoders: prompt tokens)
  int64_t output_tokens = 0;  // generated tokens (schema decisions on a decoder)
  int64_t state_tokens = 0;   // the state's tokens (encoders)
  int64_t state_tokens_dropped = 0;  // the most any row dropped (encoders)
  int64_t truncated_questions = 0;   // questions whose row lost state tokens (encoders)
  int64_t prefill_tokens = 0;        // decoders: prompt tokens run (not from the prefix cache)
  int64_t prefix_hit_tokens = 0;     // decoders: prompt tokens reused from the prefix cache
};

// One state's typed result: an answer per question (DecisionOutput::questions) and the usage.
struct StateResult {
  std::vector<Answer> answers;
  Usage usage;
};

// A decision as computed (the typed view) and as the SDK writes it.
struct DecisionOutput {
  std::vector<Question> questions;  // as answered: a shortlist narrows a choice's labels
  std::vector<StateResult> states;  // one per state of the request
  // The SDK's result object: Agent.predict's (an object), predict_batch's (a list),
  // predict_shortlist's (the object plus "shortlist") or decide's details for a schema request.
  json::Value json;
};

Status run_decision(const DecisionRequest& req, const TextEncoder& tok, const SpecialTokens& sp,
                    const DecisionSettings& settings, Network& net, DecisionOutput* out);

// run_decision in three steps, so that several requests share forward passes (their rows
// packed: rows never interact, so every answer is the request's alone):
//   prepare_decision   the shortlist (embeddings: a forward of its own) and every row
//   forward_decisions  one forward over the rows of all the requests given, in order
//   finish_decision    answers, gate, usage and the SDK's JSON of one request, reading its rows'
//                      logits / act logits (row-major, stride K) from where its rows start
struct StateRows {
  std::vector<Row> rows;  // one per question
};
struct PreparedDecision {
  std::vector<Question> questions;  // as answered (a shortlist narrows them)
  std::vector<StateRows> states;    // rows per state (none without questions)
  json::Value shortlist;            // predict_shortlist's metadata
  int K = 2;                        // the widest row's markers (at least 2)
  size_t rows() const {
    size_t n = 0;
    for (const StateRows& s : states) n += s.rows.size();
    return n;
  }
};
Status prepare_decision(const DecisionRequest& req, const TextEncoder& tok, const SpecialTokens& sp,
                        const DecisionSettings& settings, Network& net, PreparedDecision* out);
Status forward_decisions(std::span<PreparedDecision* const> decisions, Network& net,
                         std::vector<float>* logits, std::vector<float>* act, int* K);
void finish_decision(const DecisionRequest& req, PreparedDecision&& prep, const float* logits,
                     const float* act, int K, const DecisionSettings& settings,
                     DecisionOutput* out);

// What the network would read, without running it:
//   {"rows": [{"question", "input_ids", "marker_positions", "truncated"}...], "usage": ...}
// rows in the order the network reads them (state by state, questions in order); usage is the
// result's usage object, or a list of them for the batch form. A shortlist request needs `net`
// (the embeddings decide which labels the rows carry); other requests never touch it.
Result<json::Value> explain_decision(const DecisionRequest& req, const TextEncoder& tok,
                                     const SpecialTokens& sp, const DecisionSettings& settings,
                                     Network* net);

}  // namespace laya::decision
