// Decisions on a decoder LM (issue 8 item 5): a system prompt and a device state in, a typed
// decision out, over a DecoderRunner, its KvCache, an optional PrefixCache, the model's tokenizer
// and chat template. Two request kinds (laya-run decide on a .gguf model; docs/generation.md
// "Decisions on a decoder" has the prompt layout and the examples):
//
//  questions  {state | states, questions, min_confidence?, system?}: the encoder path's body
//             (runtime/decisions/request.h). Per state the shared prompt (system + state) is prefilled
//             once; per question its suffix (question, options labelled "A)", "B)", ..., the
//             one-letter instruction, end of user turn, assistant start) is appended, the last
//             position's logits are read at the label tokens ("A", "B", ... : one token each in
//             the vocabulary) and the suffix is removed again (KvCache::remove, no copy). Answers
//             come from decision::decode_answers with the temperatures: the encoder path's
//             fields, rounding, confidences and min_confidence gate, without `action` (there is
//             no act head). Usage: input_tokens (prompt tokens over all questions), prefill_tokens
//             (those actually run), prefix_hit_tokens, output_tokens 0.
//  schema     {state | states, schema, fallback?, max_tokens?, deadline_ms?, min_confidence?,
//             system?}: the assistant turn is generated under the schema's token automaton
//             (runtime/decisions/grammar/token_automaton.h, compiled once per schema and kept per decider),
//             so only a schema-valid JSON text can come out. The walk, at every character state:
//               - a slot entry (an enum / boolean value, runtime/decisions/grammar/automaton.h): each option
//                 is scored by teacher forcing its canonical tokens (the tokenizer's encoding of
//                 its JSON text, each token checked against the grammar) from the slot:
//                 log P(option) = sum of the grammar-masked log-softmax of its tokens; the
//                 options' probabilities are softmax(log P / T) with T the choice temperature for
//                 k options; the argmax (greedy) or a draw (sampling) is appended. At a mixed
//                 entry (the first item of an array that may be empty) one constrained token
//                 decides first: a token that starts an option text means "an item", and the slot
//                 is scored; anything else (`]`) is taken as is.
//               - forced text (one possible next byte, `{"key": `, `, `, `}`): tokenized and
//                 appended in one prefill step, no decode step;
//               - otherwise (strings, numbers, integers, nulls, nullable values, array lengths):
//                 one token by sample_constrained (runtime/decisions/constrained_sampling.h).
//             Every declared property is generated (the canonical text includes optional ones).
//             `fields` has, for each slot (its path from the automaton, grammar::Slot::path, with
//             the item indices of the arrays it sits in: "rooms[1].mode", "tags[2]", "$" for a
//             root value), {"probabilities": {option_json_text: p}, "confidence": 1 - H / ln k}
//             and "needs_review": true below min_confidence. Past max_tokens decision tokens or
//             deadline_ms (from the start of that state's decision) the result is the fallback:
//             the request's `fallback`, else the schema's top-level `default` (both validated
//             when the request is read), with "fallback": true; with neither the decision fails
//             (kDeadlineExceeded past deadline_ms, kLimitExceeded past max_tokens). Both are
//             checked before each append (forced text, one token, a chosen option); the deadline
//             against DecoderDecideOptions::clock_ms. A decision text is parsed and checked
//             with grammar::schema_validate before it is returned (kInternal otherwise).
//             Result: {"decision", "fields", "fallback", "usage" {input_tokens,
//             prefix_hit_tokens, output_tokens}, "timings" {load_ms, ttft_ms, prefill_ms,
//             decode_tokens_per_s, prefix_cache {hits, misses, hit_tokens}}}.
// `states` gives a list of results (the system block is reused across states through the prefix
// cache when one is given).
//
// Prompt (one user turn, rendered with the chat template; system = the request's `system`, else
// the template's default system prompt): the part shared by every question / every state comes
// first. questions: "State:\n" + S + "\n\n" | "Question: " + instructions + "\n" + "A) option\n"
// ... + "Answer with the letter of one option (A, B, ...)." where S is the state as the encoder
// path serializes it (a string as is, anything else json.dumps(state, ensure_ascii=False));
// schema: "Decide from the device state below. Answer with one JSON object that follows this
// JSON schema:\n" + json.dumps(schema) + "\n\nState:\n" + S. The prompt's ids are the shared
// part's ids followed by the rest's, each tokenized apart (special tokens parsed, BOS per the
// GGUF for the first part only).
//
// Ownership: the decider borrows the runner, the cache, the prefix cache, the tokenizer and the
// automaton cache (all must outlive it) and owns a copy of the template and the temperatures. It
// uses sequence `seq` of the cache (empty between requests) and the prefix cache's slots. Thread
// safety: none (it drives the runner); the automaton cache is shared and locked.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "runtime/text/chat_template.h"
#include "runtime/decoder.h"
#include "runtime/decisions/grammar/token_automaton.h"
#include "runtime/text/json.h"
#include "runtime/kv_cache.h"
#include "runtime/decisions/answers.h"
#include "runtime/decisions/decision.h"
#include "runtime/decisions/request.h"
#include "runtime/prefix_cache.h"
#include "runtime/sampler.h"
#include "runtime/text/tokenizer/tokenizer.h"

