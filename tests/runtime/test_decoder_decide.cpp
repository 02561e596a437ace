// Decisions on a decoder (runtime/decisions/decoder_decide.h) on the tiny random llama GGUF given a ChatML
// template and a 4096-token context (tests/tools/gguf_set_keys.py at build time; its byte-level
// vocabulary has <|im_start|> / <|im_end|>), and on the real SmolLM2 Q4_1 file when it is there
// (tests/test_files.h smollm2_path):
//  - questions: the label logits read after the shared prefix + each suffix (the suffix removed
//    again, the system block restored from the prefix cache for the next state) equal a fresh
//    forward of the whole prompt; the answers' probabilities equal softmax(those / T);
//  - schema: every example and random schemas (tests/runtime/grammar_random.h) give decisions
//    that validate, fields whose probabilities sum to 1, the fallback on a budget overrun and on
//    a deadline overrun (an injected clock: kDeadlineExceeded without a fallback), the refusals
//    of bad fallbacks, needs_review under a high gate;
//  - a multi-token option (options sharing first tokens too): log P is the sum over its tokens
//    of the grammar-masked log-softmax, against fresh forwards of the prompt + its tokens.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "frontends/gguf.h"
#include "frontends/gguf_tokenizer.h"
#include "runtime/decisions/decoder_decide.h"
#include "runtime/decisions/grammar/schema.h"
#include "runtime/text/json.h"
#include "runtime/prefix_cache.h"
#include "tests/frontends/gguf_generate_util.h"
#include "tests/runtime/grammar_random.h"
#include "tests/runtime/schema_check.h"
#include "tests/test_files.h"

using namespace laya;
using json::Value;

namespace {

using test::read_text;

// A decoder ready for decisions: a runner over a KV cache of `cells` cells (sequence 0 works,
// 1 and 2 are the prefix cache's slots), its tokenizer and template.
struct Fixture {
  std::shared_ptr<const frontends::gguf::File> file;
  std::unique_ptr<tok::Tokenizer> tokenizer;
  std::unique_ptr<test::Cached> dec;
  std::unique_ptr<runtime::PrefixCache> prefix;
  std::unique_ptr<runtime::AutomatonCache> automata;
  std::unique_ptr<runtime::DecoderDecider> decider;
  runtime::DecoderText text;  // a copy of the decider's

  // The decision's JSON (what laya-run decide prints).
  Result<Value> decide(const runtime::DecoderRequest& req,
                       const runtime::DecoderDecideOptions& opts = {}) {
    runtime::DecoderOutput out;
    LAYA_RETURN_IF_ERROR(decider->decide(req, opts, &out));
    return std::move(out.json);
  }

  // block 0: no prefix cache.
  Fixture(const std::string& path, const std::string& kernels, int64_t cells, int64_t block) {
    file = test::open_file(path);
    auto t = frontends::gguf::gguf_tokenizer(*file);
    REQUIRE_MESSAGE(t.is_ok(), t.status().to_string());
    tokenizer = std::move(t).value();
    auto td = frontends::gguf::tokenizer_data(*file);
    REQUIRE(td.is_ok());
    auto chat = ChatTemplate::recognize(td->chat_template, td->tokens[td->bos_id]);
    REQUIRE_MESSAGE(chat.is_ok(), chat.status().to_string());
    dec = std::make_unique<test::Cached>(file, kernels, 1, 32, cells, 3);
    auto layout = runtime::kv_cache_layout(dec->graph);
    REQUIRE(layout.is_ok());
    runtime::PrefixCacheOptions po;
    po.block_tokens = block;
    po.first_seq = 1;
    po.slots = 2;
    po.budget_bytes = static_cast<uint64_t>(cells / 4) * layout->bytes_per_cell;
    if (block > 0) {
      auto pc = runtime::PrefixCache::create(*dec->cache, *layout, po);
      REQUIRE_MESSAGE(pc.is_ok(), pc.status().to_string());
      prefix = std::move(pc).value();
    }
    text.tokenizer = tokenizer.get();
    text.chat = *chat;
    text.add_bos = !chat->renders_bos();
    text.stop_ids = {tokenizer->token_to_id("<|im_end|>")};
    REQUIRE(text.stop_ids[0] >= 0);
    auto vocab = runtime::decoder_token_vocab(
        *tokenizer, static_cast<int32_t>(dec->runner->vocab()), text.stop_ids);
    REQUIRE_MESSAGE(vocab.is_ok(), vocab.status().to_string());
    automata = std::make_unique<runtime::AutomatonCache>(*vocab);
    auto d = runtime::DecoderDecider::create(*dec->runner, *dec->cache, prefix.get(), text,
                                             decision::Temperatures{}, automata.get());
    REQUIRE_MESSAGE(d.is_ok(), d.status().to_string());
    decider = std::move(d).value();
  }

