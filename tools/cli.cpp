#include "tools/cli.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <utility>

namespace laya::tools {

bool parse_integer(std::string_view text, int64_t lo, int64_t hi, const std::string& what,
                   int64_t* out, std::string* err) {
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative || (!text.empty() && text[0] == '+')) i = 1;
  bool ok = i < text.size();
  int64_t v = 0;
  for (; ok && i < text.size(); ++i) {
    const char c = text[i];
    const int digit = c - '0';
    ok = c >= '0' && c <= '9' && !__builtin_mul_overflow(v, 10, &v) &&
         !(negative ? __builtin_sub_overflow(v, digit, &v) : __builtin_add_overflow(v, digit, &v));
  }
  if (ok && v >= lo && v <= hi) {
    *out = v;
    return true;
  }
  *err = what + " must be an integer " +
         (hi == INT64_MAX ? ">= " + std::to_string(lo)
                          : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]") +
         ", got '" + std::string(text) + "'";
  return false;
}

namespace {

// Shortest text that reads back as `v` ("0.5", "1", "100").
std::string number_text(double v) {
  char buf[32];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

}  // namespace

bool parse_number(std::string_view text, double lo, double hi, bool lo_open,
                  const std::string& what, double* out, std::string* err) {
  // Decimal digits, sign, point and exponent only: from_chars alone would take "inf" and "nan".
  const bool plain =
      !text.empty() && text.find_first_not_of("0123456789+-.eE") == std::string_view::npos;
  double v = 0;
  const char* end = text.data() + text.size();
  std::from_chars_result r{};
  if (plain) r = std::from_chars(text.data(), end, v, std::chars_format::general);
  if (plain && r.ec == std::errc() && r.ptr == end && std::isfinite(v) &&
      (lo_open ? v > lo : v >= lo) && v <= hi) {
    *out = v;
    return true;
  }
  *err = what + " must be a number in " + (lo_open ? "(" : "[") + number_text(lo) + ", " +
         number_text(hi) + "], got '" + std::string(text) + "'";
  return false;
}

bool split_assignment(const std::string& text, std::string* name, std::string* value) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  *name = text.substr(0, eq);
  *value = text.substr(eq + 1);
  return true;
}

bool split_list(const std::string& text, const std::string& what, std::vector<std::string>* out,
                std::string* err) {
  out->clear();
  size_t at = 0;
  for (;;) {
    const size_t c = text.find(',', at);
    std::string item = text.substr(at, c == std::string::npos ? std::string::npos : c - at);
    if (item.empty()) {
      *err = what + " wants a comma-separated list of names, got '" + text + "'";
      return false;
    }
    if (std::find(out->begin(), out->end(), item) != out->end()) {
      *err = what + " lists '" + item + "' twice";
      return false;
    }
    out->push_back(std::move(item));
    if (c == std::string::npos) return true;
    at = c + 1;
  }
}

void ArgParser::flag(const std::string& name, bool* out) {
  options_.push_back({name, Kind::kFlag, out});
}
void ArgParser::integer(const std::string& name, int64_t lo, int64_t hi, int64_t* out) {
  options_.push_back({name, Kind::kInteger, out, lo, hi});
}
void ArgParser::number(const std::string& name, double lo, double hi, double* out, bool lo_open) {
  Option o{name, Kind::kNumber, out};
  o.lo_real = lo;
  o.hi_real = hi;
  o.lo_open = lo_open;
  options_.push_back(std::move(o));
}
void ArgParser::text(const std::string& name, std::string* out) {
  options_.push_back({name, Kind::kText, out});
}
void ArgParser::choice(const std::string& name, std::vector<std::string> choices,
                       std::string* out) {
  options_.push_back({name, Kind::kChoice, out, 0, 0, std::move(choices)});
}
void ArgParser::repeated(const std::string& name, std::vector<std::string>* out) {
  options_.push_back({name, Kind::kRepeated, out});
}

bool ArgParser::fail(std::string message) {
  error_ = std::move(message);
  return false;
}

bool ArgParser::parse(int argc, const char* const* argv, int first,
                      std::vector<std::string>* positional) {
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (arg.rfind("--", 0) != 0) {
      positional->push_back(arg);
      continue;
    }
    std::string name = arg.substr(2), value;
    const size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    auto it = std::find_if(options_.begin(), options_.end(),
                           [&](const Option& o) { return o.name == name; });
    if (it == options_.end()) return fail("unknown option --" + name);
    Option& o = *it;
    const std::string opt = "--" + name;
    if (o.seen && o.kind != Kind::kRepeated && o.kind != Kind::kFlag)
      return fail(opt + " is given twice");
    o.seen = true;
    if (o.kind == Kind::kFlag) {
      if (inline_value) return fail(opt + " takes no value");
      *static_cast<bool*>(o.out) = true;
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= argc) return fail(opt + " needs a value");
      value = argv[++i];
    }
    switch (o.kind) {
      case Kind::kInteger: {
        std::string err;
        if (!parse_integer(value, o.lo, o.hi, opt, static_cast<int64_t*>(o.out), &err))
          return fail(err);
        break;
      }
      case Kind::kNumber: {
        std::string err;
        if (!parse_number(value, o.lo_real, o.hi_real, o.lo_open, opt, static_cast<double*>(o.out),
                          &err))
          return fail(err);
        break;
      }
      case Kind::kText:
        if (value.empty()) return fail(opt + " needs a non-empty value");
        *static_cast<std::string*>(o.out) = value;
        break;
      case Kind::kChoice: {
        if (std::find(o.choices.begin(), o.choices.end(), value) == o.choices.end()) {
          std::string known;
          for (const std::string& c : o.choices) known += (known.empty() ? "" : ", ") + c;
          return fail(opt + " " + value + " is not one of: " + known);
        }
        *static_cast<std::string*>(o.out) = value;
        break;
      }
      case Kind::kRepeated:
        static_cast<std::vector<std::string>*>(o.out)->push_back(value);
        break;
      case Kind::kFlag:
        break;
    }
  }
  return true;
}

}  // namespace laya::tools
