#include "runtime/text/tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

namespace laya::tok::unicode {
namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 with *bad set to the length of its longest
// valid prefix (at least 1): the unit Rust's from_utf8_lossy replaces by one U+FFFD.
size_t valid_seq(std::string_view s, size_t i, size_t* bad) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  const size_t n = s.size();
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](size_t k) { return k < n && (byte(k) & 0xC0) == 0x80; };
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    if (cont(i + 1)) return 2;
    *bad = 1;
    return 0;
  }
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;
    const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;
    if (i + 1 >= n || byte(i + 1) < lo || byte(i + 1) > hi) {
      *bad = 1;
      return 0;
    }
    if (!cont(i + 2)) {
      *bad = 2;
      return 0;
    }
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (i + 1 >= n || byte(i + 1) < lo || byte(i + 1) > hi) {
      *bad = 1;
      return 0;
    }
    if (!cont(i + 2)) {
      *bad = 2;
      return 0;
    }
    if (!cont(i + 3)) {
      *bad = 3;
      return 0;
    }
    return 4;
  }
  *bad = 1;
  return 0;
}

utf8proc_category_t category(char32_t c) {
  return static_cast<utf8proc_category_t>(utf8proc_category(static_cast<utf8proc_int32_t>(c)));
}

}  // namespace

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool utf8_valid(std::string_view s, size_t* bad_offset) {
  size_t i = 0;
  while (i < s.size()) {
    // ASCII runs, 8 bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= s.size()) break;
    size_t bad = 0;
    const size_t n = valid_seq(s, i, &bad);
    if (n == 0) {
      if (bad_offset) *bad_offset = i;
      return false;
    }
    i += n;
  }
  return true;
}

size_t cp_count(std::string_view s) {
  size_t n = 0;
  for (char ch : s) n += (static_cast<unsigned char>(ch) & 0xC0) != 0x80;
  return n;
}

bool is_white_space(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  if (c == 0x85) return true;
  const utf8proc_category_t k = category(c);
  return k == UTF8PROC_CATEGORY_ZS || k == UTF8PROC_CATEGORY_ZL || k == UTF8PROC_CATEGORY_ZP;
}

bool is_bert_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  if (c < 0x80) return c < 0x20 || c == 0x7F;  // Cc; no other ASCII character is C*
  const utf8proc_category_t k = category(c);
  return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CO ||
         k == UTF8PROC_CATEGORY_CS;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  }
  const utf8proc_category_t k = category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool is_numeric(char32_t c) {
  if (c < 0x80) return c >= '0' && c <= '9';
  const utf8proc_category_t k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool is_mark(char32_t c) {
  if (c < 0x80) return false;
  const utf8proc_category_t k = category(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

bool is_nonspacing_mark(char32_t c) {
  return c >= 0x80 && category(c) == UTF8PROC_CATEGORY_MN;
}

bool is_bert_chinese(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

Status normalize(std::string_view in, NormalForm form, std::string* out) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  // Work on maximal non-ASCII runs, each with the ASCII character before it (which may be the
  // base of a combining sequence). An ASCII character is a starter that nothing composes with from
  // the left, so the text before one is a normalization boundary.
  size_t i = 0;
  const size_t n = in.size();
  while (i < n) {
    size_t j = i;
    while (j + 8 <= n) {
      uint64_t w;
      __builtin_memcpy(&w, in.data() + j, 8);
      if (w & 0x8080808080808080ull) break;
      j += 8;
    }
    while (j < n && static_cast<unsigned char>(in[j]) < 0x80) ++j;
    if (j == n) {
      out->append(in.data() + i, n - i);
      break;
    }
    size_t start = j;
    if (j > i) {
      out->append(in.data() + i, j - 1 - i);
      start = j - 1;
    }
    size_t end = j;
    while (end < n && static_cast<unsigned char>(in[end]) >= 0x80) ++end;
    // utf8proc_map's steps (decompose, then recompose and encode in place) on a buffer of ours,
    // so that nothing comes from malloc.
    const auto* src = reinterpret_cast<const utf8proc_uint8_t*>(in.data() + start);
    const auto src_len = static_cast<utf8proc_ssize_t>(end - start);
    const auto opt = static_cast<utf8proc_option_t>(options);
    utf8proc_ssize_t len = utf8proc_decompose(src, src_len, nullptr, 0, opt);
    std::vector<utf8proc_int32_t> cps;
    if (len >= 0) {
      cps.resize(static_cast<size_t>(len) + 1);
      len = utf8proc_decompose(src, src_len, cps.data(), len, opt);
    }
    if (len >= 0) len = utf8proc_reencode(cps.data(), len, opt);
    if (len < 0) {
      return status_error(StatusCode::kInvalidArgument, "unicode normalization failed: %s",
                          utf8proc_errmsg(len));
    }
    out->append(reinterpret_cast<const char*>(cps.data()), static_cast<size_t>(len));
    i = end;
  }
  return Status::ok();
}

void lowercase(std::string_view in, std::string* out) {
  size_t i = 0;
  while (i < in.size()) {
    const auto b = static_cast<unsigned char>(in[i]);
    if (b < 0x80) {
      out->push_back(static_cast<char>(b >= 'A' && b <= 'Z' ? b + 32 : b));
      ++i;
      continue;
    }
    const char32_t c = next_cp(in, i);
    if (c == 0x130) {
      out->append("i\xCC\x87");
      continue;
    }
    append_utf8(*out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
  }
}

void append_utf8_lossy(std::string_view bytes, std::string* out) {
  size_t i = 0;
  while (i < bytes.size()) {
    size_t bad = 0;
    const size_t n = valid_seq(bytes, i, &bad);
    if (n > 0) {
      out->append(bytes.data() + i, n);
      i += n;
    } else {
      out->append("\xEF\xBF\xBD");
      i += bad;
    }
  }
}

}  // namespace laya::tok::unicode
