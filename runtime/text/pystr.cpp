#include "runtime/text/pystr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iterator>

#include "runtime/text/pystr_tables.inc"

namespace laya::py {

namespace t = tables;

namespace {

uint16_t flags_search(char32_t c) {
  if (c > 0x10FFFF) return 0;
  const auto* end = std::end(t::kCharRuns);
  const auto* it = std::upper_bound(std::begin(t::kCharRuns), end, static_cast<uint32_t>(c),
                                    [](uint32_t v, const t::CharRun& r) { return v < r.first; });
  return (it - 1)->flags;
}

// The first 0x800 code points (Latin, Greek, Cyrillic, combining marks, ...) by direct lookup.
constexpr uint32_t kDirect = 0x800;
struct DirectTable {
  uint16_t flags[kDirect];
};
constexpr DirectTable make_direct() {
  DirectTable d{};
  size_t run = 0;
  for (uint32_t c = 0; c < kDirect; ++c) {
    while (run + 1 < std::size(t::kCharRuns) && t::kCharRuns[run + 1].first <= c) ++run;
    d.flags[c] = t::kCharRuns[run].flags;
  }
  return d;
}
constexpr DirectTable kDirectTable = make_direct();

inline uint16_t flags_of(char32_t c) {
  return c < kDirect ? kDirectTable.flags[c] : flags_search(c);
}

bool has(char32_t c, uint16_t f) {
  return (flags_of(c) & f) != 0;
}

char32_t lower_simple(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  const auto* end = std::end(t::kLowerMap);
  const auto* it = std::lower_bound(std::begin(t::kLowerMap), end, static_cast<uint32_t>(c),
                                    [](const t::LowerPair& p, uint32_t v) { return p.cp < v; });
  return (it != end && it->cp == c) ? static_cast<char32_t>(it->lower) : c;
}

// CPython's handle_capital_sigma: Σ at `i` lowers to ς when a cased letter precedes it and none
// follows it (case-ignorable characters skipped on both sides).
bool final_sigma(std::u32string_view s, size_t i) {
  size_t j = i;
  char32_t c = 0;
  bool found = false;
  while (j > 0) {
    c = s[--j];
    if (!has(c, t::kCaseIgnorable)) {
      found = true;
      break;
    }
  }
  if (!found || !has(c, t::kCased)) return false;
  for (j = i + 1; j < s.size(); ++j) {
    c = s[j];
    if (!has(c, t::kCaseIgnorable)) return !has(c, t::kCased);
  }
  return true;
}

}  // namespace

// ---- UTF-8 ----

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    char32_t c = 0xFFFD;
    size_t n = 1;
    if (b < 0x80) {
      c = b;
    } else if ((b >> 5) == 0x6 && i + 1 < s.size()) {
      c = ((b & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
      n = 2;
    } else if ((b >> 4) == 0xE && i + 2 < s.size()) {
      c = ((b & 0x0F) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3F) << 6) |
          (static_cast<unsigned char>(s[i + 2]) & 0x3F);
      n = 3;
    } else if ((b >> 3) == 0x1E && i + 3 < s.size()) {
      c = ((b & 0x07) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3F) << 12) |
          ((static_cast<unsigned char>(s[i + 2]) & 0x3F) << 6) |
          (static_cast<unsigned char>(s[i + 3]) & 0x3F);
      n = 4;
    }
    out.push_back(c);
    i += n;
  }
  return out;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

// ---- properties ----

bool is_alpha(char32_t c) {
  return has(c, t::kAlpha);
}
bool is_upper(char32_t c) {
  return has(c, t::kUpper);
}
bool is_lower(char32_t c) {
  return has(c, t::kLower);
}
bool is_decimal(char32_t c) {
  return has(c, t::kDecimal);
}
bool is_numeric(char32_t c) {
  return has(c, t::kNumeric);
}
bool is_space(char32_t c) {
  return has(c, t::kSpace);
}
bool is_printable(char32_t c) {
  return has(c, t::kPrintable);
}
bool is_combining(char32_t c) {
  return has(c, t::kCombining);
}
bool is_unassigned(char32_t c) {
  return has(c, t::kUnassigned);
}
bool is_alnum(char32_t c) {
  return has(c, t::kAlpha | t::kNumeric);
}
bool is_word(char32_t c) {
  return c == U'_' || is_alnum(c);
}
bool is_word_letter(char32_t c) {
  const uint16_t f = flags_of(c);
  return (f & t::kAlpha) || ((f & t::kNumeric) && !(f & t::kDecimal));
}

