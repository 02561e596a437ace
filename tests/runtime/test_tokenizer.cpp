// runtime/text/tokenizer: the real ModernBERT tokenizer against the rows the upstream Laya SDK built
// with HF tokenizers, errors for malformed tokenizer.json / GGUF vocabularies, and concurrent use.
// Id parity on the hard-string fixtures is in test_tokenizer_parity.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "runtime/text/json.h"
#include "runtime/text/tokenizer/llama_vocab.h"
#include "runtime/text/tokenizer/tokenizer.h"
#include "runtime/text/tokenizer/tokenizer_json.h"

namespace laya::tok {
namespace {

std::string fixtures_root() {
  const char* root = std::getenv("LAYA_FIXTURES");
  return root ? root : "tests/fixtures";
}

std::string read_fixture(const std::string& rel) {
  const std::string path = fixtures_root() + "/" + rel;
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot open " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::unique_ptr<Tokenizer> modernbert() {
  Result<TokenizerSpec> spec = parse_tokenizer_json(read_fixture("modernbert/tokenizer.json"));
  REQUIRE_MESSAGE(spec.is_ok(), spec.status().to_string());
  const Status cfg =
      apply_tokenizer_config(read_fixture("modernbert/tokenizer_config.json"), &spec.value());
  REQUIRE_MESSAGE(cfg.is_ok(), cfg.to_string());
  Result<std::unique_ptr<Tokenizer>> t = Tokenizer::create(std::move(spec).value());
  REQUIRE_MESSAGE(t.is_ok(), t.status().to_string());
  return std::move(t).value();
}

std::vector<int32_t> encode(const Tokenizer& t, std::string_view text) {
  std::vector<int32_t> ids;
  const Status s = t.encode(text, {}, &ids);
  REQUIRE_MESSAGE(s.is_ok(), s.to_string());
  return ids;
}

std::vector<int32_t> ints(const json::Value& a) {
  std::vector<int32_t> out;
  for (const json::Value& v : a.items()) out.push_back(static_cast<int32_t>(*v.as_int64()));
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) {
    s.replace(p, from.size(), to);
  }
  return s;
}

bool starts_with(const std::vector<int32_t>& whole, size_t at, const std::vector<int32_t>& part,
                 size_t n) {
  if (n > part.size() || at + n > whole.size()) return false;
  for (size_t i = 0; i < n; ++i) {
    if (whole[at + i] != part[i]) return false;
  }
  return true;
}

TEST_CASE("ModernBERT: the token pieces of every recorded Laya typed-decision row") {
  // A row is [CLS] header [SEP] ([MASK] option)* [SEP] state [SEP], each piece encoded without
  // special tokens after "[MASK]" is scrubbed to " " (header and options cut to the head budget,
  // the state to the room left). The builder is not under test: each piece must be a prefix of
  // our encoding of its text, and the state's full length must equal the SDK's usage count.
  const auto tok = modernbert();
  const SpecialTokenIds& sp = tok->special_ids();
  REQUIRE(sp.cls == 50281);
  REQUIRE(sp.sep == 50282);
  REQUIRE(sp.mask == 50284);
  const std::string mask(tok->id_to_token(sp.mask));
  int rows = 0, cases = 0;
  const std::string dir = fixtures_root() + "/laya-golden/typed-decisions";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("case_", 0) != 0) continue;
    CAPTURE(name);
    Result<json::Value> doc = json::parse(read_fixture("laya-golden/typed-decisions/" + name));
    REQUIRE(doc.is_ok());
    const json::Value& c = doc.value();
    const bool list_state = c.find("state")->is_array();
    const std::vector<int32_t> state =
        encode(*tok, replace_all(c.find("serialized_state")->as_string(), mask, " "));
    CHECK(static_cast<int64_t>(state.size()) ==
          *c.find("result")->find("usage")->find("state_tokens")->as_int64());
    for (const json::Value& q : c.find("per_question")->items()) {
      const std::vector<int32_t> row = ints(*q.find("input_ids"));
      const std::vector<int32_t> markers = ints(*q.find("markers"));
      REQUIRE(!markers.empty());
      REQUIRE(row.front() == sp.cls);
      REQUIRE(row.back() == sp.sep);
      // Header: row[1 .. markers[0] - 1), then [SEP].
      const auto head = encode(*tok, replace_all(q.find("head_text")->as_string(), mask, " "));
      const size_t head_n = static_cast<size_t>(markers[0]) - 2;
      CHECK(row[static_cast<size_t>(markers[0]) - 1] == sp.sep);
      CHECK(starts_with(row, 1, head, head_n));
      // Options: [MASK] then a prefix of " " + option; the last one ends at the head's [SEP].
      const auto& options = q.find("options")->items();
      REQUIRE(options.size() >= markers.size());
      size_t head_end = 0;
      for (size_t k = 0; k < markers.size(); ++k) {
        const auto m = static_cast<size_t>(markers[k]);
        CHECK(row[m] == sp.mask);
        const auto opt = encode(*tok, " " + replace_all(options[k].as_string(), mask, " "));
        size_t n = 0;
        if (k + 1 < markers.size()) {
          n = static_cast<size_t>(markers[k + 1]) - m - 1;
        } else {
          // The longest prefix followed by [SEP].
          for (size_t len = std::min<size_t>(opt.size(), 48); len + 1 > 0 && n == 0; --len) {
            if (starts_with(row, m + 1, opt, len) && m + 1 + len < row.size() &&
                row[m + 1 + len] == sp.sep) {
              n = len;
              break;
            }
            if (len == 0) break;
          }
          head_end = m + 1 + n;
          REQUIRE(row[head_end] == sp.sep);
        }
        CHECK(n <= 48);
        CHECK(starts_with(row, m + 1, opt, n));
      }
      // State: everything between the head's [SEP] and the final [SEP].
      const std::vector<int32_t> st(row.begin() + static_cast<ptrdiff_t>(head_end) + 1,
                                    row.end() - 1);
      if (list_state) {
        CHECK(starts_with(state, state.size() - st.size(), st, st.size()));
      } else {
        CHECK(starts_with(row, head_end + 1, state, st.size()));
      }
      ++rows;
    }
    ++cases;
  }
  CHECK(cases == 10);
  CHECK(rows == 17);
}

