// A context: one thread's memory for decisions on a Model (runtime/decisions/model.h), in regions
// the caller owns. Any number of contexts per model; one thread at a time per context.
//
//   ContextLimits lim;                                        // 0 fields: defaults
//   LAYA_ASSIGN_OR_RETURN(ContextLayout lay, Context::layout(*model, lim));
//   runtime::MemoryRegion regions[kRegionCount] = ...;        // lay.bytes[r], aligned lay.align[r]
//   LAYA_ASSIGN_OR_RETURN(Context* ctx, Context::create(model, lim, regions));
//   LAYA_RETURN_IF_ERROR(ctx->decide(body));                 // ctx->json(), ctx->output()
//   Context::destroy(ctx);                                    // the regions are the caller's again
//
// Regions (each may be a slice of one buffer; none may overlap another):
//   weights      packed weights the model's device does not share (the AX8850 simulator's)
//   activations  the session's activation plan at the limits (the largest bucket)
//   scratch      per-execute scratch of the executables
//   kv           decoders: the KV cache (the working sequence and the prefix cache's slots)
//   work         the Context object itself, the network's packed inputs and outputs, a decoder's
//                logits rows, and the arena every request is parsed, tokenized, answered and
//                written in (ir/arena.h): reset at the start of every call
// Create prepares the session (scheduling, plans: host allocations, at create only) and binds the
// regions; the model's device packs or shares the weights. After create, decisions run on these
// regions alone (tests/runtime/test_capi_alloc.cpp counts the heap calls).
//
// Every call resets the arena, then fills the results: the JSON text (json()) and the typed view
// (output()), valid until the next call on the context. A failed call leaves no results and the
// context usable (error() names the problem; the KV cache holds no sequence of the call).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/arena.h"
#include "ir/status.h"
#include "runtime/decisions/decision.h"
#include "runtime/decisions/decoder_decide.h"
#include "runtime/decisions/encoder.h"
#include "runtime/decisions/model.h"
#include "runtime/decoder.h"
#include "runtime/kv_cache.h"
#include "runtime/prefix_cache.h"
#include "runtime/sampler.h"
#include "runtime/session.h"
#include "runtime/text/tokenizer/tokenizer.h"

