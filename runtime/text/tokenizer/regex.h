// Pre-tokenizer and normalizer regular expressions on PCRE2 (UTF + UCP, JIT-compiled).
//
// Hugging Face `tokenizers` compiles tokenizer.json patterns with Oniguruma (Ruby grammar) and a
// few fixed ones (the Whitespace pre-tokenizer, added-token word checks) with Rust's `regex`.
// `Regex::hf` translates a pattern of either dialect so that PCRE2 gives the same matches; every
// class below was measured against HF over all code points (docs/tokenizers.md):
//   \s \S      White_Space in both. PCRE2's UCP \s also takes U+180E -> \p{White_Space}
//   \w \W      Oniguruma: Alphabetic | M | Nd | Pc, and outside a class also ² ³ ¹ ¼ ½ ¾ (its
//              Latin-1 table); Rust: Alphabetic | M | Nd | Pc | Join_Control. PCRE2 10.42's UCP
//              \w is L | N | _ -> explicit classes
//   \b \B      word boundaries on that \w, written as lookarounds
//   \p{Script} Oniguruma matches the Script property, PCRE2 10.42 Script_Extensions -> \p{sc:..}
//   \h \H      Oniguruma: hex digit (PCRE2: horizontal space) -> [0-9a-fA-F]
//   \uHHHH     -> \x{HHHH}
//   ^ $        Ruby's are line anchors: Oniguruma patterns compile with PCRE2_MULTILINE
//   (?m)       Ruby's m is "dot matches newline": -> (?s)
//   [[:alpha:]] [[:punct:]] [[:digit:]] [[:space:]] [[:xdigit:]] [[:word:]]: Oniguruma's Unicode
//              meaning (Alphabetic; P | S; Nd; White_Space; hex; \w); other POSIX brackets and
//              class intersection (&&) have no PCRE2 form here: kUnsupported
// \d (Nd), categories, (?i:..) (simple case folding), lookaround and possessive forms mean the
// same in all three. PCRE2 10.42 carries Unicode 14.0 tables, HF's Oniguruma Unicode 16.0:
// characters assigned since (9,272 letters, mostly CJK Extensions H and I) differ in \p{L}.
//
// Matching follows Oniguruma's find_iter (what HF iterates): search from the end of the previous
// match; an empty match at the end of the previous match is skipped by advancing one character.
//
// A Regex is immutable and shared by every thread (the compiled code is read-only); the match
// state lives in a RegexScratch owned by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ir/status.h"

struct pcre2_real_code_8;
struct pcre2_real_match_data_8;
struct pcre2_real_jit_stack_8;
struct pcre2_real_match_context_8;

namespace laya::tok {

enum class RegexDialect : uint8_t { kOniguruma, kRust };

// Per-thread match state: match data, and a JIT stack (up to 64 MiB, reserved when it is made), so
// that a match allocates nothing. Not shareable.
class RegexScratch {
 public:
  RegexScratch();
  ~RegexScratch();
  RegexScratch(const RegexScratch&) = delete;
  RegexScratch& operator=(const RegexScratch&) = delete;

 private:
  friend class Regex;
  pcre2_real_match_data_8* md_ = nullptr;
  pcre2_real_jit_stack_8* stack_ = nullptr;
  pcre2_real_match_context_8* mctx_ = nullptr;
};

class Regex {
 public:
  Regex() = default;

  // A pattern HF compiles (tokenizer.json patterns are kOniguruma), translated as described
  // above. kInvalidArgument names the pattern and PCRE2's message and offset when it does not
  // compile; kUnsupported for constructs with no PCRE2 equivalent.
  static Result<Regex> hf(std::string_view pattern, RegexDialect dialect);
  // Matches `text` literally.
  static Result<Regex> literal(std::string_view text);

  bool valid() const { return code_ != nullptr; }

  // Calls fn(start, end) (byte offsets into `subject`, valid UTF-8) for every match, in order.
  // Errors: PCRE2's match or depth limits (kResourceExhausted, naming the pattern).
  template <class Fn>
  Status for_each_match(std::string_view subject, RegexScratch& scratch, Fn&& fn) const {
    size_t pos = 0;
    bool have_last = false;
    size_t last_end = 0;
    while (pos <= subject.size()) {
      size_t s = 0, e = 0;
      const int rc = search(subject, pos, scratch, &s, &e);
      if (rc == 0) break;
      if (rc < 0) return match_error(rc, subject.size());
      if (s == e && have_last && last_end == e) {
        pos += pos < subject.size() ? char_len(subject, pos) : 1;
        continue;
      }
      pos = e;
      have_last = true;
      last_end = e;
      fn(s, e);
    }
    return Status::ok();
  }

  // Whether the pattern matches starting exactly at `pos` (anchored there).
  Result<bool> matches_at(std::string_view subject, size_t pos, RegexScratch& scratch) const;

  const std::string& pattern() const { return pattern_; }

 private:
  static Result<Regex> compile(std::string pcre_pattern, std::string_view shown, uint32_t extra);
  static size_t char_len(std::string_view s, size_t i);
  // 1: a match at [*s, *e); 0: none; < 0: a PCRE2 error code (match_error makes the Status).
  int search(std::string_view subject, size_t from, RegexScratch& scratch, size_t* s,
             size_t* e) const;
  Status match_error(int rc, size_t subject_size) const;

  std::shared_ptr<pcre2_real_code_8> code_;
  bool jit_ = false;
  std::string pattern_;  // as given, for messages
};

// The translation Regex::hf applies: a pattern of `dialect` in PCRE2 syntax.
Result<std::string> translate_to_pcre2(std::string_view pattern, RegexDialect dialect);

}  // namespace laya::tok
