// Tokenizer: checks a spec, builds the tables, runs the pipeline.
#include "runtime/text/tokenizer/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "runtime/text/tokenizer/tokenizer_impl.h"
#include "runtime/text/tokenizer/unicode.h"

namespace laya::tok {
namespace {

// Largest id a spec may use (a vocabulary of 16M tokens is far beyond any real one; the bound
// keeps a corrupt file from asking for a giant table).
constexpr int32_t kMaxId = (1 << 24) - 1;

// GPT-2's pre-tokenizer regex (HF ByteLevel, openai/gpt-2 encoder.py).
constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// HF Whitespace pre-tokenizer (a Rust `regex` pattern).
constexpr std::string_view kWhitespaceRegex = R"(\w+|[^\w\s])"
                                              "+";

std::atomic<uint64_t> g_next_owner{1};

Result<char32_t> one_char(std::string_view s, const char* what) {
  if (s.empty() || !unicode::utf8_valid(s) || unicode::cp_count(s) != 1) {
    return status_error(StatusCode::kInvalidArgument,
                        "%s must be exactly one character, got '%.*s'", what,
                        static_cast<int>(std::min<size_t>(s.size(), 32)), s.data());
  }
  size_t i = 0;
  return unicode::next_cp(s, i);
}

Result<Regex> pattern_regex(const std::string& pattern, bool is_regex) {
  return is_regex ? Regex::hf(pattern, RegexDialect::kOniguruma) : Regex::literal(pattern);
}

}  // namespace

std::string_view TokenizerImpl::token_text(int32_t id) const {
  if (id < 0 || id >= vocab_size) return {};
  const int32_t a = added_by_id[static_cast<size_t>(id)];
  if (a >= 0) return added[static_cast<size_t>(a)].decode_text;
  if (static_cast<size_t>(id) < model.vocab.size()) return model.vocab[static_cast<size_t>(id)];
  return {};
}

Status TokenizerImpl::build(TokenizerSpec spec) {
  model = std::move(spec.model);
  // Model vocabulary.
  if (model.vocab.size() > static_cast<size_t>(kMaxId) + 1) {
    return status_error(StatusCode::kInvalidArgument, "vocabulary of %zu tokens is too large",
                        model.vocab.size());
  }
  vocab_index.reserve(model.vocab.size());
  for (size_t id = 0; id < model.vocab.size(); ++id) {
    const std::string& t = model.vocab[id];
    if (t.empty()) continue;
    if (!unicode::utf8_valid(t)) {
      return status_error(StatusCode::kInvalidArgument, "vocab token %zu is not valid UTF-8", id);
    }
    if (!vocab_index.insert(t, static_cast<int32_t>(id))) {
      return status_error(StatusCode::kInvalidArgument,
                          "vocab token '%s' appears twice (ids %d and %zu)", t.c_str(),
                          vocab_index.find(t), id);
    }
    max_token_bytes = std::max(max_token_bytes, t.size());
  }
  if (!model.unk_token.empty()) unk_id = vocab_index.find(model.unk_token);
  if ((model.kind == ModelKind::kWordPiece || model.kind == ModelKind::kWordLevel) && unk_id < 0) {
    return status_error(StatusCode::kInvalidArgument, "%s: unk token '%s' is not in the vocabulary",
                        model_kind_name(model.kind), model.unk_token.c_str());
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    byte_fallback_ids[static_cast<size_t>(b)] = vocab_index.find(name);
  }
  if (model.kind == ModelKind::kBpeScores) {
    if (model.scores.size() != model.vocab.size()) {
      return status_error(StatusCode::kInvalidArgument,
                          "BPE(scores): %zu scores for %zu vocab tokens", model.scores.size(),
                          model.vocab.size());
    }
    for (size_t id = 0; id < model.scores.size(); ++id) {
      if (!std::isfinite(model.scores[id])) {
        return status_error(StatusCode::kInvalidArgument, "BPE(scores): score of token %zu is %g",
                            id, static_cast<double>(model.scores[id]));
      }
    }
    if (!model.merges.empty()) {
      return Status(StatusCode::kInvalidArgument,
                    "BPE(scores) ranks merges by score: the spec must not list merges");
    }
  }
  if (model.kind == ModelKind::kBpe) {
    merges.reserve(model.merges.size());
    const size_t plen = model.continuing_subword_prefix.size();
    std::string joined;
    for (size_t r = 0; r < model.merges.size(); ++r) {
      const auto& [a, b] = model.merges[r];
      const int32_t ia = vocab_index.find(a);
      const int32_t ib = vocab_index.find(b);
      if (ia < 0 || ib < 0) {
        return status_error(StatusCode::kInvalidArgument,
                            "merge %zu ('%s' '%s'): '%s' is not in the vocabulary", r, a.c_str(),
                            b.c_str(), ia < 0 ? a.c_str() : b.c_str());
      }
      if (b.size() < plen) {
        return status_error(StatusCode::kInvalidArgument,
                            "merge %zu: '%s' is shorter than the continuing_subword_prefix", r,
                            b.c_str());
      }
      joined.assign(a);
      joined.append(b, plen, std::string::npos);
      const int32_t im = vocab_index.find(joined);
      if (im < 0) {
        return status_error(StatusCode::kInvalidArgument,
                            "merge %zu ('%s' '%s'): the merged token '%s' is not in the vocabulary",
                            r, a.c_str(), b.c_str(), joined.c_str());
      }
      merges.insert(ia, ib, static_cast<int32_t>(r), im);
    }
  } else if (!model.merges.empty() && model.kind != ModelKind::kBpeScores) {
    return status_error(StatusCode::kInvalidArgument, "%s does not use merges",
                        model_kind_name(model.kind));
  }
  ThreadState& ts = thread_state();

  // Normalizers.
  for (NormalizerSpec& n : spec.normalizers) {
    NormStep step{std::move(n), {}};
    if (step.spec.kind == NormalizerKind::kReplace) {
      if (step.spec.pattern.empty()) {
        return Status(StatusCode::kInvalidArgument, "Replace normalizer: empty pattern");
      }
      LAYA_ASSIGN_OR_RETURN(step.regex,
                            pattern_regex(step.spec.pattern, step.spec.pattern_is_regex));
    }
    if (!unicode::utf8_valid(step.spec.content)) {
      return Status(StatusCode::kInvalidArgument, "normalizer content is not valid UTF-8");
    }
    normalizers.push_back(std::move(step));
  }

  // Pre-tokenizers.
  for (PreTokenizerSpec& p : spec.pre_tokenizers) {
    PreStep step{std::move(p), {}, 0};
    const PreTokenizerKind kind = step.spec.kind;
    if (kind == PreTokenizerKind::kSplit) {
      LAYA_ASSIGN_OR_RETURN(step.regex,
                            pattern_regex(step.spec.pattern, step.spec.pattern_is_regex));
    } else if (kind == PreTokenizerKind::kByteLevel && step.spec.use_regex) {
      LAYA_ASSIGN_OR_RETURN(step.regex, Regex::hf(kGpt2Regex, RegexDialect::kOniguruma));
    } else if (kind == PreTokenizerKind::kWhitespace) {
      LAYA_ASSIGN_OR_RETURN(step.regex, Regex::hf(kWhitespaceRegex, RegexDialect::kRust));
    } else if (kind == PreTokenizerKind::kMetaspace) {
      LAYA_ASSIGN_OR_RETURN(step.ch, one_char(step.spec.replacement, "Metaspace replacement"));
    } else if (kind == PreTokenizerKind::kCharDelimiterSplit) {
      LAYA_ASSIGN_OR_RETURN(step.ch,
                            one_char(step.spec.replacement, "CharDelimiterSplit delimiter"));
    } else if (kind == PreTokenizerKind::kFixedLength && step.spec.length == 0) {
      return Status(StatusCode::kInvalidArgument, "FixedLength pre-tokenizer: length 0");
    }
    pre_tokenizers.push_back(std::move(step));
  }
  for (const PreStep& p : pre_tokenizers) {
    track_origin = track_origin || (p.spec.kind == PreTokenizerKind::kMetaspace &&
                                    p.spec.prepend_scheme == PrependScheme::kFirst);
  }
  defer_byte_level = model.kind == ModelKind::kBpe && !pre_tokenizers.empty() &&
                     pre_tokenizers.back().spec.kind == PreTokenizerKind::kByteLevel;
  if (defer_byte_level) {
    for (int combo = 0; combo < 4; ++combo) {
      for (int b = 0; b < 256; ++b) {
        std::string unit;
        unicode::append_utf8(unit, byte_to_char(static_cast<uint8_t>(b)));
        lookup_unit(unit, combo & 1, (combo & 2) != 0, ts,
                    &byte_units[static_cast<size_t>(combo) * 256 + static_cast<size_t>(b)]);
      }
    }
    if (model.ignore_merges) {
      raw_vocab_index.reserve(model.vocab.size());
      std::string raw;
      for (size_t id = 0; id < model.vocab.size(); ++id) {
        const std::string& t = model.vocab[id];
        raw.clear();
        bool ok = !t.empty();
        for (size_t i = 0; ok && i < t.size();) {
          const int b = char_to_byte(unicode::next_cp(t, i));
          if (b < 0) ok = false;
          raw.push_back(static_cast<char>(b));
        }
        if (ok) raw_vocab_index.insert(raw, static_cast<int32_t>(id));
      }
    }
  }

  // Added tokens (HF AddedVocabulary::add_tokens: a content the vocabulary knows keeps its id; the
  // same content listed again updates its flags).
  int32_t max_id = static_cast<int32_t>(model.vocab.size()) - 1;
  for (AddedTokenSpec& a : spec.added_tokens) {
    if (a.content.empty()) continue;
    if (!unicode::utf8_valid(a.content)) {
      return status_error(StatusCode::kInvalidArgument, "added token %d is not valid UTF-8", a.id);
    }
    const int32_t known = added_index.find(a.content);
    if (known >= 0) {
      for (AddedToken& t : added) {
        if (t.spec.id == known) {
          t.spec = a;
          t.spec.id = known;
        }
      }
      continue;
    }
    const int32_t in_vocab = vocab_index.find(a.content);
    if (in_vocab >= 0) a.id = in_vocab;
    if (a.id < 0 || a.id > kMaxId) {
      return status_error(StatusCode::kInvalidArgument, "added token '%s': id %d out of range",
                          a.content.c_str(), a.id);
    }
    if (in_vocab < 0 && static_cast<size_t>(a.id) < model.vocab.size() &&
        !model.vocab[static_cast<size_t>(a.id)].empty()) {
      return status_error(StatusCode::kInvalidArgument,
                          "added token '%s' has id %d, which the vocabulary gives to '%s'",
                          a.content.c_str(), a.id, model.vocab[static_cast<size_t>(a.id)].c_str());
    }
    for (const AddedToken& t : added) {
      if (t.spec.id == a.id) {
        return status_error(StatusCode::kInvalidArgument, "added tokens '%s' and '%s' share id %d",
                            t.spec.content.c_str(), a.content.c_str(), a.id);
      }
    }
    added_index.insert(a.content, a.id);
    added.push_back({std::move(a), {}});
    max_id = std::max(max_id, added.back().spec.id);
  }
  vocab_size = max_id + 1;
  added_by_id.assign(static_cast<size_t>(vocab_size), -1);
  bool any_single_word = false;
  for (size_t k = 0; k < added.size(); ++k) {
    AddedToken& t = added[k];
    added_by_id[static_cast<size_t>(t.spec.id)] = static_cast<int32_t>(k);
    t.decode_text = t.spec.content;
    if (t.spec.normalized && !normalizers.empty()) {
      LAYA_RETURN_IF_ERROR(normalize(t.spec.content, ts, &t.decode_text));
    }
    if (t.spec.special) special_contents.insert(t.spec.content, t.spec.id);
    if (t.spec.normalized) {
      if (!t.decode_text.empty()) norm_matcher.add(t.decode_text, static_cast<int32_t>(k));
    } else {
      raw_matcher.add(t.spec.content, static_cast<int32_t>(k));
    }
    any_single_word = any_single_word || t.spec.single_word;
  }
  raw_matcher.build();
  norm_matcher.build();
  if (any_single_word) {
    LAYA_ASSIGN_OR_RETURN(word_char, Regex::hf("\\w", RegexDialect::kRust));
  }

  // Post-processor.
  post = std::move(spec.post_processor);
  for (const auto* tmpl : {&post.single, &post.pair}) {
    for (const TemplatePiece& p : *tmpl) {
      for (int32_t id : p.ids) {
        if (id < 0 || id >= vocab_size) {
          return status_error(StatusCode::kInvalidArgument,
                              "post-processor special token id %d is outside the vocabulary (%d)",
                              id, vocab_size);
        }
      }
    }
  }

  // Decoders.
  for (DecoderSpec& d : spec.decoders) {
    DecStep step{std::move(d), {}, 0};
    const DecoderKind kind = step.spec.kind;
    if (kind == DecoderKind::kReplace) {
      if (step.spec.pattern.empty()) {
        return Status(StatusCode::kInvalidArgument, "Replace decoder: empty pattern");
      }
      LAYA_ASSIGN_OR_RETURN(step.regex,
                            pattern_regex(step.spec.pattern, step.spec.pattern_is_regex));
    } else if (kind == DecoderKind::kMetaspace) {
      LAYA_ASSIGN_OR_RETURN(step.ch, one_char(step.spec.replacement, "Metaspace replacement"));
    } else if (kind == DecoderKind::kStrip) {
      LAYA_ASSIGN_OR_RETURN(step.ch, one_char(step.spec.content, "Strip decoder content"));
    }
    decoders.push_back(std::move(step));
  }

  special_ids = spec.special_ids;
  for (int32_t id : {special_ids.bos, special_ids.eos, special_ids.unk, special_ids.sep,
                     special_ids.pad, special_ids.cls, special_ids.mask}) {
    if (id < -1 || id >= vocab_size) {
      return status_error(StatusCode::kInvalidArgument, "special token id %d out of range", id);
    }
  }
  owner_id = g_next_owner.fetch_add(1);
  return Status::ok();
}

void TokenizerImpl::split_added(std::string_view s, const AddedMatcher& m, bool split_special,
                                ThreadState& ts, std::vector<Segment>* out) const {
  // HF AddedVocabulary::find_matches: leftmost-longest matches, then single_word / lstrip /
  // rstrip adjustments; the pieces between matches are text.
  out->clear();
  size_t start_offset = 0;
  size_t pos = 0;
  auto is_word_char = [&](size_t at) {
    Result<bool> r = word_char.matches_at(s, at, ts.regex);
    return r.is_ok() && r.value();
  };
  while (pos < s.size()) {
    if (!m.may_start(s, pos)) {
      ++pos;
      continue;
    }
    int32_t k = -1;
    const size_t len = m.longest_at(s, pos, &k);
    if (len == 0) {
      ++pos;
      continue;
    }
    size_t start = pos;
    size_t stop = pos + len;
    pos = stop;
    const AddedTokenSpec& t = added[static_cast<size_t>(k)].spec;
    if (split_special && t.special) continue;
    if (t.single_word) {
      bool start_space = start == 0;
      if (!start_space) {
        size_t c = start - 1;
        while (c > 0 && (static_cast<unsigned char>(s[c]) & 0xC0) == 0x80) --c;
        start_space = !is_word_char(c);
      }
      const bool stop_space = stop == s.size() || !is_word_char(stop);
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) {
      size_t b = start;
      while (b > 0) {
        size_t c = b - 1;
        while (c > 0 && (static_cast<unsigned char>(s[c]) & 0xC0) == 0x80) --c;
        size_t i = c;
        if (!unicode::is_white_space(unicode::next_cp(s, i))) break;
        b = c;
      }
      start = std::max(b, start_offset);
    }
    if (t.rstrip) {
      while (stop < s.size()) {
        size_t i = stop;
        if (!unicode::is_white_space(unicode::next_cp(s, i))) break;
        stop = i;
      }
    }
    if (start_offset < start) out->push_back({start_offset, start, -1});
    out->push_back({start, stop, t.id});
    start_offset = stop;
  }
  if (start_offset < s.size()) out->push_back({start_offset, s.size(), -1});
}

Status TokenizerImpl::encode_one(std::string_view text, const EncodeOptions& opts,
                                 std::vector<int32_t>* ids) const {
  size_t bad = 0;
  if (!unicode::utf8_valid(text, &bad)) {
    return status_error(StatusCode::kInvalidArgument,
                        "text to encode is not valid UTF-8 (byte offset %zu)", bad);
  }
  ThreadState& ts = thread_state();
  ts.arena.reset();
  ts.cache = &ts.cache_for(owner_id);
  std::vector<Segment>& raw = ts.segs_raw;
  if (raw_matcher.empty()) {
    raw.clear();
    if (!text.empty()) raw.push_back({0, text.size(), -1});
  } else {
    split_added(text, raw_matcher, opts.split_special, ts, &raw);
  }
  for (const Segment& seg : raw) {
    if (seg.id >= 0) {
      ids->push_back(seg.id);
      continue;
    }
    if (seg.end <= seg.start) continue;
    std::string_view norm = text.substr(seg.start, seg.end - seg.start);
    if (!normalizers.empty()) {
      LAYA_RETURN_IF_ERROR(normalize(norm, ts, &ts.norm));
      norm = ts.norm;
    }
    // Bytes of the normalized segment that come from the input's first character (HF aligns every
    // character a normalizer makes from it, an NFKD expansion say, to original offset 0).
    size_t first = 0;
    if (track_origin && seg.start == 0) {
      const std::string_view c0 =
          text.substr(0, unicode::utf8_len(static_cast<unsigned char>(text[0])));
      first = c0.size();
      if (!normalizers.empty()) {
        LAYA_RETURN_IF_ERROR(normalize(c0, ts, &ts.first));
        first = ts.first.size();
      }
    }
    std::vector<Segment>& subs = ts.segs_norm;
    if (norm_matcher.empty()) {
      subs.clear();
      if (!norm.empty()) subs.push_back({0, norm.size(), -1});
    } else {
      split_added(norm, norm_matcher, opts.split_special, ts, &subs);
    }
    for (const Segment& sub : subs) {
      if (sub.id >= 0) {
        ids->push_back(sub.id);
        continue;
      }
      if (sub.end <= sub.start) continue;
      const auto origin =
          static_cast<uint32_t>(sub.start < first ? std::min(first, sub.end) - sub.start : 0);
      const Piece piece{norm.substr(sub.start, sub.end - sub.start), origin, false};
      std::vector<Piece>* pieces = nullptr;
      if (pre_tokenizers.empty()) {
        ts.pieces_a.assign(1, piece);
        pieces = &ts.pieces_a;
      } else {
        LAYA_RETURN_IF_ERROR(pre_tokenize(piece, ts, &pieces));
      }
      for (const Piece& p : *pieces) {
        if (p.text.empty()) continue;
        if (!model_encode(p, ts, ids)) return ts.error;
      }
    }
  }
  return Status::ok();
}

void TokenizerImpl::post_process(const std::vector<int32_t>& a, const std::vector<int32_t>* b,
                                 std::vector<int32_t>* out) const {
  if (!post.present) {
    out->insert(out->end(), a.begin(), a.end());
    if (b) out->insert(out->end(), b->begin(), b->end());
    return;
  }
  for (const TemplatePiece& p : b ? post.pair : post.single) {
    switch (p.kind) {
      case TemplatePiece::Kind::kSequenceA:
        out->insert(out->end(), a.begin(), a.end());
        break;
      case TemplatePiece::Kind::kSequenceB:
        if (b) out->insert(out->end(), b->begin(), b->end());
        break;
      case TemplatePiece::Kind::kSpecial:
        out->insert(out->end(), p.ids.begin(), p.ids.end());
        break;
    }
  }
}

// --- Tokenizer ---------------------------------------------------------------------------------

Tokenizer::Tokenizer(std::unique_ptr<TokenizerImpl> impl) : impl_(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(TokenizerSpec spec) {
  auto impl = std::make_unique<TokenizerImpl>();
  LAYA_RETURN_IF_ERROR(impl->build(std::move(spec)));
  return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
}

Status Tokenizer::encode(std::string_view text, const EncodeOptions& opts,
                         std::vector<int32_t>* ids) const {
  if (!opts.add_special_tokens) return impl_->encode_one(text, opts, ids);
  std::vector<int32_t>& a = thread_state().ids_b;
  a.clear();
  LAYA_RETURN_IF_ERROR(impl_->encode_one(text, opts, &a));
  std::vector<int32_t> copy(a);
  impl_->post_process(copy, nullptr, ids);
  return Status::ok();
}

Status Tokenizer::encode_pair(std::string_view a, std::string_view b, const EncodeOptions& opts,
                              std::vector<int32_t>* ids) const {
  std::vector<int32_t> ia, ib;
  LAYA_RETURN_IF_ERROR(impl_->encode_one(a, opts, &ia));
  LAYA_RETURN_IF_ERROR(impl_->encode_one(b, opts, &ib));
  if (!opts.add_special_tokens) {
    ids->insert(ids->end(), ia.begin(), ia.end());
    ids->insert(ids->end(), ib.begin(), ib.end());
    return Status::ok();
  }
  impl_->post_process(ia, &ib, ids);
  return Status::ok();
}

Status Tokenizer::decode(std::span<const int32_t> ids, bool skip_special, std::string* text) const {
  return impl_->decode(ids, skip_special, text);
}

Status Tokenizer::token_to_piece(int32_t id, bool render_special, std::string* bytes) const {
  return impl_->token_to_piece(id, render_special, bytes);
}

int32_t Tokenizer::token_to_id(std::string_view token) const {
  const int32_t a = impl_->added_index.find(token);
  return a >= 0 ? a : impl_->vocab_index.find(token);
}

std::string_view Tokenizer::id_to_token(int32_t id) const {
  return impl_->token_text(id);
}
int32_t Tokenizer::vocab_size() const {
  return impl_->vocab_size;
}

bool Tokenizer::is_added(int32_t id) const {
  return id >= 0 && id < impl_->vocab_size && impl_->added_by_id[static_cast<size_t>(id)] >= 0;
}

bool Tokenizer::is_special(int32_t id) const {
  if (!is_added(id)) return false;
  return impl_->added[static_cast<size_t>(impl_->added_by_id[static_cast<size_t>(id)])]
      .spec.special;
}

const SpecialTokenIds& Tokenizer::special_ids() const {
  return impl_->special_ids;
}
ModelKind Tokenizer::model_kind() const {
  return impl_->model.kind;
}

}  // namespace laya::tok
