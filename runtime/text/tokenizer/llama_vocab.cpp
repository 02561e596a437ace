#include "runtime/text/tokenizer/llama_vocab.h"

#include <initializer_list>
#include <string>

#include "runtime/text/tokenizer/tokenizer_impl.h"

namespace laya::tok {
namespace {

// The regexes below are llama.cpp's (src/llama-vocab.cpp, llm_tokenizer_bpe::llm_tokenizer_bpe,
// as vendored by llama-cpp-python 0.3.36); llama.cpp applies them one after the other, keeping
// both the matches and the text between them as pieces.

// LLAMA_VOCAB_PRE_TYPE_GPT2 (also MPT, OLMO, JAIS): GPT-2's regex without its final "|\s+" (text
// no alternative matches still becomes a piece of its own, so the result is the same).
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";

// LLAMA_VOCAB_PRE_TYPE_LLAMA3 (also DBRX, SMAUG): Llama 3's tokenizer.json regex with
// (?i:'s|'t|...) spelled out as '[sS]|'[tT]|... as llama.cpp does (so U+017F and U+212A do not
// match as s and k).
constexpr const char* kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// LLAMA_VOCAB_PRE_TYPE_QWEN2 (also STABLELM2): Qwen2's regex, same adaptation; single digits.
constexpr const char* kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// LLAMA_VOCAB_PRE_TYPE_SMOLLM (also STARCODER, REFACT, COMMAND_R, CODESHELL, EXAONE, MINERVA):
// every digit alone, then GPT-2's regex (HF: Digits(individual_digits) + ByteLevel).
constexpr const char* kDigit = R"(\p{N})";

// LLAMA_VOCAB_PRE_TYPE_DEFAULT.
constexpr const char* kDefault[] = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)",
                                    R"([0-9][0-9][0-9])"};

bool one_of(std::string_view s, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (s == n) return true;
  }
  return false;
}

PreTokenizerSpec isolated(const char* regex) {
  PreTokenizerSpec s;
  s.kind = PreTokenizerKind::kSplit;
  s.pattern = regex;
  s.pattern_is_regex = true;
  s.behavior = SplitBehavior::kIsolated;
  return s;
}

NormalizerSpec replace(std::string from, std::string to) {
  NormalizerSpec n;
  n.kind = NormalizerKind::kReplace;
  n.pattern = std::move(from);
  n.content = std::move(to);
  return n;
}

constexpr const char* kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

}  // namespace

Result<LlamaPreTokenizer> llama_pre_tokenizer(std::string_view pre) {
  LlamaPreTokenizer r;
  if (pre.empty() || pre == "default") {
    for (const char* re : kDefault) r.steps.push_back(isolated(re));
  } else if (one_of(pre, {"gpt-2", "gpt2", "phi-2", "mpt", "olmo", "jais", "modern-bert"})) {
    r.steps.push_back(isolated(kGpt2));
  } else if (one_of(pre, {"llama-bpe", "llama3", "llama-v3", "falcon3", "pixtral"})) {
    r.steps.push_back(isolated(kLlama3));
    r.ignore_merges = true;
    r.add_bos = true;
  } else if (one_of(pre, {"dbrx", "smaug-bpe"})) {
    r.steps.push_back(isolated(kLlama3));
  } else if (one_of(pre, {"qwen2", "deepseek-r1-qwen", "stablelm2"})) {
    r.steps.push_back(isolated(kQwen2));
  } else if (one_of(pre, {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
                          "minerva-7b"})) {
    r.steps.push_back(isolated(kDigit));
    r.steps.push_back(isolated(kGpt2));
  } else {
    return status_error(StatusCode::kUnsupported,
                        "GGUF tokenizer.ggml.pre '%.*s' is not mapped to a pre-tokenizer",
                        static_cast<int>(pre.size()), pre.data());
  }
  PreTokenizerSpec bl;
  bl.kind = PreTokenizerKind::kByteLevel;
  bl.add_prefix_space = false;
  bl.use_regex = false;
  r.steps.push_back(bl);
  return r;
}

