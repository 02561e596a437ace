#include "runtime/text/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "runtime/text/tokenizer/unicode.h"

namespace laya::tok {
namespace {

// The word characters of each engine, measured against HF over every code point
// (docs/tokenizers.md): Oniguruma's \w is Alphabetic, Mark, Nd and Pc (not Join_Control), plus,
// outside a character class only, the six No characters ² ³ ¹ ¼ ½ ¾ of its Latin-1 table; Rust's
// `regex` \w is UTS #18's Word (Alphabetic, Mark, Nd, Pc, Join_Control).
constexpr std::string_view kOnigWord = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}";
constexpr std::string_view kOnigLatin1Numbers = "\\x{B2}\\x{B3}\\x{B9}\\x{BC}-\\x{BE}";
constexpr std::string_view kRustWord = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";

bool is_hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

Status unsupported(std::string_view pattern, const char* what) {
  return status_error(StatusCode::kUnsupported, "regex '%.*s': %s has no PCRE2 equivalent",
                      static_cast<int>(pattern.size()), pattern.data(), what);
}

// Whether PCRE2 knows `name` as a script (then \p{name} is written \p{sc:name}: Oniguruma
// matches a script by the Script property, PCRE2 10.42's \p{name} by Script_Extensions).
bool is_script(std::string_view name) {
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) return false;
  }
  const std::string probe = "\\p{sc:" + std::string(name) + "}";
  int err = 0;
  PCRE2_SIZE off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(probe.data()), probe.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (!code) return false;
  pcre2_code_free(code);
  return true;
}

// Oniguruma's POSIX brackets under Unicode, as HF sees them; nullptr for one not mapped.
const char* onig_posix(std::string_view name) {
  if (name == "alpha") return "\\p{Alphabetic}";
  if (name == "punct") return "\\p{P}\\p{S}";
  if (name == "digit") return "\\p{Nd}";
  if (name == "space") return "\\p{White_Space}";
  if (name == "xdigit") return "0-9A-Fa-f";
  if (name == "word") return kOnigWord.data();  // a literal: NUL-terminated
  return nullptr;
}

}  // namespace