namespace laya::decision {

enum class Region : int { kWeights = 0, kActivations, kScratch, kKv, kWork };
inline constexpr int kRegionCount = 5;
const char* region_name(Region r);  // "weights", "activations", ...

// What a context must hold. 0 (or empty) fields take the defaults; ContextLayout::limits has them
// resolved.
struct ContextLimits {
  // encoders
  int64_t max_tokens = 0;   // tokens of one forward pass (every row packed): min(bound, 4096)
  int64_t max_rows = 0;     // rows of one pass: the model's bound
  int64_t max_options = 0;  // options of one question: the model's bound
  // both: the largest request body, and how many bodies decide_batch takes at once
  uint64_t max_request_bytes = 0;  // 2 MiB, upstream's server limit
  int64_t max_batch = 0;           // 16
  // decoders
  int64_t kv_cells = 0;             // the working sequence: prompt + answer (min(context, 2048))
  int64_t prefix_slots = 0;         // prompts the prefix cache keeps (4)
  uint64_t prefix_cache_bytes = 0;  // their KV bytes together (those of kv_cells / 2 cells)
  int64_t prefix_block = 0;         // tokens per cached block (16)
  int64_t chunk = 0;                // prefill chunk (128)
  // both
  int n_threads = 0;         // CPU threads (0: the model's)
  uint64_t arena_bytes = 0;  // the request arena (0: sized from the limits above)
};

struct ContextLayout {
  uint64_t bytes[kRegionCount] = {};
  uint64_t align[kRegionCount] = {};
  uint64_t shared_bytes = 0;  // packed weights the model's device holds (once for every context)
  ContextLimits limits;       // with the defaults filled in
};

// A schema decision on a decoder, given field by field (laya_decide_schema).
struct SchemaRequestParts {
  std::optional<std::string_view> system;
  std::string_view state;  // the state: JSON text, or plain text with state_is_text
  bool state_is_text = false;
  std::string_view schema;                   // JSON schema text
  std::optional<std::string_view> fallback;  // JSON text
  int64_t max_tokens = 0;                    // 0: 256
  int64_t deadline_ms = 0;                   // 0: none
  double min_confidence = -1;                // < 0: none
  SamplerConfig sampler;
};

// Generation (laya_generate): exactly one prompt form.
struct GenerateParams {
  std::string_view prompt;  // raw text (BOS per the vocabulary)
  // chat: (role, content) pairs rendered with the model's template
  std::span<const std::pair<std::string_view, std::string_view>> messages;
  std::span<const int32_t> prompt_ids;  // token ids
  int64_t max_tokens = 16;
  SamplerConfig sampler;  // stop ids added: EOS, and the end of turn for chat prompts
  bool stop_after_json = false;
  bool prefix_cache = true;
  // Called after each picked token with its id and bytes; true stops generation there.
  bool (*on_token)(void* user, int32_t id, std::string_view piece) = nullptr;
  void* on_token_user = nullptr;
  // Polled before each step; true aborts the call (kAborted).
  bool (*abort)(void* user) = nullptr;
  void* abort_user = nullptr;
  // After the call: every node's measured ms summed over the prefill (phase 0) or the decode
  // steps (phase 1), with its kind (node_kind()).
  void (*profile)(void* user, int phase, std::string_view node, double ms) = nullptr;
  void* profile_user = nullptr;
};

// A node's kind in profiles: its op, and for matmuls and embeddings the weight's dtype and
// shape ("matmul q4_1 [576, 1536]").
std::string node_kind(const ir::Graph& g, const ir::Node& n);

struct GenerateOutput {
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> ids;
  std::string text;           // the new ids decoded, special tokens skipped
  std::string finish_reason;  // "stop", "length", "json", "callback"
  runtime::DecoderStats stats;
  runtime::PrefixCacheStats prefix;  // the prefix cache's counters after the call
  int64_t prefix_block = 0;
};

class Context {
 public:
  static Result<ContextLayout> layout(const Model& m, const ContextLimits& limits);
  // `regions` (kRegionCount of them) at least layout().bytes each and aligned; borrowed until
  // destroy. The Context object is placed at the start of the work region.
  static Result<Context*> create(std::shared_ptr<const Model> m, const ContextLimits& limits,
                                 std::span<const runtime::MemoryRegion> regions);
  // Runs the destructors; nothing is freed that the caller owns.
  static void destroy(Context* c);

  const Model& model() const { return *model_; }
  const ContextLayout& layout() const { return layout_; }

  // A /v1/systemone body: an encoder's (runtime/decisions/request.h), or a decoder's questions or
  // schema body (runtime/decisions/decoder_decide.h). Results: json(), output() (questions),
  // schema_output() (schema decisions on a decoder).
  Status decide(std::string_view body);
  // Several bodies at once (encoders: their rows packed into shared forward passes; every result
  // byte-identical to the body alone): body(items, i) gives body i of n. status_of(i) is body
  // i's status and json_of(i) its result; the call itself fails only when the context does.
  Status decide_batch(size_t n, std::string_view (*body)(const void* items, size_t i),
                      const void* items);
  Status decide_schema(const SchemaRequestParts& req);
  // The SDK's predict_tournament (runtime/decisions/tournament.h, kSdk) over decide(): `body` a
  // /v1/systemone body whose questions each call replaces. json() is the tournament's result,
  // output() the final call's. Unlike decide(), the rounds' JSON lives on the heap between calls.
  Status decide_tournament(std::string_view body, int group_size);
  // Decoders: the raw label logits (T = 1) of a questions request's first state, by the path
  // decide() takes (laya-run calibrate fits temperatures on them).
  Status question_scores(const runtime::DecoderRequest& req,
                         std::vector<std::vector<float>>* scores);
  // Encoders: the rows the network would read for a body, as JSON (runtime/decisions/decision.h
  // explain_decision; a shortlist's embeddings run).
  Status explain(std::string_view body);
  // How decide() samples a decoder's schema decisions (greedy by default).
  void set_sampler(const SamplerConfig& sc);
  // Whose checks decide() / decide_batch() / explain() apply to an encoder's body (request.h
  // RequestMode): upstream laya-serve's (the default) or the SDK's own.
  void set_request_mode(RequestMode m) { request_mode_ = m; }
  // Streaming for the decoder schema decisions that follow (decide, decide_batch, decide_schema):
  // each token committed to the decision's text (nonzero from it stops the decision: kAborted),
  // and a poll before each step (nonzero: kAborted). Null: none. The C API's callback types.
  struct Stream {
    int (*on_token)(void* user, int32_t id, const char* piece, size_t len) = nullptr;
    int (*abort)(void* user) = nullptr;
    void* user = nullptr;
    bool stopped = false;  // on_token asked to stop
  };
  void set_stream(const Stream& s) { stream_ = s; }
  Status generate(const GenerateParams& p);
  // Teacher forcing: after each of `ids`, fn(position, logits f32 [vocab]).
  Status score(std::span<const int32_t> ids,
               void (*fn)(void* user, size_t position, const float* logits, size_t vocab),
               void* user);
  // The model's tokenizer: tokens() / text() hold the result.
  Status tokenize(std::string_view text, bool add_special);
  Status detokenize(std::span<const int32_t> ids, bool skip_special);