  // The last position's logits of `ids` run from an empty sequence 0: in one prefill, or
  // (`split` > 0) ids[0, split) first, then the rest (the decider's step boundaries).
  std::vector<float> forward_last(const std::vector<int32_t>& ids, size_t split = 0) {
    REQUIRE(dec->cache->remove(0).is_ok());
    // Without slots in the way, the same cells as the decider's (its first alloc after a clear).
    if (!prefix) dec->cache->clear();
    Status st = dec->runner->prefill(0, std::span(ids).first(split ? split : ids.size()));
    if (st.is_ok() && split) st = dec->runner->prefill(0, std::span(ids).subspan(split));
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
    std::vector<float> out(dec->runner->last_logits().begin(), dec->runner->last_logits().end());
    REQUIRE(dec->cache->remove(0).is_ok());
    return out;
  }
};

std::string tiny_gguf() {
  const char* p = std::getenv("LAYA_TINY_CHAT_GGUF");
  REQUIRE(p != nullptr);
  return p;
}

std::string examples_dir() {
  const char* p = std::getenv("LAYA_SOURCE_ROOT");
  REQUIRE(p != nullptr);
  return std::string(p) + "/examples/";
}

runtime::DecoderRequest parse(const std::string& body) {
  auto r = runtime::parse_decoder_request(body);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  return std::move(r).value();
}

std::vector<double> softmax(const std::vector<float>& z) {
  double m = -INFINITY, s = 0;
  for (float v : z) m = std::max(m, double{v});
  std::vector<double> p;
  for (float v : z) p.push_back(std::exp(double{v} - m));
  for (double v : p) s += v;
  for (double& v : p) v /= s;
  return p;
}

// The request's questions answered through the decider, checked against fresh forwards of each
// whole prompt (`split`: the shared part and the suffix in two prefills, as the decider steps).
void check_questions(Fixture& fx, const std::string& body, double logit_tol, double prob_tol,
                     bool split = false) {
  const runtime::DecoderRequest req = parse(body);
  const auto& qs = req.questions.questions;
  int64_t hits = 0;
  for (size_t s = 0; s < req.states.size(); ++s) {
    CAPTURE(s);
    if (!fx.prefix) fx.dec->cache->clear();
    auto scores = fx.decider->score_questions(req.states[s], qs, req.system);
    REQUIRE_MESSAGE(scores.is_ok(), scores.status().to_string());
    hits += scores->prefix_hit_tokens;
    CHECK(fx.dec->cache->seq_length(0) == 0);
    for (size_t j = 0; j < qs.size(); ++j) {
      CAPTURE(qs[j].id);
      std::vector<int32_t> ids = scores->prompt.shared;
      ids.insert(ids.end(), scores->prompt.suffixes[j].begin(), scores->prompt.suffixes[j].end());
      const std::vector<float> last =
          fx.forward_last(ids, split ? scores->prompt.shared.size() : 0);
      auto labels = runtime::option_label_ids(*fx.tokenizer, qs[j].options.size());
      REQUIRE(labels.is_ok());
      std::vector<float> want;
      for (int32_t id : *labels) want.push_back(last[static_cast<size_t>(id)]);
      REQUIRE(want.size() == scores->scores[j].size());
      for (size_t i = 0; i < want.size(); ++i)
        CHECK(std::fabs(double{scores->scores[j][i]} - double{want[i]}) <= logit_tol);
      const std::vector<double> p = softmax(scores->scores[j]), q = softmax(want);
      for (size_t i = 0; i < p.size(); ++i) CHECK(std::fabs(p[i] - q[i]) <= prob_tol);
    }
  }
  if (req.states.size() > 1) CHECK(hits > 0);  // the system block came from the prefix cache

  // The result: the encoder path's shape without `action`, probabilities from these logits.
  auto out = fx.decide(req, {});
  REQUIRE_MESSAGE(out.is_ok(), out.status().to_string());
  const Value& first = req.batch ? out->items()[0] : *out;
  const Value* answers = first.find("answers");
  REQUIRE(answers != nullptr);
  REQUIRE(answers->members().size() == qs.size());
  for (const auto& m : answers->members()) {
    CHECK(m.value.find("action") == nullptr);
    CHECK(m.value.find("confidence") != nullptr);
    if (const Value* probs = m.value.find("probabilities")) {
      double sum = 0;
      for (const auto& p : probs->members()) sum += p.value.as_double();
      CHECK(std::fabs(sum - 1.0) <= 1e-3);
    }
  }
  CHECK(first.find("usage")->find("output_tokens")->as_int64() == 0);
  CHECK(first.find("usage")->find("input_tokens")->as_int64() > 0);
}

// One schema decision: an instance of the schema by a validator that shares no code with the
// library's (tests/runtime/schema_check.h), fields summing to 1; returns the result.
Value check_schema_result(const Value& r, const Value& schema_json) {
  const Value* d = r.find("decision");
  REQUIRE(d != nullptr);
  const std::string why = test::schema_check(schema_json, *d);
  CHECK_MESSAGE(why.empty(), why << " in " << json::dump(r));
  for (const auto& f : r.find("fields")->members()) {
    double sum = 0;
    for (const auto& p : f.value.find("probabilities")->members()) sum += p.value.as_double();
    CHECK_MESSAGE(std::fabs(sum - 1.0) <= 1e-3, f.key);
    const double c = f.value.find("confidence")->as_double();
    CHECK((c >= 0 && c <= 1));
  }
  for (const char* k : {"fallback", "usage", "timings"}) CHECK(r.find(k) != nullptr);
  return r;
}

Value with(Value body, const char* key, Value v) {
  body.set(key, std::move(v));
  return body;
}

}  // namespace

