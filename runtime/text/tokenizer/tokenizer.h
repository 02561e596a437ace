// Tokenizer: encode / decode with Hugging Face `tokenizers` semantics, built from a TokenizerSpec.
//
//   LAYA_ASSIGN_OR_RETURN(tok::TokenizerSpec spec, tok::parse_tokenizer_json(text));
//   LAYA_ASSIGN_OR_RETURN(std::unique_ptr<tok::Tokenizer> t, tok::Tokenizer::create(std::move(spec)));
//   std::vector<int32_t> ids;
//   LAYA_RETURN_IF_ERROR(t->encode("choice question: ...", {}, &ids));   // no special tokens
//
// Models: byte-level BPE (GPT-2 / ModernBERT / SmolLM2 / Llama 3 style), BPE with byte fallback
// and a Metaspace pre-tokenizer (Gemma / mmBERT), llama.cpp's score-ranked BPE (SentencePiece
// "llama" GGUF vocabularies), WordPiece (BERT) and WordLevel. Ids equal HF's for the same
// tokenizer.json; where HF's behaviour could not be reproduced exactly it is listed in
// docs/tokenizers.md.
//
// Thread safety: a Tokenizer is immutable after create(). Any number of threads may call encode /
// decode at once with no lock: each thread keeps its own work buffers and its own cache of
// recently encoded words (thread_local, bounded, dropped when the thread exits), unless the caller
// binds a Workspace of its own (below).
//
// Not computed: character offsets, truncation and padding (tokenizer.json's "truncation" and
// "padding" sections are read and ignored: callers cut sequences themselves, as Laya's sequence
// builder does).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "runtime/text/tokenizer/spec.h"

namespace laya::tok {

struct EncodeOptions {
  // Wrap the ids with the post-processor's template (e.g. [CLS] ... [SEP]).
  bool add_special_tokens = false;
  // HF `encode_special_tokens`: added tokens flagged special are not matched in the text (they are
  // tokenized as plain text); other added tokens still are.
  bool split_special = false;
};

class TokenizerImpl;
struct ThreadState;
class RegexScratch;

// The work state encode / decode use: regex match data (made with the workspace, kept) and
// buffers and word caches (made again by reset()). A caller that must not allocate while it
// tokenizes (a decision context: runtime/decisions/context.h) makes one up front and binds it
// with a WorkspaceScope for each call; reset() at the start of each call drops the buffers the
// last one grew (in that call's arena, ir/arena.h) and makes empty ones in the new call's.
// One thread at a time.
class Workspace {
 public:
  Workspace();
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  void reset();    // fresh buffers (the regex match data is kept)
  void release();  // drops the buffers (reset() makes them again)

 private:
  friend ThreadState& thread_state();
  std::unique_ptr<RegexScratch> regex_;
  std::unique_ptr<ThreadState> state_;
};

// Binds `ws` as this thread's tokenizer work state until destroyed (nests; nullptr: the thread's
// own).
class WorkspaceScope {
 public:
  explicit WorkspaceScope(Workspace* ws);
  ~WorkspaceScope();
  WorkspaceScope(const WorkspaceScope&) = delete;
  WorkspaceScope& operator=(const WorkspaceScope&) = delete;

 private:
  Workspace* prev_;
};
ThreadState& thread_state();

class Tokenizer {
 public:
  // Checks the spec (kInvalidArgument names what is wrong: duplicate or negative ids, merges naming
  // unknown tokens, a missing unk token, template ids out of range, bad regexes...) and builds the
  // lookup tables. The spec is consumed.
  static Result<std::unique_ptr<Tokenizer>> create(TokenizerSpec spec);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // Appends the ids of `text` (UTF-8; kInvalidArgument naming the byte offset otherwise) to *ids.
  Status encode(std::string_view text, const EncodeOptions& opts, std::vector<int32_t>* ids) const;
  // A pair of sequences (the post-processor's pair template when add_special_tokens).
  Status encode_pair(std::string_view a, std::string_view b, const EncodeOptions& opts,
                     std::vector<int32_t>* ids) const;

  // HF decode: ids -> token strings (ids with no token are skipped; tokens flagged special are
  // skipped when skip_special) -> decoder chain -> concatenation; without a decoder the tokens are
  // joined with ' '. Invalid UTF-8 produced by byte-level tokens becomes U+FFFD as HF does.
  Status decode(std::span<const int32_t> ids, bool skip_special, std::string* text) const;

  // The bytes one token adds to generated text, for streaming (llama.cpp's token_to_piece): the
  // decoder chain applied to this token as if it were not the first one, without UTF-8 repair
  // (byte-level and <0xXX> tokens give raw bytes) and without Strip decoders. Special tokens give
  // their text when render_special, else nothing. kOutOfRange for an unknown id.
  Status token_to_piece(int32_t id, bool render_special, std::string* bytes) const;

  // -1 when absent. Added tokens first, then the model's vocabulary (as HF).
  int32_t token_to_id(std::string_view token) const;
  // The token's text (the normalized form for normalized added tokens, as HF); empty for an
  // unknown id.
  std::string_view id_to_token(int32_t id) const;
  // Largest id + 1 over the model vocabulary and the added tokens.
  int32_t vocab_size() const;
  // An added token (matched in text before the model runs).
  bool is_added(int32_t id) const;
  // An added token flagged special (a control token: skipped by decode(skip_special)).
  bool is_special(int32_t id) const;
  const SpecialTokenIds& special_ids() const;
  ModelKind model_kind() const;

 private:
  explicit Tokenizer(std::unique_ptr<TokenizerImpl> impl);
  std::unique_ptr<TokenizerImpl> impl_;
};

}  // namespace laya::tok
