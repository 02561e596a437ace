// tokenizer.json (Hugging Face `tokenizers`, format version 1.0) -> TokenizerSpec.
//
// Read: model (BPE, WordPiece, WordLevel), added_tokens, normalizer, pre_tokenizer,
// post_processor (TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence) and
// decoder; nested Sequences are flattened. "truncation" and "padding" are ignored (see
// tokenizer.h). Every error is a Status whose message names the field, e.g.
//   kInvalidArgument "tokenizer.json: model.vocab: tokens 'a' and 'b' both have id 7"
//   kInvalidArgument "tokenizer.json: pre_tokenizer.pretokenizers[1]: unknown type 'Foo'"
//   kUnsupported     "tokenizer.json: model: type 'Unigram' is not supported (BPE, WordPiece, ...)"
// Known HF parts not implemented (kUnsupported): the Unigram model, BPE dropout > 0, the
// Precompiled normalizer (SentencePiece charsmaps) and the UnicodeScripts pre-tokenizer.
#pragma once

#include <string_view>

#include "ir/status.h"
#include "runtime/text/json.h"
#include "runtime/text/tokenizer/spec.h"

namespace laya::tok {

Result<TokenizerSpec> parse_tokenizer_json(std::string_view text);
Result<TokenizerSpec> tokenizer_spec_from_json(const json::Value& root);

// tokenizer_config.json (transformers): sets spec->special_ids from its bos_token, eos_token,
// unk_token, sep_token, pad_token, cls_token and mask_token (a string, or an object with
// "content"), looked up among the spec's added tokens and vocabulary. Names it does not list keep
// their current ids; a named token the tokenizer lacks is kInvalidArgument.
Status apply_tokenizer_config(std::string_view text, TokenizerSpec* spec);

}  // namespace laya::tok
