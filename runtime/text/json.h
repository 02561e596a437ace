// JSON values with Python's semantics: what `json.loads` reads and `json.dumps` writes.
//
// Laya requests, tokenizer.json files, checkpoint configs and the SDK's answers are JSON, and the
// upstream SDK is Python: a state that is not a string is serialized with
// `json.dumps(x, ensure_ascii=False)` and every byte of that text reaches the tokenizer, and the
// answers are Python floats rounded to 4 decimals. So a Value keeps what Python would keep:
//  - objects keep insertion order; a repeated key keeps its first position and takes its last value
//    (a Python dict built by json.loads);
//  - numbers keep their kind: an integer literal stays an integer of any size (its exact digits),
//    a literal with a fraction or exponent is a double (printed as Python's `repr(float)`);
//  - strings are UTF-8 (validated when parsed).
//
// The parser accepts exactly what Python's json.loads accepts (with its error messages: "Expecting
// ',' delimiter: line 3 column 5 (char 27)"), except NaN / Infinity literals, numbers too large
// for a double, lone UTF-16 surrogate escapes ("\ud800") and invalid UTF-8, which Python takes and
// this parser refuses with a clear error. It allocates only the Values it makes (and nothing but
// through operator new: in a context's call, from its arena, ir/arena.h).
//
// Errors are Status values (kInvalidArgument, naming line and column); nothing here throws or
// aborts. Not for the execute path: values allocate.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace laya::json {

enum class Kind : uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
const char* kind_name(Kind k);  // "null", "bool", "number", "string", "array", "object"

struct Member;

class Value {
 public:
  Value() = default;  // null

  static Value boolean(bool b);
  static Value integer(int64_t v);
  // A double; printed as Python's repr (149.0, 1e-05, 1e+16; NaN / Infinity / -Infinity).
  static Value number(double v);
  static Value string(std::string s);
  static Value array();  // empty (no default argument: Value is incomplete here for clang)
  static Value array(std::vector<Value> items);
  static Value object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  // Preconditions: the matching kind (checked by the caller; a wrong kind returns a neutral value:
  // false, 0, "", an empty list).
  bool as_bool() const { return kind_ == Kind::kBool && bool_; }
  // A number that Python reads as int (no fraction, no exponent): any size.
  bool is_integer() const { return kind_ == Kind::kNumber && integer_; }
  // The integer value when it fits int64 (nullopt for a double or a larger integer).
  std::optional<int64_t> as_int64() const;
  // Integers are converted (rounded to nearest for very large ones).
  double as_double() const;
  // For numbers: the canonical digits of an integer, or the double's Python repr.
  const std::string& as_string() const { return text_; }

  const std::vector<Value>& items() const { return items_; }
  std::vector<Value>& items() { return items_; }
  const std::vector<Member>& members() const { return members_; }
  std::vector<Member>& members() { return members_; }
  // Linear lookup (objects are small; build an index for large ones). nullptr when absent or when
  // this is not an object.
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);

  // Arrays / objects (a wrong kind is a no-op). `set` replaces the value of an existing key in
  // place (Python dict assignment) or appends.
  void push(Value v);
  Value& set(std::string key, Value v);

  bool operator==(const Value& o) const;

 private:
  friend class Builder;
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  bool integer_ = false;
  double double_ = 0.0;  // numbers: the value (integers: converted)
  std::string text_;     // strings: the text; numbers: canonical digits / Python repr
  std::vector<Value> items_;
  std::vector<Member> members_;
};

struct Member {
  std::string key;
  Value value;
  bool operator==(const Member& o) const { return key == o.key && value == o.value; }
};

struct ParseOptions {
  int max_depth = 512;                     // nesting of arrays / objects
  uint64_t max_bytes = uint64_t{1} << 30;  // input size
};

// Parses one JSON document (surrounding whitespace allowed, nothing else after it).
// kInvalidArgument with "line L, column C: <what>" for malformed input, too deep nesting, or a
// too large input; `what_for` (e.g. "tokenizer.json") prefixes the message.
Result<Value> parse(std::string_view text, const ParseOptions& opts = {},
                    std::string_view what_for = "JSON");

// An upper bound of the bytes parse() allocates for `text` (its Values, members, strings and the
// growth of its lists), from one pass over the text's structure: what a caller with a fixed
// arena (runtime/decisions/context.h) checks before it parses.
uint64_t parse_cost(std::string_view text);

// Python's json.dumps(v, ensure_ascii=..., indent=..., separators=...):
//  - item / key separators default to ", " and ": " (with an indent, "," and ": ");
//  - indent < 0: one line; indent >= 0: newlines and that many spaces per level;
//  - ensure_ascii escapes every non-ASCII character as \uXXXX (surrogate pairs above U+FFFF);
//    without it only '"', '\\' and control characters are escaped, as Python does.
struct DumpOptions {
  bool ensure_ascii = false;
  int indent = -1;
  std::string_view item_separator = {};  // empty: Python's default for the indent
  std::string_view key_separator = ": ";
};
std::string dump(const Value& v, const DumpOptions& opts = {});

// Python's repr(float) for a finite double ("149.0", "1e-05", "1e+16", "-0.0", "5e-324"); json.dumps
// spellings "NaN", "Infinity", "-Infinity" otherwise.
std::string python_float_repr(double v);

}  // namespace laya::json
