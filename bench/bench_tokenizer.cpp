// Tokenizer speed, one thread: tokens/s and MB/s per tokenizer kind on the texts of the recorded
// Laya cases, with a warm word cache (a server's steady state) and cold (a fresh tokenizer, the
// first request); and the tokenizer's share of a Laya request (every encode the SDK makes for one
// recorded typed-decision request). The peer, HF tokenizers (Python), is measured on the same
// texts by bench/hf_tokenizers_peer.py.
//
//   build/bench/laya-bench-tokenizer --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Texts (tests/fixtures/laya-golden):
//   mixed  every state, header and option text of the typed-decisions and multilingual cases except
//          the two long states, in file-name order, joined by "\n" (English, Arabic, CJK, JSON; 11 KB)
//   long   typed-decisions/case_long_state.json's state (35 KB of repetitive English)
// Tokenizers: modernbert (byte-level BPE), metaspace-bpe (trained; Metaspace + byte fallback),
// smollm2 (its GGUF vocabulary: byte-level BPE with llama.cpp's smollm pre-tokenizer), llama-spm
// (a trained SentencePiece GGUF vocabulary: BPE by scores), and minilm (WordPiece); all from
// tests/fixtures.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/text/json.h"
#include "runtime/text/tokenizer/llama_vocab.h"
#include "runtime/text/tokenizer/tokenizer.h"
#include "runtime/text/tokenizer/tokenizer_json.h"

