#include "runtime/text/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>

namespace laya::json {

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "bool";
    case Kind::kNumber:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kArray:
      return "array";
    case Kind::kObject:
      return "object";
  }
  return "?";
}

// ---- Value ------------------------------------------------------------------------------------

Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::kNumber;
  v.integer_ = true;
  v.double_ = static_cast<double>(i);
  v.text_ = std::to_string(i);
  return v;
}

Value Value::number(double d) {
  Value v;
  v.kind_ = Kind::kNumber;
  v.double_ = d;
  v.text_ = python_float_repr(d);
  return v;
}

Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.text_ = std::move(s);
  return v;
}

Value Value::array() {
  return array(std::vector<Value>());
}

Value Value::array(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kArray;
  v.items_ = std::move(items);
  return v;
}

Value Value::object() {
  Value v;
  v.kind_ = Kind::kObject;
  return v;
}

std::optional<int64_t> Value::as_int64() const {
  if (!is_integer()) return std::nullopt;
  int64_t out = 0;
  const char* b = text_.data();
  const char* e = b + text_.size();
  auto [p, ec] = std::from_chars(b, e, out);
  if (ec != std::errc() || p != e) return std::nullopt;
  return out;
}

double Value::as_double() const {
  return kind_ == Kind::kNumber ? double_ : 0.0;
}

const Value* Value::find(std::string_view key) const {
  if (kind_ != Kind::kObject) return nullptr;
  for (const Member& m : members_)
    if (m.key == key) return &m.value;
  return nullptr;
}

Value* Value::find(std::string_view key) {
  return const_cast<Value*>(static_cast<const Value*>(this)->find(key));
}

void Value::push(Value v) {
  if (kind_ == Kind::kArray) items_.push_back(std::move(v));
}

Value& Value::set(std::string key, Value v) {
  if (kind_ != Kind::kObject) return *this;
  if (Value* old = find(key)) {
    *old = std::move(v);
    return *old;
  }
  members_.push_back({std::move(key), std::move(v)});
  return members_.back().value;
}

bool Value::operator==(const Value& o) const {
  if (kind_ != o.kind_) return false;
  switch (kind_) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
      return bool_ == o.bool_;
    case Kind::kNumber:
      return integer_ == o.integer_ && text_ == o.text_;
    case Kind::kString:
      return text_ == o.text_;
    case Kind::kArray:
      return items_ == o.items_;
    case Kind::kObject:
      return members_ == o.members_;
  }
  return false;
}

// ---- parsing ----------------------------------------------------------------------------------

// A recursive-descent reader of one JSON document with Python's json.loads semantics (see json.h):
// errors read as Python's ("Expecting value: line 1 column 5 (char 4)"; columns and char offsets
// count characters). Objects get a key index once they grow past a few members, so repeated keys
// resolve in O(1) (tokenizer vocabularies have 50k+ keys).
class Builder {
 public:
  Builder(std::string_view text, int max_depth) : t_(text), max_depth_(max_depth) {}

