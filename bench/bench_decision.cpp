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
//
// BM_decision_overhead_cases: every request a laya-cases/1 recording answered (predict,
// predict_batch, predict_shortlist, decide; tools/reference/run_laya_cases.py) as the request body
// `laya-run decide` reads, parsed and answered by run_decision with the checkpoint's tokenizer and
// settings; the network is replaced by the recorded forwards (and the shortlist's recorded
// embeddings). The answer is checked against the SDK's recorded result before timing (a mismatch
// is an error). LAYA_DECISION_CASES is the checkpoint directory (cases.json + tokenizer/), default
// FIXTURES/laya-tiny-modernbert; the real-size recordings of tools/reference/make_real_reference.sh
// (e.g. OUT/modernbert-large: the real ModernBERT tokenizer, 512 / 192-token budgets) work as is.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/text/json.h"
#include "runtime/decisions/decision.h"
#include "runtime/decisions/model_tokenizer.h"
#include "runtime/decisions/router.h"

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
    DecisionOutput r;
    (void)run_decision(*req, *sh->tok.encoder, sh->tok.specials, sh->settings, net, &r);
    std::string out = json::dump(r.json);
    benchmark::DoNotOptimize(out.data());
  }
}

// A recorded request's forwards, in order (rewound by `rewind`), and its embeddings by text.
class RecordedForwards : public Network {
 public:
  explicit RecordedForwards(const json::Value& c) : case_(c) {}
  void rewind() { next_ = 0; }
  Status forward(std::span<const Row> rows, int K, float* logits, float* act) override {
    const json::Value* fwds = case_.find("forwards");
    if (!fwds || next_ >= fwds->items().size())
      return Status(StatusCode::kInvalidArgument, "more forward passes than recorded");
    const json::Value& f = fwds->items()[next_++];
    const auto& lg = f.find("logits")->items();
    const auto& al = f.find("act_logits")->items();
    if (lg.size() != rows.size()) return Status(StatusCode::kInvalidArgument, "row count");
    for (size_t r = 0; r < rows.size(); ++r) {
      const auto& row = lg[r].items();
      for (size_t j = 0; j < static_cast<size_t>(K); ++j)
        logits[r * static_cast<size_t>(K) + j] =
            j < row.size() ? static_cast<float>(row[j].as_double()) : -1e4f;
      act[2 * r] = static_cast<float>(al[r].items()[0].as_double());
      act[2 * r + 1] = static_cast<float>(al[r].items()[1].as_double());
    }
    return Status::ok();
  }
  Status embed(const std::vector<std::string>& texts,
               std::vector<std::vector<float>>* out) override {
    out->clear();
    for (const std::string& t : texts) {
      const json::Value* found = nullptr;
      if (const json::Value* e = case_.find("embeddings"))
        for (const json::Value& item : e->items())
          if (item.find("text")->as_string() == t && item.find("embedding")) found = &item;
      if (!found) return Status(StatusCode::kInvalidArgument, "no recorded embedding");
      std::vector<float> v;
      for (const json::Value& x : found->find("embedding")->items())
        v.push_back(static_cast<float>(x.as_double()));
      out->push_back(std::move(v));
    }
    return Status::ok();
  }

 private:
  const json::Value& case_;
  size_t next_ = 0;
};

struct RecordedSet {
  ModelTokenizer tok;
  DecisionSettings settings;
  json::Value doc;
  std::vector<const json::Value*> cases;  // into doc: the requests the SDK answered
  std::vector<std::string> bodies;
};

