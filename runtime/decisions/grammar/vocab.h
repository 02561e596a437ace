// A model's vocabulary as grammar-constrained decoding sees it: the bytes each token id adds to
// the generated text, arranged in a byte trie.
//
// Pieces come from the tokenizer's token_to_piece without rendering special tokens (llama.cpp's
// `llama_token_to_piece(..., special=false)`): byte-level BPE tokens give their raw bytes (a piece
// may hold part of a UTF-8 character), control tokens give nothing. A token with an empty piece is
// never allowed by a grammar; `stop_ids` (EOS / end-of-turn) are allowed exactly where the text is
// complete. Built once per model and shared, read-only, by every schema compiled against it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"

namespace laya::grammar {

class TokenVocab {
 public:
  // `pieces[id]` for every id of the model's output row (size = n_vocab of the logits);
  // `stop_ids` must be ids in range. kInvalidArgument otherwise.
  static Result<std::shared_ptr<const TokenVocab>> create(std::vector<std::string> pieces,
                                                          std::vector<int32_t> stop_ids);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  std::string_view piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& stop_ids() const { return stop_ids_; }
  bool is_stop(int32_t id) const;
  int32_t max_piece_bytes() const { return max_piece_; }
  // The single-byte token for `b`, or -1.
  int32_t byte_token(uint8_t b) const { return byte_token_[b]; }

  // The trie: node 0 is the root (the empty prefix). Children of a node are contiguous and sorted
  // by byte; tokens whose piece ends at a node are listed in [token_begin, token_end) of
  // `trie_tokens`.
  struct TrieNode {
    uint8_t byte = 0;
    // Some token below (or ending here) is not plain from this node's byte on: it has '"', '\\'
    // or a control byte at or after this position, or ends inside a UTF-8 character.
    bool needs_walk = false;
    int32_t first_child = 0;
    int32_t num_children = 0;
    int32_t token_begin = 0;
    int32_t token_end = 0;
    // [tail_begin, tail_end) of tail_tokens / tail_chars: the tokens below this node whose bytes
    // after it are plain text (complete characters, no '"', '\\' or control byte), sorted by
    // that text's number of characters.
    int32_t tail_begin = 0;
    int32_t tail_end = 0;
  };
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<int32_t>& trie_tokens() const { return trie_tokens_; }
  const std::vector<int32_t>& tail_tokens() const { return tail_tokens_; }
  const std::vector<int32_t>& tail_chars() const { return tail_chars_; }

  // Plain tokens: pieces of complete UTF-8 characters none of which is '"', '\\' or a control
  // character (< 0x20), every byte having a single-byte token. Inside a JSON string such a token
  // is just that many characters wherever it starts, so a string state's mask needs no trie walk
  // for them (runtime/decisions/grammar/token_automaton.cpp). Most of a vocabulary is plain.
  //  - plain_chars(id): its number of characters, or -1 for a token that is not plain;
  //  - plain_upto(c): bitset (words() words) of the plain tokens of at most c characters,
  //    c in [0, max_plain_chars()].
  int32_t plain_chars(int32_t id) const { return plain_chars_[static_cast<size_t>(id)]; }
  int32_t max_plain_chars() const { return max_plain_chars_; }
  int32_t words() const { return (size() + 63) / 64; }
  const uint64_t* plain_upto(int32_t c) const {
    return plain_upto_.data() + static_cast<size_t>(c) * static_cast<size_t>(words());
  }

 private:
  std::vector<std::string> pieces_;
  std::vector<int32_t> stop_ids_;
  int32_t max_piece_ = 0;
  int32_t byte_token_[256];
  std::vector<TrieNode> trie_;
  std::vector<int32_t> trie_tokens_;
  std::vector<int32_t> plain_chars_;
  int32_t max_plain_chars_ = 0;
  std::vector<uint64_t> plain_upto_;  // [max_plain_chars + 1, words]
  std::vector<int32_t> tail_tokens_;
  std::vector<int32_t> tail_chars_;
};

}  // namespace laya::grammar