Result<std::string> translate_to_pcre2(std::string_view p, RegexDialect dialect) {
  const bool onig = dialect == RegexDialect::kOniguruma;
  const std::string_view wc = onig ? kOnigWord : kRustWord;
  std::string out;
  out.reserve(p.size() + 16);
  const std::string word =
      "[" + std::string(wc) + std::string(onig ? kOnigLatin1Numbers : "") + "]";
  const std::string boundary =
      "(?:(?<=" + word + ")(?!" + word + ")|(?<!" + word + ")(?=" + word + "))";
  const std::string non_boundary =
      "(?:(?<=" + word + ")(?=" + word + ")|(?<!" + word + ")(?!" + word + "))";
  int depth = 0;  // character-class nesting
  size_t i = 0;
  const size_t n = p.size();
  while (i < n) {
    const char c = p[i];
    if (c == '\\' && i + 1 < n) {
      const char d = p[i + 1];
      switch (d) {
        case 's':
          out += "\\p{White_Space}";
          break;
        case 'S':
          out += "\\P{White_Space}";
          break;
        case 'w':
          if (depth > 0) {
            out += wc;
          } else {
            out += word;
          }
          break;
        case 'W':
          if (depth > 0) return unsupported(p, "\\W inside a character class");
          out += "[^";
          out += word.substr(1);
          break;
        case 'b':
          out += depth > 0 ? "\\b" : boundary;
          break;
        case 'B':
          out += depth > 0 ? "\\B" : non_boundary;
          break;
        case 'h':
          if (!onig) {
            out += "\\h";
            break;
          }
          out += depth > 0 ? "0-9a-fA-F" : "[0-9a-fA-F]";
          break;
        case 'H':
          if (!onig) {
            out += "\\H";
            break;
          }
          if (depth > 0) return unsupported(p, "\\H inside a character class");
          out += "[^0-9a-fA-F]";
          break;
        case 'u':
          if (i + 6 <= n && is_hex(p[i + 2]) && is_hex(p[i + 3]) && is_hex(p[i + 4]) &&
              is_hex(p[i + 5])) {
            out += "\\x{";
            out.append(p.substr(i + 2, 4));
            out += "}";
            i += 6;
            continue;
          }
          out += "\\u";
          break;
        case 'p':
        case 'P': {
          const size_t close = p.find('}', i + 2);
          if (i + 2 < n && p[i + 2] == '{' && close != std::string_view::npos &&
              is_script(p.substr(i + 3, close - i - 3))) {
            out += '\\';
            out += d;
            out += "{sc:";
            out.append(p.substr(i + 3, close - i - 3));
            out += '}';
            i = close + 1;
            continue;
          }
          out += c;
          out += d;
          break;
        }
        default:
          out += c;
          out += d;
          break;
      }
      i += 2;
      continue;
    }
    if (c == '[') {
      if (depth > 0 && i + 1 < n && p[i + 1] == ':') {
        // POSIX bracket [:name:] (or [:^name:]) inside a class.
        const size_t close = p.find(":]", i + 2);
        if (close != std::string_view::npos) {
          std::string_view name = p.substr(i + 2, close - i - 2);
          if (onig) {
            if (!name.empty() && name[0] == '^') {
              return unsupported(p, "a negated POSIX bracket");
            }
            const char* mapped = onig_posix(name);
            if (!mapped) return unsupported(p, "this POSIX bracket");
            out += mapped;
          } else {
            out.append(p.substr(i, close + 2 - i));
          }
          i = close + 2;
          continue;
        }
      }
      ++depth;
      out += '[';
      ++i;
      if (i < n && p[i] == '^') {
        out += '^';
        ++i;
      }
      if (i < n && p[i] == ']') {  // a leading ']' is a literal
        out += "\\]";
        ++i;
      }
      continue;
    }
    if (c == ']' && depth > 0) {
      --depth;
      out += ']';
      ++i;
      continue;
    }
    if (c == '&' && depth > 0 && i + 1 < n && p[i + 1] == '&') {
      return unsupported(p, "character-class intersection (&&)");
    }
    if (onig && c == '(' && depth == 0 && i + 1 < n && p[i + 1] == '?') {
      // Inline options (?imx-imx) / (?imx-imx: ...): Ruby's m is PCRE2's s.
      size_t j = i + 2;
      while (j < n && (p[j] == 'i' || p[j] == 'm' || p[j] == 'x' || p[j] == '-')) ++j;
      if (j > i + 2 && j < n && (p[j] == ')' || p[j] == ':')) {
        out += "(?";
        for (size_t k = i + 2; k < j; ++k) out += p[k] == 'm' ? 's' : p[k];
        i = j;
        continue;
      }
      out += "(?";
      i += 2;
      continue;
    }
    out += c;
    ++i;
  }
  return out;
}

RegexScratch::RegexScratch() {
  md_ = pcre2_match_data_create(1, nullptr);
  mctx_ = pcre2_match_context_create(nullptr);
  // A JIT stack large enough for long subjects, made now: a match never allocates.
  stack_ = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
  if (stack_ && mctx_) pcre2_jit_stack_assign(mctx_, nullptr, stack_);
}

RegexScratch::~RegexScratch() {
  pcre2_match_data_free(md_);
  pcre2_match_context_free(mctx_);
  if (stack_) pcre2_jit_stack_free(stack_);
}

