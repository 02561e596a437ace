// runtime/decisions/grammar: schema subset, validation, the character automaton (exactly the canonical texts
// of valid instances), token masks over the real SmolLM2 vocabulary (against a brute-force walk of
// every token), and no dead ends.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "runtime/decisions/grammar/automaton.h"
#include "runtime/decisions/grammar/decimal.h"
#include "runtime/decisions/grammar/schema.h"
#include "runtime/decisions/grammar/token_automaton.h"
#include "tests/runtime/grammar_random.h"
#include "tests/runtime/grammar_util.h"

namespace laya::grammar {
namespace {

using json::Value;
using testing::parse_json;

Decimal dec(std::string_view s) {
  Result<Decimal> d = decimal_parse(s);
  REQUIRE_MESSAGE(d.is_ok(), d.status().to_string());
  return std::move(d).value();
}

Schema parse_schema(std::string_view text, const SchemaOptions& opts = {}) {
  Result<Schema> s = schema_parse(parse_json(text), opts);
  REQUIRE_MESSAGE(s.is_ok(), s.status().to_string() << " for " << text);
  return std::move(s).value();
}

std::string schema_error(std::string_view text) {
  Result<Schema> s = schema_parse(parse_json(text));
  REQUIRE_FALSE(s.is_ok());
  return s.status().message();
}

CharAutomaton build(const Schema& s, const AutomatonOptions& opts = {}) {
  Result<CharAutomaton> a = automaton_build(s, opts);
  REQUIRE_MESSAGE(a.is_ok(), a.status().to_string());
  return std::move(a).value();
}

bool accepts(const CharAutomaton& a, std::string_view text) {
  const int32_t s = a.walk(CharAutomaton::start(), text.data(), text.size());
  return s >= 0 && a.accepting(s);
}

// The language by definition: the canonical text of a valid instance.
bool in_language(const Schema& s, std::string_view text, const SchemaOptions& opts) {
  Result<Value> v = json::parse(text);
  if (!v.is_ok()) return false;
  Result<std::string> c = schema_canonical_text(s, *v, opts);
  return c.is_ok() && *c == text;
}

TEST_CASE("decimals: exact parsing, comparison and scaling") {
  CHECK(dec("0.1").to_string() == "0.1");
  CHECK(dec("-0").to_string() == "0");
  CHECK(dec("1e-05").to_string() == "0.00001");
  CHECK(dec("1.50E+2").to_string() == "150");
  CHECK(dec("-12.340").to_string() == "-12.34");
  CHECK(dec("100").integer_digits() == 3);
  CHECK(dec("0.25").fraction_digits() == 2);
  CHECK(decimal_compare(dec("0.1"), dec("0.10")) == 0);
  CHECK(decimal_compare(dec("-2"), dec("-1.5")) < 0);
  CHECK(decimal_compare(dec("10"), dec("9.999")) > 0);
  CHECK(decimal_compare(dec("0"), dec("-0.0")) == 0);
  for (const char* bad : {"", "-", "1.", ".5", "01x", "1e", "inf", "nan", "1e999999"})
    CHECK_FALSE(decimal_parse(bad).is_ok());
  std::string out;
  REQUIRE(decimal_scaled_abs(dec("2.345"), 2, false, 10, &out));
  CHECK(out == "234");
  REQUIRE(decimal_scaled_abs(dec("2.345"), 2, true, 10, &out));
  CHECK(out == "235");
  REQUIRE(decimal_scaled_abs(dec("0.004"), 2, true, 10, &out));
  CHECK(out == "1");
  REQUIRE(decimal_scaled_abs(dec("0.004"), 2, false, 10, &out));
  CHECK(out == "0");
  CHECK_FALSE(decimal_scaled_abs(dec("12345"), 0, false, 4, &out));
}

TEST_CASE("schema: unsupported keywords and mistakes are named with their path") {
  CHECK(schema_error(R"({"type": "object", "properties": {"a": {"type": "string",
        "pattern": "x"}}})") == "properties.a: unsupported keyword 'pattern'");
  CHECK(schema_error(R"({"type": "integer", "maxLength": 3})") ==
        "schema root: keyword 'maxLength' does not apply to type 'integer'");
  CHECK(schema_error(R"({"type": "object", "properties": {"a": {"type": "array",
        "items": {"anyOf": []}}}})") == "properties.a.items: unsupported keyword 'anyOf'");
  CHECK(schema_error(R"({"type": "object", "properties": {}, "required": ["x"]})") ==
        "schema root: required property 'x' is not declared in 'properties'");
  CHECK(schema_error(R"({"type": "array"})") == "schema root: an array needs 'items'");
  CHECK(schema_error(R"({"type": "text"})") == "schema root: unsupported type 'text'");
  CHECK(schema_error(R"({"type": "integer", "minimum": 5, "maximum": 4})") ==
        "schema root: no number lies between the minimum 5 and the maximum 4");
  CHECK(schema_error(R"({"type": "string", "enum": ["a", 1]})") ==
        "schema root: enum value 1 does not satisfy the schema ($: 1 is not a string)");
  CHECK(schema_error(R"({"enum": ["a", "a"]})") == "schema root: 'enum' lists \"a\" twice");
  CHECK(schema_error(R"({"description": "x"})") ==
        "schema root: needs a 'type', 'enum', 'const' or 'properties'");
  CHECK(schema_error(R"({"type": "string", "maxLength": -1})") ==
        "schema root: 'maxLength' must be a non-negative integer, not -1");
  CHECK(schema_error(R"({"type": ["string", "integer"]})") ==
        "schema root: a 'type' list may only pair one type with \"null\", not [\"string\", "
        "\"integer\"]");
  CHECK(schema_error(R"({"type": "object", "additionalProperties": {"type": "string"}})") ==
        "schema root: 'additionalProperties' must be true or false (a schema is unsupported)");
  CHECK(schema_error(R"({"type": "array", "items": [{"type": "string"}]})") ==
        "schema root: 'items' must be one schema (tuple forms are unsupported)");
  // Integer bounds that leave no integer: found when the automaton is built.
  Result<CharAutomaton> a =
      automaton_build(parse_schema(R"({"type": "integer", "minimum": 0.5, "maximum": 0.9})"));
  REQUIRE_FALSE(a.is_ok());
  CHECK(std::string(a.status().message()) ==
        "schema root: no integer with at most 0 fraction digits lies between 0.5 and 0.9");
}

