// laya-convert's GGUF path (frontends/gguf_import.h): the .laya it writes, loaded back, gives the
// same logits bit for bit as the GGUF it came from (tiny llama / qwen2 fixtures; SmolLM2 Q4_1 with
// LAYA_SMOLLM2_GGUF), keeps every weight as stored, carries the vocabulary (tokenizes as the GGUF),
// the chat template and the decision temperatures.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <span>
#include <memory>
#include <string>
#include <vector>

#include "frontends/gguf_decoder.h"
#include "frontends/gguf_import.h"
#include "frontends/gguf_tokenizer.h"
#include "ir/model_file.h"
#include "runtime/decoder.h"
#include "runtime/kv_cache.h"
#include "runtime/decisions/answers.h"
#include "tests/frontends/gguf_generate_util.h"
#include "tests/frontends/gguf_writer.h"
#include "tests/test_files.h"

using namespace laya;
using namespace laya::frontends::gguf;
using namespace laya::test;

namespace {

// import_gguf -> model_write -> model_load.
ir::Graph convert_and_load(const std::string& gguf, const std::string& out,
                           const GgufImportOptions& opts = {}) {
  Result<ir::Graph> g = import_gguf(gguf, opts);
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  const Status st = ir::model_write(*g, out);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  Result<ir::Graph> back = ir::model_load(out);
  REQUIRE_MESSAGE(back.is_ok(), back.status().to_string());
  return std::move(back).value();
}

// Every weight of `g` is the GGUF tensor of the same name: same dtype, same bytes.
void check_weights_as_stored(const ir::Graph& g, const File& f) {
  int weights = 0;
  for (const ir::Value& v : g.values) {
    if (v.kind != ir::ValueKind::kWeight) continue;
    ++weights;
    CAPTURE(v.name);
    const TensorInfo* t = f.tensor(v.name);
    REQUIRE(t != nullptr);
    CHECK(v.dtype == t->dtype);
    REQUIRE(v.nbytes == t->bytes);
    REQUIRE(v.data != nullptr);
    CHECK(std::memcmp(v.data, t->data, v.nbytes) == 0);
  }
  CHECK(weights == static_cast<int>(f.tensors().size()));
}

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// Prefill in chunks, then greedy decode steps, on the GGUF's graph and on the loaded .laya; every
// logit row must be bit-identical. Returns the number of rows compared.
int compare_runs(Cached& gguf, Cached& laya, const std::vector<int32_t>& prompt, int64_t chunk,
                 int decode_steps) {
  int rows = 0;
  gguf.cache->clear();
  laya.cache->clear();
  REQUIRE(laya.runner->vocab() == gguf.runner->vocab());
  for (size_t at = 0; at < prompt.size(); at += static_cast<size_t>(chunk)) {
    const size_t n = std::min(static_cast<size_t>(chunk), prompt.size() - at);
    const auto part = std::span(prompt).subspan(at, n);
    REQUIRE(gguf.runner->step(0, part).is_ok());
    REQUIRE(laya.runner->step(0, part).is_ok());
    CHECK(same_bits(gguf.runner->logits(), laya.runner->logits()));
    rows += static_cast<int>(n);
  }
  for (int t = 0; t < decode_steps; ++t) {
    const int32_t next = runtime::greedy_token(gguf.runner->last_logits(), nullptr);
    CHECK(runtime::greedy_token(laya.runner->last_logits(), nullptr) == next);
    REQUIRE(gguf.runner->step(0, std::span(&next, 1)).is_ok());
    REQUIRE(laya.runner->step(0, std::span(&next, 1)).is_ok());
    CHECK(same_bits(gguf.runner->last_logits(), laya.runner->last_logits()));
    rows += 1;
  }
  return rows;
}

}  // namespace

// The KV cache's element type of a decoder graph: every state's (runtime::kv_cache_layout).
ir::DType kv_dtype_of(const ir::Graph& g) {
  Result<runtime::KvCacheLayout> l = runtime::kv_cache_layout(g);
  REQUIRE_MESSAGE(l.is_ok(), l.status().to_string());
  REQUIRE(!l->states.empty());
  for (const runtime::KvStateInfo& st : l->states) REQUIRE(st.dtype == l->states[0].dtype);
  return l->states[0].dtype;
}