  bool run(Value* out) {
    skip_ws();
    if (!value(out, 0)) return false;
    skip_ws();
    if (i_ != t_.size()) return fail("Extra data", i_);
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  static constexpr size_t kIndexFrom = 16;

  // "<what>: line L column C (char P)" at byte offset `at`.
  bool fail(const char* what, size_t at) {
    size_t line = 1, col = 1, chars = 0;
    for (size_t k = 0; k < at && k < t_.size(); ++k) {
      const auto c = static_cast<unsigned char>(t_[k]);
      if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte: not a new character
      ++chars;
      if (c == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s: line %zu column %zu (char %zu)", what, line, col, chars);
    error_ = buf;
    return false;
  }

  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r'))
      ++i_;
  }

  bool literal(std::string_view word) {
    if (t_.substr(i_, word.size()) != word) return false;
    i_ += word.size();
    return true;
  }

  bool value(Value* out, int depth) {
    if (i_ >= t_.size()) return fail("Expecting value", i_);
    const char c = t_[i_];
    switch (c) {
      case '{':
        return object(out, depth);
      case '[':
        return array(out, depth);
      case '"': {
        std::string s;
        if (!string(&s)) return false;
        *out = Value::string(std::move(s));
        return true;
      }
      case 't':
        if (!literal("true")) return fail("Expecting value", i_);
        *out = Value::boolean(true);
        return true;
      case 'f':
        if (!literal("false")) return fail("Expecting value", i_);
        *out = Value::boolean(false);
        return true;
      case 'n':
        if (!literal("null")) return fail("Expecting value", i_);
        *out = Value();
        return true;
      case 'N':
      case 'I':
        return fail("NaN and Infinity are not JSON (refused here, unlike Python)", i_);
      default:
        if (c == '-' || (c >= '0' && c <= '9')) return number(out);
        return fail("Expecting value", i_);
    }
  }

  // Python's NUMBER_RE: -?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?
  bool number(Value* out) {
    const size_t start = i_;
    if (t_[i_] == '-') ++i_;
    if (i_ >= t_.size() || t_[i_] < '0' || t_[i_] > '9') {
      if (t_.substr(i_, 8) == "Infinity")
        return fail("NaN and Infinity are not JSON (refused here, unlike Python)", start);
      return fail("Expecting value", start);
    }
    if (t_[i_] == '0') {
      ++i_;
    } else {
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
    }
    bool is_float = false;
    if (i_ + 1 < t_.size() && t_[i_] == '.' && t_[i_ + 1] >= '0' && t_[i_ + 1] <= '9') {
      is_float = true;
      i_ += 2;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      size_t j = i_ + 1;
      if (j < t_.size() && (t_[j] == '+' || t_[j] == '-')) ++j;
      if (j < t_.size() && t_[j] >= '0' && t_[j] <= '9') {
        is_float = true;
        i_ = j;
        while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      }
    }
    const std::string_view raw = t_.substr(start, i_ - start);
    double d = 0;
    auto [p, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), d);
    (void)p;
    if (is_float) {
      if (ec == std::errc::result_out_of_range) {
        // from_chars leaves d as it was: tell an overflow (refused) from an underflow (0, as
        // Python reads it) by the magnitude: digits before the point plus the exponent.
        int64_t magnitude = 0;
        size_t k = raw[0] == '-' ? 1 : 0;
        while (k < raw.size() && raw[k] == '0') ++k;
        while (k < raw.size() && raw[k] >= '0' && raw[k] <= '9') ++magnitude, ++k;
        const size_t e = raw.find_first_of("eE");
        if (e != std::string_view::npos) {
          // The exponent saturates: its digits may be any number long ("1e0000…9223372036854775807",
          // "1e-99999999999999999999"); 10^9 already decides the sign of the magnitude.
          size_t q = e + 1;
          const bool negative = raw[q] == '-';
          if (raw[q] == '+' || raw[q] == '-') ++q;
          int64_t exp = 0;
          for (; q < raw.size(); ++q)
            exp = std::min<int64_t>(exp * 10 + (raw[q] - '0'), 1000000000);
          magnitude += negative ? -exp : exp;
        }
        if (magnitude > 0)
          return fail("a number too large for a double (Python reads it as inf; refused here)",
                      start);
        d = raw[0] == '-' ? -0.0 : 0.0;
      }
      *out = Value::number(d);
      return true;
    }
    // An integer of any size keeps its digits (Python ints are exact); -0 is 0.
    Value v;
    v.kind_ = Kind::kNumber;
    v.integer_ = true;
    v.double_ = d;
    v.text_ = raw.find_first_not_of("-0") == std::string_view::npos ? "0" : std::string(raw);
    *out = std::move(v);
    return true;
  }

  static void append_utf8(std::string* s, uint32_t cp) {
    if (cp < 0x80) {
      s->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // The length of the valid UTF-8 sequence at t_[at] (0: invalid).
  size_t utf8_at(size_t at) const {
    const auto c = static_cast<unsigned char>(t_[at]);
    // Leads: C2..DF (2 bytes), E0..EF (3), F0..F4 (4); C0, C1 and F5..FF never start one.
    size_t n = c >= 0xF5 ? 0 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || at + n > t_.size()) return 0;
    const auto c1 = static_cast<unsigned char>(t_[at + 1]);
    if ((c1 & 0xC0) != 0x80) return 0;
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) ||
        (c == 0xF4 && c1 > 0x8F))
      return 0;  // overlong, surrogate, or past U+10FFFF
    for (size_t k = 2; k < n; ++k)
      if ((static_cast<unsigned char>(t_[at + k]) & 0xC0) != 0x80) return 0;
    return n;
  }