namespace {

using laya::tok::Tokenizer;
using laya::tok::TokenizerSpec;
namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const fs::path kFixtures = fs::path(LAYA_SOURCE_DIR) / "tests" / "fixtures";

struct Case {
  std::string name;
  std::string state;
  std::vector<std::string> heads;    // one per question
  std::vector<std::string> options;  // every option of every question, " " + option
};

std::vector<Case> load_cases(const char* dir) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kFixtures / "laya-golden" / dir)) {
    if (e.path().filename().string().rfind("case_", 0) == 0) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Case> out;
  for (const fs::path& p : files) {
    laya::Result<laya::json::Value> doc = laya::json::parse(read_file(p));
    if (!doc.is_ok()) continue;
    Case c;
    c.name = p.stem().string();
    c.state = doc->find("serialized_state")->as_string();
    for (const laya::json::Value& q : doc->find("per_question")->items()) {
      c.heads.push_back(q.find("head_text")->as_string());
      for (const laya::json::Value& o : q.find("options")->items()) {
        c.options.push_back(" " + o.as_string());
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

std::map<std::string, std::string> texts() {
  std::string mixed;
  for (const char* dir : {"typed-decisions", "multilingual"}) {
    for (const Case& c : load_cases(dir)) {
      if (c.name == "case_long_state") continue;
      std::vector<std::string> parts{c.state};
      parts.insert(parts.end(), c.heads.begin(), c.heads.end());
      for (const std::string& o : c.options) parts.push_back(o.substr(1));
      for (const std::string& t : parts) {
        if (!mixed.empty()) mixed += "\n";
        mixed += t;
      }
    }
  }
  std::string long_state;
  for (const Case& c : load_cases("typed-decisions")) {
    if (c.name == "case_long_state") long_state = c.state;
  }
  return {{"mixed", mixed}, {"long", long_state}};
}

struct Loaded {
  std::string name;
  TokenizerSpec spec;  // kept to build fresh (cold) tokenizers
  std::unique_ptr<Tokenizer> tok;
};

std::vector<Loaded>& tokenizers() {
  static std::vector<Loaded> all;
  return all;
}

void load(const std::string& name, const fs::path& path) {
  if (!fs::exists(path)) return;
  laya::Result<TokenizerSpec> spec = laya::tok::parse_tokenizer_json(read_file(path));
  if (!spec.is_ok()) return;
  TokenizerSpec copy = spec.value();
  laya::Result<std::unique_ptr<Tokenizer>> t = Tokenizer::create(std::move(spec).value());
  if (!t.is_ok()) return;
  tokenizers().push_back({name, std::move(copy), std::move(t).value()});
}

// A GGUF vocabulary fixture (tests/fixtures/tokenizers/*.vocab.json: LlamaVocab's fields).
void load_vocab(const std::string& name, const fs::path& path) {
  if (!fs::exists(path)) return;
  laya::Result<laya::json::Value> doc = laya::json::parse(read_file(path));
  if (!doc.is_ok()) return;
  const laya::json::Value& d = doc.value();
  laya::tok::LlamaVocab v;
  v.model = d.find("model")->as_string();
  v.pre = d.find("pre")->as_string();
  for (const auto& t : d.find("tokens")->items()) v.tokens.push_back(t.as_string());
  for (const auto& x : d.find("scores")->items())
    v.scores.push_back(static_cast<float>(x.as_double()));
  for (const auto& x : d.find("token_types")->items()) {
    v.token_types.push_back(static_cast<int32_t>(*x.as_int64()));
  }
  for (const auto& m : d.find("merges")->items()) v.merges.push_back(m.as_string());
  auto id = [&](const char* k) { return static_cast<int32_t>(*d.find(k)->as_int64()); };
  v.bos_id = id("bos_id");
  v.eos_id = id("eos_id");
  v.unk_id = id("unk_id");
  v.add_bos = static_cast<int8_t>(id("add_bos"));
  v.add_space_prefix = static_cast<int8_t>(id("add_space_prefix"));
  laya::Result<TokenizerSpec> spec = laya::tok::spec_from_llama_vocab(v);
  if (!spec.is_ok()) return;
  TokenizerSpec copy = spec.value();
  laya::Result<std::unique_ptr<Tokenizer>> t = Tokenizer::create(std::move(spec).value());
  if (!t.is_ok()) return;
  tokenizers().push_back({name, std::move(copy), std::move(t).value()});
}

void count(benchmark::State& state, size_t tokens, size_t bytes) {
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens) * state.iterations(),
                                                  benchmark::Counter::kIsRate);
  state.counters["tokens"] = static_cast<double>(tokens);
  state.SetBytesProcessed(static_cast<int64_t>(bytes) * state.iterations());
}

void bm_encode(benchmark::State& state, const Loaded* t, const std::string* text) {
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    if (!t->tok->encode(*text, {}, &ids).is_ok()) state.SkipWithError("encode failed");
    benchmark::DoNotOptimize(ids.data());
  }
  count(state, ids.size(), text->size());
}

void bm_encode_cold(benchmark::State& state, const Loaded* t, const std::string* text) {
  std::vector<int32_t> ids;
  for (auto _ : state) {
    state.PauseTiming();
    TokenizerSpec spec = t->spec;
    auto fresh = Tokenizer::create(std::move(spec));
    ids.clear();
    state.ResumeTiming();
    if (!fresh.is_ok() || !fresh.value()->encode(*text, {}, &ids).is_ok()) {
      state.SkipWithError("encode failed");
    }
    benchmark::DoNotOptimize(ids.data());
  }
  count(state, ids.size(), text->size());
}

// Every encode the upstream SDK makes for one request: the state once, each question's header,
// each option (" " + option).
void bm_laya_request(benchmark::State& state, const Loaded* t, const Case* c) {
  std::vector<int32_t> ids;
  size_t tokens = 0;
  for (auto _ : state) {
    tokens = 0;
    ids.clear();
    bool ok = t->tok->encode(c->state, {}, &ids).is_ok();
    tokens += ids.size();
    for (const std::string& h : c->heads) {
      ids.clear();
      ok = ok && t->tok->encode(h, {}, &ids).is_ok();
      tokens += ids.size();
    }
    for (const std::string& o : c->options) {
      ids.clear();
      ok = ok && t->tok->encode(o, {}, &ids).is_ok();
      tokens += ids.size();
    }
    if (!ok) state.SkipWithError("encode failed");
    benchmark::DoNotOptimize(ids.data());
  }
  state.counters["tokens"] = static_cast<double>(tokens);
}

}  // namespace

int main(int argc, char** argv) {
  load("modernbert", kFixtures / "modernbert" / "tokenizer.json");
  load("minilm", kFixtures / "tokenizers" / "minilm.tokenizer.json");
  load("metaspace-bpe", kFixtures / "tokenizers" / "metaspace-bpe.tokenizer.json");
  load_vocab("smollm2", LAYA_SMOLLM2_VOCAB);
  load_vocab("llama-spm", kFixtures / "tokenizers" / "llama-spm.vocab.json");
  static const std::map<std::string, std::string> all_texts = texts();
  for (const Loaded& t : tokenizers()) {
    for (const auto& [name, text] : all_texts) {
      benchmark::RegisterBenchmark(("encode/" + t.name + "/" + name).c_str(), bm_encode, &t, &text);
      benchmark::RegisterBenchmark(("encode_cold/" + t.name + "/" + name).c_str(), bm_encode_cold,
                                   &t, &text)
          ->Iterations(20);
    }
  }
  static const std::vector<Case> cases = load_cases("typed-decisions");
  for (const Loaded& t : tokenizers()) {
    if (t.name != "modernbert") continue;
    for (const Case& c : cases) {
      benchmark::RegisterBenchmark(("laya_request/" + c.name).c_str(), bm_laya_request, &t, &c)
          ->Unit(benchmark::kMicrosecond);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
