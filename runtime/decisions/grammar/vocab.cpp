#include "runtime/decisions/grammar/vocab.h"

#include <algorithm>

namespace laya::grammar {

namespace {

bool plain_byte(uint8_t b) {
  return b >= 0x20 && b != '"' && b != '\\';
}

// The number of characters of `p` when it is plain text (see the header), or -1.
int32_t plain_length(std::string_view p, const int32_t (&byte_token)[256]) {
  if (p.empty()) return -1;
  int32_t chars = 0;
  for (size_t i = 0; i < p.size();) {
    const uint8_t c = static_cast<uint8_t>(p[i]);
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
    if (!plain_byte(c)) return -1;
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return -1;
    }
    if (i + len > p.size()) return -1;
    for (size_t k = 0; k < len; ++k) {
      const uint8_t b = static_cast<uint8_t>(p[i + k]);
      if (byte_token[b] < 0) return -1;
      if (k == 1 && (b < lo || b > hi)) return -1;
      if (k > 1 && (b < 0x80 || b > 0xBF)) return -1;
    }
    i += len;
    ++chars;
  }
  return chars;
}

// The last UTF-8 sequence of `p` is cut short (its lead byte announces more bytes than follow).
bool ends_inside_character(std::string_view p) {
  for (size_t i = p.size(); i-- > 0;) {
    const uint8_t c = static_cast<uint8_t>(p[i]);
    if ((c & 0xC0) == 0x80) continue;
    const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    return i + len > p.size();
  }
  return false;
}

}  // namespace

bool TokenVocab::is_stop(int32_t id) const {
  return std::binary_search(stop_ids_.begin(), stop_ids_.end(), id);
}