  bool hex4(size_t at, uint32_t* v) const {
    if (at + 4 > t_.size()) return false;
    *v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = t_[at + k];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return false;
      *v = *v * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  bool string(std::string* out) {
    const size_t start = i_++;  // the opening quote
    while (true) {
      const size_t run = i_;
      while (i_ < t_.size() && t_[i_] != '"' && t_[i_] != '\\' &&
             static_cast<unsigned char>(t_[i_]) >= 0x20 &&
             static_cast<unsigned char>(t_[i_]) < 0x80)
        ++i_;
      out->append(t_.data() + run, i_ - run);
      if (i_ >= t_.size()) return fail("Unterminated string starting at", start);
      const auto c = static_cast<unsigned char>(t_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return fail("Invalid control character at", i_);
      if (c >= 0x80) {
        const size_t n = utf8_at(i_);
        if (n == 0) return fail("Invalid UTF-8 in a string at", i_);
        out->append(t_.data() + i_, n);
        i_ += n;
        continue;
      }
      // A backslash.
      if (i_ + 1 >= t_.size()) return fail("Unterminated string starting at", start);
      const char e = t_[i_ + 1];
      const char* simple = nullptr;
      switch (e) {
        case '"':
          simple = "\"";
          break;
        case '\\':
          simple = "\\";
          break;
        case '/':
          simple = "/";
          break;
        case 'b':
          simple = "\b";
          break;
        case 'f':
          simple = "\f";
          break;
        case 'n':
          simple = "\n";
          break;
        case 'r':
          simple = "\r";
          break;
        case 't':
          simple = "\t";
          break;
        default:
          break;
      }
      if (simple != nullptr) {
        out->append(simple);
        i_ += 2;
        continue;
      }
      if (e != 'u') return fail("Invalid \\escape", i_);
      uint32_t cp = 0;
      if (!hex4(i_ + 2, &cp)) return fail("Invalid \\uXXXX escape", i_ + 1);
      i_ += 6;
      if (cp >= 0xD800 && cp < 0xDC00) {
        uint32_t lo = 0;
        if (i_ + 1 < t_.size() && t_[i_] == '\\' && t_[i_ + 1] == 'u' && hex4(i_ + 2, &lo) &&
            lo >= 0xDC00 && lo < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          i_ += 6;
        } else {
          return fail("a lone surrogate escape (Python keeps it; refused here: not UTF-8)", i_ - 6);
        }
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        return fail("a lone surrogate escape (Python keeps it; refused here: not UTF-8)", i_ - 6);
      }
      append_utf8(out, cp);
    }
  }

  bool deeper(int depth) {
    if (depth >= max_depth_) {
      char buf[80];
      std::snprintf(buf, sizeof buf, "nesting deeper than %d levels", max_depth_);
      return fail(buf, i_);
    }
    return true;
  }

  bool array(Value* out, int depth) {
    if (!deeper(depth)) return false;
    *out = Value::array();
    ++i_;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == ']') {
      ++i_;
      return true;
    }
    while (true) {
      skip_ws();
      Value v;
      if (!value(&v, depth + 1)) return false;
      out->items_.push_back(std::move(v));
      skip_ws();
      if (i_ < t_.size() && t_[i_] == ']') {
        ++i_;
        return true;
      }
      if (i_ >= t_.size() || t_[i_] != ',') return fail("Expecting ',' delimiter", i_);
      ++i_;
      skip_ws();
      if (i_ < t_.size() && t_[i_] == ']')
        return fail("Illegal trailing comma before end of array", i_);
    }
  }

  bool object(Value* out, int depth) {
    if (!deeper(depth)) return false;
    *out = Value::object();
    std::vector<Member>& m = out->members_;
    std::unordered_map<std::string, size_t> index;  // past kIndexFrom members
    ++i_;
    skip_ws();
    if (i_ < t_.size() && t_[i_] == '}') {
      ++i_;
      return true;
    }
    while (true) {
      skip_ws();
      if (i_ >= t_.size() || t_[i_] != '"')
        return fail("Expecting property name enclosed in double quotes", i_);
      std::string key;
      if (!string(&key)) return false;
      skip_ws();
      if (i_ >= t_.size() || t_[i_] != ':') return fail("Expecting ':' delimiter", i_);
      ++i_;
      skip_ws();
      Value v;
      if (!value(&v, depth + 1)) return false;
      // A repeated key keeps its first position and takes the last value (a Python dict).
      bool replaced = false;
      if (m.size() < kIndexFrom) {
        for (Member& old : m)
          if (old.key == key) {
            old.value = std::move(v);
            replaced = true;
            break;
          }
      } else {
        if (index.empty())
          for (size_t k = 0; k < m.size(); ++k) index.emplace(m[k].key, k);
        auto it = index.find(key);
        if (it != index.end()) {
          m[it->second].value = std::move(v);
          replaced = true;
        } else {
          index.emplace(key, m.size());
        }
      }
      if (!replaced) m.push_back({std::move(key), std::move(v)});
      skip_ws();
      if (i_ < t_.size() && t_[i_] == '}') {
        ++i_;
        return true;
      }
      if (i_ >= t_.size() || t_[i_] != ',') return fail("Expecting ',' delimiter", i_);
      ++i_;
      skip_ws();
      if (i_ < t_.size() && t_[i_] == '}')
        return fail("Illegal trailing comma before end of object", i_);
    }
  }

  std::string_view t_;
  size_t i_ = 0;
  int max_depth_;
  std::string error_;
};

uint64_t parse_cost(std::string_view text) {
  // Values: at most one per comma, bracket and scalar start; members: at most one per colon.
  uint64_t values = 1, members = 0;
  bool in_string = false, escape = false;
  for (const char c : text) {
    if (in_string) {
      if (escape)
        escape = false;
      else if (c == '\\')
        escape = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case ',':
      case '[':
      case '{':
        ++values;
        break;
      case ':':
        ++members;
        break;
      default:
        break;
    }
  }
  // Each Value or Member may sit in a list that grew by doubling (the old blocks stay below the
  // new one until the list dies: twice its final size), each block behind an arena header (32
  // bytes); a string's bytes are copied once (escapes only shrink them), a key's twice (the
  // member and an index of a large object).
  constexpr uint64_t kHeader = 32;
  return 2 * values * (sizeof(Value) + kHeader) + 3 * members * (sizeof(Member) + kHeader) +
         2 * (text.size() + kHeader * values);
}

Result<Value> parse(std::string_view text, const ParseOptions& opts, std::string_view what_for) {
  if (text.size() > opts.max_bytes)
    return status_error(StatusCode::kInvalidArgument, "%.*s: %zu bytes is over the limit of %llu",
                        static_cast<int>(what_for.size()), what_for.data(), text.size(),
                        static_cast<unsigned long long>(opts.max_bytes));
  Builder b(text, opts.max_depth);
  Value v;
  if (!b.run(&v))
    return status_error(StatusCode::kInvalidArgument, "%.*s: %s", static_cast<int>(what_for.size()),
                        what_for.data(), b.error().c_str());
  return v;
}

// ---- dumping ----------------------------------------------------------------------------------

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  // Shortest round-trip digits, then Python's 'r' layout: fixed notation when the decimal
  // exponent lies in [-4, 16), else d.ddde+XX with at least two exponent digits.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  (void)ec;  // 64 bytes always suffice for a double
  std::string_view s(buf, static_cast<size_t>(end - buf));
  const bool neg = s[0] == '-';
  if (neg) s.remove_prefix(1);
  const size_t epos = s.find('e');
  std::string digits;
  for (char c : s.substr(0, epos))
    if (c != '.') digits += c;
  int exp10 = 0;  // value = d.ddd x 10^exp10
  std::from_chars(s.data() + epos + 1 + (s[epos + 1] == '+' ? 1 : 0), s.data() + s.size(), exp10);
  std::string out = neg ? "-" : "";
  const int decpt = exp10 + 1;  // value = 0.ddd x 10^decpt
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits;
      out.append(static_cast<size_t>(decpt) - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    }
    char e[16];
    std::snprintf(e, sizeof e, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += e;
  }
  return out;
}