TEST_CASE("ModernBERT: decode gives back the text and token_to_piece its bytes") {
  const auto tok = modernbert();
  const std::string text =
      "Subject: Double charged on invoice 88213\n\nHi, I was billed twice this month. "
      "Ça coûte 149,00 € — 日本語のテキスト 👍🏽\tdone.[MASK] end";
  const auto ids = encode(*tok, text);
  std::string back;
  REQUIRE(tok->decode(ids, false, &back).is_ok());
  CHECK(back == text);
  // Streaming: the pieces concatenate to the same bytes, special tokens included when asked.
  std::string streamed;
  for (int32_t id : ids) {
    std::string piece;
    REQUIRE(tok->token_to_piece(id, true, &piece).is_ok());
    streamed += piece;
  }
  CHECK(streamed == text);
  std::string piece;
  CHECK(tok->token_to_piece(tok->special_ids().mask, false, &piece).is_ok());
  CHECK(piece.empty());
  CHECK(tok->token_to_piece(tok->vocab_size(), false, &piece).code() == StatusCode::kOutOfRange);
  CHECK(tok->is_special(tok->special_ids().mask));
  CHECK(!tok->is_special(tok->token_to_id("Hello")));
  CHECK(tok->vocab_size() == 50368);
}

TEST_CASE("concurrent encodes give the single-thread ids") {
  const auto tok = modernbert();
  std::vector<std::string> texts;
  const std::string dir = fixtures_root() + "/laya-golden/typed-decisions";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    Result<json::Value> doc = json::parse(
        read_fixture("laya-golden/typed-decisions/" + entry.path().filename().string()));
    REQUIRE(doc.is_ok());
    const json::Value* s = doc->find("serialized_state");
    if (s) texts.push_back(s->as_string());
  }
  REQUIRE(texts.size() >= 10);
  std::vector<std::vector<int32_t>> want;
  for (const std::string& t : texts) want.push_back(encode(*tok, t));
  constexpr int kThreads = 4;
  std::vector<int> bad(kThreads, 0);
  std::vector<std::thread> pool;
  for (int w = 0; w < kThreads; ++w) {
    pool.emplace_back([&, w] {
      for (int rep = 0; rep < 20; ++rep) {
        for (size_t k = 0; k < texts.size(); ++k) {
          const size_t i = (k + static_cast<size_t>(w) * 3) % texts.size();
          std::vector<int32_t> ids;
          if (!tok->encode(texts[i], {}, &ids).is_ok() || ids != want[i]) ++bad[w];
        }
      }
    });
  }
  for (std::thread& th : pool) th.join();
  for (int w = 0; w < kThreads; ++w) CHECK(bad[w] == 0);
}

// A small valid tokenizer.json; the cases below break one field at a time.
constexpr const char* kBase = R"({
  "version": "1.0",
  "added_tokens": [{"id": 5, "content": "<s>", "special": true, "normalized": false}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Lowercase"}]},
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
    "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
    "special_tokens": {"<s>": {"id": "<s>", "ids": [5], "tokens": ["<s>"]}}},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3, "abc": 4},
            "merges": ["a b", "ab c"]}
})";