Result<std::shared_ptr<const TokenVocab>> TokenVocab::create(std::vector<std::string> pieces,
                                                             std::vector<int32_t> stop_ids) {
  if (pieces.empty()) return Status(StatusCode::kInvalidArgument, "empty vocabulary");
  const int32_t n = static_cast<int32_t>(pieces.size());
  for (int32_t id : stop_ids)
    if (id < 0 || id >= n)
      return status_error(StatusCode::kInvalidArgument, "stop token %d outside the vocabulary (%d)",
                          id, n);
  auto v = std::make_shared<TokenVocab>();
  v->pieces_ = std::move(pieces);
  std::sort(stop_ids.begin(), stop_ids.end());
  stop_ids.erase(std::unique(stop_ids.begin(), stop_ids.end()), stop_ids.end());
  v->stop_ids_ = std::move(stop_ids);
  std::fill(std::begin(v->byte_token_), std::end(v->byte_token_), -1);
  auto piece_of = [&](int32_t id) -> const std::string& {
    return v->pieces_[static_cast<size_t>(id)];
  };

  // Tokens that can appear in a text: a piece, and not a stop token (those end the text).
  std::vector<int32_t> order;
  for (int32_t id = 0; id < n; ++id) {
    const std::string& p = piece_of(id);
    if (p.empty() || v->is_stop(id)) continue;
    order.push_back(id);
    v->max_piece_ = std::max(v->max_piece_, static_cast<int32_t>(p.size()));
    if (p.size() == 1 && v->byte_token_[static_cast<uint8_t>(p[0])] < 0)
      v->byte_token_[static_cast<uint8_t>(p[0])] = id;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return piece_of(a) < piece_of(b); });
  // The pieces in that order, in one buffer: the passes below walk `order` front to back (the
  // pieces themselves, in id order, cost a cache miss per token: 43% of the build in perf).
  std::string sorted;
  std::vector<size_t> at(order.size() + 1, 0);
  for (size_t i = 0; i < order.size(); ++i) {
    sorted += piece_of(order[i]);
    at[i + 1] = sorted.size();
  }
  auto piece_at = [&](int32_t i) {
    const size_t u = static_cast<size_t>(i);
    return std::string_view(sorted).substr(at[u], at[u + 1] - at[u]);
  };

  // The trie, breadth-first: each node's children are made together from its sorted token range,
  // so they are contiguous and sorted. A work item is (node, depth, [lo, hi) of `order`).
  auto byte_at = [&](int32_t i, int32_t depth) {
    return static_cast<uint8_t>(sorted[at[static_cast<size_t>(i)] + static_cast<size_t>(depth)]);
  };
  auto length_of = [&](int32_t i) { return static_cast<int32_t>(piece_at(i).size()); };
  struct Item {
    int32_t node, depth, lo, hi;
  };
  std::vector<Item> level{{0, 0, 0, static_cast<int32_t>(order.size())}}, next;
  std::vector<Item> ranges(1);  // per node: its item (for the tail lists below)
  v->trie_.assign(1, TrieNode{});
  while (!level.empty()) {
    next.clear();
    for (const Item& it : level) {
      ranges[static_cast<size_t>(it.node)] = it;
      int32_t i = it.lo;
      const int32_t token_begin = static_cast<int32_t>(v->trie_tokens_.size());
      while (i < it.hi && length_of(i) == it.depth)
        v->trie_tokens_.push_back(order[static_cast<size_t>(i++)]);
      const int32_t first_child = static_cast<int32_t>(v->trie_.size());
      while (i < it.hi) {
        const uint8_t b = byte_at(i, it.depth);
        int32_t j = i;
        while (j < it.hi && byte_at(j, it.depth) == b) ++j;
        TrieNode c;
        c.byte = b;
        next.push_back({static_cast<int32_t>(v->trie_.size()), it.depth + 1, i, j});
        v->trie_.push_back(c);
        ranges.emplace_back();
        i = j;
      }
      TrieNode& node = v->trie_[static_cast<size_t>(it.node)];
      node.token_begin = token_begin;
      node.token_end = static_cast<int32_t>(v->trie_tokens_.size());
      node.first_child = first_child;
      node.num_children = static_cast<int32_t>(v->trie_.size()) - first_child;
    }
    level.swap(next);
  }

  // Plain tokens by length: row c of plain_upto_ first holds the tokens of exactly c characters,
  // then each row takes in the one before it.
  v->plain_chars_.assign(static_cast<size_t>(n), -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const int32_t c = plain_length(piece_at(static_cast<int32_t>(i)), v->byte_token_);
    v->plain_chars_[static_cast<size_t>(order[i])] = c;
    v->max_plain_chars_ = std::max(v->max_plain_chars_, c);
  }
  const size_t words = static_cast<size_t>(v->words());
  v->plain_upto_.assign(static_cast<size_t>(v->max_plain_chars_ + 1) * words, 0);
  for (int32_t id : order) {
    const int32_t c = v->plain_chars_[static_cast<size_t>(id)];
    if (c >= 0)
      v->plain_upto_[static_cast<size_t>(c) * words + static_cast<size_t>(id >> 6)] |= uint64_t{1}
                                                                                       << (id & 63);
  }
  for (size_t k = 1; k <= static_cast<size_t>(std::max(v->max_plain_chars_, 0)); ++k)
    for (size_t w = 0; w < words; ++w)
      v->plain_upto_[k * words + w] |= v->plain_upto_[(k - 1) * words + w];

  // Per node: needs_walk, and the tokens below whose bytes after the node are plain text. A
  // node's tokens are order[lo, hi) of its item; its depth is the item's depth.
  struct Tail {
    int32_t chars, id;
  };
  std::vector<Tail> tail;
  for (size_t x = 1; x < v->trie_.size(); ++x) {
    const Item& it = ranges[x];
    const size_t pos = static_cast<size_t>(it.depth) - 1;  // this node's byte position
    TrieNode& node = v->trie_[x];
    tail.clear();
    for (int32_t i = it.lo; i < it.hi; ++i) {
      const int32_t id = order[static_cast<size_t>(i)];
      const std::string_view p = piece_at(i);
      if (!node.needs_walk) {
        bool plain = !ends_inside_character(p);
        for (size_t k = pos; k < p.size() && plain; ++k)
          plain = plain_byte(static_cast<uint8_t>(p[k]));
        node.needs_walk = !plain;
      }
      if (p.size() > static_cast<size_t>(it.depth)) {
        const int32_t c = plain_length(p.substr(static_cast<size_t>(it.depth)), v->byte_token_);
        if (c > 0) tail.push_back({c, id});
      }
    }
    std::stable_sort(tail.begin(), tail.end(),
                     [](const Tail& a, const Tail& b) { return a.chars < b.chars; });
    node.tail_begin = static_cast<int32_t>(v->tail_tokens_.size());
    for (const Tail& t : tail) {
      v->tail_tokens_.push_back(t.id);
      v->tail_chars_.push_back(t.chars);
    }
    node.tail_end = static_cast<int32_t>(v->tail_tokens_.size());
  }
  return std::shared_ptr<const TokenVocab>(std::move(v));
}

}  // namespace laya::grammar