TEST_CASE("the tests' independent schema validator refuses what it must") {
  const Value schema = *json::parse(
      R"({"type": "object", "properties": {"a": {"enum": ["x", "y"]}, "n": {"type": "integer",
      "minimum": 0, "maximum": 5}, "s": {"type": "string", "maxLength": 2}, "l": {"type":
      "array", "items": {"type": "boolean"}, "maxItems": 1}}, "required": ["a"],
      "additionalProperties": false})");
  CHECK(test::schema_check(schema, *json::parse(R"({"a": "x", "n": 5, "s": "ab", "l": [true]})"))
            .empty());
  for (const char* bad :
       {R"({"n": 1})", R"({"a": "z"})", R"({"a": "x", "n": 6})", R"({"a": "x", "n": 1.5})",
        R"({"a": "x", "s": "abc"})", R"({"a": "x", "l": [true, false]})", R"({"a": "x", "l": [1]})",
        R"({"a": "x", "b": 1})", R"([1])"}) {
    CAPTURE(bad);
    CHECK_FALSE(test::schema_check(schema, *json::parse(bad)).empty());
  }
}

TEST_CASE("decoder questions: label logits equal a fresh forward of the whole prompt") {
  Fixture fx(tiny_gguf(), "ref", 2048, 4);
  check_questions(fx, R"({
    "system": "You are the decision engine of a small test device; answer with care.",
    "states": [{"temp": 21.5, "door": "open"}, "plain text state", [1, 2, 3]],
    "questions": {
      "act": {"type": "choice", "instructions": "What now?",
              "criteria": {"wait": "do nothing", "close": "close the door", "alarm": null},
              "option_order": [2, 0, 1]},
      "level": {"type": "score", "instructions": "How warm?", "criteria": ["cold", "ok", "hot"]},
      "open": {"type": "noul", "instructions": "Is the door open?"}
    }})",
                  1e-4, 1e-5);
}

