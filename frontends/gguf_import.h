// A GGUF decoder as a self-contained model file: what `laya-convert model.gguf -o model.laya`
// writes. The .laya holds everything `laya-run generate / score / decide` need, so the GGUF is not
// needed again:
//  - the KV-cached decoder graph (gguf_decoder.h build_cached_decoder_graph) with every weight AS
//    STORED (Q4_1 stays Q4_1, Q6_K stays Q6_K, ...): each weight is a deferred weight
//    (ir::WeightFill) that copies its bytes from the GGUF's mapping when model_write asks for a
//    chunk and then releases those pages (madvise DONTNEED), so a conversion holds neither the GGUF
//    nor the output in memory;
//  - the vocabulary: Metadata::tokenizer_kind "gguf", Metadata::tokenizer = a GGUF v3 image
//    (no tensors) of every `tokenizer.ggml.*` key of the source, byte for byte the same values
//    (tokens, merges, token types, scores, special ids, add_bos / add_eos, add_space_prefix, the
//    pre-tokenizer name), so embedded_vocab + gguf_tokenizer tokenizes exactly as the GGUF does;
//  - the chat template (Metadata::chat_template, from tokenizer.chat_template; "" when absent);
//  - the decision config (Metadata::decision, present): temperature [choice, score, noul] and
//    temperature_by_options, in the same fields the encoder path stores (default 1.0 each;
//    max_len, head_max_len, head_layers are 0: they mean nothing for a decoder);
//  - provenance: source = the GGUF's path, the converter version, the GGUF's file name with its
//    sha256; the hyperparameters as properties (decoder_metadata) plus "general.name".
// Symbols: "batch" [1, 1], "seq" [1, max_chunk] (the longest prefill chunk a session may plan),
// "cells" [1, max_cells] (the largest KV cache a session may bind; default the model's
// context_length). A session over the loaded file plans only what it binds
// (runtime::decoder_session_options), so large bounds cost nothing until used.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "frontends/gguf.h"
#include "ir/graph.h"
#include "ir/status.h"

namespace laya::frontends::gguf {

// Metadata::tokenizer_kind of a model whose tokenizer is a GGUF vocabulary image.
inline constexpr const char* kGgufTokenizerKind = "gguf";

struct GgufImportOptions {
  int64_t max_chunk = 128;  // bound of "seq" (>= 1; capped at context_length)
  int64_t max_cells = 0;    // bound of "cells"; 0: the model's context_length (capped at it)
  ir::DType kv_dtype = ir::DType::kF16;  // the KV cache states: kF16 or kF32 (fixed in the file)
  bool hash_source = true;               // sha256 of the GGUF into the provenance
  std::string converter_version = "laya-frontends 0.1.0";
  // The decision temperatures (read_decision_config); `present` is set by import_gguf.
  ir::DecisionConfig decision;
};

// Opens `path` and builds the graph above. Errors: File::open's (kIoError, kFileTruncated, ...,
// kUnsupported naming a tensor and its GGML type), build_cached_decoder_graph's (kUnsupported
// naming the architecture or feature), kNotFound without tokenizer.ggml.model / .tokens (a .laya
// decoder must be able to tokenize), kInvalidArgument for a bound < 0 (max_cells) or < 1
// (max_chunk); every message starts with the path.
Result<ir::Graph> import_gguf(const std::string& path, const GgufImportOptions& opts);

// A GGUF v3 image (no tensors) of `f`'s `tokenizer.ggml.*` keys, in file order, values as stored.
// kNotFound when `f` has no tokenizer.ggml.model or tokenizer.ggml.tokens.
Result<std::string> vocab_image(const File& f);

// The embedded vocabulary of a model file made by import_gguf, parsed (File::parse over
// Metadata::tokenizer; no copy). The returned File keeps the graph's byte owners alive, so it may
// outlive `g`. kNotFound when the model's tokenizer_kind is not "gguf" (naming the kind it has);
// File::parse errors for a damaged image.
Result<std::shared_ptr<const File>> embedded_vocab(const ir::Graph& g);

// `--decision-config FILE`: a JSON object with optional keys "temperature" (a list of 3 numbers:
// choice, score, noul) and "temperature_by_options" (an object "<type>:<bucket>" -> number, type
// one of choice / score / noul, bucket one of 2, 3-5, 6-10, 11+: runtime/decisions/answers.h
// temp_bucket). Every temperature must be a finite number > 0; any other key is an error (a typo
// must not silently leave a temperature at 1.0). Absent keys keep 1.0. kInvalidArgument naming the
// file and the key; kIoError when the file cannot be read. The result has `present` set.
Result<ir::DecisionConfig> read_decision_config(const std::string& path);

}  // namespace laya::frontends::gguf
