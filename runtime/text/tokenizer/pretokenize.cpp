// The pre-tokenizer chain (HF pre_tokenizers): every step splits every piece.
#include <algorithm>

#include "runtime/text/tokenizer/tokenizer_impl.h"
#include "runtime/text/tokenizer/unicode.h"

namespace laya::tok {
namespace {

using Event = ThreadState::Event;
using unicode::next_cp;

// HF's Pattern for a character predicate: each matching character is one match, the text between
// matches one non-match.
template <class Pred>
void char_events(std::string_view s, Pred pred, std::vector<Event>* ev) {
  ev->clear();
  if (s.empty()) {
    ev->push_back({0, 0, false});
    return;
  }
  size_t last = 0;
  size_t i = 0;
  while (i < s.size()) {
    const size_t b = i;
    const char32_t c = next_cp(s, i);
    if (pred(c)) {
      if (last < b) ev->push_back({last, b, false});
      ev->push_back({b, i, true});
      last = i;
    }
  }
  if (last < s.size()) ev->push_back({last, s.size(), false});
}

// HF's Pattern for a regex (optionally inverted): matches and the gaps between them.
Status regex_events(std::string_view s, const Regex& re, bool invert, ThreadState& ts,
                    std::vector<Event>* ev) {
  ev->clear();
  if (s.empty()) {
    ev->push_back({0, 0, invert});
    return Status::ok();
  }
  size_t prev = 0;
  LAYA_RETURN_IF_ERROR(re.for_each_match(s, ts.regex, [&](size_t b, size_t e) {
    if (prev != b) ev->push_back({prev, b, invert});
    ev->push_back({b, e, !invert});
    prev = e;
  }));
  if (prev != s.size()) ev->push_back({prev, s.size(), invert});
  return Status::ok();
}

// The origin bytes of p's sub-piece [b, e).
uint32_t sub_origin(const Piece& p, size_t b, size_t e) {
  return p.origin > b ? static_cast<uint32_t>(std::min<size_t>(p.origin, e) - b) : 0;
}

// NormalizedString::split: applies the behaviour to the events and appends the non-empty pieces.
void emit(const Piece& p, const std::vector<Event>& ev, SplitBehavior beh, std::vector<Event>& kept,
          std::vector<Piece>* out) {
  kept.clear();
  bool prev_match = false;
  switch (beh) {
    case SplitBehavior::kIsolated:
      kept.assign(ev.begin(), ev.end());
      break;
    case SplitBehavior::kRemoved:
      for (const Event& e : ev) {
        if (!e.is_match) kept.push_back(e);
      }
      break;
    case SplitBehavior::kContiguous:
      for (const Event& e : ev) {
        if (e.is_match == prev_match && !kept.empty()) {
          kept.back().end = e.end;
        } else {
          kept.push_back(e);
        }
        prev_match = e.is_match;
      }
      break;
    case SplitBehavior::kMergedWithPrevious:
      for (const Event& e : ev) {
        if (e.is_match && !prev_match && !kept.empty()) {
          kept.back().end = e.end;
        } else {
          kept.push_back(e);
        }
        prev_match = e.is_match;
      }
      break;
    case SplitBehavior::kMergedWithNext:
      for (size_t k = ev.size(); k-- > 0;) {
        const Event& e = ev[k];
        if (e.is_match && !prev_match && !kept.empty()) {
          kept.back().start = e.start;
        } else {
          kept.push_back(e);
        }
        prev_match = e.is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  for (const Event& e : kept) {
    if (e.end <= e.start) continue;
    out->push_back({p.text.substr(e.start, e.end - e.start), sub_origin(p, e.start, e.end), false});
  }
}

std::string_view map_bytes(std::string_view raw, Arena& arena) {
  // Every byte maps to a 1- or 2-byte character.
  char* buf = arena.alloc(raw.size() * 2);
  size_t n = 0;
  for (char ch : raw) {
    const char32_t c = byte_to_char(static_cast<uint8_t>(ch));
    if (c < 0x80) {
      buf[n++] = static_cast<char>(c);
    } else {
      buf[n++] = static_cast<char>(0xC0 | (c >> 6));
      buf[n++] = static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return {buf, n};
}

}  // namespace

Status TokenizerImpl::pre_tokenize(Piece piece, ThreadState& ts,
                                   std::vector<Piece>** result) const {
  std::vector<Piece>* in = &ts.pieces_a;
  std::vector<Piece>* out = &ts.pieces_b;
  in->clear();
  in->push_back(piece);
  for (size_t si = 0; si < pre_tokenizers.size(); ++si) {
    const PreStep& step = pre_tokenizers[si];
    const PreTokenizerSpec& s = step.spec;
    out->clear();
    for (const Piece& p : *in) {
      switch (s.kind) {
        case PreTokenizerKind::kSplit:
          LAYA_RETURN_IF_ERROR(regex_events(p.text, step.regex, s.invert, ts, &ts.events));
          emit(p, ts.events, s.behavior, ts.merged, out);
          break;
        case PreTokenizerKind::kByteLevel: {
          Piece q = p;
          if (s.add_prefix_space && (q.text.empty() || q.text[0] != ' ')) {
            char* buf = ts.arena.alloc(q.text.size() + 1);
            buf[0] = ' ';
            std::memcpy(buf + 1, q.text.data(), q.text.size());
            q.text = {buf, q.text.size() + 1};
            if (q.origin > 0) ++q.origin;  // the space takes the first character's place
          }
          const size_t first = out->size();
          if (s.use_regex) {
            // Isolated: every match and every gap is a piece (straight from the matches).
            size_t prev = 0;
            auto piece = [&](size_t b, size_t e) {
              if (e > b) out->push_back({q.text.substr(b, e - b), sub_origin(q, b, e), false});
            };
            LAYA_RETURN_IF_ERROR(
                step.regex.for_each_match(q.text, ts.regex, [&](size_t b, size_t e) {
                  piece(prev, b);
                  piece(b, e);
                  prev = e;
                }));
            piece(prev, q.text.size());
          } else if (!q.text.empty()) {
            out->push_back(q);
          }
          const bool defer = defer_byte_level && si + 1 == pre_tokenizers.size();
          for (size_t k = first; k < out->size(); ++k) {
            Piece& r = (*out)[k];
            if (defer) {
              r.raw_bytes = true;
            } else {
              r.origin =
                  static_cast<uint32_t>(map_bytes(r.text.substr(0, r.origin), ts.arena).size());
              r.text = map_bytes(r.text, ts.arena);
            }
          }
          break;
        }
        case PreTokenizerKind::kMetaspace: {
          const std::string& rep = s.replacement;
          std::string& t = ts.tmp;
          t.clear();
          const bool starts =
              p.text.substr(0, rep.size()) == rep || (p.text.size() > 0 && p.text[0] == ' ');
          uint32_t origin = 0;
          if (!starts && (s.prepend_scheme == PrependScheme::kAlways ||
                          (s.prepend_scheme == PrependScheme::kFirst && p.origin > 0))) {
            t += rep;
            if (p.origin > 0) origin += static_cast<uint32_t>(rep.size());
          }
          for (size_t k = 0; k < p.text.size(); ++k) {
            const size_t before = t.size();
            if (p.text[k] == ' ') {
              t += rep;
            } else {
              t += p.text[k];
            }
            if (k < p.origin) origin += static_cast<uint32_t>(t.size() - before);
          }
          Piece q{ts.arena.copy(t), origin, false};
          if (s.split) {
            const char32_t r = step.ch;
            char_events(
                q.text, [r](char32_t c) { return c == r; }, &ts.events);
            emit(q, ts.events, SplitBehavior::kMergedWithNext, ts.merged, out);
          } else if (!q.text.empty()) {
            out->push_back(q);
          }
          break;
        }
        case PreTokenizerKind::kBert: {
          std::vector<Piece>& words = ts.bert_words;
          words.clear();
          char_events(p.text, unicode::is_white_space, &ts.events);
          emit(p, ts.events, SplitBehavior::kRemoved, ts.merged, &words);
          for (const Piece& w : words) {
            char_events(w.text, unicode::is_punctuation, &ts.events);
            emit(w, ts.events, SplitBehavior::kIsolated, ts.merged, out);
          }
          break;
        }
        case PreTokenizerKind::kWhitespace:
          LAYA_RETURN_IF_ERROR(regex_events(p.text, step.regex, true, ts, &ts.events));
          emit(p, ts.events, SplitBehavior::kRemoved, ts.merged, out);
          break;
        case PreTokenizerKind::kWhitespaceSplit:
          char_events(p.text, unicode::is_white_space, &ts.events);
          emit(p, ts.events, SplitBehavior::kRemoved, ts.merged, out);
          break;
        case PreTokenizerKind::kPunctuation:
          char_events(p.text, unicode::is_punctuation, &ts.events);
          emit(p, ts.events, s.behavior, ts.merged, out);
          break;
        case PreTokenizerKind::kDigits:
          char_events(p.text, unicode::is_numeric, &ts.events);
          emit(p, ts.events,
               s.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
               ts.merged, out);
          break;
        case PreTokenizerKind::kCharDelimiterSplit: {
          const char32_t d = step.ch;
          char_events(
              p.text, [d](char32_t c) { return c == d; }, &ts.events);
          emit(p, ts.events, SplitBehavior::kRemoved, ts.merged, out);
          break;
        }
        case PreTokenizerKind::kFixedLength: {
          size_t i = 0;
          while (i < p.text.size()) {
            const size_t b = i;
            for (uint32_t k = 0; k < s.length && i < p.text.size(); ++k) {
              i += unicode::utf8_len(static_cast<unsigned char>(p.text[i]));
            }
            out->push_back({p.text.substr(b, i - b), sub_origin(p, b, i), false});
          }
          break;
        }
      }
    }
    std::swap(in, out);
  }
  *result = in;
  return Status::ok();
}

}  // namespace laya::tok