TEST_CASE("decoder questions: the result shape, the gate, refusals") {
  Fixture fx(tiny_gguf(), "auto", 1024, 4);
  const std::string body = R"({"state": {"x": 1}, "min_confidence": 0.999, "questions": {
      "q": {"type": "choice", "instructions": "Pick", "criteria": ["a", "b"]}}})";
  auto out = fx.decide(parse(body), {});
  REQUIRE(out.is_ok());
  const Value* a = out->find("answers")->find("q");
  CHECK(a->find("abstention")->as_string() == "abstained");
  CHECK(a->find("low_confidence") != nullptr);
  // 27 options: refused when the request is read.
  Value crit = Value::array();
  for (int i = 0; i < 27; ++i) crit.push(Value::string("o" + std::to_string(i)));
  Value q = Value::object();
  q.set("type", Value::string("choice"));
  q.set("instructions", Value::string("Pick"));
  q.set("criteria", crit);
  Value qs = Value::object();
  qs.set("q", q);
  Value b = Value::object();
  b.set("state", Value::string("s"));
  b.set("questions", qs);
  auto r = runtime::parse_decoder_request(json::dump(b));
  REQUIRE(!r.is_ok());
  CHECK(r.status().code() == StatusCode::kRequestUnprocessable);
  CHECK(std::string(r.status().message()).find("at most 26") != std::string::npos);
  auto sl = runtime::parse_decoder_request(
      R"({"state": "s", "shortlist": true, "questions": {"q": {"type": "noul", "instructions": "x"}}})");
  CHECK(sl.status().code() == StatusCode::kRequestUnprocessable);
}

TEST_CASE("decoder schema decisions validate: the examples, greedy and sampled") {
  Fixture fx(tiny_gguf(), "auto", 4096, 16);
  for (const char* name :
       {"smart-home-hub.json", "edge-quality-inspection.json", "industrial-alarm.json"}) {
    CAPTURE(std::string(name));
    auto body = json::parse(read_text(examples_dir() + name));
    REQUIRE(body.is_ok());
    // The random model writes long strings: a budget that holds the longest canonical text.
    const Value b = with(*body, "max_tokens", Value::integer(1500));
    const runtime::DecoderRequest req = parse(json::dump(b));
    for (int sampled = 0; sampled < 2; ++sampled) {
      runtime::DecoderDecideOptions o;
      if (sampled) o.sampler = {.temperature = 1.0f, .top_k = 0, .top_p = 0.95f, .seed = 7};
      auto r = fx.decide(req, o);
      REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
      check_schema_result(*r, *body->find("schema"));
      CHECK(r->find("fallback")->as_bool() == false);
      // A field per enum / boolean property, named by its key.
      size_t slots = 0;
      for (const auto& p : body->find("schema")->find("properties")->members())
        if (p.value.find("enum") || (p.value.find("type") && p.value.find("type")->is_string() &&
                                     p.value.find("type")->as_string() == "boolean")) {
          ++slots;
          CHECK_MESSAGE(r->find("fields")->find(p.key) != nullptr, p.key);
        }
      CHECK(r->find("fields")->members().size() == slots);
      CHECK(fx.dec->cache->seq_length(0) == 0);
    }
  }
  // Array items are named by index; a mixed entry (a possibly empty array) still scores items.
  const runtime::DecoderRequest arr = parse(R"({"state": "s", "max_tokens": 400, "schema": {
      "type": "object", "properties": {
        "tags": {"type": "array", "items": {"enum": ["red", "green"]}, "maxItems": 3},
        "rooms": {"type": "array", "items": {"type": "object", "properties": {
          "on": {"type": "boolean"}}}, "minItems": 2, "maxItems": 2}}}})");
  auto r = fx.decide(arr, {});
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  check_schema_result(*r, arr.schema_request.schema);
  const Value* fields = r->find("fields");
  CHECK(fields->find("rooms[0].on") != nullptr);
  CHECK(fields->find("rooms[1].on") != nullptr);
  const size_t tags = r->find("decision")->find("tags")->items().size();
  for (size_t i = 0; i < tags; ++i)
    CHECK_MESSAGE(fields->find("tags[" + std::to_string(i) + "]") != nullptr, i);
}

