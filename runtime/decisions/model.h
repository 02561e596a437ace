// One entry point from a model file to decisions: a Model opened once and shared read-only, and
// any number of Contexts on it (runtime/decisions/context.h), each one thread's memory. This is
// what the C API (include/laya/laya.h) wraps and what laya-run, laya-serve and the Python package
// reach through it.
//
//   LAYA_ASSIGN_OR_RETURN(auto model, Model::open_file("m.laya", {}));   // .laya or .gguf
//   ContextLimits limits;                                                 // 0: the defaults
//   LAYA_ASSIGN_OR_RETURN(ContextLayout layout, Context::layout(*model, limits));
//   ... the caller provides layout.bytes[r] for every region r ...
//   LAYA_ASSIGN_OR_RETURN(Context* ctx, Context::create(model, limits, regions));
//
// Kinds: an encoder is a Laya decision graph (frontends/import.h contract) with its tokenizer and
// decision config; a decoder is a KV-cached llama / qwen2 graph (a GGUF file, imported as it is
// opened, or the .laya laya-convert makes of one) with its GGUF vocabulary and chat template. A
// model carries everything needed to answer: the tokenizer, the decision settings and
// temperatures, the chat template, the end-of-turn token (from the vocabulary: the token the
// template writes after an assistant message), the grammar vocabulary of a decoder.
//
// Threads and weights: the model owns a runtime::Device (its threads and the packed-weight cache),
// so every context of one model shares one set of packed weights; the model is read-only after
// open except for the cache of compiled schema grammars (locked), and any thread may use it.
// Open allocates (graph, tokenizer tables, the device); nothing else in this file does except
// schema compilation (automaton()).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontends/gguf.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/decisions/decision.h"
#include "runtime/decisions/decoder_decide.h"
#include "runtime/decisions/grammar/token_automaton.h"
#include "runtime/decisions/sequence.h"
#include "runtime/device.h"
#include "runtime/session.h"
#include "runtime/text/tokenizer/tokenizer.h"

namespace laya::decision {

enum class ModelKind : uint8_t { kEncoder = 1, kDecoder = 2 };

struct ModelOptions {
  // Backends in order of preference (runtime::SessionOptions::backends) and their settings (cpu
  // "kernels": auto | ref | a Highway target; ax8850 "vnpu", ...).
  std::vector<std::string> backends = {"cpu"};
  std::vector<std::pair<std::string, hal::BackendOptions>> backend_options;
  int n_threads = 0;  // CPU threads of every context (0: every core this process may use)
  // The FlatBuffers verifier of a .laya file (false: a trusted image, e.g. a signed flash
  // partition; the loader's counts, offsets and graph checks still run).
  bool verify = true;
  // A GGUF decoder's KV cache element type: "" (f16, as llama.cpp), "f16" or "f32". A .laya
  // decoder's is fixed in the file (asking for another one fails).
  std::string kv_type;
};

// What laya_model_info reports.
struct ModelInfo {
  ModelKind kind = ModelKind::kEncoder;
  std::string name;          // general.name / the checkpoint directory / the file name
  std::string architecture;  // graph metadata: "laya", "llama", "qwen2"
  std::string format;        // "laya 1.5", "gguf v3"
  std::string source, converter, source_sha256;
  std::string weight_dtypes;  // distinct weight dtypes, "q4_1,f32"
  std::string chat_format;    // "chatml", "llama3", "" (encoders, or no template)
  uint64_t weight_bytes = 0;
  int64_t parameters = 0;  // weight elements
  int32_t vocab_size = 0;
  int32_t layers = 0, hidden_size = 0;
  int64_t max_tokens = 0;   // encoder: tokens per pass (graph bound); decoder: context length
  int64_t max_options = 0;  // encoder: options per question (graph bound); decoder: 26
  int32_t max_len = 0, head_max_len = 0;  // encoders' decision settings
  double temperature[3] = {1, 1, 1};      // choice, score, noul
  double open_ms = 0;                     // how long opening took (map, import, tables)
};

// A decoder's text side: DecoderText (tokenizer, chat template, stop ids) plus the vocabulary.
struct DecoderVocab {
  std::shared_ptr<const frontends::gguf::File> file;  // tokenizer.ggml.* (the GGUF or the image)
  std::unique_ptr<tok::Tokenizer> tokenizer;
  std::string chat_template;  // "" when the model has none
  int32_t eos = -1;
  int32_t end_of_turn = -1;  // the token the template writes after an assistant message (-1)
};

class Model {
 public:
  // A .laya file (encoder or decoder) or a GGUF decoder, by its first bytes. Errors: the loader's
  // (ir/model_file.h) or the GGUF reader's, naming the path; kInvalidArgument for a .laya that is
  // neither a Laya decision graph nor a KV-cached decoder; kUnsupported for a decoder without a
  // tokenizer this build reads.
  static Result<std::shared_ptr<const Model>> open_file(const std::string& path,
                                                        const ModelOptions& opts);
  // The same over `size` bytes at `data` (64-byte aligned for a .laya), never copied: `owner`
  // (nullable) keeps them alive; otherwise the caller keeps them alive and unchanged while the
  // model and its contexts live.
  static Result<std::shared_ptr<const Model>> open_memory(const void* data, uint64_t size,
                                                          const ModelOptions& opts,
                                                          std::shared_ptr<const void> owner);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  ModelKind kind() const { return kind_; }
  const ModelInfo& info() const { return info_; }
  const ir::Graph& graph() const { return graph_; }
  const ModelOptions& options() const { return opts_; }
  // Session options for a context of this model: the model's device and backends, `n_threads`
  // (0: the model's) threads.
  runtime::SessionOptions session_options(int n_threads) const;

