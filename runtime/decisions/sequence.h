// The Laya sequence builder: one token row per (state, question), exactly as the upstream SDK builds
// it (laya/common.py build_head / build_sequence, Agent._encode_state; laya 0.4.15):
//
//   [CLS] tok("<type> question: <instructions>") [SEP] {[MASK] tok(" " + option)}* [SEP] state [SEP]
//
//  1. The mask token's text ("[MASK]", "<mask>") is replaced by a space in the instructions, every
//     option and the state, so input cannot forge a marker. Other special-token text is left to
//     the tokenizer (which matches it as the special token, as HF tokenizers does).
//  2. Each option fragment is [MASK] + the first 48 tokens of " " + option, in `option_order`.
//  3. opt_budget = head_max_len - sum(fragment lengths); below 16, every fragment (marker
//     included) is cut to per = max(4, (head_max_len - 16) // n) tokens and the budget recomputed.
//  4. The header is cut to max(8, opt_budget) tokens.
//  5. room = max(0, max_len - len(head row) - 1). The state is tokenized once per request; a list
//     state (a conversation, newest last) keeps its last `room` tokens, anything else its first.
//  6. The row is cut to max_len; markers at or past max_len are dropped, and a question whose
//     markers do not all survive is refused (kRequestUnprocessable, upstream's message).
// A non-string state is serialized as Python's json.dumps(state, ensure_ascii=False).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "runtime/text/json.h"
#include "runtime/decisions/request.h"
#include "runtime/text/tokenizer/tokenizer.h"

namespace laya::decision {

// What the builder needs from a tokenizer: token ids of a text without special tokens.
class TextEncoder {
 public:
  virtual ~TextEncoder() = default;
  // Appends the ids of `text` (no [CLS] / [SEP] added) to `ids`.
  virtual Status encode(std::string_view text, std::vector<int32_t>* ids) const = 0;
  // The tokenizer behind it, when it is one (null for a test's stand-in).
  virtual const tok::Tokenizer* tokenizer() const { return nullptr; }
};

// The tokenizer's special tokens, as the SDK reads them from the tokenizer (never from the
// encoder config: mmBERT's config names the wrong [CLS]).
struct SpecialTokens {
  int32_t cls = -1, sep = -1, pad = -1, mask = -1;
  std::string mask_text;  // "[MASK]" / "<mask>": scrubbed from user text
};

// The state half: tokenized once per request and shared by every question.
struct StateTokens {
  std::vector<int32_t> ids;
  bool keep_last = false;  // a list state: truncation keeps the newest tokens
};

// The question half (build_head): independent of the state, built once per request.
struct Head {
  std::vector<int32_t> ids;              // [CLS] header [SEP] {[MASK] option}* [SEP]
  std::vector<int32_t> markers;          // position of each slot's [MASK], slot order
  int options = 0;                       // fragments (= the question's options)
  int options_distinct = 0;              // fragments with a token span of their own after the cut
  std::optional<int> tokens_per_option;  // the cut `per` when step 3 applied
};

// One row the network reads.
struct Row {
  std::vector<int32_t> ids;      // at most max_len tokens
  std::vector<int32_t> markers;  // one per option, in slot order, all < ids.size()
  QType qtype = QType::kChoice;
  int64_t state_tokens = 0;  // the whole state's tokens
  int64_t state_tokens_used = 0;
  bool truncated() const { return state_tokens_used < state_tokens; }
  int options = 0, options_distinct = 0;
  std::optional<int> tokens_per_option;
};

// Replaces every occurrence of `mask_text` in `text` by a space (str.replace).
std::string scrub_mask(std::string_view text, std::string_view mask_text);

Result<StateTokens> encode_state(const TextEncoder& tok, const SpecialTokens& sp,
                                 const json::Value& state);
Result<Head> build_head(const TextEncoder& tok, const SpecialTokens& sp, const Question& q,
                        int head_max_len);
// kRequestUnprocessable when the question's markers do not all fit in max_len.
Result<Row> build_row(const Head& head, const Question& q, const StateTokens& state,
                      const SpecialTokens& sp, int max_len, int head_max_len);

}  // namespace laya::decision
