// laya-run's decoder models (generate, score, decide): a GGUF file (its graph built as it is
// read, its tokenizer) or a .laya decoder graph (with the vocabulary and chat template laya-convert
// embedded), prepared for one runner over a KV cache.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "frontends/gguf.h"
#include "frontends/gguf_decoder.h"
#include "frontends/gguf_import.h"
#include "frontends/gguf_tokenizer.h"
#include "ir/model_file.h"
#include "runtime/decoder.h"
#include "runtime/decisions/decoder_decide.h"
#include "runtime/kv_cache.h"
#include "runtime/prefix_cache.h"
#include "runtime/session.h"
#include "runtime/text/tokenizer/tokenizer.h"

namespace laya::tools {

// A decoder opened for the runner: the GGUF file and its tokenizer, or a .laya graph with the GGUF
// vocabulary and chat template laya-convert embedded (frontends/gguf_import.h).
struct Decoder {
  using Clock = std::chrono::steady_clock;

  std::string path;
  std::shared_ptr<const frontends::gguf::File> gguf;   // null for .laya
  std::shared_ptr<const frontends::gguf::File> vocab;  // tokenizer.ggml.* (null: none)
  std::unique_ptr<tok::Tokenizer> tokenizer;           // null when the model has none
  std::string chat_template;                           // "" when the model has none
  int32_t eos = -1;
  ir::Graph graph;               // .laya: loaded by open; GGUF: built by start
  runtime::DecoderInstance run;  // start's session, KV cache and runner
  // The KV cache's element type (--kv-type): "" (f16 for a GGUF, the stored one for a .laya),
  // "f32" or "f16". A GGUF graph is built with it; a .laya decoder's was fixed by laya-convert
  // --kv-type, and asking for another one fails.
  std::string kv_type;

  bool is_gguf() const { return gguf != nullptr; }

  Status open(const std::string& p) {
    path = p;
    if (p.size() < 5 || p.compare(p.size() - 5, 5, ".gguf") != 0) {
      LAYA_ASSIGN_OR_RETURN(graph, ir::model_load(p));
      if (graph.states.empty())
        return Status(StatusCode::kInvalidArgument,
                      p + " is not a decoder over a KV cache (it has no state values)");
      if (graph.meta.tokenizer_kind == frontends::gguf::kGgufTokenizerKind) {
        LAYA_ASSIGN_OR_RETURN(vocab, frontends::gguf::embedded_vocab(graph));
      }
      chat_template = graph.meta.chat_template;
    } else {
      LAYA_ASSIGN_OR_RETURN(frontends::gguf::File f, frontends::gguf::File::open(p));
      gguf = std::make_shared<const frontends::gguf::File>(std::move(f));
      vocab = gguf;
      if (Result<std::string_view> t = gguf->get_string("tokenizer.chat_template"); t.is_ok())
        chat_template = std::string(*t);
    }
    if (vocab == nullptr) return Status::ok();
    if (Result<int64_t> e = vocab->get_int("tokenizer.ggml.eos_token_id"); e.is_ok())
      eos = static_cast<int32_t>(*e);
    if (vocab->find("tokenizer.ggml.model") != nullptr) {
      LAYA_ASSIGN_OR_RETURN(tokenizer, frontends::gguf::gguf_tokenizer(*vocab));
    }
    return Status::ok();
  }

  // Builds (GGUF) and prepares the graph for `tokens` tokens of one sequence plus `extra_cells`
  // (a prefix cache's) in a cache of `seqs` sequences, and prefill chunks of up to `chunk`, binds
  // memory and creates the runner. kOutOfRange when `tokens` exceeds the model's context (GGUF) or
  // the cells the graph's (.laya).
  Status start(const runtime::SessionOptions& base, int64_t chunk, int64_t tokens,
               Clock::time_point load_start, int64_t extra_cells = 0, int32_t seqs = 1) {
    if (is_gguf()) {
      LAYA_ASSIGN_OR_RETURN(frontends::gguf::DecoderParams p,
                            frontends::gguf::decoder_params(*gguf));
      if (tokens > p.context_length)
        return status_error(StatusCode::kOutOfRange,
                            "%lld tokens (prompt and new ones) exceed %s's context of %lld",
                            static_cast<long long>(tokens), path.c_str(),
                            static_cast<long long>(p.context_length));
      frontends::gguf::CachedDecoderGraphOptions o;
      o.max_seq = std::min(chunk, tokens);
      o.max_cells = tokens + extra_cells;
      if (!kv_type.empty()) {
        LAYA_ASSIGN_OR_RETURN(o.kv_dtype, ir::dtype_from_name(kv_type));
      }
      LAYA_ASSIGN_OR_RETURN(graph, frontends::gguf::build_cached_decoder_graph(gguf, o));
    } else if (!kv_type.empty() && !graph.states.empty()) {
      const char* stored = ir::dtype_name(graph.values[graph.states[0]].dtype);
      if (kv_type != stored)
        return status_error(StatusCode::kInvalidArgument,
                            "%s stores a %s KV cache (fixed by laya-convert --kv-type); "
                            "--kv-type %s needs a file converted with it",
                            path.c_str(), stored, kv_type.c_str());
    }
    const int seq_sym = graph.find_symbol("seq");
    const int cells_sym = graph.find_symbol("cells");
    if (seq_sym < 0 || cells_sym < 0)
      return Status(StatusCode::kInvalidArgument,
                    path + " is not a KV-cached decoder graph (symbols seq and cells)");
    const ir::Symbol& cs = graph.symbols[static_cast<size_t>(cells_sym)];
    if (tokens + extra_cells > cs.max)
      return status_error(StatusCode::kOutOfRange,
                          "%lld tokens (prompt and new ones%s) exceed %s's KV cache of %lld cells",
                          static_cast<long long>(tokens + extra_cells),
                          extra_cells > 0 ? ", prefix cache" : "", path.c_str(),
                          static_cast<long long>(cs.max));
    const int64_t cells = std::max(tokens + extra_cells, cs.min);
    chunk = std::min({chunk, tokens, graph.symbols[static_cast<size_t>(seq_sym)].max});
    LAYA_ASSIGN_OR_RETURN(
        run, runtime::DecoderInstance::create(graph, base, chunk, cells, seqs, load_start));
    return Status::ok();
  }
};

// decide.cpp: the text side of an opened decoder for runtime/decisions/decoder_decide.h (tokenizer, chat
// template recognized from the model, stop ids); kUnsupported without a tokenizer.
Result<runtime::DecoderText> decoder_text(const Decoder& d);
// Starts `d` for requests needing `cells` (runtime::decoder_request_cells) with a two-slot prefix
// cache (stored in `*prefix_cache`, which must outlive the decider) and returns a decider with the
// model's decision temperatures (decision::model_temperatures: 1 for a GGUF).
Result<std::unique_ptr<runtime::DecoderDecider>> start_decider(
    Decoder& d, runtime::DecoderText text, const runtime::DecoderCells& cells,
    const runtime::SessionOptions& so, int64_t chunk, Decoder::Clock::time_point load_start,
    std::unique_ptr<runtime::PrefixCache>* prefix_cache);

}  // namespace laya::tools
