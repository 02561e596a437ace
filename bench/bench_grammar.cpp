// Schema-constrained decoding cost per token on SmolLM2's 49,152-token vocabulary (the pieces
// llama.cpp gives, tests/fixtures/decoder/smollm2.pieces.txt.gz), one thread:
//   sample/*        the sampler alone on a full logit row, no mask (what an unconstrained decoder
//                   pays anyway): greedy, and sampled (temperature 0.7, top-k 40, top-p 0.9)
//   constrained/*   sample_constrained: the grammar's mask applied, the pick, the matcher advanced,
//                   over every state of a decision generation (enum, number, boolean and free-text
//                   states in turn), same two sampler modes
//   constrained_widest/*  the same at the state allowing the most tokens (inside the free text)
//   compile         compiling the decision schema against the vocabulary (once per schema)
//   vocab_create    building the vocabulary's tables (once per model)
// The masking overhead is constrained/X minus sample/X; the issue's bar is 5% of a decode step.
//
//   build/bench/laya-bench-grammar --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <bit>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "runtime/decisions/constrained_sampling.h"
#include "runtime/decisions/grammar/token_automaton.h"
#include "runtime/decisions/grammar/vocab.h"
#include "runtime/text/json.h"
#include "runtime/sampler.h"

namespace {

using laya::Sampler;
using laya::SamplerConfig;
namespace grammar = laya::grammar;
namespace json = laya::json;

// The decision schema of the issue's example, with a free-text field.
constexpr const char* kSchema = R"({
  "type": "object",
  "properties": {
    "action": {"enum": ["reduce_load", "increase_load", "shutdown", "none"]},
    "target": {"enum": ["cooling_fan", "compressor", "heater", "pump"]},
    "value": {"type": "number", "minimum": 0, "maximum": 1},
    "urgent": {"type": "boolean"},
    "reason": {"type": "string", "maxLength": 60}
  },
  "required": ["action", "target", "value", "urgent", "reason"]
})";

void die(const std::string& what) {
  std::fprintf(stderr, "laya-bench-grammar: %s\n", what.c_str());
  std::exit(1);
}

// The recorded pieces: a JSON header line (end-of-generation ids in "eog"), then one hex line
// per token id.
struct Pieces {
  std::vector<std::string> pieces;
  std::vector<int32_t> stops;
};

const Pieces& load_pieces() {
  static const Pieces r = [] {
    Pieces p;
    std::ifstream f(LAYA_SMOLLM2_PIECES, std::ios::binary);
    if (!f) die(std::string("cannot open ") + LAYA_SMOLLM2_PIECES);
    std::string line;
    std::getline(f, line);
    laya::Result<json::Value> h = json::parse(line);
    if (!h.is_ok()) die(h.status().to_string());
    for (const json::Value& id : h->find("eog")->items())
      p.stops.push_back(static_cast<int32_t>(*id.as_int64()));
    while (std::getline(f, line)) {
      std::string bytes;
      for (size_t i = 0; i + 1 < line.size(); i += 2)
        bytes += static_cast<char>(std::stoi(line.substr(i, 2), nullptr, 16));
      p.pieces.push_back(std::move(bytes));
    }
    return p;
  }();
  return r;
}

std::shared_ptr<const grammar::TokenVocab> load_vocab() {
  const Pieces& p = load_pieces();
  laya::Result<std::shared_ptr<const grammar::TokenVocab>> v =
      grammar::TokenVocab::create(p.pieces, p.stops);
  if (!v.is_ok()) die(v.status().to_string());
  return std::move(v).value();
}

struct Setup {
  std::shared_ptr<const grammar::TokenVocab> vocab;
  std::shared_ptr<const grammar::TokenAutomaton> automaton;
  std::vector<std::vector<float>> rows;         // random logit rows
  std::vector<grammar::GrammarMatcher> states;  // every state of one generation
};