TEST_CASE("a converted tiny GGUF: bit-identical logits, weights as stored, vocabulary, metadata") {
  for (const char* name : {"tiny-llama.gguf", "tiny-qwen2.gguf"})
    for (const char* kernels : {"ref", "auto"})
      for (const ir::DType kv : {ir::DType::kF16, ir::DType::kF32}) {
        CAPTURE(std::string(name));
        CAPTURE(std::string(kernels));
        CAPTURE(ir::dtype_name(kv));
        const std::string src = fixtures_dir() + name;
        TempDir tmp;
        const auto f = open_file(src);
        GgufImportOptions opts;
        opts.max_chunk = 16;
        if (kv == ir::DType::kF32) opts.kv_dtype = kv;  // f16: the default
        ir::Graph g = convert_and_load(src, tmp.file("m.laya"), opts);

        CHECK(kv_dtype_of(g) == kv);
        check_weights_as_stored(g, *f);
        const int s = g.find_symbol("seq"), c = g.find_symbol("cells");
        REQUIRE((s >= 0 && c >= 0));
        CHECK(g.symbols[static_cast<size_t>(s)].max == 16);
        CHECK(g.symbols[static_cast<size_t>(c)].max == decoder_params(*f)->context_length);
        CHECK(g.meta.architecture == *f->get_string("general.architecture"));
        CHECK(g.meta.tokenizer_kind == "gguf");
        CHECK(g.meta.decision.present);
        CHECK(g.meta.provenance.files.size() == 1);
        CHECK(g.meta.provenance.files[0].name == name);
        CHECK(g.meta.provenance.files[0].sha256.size() == 64);

        // The same cells and chunk on both: the GGUF graph built for exactly those bounds, the .laya
        // with its own (larger) ones.
        const int64_t kChunk = 5, kCells = 48;
        Cached from_gguf(f, kernels, 1, kChunk, kCells, 2, kv);
        Cached from_laya(std::move(g), kernels, 1, kChunk, kCells);
        const std::vector<int32_t> prompt = random_ids(13, from_gguf.runner->vocab(), 11);
        CHECK(compare_runs(from_gguf, from_laya, prompt, kChunk, 12) == 25);
      }
}

TEST_CASE("the embedded vocabulary tokenizes as the GGUF does") {
  for (const char* name : {"tiny-llama.gguf", "tiny-qwen2.gguf"}) {
    CAPTURE(std::string(name));
    const std::string src = fixtures_dir() + name;
    TempDir tmp;
    const auto f = open_file(src);
    const ir::Graph g = convert_and_load(src, tmp.file("m.laya"));
    Result<std::shared_ptr<const File>> v = embedded_vocab(g);
    REQUIRE_MESSAGE(v.is_ok(), v.status().to_string());
    Result<TokenizerData> a = tokenizer_data(*f), b = tokenizer_data(**v);
    REQUIRE((a.is_ok() && b.is_ok()));
    CHECK(a->model == b->model);
    CHECK(a->pre == b->pre);
    CHECK(a->tokens == b->tokens);
    CHECK(a->merges == b->merges);
    CHECK(a->token_type == b->token_type);
    CHECK(a->scores == b->scores);
    CHECK(a->bos_id == b->bos_id);
    CHECK(a->eos_id == b->eos_id);
    CHECK(a->add_bos == b->add_bos);
    auto ta = gguf_tokenizer(*f), tb = gguf_tokenizer(**v);
    REQUIRE((ta.is_ok() && tb.is_ok()));
    tok::EncodeOptions eo;
    eo.add_special_tokens = true;
    for (const char* text : {"hello world", "ab ba abab", "  spaces\tand\nnewlines ",
                             "UTF-8: caf\xc3\xa9 \xe2\x82\xac", "<s>special</s>", "x"}) {
      CAPTURE(std::string(text));
      std::vector<int32_t> ia, ib;
      REQUIRE((*ta)->encode(text, eo, &ia).is_ok());
      REQUIRE((*tb)->encode(text, eo, &ib).is_ok());
      CHECK(ia == ib);
      CHECK(!ia.empty());
      std::string da, db;
      REQUIRE((*ta)->decode(ia, false, &da).is_ok());
      REQUIRE((*tb)->decode(ib, false, &db).is_ok());
      CHECK(da == db);
    }
    // The File outlives the graph it came from (it keeps the mapping alive).
  }
}