TEST_CASE("decoder schema decisions validate on random schemas") {
  Fixture fx(tiny_gguf(), "auto", 4096, 16);
  int decided = 0, fell_back = 0;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    CAPTURE(seed);
    testing::Random rnd(seed);
    const Value schema_json = rnd.schema(0);
    auto schema = grammar::schema_parse(schema_json);
    if (!schema.is_ok()) continue;
    if (!fx.automata->get(schema_json).is_ok()) continue;  // e.g. too large
    std::optional<Value> inst = rnd.instance(*schema, schema->root, 3);
    Value body = Value::object();
    body.set("state", Value::string("seed " + std::to_string(seed)));
    body.set("schema", schema_json);
    body.set("max_tokens", Value::integer(600));
    if (inst) body.set("fallback", *inst);
    const runtime::DecoderRequest req = parse(json::dump(body));
    runtime::DecoderDecideOptions o;
    if (seed % 2) o.sampler = {.temperature = 1.0f, .top_k = 0, .top_p = 1.0f, .seed = seed};
    auto r = fx.decide(req, o);
    if (!inst && !r.is_ok()) {
      CHECK(r.status().code() == StatusCode::kLimitExceeded);
      continue;
    }
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string() << " schema " << json::dump(schema_json));
    check_schema_result(*r, schema_json);
    (r->find("fallback")->as_bool() ? fell_back : decided)++;
  }
  MESSAGE(decided << " decided, " << fell_back << " fell back");
  CHECK(decided >= 12);
}

