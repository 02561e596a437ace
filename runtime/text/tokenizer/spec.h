// TokenizerSpec: everything a tokenizer is, as plain data.
//
// Two sources fill it: `tokenizer.json` (Hugging Face `tokenizers`, runtime/text/tokenizer/
// tokenizer_json.h) and a GGUF file's `tokenizer.ggml.*` metadata (the GGUF importer, through
// runtime/text/tokenizer/llama_vocab.h). `Tokenizer::create` (runtime/text/tokenizer/tokenizer.h) checks a
// spec and builds the immutable tables that encode / decode use.
//
// The pipeline is Hugging Face's, step for step:
//   1. added tokens whose `normalized` flag is false are cut out of the raw text (leftmost-longest);
//   2. each remaining segment goes through the normalizer chain, then added tokens whose
//      `normalized` flag is true are cut out of the normalized text;
//   3. each remaining piece goes through the pre-tokenizer chain (every step splits every piece);
//   4. the model turns each piece into ids;
//   5. with add_special_tokens, the post-processor template wraps the ids;
//   decode: ids -> token strings (special ones optionally skipped) -> decoder chain -> joined text.
//
// Sequences in tokenizer.json (a Sequence normalizer / pre-tokenizer / decoder / post-processor)
// are flattened into the chains here: a Sequence of steps applies them in order, which is what a
// chain does.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"