TEST_CASE("schema: validation follows JSON Schema for the subset") {
  const Schema s = parse_schema(R"({"type": "object", "properties": {
      "mode": {"enum": ["heat", "cool", 1]},
      "level": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
      "n": {"type": "integer", "exclusiveMinimum": 2, "maximum": 9},
      "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2},
      "note": {"type": ["string", "null"], "minLength": 2}},
      "required": ["mode", "level"], "additionalProperties": false})");
  auto ok = [&](std::string_view t) { return schema_validate(s, parse_json(t)).is_ok(); };
  auto why = [&](std::string_view t) {
    return std::string(schema_validate(s, parse_json(t)).message());
  };
  CHECK(ok(R"({"mode": "heat", "level": 0})"));
  CHECK(ok(R"({"mode": 1.0, "level": 0.999, "n": 9, "tags": ["abc"], "note": null})"));
  CHECK(ok(R"({"level": 0.5, "mode": "cool"})"));
  CHECK(why(R"({"mode": "warm", "level": 0})") == "$.mode: \"warm\" is not one of the enum values");
  CHECK(why(R"({"mode": "heat", "level": 1})") == "$.level: 1 is above the exclusive maximum 1");
  CHECK(why(R"({"mode": "heat", "level": 0, "n": 2})") ==
        "$.n: 2 is below the exclusive minimum 2");
  CHECK(why(R"({"mode": "heat", "level": 0, "n": 3.5})") == "$.n: 3.5 is not an integer");
  CHECK(why(R"({"mode": "heat", "level": 0, "tags": ["abcd"]})") ==
        "$.tags[0]: string of 4 characters is longer than 3");
  CHECK(why(R"({"mode": "heat", "level": 0, "tags": ["a", "b", "c"]})") ==
        "$.tags: 3 items, more than maxItems 2");
  CHECK(why(R"({"level": 0})") == "$: required property 'mode' is missing");
  CHECK(why(R"({"mode": "heat", "level": 0, "x": 1})") == "$: property 'x' is not allowed");
  CHECK(why(R"({"mode": "heat", "level": 0, "note": "é"})") ==
        "$.note: string of 1 characters is shorter than 2");
  // Canonical text: schema key order, json.dumps spacing, exact decimals.
  Result<std::string> c = schema_canonical_text(
      s, parse_json(R"({"level": 5e-1, "mode": 1.0, "tags": ["a\nb"], "n": 4})"));
  REQUIRE(c.is_ok());
  CHECK(*c == R"({"mode": 1, "level": 0.5, "n": 4, "tags": ["a\nb"]})");
}