namespace {

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  static const char kHex[] = "0123456789abcdef";
  auto u4 = [&](uint32_t c) {
    out += "\\u";
    for (int sh = 12; sh >= 0; sh -= 4) out += kHex[(c >> sh) & 0xF];
  };
  out += '"';
  // Runs of characters written as they are go out in one append (states run to 50,000 characters).
  auto plain = [&](unsigned char c) {
    return c >= 0x20 && c != '"' && c != '\\' && (c < 0x80 || !ensure_ascii);
  };
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (plain(c)) {
      size_t j = i + 1;
      while (j < s.size() && plain(static_cast<unsigned char>(s[j]))) ++j;
      out.append(s, i, j - i);
      i = j;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      case '\b':
        out += "\\b";
        ++i;
        continue;
      case '\f':
        out += "\\f";
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      u4(c);
      ++i;
      continue;
    }
    // Non-ASCII with ensure_ascii: decode one UTF-8 sequence (strings are validated when parsed
    // or built by this library).
    uint32_t cp = 0;
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (i + len > s.size()) len = s.size() - i;
    cp = c & (len == 4 ? 0x07 : len == 3 ? 0x0F : 0x1F);
    for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    i += len;
    if (cp >= 0x10000) {
      cp -= 0x10000;
      u4(0xD800 + (cp >> 10));
      u4(0xDC00 + (cp & 0x3FF));
    } else {
      u4(cp);
    }
  }
  out += '"';
}

