// runtime/text/json: Python's json.loads / json.dumps semantics, checked against data Python wrote.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/text/json.h"

namespace laya::json {
namespace {

std::string fixture(const std::string& rel) {
  const char* root = std::getenv("LAYA_FIXTURES");
  const std::string path = std::string(root ? root : "tests/fixtures") + "/" + rel;
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot open " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Value parse_ok(std::string_view text) {
  Result<Value> r = parse(text);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  return std::move(r).value();
}

TEST_CASE("python_float_repr equals Python's repr on the 2,261-value oracle") {
  const Value probe = parse_ok(fixture("laya-golden/multilingual/repr_probe.json"));
  REQUIRE(probe.items().size() == 2261);
  int checked = 0;
  for (const Value& e : probe.items()) {
    const std::string& bits = e.find("bits")->as_string();
    const std::string& want = e.find("repr")->as_string();
    const uint64_t u = std::strtoull(bits.c_str(), nullptr, 16);
    const double d = std::bit_cast<double>(u);
    std::string got = python_float_repr(d);
    // The oracle records repr(); json.dumps spells the non-finite values differently.
    if (got == "NaN") got = "nan";
    if (got == "Infinity") got = "inf";
    if (got == "-Infinity") got = "-inf";
    CHECK_MESSAGE(got == want, bits);
    ++checked;
  }
  CHECK(checked == 2261);
}

TEST_CASE("json.dumps(state, ensure_ascii=False) of every recorded non-string state") {
  int checked = 0;
  for (const char* dir : {"laya-golden/typed-decisions", "laya-golden/multilingual"}) {
    const std::string root = std::string(std::getenv("LAYA_FIXTURES") ? std::getenv("LAYA_FIXTURES")
                                                                      : "tests/fixtures") +
                             "/" + dir;
    for (const auto& entry : std::filesystem::directory_iterator(root)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("case_", 0) != 0) continue;
      const Value c = parse_ok(fixture(std::string(dir) + "/" + name));
      const Value* state = c.find("state");
      const Value* serialized = c.find("serialized_state");
      REQUIRE(state != nullptr);
      if (state->is_string() || serialized == nullptr || serialized->is_null()) continue;
      CAPTURE(name);
      CHECK(dump(*state) == serialized->as_string());
      ++checked;
    }
  }
  CHECK(checked >= 4);
}

TEST_CASE("numbers keep Python's int / float distinction") {
  const Value v = parse_ok(
      R"([149.0, 1e16, 1E5, 1e-05, -0.0, -0, 0, 12345678901234567890123, -9223372036854775808,
          18446744073709551615, 0.1, 2.5e-7, 1.0e+2, 123456789012345678])");
  CHECK(dump(v) ==
        "[149.0, 1e+16, 100000.0, 1e-05, -0.0, 0, 0, 12345678901234567890123, "
        "-9223372036854775808, 18446744073709551615, 0.1, 2.5e-07, 100.0, 123456789012345678]");
  CHECK(v.items()[0].is_number());
  CHECK_FALSE(v.items()[0].is_integer());
  CHECK(v.items()[5].is_integer());
  CHECK(v.items()[7].is_integer());
  CHECK_FALSE(v.items()[7].as_int64().has_value());  // too large for int64, still exact text
  CHECK(*v.items()[8].as_int64() == INT64_MIN);
  CHECK(v.items()[10].as_double() == 0.1);
  CHECK(Value::number(149.0).as_string() == "149.0");
  CHECK(Value::integer(-3).as_string() == "-3");
}

TEST_CASE("objects keep insertion order; a repeated key keeps its first place and last value") {
  CHECK(dump(parse_ok(R"({"b": 1, "a": 2, "b": 3})")) == R"({"b": 3, "a": 2})");
  // Past the indexing threshold too.
  std::string big = "{";
  for (int i = 0; i < 40; ++i) big += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  big += "\"k3\": \"x\"}";
  const Value v = parse_ok(big);
  REQUIRE(v.members().size() == 40);
  CHECK(v.members()[3].key == "k3");
  CHECK(v.members()[3].value.as_string() == "x");
  CHECK(v.find("k39")->as_string() == "39");
  Value o = Value::object();
  o.set("x", Value::integer(1));
  o.set("y", Value::integer(2));
  o.set("x", Value::boolean(true));
  CHECK(dump(o) == R"({"x": true, "y": 2})");
}