bool str_isupper(std::u32string_view s) {
  bool cased = false;
  for (char32_t c : s) {
    const uint16_t f = flags_of(c);
    if (f & (t::kLower | t::kTitle)) return false;
    if (f & t::kUpper) cased = true;
  }
  return cased;
}

std::u32string lower(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    const char32_t c = s[i];
    if (c == 0x130) {
      out.push_back(U'i');
      out.push_back(0x307);
    } else if (c == 0x3A3) {
      out.push_back(final_sigma(s, i) ? 0x3C2 : 0x3C3);
    } else {
      out.push_back(lower_simple(c));
    }
  }
  return out;
}

std::u32string_view strip(std::u32string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::vector<std::u32string_view> split_ws(std::u32string_view s) {
  std::vector<std::u32string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    const size_t b = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

// ---- formatting ----

std::string repr(std::string_view utf8) {
  const std::u32string s = decode(utf8);
  const bool has_single = s.find(U'\'') != std::u32string::npos;
  const bool has_double = s.find(U'"') != std::u32string::npos;
  const char32_t quote = (has_single && !has_double) ? U'"' : U'\'';
  std::string out;
  out.push_back(static_cast<char>(quote));
  char buf[16];
  for (char32_t c : s) {
    if (c == quote || c == U'\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == U'\t') {
      out += "\\t";
    } else if (c == U'\n') {
      out += "\\n";
    } else if (c == U'\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7F) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c < 0x7F || is_printable(c)) {
      append_utf8(out, c);
    } else if (c <= 0xFF) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c <= 0xFFFF) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out.push_back(static_cast<char>(quote));
  return out;
}

std::string float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return json::python_float_repr(v);
}

std::string repr(const json::Value& v) {
  switch (v.kind()) {
    case json::Kind::kNull:
      return "None";
    case json::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case json::Kind::kNumber:
      return v.is_integer() ? v.as_string() : float_repr(v.as_double());
    case json::Kind::kString:
      return repr(std::string_view(v.as_string()));
    case json::Kind::kArray: {
      std::string out = "[";
      for (size_t i = 0; i < v.items().size(); ++i) {
        if (i) out += ", ";
        out += repr(v.items()[i]);
      }
      return out + "]";
    }
    case json::Kind::kObject: {
      std::string out = "{";
      for (size_t i = 0; i < v.members().size(); ++i) {
        if (i) out += ", ";
        out += repr(std::string_view(v.members()[i].key));
        out += ": ";
        out += repr(v.members()[i].value);
      }
      return out + "}";
    }
  }
  return "None";
}

std::string str(const json::Value& v) {
  return v.is_string() ? v.as_string() : repr(v);
}

const char* type_name(const json::Value& v) {
  switch (v.kind()) {
    case json::Kind::kNull:
      return "NoneType";
    case json::Kind::kBool:
      return "bool";
    case json::Kind::kNumber:
      return v.is_integer() ? "int" : "float";
    case json::Kind::kString:
      return "str";
    case json::Kind::kArray:
      return "list";
    case json::Kind::kObject:
      return "dict";
  }
  return "object";
}

std::string format_fixed(double x, int ndigits) {
  if (!std::isfinite(x)) return float_repr(x);
  // std::to_chars with a precision is exact: the binary value rounded half-to-even (Ryu printf),
  // which is what CPython's dtoa mode 3 does for round() and '%.Nf'.
  char buf[400];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::fixed, ndigits);
  if (ec != std::errc()) return float_repr(x);
  return std::string(buf, end);
}

double round(double x, int ndigits) {
  if (!std::isfinite(x) || x == 0.0) return x;
  const std::string s = format_fixed(x, ndigits);
  double r = 0.0;
  std::from_chars(s.data(), s.data() + s.size(), r);
  // CPython keeps the sign of a result that rounds to zero (round(-0.00001, 4) == -0.0).
  return std::copysign(r, x);
}

double round_int(double x) {
  if (!std::isfinite(x)) return x;
  const double r = std::floor(x);
  const double diff = x - r;
  if (diff > 0.5) return r + 1.0;
  if (diff < 0.5) return r;
  return std::fmod(r, 2.0) == 0.0 ? r : r + 1.0;
}

}  // namespace laya::py