RecordedSet* recorded() {
  static RecordedSet* s = [] {
    auto* rs = new RecordedSet();
    const char* env = std::getenv("LAYA_DECISION_CASES");
    const std::string dir = env ? env : fixtures() + "/laya-tiny-modernbert";
    Result<ModelTokenizer> t = tokenizer_from_file(dir + "/tokenizer/tokenizer.json");
    Result<json::Value> doc = json::parse(read(dir + "/cases.json"));
    if (!t.is_ok() || !doc.is_ok()) {
      std::fprintf(stderr, "%s: %s\n", dir.c_str(),
                   (t.is_ok() ? doc.status() : t.status()).to_string().c_str());
      std::exit(1);
    }
    rs->tok = std::move(*t);
    rs->doc = std::move(*doc);
    const json::Value& cfg = *rs->doc.find("config");
    rs->settings.max_len = static_cast<int>(cfg.find("max_len")->as_double());
    rs->settings.head_max_len = static_cast<int>(cfg.find("head_max_len")->as_double());
    for (size_t i = 0; i < 3; ++i)
      rs->settings.temperatures.temperature[i] = cfg.find("temperature")->items()[i].as_double();
    for (const auto& m : cfg.find("temperature_by_options")->members())
      rs->settings.temperatures.by_options.emplace_back(m.key, m.value.as_double());
    for (const json::Value& c : rs->doc.find("cases")->items()) {
      const std::string call = c.find("call")->as_string();
      if (!c.find("result") || (call != "predict" && call != "predict_batch" &&
                                call != "predict_shortlist" && call != "decide"))
        continue;
      json::Value body = *c.find("args");
      if (call == "predict_batch" && body.find("states")->items().empty()) continue;
      const json::Value* emb = c.find("embeddings");
      if (emb && !emb->items().empty() && !emb->items()[0].find("embedding"))
        continue;  // recorded without vectors (run_laya_cases.py keeps them for one case)
      if (call == "predict_shortlist") {
        const json::Value* k = body.find("k");
        json::Value kv = k ? *k : json::Value::integer(20);
        json::Value without = json::Value::object();
        for (const auto& m : body.members())
          if (m.key != "k") without.set(m.key, m.value);
        without.set("shortlist", kv);
        body = std::move(without);
      }
      rs->cases.push_back(&c);
      rs->bodies.push_back(json::dump(body));
    }
    return rs;
  }();
  return s;
}

// Equal JSON, numbers within `tol` (shortlist scores are cosines whose last bits follow the
// summation order: docs/decisions.md).
bool near(const json::Value& a, const json::Value& b, double tol) {
  if (a.is_number() && b.is_number()) return std::abs(a.as_double() - b.as_double()) <= tol;
  if (a.kind() != b.kind()) return false;
  if (a.is_array()) {
    if (a.items().size() != b.items().size()) return false;
    for (size_t i = 0; i < a.items().size(); ++i)
      if (!near(a.items()[i], b.items()[i], tol)) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.members().size() != b.members().size()) return false;
    for (size_t i = 0; i < a.members().size(); ++i)
      if (a.members()[i].key != b.members()[i].key ||
          !near(a.members()[i].value, b.members()[i].value, tol))
        return false;
    return true;
  }
  return a == b;
}

void BM_decision_overhead_cases(benchmark::State& state) {
  RecordedSet* rs = recorded();
  const size_t i = static_cast<size_t>(state.range(0));
  const json::Value& c = *rs->cases[i];
  const std::string& body = rs->bodies[i];
  state.SetLabel(c.find("name")->as_string() + " (" + std::to_string(body.size()) + " B)");
  RecordedForwards net(c);
  auto answer = [&]() -> Result<json::Value> {
    net.rewind();
    Result<DecisionRequest> req = parse_request(body);
    if (!req.is_ok()) return req.status();
    DecisionOutput r;
    LAYA_RETURN_IF_ERROR(
        run_decision(*req, *rs->tok.encoder, rs->tok.specials, rs->settings, net, &r));
    return std::move(r.json);
  };
  // The SDK's answer first: decide(questions=...) returns the answers alone.
  Result<json::Value> first = answer();
  if (!first.is_ok()) return state.SkipWithError(first.status().to_string().c_str());
  const json::Value* got = &*first;
  if (c.find("call")->as_string() == "decide" && c.find("args")->find("questions"))
    got = first->find("answers");
  if (!got || !near(*got, *c.find("result"), 1e-12))
    return state.SkipWithError("the answer differs from the SDK's recorded result");
  for (auto _ : state) {
    Result<json::Value> r = answer();
    std::string out = json::dump(*r);
    benchmark::DoNotOptimize(out.data());
  }
}

void recorded_cases(benchmark::internal::Benchmark* b) {
  for (size_t i = 0; i < recorded()->cases.size(); ++i) b->Arg(static_cast<int64_t>(i));
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
BENCHMARK(BM_decision_overhead_cases)->Apply(recorded_cases)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_route)->Apply(cases)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
