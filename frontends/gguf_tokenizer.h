// The tokenizer of a GGUF file (tokenizer.ggml.*: frontends/gguf.h tokenizer_data) as a
// tok::Tokenizer that tokenizes as llama.cpp does (runtime/text/tokenizer/llama_vocab.h). Encoding with
// EncodeOptions::add_special_tokens adds BOS (and EOS) per the file's add_bos_token /
// add_eos_token, else llama.cpp's default for the vocabulary: llama_tokenize(add_special = true,
// parse_special = true).
#pragma once

#include <memory>

#include "frontends/gguf.h"
#include "ir/status.h"
#include "runtime/text/tokenizer/tokenizer.h"

namespace laya::frontends::gguf {

// Errors from tokenizer_data (kNotFound without tokenizer.ggml.model / .tokens, kFileCorrupt),
// spec_from_llama_vocab (kUnsupported for another tokenizer model) and Tokenizer::create.
Result<std::unique_ptr<tok::Tokenizer>> gguf_tokenizer(const File& f);

}  // namespace laya::frontends::gguf
