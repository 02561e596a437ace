// From the network's logits to the SDK's answers (laya 0.4.15: Agent._decode_answers,
// common.temp_bucket / clamp_temperature / confidence_from_probs / answer_confidence,
// confidence.apply_confidence_gate, the usage block of Agent.predict_batch).
//
// Per question row with k options (k = its marker count):
//   T = temperature_by_options["<type>:<2|3-5|6-10|11+>"] if present else temperature[qtype],
//       clamped to [0.5, 5] (non-finite: 1.0), then used as a float32 (numpy divides a float32 row
//       by a Python float in float32);
//   p = softmax(logits[:k] / T) in float32 as numpy computes it (max-shifted exp, pairwise sum),
//       put back in option order when the question has an option_order;
//   choice: choice = label[argmax p], probabilities {label: p} in criteria order,
//           confidence = clip(1 - H(p) / ln k, 0, 1) (1.0 for k < 2), answer_confidence = max p;
//   score:  score = sum(i * p_i), legend, probabilities {"0".."k-1"}, confidences as choice;
//   noul:   noul = p[1], confidence = max(p1, 1 - p1), answer_confidence = max p;
//   action: {"act_probability": softmax(act_logits)[0]} (absent without act logits).
// Every float is Python's round(x, 4) of the double value, printed as Python's repr.
// Label keys follow json.dumps: 1 -> "1", 1.5 -> "1.5", true -> "true"; a choice answers with the
// label's own JSON value.
//
// The exp and log are correctly rounded float32 (through double); numpy's SIMD versions can differ
// in the last bit, which moves a 4-decimal rounding only when a value lies within ~1e-7 of a
// rounding boundary (every recorded golden answer reproduces exactly).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "runtime/text/json.h"
#include "runtime/decisions/request.h"
#include "runtime/decisions/sequence.h"

namespace laya::decision {

// The checkpoint's calibration (rl_agent_config.json), as stored (unclamped).
struct Temperatures {
  double temperature[3] = {1.0, 1.0, 1.0};                 // choice, score, noul
  std::vector<std::pair<std::string, double>> by_options;  // "<type>:<bucket>" -> T
  // The temperature applied to a row of `k` options, clamped.
  float get(QType t, int k) const;
};

// The calibration a model file stores (ir::Metadata::decision), as stored: a Laya checkpoint's
// (rl_agent_config.json, frontends/laya.cpp) or a decoder's (laya-convert model.gguf
// --decision-config, frontends/gguf_import.h). 1.0 each when the model has no decision config (a
// GGUF file run directly, a model written before decoders stored one).
Temperatures model_temperatures(const ir::Metadata& meta);

// The key json.dumps writes for a label: a string as is, 1 -> "1", 1.5 -> "1.5", true -> "true".
std::string label_key(const json::Value& label);

// temp_bucket: "choice:2", "score:3-5", "noul:6-10", "choice:11+", ...
std::string temp_bucket(QType t, int k);
// clamp_temperature: [0.5, 5], 1.0 for a non-finite value.
double clamp_temperature(double t);

// How the min_confidence gate judged an answer (confidence.apply_confidence_gate).
enum class Abstention : uint8_t { kNone = 0, kPassed = 1, kAbstained = 2, kUnevaluated = 3 };
const char* abstention_name(Abstention a);  // "", "passed", "abstained", "unevaluated"

// One question's answer as computed, before it is written as JSON: what the C API's typed view
// reads (unrounded), and what answer_json writes (rounded as above).
struct Answer {
  QType type = QType::kChoice;
  std::vector<float> p;  // k probabilities in label order (option_order undone)
  int32_t arg = 0;       // argmax of p (the first on ties)
  double confidence =
      1.0;  // choice / score: the normalized-entropy confidence; noul: max(p1, 1 - p1)
  double answer_confidence = 1.0;  // max p, clamped to [0, 1]
  double score = 0;                // score: sum i * p_i (pairwise, as numpy)
  bool has_action = false;         // the model has an act head
  float act_probability = 0;       // softmax(act_logits)[0]
  Abstention abstention = Abstention::kNone;
  double threshold = 0;  // the gate's threshold for this answer (with a gate)
};

// The answer of one row of k options: `logits` f32 [k] (the row's first k slots), `act_logits`
// f32 [2] or null (a decoder: no act head).
Answer compute_answer(const Question& q, size_t k, const float* logits, const float* act_logits,
                      const Temperatures& temps);

// apply_confidence_gate on one answer (it reads the answer's rounded confidences, as upstream
// reads them off the answer dict): nothing without a gate.
void gate_answer(const MinConfidence& mc, Answer* a);

// The answer object upstream writes: type, choice | score + legend | noul, probabilities,
// confidence, answer_confidence, action, then the gate's low_confidence / abstention /
// abstention_threshold.
json::Value answer_json(const Question& q, const Answer& a);

// The usage of one state's result (encoders): input_tokens (sum of row lengths), output_tokens 0,
// state_tokens, state_tokens_dropped (the worst row), truncated, truncated_questions, and
// "options" {qid: {total, distinct, tokens_per_option}} when a question's options collapsed.
json::Value usage_block(const std::vector<Question>& questions, const std::vector<Row>& rows);

// {"model": "laya-rl-agent", "answers": {}, "usage": {"input_tokens": 0, "output_tokens": 0}}:
// the result for a request without questions (no tokenization, no forward pass).
json::Value empty_result();
// {"model": "laya-rl-agent", "answers": {id: answer_json}, "usage": usage}
json::Value make_result(const std::vector<Question>& questions, const std::vector<Answer>& answers,
                        json::Value usage);

}  // namespace laya::decision
