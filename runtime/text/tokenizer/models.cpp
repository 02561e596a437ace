// The models: BPE (ranked merges, HF), BPE by scores (llama.cpp SentencePiece vocabularies),
// WordPiece and WordLevel.
#include <algorithm>

#include "runtime/text/tokenizer/tokenizer_impl.h"
#include "runtime/text/tokenizer/unicode.h"

namespace laya::tok {
namespace {

// Words longer than this are not cached (HF's MAX_LENGTH).
constexpr size_t kMaxCachedBytes = 256;

bool fail(ThreadState& ts, Status s) {
  ts.error = std::move(s);
  return false;
}

Status unk_missing(const ModelSpec& m) {
  return status_error(StatusCode::kInvalidArgument,
                      "%s: unknown text and the unk token '%s' is not in the vocabulary",
                      model_kind_name(m.kind), m.unk_token.c_str());
}

}  // namespace

void TokenizerImpl::lookup_unit(std::string_view unit, bool first, bool last, ThreadState& ts,
                                UnitIds* out) const {
  out->ids.clear();
  std::string_view key = unit;
  const bool decorate = (!first && !model.continuing_subword_prefix.empty()) ||
                        (last && !model.end_of_word_suffix.empty());
  if (decorate) {
    ts.tmp2.clear();
    if (!first) ts.tmp2 += model.continuing_subword_prefix;
    ts.tmp2 += unit;
    if (last) ts.tmp2 += model.end_of_word_suffix;
    key = ts.tmp2;
  }
  const int32_t id = vocab_index.find(key);
  if (id >= 0) {
    out->kind = UnitIds::Kind::kToken;
    out->ids.push_back(id);
    return;
  }
  if (model.byte_fallback) {
    bool all = true;
    for (char ch : key) all = all && byte_fallback_ids[static_cast<uint8_t>(ch)] >= 0;
    if (all) {
      out->kind = UnitIds::Kind::kByteFallback;
      for (char ch : key) out->ids.push_back(byte_fallback_ids[static_cast<uint8_t>(ch)]);
      return;
    }
  }
  out->kind = UnitIds::Kind::kUnknown;
}

bool TokenizerImpl::bpe_encode(const Piece& piece, ThreadState& ts,
                               std::vector<int32_t>* ids) const {
  const std::string_view w = piece.text;
  if (model.ignore_merges) {
    const int32_t id = piece.raw_bytes ? raw_vocab_index.find(w) : vocab_index.find(w);
    if (id >= 0) {
      ids->push_back(id);
      return true;
    }
  }
  WordCache& cache = *ts.cache;
  if (w.size() < kMaxCachedBytes && cache.get(w, ids)) return true;

  // Initial symbols (HF BPE::merge_word), unknown handling included: a pending unk is only
  // written when a known character or the end follows (byte-fallback ids go before it, as in HF).
  auto& sym = ts.symbols;
  sym.clear();
  auto add = [&](int32_t id, uint32_t len) {
    const auto n = static_cast<int32_t>(sym.size());
    if (n > 0) sym.back().next = n;
    sym.push_back({id, n - 1, -1, len, 0});
  };
  int32_t unk_pending_len = 0;
  bool unk_pending = false;
  UnitIds local;
  size_t i = 0;
  while (i < w.size()) {
    const size_t b = i;
    const UnitIds* u;
    if (piece.raw_bytes) {
      ++i;
      const int combo = (b == 0 ? 1 : 0) | (i == w.size() ? 2 : 0);
      u = &byte_units[static_cast<size_t>(combo) * 256 + static_cast<uint8_t>(w[b])];
    } else {
      i += unicode::utf8_len(static_cast<unsigned char>(w[b]));
      lookup_unit(w.substr(b, i - b), b == 0, i == w.size(), ts, &local);
      u = &local;
    }
    const auto len = static_cast<uint32_t>(i - b);
    switch (u->kind) {
      case UnitIds::Kind::kToken:
        if (unk_pending) {
          add(unk_id, static_cast<uint32_t>(unk_pending_len));
          unk_pending = false;
        }
        add(u->ids[0], len);
        break;
      case UnitIds::Kind::kByteFallback:
        for (int32_t id : u->ids) add(id, 1);
        break;
      case UnitIds::Kind::kUnknown:
        if (model.unk_token.empty()) {
          // No unk token: the character is dropped, before merging (HF) or after (llama.cpp).
          if (model.unknown_blocks_merges) add(-1, len);
          break;
        }
        if (unk_id < 0) return fail(ts, unk_missing(model));
        if (unk_pending && model.fuse_unk) {
          unk_pending_len += static_cast<int32_t>(len);
        } else {
          if (unk_pending) add(unk_id, static_cast<uint32_t>(unk_pending_len));
          unk_pending = true;
          unk_pending_len = static_cast<int32_t>(len);
        }
        break;
    }
  }
  if (unk_pending) add(unk_id, static_cast<uint32_t>(unk_pending_len));

  // HF Word::merge_all: lowest rank first, then leftmost; stale entries are recognised by the
  // merged id no longer matching.
  auto& heap = ts.heap;
  heap.clear();
  const auto later = [](const ThreadState::Merge& a, const ThreadState::Merge& b) {
    return a.rank > b.rank || (a.rank == b.rank && a.pos > b.pos);
  };
  int32_t rank = 0, merged = 0;
  for (size_t k = 0; k + 1 < sym.size(); ++k) {
    if (merges.find(sym[k].id, sym[k + 1].id, &rank, &merged)) {
      heap.push_back({rank, 0.0f, static_cast<int32_t>(k), merged, 0});
    }
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const ThreadState::Merge top = heap.back();
    heap.pop_back();
    auto& left = sym[static_cast<size_t>(top.pos)];
    if (left.len == 0 || left.next == -1) continue;
    const ThreadState::Symbol right = sym[static_cast<size_t>(left.next)];
    if (!merges.find(left.id, right.id, &rank, &merged) || merged != top.merged) continue;
    sym[static_cast<size_t>(left.next)].len = 0;
    left.id = top.merged;
    left.len += right.len;
    left.next = right.next;
    if (right.next >= 0) sym[static_cast<size_t>(right.next)].prev = top.pos;
    const ThreadState::Symbol cur = left;
    if (cur.prev >= 0 &&
        merges.find(sym[static_cast<size_t>(cur.prev)].id, cur.id, &rank, &merged)) {
      heap.push_back({rank, 0.0f, cur.prev, merged, 0});
      std::push_heap(heap.begin(), heap.end(), later);
    }
    if (cur.next >= 0 &&
        merges.find(cur.id, sym[static_cast<size_t>(cur.next)].id, &rank, &merged)) {
      heap.push_back({rank, 0.0f, top.pos, merged, 0});
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  const size_t before = ids->size();
  for (const auto& s : sym) {
    if (s.len != 0 && s.id >= 0) ids->push_back(s.id);
  }
  if (w.size() < kMaxCachedBytes) cache.put(w, ids->data() + before, ids->size() - before);
  return true;
}

bool TokenizerImpl::bpe_scores_encode(std::string_view w, ThreadState& ts,
                                      std::vector<int32_t>* ids) const {
  WordCache& cache = *ts.cache;
  if (w.size() < kMaxCachedBytes && cache.get(w, ids)) return true;
  // llama.cpp llm_tokenizer_spm_session: characters, then repeatedly merge the adjacent pair whose
  // concatenation is the highest-scoring vocab token (ties: leftmost).
  auto& sym = ts.symbols;
  sym.clear();
  for (size_t i = 0; i < w.size();) {
    const size_t n = std::min(unicode::utf8_len(static_cast<unsigned char>(w[i])), w.size() - i);
    const auto k = static_cast<int32_t>(sym.size());
    sym.push_back({-1, k - 1, -1, static_cast<uint32_t>(n), static_cast<uint32_t>(i)});
    i += n;
    if (i < w.size()) sym.back().next = k + 1;
  }
  auto& heap = ts.heap;
  heap.clear();
  const auto lower = [](const ThreadState::Merge& a, const ThreadState::Merge& b) {
    return a.score < b.score || (a.score == b.score && a.pos > b.pos);
  };
  auto try_add = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0) return;
    const auto& sl = sym[static_cast<size_t>(l)];
    const auto& sr = sym[static_cast<size_t>(r)];
    const int32_t id = vocab_index.find(w.substr(sl.off, sl.len + sr.len));
    if (id < 0) return;
    heap.push_back(
        {0, model.scores[static_cast<size_t>(id)], l, static_cast<int32_t>(sl.len + sr.len), r});
    std::push_heap(heap.begin(), heap.end(), lower);
  };
  for (size_t k = 1; k < sym.size(); ++k) {
    try_add(static_cast<int32_t>(k - 1), static_cast<int32_t>(k));
  }
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    const ThreadState::Merge top = heap.back();
    heap.pop_back();
    auto& l = sym[static_cast<size_t>(top.pos)];
    auto& r = sym[static_cast<size_t>(top.right)];
    if (l.len == 0 || r.len == 0 || static_cast<int32_t>(l.len + r.len) != top.merged) continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0) sym[static_cast<size_t>(r.next)].prev = top.pos;
    try_add(l.prev, top.pos);
    try_add(top.pos, l.next);
  }
  const size_t before = ids->size();
  for (int32_t k = sym.empty() ? -1 : 0; k != -1; k = sym[static_cast<size_t>(k)].next) {
    const auto& s = sym[static_cast<size_t>(k)];
    const std::string_view t = w.substr(s.off, s.len);
    const int32_t id = vocab_index.find(t);
    if (id >= 0) {
      ids->push_back(id);
      continue;
    }
    // Characters no merge covers: their bytes as <0xXX> tokens.
    for (char ch : t) {
      const int32_t b = byte_fallback_ids[static_cast<uint8_t>(ch)];
      if (b >= 0) {
        ids->push_back(b);
      } else if (unk_id >= 0) {
        ids->push_back(unk_id);
      } else {
        return fail(ts, status_error(StatusCode::kInvalidArgument,
                                     "BPE(scores): no <0x%02X> token and no unk token for a byte",
                                     static_cast<uint8_t>(ch)));
      }
    }
  }
  if (w.size() < kMaxCachedBytes) cache.put(w, ids->data() + before, ids->size() - before);
  return true;
}

