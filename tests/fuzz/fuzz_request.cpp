// Fuzz target: a /v1/systemone request body through runtime/decisions: parse_request with the server's
// checks (and, for a body that is JSON, with the library's), then the whole decision around a
// network that is not a model: explain_decision and run_decision tokenize the state and every
// question's head with a tiny WordPiece tokenizer (built once from the tokenizer.json below),
// build the rows (budgets, cuts, markers), shortlist by embeddings, answer from logits and apply
// min_confidence, for plain, batch and schema requests. The stand-in network checks the rows it is
// handed against the contract of decision.h / sequence.h (markers inside the row and on [MASK],
// K wide enough) and answers with logits derived from the rows. Any input must give a Status,
// never a crash, a sanitizer report or a leak.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/json.h"
#include "runtime/decisions/decision.h"
#include "runtime/decisions/request.h"
#include "runtime/decisions/sequence.h"
#include "runtime/text/tokenizer/tokenizer.h"
#include "runtime/text/tokenizer/tokenizer_json.h"

namespace {

using namespace laya;
using namespace laya::decision;

// BERT-style: lowercasing normalizer, whitespace + punctuation split, WordPiece over single
// characters (so every ASCII word tokenizes, other text is [UNK]), [CLS] x [SEP] template.
std::string tiny_tokenizer_json() {
  std::string vocab = R"("[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4)";
  int id = 5;
  const std::string chars = "abcdefghijklmnopqrstuvwxyz0123456789.,:;!?'-()[]{}\"/";
  for (char c : chars) {
    const std::string s = c == '"' ? "\\\"" : std::string(1, c);
    vocab += ", \"" + s + "\": " + std::to_string(id++);
    vocab += ", \"##" + s + "\": " + std::to_string(id++);
  }
  for (const char* w : {"question", "choice", "score", "noul", "yes", "no", "the", "level"})
    vocab += ", \"" + std::string(w) + "\": " + std::to_string(id++);
  auto added = [](int i, const char* s) {
    return std::string(R"({"id": )") + std::to_string(i) + R"(, "content": ")" + s +
           R"(", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, )"
           R"("special": true})";
  };
  return R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [)" +
         added(0, "[PAD]") + ", " + added(1, "[UNK]") + ", " + added(2, "[CLS]") + ", " +
         added(3, "[SEP]") + ", " + added(4, "[MASK]") + R"(],
  "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                 "strip_accents": null, "lowercase": true},
  "pre_tokenizer": {"type": "BertPreTokenizer"},
  "post_processor": {"type": "TemplateProcessing",
    "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
               {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
    "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
             {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
             {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
    "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                       "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
  "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
  "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": {)" +
         vocab + "}}}";
}

class TinyEncoder final : public TextEncoder {
 public:
  explicit TinyEncoder(std::unique_ptr<tok::Tokenizer> t) : t_(std::move(t)) {}
  Status encode(std::string_view text, std::vector<int32_t>* ids) const override {
    return t_->encode(text, tok::EncodeOptions{}, ids);
  }

 private:
  std::unique_ptr<tok::Tokenizer> t_;
};

// Built once: immutable, as a loaded model's tokenizer is.
const TinyEncoder& tiny_encoder() {
  static const TinyEncoder* enc = [] {
    Result<tok::TokenizerSpec> spec = tok::parse_tokenizer_json(tiny_tokenizer_json());
    if (!spec.is_ok()) std::abort();
    Result<std::unique_ptr<tok::Tokenizer>> t = tok::Tokenizer::create(std::move(spec).value());
    if (!t.is_ok()) std::abort();
    return new TinyEncoder(std::move(t).value());
  }();
  return *enc;
}

SpecialTokens tiny_specials() {
  SpecialTokens sp;
  sp.cls = 2;
  sp.sep = 3;
  sp.pad = 0;
  sp.mask = 4;
  sp.mask_text = "[MASK]";
  return sp;
}

// Answers from the rows themselves; aborts when a row breaks the builder's contract.
class StandInNetwork final : public Network {
 public:
  Status forward(std::span<const Row> rows, int K, float* logits, float* act_logits) override {
    for (size_t r = 0; r < rows.size(); ++r) {
      const Row& row = rows[r];
      if (K < 2 || static_cast<size_t>(K) < row.markers.size()) std::abort();
      for (size_t k = 0; k < static_cast<size_t>(K); ++k) {
        float v = -1e4f;
        if (k < row.markers.size()) {
          const int32_t m = row.markers[k];
          if (m < 0 || static_cast<size_t>(m) >= row.ids.size() || row.ids[m] != 4) std::abort();
          v = static_cast<float>((row.ids.size() * 7 + k * 13 + r) % 17) * 0.375f - 3.0f;
        }
        logits[r * K + k] = v;
      }
      act_logits[2 * r] = static_cast<float>(row.ids.size() % 5) - 2.0f;
      act_logits[2 * r + 1] = static_cast<float>(row.markers.size() % 3) - 1.0f;
    }
    return Status::ok();
  }
  Status embed(const std::vector<std::string>& texts,
               std::vector<std::vector<float>>* out) override {
    out->clear();
    for (const std::string& t : texts) {
      std::vector<float> e(8, 0.0f);
      for (size_t i = 0; i < t.size(); ++i) e[i % 8] += static_cast<float>(t[i] % 7) - 3.0f;
      out->push_back(std::move(e));
    }
    return Status::ok();
  }
};

// Requests whose work the harness bounds (the library mode has no server limits; libFuzzer's
// inputs reach a MB): at most this many (state, question) rows and options per request.
constexpr size_t kMaxRows = 1024;
constexpr size_t kMaxOptions = 2048;

void decide(const DecisionRequest& req) {
  size_t options = 0;
  for (const Question& q : req.questions) options += q.options.size();
  if (req.states.size() * req.questions.size() > kMaxRows || options > kMaxOptions) return;
  DecisionSettings settings;
  settings.max_len = 128;
  settings.head_max_len = 64;
  settings.temperatures.temperature[1] = 0.8;
  settings.temperatures.by_options = {{"choice:2", 1.7}, {"score:3-5", 1.25}, {"choice:11+", 0.1}};
  StandInNetwork net;
  const SpecialTokens sp = tiny_specials();
  (void)explain_decision(req, tiny_encoder(), sp, settings, &net);
  DecisionOutput decided;
  const Status out = run_decision(req, tiny_encoder(), sp, settings, net, &decided);
  if (out.is_ok()) (void)json::dump(decided.json);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  if (Result<DecisionRequest> req = parse_request(body); req.is_ok()) decide(*req);
  // The SDK's own checks (no server limits) on the same body, when it is JSON at all.
  Result<json::Value> doc = json::parse(body);
  if (!doc.is_ok()) return 0;
  if (Result<DecisionRequest> req = parse_request(*doc, RequestMode::kLibrary); req.is_ok())
    decide(*req);
  return 0;
}
