// The token-level automaton: a schema compiled once against a model's vocabulary, so that at every
// step of generation the set of allowed token ids is a table lookup.
//
//   LAYA_ASSIGN_OR_RETURN(auto vocab, grammar::TokenVocab::create(pieces, {eos_id}));
//   LAYA_ASSIGN_OR_RETURN(auto ta, grammar::TokenAutomaton::compile(schema_json, vocab));
//   grammar::GrammarMatcher m(ta.get());
//   while (!m.complete()) {
//     const uint64_t* allowed = m.mask();          // bit id set: token id may come next
//     int32_t id = sampler.sample(logits, allowed);  // runtime/sampler.h
//     LAYA_RETURN_IF_ERROR(m.accept(id));
//   }
//
// Which tokens are allowed at a character state s (runtime/decisions/grammar/automaton.h):
//  - a stop token, exactly when s accepts (the JSON text is complete);
//  - a token with a non-empty piece whose bytes walk from s through defined transitions without
//    passing *through* a slot entry: the walk may end at an entry, or start at one, but may not go
//    on past an entry it reached. A slot's text is therefore entered only at a token boundary,
//    where the decoder can score its options as wholes (runtime/decisions/decoder_decide.h); a
//    sampler that ignores slots loses nothing: every slot text can still be written token by
//    token from the entry on.
// Every state reachable this way can still complete: each live character state has a path to an
// accepting state through bytes that have single-byte tokens (bytes without one are removed from
// the character automaton when it is built, so tokens containing them are never allowed).
//
// Compilation walks the vocabulary trie once per character state (inside strings, plain-text
// tokens come from precomputed per-length lists instead: runtime/decisions/grammar/vocab.h) and stores
// each distinct bitset once. Masking at run time reads a pointer; advancing walks the token's
// bytes (a few table lookups). Nothing on the per-token path allocates.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ir/status.h"
#include "runtime/decisions/grammar/automaton.h"
#include "runtime/decisions/grammar/schema.h"
#include "runtime/decisions/grammar/vocab.h"
#include "runtime/text/json.h"

namespace laya::grammar {

struct CompileOptions {
  AutomatonOptions automaton;  // limits and number formatting (automaton.schema)
};

struct CompileStats {
  int32_t char_states = 0;     // states of the character automaton
  int32_t byte_classes = 0;    // bytes grouped by identical transitions
  int32_t distinct_masks = 0;  // distinct bitsets stored
  uint64_t mask_bytes = 0;     // memory held by the bitsets
  double compile_ms = 0.0;     // wall time of compile()
};

class TokenAutomaton {
 public:
  // Parses the schema (schema.h), builds the character automaton and every state's allowed-token
  // bitset over `vocab`. Errors: the schema's (kInvalidArgument naming keyword and path), a schema
  // too large for the limits.
  static Result<std::shared_ptr<const TokenAutomaton>> compile(
      const json::Value& schema, std::shared_ptr<const TokenVocab> vocab,
      const CompileOptions& opts = {});

  const Schema& schema() const { return schema_; }
  const CharAutomaton& chars() const { return chars_; }
  const TokenVocab& vocab() const { return *vocab_; }
  const SchemaOptions& schema_options() const { return schema_opts_; }
  const CompileStats& stats() const { return stats_; }

  // Bitset of the tokens allowed at character state `s`: mask_words() words, bit (id % 64) of
  // word (id / 64). Owned by the automaton (lives as long as it).
  int32_t mask_words() const { return words_; }
  const uint64_t* mask(int32_t s) const {
    return masks_.data() + static_cast<size_t>(state_mask_[static_cast<size_t>(s)]) * words_;
  }
  bool allowed(int32_t s, int32_t token) const {
    return token >= 0 && token < vocab_->size() && ((mask(s)[token >> 6] >> (token & 63)) & 1) != 0;
  }
  // The character state after an allowed, non-stop token; kDeadState when the token is not
  // allowed at `s` or is a stop token.
  int32_t next(int32_t s, int32_t token) const;

 private:
  Schema schema_;
  SchemaOptions schema_opts_;
  CharAutomaton chars_;
  std::shared_ptr<const TokenVocab> vocab_;
  int32_t words_ = 0;
  std::vector<uint64_t> masks_;      // [distinct, words]
  std::vector<int32_t> state_mask_;  // [char_states] -> bitset index
  CompileStats stats_;
};

// One generation's position in a compiled automaton. Allocation-free; copyable (a copy is a
// snapshot). The automaton must outlive it.
class GrammarMatcher {
 public:
  explicit GrammarMatcher(const TokenAutomaton* a) : a_(a) {}

  const uint64_t* mask() const { return a_->mask(state_); }
  // Takes one token: kInvalidArgument (naming it) when the mask does not allow it, or after the
  // matcher completed. A stop token completes the matcher.
  Status accept(int32_t token);
  // Takes raw text bytes (forced text, scored slot options): kInvalidArgument when they leave the
  // language. Unlike tokens, bytes may run through slot entries.
  Status accept_bytes(const char* bytes, size_t n);
  // A stop token was accepted, or the text is final (no byte may follow).
  bool complete() const { return stopped_ || a_->chars().final(state_); }
  // The text so far is a complete document (a stop token is allowed).
  bool accepting() const { return a_->chars().accepting(state_); }
  int32_t state() const { return state_; }
  const TokenAutomaton& automaton() const { return *a_; }
  void reset() {
    state_ = CharAutomaton::start();
    stopped_ = false;
  }

 private:
  const TokenAutomaton* a_;
  int32_t state_ = CharAutomaton::start();
  bool stopped_ = false;
};

}  // namespace laya::grammar
