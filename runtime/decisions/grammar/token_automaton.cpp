#include "runtime/decisions/grammar/token_automaton.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

namespace laya::grammar {

namespace {

// Sets the bits of every token allowed at `s` (the trie walk of the header's rule).
//
// Inside a string most tokens are plain text, and whether one is allowed only depends on its
// number of characters against the room left. So at a string state the walk takes the plain
// tokens from precomputed lists (the vocabulary's plain_upto bitsets at the root, a trie node's
// tail list below it) and then only visits the children that lead to other tokens
// (TrieNode::needs_walk): it is "covered" until a byte that is not plain text (a quote, a
// backslash, a control byte) takes the text out of that string.
struct Walk {
  int32_t node;
  int32_t state;
  bool covered;
};

void walk_vocab(const CharAutomaton& a, const TokenVocab& v, int32_t s, uint64_t* bits,
                std::vector<Walk>& stack) {
  const auto& trie = v.trie();
  const auto& tokens = v.trie_tokens();
  const auto& tail_tokens = v.tail_tokens();
  const auto& tail_chars = v.tail_chars();
  auto set = [&](int32_t id) { bits[id >> 6] |= uint64_t{1} << (id & 63); };
  stack.clear();
  const int32_t room = a.string_room(s);
  if (room >= 0) {
    const uint64_t* plain = v.plain_upto(std::min(room, v.max_plain_chars()));
    for (int32_t w = 0; w < v.words(); ++w) bits[w] |= plain[w];
  }
  stack.push_back({0, s, room >= 0});
  while (!stack.empty()) {
    const Walk w = stack.back();
    stack.pop_back();
    const TokenVocab::TrieNode& parent = trie[static_cast<size_t>(w.node)];
    for (int32_t c = parent.first_child; c < parent.first_child + parent.num_children; ++c) {
      const TokenVocab::TrieNode& ch = trie[static_cast<size_t>(c)];
      if (w.covered && !ch.needs_walk) continue;
      const int32_t t = a.next(w.state, ch.byte);
      if (t < 0) continue;
      for (int32_t k = ch.token_begin; k < ch.token_end; ++k) set(tokens[static_cast<size_t>(k)]);
      if (ch.num_children == 0 || a.entry_slot(t) >= 0) continue;
      bool covered = w.covered && ch.byte >= 0x20 && ch.byte != '"' && ch.byte != '\\';
      const int32_t r = a.string_room(t);
      if (!covered && r >= 0) {
        for (int32_t k = ch.tail_begin; k < ch.tail_end && tail_chars[static_cast<size_t>(k)] <= r;
             ++k)
          set(tail_tokens[static_cast<size_t>(k)]);
        covered = true;
      }
      stack.push_back({c, t, covered});
    }
  }
}

uint64_t hash_words(const uint64_t* w, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ w[i]) * 0xFF51AFD7ED558CCDull;
  return h ^ (h >> 32);
}

}  // namespace

Result<std::shared_ptr<const TokenAutomaton>> TokenAutomaton::compile(
    const json::Value& schema, std::shared_ptr<const TokenVocab> vocab,
    const CompileOptions& opts) {
  const auto t0 = std::chrono::steady_clock::now();
  if (!vocab) return Status(StatusCode::kInvalidArgument, "no vocabulary");
  auto ta = std::make_shared<TokenAutomaton>();
  ta->schema_opts_ = opts.automaton.schema;
  LAYA_ASSIGN_OR_RETURN(ta->schema_, schema_parse(schema, opts.automaton.schema));
  AutomatonOptions ao = opts.automaton;
  for (int b = 0; b < 256; ++b)
    if (vocab->byte_token(static_cast<uint8_t>(b)) < 0)
      ao.allowed_bytes[b >> 6] &= ~(uint64_t{1} << (b & 63));
  LAYA_ASSIGN_OR_RETURN(ta->chars_, automaton_build(ta->schema_, ao));
  ta->vocab_ = std::move(vocab);
  const CharAutomaton& a = ta->chars_;
  const TokenVocab& v = *ta->vocab_;
  const int32_t n = a.num_states();
  ta->words_ = (v.size() + 63) / 64;
  const size_t words = static_cast<size_t>(ta->words_);

  // One bitset per state; equal bitsets are stored once.
  std::unordered_multimap<uint64_t, int32_t> distinct;
  std::vector<uint64_t> bits(words);
  std::vector<Walk> stack;
  ta->state_mask_.resize(static_cast<size_t>(n));
  for (int32_t s = 0; s < n; ++s) {
    std::fill(bits.begin(), bits.end(), 0);
    walk_vocab(a, v, s, bits.data(), stack);
    if (a.accepting(s))
      for (int32_t id : v.stop_ids())
        bits[static_cast<size_t>(id >> 6)] |= uint64_t{1} << (id & 63);
    const uint64_t h = hash_words(bits.data(), words);
    int32_t m = -1;
    auto range = distinct.equal_range(h);
    for (auto it = range.first; it != range.second && m < 0; ++it)
      if (std::equal(
              bits.begin(), bits.end(),
              ta->masks_.begin() + static_cast<ptrdiff_t>(static_cast<size_t>(it->second) * words)))
        m = it->second;
    if (m < 0) {
      m = static_cast<int32_t>(distinct.size());
      ta->masks_.insert(ta->masks_.end(), bits.begin(), bits.end());
      distinct.emplace(h, m);
    }
    ta->state_mask_[static_cast<size_t>(s)] = m;
  }
  ta->masks_.shrink_to_fit();

  CompileStats& st = ta->stats_;
  st.char_states = n;
  st.byte_classes = a.num_classes();
  st.distinct_masks = static_cast<int32_t>(distinct.size());
  st.mask_bytes = ta->masks_.size() * sizeof(uint64_t);
  st.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return std::shared_ptr<const TokenAutomaton>(std::move(ta));
}

int32_t TokenAutomaton::next(int32_t s, int32_t token) const {
  if (!allowed(s, token) || vocab_->is_stop(token)) return kDeadState;
  const std::string_view p = vocab_->piece(token);
  return chars_.walk(s, p.data(), p.size());
}

Status GrammarMatcher::accept(int32_t token) {
  if (complete())
    return status_error(StatusCode::kInvalidArgument, "token %d after the end", token);
  if (!a_->allowed(state_, token))
    return status_error(StatusCode::kInvalidArgument, "token %d is not allowed here", token);
  if (a_->vocab().is_stop(token)) {
    stopped_ = true;
    return Status::ok();
  }
  state_ = a_->next(state_, token);
  return Status::ok();
}

Status GrammarMatcher::accept_bytes(const char* bytes, size_t n) {
  if (stopped_) return Status(StatusCode::kInvalidArgument, "text after the end");
  const int32_t t = a_->chars().walk(state_, bytes, n);
  if (t < 0) return Status(StatusCode::kInvalidArgument, "text leaves the schema's language");
  state_ = t;
  return Status::ok();
}

}  // namespace laya::grammar
