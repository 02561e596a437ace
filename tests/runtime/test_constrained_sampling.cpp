// runtime/decisions/constrained_sampling: random schemas, random logits (including rows that push the
// stop tokens and random tokens far up) and every sampler mode, over the real SmolLM2
// vocabulary: every generation ends, parses with runtime/text/json, validates against the schema and
// is its canonical text. Errors of the step function.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/decisions/constrained_sampling.h"
#include "runtime/decisions/grammar/schema.h"
#include "runtime/decisions/grammar/token_automaton.h"
#include "tests/runtime/grammar_random.h"
#include "tests/runtime/grammar_util.h"

namespace laya {
namespace {

using json::Value;

// Gives every string a maxLength and every array a maxItems (random logits inside an unbounded
// string pick the closing quote about once in 49,152 tokens).
void bound(Value& s) {
  if (!s.is_object()) return;
  if (Value* props = s.find("properties"))
    for (json::Member& m : props->members()) bound(m.value);
  if (Value* items = s.find("items")) bound(*items);
  const Value* type = s.find("type");
  auto is = [&](const char* t) {
    if (!type) return false;
    if (type->is_string()) return type->as_string() == t;
    for (const Value& v : type->items())
      if (v.is_string() && v.as_string() == t) return true;
    return false;
  };
  // Read everything before set() moves the members.
  const bool string = is("string") && !s.find("maxLength");
  const bool array = is("array") && !s.find("maxItems");
  const Value* mn = s.find(string ? "minLength" : "minItems");
  const int64_t lo = mn ? *mn->as_int64() : 0;
  if (string) s.set("maxLength", Value::integer(lo + 8));
  if (array) s.set("maxItems", Value::integer(lo + 3));
}

std::shared_ptr<const grammar::TokenAutomaton> compile_or_null(const Value& schema,
                                                               const grammar::CompileOptions& o) {
  Result<std::shared_ptr<const grammar::TokenAutomaton>> ta =
      grammar::TokenAutomaton::compile(schema, testing::smollm2_vocab(), o);
  if (!ta.is_ok()) {
    // Only an empty range may fail (the generator draws the bounds independently).
    const std::string msg(ta.status().message());
    CHECK_MESSAGE((msg.find("no integer") != std::string::npos ||
                   msg.find("no number lies") != std::string::npos),
                  ta.status().to_string() << " for " << json::dump(schema));
    return nullptr;
  }
  return std::move(ta).value();
}

TEST_CASE("random logits under random schemas always give JSON that parses and validates") {
  const auto vocab = testing::smollm2_vocab();
  const int32_t n = vocab->size();
  // A pool of logit rows: plain normal ones at three scales, and adversarial ones where the stop
  // tokens and 300 random tokens sit 30 above the rest.
  std::mt19937_64 rng(8);
  std::vector<std::vector<float>> rows;
  for (int r = 0; r < 24; ++r) {
    std::normal_distribution<float> d(0.0f, r % 3 == 0 ? 1.0f : r % 3 == 1 ? 3.0f : 8.0f);
    std::vector<float> row(static_cast<size_t>(n));
    for (float& x : row) x = d(rng);
    if (r % 4 == 3) {
      for (int32_t id : vocab->stop_ids()) row[static_cast<size_t>(id)] += 30.0f;
      std::uniform_int_distribution<int32_t> any(0, n - 1);
      for (int k = 0; k < 300; ++k) row[static_cast<size_t>(any(rng))] += 30.0f;
    }
    rows.push_back(std::move(row));
  }
  const std::vector<SamplerConfig> configs = {{},
                                              {.temperature = 1.0f},
                                              {.temperature = 0.7f, .top_k = 40, .top_p = 0.9f},
                                              {.temperature = 1.5f, .top_p = 0.5f},
                                              {.temperature = 3.0f, .top_k = 5}};

  grammar::CompileOptions opts;
  opts.automaton.schema.max_fraction_digits = 3;
  testing::Random r(4242);
  int generations = 0, valid = 0, tokens = 0, stopped = 0;
  for (int iter = 0; iter < 400; ++iter) {
    Value sj = r.schema(0);
    bound(sj);
    const auto ta = compile_or_null(sj, opts);
    if (!ta) continue;
    for (int g = 0; g < 2; ++g) {
      SamplerConfig cfg = configs[static_cast<size_t>(r.range(0, 4))];
      cfg.seed = static_cast<uint64_t>(iter * 2 + g);
      Result<Sampler> s = Sampler::create(cfg, n);
      REQUIRE(s.is_ok());
      grammar::GrammarMatcher m(ta.get());
      std::string text;
      int steps = 0;
      bool stop = false;
      while (!m.complete() && steps < 4000) {
        const std::vector<float>& row = rows[static_cast<size_t>(r.range(0, 23))];
        Result<int32_t> id = sample_constrained(*s, m, row.data());
        REQUIRE_MESSAGE(id.is_ok(), id.status().to_string() << " for " << json::dump(sj));
        ++steps;
        if (vocab->is_stop(*id))
          stop = true;
        else
          text += vocab->piece(*id);
      }
      ++generations;
      tokens += steps;
      stopped += stop;
      CAPTURE(json::dump(sj));
      CAPTURE(text);
      REQUIRE(m.complete());
      Result<Value> v = json::parse(text);
      REQUIRE_MESSAGE(v.is_ok(), v.status().to_string());
      const Status ok = grammar::schema_validate(ta->schema(), *v);
      CHECK_MESSAGE(ok.is_ok(), ok.to_string());
      Result<std::string> canon =
          grammar::schema_canonical_text(ta->schema(), *v, ta->schema_options());
      REQUIRE(canon.is_ok());
      CHECK(*canon == text);
      valid += ok.is_ok() && *canon == text;
    }
  }
  MESSAGE(generations << " generations, " << tokens << " tokens, " << stopped
                      << " ended by a stop token");
  CHECK(generations > 600);
  CHECK(valid == generations);
  CHECK(stopped > 0);  // texts ending in "}" or "]" are final without one
}

TEST_CASE("sample_constrained: errors") {
  const auto vocab = testing::smollm2_vocab();
  const int32_t n = vocab->size();
  const auto ta =
      compile_or_null(testing::parse_json(R"({"type": "boolean"})"), grammar::CompileOptions{});
  REQUIRE(ta);
  std::vector<float> logits(static_cast<size_t>(n), -std::numeric_limits<float>::infinity());
  Result<Sampler> s = Sampler::create({}, n);
  REQUIRE(s.is_ok());
  grammar::GrammarMatcher m(ta.get());
  // Nothing allowed has a finite logit: an error, and the matcher has not moved.
  Result<int32_t> id = sample_constrained(*s, m, logits.data());
  REQUIRE_FALSE(id.is_ok());
  CHECK(id.status().code() == StatusCode::kOutOfRange);
  CHECK(m.state() == grammar::CharAutomaton::start());
  // A wrong-sized sampler.
  Result<Sampler> small = Sampler::create({}, n - 1);
  REQUIRE(small.is_ok());
  CHECK(sample_constrained(*small, m, logits.data()).status().code() ==
        StatusCode::kInvalidArgument);
  // Greedy over a row that prefers "false": "false", then a stop token, then the end.
  for (int32_t i = 0; i < n; ++i) logits[static_cast<size_t>(i)] = 0.0f;
  std::string text;
  while (!m.complete()) {
    for (int32_t i = 0; i < n; ++i) {
      const std::string_view p = vocab->piece(i);
      logits[static_cast<size_t>(i)] = !p.empty() && std::string_view("false").starts_with(p)
                                           ? static_cast<float>(p.size())
                                           : 0.0f;
    }
    id = sample_constrained(*s, m, logits.data());
    REQUIRE(id.is_ok());
    if (!vocab->is_stop(*id)) text += vocab->piece(*id);
  }
  CHECK(text == "false");
  id = sample_constrained(*s, m, logits.data());
  REQUIRE_FALSE(id.is_ok());
  CHECK(id.status().code() == StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace laya
