// runtime/decisions/calibration.h against tests/fixtures/laya-decisions/calibration.json
// (tools/reference/make_calibration_fixture.py): temperatures from an independent minimiser (an
// exhaustive numpy grid over log T, float64) to 1e-4 relative, NLL / accuracy / ECE as numpy and
// upstream's ece_score compute them, and label targets as the laya SDK's target_from_expected reads
// them.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "runtime/decisions/calibration.h"
#include "tests/runtime/fixture_util.h"

namespace laya::decision {
namespace {

using json::Value;

QType type_of(const std::string& s) {
  return s == "choice" ? QType::kChoice : s == "score" ? QType::kScore : QType::kNoul;
}

std::vector<CalibrationRecord> records_of(const Value& list) {
  std::vector<CalibrationRecord> out;
  for (const Value& r : list.items()) {
    CalibrationRecord rec;
    rec.type = type_of(r.find("type")->as_string());
    for (const Value& z : r.find("logits")->items())
      rec.logits.push_back(static_cast<float>(z.as_double()));
    for (const Value& t : r.find("target")->items()) rec.target.push_back(t.as_double());
    out.push_back(std::move(rec));
  }
  return out;
}

void check_rel(double got, double want, double tol, const std::string& what) {
  CHECK_MESSAGE(std::fabs(got - want) <= tol * std::fabs(want),
                what << ": " << got << " vs " << want);
}

TEST_CASE("calibration: fitted temperatures and metrics match the reference") {
  const Value fx = test::fixture_json("laya-decisions/calibration.json");
  const std::vector<CalibrationRecord> recs = records_of(*fx.find("records"));
  CalibrationOptions opts;
  opts.min_type = *fx.find("min_type")->as_int64();
  opts.min_bucket = *fx.find("min_bucket")->as_int64();
  Result<CalibrationFit> fit = fit_calibration(recs, opts);
  REQUIRE(fit.is_ok());

  const Value& want = *fx.find("fits");
  REQUIRE(fit->fits.size() == want.members().size());
  for (const auto& entry : fit->fits) {
    const std::string& name = entry.first;
    const TemperatureFit& f = entry.second;
    const Value* w = want.find(name);
    REQUIRE_MESSAGE(w != nullptr, "unexpected fit " << name);
    check_rel(f.fitted, w->as_double(), 1e-4, name);
    CHECK(f.applied == clamp_temperature(f.fitted));
    CHECK(f.n == *fx.find("counts")->find(name)->as_int64());
  }
  const Value& counts = *fx.find("counts");
  CHECK(fit->counts.size() == counts.members().size());
  for (const auto& entry : fit->counts)
    CHECK(entry.second == *counts.find(entry.first)->as_int64());
  // The types' applied values, and only the fitted buckets, in the config.
  for (int t = 0; t < 3; ++t) {
    const Value* w = want.find(qtype_name(static_cast<QType>(t)));
    const double expect = w ? clamp_temperature(w->as_double()) : 1.0;
    check_rel(fit->temps.temperature[t], expect, 1e-4, qtype_name(static_cast<QType>(t)));
  }
  for (const auto& entry : fit->temps.by_options) {
    REQUIRE(want.find(entry.first) != nullptr);
    check_rel(entry.second, clamp_temperature(want.find(entry.first)->as_double()), 1e-4,
              entry.first);
  }
  CHECK(fit->temps.by_options.size() + 3 == want.members().size());

  const Value& m = *fx.find("metrics");
  const CalibrationMetrics before = calibration_metrics(recs, Temperatures{}, 10);
  const CalibrationMetrics after = calibration_metrics(recs, fit->temps, 10);
  CHECK(before.n == static_cast<int64_t>(recs.size()));
  for (const auto& entry : {std::pair{before, "before"}, std::pair{after, "after"}}) {
    const CalibrationMetrics& got = entry.first;
    const std::string key = entry.second;
    const Value& w = *m.find(key);
    check_rel(got.nll, w.find("nll")->as_double(), 1e-6, key + " nll");
    check_rel(got.accuracy, w.find("accuracy")->as_double(), 1e-12, key + " acc");
    check_rel(got.ece, w.find("ece")->as_double(), 1e-6, key + " ece");
  }
  CHECK(after.nll < before.nll);

  // The written config reads back as the same temperatures.
  const Value cfg = decision_config(fit->temps);
  REQUIRE(cfg.find("temperature")->items().size() == 3);
  for (int t = 0; t < 3; ++t)
    CHECK(cfg.find("temperature")->items()[t].as_double() == fit->temps.temperature[t]);
  CHECK(cfg.find("temperature_by_options")->members().size() == fit->temps.by_options.size());
}

TEST_CASE("calibration: optima at the band's ends and flat objectives") {
  const Value fx = test::fixture_json("laya-decisions/calibration.json");
  for (const Value& e : fx.find("edge")->items()) {
    const std::string name = e.find("name")->as_string();
    const std::vector<CalibrationRecord> recs = records_of(*e.find("records"));
    std::vector<const CalibrationRecord*> ptrs;
    for (const CalibrationRecord& r : recs) ptrs.push_back(&r);
    const TemperatureFit f = fit_temperature(ptrs);
    check_rel(f.fitted, e.find("fitted")->as_double(), 1e-4, name);
    CHECK(f.applied == clamp_temperature(f.fitted));
    CHECK(f.n == static_cast<int64_t>(recs.size()));
  }
}

TEST_CASE("calibration: label targets as the SDK reads expected answers") {
  const Value fx = test::fixture_json("laya-decisions/calibration.json");
  int n = 0;
  for (const Value& c : fx.find("labels")->items()) {
    const auto& qm = c.find("question")->members()[0];
    Result<Question> q = parse_question(qm.key, qm.value);
    REQUIRE(q.is_ok());
    const Value& label = *c.find("label");
    Result<std::vector<double>> t = label_target(*q, label);
    const Value& want = *c.find("target");
    INFO(qm.key << " label " << json::dump(label));
    if (want.is_null()) {
      CHECK(!t.is_ok());
      if (!t.is_ok()) {
        CHECK(t.status().code() == StatusCode::kInvalidArgument);
        CHECK(std::string(t.status().message()).find(qm.key) != std::string::npos);
      }
      continue;
    }
    REQUIRE(t.is_ok());
    REQUIRE(t->size() == want.items().size());
    for (size_t i = 0; i < t->size(); ++i) CHECK((*t)[i] == want.items()[i].as_double());
    ++n;

    // With an option_order the target follows the slots: slot s shows option order[s].
    Value def = qm.value;
    const size_t k = t->size();
    Value order = Value::array();
    for (size_t s = 0; s < k; ++s) order.push(Value::integer(static_cast<int64_t>((s + 1) % k)));
    def.set("option_order", order);
    Result<Question> qo = parse_question(qm.key, def);
    REQUIRE(qo.is_ok());
    Result<std::vector<double>> to = label_target(*qo, label);
    REQUIRE(to.is_ok());
    for (size_t s = 0; s < k; ++s) CHECK((*to)[s] == (*t)[(s + 1) % k]);
  }
  CHECK(n > 20);
}

TEST_CASE("calibration: invalid records and options are refused") {
  CalibrationRecord ok{QType::kChoice, {1.0f, 2.0f}, {0.0, 1.0}};
  auto refused = [](std::vector<CalibrationRecord> recs, const char* what) {
    Result<CalibrationFit> f = fit_calibration(recs);
    REQUIRE(!f.is_ok());
    CHECK(f.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(std::string(f.status().message()).find(what) != std::string::npos,
                  f.status().message());
  };
  CalibrationRecord r = ok;
  r.logits.clear();
  r.target.clear();
  refused({ok, r}, "record 1: no options");
  r = ok;
  r.target = {1.0};
  refused({r}, "differ in length");
  r = ok;
  r.logits[0] = NAN;
  refused({r}, "logit is not finite");
  r = ok;
  r.target = {-0.5, 1.5};
  refused({r}, "negative");
  r = ok;
  r.target = {0.5, 0.4};
  refused({r}, "sum to 1");
  CalibrationOptions bad;
  bad.min_bucket = 0;
  CHECK(!fit_calibration(std::vector<CalibrationRecord>{ok}, bad).is_ok());
  // Too few records: nothing is fitted, every T stays 1.
  Result<CalibrationFit> few = fit_calibration(std::vector<CalibrationRecord>{ok, ok});
  REQUIRE(few.is_ok());
  CHECK(few->fits.empty());
  CHECK(few->temps.temperature[0] == 1.0);
  CHECK(std::isnan(calibration_metrics({}, Temperatures{}).nll));
}

}  // namespace
}  // namespace laya::decision
