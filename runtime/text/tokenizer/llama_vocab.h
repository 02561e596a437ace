// GGUF tokenizers (llama.cpp's `tokenizer.ggml.*` metadata) -> TokenizerSpec.
//
// The GGUF importer reads the keys into a LlamaVocab and calls spec_from_llama_vocab; the result
// tokenizes as llama.cpp does (llama_tokenize with parse_special = true):
//   model "gpt2"  byte-level BPE: the pre-tokenizer regexes llama.cpp picks for `pre`, each an
//                 Isolated split, then ByteLevel without its own regex; ByteLevel decoder.
//   model "llama" SentencePiece vocabularies: BPE by scores (ModelKind::kBpeScores) with <0xXX>
//                 byte fallback; normalizers Prepend("▁") (when add_space_prefix) and
//                 Replace(" " -> "▁"); decoders Replace("▁" -> " "), ByteFallback, Fuse,
//                 Strip(" ", 1, 0) (the Llama 2 / TinyLlama tokenizer.json chain).
// Token types (llama.cpp LLAMA_TOKEN_TYPE_*): control (3) and unknown (2) tokens become special
// added tokens, user-defined (4) tokens plain added tokens, all matched in the raw text. One
// difference from llama.cpp stays: it cuts special tokens out longest-token-first over the whole
// text, HF (and this code) leftmost-longest; they differ only when special tokens overlap.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "runtime/text/tokenizer/spec.h"

namespace laya::tok {

struct LlamaVocab {
  std::string model;                // tokenizer.ggml.model: "gpt2" or "llama"
  std::string pre;                  // tokenizer.ggml.pre (gpt2 only; empty = llama.cpp's "default")
  std::vector<std::string> tokens;  // tokenizer.ggml.tokens (id = index)
  std::vector<float> scores;        // tokenizer.ggml.scores (required for "llama")
  std::vector<int32_t> token_types;  // tokenizer.ggml.token_type (empty: all normal)
  std::vector<std::string> merges;   // tokenizer.ggml.merges, "a b" (required for "gpt2")
  // tokenizer.ggml.*_token_id; -1 when the key is absent.
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  int32_t sep_id = -1;
  int32_t pad_id = -1;
  int32_t mask_id = -1;
  // tokenizer.ggml.add_bos_token / add_eos_token / add_space_prefix: -1 absent (llama.cpp's
  // default for the model and pre-tokenizer applies), 0 false, 1 true.
  int8_t add_bos = -1;
  int8_t add_eos = -1;
  int8_t add_space_prefix = -1;
};

// The pre-tokenizer llama.cpp uses for a `tokenizer.ggml.pre` name (llama-vocab.cpp,
// llm_tokenizer_bpe): its regexes as Isolated splits plus ByteLevel(add_prefix_space = false,
// use_regex = false), and whether it encodes a word that is a vocab token as that token
// (ignore_merges). Mapped names (the regexes, and where they come from, are in the .cpp):
//   "default" (and "")                                                llama.cpp's default BPE regexes
//   "gpt-2" ("gpt2"), "phi-2", "mpt", "olmo", "jais", "modern-bert"   GPT-2's regex
//   "llama-bpe", "llama3", "llama-v3", "falcon3", "pixtral"           Llama 3's (ignore_merges)
//   "dbrx", "smaug-bpe"                                               Llama 3's (merges applied)
//   "qwen2", "deepseek-r1-qwen", "stablelm2"                          Qwen2's
//   "smollm", "starcoder", "refact", "command-r", "codeshell",
//   "exaone", "minerva-7b"                                            single digits, then GPT-2's
// Other names are kUnsupported.
struct LlamaPreTokenizer {
  std::vector<PreTokenizerSpec> steps;
  bool ignore_merges = false;
  bool add_bos = false;  // llama.cpp's add_bos default for this pre (true for Llama 3)
};
Result<LlamaPreTokenizer> llama_pre_tokenizer(std::string_view pre);

// kInvalidArgument names what is inconsistent (lengths of tokens / scores / token_types, special
// ids out of range, malformed merges); kUnsupported for other tokenizer models ("bert", "t5",
// "rwkv", ...).
Result<TokenizerSpec> spec_from_llama_vocab(const LlamaVocab& v);

}  // namespace laya::tok