Status load(const std::string& text) {
  Result<TokenizerSpec> spec = parse_tokenizer_json(text);
  if (!spec.is_ok()) return spec.status();
  Result<std::unique_ptr<Tokenizer>> t = Tokenizer::create(std::move(spec).value());
  return t.is_ok() ? Status::ok() : t.status();
}

std::string with(std::string base, const std::string& from, const std::string& to) {
  const size_t p = base.find(from);
  REQUIRE_MESSAGE(p != std::string::npos, from);
  base.replace(p, from.size(), to);
  return base;
}

TEST_CASE("malformed tokenizer.json: errors name the problem") {
  REQUIRE_MESSAGE(load(kBase).is_ok(), load(kBase).to_string());
  struct Case {
    std::string from, to;
    StatusCode code;
    const char* says;
  };
  const Case cases[] = {
      {R"("type": "BPE")", R"("type": "Unigram")", StatusCode::kUnsupported, "'Unigram'"},
      {R"("type": "BPE")", R"("type": "Magic")", StatusCode::kInvalidArgument,
       "unknown model type 'Magic'"},
      {R"({"type": "Lowercase"})", R"({"type": "Titlecase"})", StatusCode::kInvalidArgument,
       "normalizer.normalizers[1]: unknown normalizer type 'Titlecase'"},
      {R"({"type": "Lowercase"})", R"({"type": "Precompiled", "precompiled_charsmap": ""})",
       StatusCode::kUnsupported, "Precompiled"},
      {R"("type": "ByteLevel", "add_prefix_space")", R"("type": "Fancy", "add_prefix_space")",
       StatusCode::kInvalidArgument, "unknown pre-tokenizer type 'Fancy'"},
      {R"("decoder": {"type": "ByteLevel"})", R"("decoder": {"type": "Nope"})",
       StatusCode::kInvalidArgument, "unknown decoder type 'Nope'"},
      {R"("post_processor": {"type": "TemplateProcessing")",
       R"("post_processor": {"type": "Templated")", StatusCode::kInvalidArgument,
       "unknown post-processor type 'Templated'"},
      {R"("ab c"])", R"("ab d"])", StatusCode::kInvalidArgument, "'d' is not in the vocabulary"},
      {R"("ab c"])", R"("b c"])", StatusCode::kInvalidArgument,
       "the merged token 'bc' is not in the vocabulary"},
      {R"("ab c"])", R"("abc"])", StatusCode::kInvalidArgument, "merge 1"},
      {R"("abc": 4)", R"("abc": 1)", StatusCode::kInvalidArgument,
       "tokens 'b' and 'abc' both have id 1"},
      {R"("abc": 4)", R"("abc": -4)", StatusCode::kInvalidArgument, "out of range"},
      {R"("abc": 4)", R"("abc": 99999999999)", StatusCode::kInvalidArgument, "out of range"},
      {R"("abc": 4)", R"("abc": 16000000)", StatusCode::kInvalidArgument,
       "5 tokens with ids up to 16000000: a sparse vocabulary is not supported"},
      {R"("ids": [5])", R"("ids": [77])", StatusCode::kInvalidArgument,
       "special token id 77 is outside the vocabulary"},
      {R"("id": "<s>", "type_id": 0}}, {"Sequence")",
       R"("id": "</s>", "type_id": 0}}, {"Sequence")", StatusCode::kInvalidArgument,
       "special token '</s>' is not in special_tokens"},
      {R"({"id": 5, "content": "<s>")", R"({"id": 1, "content": "<s>")",
       StatusCode::kInvalidArgument,
       "added token '<s>' has id 1, which the vocabulary gives to 'b'"},
      {R"("version": "1.0")", R"("version": "2.0")", StatusCode::kInvalidArgument, "version"},
      {R"("use_regex": true)", R"("use_regex": "yes")", StatusCode::kInvalidArgument,
       "pre_tokenizer.use_regex: expected true or false"},
      {R"("type": "BPE", )", R"("type": "BPE", "dropout": 0.1, )", StatusCode::kUnsupported,
       "dropout"},
      {R"("type": "ByteLevel", "add_prefix_space": false, "use_regex": true)",
       R"("type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated", "invert": false)",
       StatusCode::kInvalidArgument, "regex '(unclosed' does not compile"},
      {R"("type": "ByteLevel", "add_prefix_space": false, "use_regex": true)",
       R"("type": "Split", "pattern": {"Regex": "[a&&b]"}, "behavior": "Isolated", "invert": false)",
       StatusCode::kUnsupported, "intersection"},
      {R"("type": "ByteLevel", "add_prefix_space": false, "use_regex": true)",
       R"("type": "Split", "pattern": {"Regex": "x"}, "behavior": "Sideways", "invert": false)",
       StatusCode::kInvalidArgument, "unknown split behavior 'Sideways'"},
      {R"("type": "ByteLevel", "add_prefix_space": false, "use_regex": true)",
       R"("type": "Metaspace", "replacement": "ab")", StatusCode::kInvalidArgument,
       "Metaspace replacement must be exactly one character"},
      {R"("model": {)", R"("model": 7, "x": {)", StatusCode::kInvalidArgument,
       "model: expected an object"},
  };
  for (const Case& c : cases) {
    const Status s = load(with(kBase, c.from, c.to));
    CAPTURE(c.to);
    CHECK(s.code() == c.code);
    CHECK_MESSAGE(std::string(s.message()).find(c.says) != std::string::npos, s.message());
  }
  CHECK(load("{").code() == StatusCode::kInvalidArgument);
  CHECK(load("[]").code() == StatusCode::kInvalidArgument);
  CHECK(load(R"({"version": "1.0"})").code() == StatusCode::kInvalidArgument);
}

