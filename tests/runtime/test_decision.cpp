// The decision path around the network (request checks, rows, answers, usage, gate, batches,
// schema, shortlist) against what the upstream SDK did with the same requests:
//  - tests/fixtures/laya-decisions/cases.json (tools/reference/make_decision_cases.py): 86
//    requests, answered by the SDK with seeded logits in place of its network, or refused;
//  - tests/fixtures/laya-golden (recorded by upstream with the real checkpoints): answers from the
//    recorded logits, serialization and option rendering.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "runtime/decisions/answers.h"
#include "runtime/decisions/decision.h"
#include "runtime/decisions/request.h"
#include "tests/runtime/decision_replay.h"
#include "tests/runtime/fixture_util.h"
#include "tools/http_status.h"

namespace laya::decision {
namespace {

using json::Value;

// Compares JSON texts; numbers under "scores" (full-precision cosines, whose last bits depend on
// the BLAS summation order) within 1e-12.
bool same_result(const Value& a, const Value& b, const std::string& key = "") {
  if (key == "scores" && a.is_array() && b.is_array()) {
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i)
      if (std::abs(a.items()[i].as_double() - b.items()[i].as_double()) > 1e-12) return false;
    return true;
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    if (a.members().size() != b.members().size()) return false;
    for (size_t i = 0; i < a.members().size(); ++i)
      if (a.members()[i].key != b.members()[i].key ||
          !same_result(a.members()[i].value, b.members()[i].value, a.members()[i].key))
        return false;
    return true;
  }
  if (a.is_array()) {
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i)
      if (!same_result(a.items()[i], b.items()[i])) return false;
    return true;
  }
  return json::dump(a) == json::dump(b);
}

TEST_CASE("86 requests answered or refused exactly as the upstream SDK did") {
  const Value doc = test::fixture_json("laya-decisions/cases.json");
  const SpecialTokens sp = test::modernbert_specials();
  int results = 0, results_exact = 0, errors = 0, errors_exact = 0;
  size_t rows = 0, rows_exact = 0;
  for (const Value& c : doc.find("cases")->items()) {
    const std::string name = c.find("name")->as_string();
    CAPTURE(name);
    Result<DecisionRequest> req = parse_request(*c.find("request"));
    if (const Value* err = c.find("error")) {
      ++errors;
      const int want_status = static_cast<int>(*err->find("status")->as_int64());
      const std::string want = err->find("detail")->as_string();
      Status got = req.status();
      if (req.is_ok()) {
        // Refused while building rows (options that do not fit max_len).
        test::TableEncoder tok(c.find("encodings"));
        test::ReplayNetwork net(c);
        Result<Value> r =
            test::decision_json(*req, tok, sp, test::settings_from(*c.find("settings")), net);
        REQUIRE_MESSAGE(!r.is_ok(), name << " was accepted; upstream answered " << want_status);
        got = r.status();
      }
      const std::string msg = got.message();
      // Status keeps at most 383 bytes of a message ("..." marks the cut).
      const bool same_msg = msg.size() < Status::kMaxMessage
                                ? msg == want
                                : want.compare(0, msg.size() - 3, msg, 0, msg.size() - 3) == 0;
      CHECK_MESSAGE(tools::http_status(got.code()) == want_status, msg);
      CHECK_MESSAGE(same_msg, "\n want " << want << "\n have " << msg);
      errors_exact += same_msg && tools::http_status(got.code()) == want_status;
      continue;
    }
    REQUIRE_MESSAGE(req.is_ok(), req.status().to_string());
    test::TableEncoder tok(c.find("encodings"));
    test::ReplayNetwork net(c);
    Result<Value> r =
        test::decision_json(*req, tok, sp, test::settings_from(*c.find("settings")), net);
    REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
    CHECK(net.rows_seen() == net.rows_recorded());
    rows += net.rows_recorded();
    rows_exact += net.rows_exact();
    ++results;
    const bool same = same_result(*r, *c.find("result"));
    CHECK_MESSAGE(same,
                  "\n want " << json::dump(*c.find("result")) << "\n have " << json::dump(*r));
    results_exact += same;

    // --explain: the same rows, and the result's usage.
    Result<Value> ex =
        explain_decision(*req, tok, sp, test::settings_from(*c.find("settings")), &net);
    REQUIRE_MESSAGE(ex.is_ok(), ex.status().to_string());
    CHECK(ex->find("rows")->items().size() == net.rows_recorded());
    if (!req->schema) {
      const Value& res = *c.find("result");
      if (res.is_array()) {
        for (size_t i = 0; i < res.items().size(); ++i)
          CHECK(json::dump(ex->find("usage")->items()[i]) ==
                json::dump(*res.items()[i].find("usage")));
      } else {
        CHECK(json::dump(*ex->find("usage")) == json::dump(*res.find("usage")));
      }
    }
  }
  MESSAGE("SDK cases: results " << results_exact << " / " << results << " exact, rows "
                                << rows_exact << " / " << rows << " exact, refusals "
                                << errors_exact << " / " << errors << " exact");
  CHECK(results == 30);
  CHECK(errors == 56);
}

