// The decision path's overhead outside the network, per request: parse and validate the body,
// tokenize the state and the question heads, build the rows, turn logits into answers, usage and
// the gate, and serialize the result (everything `laya-run decide` does around `execute`).
//
//   build/bench/laya-bench-decision [--benchmark_repetitions=5 --benchmark_report_aggregates_only=true]
//
// Inputs: the recorded upstream golden requests (tests/fixtures/laya-golden/typed-decisions, the
// real ModernBERT tokenizer, max_len 1024 / head_max_len 256); the network is replaced by the
// recorded logits (a copy). Also the router alone (Router.route on each request's state).
// LAYA_FIXTURES selects the fixture directory (default tests/fixtures).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/json.h"
#include "runtime/laya/decision.h"
#include "runtime/laya/model_tokenizer.h"
#include "runtime/laya/router.h"

namespace {

using namespace laya;
using namespace laya::decision;

std::string fixtures() {
  const char* root = std::getenv("LAYA_FIXTURES");
  return root ? root : "tests/fixtures";
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The recorded logits stand in for the network.
class RecordedNetwork : public Network {
 public:
  explicit RecordedNetwork(const json::Value& c) {
    for (const auto& row : c.find("logits")->items()) {
      std::vector<float> v;
      for (const auto& x : row.items()) v.push_back(static_cast<float>(x.as_double()));
      logits_.push_back(std::move(v));
    }
    for (const auto& row : c.find("act_logits")->items())
      act_.push_back({static_cast<float>(row.items()[0].as_double()),
                      static_cast<float>(row.items()[1].as_double())});
  }
  Status forward(std::span<const Row> rows, int K, float* logits, float* act) override {
    for (size_t r = 0; r < rows.size(); ++r) {
      std::memcpy(logits + r * static_cast<size_t>(K), logits_[r].data(),
                  std::min<size_t>(logits_[r].size(), static_cast<size_t>(K)) * sizeof(float));
      act[2 * r] = act_[r][0];
      act[2 * r + 1] = act_[r][1];
    }
    return Status::ok();
  }
  Status embed(const std::vector<std::string>&, std::vector<std::vector<float>>*) override {
    return Status(StatusCode::kUnsupported, "no embeddings");
  }

 private:
  std::vector<std::vector<float>> logits_;
  std::vector<std::array<float, 2>> act_;
};

struct Case {
  std::string name, body;
  json::Value record;
};

struct Shared {
  ModelTokenizer tok;
  DecisionSettings settings;
  std::vector<Case> cases;
};

Shared* shared() {
  static Shared* s = [] {
    auto* sh = new Shared();
    Result<ModelTokenizer> t = tokenizer_from_file(fixtures() + "/modernbert/tokenizer.json");
    if (!t.is_ok()) {
      std::fprintf(stderr, "%s\n", t.status().to_string().c_str());
      std::exit(1);
    }
    sh->tok = std::move(*t);
    sh->settings.max_len = 1024;
    sh->settings.head_max_len = 256;
    const json::Value meta =
        *json::parse(read(fixtures() + "/laya-golden/typed-decisions/meta.json"));
    const json::Value& cfg = *meta.find("config");
    for (int i = 0; i < 3; ++i)
      sh->settings.temperatures.temperature[i] =
          cfg.find("temperature")->items()[static_cast<size_t>(i)].as_double();
    for (const auto& m : cfg.find("temperature_by_options")->members())
      sh->settings.temperatures.by_options.emplace_back(m.key, m.value.as_double());
    std::vector<std::string> files;
    for (const auto& e :
         std::filesystem::directory_iterator(fixtures() + "/laya-golden/typed-decisions"))
      if (e.path().filename().string().rfind("case_", 0) == 0) files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) {
      Case c;
      c.record = *json::parse(read(f));
      c.name = c.record.find("name")->as_string();
      json::Value body = json::Value::object();
      body.set("state", *c.record.find("state"));
      body.set("questions", *c.record.find("questions"));
      c.body = json::dump(body);
      sh->cases.push_back(std::move(c));
    }
    return sh;
  }();
  return s;
}

void BM_decision_overhead(benchmark::State& state) {
  Shared* sh = shared();
  const Case& c = sh->cases[static_cast<size_t>(state.range(0))];
  state.SetLabel(c.name + " (" + std::to_string(c.body.size()) + " B)");
  RecordedNetwork net(c.record);
  for (auto _ : state) {
    Result<DecisionRequest> req = parse_request(c.body);
    Result<json::Value> r =
        run_decision(*req, *sh->tok.encoder, sh->tok.specials, sh->settings, net);
    std::string out = json::dump(*r);
    benchmark::DoNotOptimize(out.data());
  }
}

void BM_route(benchmark::State& state) {
  Shared* sh = shared();
  const Case& c = sh->cases[static_cast<size_t>(state.range(0))];
  state.SetLabel(c.name);
  Router router = *Router::create();
  RouteQuery q;
  q.state = *c.record.find("state");
  q.questions = c.record.find("questions");
  for (auto _ : state) {
    Result<json::Value> d = router.route(q);
    benchmark::DoNotOptimize(d.is_ok());
  }
}

void cases(benchmark::internal::Benchmark* b) {
  for (size_t i = 0; i < shared()->cases.size(); ++i) b->Arg(static_cast<int64_t>(i));
}

}  // namespace

BENCHMARK(BM_decision_overhead)->Apply(cases)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_route)->Apply(cases)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
