// A JSON Schema validator for the decoder-decision tests, written from the JSON Schema rules (draft
// 2020-12 validation vocabulary, with draft 4's boolean exclusive bounds) on the raw schema JSON,
// independently of runtime/decisions/grammar: the decisions the library generates (and validated
// itself with grammar::schema_validate) are checked again by code that shares nothing with it.
// Covers the keywords the tests' schemas use: type (a name or a list), enum, const, properties,
// required, additionalProperties (boolean), items, minItems, maxItems, minLength, maxLength (code
// points), minimum, maximum, exclusiveMinimum, exclusiveMaximum. Numbers compare as doubles; the
// tests' bounds are exact in binary or far from the values.
#pragma once

#include <cmath>
#include <string>

#include "runtime/text/json.h"

namespace laya::test {

// "" when `v` is an instance of `schema`, else the first reason it is not (with its path).
inline std::string schema_check(const json::Value& schema, const json::Value& v,
                                const std::string& path = "$") {
  using json::Value;
  auto fail = [&](const std::string& why) {
    return path + ": " + why + " (" + json::dump(v) + ")";
  };
  auto type_ok = [&](const std::string& t) {
    if (t == "null") return v.is_null();
    if (t == "boolean") return v.is_bool();
    if (t == "string") return v.is_string();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    if (t == "number") return v.is_number();
    if (t == "integer")
      return v.is_number() && (v.is_integer() || std::floor(v.as_double()) == v.as_double());
    return false;
  };
  if (const Value* t = schema.find("type")) {
    bool ok = false;
    if (t->is_string()) ok = type_ok(t->as_string());
    for (const Value& x : t->is_array() ? t->items() : std::vector<Value>())
      ok = ok || (x.is_string() && type_ok(x.as_string()));
    if (!ok) return fail("not of type " + json::dump(*t));
  }
  if (const Value* e = schema.find("enum")) {
    bool found = false;
    for (const Value& x : e->items()) found = found || json::dump(x) == json::dump(v);
    if (!found) return fail("not one of the enum");
  }
  if (const Value* c = schema.find("const"); c && json::dump(*c) != json::dump(v))
    return fail("not the const");
  if (v.is_object()) {
    const Value* props = schema.find("properties");
    if (const Value* req = schema.find("required"))
      for (const Value& k : req->items())
        if (!v.find(k.as_string())) return fail("misses required " + k.as_string());
    const Value* extra = schema.find("additionalProperties");
    for (const json::Member& m : v.members()) {
      const Value* ps = props ? props->find(m.key) : nullptr;
      if (ps) {
        std::string why = schema_check(*ps, m.value, path + "." + m.key);
        if (!why.empty()) return why;
      } else if (extra && extra->is_bool() && !extra->as_bool()) {
        return fail("has an undeclared key " + m.key);
      }
    }
  }
  if (v.is_array()) {
    const size_t n = v.items().size();
    if (const Value* x = schema.find("minItems"); x && n < static_cast<size_t>(x->as_double()))
      return fail("too few items");
    if (const Value* x = schema.find("maxItems"); x && n > static_cast<size_t>(x->as_double()))
      return fail("too many items");
    if (const Value* items = schema.find("items"))
      for (size_t i = 0; i < n; ++i) {
        std::string why = schema_check(*items, v.items()[i], path + "[" + std::to_string(i) + "]");
        if (!why.empty()) return why;
      }
  }
  if (v.is_string()) {
    size_t cps = 0;
    for (const char c : v.as_string()) cps += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (const Value* x = schema.find("minLength"); x && cps < static_cast<size_t>(x->as_double()))
      return fail("too short");
    if (const Value* x = schema.find("maxLength"); x && cps > static_cast<size_t>(x->as_double()))
      return fail("too long");
  }
  if (v.is_number()) {
    const double d = v.as_double();
    const Value* emin = schema.find("exclusiveMinimum");
    const Value* emax = schema.find("exclusiveMaximum");
    if (const Value* x = schema.find("minimum")) {
      const bool strict = emin && emin->is_bool() && emin->as_bool();
      if (strict ? !(d > x->as_double()) : !(d >= x->as_double())) return fail("below minimum");
    }
    if (const Value* x = schema.find("maximum")) {
      const bool strict = emax && emax->is_bool() && emax->as_bool();
      if (strict ? !(d < x->as_double()) : !(d <= x->as_double())) return fail("above maximum");
    }
    if (emin && emin->is_number() && !(d > emin->as_double()))
      return fail("not above exclusiveMinimum");
    if (emax && emax->is_number() && !(d < emax->as_double()))
      return fail("not below exclusiveMaximum");
  }
  return "";
}

}  // namespace laya::test
