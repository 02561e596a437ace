// Test helpers for runtime/decisions/grammar: random schemas of the supported subset, random valid
// instances of a parsed schema, and byte-level mutations of texts (seeded, reproducible).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/decisions/grammar/decimal.h"
#include "runtime/decisions/grammar/schema.h"
#include "runtime/text/json.h"
#include "tests/runtime/grammar_util.h"

namespace laya::testing {

using grammar::Decimal;
using grammar::decimal_of;
using grammar::decimal_scaled_abs;
using grammar::NodeKind;
using grammar::Property;
using grammar::Schema;
using grammar::schema_validate;
using grammar::SchemaNode;
using json::Value;

class Random {
 public:
  explicit Random(uint64_t seed) : rng_(seed) {}
  int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(range(0, static_cast<int>(v.size()) - 1))];
  }

  // A schema of the supported subset, small enough to build quickly.
  Value schema(int depth) {
    const int kind = range(depth >= 2 ? 2 : 0, 7);
    Value s = Value::object();
    auto type = [&](const char* t) {
      if (kind >= 2 && kind <= 5 && chance(0.15)) {
        Value list = Value::array();
        list.push(Value::string(t));
        list.push(Value::string("null"));
        s.set("type", std::move(list));
      } else {
        s.set("type", Value::string(t));
      }
    };
    switch (kind) {
      case 0: {  // object
        s.set("type", Value::string("object"));
        Value props = Value::object(), req = Value::array();
        std::vector<std::string> names = {"a", "mode", "x y", "\xC3\xA9t\xC3\xA9", "q\"t", "n1"};
        std::shuffle(names.begin(), names.end(), rng_);
        const int n = range(0, 3);
        for (int i = 0; i < n; ++i) {
          props.set(names[static_cast<size_t>(i)], schema(depth + 1));
          if (chance(0.6)) req.push(Value::string(names[static_cast<size_t>(i)]));
        }
        s.set("properties", std::move(props));
        if (!req.items().empty()) s.set("required", std::move(req));
        break;
      }
      case 1: {  // array
        s.set("type", Value::string("array"));
        s.set("items", schema(depth + 1));
        const int mn = range(0, 2);
        if (chance(0.5)) s.set("minItems", Value::integer(mn));
        if (chance(0.7)) s.set("maxItems", Value::integer(mn + range(0, 2)));
        break;
      }
      case 2: {  // string
        type("string");
        const int mn = range(0, 3);
        if (chance(0.5)) s.set("minLength", Value::integer(mn));
        if (chance(0.7)) s.set("maxLength", Value::integer(mn + range(0, 6)));
        break;
      }
      case 3:
      case 4: {  // integer / number
        const bool integer = kind == 3;
        type(integer ? "integer" : "number");
        auto bound = [&]() {
          const int v = range(-300, 300);
          const int frac = integer ? (chance(0.2) ? 5 : 0) : range(0, 3);
          return parse_json(frac == 0
                                ? std::to_string(v)
                                : std::to_string(v) + "." + std::to_string(frac * 111 % 1000));
        };
        Value lo = bound(), hi = bound();
        if (lo.as_double() > hi.as_double()) std::swap(lo, hi);
        if (chance(0.8)) s.set(chance(0.3) ? "exclusiveMinimum" : "minimum", lo);
        if (chance(0.8)) s.set(chance(0.3) ? "exclusiveMaximum" : "maximum", hi);
        break;
      }
      case 5:
        type("boolean");
        break;
      case 6: {  // enum
        std::vector<Value> pool = {
            Value::string("heat"),   Value::string("he"),  Value::string("cool"),
            Value::string("a\"b"),   Value::integer(1),    Value::integer(10),
            parse_json("2.5"),       Value::boolean(true), Value(),
            parse_json("[1, \"x\"]")};
        std::shuffle(pool.begin(), pool.end(), rng_);
        Value e = Value::array();
        const int n = range(1, 4);
        for (int i = 0; i < n; ++i) e.push(pool[static_cast<size_t>(i)]);
        if (n == 1 && chance(0.5))
          s.set("const", e.items()[0]);
        else
          s.set("enum", std::move(e));
        break;
      }
      default:
        s.set("type", Value::string("null"));
        break;
    }
    return s;
  }

  // A valid instance of node `i` (numbers with at most `frac` fraction digits), or nullopt when
  // the candidates tried all fail (e.g. a number range that only holds long fractions).
  std::optional<Value> instance(const Schema& s, int32_t i, int frac) {
    const SchemaNode& n = s.nodes[static_cast<size_t>(i)];
    if (n.nullable && chance(0.2)) return Value();
    switch (n.kind) {
      case NodeKind::kNull:
        return Value();
      case NodeKind::kBoolean:
        return Value::boolean(chance(0.5));
      case NodeKind::kEnum:
        return pick(n.values);
      case NodeKind::kString: {
        static const std::vector<std::string> chars = {"a",
                                                       "Z",
                                                       " ",
                                                       "\"",
                                                       "\\",
                                                       "\n",
                                                       "\t",
                                                       "\x01",
                                                       "\x1f",
                                                       "\x7f",
                                                       "/",
                                                       "\xC3\xA9",
                                                       "\xE6\x97\xA5",
                                                       "\xF0\x9F\x98\x80",
                                                       "\xEF\xBF\xBF",
                                                       "0"};
        const int64_t hi = n.max_length >= 0 ? n.max_length : n.min_length + 6;
        const int len = range(static_cast<int>(n.min_length), static_cast<int>(hi));
        std::string t;
        for (int k = 0; k < len; ++k) t += pick(chars);
        return Value::string(t);
      }
      case NodeKind::kInteger:
      case NodeKind::kNumber: {
        // Candidates around the bounds and inside, at a random scale.
        for (int attempt = 0; attempt < 40; ++attempt) {
          const int f = n.kind == NodeKind::kInteger ? 0 : range(0, frac);
          long long scale = 1;
          for (int k = 0; k < f; ++k) scale *= 10;
          std::string base;
          const Decimal& b = chance(0.5) ? n.minimum : n.maximum;
          long long d = 0;
          if (decimal_scaled_abs(b, f, false, 12, &base)) {
            d = std::stoll(base) * (b.negative ? -1 : 1) + range(-3, 3);
          } else {
            d = range(-500, 500) * scale / 7;
          }
          if (chance(0.3)) d = range(-400, 400) * scale;
          std::string t = std::to_string(d < 0 ? -d : d);
          if (f > 0) {
            if (t.size() <= static_cast<size_t>(f))
              t.insert(0, static_cast<size_t>(f) + 1 - t.size(), '0');
            t.insert(t.size() - static_cast<size_t>(f), ".");
          }
          if (d < 0) t.insert(0, "-");
          Value v = parse_json(t);
          Schema probe;
          probe.nodes = s.nodes;
          probe.root = i;
          if (schema_validate(probe, v).is_ok() && decimal_of(v).value().fraction_digits() <= frac)
            return v;
        }
        return std::nullopt;
      }
      case NodeKind::kArray: {
        const int64_t hi = n.max_items >= 0 ? n.max_items : n.min_items + 3;
        const int count = range(static_cast<int>(n.min_items), static_cast<int>(hi));
        Value a = Value::array();
        for (int k = 0; k < count; ++k) {
          std::optional<Value> item = instance(s, n.items, frac);
          if (!item) return std::nullopt;
          a.push(std::move(*item));
        }
        return a;
      }
      case NodeKind::kObject: {
        Value o = Value::object();
        std::vector<Property> props = n.properties;
        if (chance(0.3)) std::shuffle(props.begin(), props.end(), rng_);  // order must not matter
        for (const Property& p : props) {
          if (!p.required && chance(0.4)) continue;
          std::optional<Value> v = instance(s, p.node, frac);
          if (!v) return std::nullopt;
          o.set(p.name, std::move(*v));
        }
        return o;
      }
    }
    return std::nullopt;
  }

  // A byte-level mutation of a text.
  std::string mutate(std::string t) {
    static const std::string alphabet = "0123456789-.,:{}[]\" \\nuetrfalsx\n\xC3\xA9\x80";
    const int op = range(0, 3);
    const size_t at = t.empty() ? 0 : static_cast<size_t>(range(0, static_cast<int>(t.size()) - 1));
    const char c = alphabet[static_cast<size_t>(range(0, static_cast<int>(alphabet.size()) - 1))];
    if (op == 0 && !t.empty()) t[at] = c;
    if (op == 1 && !t.empty()) t.erase(at, 1);
    if (op == 2) t.insert(at, 1, c);
    if (op == 3 && !t.empty()) t.insert(at, t.substr(at, static_cast<size_t>(range(1, 4))));
    return t;
  }

  std::mt19937_64& engine() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

}  // namespace laya::testing
