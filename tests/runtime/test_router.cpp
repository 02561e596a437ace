// runtime/decisions/router + lang: routing decisions against what the upstream SDK recorded and answers.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "runtime/decisions/lang.h"
#include "runtime/text/pystr.h"
#include "runtime/decisions/router.h"
#include "tests/runtime/fixture_util.h"
#include "tools/http_status.h"

namespace laya::decision {
namespace {

using json::Value;

Value member_or_null(const Value& obj, const char* key) {
  const Value* v = obj.find(key);
  return v ? *v : Value();
}

// Router(**router_kwargs).route(**route_kwargs) as {model, reason, detection, workflow}.
Result<Value> route_case(const Value& c) {
  RouterOptions opts;
  const Value& rk = *c.find("router_kwargs");
  for (const auto& m : rk.members()) {
    if (m.key == "default") {
      opts.default_model = m.value.as_string();
    } else if (m.key == "auto_task_detection") {
      opts.auto_task_detection = m.value.as_bool();
    } else if (m.key == "standalone_repos") {
      opts.standalone_repos = m.value.as_bool();
    } else if (m.key == "models") {
      for (const auto& mm : m.value.members())
        opts.models.emplace_back(mm.key, mm.value.as_string());
    } else if (m.key == "lang_guess") {
      opts.lang_guess = m.value.as_string();
    } else {
      FAIL("router_kwargs key not handled by the test: " << m.key);
    }
  }
  LAYA_ASSIGN_OR_RETURN(Router router, Router::create(opts));
  const Value& k = *c.find("route_kwargs");
  RouteQuery q;
  q.state = member_or_null(k, "state");
  q.questions = k.find("questions");
  q.model = member_or_null(k, "model");
  q.task = member_or_null(k, "task");
  q.lang = member_or_null(k, "lang");
  q.lang_guess = member_or_null(k, "lang_guess");
  q.explain = k.find("explain") && k.find("explain")->as_bool();
  LAYA_ASSIGN_OR_RETURN(Value d, router.route(q));
  Value out = Value::object();
  for (const char* key : {"model", "reason", "detection", "workflow"}) out.set(key, *d.find(key));
  return out;
}

TEST_CASE("every recorded route_probe case routes as upstream recorded it") {
  const Value probe = test::fixture_json("laya-golden/routing/route_probe.json");
  REQUIRE(probe.items().size() == 72);
  int exact = 0;
  for (const Value& c : probe.items()) {
    const std::string label = c.find("label")->as_string();
    Result<Value> got = route_case(c);
    REQUIRE_MESSAGE(got.is_ok(), label << ": " << got.status().to_string());
    const std::string want = json::dump(*c.find("decision"));
    const std::string have = json::dump(*got);
    CHECK_MESSAGE(have == want, label << "\n want " << want << "\n have " << have);
    exact += have == want;
  }
  MESSAGE("route_probe: " << exact << " / 72 exact");
}

TEST_CASE("analyse with explain matches the upstream SDK on the analyse probe") {
  // tools/reference/make_router_probe.py: laya.lang.analyse(state, explain=True) and
  // Router.route(...) over crafted states that reach every branch of the detector.
  const Value probe = test::fixture_json("laya-router/analyse_probe.json");
  int n = 0, exact = 0;
  for (const Value& c : probe.find("analyse")->items()) {
    const Value got = analyse_state(*c.find("state"), true);
    const std::string want = json::dump(*c.find("result"));
    const std::string have = json::dump(got);
    CHECK_MESSAGE(have == want, json::dump(*c.find("state"))
                                    << "\n want " << want << "\n have " << have);
    ++n;
    exact += have == want;
  }
  MESSAGE("analyse probe: " << exact << " / " << n << " exact");
  CHECK(n > 200);
}

TEST_CASE("route options: lang codes, lang_guess, defaults, tasks, registered names, explain") {
  const Value probe = test::fixture_json("laya-router/analyse_probe.json");
  int n = 0;
  for (const Value& c : probe.find("route")->items()) {
    Result<Value> got = route_case(c);
    REQUIRE_MESSAGE(got.is_ok(), json::dump(c) << ": " << got.status().to_string());
    const std::string want = json::dump(*c.find("decision"));
    const std::string have = json::dump(*got);
    CHECK_MESSAGE(have == want, json::dump(*c.find("route_kwargs"))
                                    << "\n want " << want << "\n have " << have);
    ++n;
  }
  CHECK(n == 26);
}

TEST_CASE("router errors name the problem with upstream's words and HTTP class") {
  Result<Router> r = Router::create();
  REQUIRE(r.is_ok());
  RouteQuery q;
  q.state = Value::string("hello");
  q.model = Value::string("englsh");
  Result<Value> d = r->route(q);
  REQUIRE(!d.is_ok());
  CHECK(d.status().code() == StatusCode::kRequestUnprocessable);
  CHECK(tools::http_status(d.status().code()) == 422);
  CHECK(std::string(d.status().message()) ==
        "unknown model 'englsh'; choose one of ['english', 'multilingual', 'typed-decisions'] (or "
        "an alias: ['decisions', 'default', 'en', 'laya', 'laya-multilingual', "
        "'laya-typed-decisions', 'ml', 'multi', 'typed', 'typed_decisions'])");
  RouterOptions bad;
  bad.default_model = "nope";
  CHECK(Router::create(bad).status().code() == StatusCode::kRequestUnprocessable);
  RouterOptions bad_name;
  bad_name.models = {{"Has Space", "/tmp/x"}};
  CHECK(Router::create(bad_name).status().code() == StatusCode::kRequestUnprocessable);
  const Value list = Value::array();
  q.model = Value();
  q.questions = &list;
  CHECK(r->route(q).status().code() == StatusCode::kRequestInvalid);
}

TEST_CASE("Python round / repr helpers agree with CPython on values it produced") {
  // round(x, 4) on exact binary ties rounds half to even; printf-style rounding would not.
  CHECK(py::round(0.03125, 4) == 0.0312);
  CHECK(py::round(0.09375, 4) == 0.0938);
  CHECK(py::round(2.675, 2) == 2.67);  // the binary value is below the tie
  CHECK(py::round(-0.00001, 4) == 0.0);
  CHECK(std::signbit(py::round(-0.00001, 4)));
  CHECK(py::round_int(2.5) == 2.0);
  CHECK(py::round_int(3.5) == 4.0);
  CHECK(py::repr(std::string_view("it's")) == "\"it's\"");
  CHECK(py::repr(std::string_view("a'b\"c")) == "'a\\'b\"c'");
  CHECK(py::repr(std::string_view("tab\there\x01\x7f")) == "'tab\\there\\x01\\x7f'");
  CHECK(py::repr(std::string_view("\xc2\xa0\xe2\x80\x8b\xe4\xb8\xad")) ==
        "'\\xa0\\u200b\xe4\xb8\xad'");
  CHECK(py::format_fixed(100.0 * 0.0926, 0) == "9");
  CHECK(py::encode(py::lower(py::decode("\xc4\xb0STANBUL \xce\xa3\xce\xa3"))) ==
        "i\xcc\x87stanbul \xcf\x83\xcf\x82");
}

}  // namespace
}  // namespace laya::decision