TEST_CASE("numbers: without bounds, every accepted text reads back exactly as a double") {
  for (int32_t f = 0; f <= 12; ++f) {
    CAPTURE(f);
    SchemaOptions so;
    so.max_fraction_digits = f;
    AutomatonOptions ao;
    ao.schema = so;
    const Schema s = parse_schema(R"({"type": "number"})", so);
    const CharAutomaton a = build(s, ao);
    // The largest text: 15 significant digits.
    std::string big(static_cast<size_t>(15 - f), '9');
    if (f > 0) big += "." + std::string(static_cast<size_t>(f), '9');
    for (const std::string& t : {big, "-" + big}) {
      CHECK(accepts(a, t));
      CHECK(in_language(s, t, so));  // parses, validates and is canonical: the double kept it
    }
    // One more integer digit is out of range.
    const std::string over = "1" + std::string(static_cast<size_t>(15 - f), '0');
    CHECK_FALSE(accepts(a, over));
    CHECK_FALSE(accepts(a, "-" + over));
  }
}

TEST_CASE("numbers: the automaton is exact at the bounds") {
  struct Case {
    const char* schema;
    int lo, hi;  // integers to try, inclusive
  };
  for (const Case& c :
       {Case{R"({"type": "integer", "minimum": -17, "maximum": 123})", -40, 140},
        Case{R"({"type": "integer", "exclusiveMinimum": -10, "exclusiveMaximum": 0})", -20, 10},
        Case{R"({"type": "integer", "minimum": 0.5, "maximum": 99.5})", -5, 105},
        Case{R"({"type": "integer", "minimum": 100, "maximum": 100})", 0, 1200},
        Case{R"({"type": "integer", "minimum": -1000, "maximum": -999})", -1100, 0}}) {
    const Schema s = parse_schema(c.schema);
    const CharAutomaton a = build(s);
    for (int i = c.lo; i <= c.hi; ++i) {
      const std::string t = std::to_string(i);
      CHECK_MESSAGE(accepts(a, t) == in_language(s, t, {}), c.schema << " on " << t);
    }
    CHECK_FALSE(accepts(a, "-0"));
    CHECK_FALSE(accepts(a, "007"));
  }
  // Decimals with up to 3 fraction digits around fractional bounds, both signs.
  SchemaOptions three;
  three.max_fraction_digits = 3;
  AutomatonOptions ao;
  ao.schema = three;
  for (const char* text :
       {R"({"type": "number", "minimum": -1.25, "maximum": 2.5})",
        R"({"type": "number", "exclusiveMinimum": -0.5, "exclusiveMaximum": 0.125})",
        R"({"type": "number", "minimum": 0.001, "maximum": 0.01})",
        R"({"type": "number", "exclusiveMinimum": 1, "maximum": 10})",
        R"({"type": "number", "minimum": -3, "exclusiveMaximum": -2.9995})"}) {
    const Schema s = parse_schema(text, three);
    const CharAutomaton a = build(s, ao);
    int accepted = 0;
    for (int v = -4000; v <= 11000; ++v) {
      for (int f = 0; f <= 4; ++f) {
        // v / 1000 written with f fraction digits when exact, e.g. 2500 -> "2.5" (f = 1).
        const int scale = f == 0 ? 1 : f == 1 ? 10 : f == 2 ? 100 : f == 3 ? 1000 : 10000;
        if ((static_cast<long long>(v) * scale) % 1000 != 0) continue;
        const long long d = static_cast<long long>(v) * scale / 1000;
        std::string t = std::to_string(d < 0 ? -d : d);
        if (f > 0) {
          if (t.size() <= static_cast<size_t>(f))
            t.insert(0, static_cast<size_t>(f) + 1 - t.size(), '0');
          t.insert(t.size() - static_cast<size_t>(f), ".");
        }
        if (d < 0) t.insert(0, "-");
        const bool want = in_language(s, t, three);
        CHECK_MESSAGE(accepts(a, t) == want, text << " on " << t);
        accepted += want;
      }
    }
    CHECK(accepted > 0);
    CHECK_FALSE(accepts(a, "1.0"));   // trailing zero
    CHECK_FALSE(accepts(a, "1e0"));   // exponent
    CHECK_FALSE(accepts(a, "-0.0"));  // negative zero
  }
}

