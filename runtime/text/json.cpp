#include "runtime/text/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

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

// Builds Values from nlohmann's SAX events. Objects get a key index once they grow past a few
// members, so repeated keys resolve in O(1) (tokenizer vocabularies have 50k+ keys).
class Builder {
 public:
  using number_integer_t = nlohmann::json::number_integer_t;
  using number_unsigned_t = nlohmann::json::number_unsigned_t;
  using number_float_t = nlohmann::json::number_float_t;
  using string_t = nlohmann::json::string_t;
  using binary_t = nlohmann::json::binary_t;

  explicit Builder(int max_depth) : max_depth_(max_depth) {}

  bool null() { return add(Value()); }
  bool boolean(bool b) { return add(Value::boolean(b)); }
  bool number_integer(number_integer_t i) { return add(Value::integer(i)); }
  bool number_unsigned(number_unsigned_t u) {
    Value v;
    v.kind_ = Kind::kNumber;
    v.integer_ = true;
    v.double_ = static_cast<double>(u);
    v.text_ = std::to_string(u);
    return add(std::move(v));
  }
  bool number_float(number_float_t d, const string_t& raw) {
    // An integer literal too large for 64 bits arrives here too: Python keeps it exact.
    if (raw.find_first_of(".eE") == string_t::npos) {
      Value v;
      v.kind_ = Kind::kNumber;
      v.integer_ = true;
      v.double_ = d;
      size_t i = raw[0] == '-' ? 1 : 0;
      v.text_ = raw;
      // "-0...0" is int 0 in Python; leading zeros are not valid JSON, so only all-zero "-0".
      if (raw.find_first_not_of('0', i) == string_t::npos) v.text_ = "0";
      return add(std::move(v));
    }
    return add(Value::number(d));
  }
  bool string(string_t& s) { return add(Value::string(std::move(s))); }
  bool binary(binary_t&) {
    error_ = "binary values are not JSON";
    return false;
  }
  bool start_object(std::size_t) { return open(Value::object()); }
  bool key(string_t& k) {
    Frame& f = stack_.back();
    f.key = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(Value::array()); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) {
    error_ = ex.what();
    return false;
  }

  Value take() { return std::move(root_); }
  const std::string& error() const { return error_; }

 private:
  struct Frame {
    Value value;
    std::string key;                                // objects: the key of the next value
    std::unordered_map<std::string, size_t> index;  // objects with many members
  };
  static constexpr size_t kIndexFrom = 16;

  bool open(Value v) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      error_ = "nesting deeper than " + std::to_string(max_depth_) + " levels";
      return false;
    }
    stack_.push_back({std::move(v), {}, {}});
    return true;
  }
  bool close() {
    Value v = std::move(stack_.back().value);
    stack_.pop_back();
    return add(std::move(v));
  }
  bool add(Value v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return true;
    }
    Frame& f = stack_.back();
    if (f.value.kind_ == Kind::kArray) {
      f.value.items_.push_back(std::move(v));
      return true;
    }
    std::vector<Member>& m = f.value.members_;
    if (m.size() < kIndexFrom) {
      for (Member& old : m)
        if (old.key == f.key) {
          old.value = std::move(v);
          return true;
        }
    } else {
      if (f.index.empty())
        for (size_t i = 0; i < m.size(); ++i) f.index.emplace(m[i].key, i);
      auto it = f.index.find(f.key);
      if (it != f.index.end()) {
        m[it->second].value = std::move(v);
        return true;
      }
      f.index.emplace(f.key, m.size());
    }
    m.push_back({std::move(f.key), std::move(v)});
    return true;
  }

  int max_depth_;
  std::vector<Frame> stack_;
  Value root_;
  std::string error_;
};

namespace {

// nlohmann's messages read "[json.exception.parse_error.101] parse error at line 1, column 5:
// syntax error while parsing value - ..."; keep the part after the exception tag.
std::string clean_message(const std::string& m) {
  const size_t tag = m.find("] ");
  return tag == std::string::npos ? m : m.substr(tag + 2);
}

}  // namespace

Result<Value> parse(std::string_view text, const ParseOptions& opts, std::string_view what_for) {
  const std::string prefix(what_for);
  if (text.size() > opts.max_bytes)
    return status_error(StatusCode::kInvalidArgument, "%s: %zu bytes is over the limit of %llu",
                        prefix.c_str(), text.size(),
                        static_cast<unsigned long long>(opts.max_bytes));
  Builder b(opts.max_depth);
  const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &b,
                                            nlohmann::json::input_format_t::json, true, false);
  if (!ok) {
    const std::string msg = b.error().empty() ? "malformed JSON" : clean_message(b.error());
    return Status(StatusCode::kInvalidArgument, prefix + ": " + msg);
  }
  return b.take();
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