TEST_CASE("vocab_image: every tokenizer.ggml key of every value type, nothing else") {
  Writer w;
  w.string("general.architecture", "llama");
  w.string("tokenizer.ggml.model", "gpt2");
  w.string("tokenizer.ggml.pre", "smollm");
  w.strings("tokenizer.ggml.tokens", {"a", "b", "ab", "<s>", ""});
  w.strings("tokenizer.ggml.merges", {"a b"});
  w.array<int32_t>("tokenizer.ggml.token_type", 5, {1, 1, 1, 3, 1});
  w.array<float>("tokenizer.ggml.scores", 6, {0.5f, -1.25f, 3.0f, 0.0f, -0.0f});
  w.u32("tokenizer.ggml.bos_token_id", 3);
  w.i32("tokenizer.ggml.eos_token_id", 3);
  w.boolean("tokenizer.ggml.add_bos_token", true);
  w.f32("tokenizer.ggml.some_float", 0.25f);
  w.kv("tokenizer.ggml.u64", 10, [](Bytes& o) { o.put<uint64_t>(uint64_t{1} << 40); });
  w.kv("tokenizer.ggml.nested", 9, [](Bytes& o) {
    o.put<uint32_t>(9).put<uint64_t>(2);                                    // two arrays:
    o.put<uint32_t>(4).put<uint64_t>(2).put<uint32_t>(7).put<uint32_t>(8);  // u32 [7, 8]
    o.put<uint32_t>(8).put<uint64_t>(1).str("z");                           // string ["z"]
  });
  w.string("tokenizer.chat_template", "{{ x }}");
  w.string("general.name", "test");
  const std::vector<uint8_t> bytes = w.bytes();
  Result<File> f = File::parse(bytes.data(), bytes.size());
  REQUIRE_MESSAGE(f.is_ok(), f.status().to_string());
  Result<std::string> img = vocab_image(*f);
  REQUIRE_MESSAGE(img.is_ok(), img.status().to_string());
  Result<File> v = File::parse(reinterpret_cast<const uint8_t*>(img->data()), img->size());
  REQUIRE_MESSAGE(v.is_ok(), v.status().to_string());
  CHECK(v->tensors().empty());
  int n = 0;
  for (const KeyValue& kv : f->metadata()) {
    const bool kept = kv.key.substr(0, 15) == "tokenizer.ggml.";
    const Value* got = v->find(kv.key);
    CAPTURE(std::string(kv.key));
    CHECK((got != nullptr) == kept);
    if (got == nullptr) continue;
    CHECK(v->metadata()[static_cast<size_t>(n++)].key == kv.key);  // file order
    CHECK(got->type == kv.value.type);
    CHECK(got->bits == kv.value.bits);
    CHECK(got->str == kv.value.str);
    CHECK(got->elem_type == kv.value.elem_type);
    CHECK(got->count == kv.value.count);
    CHECK(got->strings == kv.value.strings);
    if (kv.value.elems != nullptr) {  // token_type (i32) and scores (f32): 4 bytes each
      REQUIRE(got->elems != nullptr);
      CHECK(std::memcmp(got->elems, kv.value.elems, kv.value.count * 4) == 0);
    }
    CHECK(got->arrays.size() == kv.value.arrays.size());
    for (size_t i = 0; i < got->arrays.size() && i < kv.value.arrays.size(); ++i) {
      CHECK(got->arrays[i].count == kv.value.arrays[i].count);
      CHECK(got->arrays[i].strings == kv.value.arrays[i].strings);
    }
  }
  CHECK(n == 12);
  CHECK(v->find("tokenizer.ggml.nested")->arrays[0].int_at(1) == 8);

  // Without a vocabulary: kNotFound (a .laya decoder must tokenize).
  Writer bare;
  bare.string("general.architecture", "llama");
  const std::vector<uint8_t> bb = bare.bytes();
  Result<File> bf = File::parse(bb.data(), bb.size());
  REQUIRE(bf.is_ok());
  CHECK(vocab_image(*bf).status().code() == StatusCode::kNotFound);
}