TEST_CASE("encode rejects text that is not UTF-8, naming the offset") {
  Result<TokenizerSpec> spec = parse_tokenizer_json(kBase);
  REQUIRE(spec.is_ok());
  auto t = Tokenizer::create(std::move(spec).value());
  REQUIRE(t.is_ok());
  std::vector<int32_t> ids;
  const Status s = t.value()->encode(std::string("ab\xC3(", 4), {}, &ids);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(std::string(s.message()).find("byte offset 2") != std::string::npos);
}

TEST_CASE("GGUF vocabularies: pre-tokenizer names and inconsistent metadata") {
  for (const char* pre :
       {"default", "gpt-2", "gpt2", "llama-bpe", "qwen2", "smollm", "starcoder"}) {
    Result<LlamaPreTokenizer> p = llama_pre_tokenizer(pre);
    CHECK_MESSAGE(p.is_ok(), pre);
    // Every chain ends with ByteLevel (no regex of its own) and its regexes compile.
    REQUIRE(!p->steps.empty());
    CHECK(p->steps.back().kind == PreTokenizerKind::kByteLevel);
    CHECK(!p->steps.back().use_regex);
  }
  CHECK(llama_pre_tokenizer("llama-bpe")->ignore_merges);
  CHECK(llama_pre_tokenizer("no-such-pre").status().code() == StatusCode::kUnsupported);

  LlamaVocab v;
  v.model = "gpt2";
  v.pre = "smollm";
  v.tokens = {"a", "b", "ab", "<|endoftext|>"};
  v.token_types = {1, 1, 1, 3};
  v.merges = {"a b"};
  v.eos_id = 3;
  Result<TokenizerSpec> spec = spec_from_llama_vocab(v);
  REQUIRE_MESSAGE(spec.is_ok(), spec.status().to_string());
  auto t = Tokenizer::create(std::move(spec).value());
  REQUIRE_MESSAGE(t.is_ok(), t.status().to_string());
  CHECK(t.value()->is_special(3));
  CHECK(t.value()->is_added(3));
  CHECK(!t.value()->is_added(2));
  CHECK(t.value()->model_kind() == ModelKind::kBpe);
  CHECK(t.value()->special_ids().eos == 3);

  // A pair listed twice keeps its first rank (llama.cpp); pairs whose parts concatenate alike
  // ("ab" "c", "a" "bc") stay distinct.
  LlamaVocab dup = v;
  dup.merges = {"a b", "ab c", "a bc", "a b", "ab c"};
  Result<TokenizerSpec> dspec = spec_from_llama_vocab(dup);
  REQUIRE_MESSAGE(dspec.is_ok(), dspec.status().to_string());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"a", "b"}, {"ab", "c"}, {"a", "bc"}};
  CHECK(dspec.value().model.merges == want);

  LlamaVocab bad = v;
  bad.token_types = {1, 1};
  CHECK(spec_from_llama_vocab(bad).status().code() == StatusCode::kInvalidArgument);
  bad = v;
  bad.eos_id = 9;
  CHECK(spec_from_llama_vocab(bad).status().code() == StatusCode::kInvalidArgument);
  bad = v;
  bad.merges = {"a  b"};
  CHECK(spec_from_llama_vocab(bad).status().code() == StatusCode::kInvalidArgument);
  bad = v;
  bad.model = "t5";
  CHECK(spec_from_llama_vocab(bad).status().code() == StatusCode::kUnsupported);
  bad = v;
  bad.model = "llama";  // no scores
  CHECK(spec_from_llama_vocab(bad).status().code() == StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace laya::tok