  // ---- encoders ----
  const TextEncoder& encoder() const { return *encoder_; }
  const tok::Tokenizer& encoder_tokenizer() const;
  const SpecialTokens& specials() const { return specials_; }
  const DecisionSettings& settings() const { return settings_; }

  // ---- decoders ----
  const DecoderVocab& vocab() const { return vocab_; }
  // The text side of decisions (tokenizer, chat template, stop ids: the end of turn and EOS), or
  // null with `why` when the model has no chat template this build renders.
  const runtime::DecoderText* decoder_text_or(Status* why) const;
  // The tokenizer (null when the model has none: generation from ids only) and the stop ids,
  // whatever the template.
  const runtime::DecoderText& decoder_text_unchecked() const { return text_; }
  const runtime::AutomatonCache* automata() const { return automata_.get(); }
  const Temperatures& temperatures() const { return temps_; }
  // The compiled automaton of a schema (compiled once per distinct schema text, kept while the
  // model lives; thread-safe). Compiling allocates (on the heap, whatever the caller's arena).
  Result<std::shared_ptr<const grammar::TokenAutomaton>> automaton(const json::Value& schema) const;

 private:
  Model() = default;
  static Result<std::shared_ptr<const Model>> open(const uint8_t* data, uint64_t size,
                                                   const std::string& path,
                                                   const ModelOptions& opts,
                                                   std::shared_ptr<const void> owner);
  Status init_encoder();
  Status init_decoder(std::shared_ptr<const frontends::gguf::File> gguf);
  void fill_info(const std::string& path, std::string_view format);

  ModelKind kind_ = ModelKind::kEncoder;
  ModelOptions opts_;
  ModelInfo info_;
  ir::Graph graph_;
  std::shared_ptr<runtime::Device> device_;
  // encoder
  std::unique_ptr<TextEncoder> encoder_;
  SpecialTokens specials_;
  DecisionSettings settings_;
  // decoder
  DecoderVocab vocab_;
  runtime::DecoderText text_;
  bool has_chat_ = false;
  Status chat_status_;   // why there is no template (has_chat_ false)
  Status vocab_status_;  // why there is no vocabulary (a decoder made without one)
  std::unique_ptr<runtime::AutomatonCache> automata_;
  Temperatures temps_;
};

}  // namespace laya::decision