TEST_CASE("decoder schema: fallback, default, refusals, needs_review") {
  Fixture fx(tiny_gguf(), "auto", 2048, 16);
  auto body = json::parse(read_text(examples_dir() + "industrial-alarm.json"));
  REQUIRE(body.is_ok());
  // max_tokens 1: the forced `{"` already needs more: the request's fallback, flagged.
  auto r = fx.decide(parse(json::dump(with(*body, "max_tokens", Value::integer(1)))), {});
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  CHECK(r->find("fallback")->as_bool());
  CHECK(*r->find("decision") == *body->find("fallback"));
  CHECK(r->find("fields")->members().empty());
  // Without a fallback: the schema's default; with neither, an error naming the budget.
  Value no_fb = *body;
  no_fb.members().erase(std::remove_if(no_fb.members().begin(), no_fb.members().end(),
                                       [](const json::Member& m) { return m.key == "fallback"; }),
                        no_fb.members().end());
  no_fb.set("max_tokens", Value::integer(1));
  auto none = fx.decide(parse(json::dump(no_fb)), {});
  REQUIRE(!none.is_ok());
  CHECK(none.status().code() == StatusCode::kLimitExceeded);
  CHECK(std::string(none.status().message()).find("max_tokens 1") != std::string::npos);
  CHECK(fx.dec->cache->seq_length(0) == 0);
  Value schema = *body->find("schema");
  schema.set("default", *body->find("fallback"));
  auto def = fx.decide(parse(json::dump(with(no_fb, "schema", schema))), {});
  REQUIRE(def.is_ok());
  CHECK(*def->find("decision") == *body->find("fallback"));
  // An invalid fallback (or default) is a request error.
  Value bad = *body->find("fallback");
  bad.set("load_pct", Value::integer(150));
  auto refused = runtime::parse_decoder_request(json::dump(with(*body, "fallback", bad)));
  REQUIRE(!refused.is_ok());
  CHECK(refused.status().code() == StatusCode::kRequestUnprocessable);
  CHECK(std::string(refused.status().message()).find("fallback") != std::string::npos);
  schema.set("default", bad);
  CHECK(!runtime::parse_decoder_request(json::dump(with(no_fb, "schema", schema))).is_ok());
  // needs_review under a gate no field reaches, none without a gate.
  Value gated =
      with(with(*body, "max_tokens", Value::integer(1000)), "min_confidence", Value::number(0.999));
  auto g = fx.decide(parse(json::dump(gated)), {});
  REQUIRE(g.is_ok());
  REQUIRE(!g->find("fields")->members().empty());
  for (const auto& f : g->find("fields")->members()) CHECK(f.value.find("needs_review") != nullptr);
  auto ungated = fx.decide(parse(json::dump(with(*body, "max_tokens", Value::integer(1000)))), {});
  REQUIRE(ungated.is_ok());
  for (const auto& f : ungated->find("fields")->members())
    CHECK(f.value.find("needs_review") == nullptr);
}

TEST_CASE("decoder decisions on SmolLM2 (LAYA_SMOLLM2_GGUF)") {
  const std::string path = test::smollm2_or_skip();
  if (path.empty()) return;
  // The reused prefix equals recomputing each question's prompt with the same prefill steps and
  // the same cells. (Q4_1 re-quantizes activations to 8 bits before every matmul, so last-bit
  // differences, from another row tiling in a single prefill of the whole prompt or other cells
  // sharing an attention tile, grow to logit differences of ~0.2: tests/fixtures/gguf/README.md.
  // The prefix cache's restore is checked against fresh forwards on the tiny F32 model above.)
  Fixture fx(path, "auto", 1024, 0);
  check_questions(fx, read_text(examples_dir() + "decoder-questions.json"), 1e-5, 1e-5, true);
  auto body = json::parse(read_text(examples_dir() + "industrial-alarm.json"));
  REQUIRE(body.is_ok());
  auto r = fx.decide(parse(json::dump(*body)), {});
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  check_schema_result(*r, *body->find("schema"));
  CHECK(r->find("fallback")->as_bool() == false);
}

namespace {

// DecoderDecideOptions::clock_ms for tests: every read moves the time on by `step` ms.
struct StepClock {
  double t = 0, step = 0;
  static double read(void* ctx) {
    StepClock& c = *static_cast<StepClock*>(ctx);
    return c.t += c.step;
  }
  runtime::DecoderDecideOptions options() {
    runtime::DecoderDecideOptions o;
    o.clock_ms = read;
    o.clock_ctx = this;
    return o;
  }
};

Value without(Value body, const char* key) {
  auto& m = body.members();
  m.erase(std::remove_if(m.begin(), m.end(), [&](const json::Member& x) { return x.key == key; }),
          m.end());
  return body;
}

}  // namespace