namespace laya::tok {

// X(name, tokenizer.json "type"). kBpe ranks merges by their order in the list; kBpeScores is
// llama.cpp's rule for "llama" (SentencePiece) GGUF vocabularies: the adjacent pair whose
// concatenation is the highest-scoring vocab token merges first (no tokenizer.json type).
#define LAYA_TOK_MODEL_KINDS(X) \
  X(kBpe, "BPE")                \
  X(kBpeScores, "BPE(scores)")  \
  X(kWordPiece, "WordPiece")    \
  X(kWordLevel, "WordLevel")

enum class ModelKind : uint8_t {
#define LAYA_X(name, json) name,
  LAYA_TOK_MODEL_KINDS(LAYA_X)
#undef LAYA_X
};
const char* model_kind_name(ModelKind k);

// How a split pattern's matches become pieces (HF SplitDelimiterBehavior). For "the-final--count"
// split on '-': kRemoved [the, final, count]; kIsolated [the, -, final, -, -, count];
// kMergedWithPrevious [the-, final-, -, count]; kMergedWithNext [the, -final, -, -count];
// kContiguous [the, -, final, --, count].
#define LAYA_TOK_SPLIT_BEHAVIORS(X)            \
  X(kRemoved, "Removed")                       \
  X(kIsolated, "Isolated")                     \
  X(kMergedWithPrevious, "MergedWithPrevious") \
  X(kMergedWithNext, "MergedWithNext")         \
  X(kContiguous, "Contiguous")

enum class SplitBehavior : uint8_t {
#define LAYA_X(name, json) name,
  LAYA_TOK_SPLIT_BEHAVIORS(LAYA_X)
#undef LAYA_X
};
const char* split_behavior_name(SplitBehavior b);

// Regular expressions in a spec are written in Oniguruma syntax (Ruby grammar, Unicode classes),
// which is what Hugging Face `tokenizers` compiles them with; runtime/text/tokenizer/regex.h translates
// them to PCRE2 (see there for the exact differences handled).

#define LAYA_TOK_NORMALIZER_KINDS(X)                                                        \
  X(kNfc, "NFC")                                                                            \
  X(kNfd, "NFD")                                                                            \
  X(kNfkc, "NFKC")                                                                          \
  X(kNfkd, "NFKD")                                                                          \
  X(kLowercase, "Lowercase")                                                                \
  X(kStrip, "Strip")               /* strip_left / strip_right: White_Space characters */   \
  X(kStripAccents, "StripAccents") /* drops every combining mark (General_Category M) */    \
  X(kReplace, "Replace")           /* pattern (literal or regex) -> content, every match */ \
  X(kPrepend, "Prepend")           /* content prepended to a non-empty segment */           \
  X(kBert, "BertNormalizer")                                                                \
  X(kNmt, "Nmt")                                                                            \
  X(kByteLevel, "ByteLevel") /* every byte -> its GPT-2 byte-level character */

enum class NormalizerKind : uint8_t {
#define LAYA_X(name, json) name,
  LAYA_TOK_NORMALIZER_KINDS(LAYA_X)
#undef LAYA_X
};
const char* normalizer_kind_name(NormalizerKind k);

struct NormalizerSpec {
  NormalizerKind kind = NormalizerKind::kNfc;
  // kReplace: `pattern` (a literal when !pattern_is_regex), replaced by `content`.
  // kPrepend: `content` is the prefix.
  std::string pattern;
  bool pattern_is_regex = false;
  std::string content;
  // kStrip.
  bool strip_left = false;
  bool strip_right = false;
  // kBert: HF BertNormalizer. strip_accents defaults to lowercase when tokenizer.json has null.
  bool clean_text = true;
  bool handle_chinese_chars = true;
  bool strip_accents = true;
  bool lowercase = true;
};

#define LAYA_TOK_PRE_TOKENIZER_KINDS(X)                                                        \
  X(kSplit, "Split")                           /* pattern, behavior, invert */                 \
  X(kByteLevel, "ByteLevel")                   /* add_prefix_space, use_regex (GPT-2 regex) */ \
  X(kMetaspace, "Metaspace")                   /* replacement, prepend_scheme, split */        \
  X(kBert, "BertPreTokenizer")                 /* split on White_Space, isolate punctuation */ \
  X(kWhitespace, "Whitespace")                 /* keep \w+ and [^\w\s]+ runs */                \
  X(kWhitespaceSplit, "WhitespaceSplit")       /* split on White_Space */                      \
  X(kPunctuation, "Punctuation")               /* behavior */                                  \
  X(kDigits, "Digits")                         /* individual_digits */                         \
  X(kCharDelimiterSplit, "CharDelimiterSplit") /* delimiter (removed) */                       \
  X(kFixedLength, "FixedLength")               /* length characters per piece */

enum class PreTokenizerKind : uint8_t {
#define LAYA_X(name, json) name,
  LAYA_TOK_PRE_TOKENIZER_KINDS(LAYA_X)
#undef LAYA_X
};
const char* pre_tokenizer_kind_name(PreTokenizerKind k);

// Metaspace's prepend_scheme: kFirst prepends the replacement only to the piece that starts the
// input (original offset 0).
enum class PrependScheme : uint8_t { kAlways, kFirst, kNever };

struct PreTokenizerSpec {
  PreTokenizerKind kind = PreTokenizerKind::kSplit;
  // kSplit: `pattern` (regex when pattern_is_regex, else a literal), `behavior`, `invert`.
  std::string pattern;
  bool pattern_is_regex = false;
  bool invert = false;
  SplitBehavior behavior = SplitBehavior::kIsolated;  // kSplit, kPunctuation
  // kByteLevel.
  bool add_prefix_space = false;
  bool use_regex = true;
  // kMetaspace: `replacement` (one character, UTF-8), prepend_scheme, split.
  // kCharDelimiterSplit: `replacement` holds the delimiter (one character).
  std::string replacement = "\xE2\x96\x81";  // U+2581
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
  // kDigits.
  bool individual_digits = false;
  // kFixedLength: characters per piece (> 0).
  uint32_t length = 5;
};

#define LAYA_TOK_DECODER_KINDS(X)                                                              \
  X(kByteLevel, "ByteLevel")       /* byte-level characters -> bytes (lossy UTF-8 at end) */   \
  X(kMetaspace, "Metaspace")       /* replacement -> ' ' (dropped at the start, per scheme) */ \
  X(kWordPiece, "WordPiece")       /* prefix, cleanup */                                       \
  X(kByteFallback, "ByteFallback") /* <0xXX> tokens -> bytes */                                \
  X(kFuse, "Fuse")                 /* joins all tokens into one */                             \
  X(kStrip, "Strip")               /* content, start, stop */                                  \
  X(kReplace, "Replace")           /* pattern -> content in every token */                     \
  X(kBpe, "BPEDecoder")            /* suffix -> ' ' (or '' on the last token) */               \
  X(kCtc, "CTC")                   /* pad_token, word_delimiter_token, cleanup */

enum class DecoderKind : uint8_t {
#define LAYA_X(name, json) name,
  LAYA_TOK_DECODER_KINDS(LAYA_X)
#undef LAYA_X
};
const char* decoder_kind_name(DecoderKind k);

struct DecoderSpec {
  DecoderKind kind = DecoderKind::kByteLevel;
  // kMetaspace: replacement (one character) and prepend_scheme.
  // kWordPiece: prefix ("##"), cleanup. kBpe: suffix ("</w>").
  // kStrip: content (one character), start, stop. kReplace: pattern / pattern_is_regex / content.
  // kCtc: pad_token (in `pattern`), word_delimiter_token (in `content`), cleanup.
  std::string pattern;
  bool pattern_is_regex = false;
  std::string content;
  std::string replacement = "\xE2\x96\x81";
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  std::string prefix = "##";
  std::string suffix = "</w>";
  bool cleanup = true;
  uint32_t start = 0;
  uint32_t stop = 0;
};

// One element of a post-processor template: sequence A or B, or special token ids.
struct TemplatePiece {
  enum class Kind : uint8_t { kSequenceA, kSequenceB, kSpecial };
  Kind kind = Kind::kSequenceA;
  std::vector<int32_t> ids;  // kSpecial: the ids it adds
  uint32_t type_id = 0;
};

// TemplateProcessing, BertProcessing and RobertaProcessing all become templates. `present` false
// means no post-processor: add_special_tokens adds nothing.
struct PostProcessorSpec {
  bool present = false;
  std::vector<TemplatePiece> single;
  std::vector<TemplatePiece> pair;
};

// A token matched in the text before normalization / pre-tokenization (HF AddedToken).
struct AddedTokenSpec {
  std::string content;
  int32_t id = -1;
  bool special = false;      // skipped by decode(skip_special); matched unless split_special
  bool lstrip = false;       // swallows White_Space on its left
  bool rstrip = false;       // swallows White_Space on its right
  bool single_word = false;  // only matches with no word character (\w) touching either side
  bool normalized = true;    // matched in the normalized text (else in the raw text)
};

// Ids of the tokens models and callers refer to by role; -1 when the tokenizer has none. Filled
// from GGUF metadata (`tokenizer.ggml.bos_token_id`, ...) or tokenizer_config.json.
struct SpecialTokenIds {
  int32_t bos = -1;
  int32_t eos = -1;
  int32_t unk = -1;
  int32_t sep = -1;
  int32_t pad = -1;
  int32_t cls = -1;
  int32_t mask = -1;
};

struct ModelSpec {
  ModelKind kind = ModelKind::kBpe;
  // id -> token text; an empty string marks an id the model does not use (such ids may belong to
  // added tokens only). Every non-empty text appears once.
  std::vector<std::string> vocab;
  // kBpeScores: one score per vocab entry (SentencePiece log-probabilities).
  std::vector<float> scores;
  // kBpe: merge pairs in rank order (rank = index). Both sides and their concatenation (minus the
  // continuing_subword_prefix of the right side) must be vocab tokens.
  std::vector<std::pair<std::string, std::string>> merges;
  std::string unk_token;       // empty: none (BPE drops characters it cannot encode)
  bool byte_fallback = false;  // BPE: unknown characters -> <0xXX> byte tokens when all exist
  bool fuse_unk = false;       // BPE: consecutive unknowns -> one unk
  bool ignore_merges = false;  // BPE: a piece that is a vocab token is that token
  // BPE without unk token: HF drops a character the vocabulary lacks before merging (its
  // neighbours may then merge); llama.cpp keeps it in place while merging (it blocks merges
  // across it) and drops it after. True selects llama.cpp's rule (GGUF vocabularies).
  bool unknown_blocks_merges = false;
  std::string continuing_subword_prefix;    // BPE (may be empty); WordPiece default "##"
  std::string end_of_word_suffix;           // BPE
  uint32_t max_input_chars_per_word = 100;  // WordPiece: longer words -> unk
};

struct TokenizerSpec {
  ModelSpec model;
  std::vector<AddedTokenSpec> added_tokens;
  std::vector<NormalizerSpec> normalizers;
  std::vector<PreTokenizerSpec> pre_tokenizers;
  PostProcessorSpec post_processor;
  std::vector<DecoderSpec> decoders;
  SpecialTokenIds special_ids;
};

// Splits one merges line as HF and llama.cpp do: "a b" -> ("a", "b"). A line without exactly one
// separating space (HF's rule) is kInvalidArgument naming `index`.
Status parse_merge_line(std::string_view line, size_t index,
                        std::pair<std::string, std::string>* out);

}  // namespace laya::tok