TEST_CASE("strings: escapes as Python writes them, ensure_ascii, separators and indent") {
  const Value s = parse_ok(R"(["a\"b\\c\n\t\u0001\u007f", "caf\u00e9 \u4e2d\ud83d\ude00", "/"])");
  CHECK(dump(s) ==
        "[\"a\\\"b\\\\c\\n\\t\\u0001\x7f\", \"caf\xc3\xa9 \xe4\xb8\xad\xf0\x9f\x98\x80\", \"/\"]");
  DumpOptions ascii;
  ascii.ensure_ascii = true;
  CHECK(dump(s, ascii) ==
        "[\"a\\\"b\\\\c\\n\\t\\u0001\x7f\", \"caf\\u00e9 \\u4e2d\\ud83d\\ude00\", \"/\"]");
  DumpOptions ind;
  ind.indent = 2;
  CHECK(dump(parse_ok(R"({"a": [1, {}], "b": []})"), ind) ==
        "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}");
  DumpOptions compact;
  compact.item_separator = ",";
  compact.key_separator = ":";
  CHECK(dump(parse_ok(R"({"a": [1, 2]})"), compact) == R"({"a":[1,2]})");
}

TEST_CASE("numbers past a double's range read as Python reads them, whatever the exponent length") {
  // An underflow is 0 (Python: 0.0), however many digits the exponent has.
  for (const char* tiny :
       {"1e-400", "-1e-400", "1e-99999999999999999999999", "0.5e-0000000000000000000400"}) {
    CAPTURE(tiny);
    Result<Value> r = parse(tiny);
    REQUIRE(r.is_ok());
    CHECK(r.value().as_double() == 0.0);
  }
  // An overflow is refused (Python: inf), also past int64's exponent (a fuzzer's find).
  for (const char* huge : {"1e400", "-1e400", "1e0000000000009223372036854775807",
                           "1e99999999999999999999999", "0.1e310"}) {
    CAPTURE(huge);
    CHECK_FALSE(parse(huge).is_ok());
  }
}

TEST_CASE("malformed input is a clear error, never a crash") {
  for (const char* bad :
       {"", "{", "[1,]", "{\"a\" 1}", "tru", "\"\\ud800\"", "NaN", "[1] 2", "\"\xff\"", "1e400",
        "{\"a\":}", "[\"\x01\"]",
        // lead bytes that never start UTF-8 (F5..FF, C0, C1), before valid tails
        "\"\xf8\x9e\x98\"", "\"\xf5\x80\x80\x80\"", "\"\xc0\x80\"", "{\"k\xfe\x80\x80\": 1}"}) {
    CAPTURE(bad);
    Result<Value> r = parse(bad, {}, "request");
    REQUIRE_FALSE(r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
#if !LAYA_STRIP_MESSAGES
    CHECK(std::string(r.status().message()).rfind("request: ", 0) == 0);
#endif
  }
#if !LAYA_STRIP_MESSAGES
  Result<Value> r = parse("{\n  \"a\": [1,\n  x]}");
  CHECK(std::string(r.status().message()).find("line 3") != std::string::npos);
#endif
  ParseOptions shallow;
  shallow.max_depth = 3;
  CHECK(parse("[[[1]]]", shallow).is_ok());
  CHECK_FALSE(parse("[[[[1]]]]", shallow).is_ok());
  CHECK_FALSE(parse(std::string(100000, '[')).is_ok());  // deep nesting stops at the limit
  ParseOptions small;
  small.max_bytes = 4;
  CHECK_FALSE(parse("[1, 2]", small).is_ok());
}

}  // namespace
}  // namespace laya::json