  // The prefix cache's block in tokens (0: none).
  int64_t prefix_block() const;

  // Results of the last successful call (the arena holds them until the next call).
  std::string_view json() const;
  std::string_view json_of(size_t i) const;  // decide_batch
  const Status& status_of(size_t i) const;   // decide_batch
  const DecisionOutput& output() const;
  const runtime::DecoderOutput& decoder_output() const;
  const GenerateOutput& generate_output() const;
  // The message of the last failed call ("" after a success).
  std::string_view error() const { return error_; }

  // The label keys of option i of question j of the last decision (choice: the JSON key text of
  // its label; score: "0".."k-1"; noul: "false" / "true").
  const std::vector<std::vector<std::string>>& option_labels() const;
  // The questions the last decision answered (an encoder's after a shortlist; a decoder's).
  const DecisionOutput& questions_output() const;
  // Schema decisions: state i's decision as compact JSON, and field f's option texts as C
  // strings.
  std::string_view decision_text(size_t i) const;
  const char* const* field_options(size_t i, size_t f) const;
  // The ids of the last tokenize() and the text of the last detokenize().
  const std::vector<int32_t>& tokens() const;
  const std::string& text() const;

  // The arena's high-water mark and overflows (allocations that went to the heap) since create.
  const mem::Arena& arena() const { return arena_; }
  uint64_t calls() const { return calls_; }

  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

 private:
  struct Call;
  class CallScope;
  Context() = default;
  ~Context();
  void begin();                     // drops the last call's results, resets the arena
  Status finish(const Status& st);  // the typed views of a success, or the error
  // Whether a body may be parsed: max_request_bytes, and its JSON's cost within `budget`
  // (deducted).
  Status admit(std::string_view body, uint64_t* budget) const;
  Status decide_encoder(std::string_view body);
  Status decide_decoder(std::string_view body, const SamplerConfig& sampler);
  Status init(const ContextLimits& lim, std::span<const runtime::MemoryRegion> regions);

  std::shared_ptr<const Model> model_;
  ContextLayout layout_;
  mem::Arena arena_;
  std::unique_ptr<tok::Workspace> ws_;  // the tokenizer's work state (made at create)
  std::unique_ptr<runtime::Session> session_;
  std::unique_ptr<EncoderNetwork> net_;
  // decoders
  std::unique_ptr<runtime::KvCache> kv_;
  std::unique_ptr<runtime::DecoderRunner> runner_;
  std::unique_ptr<runtime::PrefixCache> prefix_;
  std::unique_ptr<runtime::DecoderDecider> decider_;
  SamplerConfig sampler_;
  RequestMode request_mode_ = RequestMode::kServer;
  Stream stream_;
  Call* call_ = nullptr;  // the last call's results, in the arena
  char error_[Status::kMaxMessage + 1] = {};
  uint64_t calls_ = 0;
};

}  // namespace laya::decision