TEST_CASE("random schemas: the automaton accepts exactly the canonical texts of valid instances") {
  SchemaOptions so;
  so.max_fraction_digits = 3;
  AutomatonOptions ao;
  ao.schema = so;
  testing::Random r(20240601);
  int schemas = 0, valid_texts = 0, invalid_texts = 0, rejected_valid = 0;
  for (int iter = 0; iter < 300; ++iter) {
    const Value sj = r.schema(0);
    Result<Schema> sr = schema_parse(sj, so);
    REQUIRE_MESSAGE(sr.is_ok(), sr.status().to_string() << " for " << json::dump(sj));
    const Schema& s = *sr;
    Result<CharAutomaton> ar = automaton_build(s, ao);
    if (!ar.is_ok()) {
      // Only an integer range without integers may fail.
      CHECK_MESSAGE(std::string(ar.status().message()).find("no integer") != std::string::npos,
                    ar.status().to_string() << " for " << json::dump(sj));
      continue;
    }
    const CharAutomaton& a = *ar;
    ++schemas;
    // Every state can still reach an accepting state.
    for (int32_t st = 0; st < a.num_states(); ++st) REQUIRE(a.min_bytes_to_accept(st) >= 0);
    for (int k = 0; k < 12; ++k) {
      std::optional<Value> v = r.instance(s, s.root, 3);
      if (!v) continue;
      Result<std::string> text = schema_canonical_text(s, *v, so);
      REQUIRE_MESSAGE(text.is_ok(), text.status().to_string() << " for " << json::dump(*v));
      // Every prefix is viable, the whole text accepted.
      int32_t st = CharAutomaton::start();
      for (size_t i = 0; i < text->size() && st >= 0; ++i)
        st = a.next(st, static_cast<uint8_t>((*text)[i]));
      const bool ok = st >= 0 && a.accepting(st);
      CHECK_MESSAGE(ok, json::dump(sj) << " rejects " << *text);
      rejected_valid += !ok;
      ++valid_texts;
      // Mutations: accepted exactly when they are canonical texts of valid instances.
      std::string m = *text;
      for (int j = 0; j < 6; ++j) {
        m = r.mutate(j % 2 ? m : *text);
        const bool want = in_language(s, m, so);
        CHECK_MESSAGE(accepts(a, m) == want, json::dump(sj) << " on " << m);
        invalid_texts += !want;
      }
    }
  }
  CHECK(schemas > 200);
  CHECK(valid_texts > 1500);
  CHECK(invalid_texts > 5000);
  CHECK(rejected_valid == 0);
}