// The golden cases: the request, the checkpoint's temperatures (unclamped, so choice:11+ = 0.1006
// exercises the clamp to 0.5), the recorded rows and logits.
struct GoldenRun {
  int answers = 0, answers_exact = 0;
};

void check_golden_dir(const std::string& dir, GoldenRun* run) {
  const Value meta = test::fixture_json(dir + "/meta.json");
  DecisionSettings settings;
  const Value& cfg = meta.find("config") ? *meta.find("config") : meta;
  settings.max_len = static_cast<int>(*meta.find("max_len")->as_int64());
  settings.head_max_len = static_cast<int>(*meta.find("head_max_len")->as_int64());
  for (int i = 0; i < 3; ++i)
    settings.temperatures.temperature[i] =
        cfg.find("temperature")->items()[static_cast<size_t>(i)].as_double();
  for (const auto& m : cfg.find("temperature_by_options")->members())
    settings.temperatures.by_options.emplace_back(m.key, m.value.as_double());
  for (const auto& entry : std::filesystem::directory_iterator(test::fixture_path(dir))) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("case_", 0) != 0) continue;
    const Value c = test::fixture_json(dir + "/" + file);
    CAPTURE(file);
    Value body = Value::object();
    body.set("state", *c.find("state"));
    body.set("questions", *c.find("questions"));
    Result<DecisionRequest> req = parse_request(body);
    REQUIRE_MESSAGE(req.is_ok(), req.status().to_string());
    // Serialization and option rendering (what the tokenizer is given).
    if (const Value* ser = c.find("serialized_state"))
      CHECK(serialize_state(*c.find("state")) == ser->as_string());
    const auto& pq = c.find("per_question")->items();
    REQUIRE(pq.size() == req->questions.size());
    std::vector<Row> rows;
    for (size_t j = 0; j < pq.size(); ++j) {
      const Question& q = req->questions[j];
      CHECK(pq[j].find("id")->as_string() == q.id);
      CHECK(pq[j].find("head_text")->as_string() ==
            std::string(qtype_name(q.type)) + " question: " +
                scrub_mask(q.instructions,
                           meta.find("special_tokens")
                               ? meta.find("special_tokens")->find("mask_token")->as_string()
                               : "[MASK]"));
      std::vector<std::string> options;
      for (const Value& o : pq[j].find("options")->items()) options.push_back(o.as_string());
      CHECK(options == q.options);
      Row r;
      r.qtype = q.type;
      for (const Value& v : pq[j].find("markers")->items())
        r.markers.push_back(static_cast<int32_t>(*v.as_int64()));
      for (const Value& v : pq[j].find("input_ids")->items())
        r.ids.push_back(static_cast<int32_t>(*v.as_int64()));
      rows.push_back(std::move(r));
    }
    // Answers from the recorded logits.
    const auto& lg = c.find("logits")->items();
    const int K = static_cast<int>(lg[0].items().size());
    std::vector<float> logits, act;
    for (const Value& row : lg)
      for (const Value& v : row.items()) logits.push_back(static_cast<float>(v.as_double()));
    for (const Value& row : c.find("act_logits")->items())
      for (const Value& v : row.items()) act.push_back(static_cast<float>(v.as_double()));
    Value answers = Value::object();
    for (size_t j = 0; j < rows.size(); ++j) {
      Answer a = compute_answer(req->questions[j], rows[j].markers.size(),
                                logits.data() + j * static_cast<size_t>(K), act.data() + j * 2,
                                settings.temperatures);
      answers.members().push_back({req->questions[j].id, answer_json(req->questions[j], a)});
    }
    const Value& want = *c.find("result")->find("answers");
    for (const auto& m : want.members()) {
      ++run->answers;
      const Value* have = answers.find(m.key);
      const bool same = have && json::dump(*have) == json::dump(m.value);
      CHECK_MESSAGE(same, m.key << "\n want " << json::dump(m.value) << "\n have "
                                << (have ? json::dump(*have) : "(none)"));
      run->answers_exact += same;
    }
    // input_tokens is the sum of the row lengths the network read.
    int64_t tokens = 0;
    for (const Row& r : rows) tokens += static_cast<int64_t>(r.ids.size());
    CHECK(tokens == *c.find("result")->find("usage")->find("input_tokens")->as_int64());
  }
}

TEST_CASE("golden: answers from the recorded logits of the real checkpoints") {
  GoldenRun typed, multi;
  check_golden_dir("laya-golden/typed-decisions", &typed);
  check_golden_dir("laya-golden/multilingual", &multi);
  MESSAGE("golden answers: typed-decisions " << typed.answers_exact << " / " << typed.answers
                                             << ", multilingual " << multi.answers_exact << " / "
                                             << multi.answers);
  CHECK(typed.answers == 17);
  CHECK(multi.answers == 17);
}

}  // namespace
}  // namespace laya::decision
