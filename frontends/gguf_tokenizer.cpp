#include "frontends/gguf_tokenizer.h"

#include <string>

#include "runtime/text/tokenizer/llama_vocab.h"

namespace laya::frontends::gguf {

Result<std::unique_ptr<tok::Tokenizer>> gguf_tokenizer(const File& f) {
  LAYA_ASSIGN_OR_RETURN(TokenizerData d, tokenizer_data(f));
  tok::LlamaVocab v;
  v.model = std::string(d.model);
  v.pre = std::string(d.pre);
  v.tokens.assign(d.tokens.begin(), d.tokens.end());
  v.scores = std::move(d.scores);
  v.token_types = std::move(d.token_type);
  v.merges.assign(d.merges.begin(), d.merges.end());
  v.bos_id = static_cast<int32_t>(d.bos_id);
  v.eos_id = static_cast<int32_t>(d.eos_id);
  v.unk_id = static_cast<int32_t>(d.unk_id);
  v.pad_id = static_cast<int32_t>(d.pad_id);
  v.add_bos = static_cast<int8_t>(d.add_bos);
  v.add_eos = static_cast<int8_t>(d.add_eos);
  if (f.find("tokenizer.ggml.add_space_prefix") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(bool b, f.get_bool("tokenizer.ggml.add_space_prefix"));
    v.add_space_prefix = b ? 1 : 0;
  }
  LAYA_ASSIGN_OR_RETURN(tok::TokenizerSpec spec, tok::spec_from_llama_vocab(v));
  return tok::Tokenizer::create(std::move(spec));
}

}  // namespace laya::frontends::gguf