const Setup& setup() {
  static const Setup s = [] {
    Setup r;
    r.vocab = load_vocab();
    laya::Result<json::Value> schema = json::parse(kSchema);
    if (!schema.is_ok()) die(schema.status().to_string());
    auto ta = grammar::TokenAutomaton::compile(*schema, r.vocab);
    if (!ta.is_ok()) die(ta.status().to_string());
    r.automaton = std::move(ta).value();
    std::mt19937_64 rng(1);
    std::normal_distribution<float> d(0.0f, 3.0f);
    for (int k = 0; k < 8; ++k) {
      std::vector<float> row(static_cast<size_t>(r.vocab->size()));
      for (float& x : row) x = d(rng);
      r.rows.push_back(std::move(row));
    }
    // One sampled generation; its matcher before every token.
    laya::Result<Sampler> smp = Sampler::create({.temperature = 1.0f, .seed = 3}, r.vocab->size());
    grammar::GrammarMatcher m(r.automaton.get());
    for (size_t i = 0; !m.complete(); ++i) {
      r.states.push_back(m);
      if (!laya::sample_constrained(*smp, m, r.rows[i % r.rows.size()].data()).is_ok())
        die("generation failed");
    }
    return r;
  }();
  return s;
}

const SamplerConfig kGreedy{};
const SamplerConfig kSampled{.temperature = 0.7f, .top_k = 40, .top_p = 0.9f, .seed = 5};

void BM_Sample(benchmark::State& state, SamplerConfig cfg) {
  const Setup& s = setup();
  laya::Result<Sampler> smp = Sampler::create(cfg, s.vocab->size());
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(smp->sample(s.rows[i % s.rows.size()].data(), nullptr));
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Constrained(benchmark::State& state, SamplerConfig cfg) {
  const Setup& s = setup();
  laya::Result<Sampler> smp = Sampler::create(cfg, s.vocab->size());
  size_t i = 0;
  for (auto _ : state) {
    grammar::GrammarMatcher m = s.states[i % s.states.size()];
    laya::Result<int32_t> id = laya::sample_constrained(*smp, m, s.rows[i % s.rows.size()].data());
    benchmark::DoNotOptimize(id);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["states"] = static_cast<double>(s.states.size());
}

// The state whose mask allows the most tokens (inside the free-text string).
void BM_ConstrainedWidest(benchmark::State& state, SamplerConfig cfg) {
  const Setup& s = setup();
  size_t widest = 0;
  int64_t most = -1;
  for (size_t i = 0; i < s.states.size(); ++i) {
    int64_t bits = 0;
    const uint64_t* m = s.states[i].mask();
    for (int32_t w = 0; w < s.automaton->mask_words(); ++w) bits += std::popcount(m[w]);
    if (bits > most) {
      most = bits;
      widest = i;
    }
  }
  laya::Result<Sampler> smp = Sampler::create(cfg, s.vocab->size());
  size_t i = 0;
  for (auto _ : state) {
    grammar::GrammarMatcher m = s.states[widest];
    laya::Result<int32_t> id = laya::sample_constrained(*smp, m, s.rows[i % s.rows.size()].data());
    benchmark::DoNotOptimize(id);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["allowed"] = static_cast<double>(most);
}

void BM_Compile(benchmark::State& state) {
  const Setup& s = setup();
  const json::Value schema = *json::parse(kSchema);
  for (auto _ : state) benchmark::DoNotOptimize(grammar::TokenAutomaton::compile(schema, s.vocab));
  state.counters["mask_MiB"] = static_cast<double>(s.automaton->stats().mask_bytes) / (1 << 20);
  state.counters["char_states"] = s.automaton->stats().char_states;
}

BENCHMARK_CAPTURE(BM_Sample, greedy, kGreedy)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Sample, sampled, kSampled)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Constrained, greedy, kGreedy)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Constrained, sampled, kSampled)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ConstrainedWidest, greedy, kGreedy)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ConstrainedWidest, sampled, kSampled)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Compile)->Unit(benchmark::kMillisecond);

// Building the vocabulary's trie and plain-text tables (once per model, at load).
void BM_VocabCreate(benchmark::State& state) {
  const Pieces& p = load_pieces();
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::string> pieces = p.pieces;
    state.ResumeTiming();
    benchmark::DoNotOptimize(grammar::TokenVocab::create(std::move(pieces), p.stops));
  }
}
BENCHMARK(BM_VocabCreate)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