namespace laya::runtime {

// The most options a decoder question may have (labels A .. Z).
inline constexpr int kMaxDecoderOptions = 26;
inline constexpr int64_t kDefaultDecisionTokens = 256;

struct DecoderSchemaRequest {
  json::Value schema;
  std::optional<json::Value> fallback;  // the request's, else the schema's `default`
  int64_t max_tokens = kDefaultDecisionTokens;
  std::optional<int64_t> deadline_ms;
};

struct DecoderRequest {
  bool schema = false;  // a schema request; otherwise a questions request
  std::vector<json::Value> states;
  bool batch = false;                   // `states`: the result is a list
  std::optional<std::string> system;    // the request's system prompt
  decision::DecisionRequest questions;  // questions requests (parse_request's checks)
  DecoderSchemaRequest schema_request;  // schema requests
  decision::MinConfidence min_confidence;
};

// Parses and validates a body. Questions requests go through decision::parse_request (server
// mode; `shortlist` is refused: it needs an encoder). Schema requests: `state` (not null) or
// `states` (a non-empty list of at most 64), `schema` (an object grammar::schema_parse accepts),
// `fallback` (schema-valid), `max_tokens` (1 .. 100000), `deadline_ms` (1 .. 3600000),
// `min_confidence` (decision::check_min_confidence), `system` (a string). Errors are
// kRequestInvalid / kRequestUnprocessable naming the field.
Result<DecoderRequest> parse_decoder_request(std::string_view body);

// The text side of a decoder: tokenizer, chat template, stop ids (EOS, end of turn).
struct DecoderText {
  const tok::Tokenizer* tokenizer = nullptr;  // borrowed
  ChatTemplate chat;
  bool add_bos = true;            // encode the first prompt part with the tokenizer's specials
  std::vector<int32_t> stop_ids;  // ids that end the assistant turn
};

// A prompt cut where the shared part ends.
struct DecoderPrompt {
  std::vector<int32_t> ids;  // shared part, then the rest
  size_t shared = 0;         // ids[0, shared) is the shared part
};

// The questions prompt of one state: the shared part (system + state) and one suffix per question.
struct QuestionsPrompt {
  std::vector<int32_t> shared;
  std::vector<std::vector<int32_t>> suffixes;  // per question
};
Result<QuestionsPrompt> questions_prompt(const DecoderText& text, const json::Value& state,
                                         const std::vector<decision::Question>& questions,
                                         const std::optional<std::string>& system);
// The schema prompt of one state (the shared part: system + instruction + schema).
Result<DecoderPrompt> schema_prompt(const DecoderText& text, const json::Value& state,
                                    const json::Value& schema,
                                    const std::optional<std::string>& system);

// KV cells a request needs: `working` for the working sequence (the longest prompt plus the
// longest answer), `stored` for the longest prompt part the prefix cache keeps (a questions
// prompt's shared part; a schema prompt's shared part: system, instruction and schema).
struct DecoderCells {
  int64_t working = 1;
  int64_t stored = 1;
};
Result<DecoderCells> decoder_request_cells(const DecoderText& text, const DecoderRequest& req);

// The label tokens "A", "B", ... of `k` options (kUnsupported naming a label that is not one
// token; kRequestUnprocessable for k > 26).
Result<std::vector<int32_t>> option_label_ids(const tok::Tokenizer& tok, size_t k);

struct DecoderDecideOptions {
  SamplerConfig sampler;  // greedy by default; its stop ids are ignored (DecoderText's count)
  double load_ms = 0;     // reported in timings
  // The clock deadline_ms and the timings read: milliseconds since any fixed origin, never
  // decreasing. Null: std::chrono::steady_clock. Tests inject one (a deterministic deadline
  // overrun). `clock_ctx` is the caller's, borrowed for the call.
  double (*clock_ms)(void* ctx) = nullptr;
  void* clock_ctx = nullptr;
  // Streaming a schema decision: each token committed to the decision's text, with its bytes, as
  // it is committed (forced text, sampled tokens, the chosen option of a scored field).
  void (*on_token)(void* user, int32_t id, std::string_view piece) = nullptr;
  void* on_token_user = nullptr;
  // Polled before each step of a schema decision: true stops it with kAborted (no fallback).
  bool (*abort)(void* user) = nullptr;
  void* abort_user = nullptr;
};

// Label logits of one state's questions (before temperature): scores[j][i] is option slot i of
// question j (the label's logit at the prompt's last position).
struct QuestionScores {
  QuestionsPrompt prompt;
  std::vector<std::vector<float>> scores;
  int64_t prefix_hit_tokens = 0;
  int64_t prefill_tokens = 0;
};

// The grammar vocabulary of a decoder: every id's bytes (Tokenizer::token_to_piece) for the
// `vocab` ids of its logits, and its stop ids (those in range).
Result<std::shared_ptr<const grammar::TokenVocab>> decoder_token_vocab(
    const tok::Tokenizer& tok, int32_t vocab, std::span<const int32_t> stop_ids);

// Compiled schema automata over one vocabulary, each compiled once per distinct schema text and
// kept while the cache lives. Thread-safe (a lock around the lookup; compiling runs under it).
// Compiling allocates on the heap, whatever arena the caller runs in (ir/arena.h).
class AutomatonCache {
 public:
  explicit AutomatonCache(std::shared_ptr<const grammar::TokenVocab> vocab)
      : vocab_(std::move(vocab)) {}
  Result<std::shared_ptr<const grammar::TokenAutomaton>> get(const json::Value& schema) const;
  const std::shared_ptr<const grammar::TokenVocab>& vocab() const { return vocab_; }