void dump_value(std::string& out, const Value& v, const DumpOptions& o, std::string_view item_sep,
                int level) {
  auto newline = [&](int lvl) {
    if (o.indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(o.indent) * static_cast<size_t>(lvl), ' ');
  };
  switch (v.kind()) {
    case Kind::kNull:
      out += "null";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Kind::kNumber:
      out += v.as_string();
      return;
    case Kind::kString:
      dump_string(out, v.as_string(), o.ensure_ascii);
      return;
    case Kind::kArray: {
      if (v.items().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const Value& item : v.items()) {
        if (!first) out += item_sep;
        first = false;
        newline(level + 1);
        dump_value(out, item, o, item_sep, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Kind::kObject: {
      if (v.members().empty()) {
        out += "{}";
        return;
      }
      out += '{';
      bool first = true;
      for (const Member& m : v.members()) {
        if (!first) out += item_sep;
        first = false;
        newline(level + 1);
        dump_string(out, m.key, o.ensure_ascii);
        out += o.key_separator;
        dump_value(out, m.value, o, item_sep, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
  }
}

}  // namespace

std::string dump(const Value& v, const DumpOptions& opts) {
  std::string out;
  const std::string_view item_sep =
      !opts.item_separator.empty() ? opts.item_separator : (opts.indent >= 0 ? "," : ", ");
  dump_value(out, v, opts, item_sep, 0);
  return out;
}

}  // namespace laya::json