TEST_CASE("embedded_vocab of a model without one names the kind it has") {
  ir::Graph g;
  g.meta.tokenizer_kind = "hf-tokenizer-json";
  Result<std::shared_ptr<const File>> v = embedded_vocab(g);
  REQUIRE(!v.is_ok());
  CHECK(v.status().code() == StatusCode::kNotFound);
  CHECK(std::string(v.status().message()).find("hf-tokenizer-json") != std::string::npos);
  const std::string junk(64, 'x');
  g.meta.tokenizer_kind = "gguf";
  g.meta.tokenizer = {reinterpret_cast<const uint8_t*>(junk.data()), junk.size()};
  CHECK(embedded_vocab(g).status().code() == StatusCode::kFileBadIdentifier);
}

TEST_CASE("decision config: temperatures stored, read back by model_temperatures; errors") {
  TempDir tmp;
  const std::string cfg = tmp.file("decision.json");
  auto write_cfg = [&](const std::string& text) { write_text(cfg, text); };
  write_cfg(R"({"temperature": [0.7, 1.5, 2], "temperature_by_options": {"choice:3-5": 0.9,
             "noul:2": 1.25, "score:11+": 3}})");
  Result<ir::DecisionConfig> d = read_decision_config(cfg);
  REQUIRE_MESSAGE(d.is_ok(), d.status().to_string());
  CHECK(d->present);
  const std::string src = fixtures_dir() + "tiny-llama.gguf";

  GgufImportOptions opts;
  opts.decision = *d;
  const ir::Graph g = convert_and_load(src, tmp.file("decision.laya"), opts);
  const decision::Temperatures t = decision::model_temperatures(g.meta);
  CHECK(t.temperature[0] == doctest::Approx(0.7).epsilon(1e-7));
  CHECK(t.temperature[1] == 1.5);
  CHECK(t.temperature[2] == 2.0);
  REQUIRE(t.by_options.size() == 3);
  CHECK(t.by_options[0].first == "choice:3-5");
  CHECK(t.by_options[2].second == 3.0);
  CHECK(t.get(decision::QType::kChoice, 4) == doctest::Approx(0.9));
  CHECK(t.get(decision::QType::kChoice, 2) == doctest::Approx(0.7));
  CHECK(t.get(decision::QType::kNoul, 2) == 1.25f);

  // Default: 1.0 each.
  const ir::Graph g2 = convert_and_load(src, tmp.file("default.laya"));
  const decision::Temperatures t2 = decision::model_temperatures(g2.meta);
  CHECK(t2.temperature[0] == 1.0);
  CHECK(t2.temperature[1] == 1.0);
  CHECK(t2.temperature[2] == 1.0);
  CHECK(t2.by_options.empty());

  struct Bad {
    const char* json;
    const char* says;
  };
  for (const Bad& b : {Bad{R"({"temperature": [1, 2]})", "\"temperature\" must be a list of 3"},
                       Bad{R"({"temperature": [1, "2", 3]})", "temperature[1] (score)"},
                       Bad{R"({"temperature": [1, 2, 0]})", "must be a finite number > 0"},
                       Bad{R"({"temperature": [-1, 2, 3]})", "temperature[0] (choice)"},
                       Bad{R"({"temperature_by_options": {"choice:4": 1}})", "is not a bucket"},
                       Bad{R"({"temperature_by_options": {"pick:2": 1}})", "is not a bucket"},
                       Bad{R"({"temperature_by_options": [1]})", "must be an object"},
                       Bad{R"({"temprature": [1, 1, 1]})", "\"temprature\" is not a decision"},
                       Bad{R"([1, 2, 3])", "not a JSON object"}, Bad{R"({"temperature": )", ""}}) {
    CAPTURE(std::string(b.json));
    write_cfg(b.json);
    Result<ir::DecisionConfig> r = read_decision_config(cfg);
    REQUIRE(!r.is_ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    CHECK(std::string(r.status().message()).find(b.says) != std::string::npos);
    CHECK(std::string(r.status().message()).find(cfg) != std::string::npos);
  }
}

