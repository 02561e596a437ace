#include "runtime/decisions/model_tokenizer.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/text/tokenizer/tokenizer.h"
#include "runtime/text/tokenizer/tokenizer_json.h"

namespace laya::decision {

namespace {

class HfEncoder final : public TextEncoder {
 public:
  explicit HfEncoder(std::unique_ptr<tok::Tokenizer> t) : t_(std::move(t)) {}
  Status encode(std::string_view text, std::vector<int32_t>* ids) const override {
    return t_->encode(text, tok::EncodeOptions{}, ids);
  }
  const tok::Tokenizer* tokenizer() const override { return t_.get(); }

 private:
  std::unique_ptr<tok::Tokenizer> t_;
};

const std::string* property(const ir::Graph& g, const std::string& key) {
  for (const auto& [k, v] : g.meta.properties)
    if (k == key) return &v;
  return nullptr;
}

// The id of the first of `names` the tokenizer has, or -1.
int32_t first_token(const tok::Tokenizer& t, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (int32_t id = t.token_to_id(n); id >= 0) return id;
  return -1;
}

// Special tokens from the spec's named ids (tokenizer_config.json), else the usual token texts.
Status fill_specials(const tok::Tokenizer& t, SpecialTokens* sp) {
  const tok::SpecialTokenIds& ids = t.special_ids();
  if (sp->cls < 0) sp->cls = ids.cls >= 0 ? ids.cls : first_token(t, {"[CLS]", "<bos>", "<s>"});
  if (sp->sep < 0) sp->sep = ids.sep >= 0 ? ids.sep : first_token(t, {"[SEP]", "<eos>", "</s>"});
  if (sp->pad < 0) sp->pad = ids.pad >= 0 ? ids.pad : first_token(t, {"[PAD]", "<pad>"});
  if (sp->mask < 0) sp->mask = ids.mask >= 0 ? ids.mask : first_token(t, {"[MASK]", "<mask>"});
  if (sp->mask_text.empty() && sp->mask >= 0) sp->mask_text = std::string(t.id_to_token(sp->mask));
  if (sp->cls < 0 || sp->sep < 0 || sp->mask < 0 || sp->mask_text.empty())
    return Status(StatusCode::kInvalidArgument,
                  "the tokenizer does not name its [CLS], [SEP] and [MASK] tokens");
  return Status::ok();
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f.good()) return status_error(StatusCode::kIoError, "cannot open %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

Result<ModelTokenizer> model_tokenizer(const ir::Graph& g) {
  if (g.meta.tokenizer_kind != "hf-tokenizer-json" || !g.meta.tokenizer.data ||
      g.meta.tokenizer.size == 0)
    return Status(
        StatusCode::kInvalidArgument,
        "the model carries no tokenizer.json (tokenizer_kind '" + g.meta.tokenizer_kind + "')");
  const std::string_view text(reinterpret_cast<const char*>(g.meta.tokenizer.data),
                              g.meta.tokenizer.size);
  LAYA_ASSIGN_OR_RETURN(tok::TokenizerSpec spec, tok::parse_tokenizer_json(text));
  LAYA_ASSIGN_OR_RETURN(std::unique_ptr<tok::Tokenizer> t, tok::Tokenizer::create(std::move(spec)));
  ModelTokenizer out;
  auto id_of = [&](const char* role) -> int32_t {
    const std::string* v = property(g, std::string("tokenizer.") + role + "_id");
    if (!v || v->empty()) return -1;
    char* end = nullptr;
    const long id = std::strtol(v->c_str(), &end, 10);
    return *end == '\0' ? static_cast<int32_t>(id) : -1;
  };
  out.specials.cls = id_of("cls");
  out.specials.sep = id_of("sep");
  out.specials.pad = id_of("pad");
  out.specials.mask = id_of("mask");
  if (const std::string* m = property(g, "tokenizer.mask_token")) out.specials.mask_text = *m;
  LAYA_RETURN_IF_ERROR(fill_specials(*t, &out.specials));
  out.encoder = std::make_unique<HfEncoder>(std::move(t));
  return out;
}

Result<ModelTokenizer> tokenizer_from_file(const std::string& path) {
  LAYA_ASSIGN_OR_RETURN(std::string text, read_file(path));
  LAYA_ASSIGN_OR_RETURN(tok::TokenizerSpec spec, tok::parse_tokenizer_json(text));
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  std::ifstream cfg(dir + "/tokenizer_config.json", std::ios::binary);
  if (cfg.good()) {
    std::stringstream ss;
    ss << cfg.rdbuf();
    LAYA_RETURN_IF_ERROR(tok::apply_tokenizer_config(ss.str(), &spec));
  }
  LAYA_ASSIGN_OR_RETURN(std::unique_ptr<tok::Tokenizer> t, tok::Tokenizer::create(std::move(spec)));
  ModelTokenizer out;
  LAYA_RETURN_IF_ERROR(fill_specials(*t, &out.specials));
  out.encoder = std::make_unique<HfEncoder>(std::move(t));
  return out;
}

}  // namespace laya::decision