bool TokenizerImpl::wordpiece_encode(std::string_view w, ThreadState& ts,
                                     std::vector<int32_t>* ids) const {
  auto unk = [&]() -> bool {
    if (unk_id < 0) return fail(ts, unk_missing(model));
    ids->push_back(unk_id);
    return true;
  };
  if (unicode::cp_count(w) > model.max_input_chars_per_word) return unk();
  const std::string& prefix = model.continuing_subword_prefix;
  const size_t before = ids->size();
  size_t start = 0;
  while (start < w.size()) {
    // Longest vocab entry first: no key is longer than max_token_bytes.
    const size_t room =
        start > 0 ? (max_token_bytes > prefix.size() ? max_token_bytes - prefix.size() : 0)
                  : max_token_bytes;
    size_t end = std::min(w.size(), start + room);
    while (end > start && end < w.size() && (static_cast<unsigned char>(w[end]) & 0xC0) == 0x80) {
      --end;
    }
    int32_t found = -1;
    while (start < end) {
      std::string_view key = w.substr(start, end - start);
      if (start > 0) {
        ts.tmp2.assign(prefix);
        ts.tmp2.append(key);
        key = ts.tmp2;
      }
      found = vocab_index.find(key);
      if (found >= 0) break;
      --end;
      while (end > start && (static_cast<unsigned char>(w[end]) & 0xC0) == 0x80) --end;
    }
    if (found < 0) {
      ids->resize(before);
      return unk();
    }
    ids->push_back(found);
    start = end;
  }
  return true;
}

bool TokenizerImpl::model_encode(const Piece& piece, ThreadState& ts,
                                 std::vector<int32_t>* ids) const {
  switch (model.kind) {
    case ModelKind::kBpe:
      return bpe_encode(piece, ts, ids);
    case ModelKind::kBpeScores:
      return bpe_scores_encode(piece.text, ts, ids);
    case ModelKind::kWordPiece:
      return wordpiece_encode(piece.text, ts, ids);
    case ModelKind::kWordLevel: {
      const int32_t id = vocab_index.find(piece.text);
      if (id >= 0) {
        ids->push_back(id);
        return true;
      }
      if (unk_id < 0) return fail(ts, unk_missing(model));
      ids->push_back(unk_id);
      return true;
    }
  }
  return fail(ts, Status(StatusCode::kInternal, "unknown model kind"));
}

}  // namespace laya::tok
