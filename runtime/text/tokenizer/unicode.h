// Unicode helpers for the tokenizers: UTF-8 coding, character classes and normalization forms.
//
// Character data comes from utf8proc (Debian's libutf8proc, Unicode 15.0 in Debian 12); nothing
// here is a hand-written Unicode table. The classes reproduce what Hugging Face `tokenizers`
// (Rust) asks of each character, derived from General_Category:
//   White_Space (Rust char::is_whitespace) = Zs | Zl | Zp | U+0009..U+000D | U+0085 (identical on
//     every code point to Rust's table);
//   BERT control (unicode_categories is_other) = Cc | Cf | Co | Cs, minus \t \n \r;
//   punctuation = ASCII punctuation | P*; numeric (char::is_numeric) = N*; marks = M*, Mn.
// HF's tables are of other Unicode versions (Rust std: 16.0; the unicode_categories crate: 8.0), so
// characters assigned since differ: measured over all code points, 20 format characters (BERT
// clean_text), 129 punctuation, 93 numeric and 55 lowercase mappings, all of them characters
// added in Unicode 9.0-16.0 (tools/reference probes; see docs/tokenizers.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/status.h"

namespace laya::tok::unicode {

// Bytes in the UTF-8 sequence that starts with `lead` (1 for a stray continuation byte).
inline size_t utf8_len(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// Decodes the code point at s[i] and advances i. Precondition: s is valid UTF-8 and i < size.
inline char32_t next_cp(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  const size_t n = utf8_len(b0);
  char32_t cp = n == 2 ? (b0 & 0x1F) : n == 3 ? (b0 & 0x0F) : (b0 & 0x07);
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += n;
  return cp;
}

void append_utf8(std::string& out, char32_t cp);

// Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF). On failure *bad_offset
// (when non-null) is the byte offset of the first invalid sequence.
bool utf8_valid(std::string_view s, size_t* bad_offset = nullptr);

// Number of code points (s valid UTF-8).
size_t cp_count(std::string_view s);

bool is_white_space(char32_t c);
bool is_bert_control(char32_t c);
bool is_punctuation(char32_t c);
bool is_numeric(char32_t c);
bool is_mark(char32_t c);
bool is_nonspacing_mark(char32_t c);
// BERT's "Chinese character": the CJK Unified Ideographs blocks BERT lists (its algorithm names
// these ranges; they are not a Unicode property).
bool is_bert_chinese(char32_t c);

enum class NormalForm : uint8_t { kNfc, kNfd, kNfkc, kNfkd };
// Appends the normal form of `in` (valid UTF-8) to *out. ASCII runs are copied as they are (they are
// stable in every form and never combine with what precedes them).
Status normalize(std::string_view in, NormalForm form, std::string* out);

// Appends Rust's char::to_lowercase of every character (utf8proc's simple lowercase mapping, plus
// the one unconditional multi-character mapping, U+0130 -> "i\u0307").
void lowercase(std::string_view in, std::string* out);

// Appends Rust's String::from_utf8_lossy(bytes): every maximal invalid subsequence becomes U+FFFD.
void append_utf8_lossy(std::string_view bytes, std::string* out);

}  // namespace laya::tok::unicode