Result<TokenizerSpec> spec_from_llama_vocab(const LlamaVocab& v) {
  const size_t n = v.tokens.size();
  if (n == 0) return Status(StatusCode::kInvalidArgument, "GGUF tokenizer: no tokens");
  if (!v.token_types.empty() && v.token_types.size() != n) {
    return status_error(StatusCode::kInvalidArgument,
                        "GGUF tokenizer: %zu token types for %zu tokens", v.token_types.size(), n);
  }
  const int32_t ids[] = {v.bos_id, v.eos_id, v.unk_id, v.sep_id, v.pad_id, v.mask_id};
  for (int32_t id : ids) {
    if (id < -1 || id >= static_cast<int64_t>(n)) {
      return status_error(StatusCode::kInvalidArgument,
                          "GGUF tokenizer: special token id %d outside the %zu tokens", id, n);
    }
  }
  TokenizerSpec spec;
  spec.special_ids = {v.bos_id, v.eos_id, v.unk_id, v.sep_id, v.pad_id, -1, v.mask_id};
  ModelSpec& m = spec.model;
  m.vocab = v.tokens;
  bool add_bos = false;
  if (v.model == "gpt2") {
    m.kind = ModelKind::kBpe;
    LAYA_ASSIGN_OR_RETURN(LlamaPreTokenizer pre, llama_pre_tokenizer(v.pre));
    spec.pre_tokenizers = std::move(pre.steps);
    m.ignore_merges = pre.ignore_merges;
    m.unknown_blocks_merges = true;
    add_bos = pre.add_bos;
    // llama.cpp keeps the first rank of a pair listed twice. A valid line has exactly one space
    // (parse_merge_line), so the line itself is its pair's key (StringIdMap: a std::set of string
    // pairs took ~45 ms here).
    StringIdMap seen;
    seen.reserve(v.merges.size());
    m.merges.reserve(v.merges.size());
    for (size_t i = 0; i < v.merges.size(); ++i) {
      std::pair<std::string, std::string> p;
      LAYA_RETURN_IF_ERROR(parse_merge_line(v.merges[i], i, &p));
      if (seen.insert(v.merges[i], static_cast<int32_t>(i))) m.merges.push_back(std::move(p));
    }
    DecoderSpec d;
    d.kind = DecoderKind::kByteLevel;
    spec.decoders.push_back(d);
  } else if (v.model == "llama") {
    m.kind = ModelKind::kBpeScores;
    if (v.scores.size() != n) {
      return status_error(StatusCode::kInvalidArgument, "GGUF tokenizer: %zu scores for %zu tokens",
                          v.scores.size(), n);
    }
    m.scores = v.scores;
    m.byte_fallback = true;
    const int32_t unk = v.unk_id >= 0 ? v.unk_id : 0;
    m.unk_token = v.tokens[static_cast<size_t>(unk)];
    add_bos = true;
    if (v.add_space_prefix != 0) {
      NormalizerSpec p;
      p.kind = NormalizerKind::kPrepend;
      p.content = kSpace;
      spec.normalizers.push_back(p);
    }
    spec.normalizers.push_back(replace(" ", kSpace));
    DecoderSpec r;
    r.kind = DecoderKind::kReplace;
    r.pattern = kSpace;
    r.content = " ";
    spec.decoders.push_back(r);
    DecoderSpec bf;
    bf.kind = DecoderKind::kByteFallback;
    spec.decoders.push_back(bf);
    DecoderSpec fuse;
    fuse.kind = DecoderKind::kFuse;
    spec.decoders.push_back(fuse);
    if (v.add_space_prefix != 0) {
      DecoderSpec strip;
      strip.kind = DecoderKind::kStrip;
      strip.content = " ";
      strip.start = 1;
      spec.decoders.push_back(strip);
    }
  } else {
    return status_error(StatusCode::kUnsupported,
                        "GGUF tokenizer.ggml.model '%s' is not supported (gpt2, llama)",
                        v.model.c_str());
  }
  // Control / unknown tokens are special; user-defined ones are plain added tokens.
  for (size_t id = 0; id < v.token_types.size(); ++id) {
    const int32_t t = v.token_types[id];
    if (t != 2 && t != 3 && t != 4) continue;
    AddedTokenSpec a;
    a.content = v.tokens[id];
    a.id = static_cast<int32_t>(id);
    a.special = t != 4;
    a.normalized = false;
    spec.added_tokens.push_back(std::move(a));
  }
  if (v.add_bos >= 0) add_bos = v.add_bos == 1;
  const bool add_eos = v.add_eos == 1;
  if ((add_bos && v.bos_id >= 0) || (add_eos && v.eos_id >= 0)) {
    PostProcessorSpec& p = spec.post_processor;
    p.present = true;
    for (auto* t : {&p.single, &p.pair}) {
      if (add_bos && v.bos_id >= 0) t->push_back({TemplatePiece::Kind::kSpecial, {v.bos_id}, 0});
      t->push_back({TemplatePiece::Kind::kSequenceA, {}, 0});
      if (add_eos && v.eos_id >= 0) t->push_back({TemplatePiece::Kind::kSpecial, {v.eos_id}, 0});
    }
    p.pair.push_back({TemplatePiece::Kind::kSequenceB, {}, 1});
  }
  return spec;
}

}  // namespace laya::tok