TEST_CASE("import_gguf errors name the file and the problem") {
  const std::string src = fixtures_dir() + "tiny-llama.gguf";
  const std::string text = read_text(src);
  const std::vector<uint8_t> bytes(text.begin(), text.end());
  REQUIRE(bytes.size() > 4096);
  TempDir tmp;
  const std::string bad = tmp.file("bad.gguf");
  // Truncated inside the tensor data.
  write_bytes(bad, std::vector<uint8_t>(bytes.begin(), bytes.end() - 1000));
  Result<ir::Graph> r = import_gguf(bad, {});
  REQUIRE(!r.is_ok());
  CHECK(std::string(r.status().message()).rfind(bad, 0) == 0);
  // Not a GGUF.
  write_bytes(bad, std::vector<uint8_t>(100, 'x'));
  r = import_gguf(bad, {});
  CHECK(r.status().code() == StatusCode::kFileBadIdentifier);
  // Bounds.
  GgufImportOptions o;
  o.max_chunk = 0;
  CHECK(import_gguf(src, o).status().code() == StatusCode::kInvalidArgument);
  // A missing file.
  CHECK(import_gguf(src + ".missing", {}).status().code() == StatusCode::kIoError);
}

TEST_CASE("SmolLM2 Q4_1 converted: weights as stored, the same greedy ids and logits") {
  const std::string path = smollm2_or_skip();
  if (path.empty()) return;
  TempDir tmp;
  const auto f = open_file(path);
  ir::Graph g = convert_and_load(path, tmp.file("smollm2.laya"));
  check_weights_as_stored(g, *f);
  CHECK(!g.meta.chat_template.empty());
  CHECK(g.meta.chat_template == *f->get_string("tokenizer.chat_template"));

  Result<std::shared_ptr<const File>> v = embedded_vocab(g);
  REQUIRE(v.is_ok());
  auto ta = gguf_tokenizer(*f), tb = gguf_tokenizer(**v);
  REQUIRE((ta.is_ok() && tb.is_ok()));
  tok::EncodeOptions eo;
  eo.add_special_tokens = true;
  std::vector<int32_t> prompt, prompt_b;
  const char* text =
      "<|im_start|>user\nWrite a haiku about the sea.<|im_end|>\n<|im_start|>"
      "assistant\n";
  REQUIRE((*ta)->encode(text, eo, &prompt).is_ok());
  REQUIRE((*tb)->encode(text, eo, &prompt_b).is_ok());
  CHECK(prompt == prompt_b);

  const int64_t kChunk = 8, kCells = 96;
  CHECK(kv_dtype_of(g) == ir::DType::kF16);  // the default
  Cached from_gguf(f, "auto", 1, kChunk, kCells, 2, ir::DType::kF16);
  Cached from_laya(std::move(g), "auto", 1, kChunk, kCells);
  compare_runs(from_gguf, from_laya, prompt, kChunk, 0);
  // generate(): the same greedy ids.
  std::vector<int32_t> a, b;
  runtime::GenerateRequest req;
  req.prompt = prompt;
  req.max_tokens = 24;
  from_gguf.cache->clear();
  from_laya.cache->clear();
  REQUIRE(from_gguf.runner->generate(req, &a, nullptr).is_ok());
  REQUIRE(from_laya.runner->generate(req, &b, nullptr).is_ok());
  CHECK(a.size() == 24);
  CHECK(a == b);
}
