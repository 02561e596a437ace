// A `/v1/systemone` request: parsing and validation with the upstream SDK's error classes, limits
// and messages (laya 0.4.15: laya/serve.py, Agent._check_question / _to_internal in laya/agent.py,
// laya/confidence.py).
//
// Body (JSON object):
//   state            the state: a string, or any JSON value (serialized as Python json.dumps)
//   states           instead of `state`: a list of states -> the result is a list (predict_batch)
//   questions        {id: {type: choice|score|noul, instructions, criteria?, labels?, option_order?}}
//   schema           instead of `questions`: a JSON schema (Agent.decide; see schema.h)
//   return_details   with `schema`: true -> decide's DecisionResult as an object; false (the
//                    default, as Agent.decide) -> the schema-shaped values
//   min_confidence   a number in [0, 1], or {bucket: number} with buckets "choice:2", "score:3-5",
//                    "noul:2", ..., "default"
//   max_len, head_max_len   per-call token budgets (positive integers, at most 8192)
//   batch_size       validated (the batch form only) and without effect: rows are packed into
//                    passes by the model's bounds, and answers do not depend on the grouping
//   shortlist        true (k = 20) or a positive integer k: choice questions with more labels are
//                    narrowed to the k nearest by embedding first (upstream predict_shortlist)
//   model, task, lang, lang_guess   routing fields: validated as upstream's server does, and used
//                    by `laya-run route`; a decision on a given model file does not read them
//   sort_by_length   accepted (a boolean) and without effect: rows are packed, not padded
// Unknown keys are ignored, as upstream's server ignores them.
//
// Checks, in upstream's order; every failure is a Status with the HTTP class upstream's server
// answers and its message:
//   kRequestTooLarge (413)       body over 2 MiB; more than 64 questions; a choice over 100 options
//                                (512 with `shortlist`); a score over 32 levels; over 512 options
//                                in all; a state over 50,000 characters once serialized; more than
//                                64 states
//   kRequestInvalid (400)        not JSON; not an object with `questions` (or `states` and
//                                `questions`); `state` missing or null; `questions` not an object;
//                                `states` not a non-empty list
//   kRequestUnprocessable (422)  a malformed question (named: unknown type, no instructions, bad
//                                criteria or labels, a bad option_order, ...), a null score level,
//                                hooks in the body, bad budgets / lang / min_confidence /
//                                batch_size / sort_by_length, an unknown model or task, a schema
//                                that cannot become questions
// Question ids are the object's keys; labels keep their JSON type (a choice over [1, 2] answers 1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "runtime/text/json.h"

namespace laya::decision {

enum class QType : uint8_t { kChoice = 0, kScore = 1, kNoul = 2 };
const char* qtype_name(QType t);  // "choice", "score", "noul"

// Upstream's server limits (laya/serve.py).
inline constexpr uint64_t kMaxBodyBytes = uint64_t{2} << 20;
inline constexpr int kMaxQuestions = 64;
inline constexpr int kMaxStateChars = 50000;
inline constexpr int kMaxBatchStates = 64;
inline constexpr int kMaxChoiceOptions = 100;
inline constexpr int kMaxTournamentChoiceOptions = 255;  // with LAYA_TOURNAMENT_GROUP
inline constexpr int kMaxScoreLevels = 32;
inline constexpr int kMaxTotalOptions = 512;
inline constexpr int kMaxTokenBudget = 8192;
inline constexpr int kDefaultShortlistK = 20;

// One validated question, normalized as Agent._to_internal does.
struct Question {
  std::string id;
  QType type = QType::kChoice;
  std::string instructions;  // a string as given, anything else as json.dumps(ensure_ascii=False)
  // choice: the answer keys, in criteria order (JSON values: strings, numbers or booleans), and
  // each label's description (null when none)
  std::vector<json::Value> labels;
  std::vector<json::Value> descriptions;
  // Option texts in label order (render_options): choice "label" or "label: description"; score
  // "level i: text"; noul "<false label>: <description>", "<true label>: <description>".
  std::vector<std::string> options;
  std::vector<std::string> legend;  // score: render_criterion(level) per level
  std::vector<int> option_order;    // slot s shows option option_order[s]; empty: in order
};

// The min_confidence gate (laya/confidence.py).
struct MinConfidence {
  bool present = false;
  bool is_map = false;
  double value = 0.0;                                   // the scalar form
  std::vector<std::pair<std::string, double>> buckets;  // the map form, in body order
};

// A field of a schema request (see schema.h).
struct SchemaField {
  std::string name;
  QType kind = QType::kChoice;
  json::Value question;                                      // the planned question definition
  std::vector<std::pair<std::string, json::Value>> options;  // choice: (label, enum value)
  int64_t minimum = 0;                                       // score: the value of level 0
};

struct DecisionRequest {
  std::vector<json::Value> states;  // one unless `batch`
  bool batch = false;               // `states` was given: the result is a list
  std::vector<Question> questions;  // in body order
  std::optional<int> max_len, head_max_len;
  MinConfidence min_confidence;
  std::optional<int> batch_size;
  std::optional<int> shortlist_k;  // set when the body asks for a shortlist
  bool schema = false;             // a schema request: `fields` planned the questions
  bool return_details = false;     // schema: the DecisionResult rather than the values
  std::vector<SchemaField> fields;
  // Routing fields, validated; null when absent.
  json::Value model, task, lang, lang_guess;
};

// Which layer's checks apply.
//  kServer   upstream's HTTP server (laya-serve) in front of the SDK: every check above.
//  kLibrary  the SDK called directly (Agent.predict / predict_batch / predict_shortlist / decide
//            with the body's fields as arguments): no server limits, refusals or routing-field
//            checks, budgets not capped; what the SDK itself raises, in its order, with its
//            messages: a null state or a non-list `states` (TypeError: kRequestInvalid), a
//            `questions` that is not an object, min_confidence, shortlist k, the questions.
//            Empty `states` answer an empty list.
enum class RequestMode : uint8_t { kServer, kLibrary };

// Parses and validates a request body (see the list above). Never reads more than kMaxBodyBytes.
// serve._check_request_limits on one state: 'state' required, questions an object, at most 64
// questions, `max_choice` options per choice (100; 255 for a server running tournaments), 32
// score levels and no null level, 512 options in all, 50,000 state characters.
Status check_server_limits(const json::Value& state, const json::Value* questions, int max_choice);

// The body's JSON parsed first (kServer: at most kMaxBodyBytes, upstream's server limit).
Result<DecisionRequest> parse_request(std::string_view body,
                                      RequestMode mode = RequestMode::kServer);
Result<DecisionRequest> parse_request(const json::Value& body,
                                      RequestMode mode = RequestMode::kServer);

// Agent._check_question + _to_internal for one question definition (exposed for schema.h and
// tests): kRequestUnprocessable naming the question and the problem.
Result<Question> parse_question(const std::string& id, const json::Value& def);

// render_criterion: a string as is, anything else as json.dumps(v, ensure_ascii=False).
std::string render_criterion(const json::Value& v);
// serialize_state: a string as is, anything else as json.dumps(state, ensure_ascii=False).
std::string serialize_state(const json::Value& state);

// laya.confidence.check_min_confidence (kRequestUnprocessable with upstream's message).
Result<MinConfidence> check_min_confidence(const json::Value& v);

}  // namespace laya::decision
