// The sequence builder's tokenizer from a model file's embedded tokenizer, or from a tokenizer.json.
//
// A .laya model made by laya-convert embeds the checkpoint's tokenizer.json (tokenizer_kind
// "hf-tokenizer-json") and names its special tokens in properties "tokenizer.<role>_id" /
// "tokenizer.<role>_token" (role: cls, sep, pad, mask, unk), resolved from tokenizer_config.json at
// conversion time: the ids the SDK takes from the tokenizer, never from the encoder config.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include <memory>

#include "runtime/decisions/sequence.h"

namespace laya::decision {

// A tokenizer for the sequence builder with the special tokens it names.
struct ModelTokenizer {
  std::unique_ptr<TextEncoder> encoder;
  SpecialTokens specials;
};

// kInvalidArgument when the model has no embedded tokenizer, the tokenizer does not parse, or the
// [CLS] / [SEP] / [MASK] tokens cannot be named.
Result<ModelTokenizer> model_tokenizer(const ir::Graph& g);

// A tokenizer.json file; the special tokens come from tokenizer_config.json next to it when there
// is one, else from the tokenizer's own added tokens ([CLS]/<bos>, [SEP]/<eos>, [PAD]/<pad>,
// [MASK]/<mask>).
Result<ModelTokenizer> tokenizer_from_file(const std::string& tokenizer_json_path);

}  // namespace laya::decision