TEST_CASE("decoder schema: deadline_ms overruns on an injected clock") {
  Fixture fx(tiny_gguf(), "auto", 2048, 16);
  auto example = json::parse(read_text(examples_dir() + "industrial-alarm.json"));
  REQUIRE(example.is_ok());
  const Value fallback = *example->find("fallback");
  const Value body =
      with(with(*example, "max_tokens", Value::integer(1000)), "deadline_ms", Value::integer(50));

  // A clock that stands still: the deadline never passes and the model's decision comes back.
  StepClock frozen;
  auto in_time = fx.decide(parse(json::dump(body)), frozen.options());
  REQUIRE_MESSAGE(in_time.is_ok(), in_time.status().to_string());
  check_schema_result(*in_time, *example->find("schema"));
  CHECK(in_time->find("fallback")->as_bool() == false);
  const int64_t tokens = in_time->find("usage")->find("output_tokens")->as_int64().value();
  // 1 ms a read, a deadline of 4 ms: a few appends (the clock is read once before each, and for
  // the prefill's timing), then the decision stops part way and returns the request's fallback,
  // flagged, without fields.
  StepClock ms{0, 1};
  const Value mid_body = with(body, "deadline_ms", Value::integer(4));
  auto mid = fx.decide(parse(json::dump(mid_body)), ms.options());
  REQUIRE_MESSAGE(mid.is_ok(), mid.status().to_string());
  CHECK(mid->find("fallback")->as_bool());
  CHECK(*mid->find("decision") == fallback);
  CHECK(mid->find("fields")->members().empty());
  const int64_t mid_tokens = mid->find("usage")->find("output_tokens")->as_int64().value();
  CHECK(mid_tokens > 0);
  CHECK(mid_tokens < tokens);
  CHECK(fx.dec->cache->seq_length(0) == 0);

  // 1 s a read: past the deadline before the first token.
  StepClock fast{0, 1000};
  auto late = fx.decide(parse(json::dump(body)), fast.options());
  REQUIRE_MESSAGE(late.is_ok(), late.status().to_string());
  CHECK(late->find("fallback")->as_bool());
  CHECK(*late->find("decision") == fallback);
  CHECK(late->find("usage")->find("output_tokens")->as_int64() == 0);

  // No fallback in the request: the schema's default, flagged.
  Value schema = *example->find("schema");
  schema.set("default", fallback);
  const Value no_fb = without(body, "fallback");
  StepClock fast2{0, 1000};
  auto def = fx.decide(parse(json::dump(with(no_fb, "schema", schema))), fast2.options());
  REQUIRE_MESSAGE(def.is_ok(), def.status().to_string());
  CHECK(def->find("fallback")->as_bool());
  CHECK(*def->find("decision") == fallback);

  // Neither: kDeadlineExceeded naming the deadline (a token budget overrun stays
  // kLimitExceeded, checked above).
  StepClock fast3{0, 1000};
  auto none = fx.decide(parse(json::dump(no_fb)), fast3.options());
  REQUIRE(!none.is_ok());
  CHECK(none.status().code() == StatusCode::kDeadlineExceeded);
  CHECK(std::string(none.status().message()).find("deadline_ms 50") != std::string::npos);
  CHECK(fx.dec->cache->seq_length(0) == 0);
}

namespace {

// log softmax(logits)[id] over the ids `mask` allows (f32 [vocab] logits).
double masked_log_softmax(const std::vector<float>& logits, const uint64_t* mask, int32_t id) {
  double m = -INFINITY, sum = 0;
  const size_t V = logits.size();
  auto allowed = [&](size_t t) { return (mask[t / 64] >> (t % 64)) & 1; };
  for (size_t t = 0; t < V; ++t)
    if (allowed(t)) m = std::max(m, double{logits[t]});
  for (size_t t = 0; t < V; ++t)
    if (allowed(t)) sum += std::exp(double{logits[t]} - m);
  return double{logits[static_cast<size_t>(id)]} - m - std::log(sum);
}

}  // namespace