TEST_CASE("slots: enum and boolean values are marked where their text begins") {
  const Schema s = parse_schema(R"({"type": "object", "properties": {
      "mode": {"enum": ["heat", "cool"]},
      "on": {"type": "boolean"},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
      "more": {"type": "array", "items": {"enum": [1, 10]}, "minItems": 1}},
      "required": ["mode", "on", "tags", "more"]})");
  const CharAutomaton a = build(s);
  std::vector<std::string> names;
  for (const Slot& sl : a.slots()) names.push_back(sl.name);
  CHECK(names == std::vector<std::string>{"mode", "on", "tags[0]", "tags[1]", "more[0]", "more[]"});
  CHECK(a.slots()[1].texts == std::vector<std::string>{"true", "false"});
  CHECK(a.slots()[0].texts == std::vector<std::string>{"\"heat\"", "\"cool\""});
  // Walk a text and record the entries met.
  const std::string text =
      R"({"mode": "cool", "on": false, "tags": ["b", "a"], "more": [10, 1, 1]})";
  std::vector<std::pair<size_t, int32_t>> entries;  // (offset, slot)
  std::vector<bool> mixed;
  int32_t st = CharAutomaton::start();
  for (size_t i = 0; i <= text.size(); ++i) {
    if (a.entry_slot(st) >= 0) {
      entries.emplace_back(i, a.entry_slot(st));
      mixed.push_back(a.entry_mixed(st));
    }
    if (i < text.size()) st = a.next(st, static_cast<uint8_t>(text[i]));
    REQUIRE(st >= 0);
  }
  CHECK(a.accepting(st));
  CHECK(a.final(st));
  const std::vector<std::pair<size_t, int32_t>> want = {{9, 0},  {23, 1}, {39, 2}, {44, 3},
                                                        {59, 4}, {63, 5}, {66, 5}};
  CHECK(entries == want);
  // The first item of an array that may be empty can also be "]": a mixed entry.
  CHECK(mixed == std::vector<bool>{false, false, true, false, false, false, false});
  // Forced text: after `{"mode": "cool", ` the key `"on": ` is the only continuation.
  st = a.walk(CharAutomaton::start(), text.data(), 17);
  std::string forced;
  while (st >= 0 && a.forced_byte(st) >= 0 && a.entry_slot(st) < 0) {
    forced += static_cast<char>(a.forced_byte(st));
    st = a.next(st, static_cast<uint8_t>(a.forced_byte(st)));
  }
  CHECK(forced == "\"on\": ");
  CHECK(a.entry_slot(st) == 1);
}

// ---- token level ------------------------------------------------------------------------------

// The allowed-token rule of token_automaton.h, token by token.
bool brute_force_allowed(const TokenAutomaton& ta, int32_t s, int32_t id) {
  const TokenVocab& v = ta.vocab();
  const CharAutomaton& a = ta.chars();
  if (v.is_stop(id)) return a.accepting(s);
  const std::string_view p = v.piece(id);
  if (p.empty()) return false;
  int32_t st = s;
  for (size_t i = 0; i < p.size(); ++i) {
    if (i > 0 && a.entry_slot(st) >= 0) return false;  // through an entry
    st = a.next(st, static_cast<uint8_t>(p[i]));
    if (st < 0) return false;
  }
  return true;
}

std::shared_ptr<const TokenAutomaton> compile(std::string_view schema,
                                              const CompileOptions& opts = {}) {
  Result<std::shared_ptr<const TokenAutomaton>> ta =
      TokenAutomaton::compile(parse_json(schema), testing::smollm2_vocab(), opts);
  REQUIRE_MESSAGE(ta.is_ok(), ta.status().to_string());
  return std::move(ta).value();
}

const char* const kSchemas[] = {
    // smart home
    R"({"type": "object", "properties": {
        "action": {"enum": ["turn_on", "turn_off", "set_temperature", "none"]},
        "device": {"enum": ["thermostat", "living_room_light", "heat_pump", "window_blinds"]},
        "value": {"type": "number", "minimum": 5, "maximum": 30},
        "reason": {"type": "string", "maxLength": 60}},
        "required": ["action", "device", "reason"]})",
    // arrays, nested objects, nullable, booleans, integers
    R"({"type": "object", "properties": {
        "defects": {"type": "array", "maxItems": 3, "items": {"type": "object", "properties": {
            "kind": {"enum": ["scratch", "dent", "crack"]},
            "severity": {"type": "integer", "minimum": 1, "maximum": 5},
            "x": {"type": "number", "exclusiveMinimum": -1, "exclusiveMaximum": 1}},
            "required": ["kind", "severity"]}},
        "pass": {"type": "boolean"},
        "note": {"type": ["string", "null"], "minLength": 1, "maxLength": 12}},
        "required": ["defects", "pass"]})",
    // unbounded strings and arrays
    R"({"type": "object", "properties": {"log": {"type": "string"},
        "codes": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 999}}},
        "required": ["log", "codes"]})",
};

