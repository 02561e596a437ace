// The decoder chain (HF decoders), decode and token_to_piece.
#include <algorithm>

#include "runtime/text/tokenizer/tokenizer_impl.h"
#include "runtime/text/tokenizer/unicode.h"

namespace laya::tok {
namespace {

using unicode::next_cp;

// A token's bytes under the GPT-2 byte-level map; the token as it is when one of its characters
// is outside the map (HF ByteLevel decoder).
void byte_level_bytes(std::string_view t, std::string* out) {
  const size_t mark = out->size();
  for (size_t i = 0; i < t.size();) {
    const int b = char_to_byte(next_cp(t, i));
    if (b < 0) {
      out->resize(mark);
      out->append(t);
      return;
    }
    out->push_back(static_cast<char>(b));
  }
}

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  std::string r;
  size_t prev = 0;
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + from.size())) {
    r.append(s, prev, p - prev);
    r.append(to);
    prev = p + from.size();
  }
  if (prev == 0) return;
  r.append(s, prev, std::string::npos);
  s.swap(r);
}

// HF decoders::wordpiece::cleanup.
void wordpiece_cleanup(std::string& s) {
  replace_all(s, " .", ".");
  replace_all(s, " ?", "?");
  replace_all(s, " !", "!");
  replace_all(s, " ,", ",");
  replace_all(s, " ' ", "'");
  replace_all(s, " n't", "n't");
  replace_all(s, " 'm", "'m");
  replace_all(s, " do not", " don't");
  replace_all(s, " 's", "'s");
  replace_all(s, " 've", "'ve");
  replace_all(s, " 're", "'re");
}

// "<0xXX>" -> the byte, else -1.
int byte_token(std::string_view t) {
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

Status TokenizerImpl::decode_chain(std::vector<std::string>& tokens, bool streaming) const {
  ThreadState& ts = thread_state();
  // Streaming decodes one token as if it followed others: position-dependent steps see index 1.
  const size_t base = streaming ? 1 : 0;
  for (const DecStep& step : decoders) {
    const DecoderSpec& d = step.spec;
    switch (d.kind) {
      case DecoderKind::kByteLevel: {
        std::string bytes;
        for (const std::string& t : tokens) byte_level_bytes(t, &bytes);
        tokens.clear();
        if (streaming) {
          tokens.push_back(std::move(bytes));
        } else {
          std::string text;
          unicode::append_utf8_lossy(bytes, &text);
          tokens.push_back(std::move(text));
        }
        break;
      }
      case DecoderKind::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          const bool drop = i + base == 0 && d.prepend_scheme != PrependScheme::kNever;
          std::string out;
          const std::string& t = tokens[i];
          for (size_t k = 0; k < t.size();) {
            const size_t b = k;
            if (next_cp(t, k) == step.ch) {
              if (!drop) out.push_back(' ');
            } else {
              out.append(t, b, k - b);
            }
          }
          tokens[i] = std::move(out);
        }
        break;
      case DecoderKind::kWordPiece:
        for (size_t i = 0; i < tokens.size(); ++i) {
          std::string& t = tokens[i];
          if (i + base != 0) {
            if (t.compare(0, d.prefix.size(), d.prefix) == 0) {
              t.erase(0, d.prefix.size());
            } else {
              t.insert(0, " ");
            }
          }
          if (d.cleanup) wordpiece_cleanup(t);
        }
        break;
      case DecoderKind::kByteFallback: {
        std::vector<std::string> out;
        std::string pending;
        auto flush = [&]() {
          if (pending.empty()) return;
          if (streaming || unicode::utf8_valid(pending)) {
            out.push_back(pending);
          } else {
            for (size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
          }
          pending.clear();
        };
        for (std::string& t : tokens) {
          const int b = byte_token(t);
          if (b >= 0) {
            pending.push_back(static_cast<char>(b));
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        tokens.swap(out);
        break;
      }
      case DecoderKind::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case DecoderKind::kStrip:
        if (streaming) break;  // a per-sequence edit: the caller owns the sequence
        for (std::string& t : tokens) {
          // Character positions of t.
          std::vector<size_t> starts;
          for (size_t k = 0; k < t.size();
               k += unicode::utf8_len(static_cast<unsigned char>(t[k]))) {
            starts.push_back(k);
          }
          const size_t nc = starts.size();
          auto cp_at = [&](size_t c) {
            size_t k = starts[c];
            return next_cp(t, k);
          };
          size_t first = 0;
          for (size_t c = 0; c < std::min<size_t>(d.start, nc); ++c) {
            if (cp_at(c) != step.ch) break;
            first = c + 1;
          }
          size_t last = nc;
          for (size_t c = 0; c < std::min<size_t>(d.stop, nc); ++c) {
            const size_t idx = nc - c - 1;
            if (cp_at(idx) != step.ch) break;
            last = idx;
          }
          if (last < first) last = first;
          const size_t b = first < nc ? starts[first] : t.size();
          const size_t e = last < nc ? starts[last] : t.size();
          t = t.substr(b, e - b);
        }
        break;
      case DecoderKind::kReplace:
        for (std::string& t : tokens) {
          std::string out;
          size_t prev = 0;
          LAYA_RETURN_IF_ERROR(step.regex.for_each_match(t, ts.regex, [&](size_t b, size_t e) {
            out.append(t, prev, b - prev);
            out.append(d.content);
            prev = e;
          }));
          out.append(t, prev, std::string::npos);
          t.swap(out);
        }
        break;
      case DecoderKind::kBpe:
        for (size_t i = 0; i < tokens.size(); ++i) {
          const bool last = !streaming && i + 1 == tokens.size();
          replace_all(tokens[i], d.suffix, last ? "" : " ");
        }
        break;
      case DecoderKind::kCtc: {
        std::vector<std::string> out;
        for (size_t i = 0; i < tokens.size(); ++i) {
          if (i > 0 && tokens[i] == tokens[i - 1]) continue;  // itertools dedup
          std::string t = tokens[i];
          replace_all(t, d.pattern, "");
          if (d.cleanup) {
            wordpiece_cleanup(t);
            replace_all(t, d.content, " ");
          }
          if (!t.empty()) out.push_back(std::move(t));
        }
        tokens.swap(out);
        break;
      }
    }
  }
  return Status::ok();
}

Status TokenizerImpl::decode(std::span<const int32_t> ids, bool skip_special,
                             std::string* text) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    const std::string_view t = token_text(id);
    if (t.empty()) continue;
    if (skip_special && special_contents.find(t) >= 0) continue;
    tokens.emplace_back(t);
  }
  text->clear();
  if (decoders.empty()) {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) text->push_back(' ');
      text->append(tokens[i]);
    }
    return Status::ok();
  }
  LAYA_RETURN_IF_ERROR(decode_chain(tokens, false));
  for (const std::string& t : tokens) text->append(t);
  return Status::ok();
}

Status TokenizerImpl::token_to_piece(int32_t id, bool render_special, std::string* bytes) const {
  const std::string_view t = token_text(id);
  if (t.empty()) {
    return status_error(StatusCode::kOutOfRange, "token id %d is not in the vocabulary", id);
  }
  bytes->clear();
  if (special_contents.find(t) >= 0) {
    if (render_special) bytes->append(t);
    return Status::ok();
  }
  std::vector<std::string> tokens(1, std::string(t));
  if (decoders.empty()) {
    bytes->append(t);
    return Status::ok();
  }
  LAYA_RETURN_IF_ERROR(decode_chain(tokens, true));
  for (const std::string& s : tokens) bytes->append(s);
  return Status::ok();
}

}  // namespace laya::tok
