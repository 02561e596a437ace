// The decision path with our tokenizer (runtime/text/tokenizer) on the real ModernBERT tokenizer.json,
// against what upstream recorded:
//  - laya-golden/typed-decisions (real checkpoint, laya 0.4.0): every token row, marker and usage
//    block exact, and the whole result (answers from the recorded logits, usage) exact;
//  - laya-decisions/cases.json (laya 0.4.15, seeded logits): the same requests as test_decision.cpp
//    but tokenized by us instead of replaying HF's encodings.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "runtime/decisions/decision.h"
#include "runtime/decisions/model_tokenizer.h"
#include "tests/runtime/decision_replay.h"
#include "tests/runtime/fixture_util.h"

namespace laya::decision {
namespace {

using json::Value;

// Answers the rows with the logits recorded for them; checks the rows on the way.
class GoldenNetwork : public Network {
 public:
  explicit GoldenNetwork(const Value& c) : c_(c) {}
  Status forward(std::span<const Row> rows, int K, float* logits, float* act) override {
    const auto& pq = c_.find("per_question")->items();
    const auto& lg = c_.find("logits")->items();
    const auto& al = c_.find("act_logits")->items();
    REQUIRE(rows.size() == pq.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      std::vector<int32_t> ids, markers;
      for (const Value& v : pq[r].find("input_ids")->items())
        ids.push_back(static_cast<int32_t>(*v.as_int64()));
      for (const Value& v : pq[r].find("markers")->items())
        markers.push_back(static_cast<int32_t>(*v.as_int64()));
      const bool same = rows[r].ids == ids && rows[r].markers == markers;
      CHECK_MESSAGE(same, "row " << r << " differs");
      rows_exact += same;
      ++rows_total;
      const auto& row = lg[r].items();
      for (size_t i = 0; i < row.size() && static_cast<int>(i) < K; ++i)
        logits[r * static_cast<size_t>(K) + i] = static_cast<float>(row[i].as_double());
      act[2 * r] = static_cast<float>(al[r].items()[0].as_double());
      act[2 * r + 1] = static_cast<float>(al[r].items()[1].as_double());
    }
    return Status::ok();
  }
  Status embed(const std::vector<std::string>&, std::vector<std::vector<float>>*) override {
    return Status(StatusCode::kUnsupported, "no embeddings recorded");
  }
  int rows_exact = 0, rows_total = 0;

 private:
  const Value& c_;
};

TEST_CASE("golden typed-decisions: rows, markers, usage and results exact with our tokenizer") {
  Result<ModelTokenizer> tok = tokenizer_from_file(test::fixture_path("modernbert/tokenizer.json"));
  REQUIRE_MESSAGE(tok.is_ok(), tok.status().to_string());
  CHECK(tok->specials.cls == 50281);
  CHECK(tok->specials.sep == 50282);
  CHECK(tok->specials.mask == 50284);
  CHECK(tok->specials.mask_text == "[MASK]");
  const Value meta = test::fixture_json("laya-golden/typed-decisions/meta.json");
  DecisionSettings settings;
  settings.max_len = 1024;
  settings.head_max_len = 256;
  const Value& cfg = *meta.find("config");
  for (int i = 0; i < 3; ++i)
    settings.temperatures.temperature[i] =
        cfg.find("temperature")->items()[static_cast<size_t>(i)].as_double();
  for (const auto& m : cfg.find("temperature_by_options")->members())
    settings.temperatures.by_options.emplace_back(m.key, m.value.as_double());
  int cases = 0, results_exact = 0, usage_exact = 0, rows_exact = 0, rows_total = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(test::fixture_path("laya-golden/typed-decisions"))) {
    const std::string file = e.path().filename().string();
    if (file.rfind("case_", 0) != 0) continue;
    CAPTURE(file);
    const Value c = test::fixture_json("laya-golden/typed-decisions/" + file);
    Value body = Value::object();
    body.set("state", *c.find("state"));
    body.set("questions", *c.find("questions"));
    Result<DecisionRequest> req = parse_request(body);
    REQUIRE(req.is_ok());
    GoldenNetwork net(c);
    Result<Value> r = test::decision_json(*req, *tok->encoder, tok->specials, settings, net);
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
    ++cases;
    rows_exact += net.rows_exact;
    rows_total += net.rows_total;
    const std::string want = json::dump(*c.find("result"));
    CHECK_MESSAGE(json::dump(*r) == want, "\n want " << want << "\n have " << json::dump(*r));
    results_exact += json::dump(*r) == want;
    usage_exact += json::dump(*r->find("usage")) == json::dump(*c.find("result")->find("usage"));
  }
  MESSAGE("golden typed-decisions with our tokenizer: rows "
          << rows_exact << " / " << rows_total << ", usage " << usage_exact << " / " << cases
          << ", results " << results_exact << " / " << cases);
  CHECK(cases == 10);
}

TEST_CASE("SDK cases with our tokenizer instead of HF's recorded encodings") {
  Result<ModelTokenizer> tok = tokenizer_from_file(test::fixture_path("modernbert/tokenizer.json"));
  REQUIRE(tok.is_ok());
  const Value doc = test::fixture_json("laya-decisions/cases.json");
  int n = 0, exact = 0;
  for (const Value& c : doc.find("cases")->items()) {
    if (c.find("error")) continue;
    CAPTURE(c.find("name")->as_string());
    Result<DecisionRequest> req = parse_request(*c.find("request"));
    REQUIRE(req.is_ok());
    test::ReplayNetwork net(c);
    Result<Value> r = test::decision_json(*req, *tok->encoder, tok->specials,
                                          test::settings_from(*c.find("settings")), net);
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
    CHECK(net.rows_exact() == net.rows_recorded());
    ++n;
    exact += net.rows_exact() == net.rows_recorded();
  }
  MESSAGE("SDK cases tokenized by us: " << exact << " / " << n << " with every row exact");
}

}  // namespace
}  // namespace laya::decision