TEST_CASE("token masks equal a brute-force walk of every SmolLM2 token") {
  testing::Random r(7);
  for (const char* schema : kSchemas) {
    const auto ta = compile(schema);
    const CharAutomaton& a = ta->chars();
    const TokenVocab& v = ta->vocab();
    // All states of small automata; a sample of larger ones.
    std::vector<int32_t> states;
    for (int32_t s = 0; s < a.num_states(); ++s) states.push_back(s);
    std::shuffle(states.begin(), states.end(), r.engine());
    if (states.size() > 120) states.resize(120);
    for (int32_t s : states) {
      int mismatches = 0, allowed = 0;
      for (int32_t id = 0; id < v.size(); ++id) {
        const bool want = brute_force_allowed(*ta, s, id);
        allowed += want;
        if (ta->allowed(s, id) != want && ++mismatches <= 3)
          FAIL_CHECK("state " << s << " token " << id << " '" << v.piece(id) << "': mask says "
                              << ta->allowed(s, id));
        if (want && !v.is_stop(id)) {
          const std::string_view p = v.piece(id);
          REQUIRE(ta->next(s, id) == a.walk(s, p.data(), p.size()));
        }
      }
      CHECK(allowed > 0);
    }
    MESSAGE(std::string(schema).substr(0, 48)
            << "...: " << a.num_states() << " states, " << ta->stats().distinct_masks
            << " distinct masks, " << ta->stats().compile_ms << " ms");
  }
}

TEST_CASE("no dead ends: every state completes through allowed single-byte tokens") {
  for (const char* schema : kSchemas) {
    const auto ta = compile(schema);
    const CharAutomaton& a = ta->chars();
    const TokenVocab& v = ta->vocab();
    for (int32_t s = 0; s < a.num_states(); ++s) {
      if (a.accepting(s)) {
        for (int32_t id : v.stop_ids()) CHECK(ta->allowed(s, id));
        continue;
      }
      for (int32_t id : v.stop_ids()) CHECK_FALSE(ta->allowed(s, id));
      // A byte token one step closer to the end is allowed.
      bool closer = false;
      for (int b = 0; b < 256 && !closer; ++b) {
        const int32_t t = a.next(s, static_cast<uint8_t>(b));
        if (t < 0 || a.min_bytes_to_accept(t) != a.min_bytes_to_accept(s) - 1) continue;
        const int32_t id = v.byte_token(static_cast<uint8_t>(b));
        closer = id >= 0 && ta->allowed(s, id);
      }
      CHECK_MESSAGE(closer, schema << " state " << s);
    }
  }
}

TEST_CASE("matcher: longest-match token paths of valid texts, then a stop token") {
  const auto ta = compile(kSchemas[1]);
  const TokenVocab& v = ta->vocab();
  testing::Random r(99);
  SchemaOptions so;
  int checked = 0;
  for (int k = 0; k < 60; ++k) {
    std::optional<Value> inst = r.instance(ta->schema(), ta->schema().root, 6);
    if (!inst) continue;
    const std::string text = schema_canonical_text(ta->schema(), *inst, so).value();
    GrammarMatcher m(ta.get());
    size_t at = 0;
    int tokens = 0;
    while (at < text.size()) {
      // The longest allowed token that matches the text here.
      int32_t best = -1;
      size_t best_len = 0;
      for (int32_t id = 0; id < v.size(); ++id) {
        const std::string_view p = v.piece(id);
        if (p.size() <= best_len || p.size() > text.size() - at) continue;
        if (text.compare(at, p.size(), p) != 0) continue;
        if ((m.mask()[id >> 6] >> (id & 63)) & 1) {
          best = id;
          best_len = p.size();
        }
      }
      REQUIRE_MESSAGE(best >= 0, text << " at " << at);
      REQUIRE(m.accept(best).is_ok());
      at += best_len;
      ++tokens;
    }
    CHECK(m.accepting());
    CHECK(m.complete());  // the object's closing brace ends the text
    CHECK(tokens < static_cast<int>(text.size()));
    // Stop tokens: allowed only at the end.
    GrammarMatcher fresh(ta.get());
    CHECK_FALSE(fresh.accept(v.stop_ids()[0]).is_ok());
    ++checked;
  }
  CHECK(checked > 40);
}

}  // namespace
}  // namespace laya::grammar