Result<Regex> Regex::compile(std::string pcre_pattern, std::string_view shown, uint32_t extra) {
  pcre2_compile_context* cctx = pcre2_compile_context_create(nullptr);
  pcre2_set_newline(cctx, PCRE2_NEWLINE_LF);
  int err = 0;
  PCRE2_SIZE off = 0;
  // PCRE2_LITERAL allows no option that changes how a pattern reads (UCP, MULTILINE).
  const uint32_t options =
      (extra & PCRE2_LITERAL) ? PCRE2_UTF | extra : PCRE2_UTF | PCRE2_UCP | extra;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcre_pattern.data()),
                                   pcre_pattern.size(), options, &err, &off, cctx);
  pcre2_compile_context_free(cctx);
  if (!code) {
    PCRE2_UCHAR msg[160];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return status_error(StatusCode::kInvalidArgument, "regex '%.*s' does not compile: %s (at %zu)",
                        static_cast<int>(shown.size()), shown.data(),
                        reinterpret_cast<const char*>(msg), static_cast<size_t>(off));
  }
  Regex r;
  r.jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  r.code_ = std::shared_ptr<pcre2_code>(code, [](pcre2_code* c) { pcre2_code_free(c); });
  r.pattern_ = std::string(shown);
  return r;
}

Result<Regex> Regex::hf(std::string_view pattern, RegexDialect dialect) {
  if (!unicode::utf8_valid(pattern)) {
    return Status(StatusCode::kInvalidArgument, "regex pattern is not valid UTF-8");
  }
  LAYA_ASSIGN_OR_RETURN(std::string translated, translate_to_pcre2(pattern, dialect));
  // Ruby's ^ and $ are line anchors; Rust's are text anchors.
  return compile(std::move(translated), pattern,
                 dialect == RegexDialect::kOniguruma ? PCRE2_MULTILINE : 0);
}

Result<Regex> Regex::literal(std::string_view text) {
  if (!unicode::utf8_valid(text)) {
    return Status(StatusCode::kInvalidArgument, "literal pattern is not valid UTF-8");
  }
  return compile(std::string(text), text, PCRE2_LITERAL);
}

size_t Regex::char_len(std::string_view s, size_t i) {
  return unicode::utf8_len(static_cast<unsigned char>(s[i]));
}

int Regex::search(std::string_view subject, size_t from, RegexScratch& scratch, size_t* s,
                  size_t* e) const {
  const auto* subj = reinterpret_cast<PCRE2_SPTR>(subject.data());
  for (int attempt = 0;; ++attempt) {
    const int rc = jit_ ? pcre2_jit_match(code_.get(), subj, subject.size(), from,
                                          PCRE2_NO_UTF_CHECK, scratch.md_, scratch.mctx_)
                        : pcre2_match(code_.get(), subj, subject.size(), from, PCRE2_NO_UTF_CHECK,
                                      scratch.md_, scratch.mctx_);
    if (rc >= 0) {
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(scratch.md_);
      *s = ov[0];
      *e = ov[1];
      return 1;
    }
    if (rc == PCRE2_ERROR_NOMATCH) return 0;
    if (rc != PCRE2_ERROR_JIT_STACKLIMIT || attempt > 0 || scratch.stack_) return rc;
    // The default 32 KiB JIT stack is too small for this subject: give this thread a larger one
    // (kept for its later matches) and retry once.
    scratch.stack_ = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
    if (!scratch.stack_) return rc;
    pcre2_jit_stack_assign(scratch.mctx_, nullptr, scratch.stack_);
  }
}

Status Regex::match_error(int rc, size_t subject_size) const {
  PCRE2_UCHAR msg[160];
  pcre2_get_error_message(rc, msg, sizeof(msg));
  return status_error(StatusCode::kResourceExhausted, "regex '%s' failed on a %zu-byte input: %s",
                      pattern_.c_str(), subject_size, reinterpret_cast<const char*>(msg));
}

Result<bool> Regex::matches_at(std::string_view subject, size_t pos, RegexScratch& scratch) const {
  const int rc =
      pcre2_match(code_.get(), reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), pos,
                  PCRE2_NO_UTF_CHECK | PCRE2_ANCHORED, scratch.md_, scratch.mctx_);
  if (rc >= 0) return true;
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  return status_error(StatusCode::kResourceExhausted, "regex '%s' failed (PCRE2 error %d)",
                      pattern_.c_str(), rc);
}

}  // namespace laya::tok