 private:
  std::shared_ptr<const grammar::TokenVocab> vocab_;
  mutable std::mutex mu_;
  mutable std::map<std::string, std::shared_ptr<const grammar::TokenAutomaton>, std::less<>>
      automata_;
};

// One enum / boolean field of a schema decision, as scored.
struct FieldResult {
  std::string path;                  // "action", "rooms[1].mode", "tags[2]", "$"
  std::vector<std::string> options;  // the option texts (JSON), in schema order
  std::vector<double> p;             // their probabilities (softmax(log P / T))
  int32_t chosen = 0;                // the option taken
  double confidence = 1.0;           // 1 - H / ln k
  bool needs_review = false;         // below min_confidence
};

struct DecoderTimings {
  double load_ms = 0, ttft_ms = 0, prefill_ms = 0, decode_tokens_per_s = 0;
  int64_t prefix_hits = 0, prefix_misses = 0, prefix_hit_tokens = 0;
};

// One state's schema decision (the typed view of its result object).
struct SchemaDecision {
  json::Value decision;  // the generated value, or the fallback
  std::vector<FieldResult> fields;
  bool fallback = false;
  decision::Usage usage;  // input_tokens, prefix_hit_tokens, output_tokens
  DecoderTimings timings;
};

// What decide() computes: the typed results and the JSON written from them.
struct DecoderOutput {
  bool schema = false;
  decision::DecisionOutput questions;     // questions requests: answers per state (its json unused)
  std::vector<SchemaDecision> decisions;  // schema requests: one per state
  json::Value json;                       // the result object, or a list for `states`
};

class DecoderDecider {
 public:
  // kInvalidArgument when the tokenizer or the automaton cache is null, `seq` is outside the
  // cache, the prefix cache is over another cache or holds `seq` as a slot.
  static Result<std::unique_ptr<DecoderDecider>> create(DecoderRunner& runner, KvCache& cache,
                                                        PrefixCache* prefix_cache, DecoderText text,
                                                        decision::Temperatures temps,
                                                        const AutomatonCache* automata,
                                                        int32_t seq = 0);

  // Answers a request into `out` (cleared first). On failure the working sequence is empty again.
  Status decide(const DecoderRequest& req, const DecoderDecideOptions& opts, DecoderOutput* out);

  // questions: the raw label logits (T = 1) of one state, by the path decide() takes (prefix
  // reuse included): what decide's answers divide by the temperature, and what laya-run calibrate
  // fits the temperatures on (runtime/decisions/calibration.h).
  Result<QuestionScores> score_questions(const json::Value& state,
                                         const std::vector<decision::Question>& questions,
                                         const std::optional<std::string>& system);
  // schema: one state's decision.
  Status decide_schema(const json::Value& state, const DecoderRequest& req,
                       const DecoderDecideOptions& opts, SchemaDecision* out);

  const grammar::TokenVocab& vocab() const { return *automata_->vocab(); }

  DecoderDecider(const DecoderDecider&) = delete;
  DecoderDecider& operator=(const DecoderDecider&) = delete;

 private:
  class SchemaWalk;
  DecoderDecider() = default;
  Status answer_state(const json::Value& state, const DecoderRequest& req,
                      decision::StateResult* out);
  // Restores the prompt's cached prefix into seq_, prefills the rest, stores it; returns hit
  // tokens.
  Result<int64_t> prefill_prompt(std::span<const int32_t> ids, std::span<const int32_t> store);
  // Token ids spelling `bytes` (whole characters through the tokenizer, stray UTF-8 bytes as
  // single-byte tokens).
  Result<std::vector<int32_t>> tokenize_bytes(std::string_view bytes) const;
  // Appends `ids` to seq_ chunk by chunk; `row(i, logits)` sees the row after ids[i].
  template <class F>
  Status append(std::span<const int32_t> ids, F&& row);

  DecoderRunner* runner_ = nullptr;
  KvCache* cache_ = nullptr;
  PrefixCache* prefix_ = nullptr;
  const AutomatonCache* automata_ = nullptr;
  DecoderText text_;
  decision::Temperatures temps_;
  int32_t seq_ = 0;
};

// The JSON of results (exactly what laya-run decide prints).
json::Value schema_decision_json(const SchemaDecision& d);
json::Value decoder_answers_json(const std::vector<decision::Question>& questions,
                                 const decision::StateResult& r);

}  // namespace laya::runtime