TEST_CASE("decoder schema: a multi-token option's log P is the sum over its tokens") {
  // "cool" and "cooling_fan" share their first tokens, so the first token alone cannot tell them
  // apart; every option text is several tokens of the tiny byte-level vocabulary.
  Fixture fx(tiny_gguf(), "ref", 2048, 0);
  const std::string body = R"({"state": {"temp_c": 31.5}, "max_tokens": 100, "schema": {
      "type": "object", "properties": {"fan": {"enum": ["cool", "cooling_fan", "off"]}},
      "required": ["fan"]}})";
  const runtime::DecoderRequest req = parse(body);
  const Value& schema = req.schema_request.schema;
  auto ta = fx.automata->get(schema);
  REQUIRE(ta.is_ok());
  const grammar::CharAutomaton& chars = (*ta)->chars();
  auto prompt = runtime::schema_prompt(fx.text, req.states[0], schema, req.system);
  REQUIRE(prompt.is_ok());

  // The forced text up to the slot ({"fan": ), tokenized as the decider appends it.
  std::string forced;
  int32_t f = grammar::CharAutomaton::start();
  while (chars.entry_slot(f) < 0 && chars.forced_byte(f) >= 0) {
    forced.push_back(static_cast<char>(chars.forced_byte(f)));
    f = chars.next(f, static_cast<uint8_t>(forced.back()));
  }
  REQUIRE(chars.entry_slot(f) >= 0);
  std::vector<int32_t> context = prompt->ids, forced_ids;
  REQUIRE(fx.tokenizer->encode(forced, {}, &forced_ids).is_ok());
  context.insert(context.end(), forced_ids.begin(), forced_ids.end());
  grammar::GrammarMatcher at_slot(ta->get());
  for (int32_t id : forced_ids) REQUIRE(at_slot.accept(id).is_ok());

  // Each option's log P from fresh forwards of the context plus its tokens so far, and its first
  // token's term alone.
  const std::vector<std::string>& texts =
      chars.slots()[static_cast<size_t>(chars.entry_slot(f))].texts;
  REQUIRE(texts.size() == 3);
  std::vector<double> logp, first;
  std::vector<std::vector<int32_t>> option_ids;
  for (const std::string& t : texts) {
    CAPTURE(t);
    std::vector<int32_t> ids;
    REQUIRE(fx.tokenizer->encode(t, {}, &ids).is_ok());
    REQUIRE(ids.size() >= 2);
    grammar::GrammarMatcher walk = at_slot;
    std::vector<int32_t> ctx = context;
    double sum = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      const double term = masked_log_softmax(fx.forward_last(ctx), walk.mask(), ids[i]);
      if (i == 0) first.push_back(term);
      sum += term;
      REQUIRE(walk.accept(ids[i]).is_ok());
      ctx.push_back(ids[i]);
    }
    logp.push_back(sum);
    option_ids.push_back(ids);
  }
  REQUIRE(texts[0] == "\"cool\"");
  REQUIRE(texts[1] == "\"cooling_fan\"");
  CHECK(option_ids[0][0] == option_ids[1][0]);
  CHECK(first[0] == first[1]);
  auto softmax_d = [](const std::vector<double>& z) {
    const double m = *std::max_element(z.begin(), z.end());
    std::vector<double> p;
    double s = 0;
    for (double v : z) s += p.emplace_back(std::exp(v - m));
    for (double& v : p) v /= s;
    return p;
  };
  const std::vector<double> want = softmax_d(logp), first_only = softmax_d(first);

  // The decider's probabilities (T = 1, rounded to 4 digits) are the sums', not the first
  // tokens'; its pick is the most likely option.
  auto r = fx.decide(req, {});
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  const Value* probs = r->find("fields")->find("fan")->find("probabilities");
  REQUIRE(probs != nullptr);
  double apart = 0;
  for (size_t o = 0; o < texts.size(); ++o) {
    CAPTURE(texts[o]);
    REQUIRE(probs->find(texts[o]) != nullptr);
    CHECK(std::fabs(probs->find(texts[o])->as_double() - want[o]) <= 2e-4);
    apart = std::max(apart, std::fabs(want[o] - first_only[o]));
  }
  CHECK(apart > 1e-2);  // the first token alone would give other probabilities
  const size_t best =
      static_cast<size_t>(std::max_element(want.begin(), want.end()) - want.begin());
  CHECK(json::dump(*r->find("decision")->find("fan")) == texts[best]);
}
