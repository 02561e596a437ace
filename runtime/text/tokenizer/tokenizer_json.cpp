#include "runtime/text/tokenizer/tokenizer_json.h"

#include <cstdarg>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace laya::tok {
namespace {

using json::Kind;
using json::Value;

constexpr int64_t kMaxId = (int64_t{1} << 24) - 1;

Status err(const std::string& path, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
Status err(const std::string& path, const char* fmt, ...) {
  char buf[Status::kMaxMessage + 1];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return status_error(StatusCode::kInvalidArgument, "tokenizer.json: %s: %s", path.c_str(), buf);
}

Status unsupported(const std::string& path, const std::string& type, const char* supported) {
  return status_error(StatusCode::kUnsupported,
                      "tokenizer.json: %s: type '%s' is not supported (supported: %s)",
                      path.c_str(), type.c_str(), supported);
}

// Typed field access with HF's defaults: a missing field or null takes the default.
struct Obj {
  const Value& v;
  std::string path;

  const Value* get(std::string_view key) const {
    const Value* f = v.find(key);
    return f && !f->is_null() ? f : nullptr;
  }
  std::string sub(std::string_view key) const { return path + "." + std::string(key); }

  Status boolean(std::string_view key, bool def, bool* out) const {
    const Value* f = get(key);
    if (!f) {
      *out = def;
      return Status::ok();
    }
    if (!f->is_bool())
      return err(sub(key), "expected true or false, got %s", json::kind_name(f->kind()));
    *out = f->as_bool();
    return Status::ok();
  }
  Status string(std::string_view key, const char* def, std::string* out) const {
    const Value* f = get(key);
    if (!f) {
      if (!def) return err(sub(key), "missing");
      *out = def;
      return Status::ok();
    }
    if (!f->is_string())
      return err(sub(key), "expected a string, got %s", json::kind_name(f->kind()));
    *out = f->as_string();
    return Status::ok();
  }
  Status integer(std::string_view key, int64_t def, int64_t lo, int64_t hi, int64_t* out) const {
    const Value* f = get(key);
    if (!f) {
      *out = def;
      return Status::ok();
    }
    const std::optional<int64_t> x = f->as_int64();
    if (!f->is_integer() || !x || *x < lo || *x > hi) {
      return err(sub(key), "expected an integer in [%lld, %lld], got %s",
                 static_cast<long long>(lo), static_cast<long long>(hi), f->as_string().c_str());
    }
    *out = *x;
    return Status::ok();
  }
};

Result<Obj> object(const Value& v, std::string path) {
  if (!v.is_object()) {
    return err(path, "expected an object, got %s", json::kind_name(v.kind()));
  }
  return Obj{v, std::move(path)};
}

Result<std::string> type_of(const Obj& o) {
  std::string t;
  LAYA_RETURN_IF_ERROR(o.string("type", nullptr, &t));
  return t;
}

// {"String": s} or {"Regex": r}.
Status pattern(const Obj& o, std::string* text, bool* is_regex) {
  const Value* p = o.get("pattern");
  if (!p || !p->is_object() || p->members().size() != 1 || !p->members()[0].value.is_string()) {
    return err(o.sub("pattern"), "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  const json::Member& m = p->members()[0];
  if (m.key != "String" && m.key != "Regex") {
    return err(o.sub("pattern"), "unknown pattern kind '%s'", m.key.c_str());
  }
  *is_regex = m.key == "Regex";
  *text = m.value.as_string();
  return Status::ok();
}

Status behavior(const Obj& o, const char* def, SplitBehavior* out) {
  std::string b;
  LAYA_RETURN_IF_ERROR(o.string("behavior", def, &b));
#define LAYA_X(name, json_name) \
  if (b == json_name) {         \
    *out = SplitBehavior::name; \
    return Status::ok();        \
  }
  LAYA_TOK_SPLIT_BEHAVIORS(LAYA_X)
#undef LAYA_X
  return err(o.sub("behavior"), "unknown split behavior '%s'", b.c_str());
}

Status prepend_scheme(const Obj& o, PrependScheme* out) {
  std::string s;
  LAYA_RETURN_IF_ERROR(o.string("prepend_scheme", "always", &s));
  if (s == "always") {
    *out = PrependScheme::kAlways;
  } else if (s == "first") {
    *out = PrependScheme::kFirst;
  } else if (s == "never") {
    *out = PrependScheme::kNever;
  } else {
    return err(o.sub("prepend_scheme"), "unknown scheme '%s'", s.c_str());
  }
  // Files older than tokenizers 0.14 say add_prefix_space instead (HF's rule for both).
  bool aps = true;
  LAYA_RETURN_IF_ERROR(o.boolean("add_prefix_space", true, &aps));
  if (!aps) {
    if (*out != PrependScheme::kNever) {
      return err(o.path, "add_prefix_space false does not match prepend_scheme '%s'", s.c_str());
    }
  }
  return Status::ok();
}

template <class Fn>
Status for_each_in(const Obj& o, std::string_view key, Fn fn) {
  const Value* a = o.get(key);
  if (!a || !a->is_array()) return err(o.sub(key), "expected an array");
  for (size_t i = 0; i < a->items().size(); ++i) {
    LAYA_RETURN_IF_ERROR(fn(a->items()[i], o.sub(key) + "[" + std::to_string(i) + "]"));
  }
  return Status::ok();
}

// --- normalizers -------------------------------------------------------------------------------

Status normalizer(const Value& v, const std::string& path, std::vector<NormalizerSpec>* out) {
  if (v.is_null()) return Status::ok();
  LAYA_ASSIGN_OR_RETURN(Obj o, object(v, path));
  LAYA_ASSIGN_OR_RETURN(std::string type, type_of(o));
  if (type == "Sequence") {
    return for_each_in(o, "normalizers",
                       [&](const Value& e, const std::string& p) { return normalizer(e, p, out); });
  }
  if (type == "Precompiled") {
    return unsupported(path, type, "everything but Precompiled (SentencePiece charsmaps)");
  }
  NormalizerSpec n;
  bool known = false;
#define LAYA_X(name, json_name)    \
  if (type == json_name) {         \
    n.kind = NormalizerKind::name; \
    known = true;                  \
  }
  LAYA_TOK_NORMALIZER_KINDS(LAYA_X)
#undef LAYA_X
  if (!known) return err(path, "unknown normalizer type '%s'", type.c_str());
  switch (n.kind) {
    case NormalizerKind::kStrip:
      LAYA_RETURN_IF_ERROR(o.boolean("strip_left", true, &n.strip_left));
      LAYA_RETURN_IF_ERROR(o.boolean("strip_right", true, &n.strip_right));
      break;
    case NormalizerKind::kReplace:
      LAYA_RETURN_IF_ERROR(pattern(o, &n.pattern, &n.pattern_is_regex));
      LAYA_RETURN_IF_ERROR(o.string("content", nullptr, &n.content));
      break;
    case NormalizerKind::kPrepend:
      LAYA_RETURN_IF_ERROR(o.string("prepend", nullptr, &n.content));
      break;
    case NormalizerKind::kBert:
      LAYA_RETURN_IF_ERROR(o.boolean("clean_text", true, &n.clean_text));
      LAYA_RETURN_IF_ERROR(o.boolean("handle_chinese_chars", true, &n.handle_chinese_chars));
      LAYA_RETURN_IF_ERROR(o.boolean("lowercase", true, &n.lowercase));
      LAYA_RETURN_IF_ERROR(o.boolean("strip_accents", n.lowercase, &n.strip_accents));
      break;
    default:
      break;
  }
  out->push_back(std::move(n));
  return Status::ok();
}

// --- pre-tokenizers ----------------------------------------------------------------------------

Status pre_tokenizer(const Value& v, const std::string& path, std::vector<PreTokenizerSpec>* out) {
  if (v.is_null()) return Status::ok();
  LAYA_ASSIGN_OR_RETURN(Obj o, object(v, path));
  LAYA_ASSIGN_OR_RETURN(std::string type, type_of(o));
  if (type == "Sequence") {
    return for_each_in(o, "pretokenizers", [&](const Value& e, const std::string& p) {
      return pre_tokenizer(e, p, out);
    });
  }
  if (type == "UnicodeScripts") return unsupported(path, type, "everything but UnicodeScripts");
  PreTokenizerSpec s;
  bool known = false;
#define LAYA_X(name, json_name)      \
  if (type == json_name) {           \
    s.kind = PreTokenizerKind::name; \
    known = true;                    \
  }
  LAYA_TOK_PRE_TOKENIZER_KINDS(LAYA_X)
#undef LAYA_X
  if (!known) return err(path, "unknown pre-tokenizer type '%s'", type.c_str());
  switch (s.kind) {
    case PreTokenizerKind::kSplit:
      LAYA_RETURN_IF_ERROR(pattern(o, &s.pattern, &s.pattern_is_regex));
      LAYA_RETURN_IF_ERROR(behavior(o, nullptr, &s.behavior));
      LAYA_RETURN_IF_ERROR(o.boolean("invert", false, &s.invert));
      break;
    case PreTokenizerKind::kByteLevel:
      LAYA_RETURN_IF_ERROR(o.boolean("add_prefix_space", true, &s.add_prefix_space));
      LAYA_RETURN_IF_ERROR(o.boolean("use_regex", true, &s.use_regex));
      break;
    case PreTokenizerKind::kMetaspace:
      LAYA_RETURN_IF_ERROR(o.string("replacement", nullptr, &s.replacement));
      LAYA_RETURN_IF_ERROR(prepend_scheme(o, &s.prepend_scheme));
      LAYA_RETURN_IF_ERROR(o.boolean("split", true, &s.split));
      break;
    case PreTokenizerKind::kPunctuation:
      LAYA_RETURN_IF_ERROR(behavior(o, "Isolated", &s.behavior));
      break;
    case PreTokenizerKind::kDigits:
      LAYA_RETURN_IF_ERROR(o.boolean("individual_digits", false, &s.individual_digits));
      break;
    case PreTokenizerKind::kCharDelimiterSplit:
      LAYA_RETURN_IF_ERROR(o.string("delimiter", nullptr, &s.replacement));
      break;
    case PreTokenizerKind::kFixedLength: {
      int64_t len = 5;
      LAYA_RETURN_IF_ERROR(o.integer("length", 5, 1, 1 << 20, &len));
      s.length = static_cast<uint32_t>(len);
      break;
    }
    default:
      break;
  }
  out->push_back(std::move(s));
  return Status::ok();
}

// --- decoders ----------------------------------------------------------------------------------

Status decoder(const Value& v, const std::string& path, std::vector<DecoderSpec>* out) {
  if (v.is_null()) return Status::ok();
  LAYA_ASSIGN_OR_RETURN(Obj o, object(v, path));
  LAYA_ASSIGN_OR_RETURN(std::string type, type_of(o));
  if (type == "Sequence") {
    return for_each_in(o, "decoders",
                       [&](const Value& e, const std::string& p) { return decoder(e, p, out); });
  }
  DecoderSpec d;
  bool known = false;
#define LAYA_X(name, json_name) \
  if (type == json_name) {      \
    d.kind = DecoderKind::name; \
    known = true;               \
  }
  LAYA_TOK_DECODER_KINDS(LAYA_X)
#undef LAYA_X
  if (!known) return err(path, "unknown decoder type '%s'", type.c_str());
  int64_t x = 0;
  switch (d.kind) {
    case DecoderKind::kMetaspace:
      LAYA_RETURN_IF_ERROR(o.string("replacement", nullptr, &d.replacement));
      LAYA_RETURN_IF_ERROR(prepend_scheme(o, &d.prepend_scheme));
      break;
    case DecoderKind::kWordPiece:
      LAYA_RETURN_IF_ERROR(o.string("prefix", "##", &d.prefix));
      LAYA_RETURN_IF_ERROR(o.boolean("cleanup", true, &d.cleanup));
      break;
    case DecoderKind::kStrip:
      LAYA_RETURN_IF_ERROR(o.string("content", nullptr, &d.content));
      LAYA_RETURN_IF_ERROR(o.integer("start", 0, 0, 1 << 20, &x));
      d.start = static_cast<uint32_t>(x);
      LAYA_RETURN_IF_ERROR(o.integer("stop", 0, 0, 1 << 20, &x));
      d.stop = static_cast<uint32_t>(x);
      break;
    case DecoderKind::kReplace:
      LAYA_RETURN_IF_ERROR(pattern(o, &d.pattern, &d.pattern_is_regex));
      LAYA_RETURN_IF_ERROR(o.string("content", nullptr, &d.content));
      break;
    case DecoderKind::kBpe:
      LAYA_RETURN_IF_ERROR(o.string("suffix", "</w>", &d.suffix));
      break;
    case DecoderKind::kCtc:
      LAYA_RETURN_IF_ERROR(o.string("pad_token", "<pad>", &d.pattern));
      LAYA_RETURN_IF_ERROR(o.string("word_delimiter_token", "|", &d.content));
      LAYA_RETURN_IF_ERROR(o.boolean("cleanup", true, &d.cleanup));
      break;
    default:
      break;
  }
  out->push_back(std::move(d));
  return Status::ok();
}

// --- post-processors ---------------------------------------------------------------------------

// ["[CLS]", 101]
Status token_pair(const Obj& o, std::string_view key, int32_t* id) {
  const Value* p = o.get(key);
  const std::optional<int64_t> x =
      p && p->is_array() && p->items().size() == 2 ? p->items()[1].as_int64() : std::nullopt;
  if (!x || !p->items()[0].is_string() || *x < 0 || *x > kMaxId) {
    return err(o.sub(key), "expected [token, id]");
  }
  *id = static_cast<int32_t>(*x);
  return Status::ok();
}

TemplatePiece special(int32_t id, uint32_t type_id) {
  return {TemplatePiece::Kind::kSpecial, {id}, type_id};
}
TemplatePiece sequence(bool b, uint32_t type_id) {
  return {b ? TemplatePiece::Kind::kSequenceB : TemplatePiece::Kind::kSequenceA, {}, type_id};
}

Status template_pieces(const Obj& o, std::string_view key,
                       const std::unordered_map<std::string, std::vector<int32_t>>& specials,
                       std::vector<TemplatePiece>* out) {
  return for_each_in(o, key, [&](const Value& e, const std::string& p) -> Status {
    if (!e.is_object() || e.members().size() != 1 || !e.members()[0].value.is_object()) {
      return err(p, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
    const json::Member& m = e.members()[0];
    const Obj po{m.value, p + "." + m.key};
    std::string id;
    int64_t type_id = 0;
    LAYA_RETURN_IF_ERROR(po.string("id", nullptr, &id));
    LAYA_RETURN_IF_ERROR(po.integer("type_id", 0, 0, 1 << 20, &type_id));
    if (m.key == "Sequence") {
      if (id != "A" && id != "B") return err(po.sub("id"), "expected A or B, got '%s'", id.c_str());
      out->push_back(sequence(id == "B", static_cast<uint32_t>(type_id)));
    } else if (m.key == "SpecialToken") {
      const auto it = specials.find(id);
      if (it == specials.end()) {
        return err(po.sub("id"), "special token '%s' is not in special_tokens", id.c_str());
      }
      out->push_back({TemplatePiece::Kind::kSpecial, it->second, static_cast<uint32_t>(type_id)});
    } else {
      return err(p, "unknown template piece '%s'", m.key.c_str());
    }
    return Status::ok();
  });
}

Status post_processor(const Value& v, const std::string& path, PostProcessorSpec* out) {
  if (v.is_null()) return Status::ok();
  LAYA_ASSIGN_OR_RETURN(Obj o, object(v, path));
  LAYA_ASSIGN_OR_RETURN(std::string type, type_of(o));
  if (type == "Sequence") {
    return for_each_in(o, "processors", [&](const Value& e, const std::string& p) {
      return post_processor(e, p, out);
    });
  }
  if (type == "ByteLevel") return Status::ok();  // offsets only
  if (out->present) {
    return status_error(StatusCode::kUnsupported,
                        "tokenizer.json: %s: more than one post-processor adds special tokens",
                        path.c_str());
  }
  out->present = true;
  if (type == "TemplateProcessing") {
    std::unordered_map<std::string, std::vector<int32_t>> specials;
    const Value* st = o.get("special_tokens");
    if (st && !st->is_object()) return err(o.sub("special_tokens"), "expected an object");
    if (st) {
      for (const json::Member& m : st->members()) {
        const std::string p = o.sub("special_tokens") + "." + m.key;
        const Value* ids = m.value.is_object() ? m.value.find("ids") : nullptr;
        if (!ids || !ids->is_array()) return err(p, "expected {\"ids\": [...]}");
        std::vector<int32_t>& dst = specials[m.key];
        for (const Value& x : ids->items()) {
          const std::optional<int64_t> id = x.as_int64();
          if (!id || *id < 0 || *id > kMaxId) return err(p, "bad id %s", x.as_string().c_str());
          dst.push_back(static_cast<int32_t>(*id));
        }
      }
    }
    LAYA_RETURN_IF_ERROR(template_pieces(o, "single", specials, &out->single));
    LAYA_RETURN_IF_ERROR(template_pieces(o, "pair", specials, &out->pair));
    return Status::ok();
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    int32_t cls = 0, sep = 0;
    LAYA_RETURN_IF_ERROR(token_pair(o, "cls", &cls));
    LAYA_RETURN_IF_ERROR(token_pair(o, "sep", &sep));
    out->single = {special(cls, 0), sequence(false, 0), special(sep, 0)};
    if (type == "BertProcessing") {
      out->pair = {special(cls, 0), sequence(false, 0), special(sep, 0), sequence(true, 1),
                   special(sep, 1)};
    } else {
      out->pair = {special(cls, 0), sequence(false, 0), special(sep, 0),
                   special(sep, 0), sequence(true, 0),  special(sep, 0)};
    }
    return Status::ok();
  }
  return err(path, "unknown post-processor type '%s'", type.c_str());
}

// --- model -------------------------------------------------------------------------------------

Status vocab(const Obj& o, ModelSpec* m) {
  const Value* v = o.get("vocab");
  if (!v || !v->is_object()) return err(o.sub("vocab"), "expected an object of token: id");
  m->vocab.clear();
  // The vocabulary is a table indexed by id, so ids must be dense-ish: a few entries with huge ids
  // would make a small file cost gigabytes (a fuzz find: 2,019 entries up to id 16,130,121 took
  // 1.4 GB). Real files number their tokens 0..n-1; at most half of [0, max id] may be unused.
  int64_t max_id = -1;
  for (const json::Member& e : v->members()) {
    const std::optional<int64_t> id = e.value.as_int64();
    if (!e.value.is_integer() || !id || *id < 0 || *id > kMaxId) {
      return err(o.sub("vocab"), "token '%s': id %s out of range [0, %lld]", e.key.c_str(),
                 e.value.as_string().c_str(), static_cast<long long>(kMaxId));
    }
    max_id = std::max(max_id, *id);
  }
  const auto entries = static_cast<int64_t>(v->members().size());
  if (max_id >= 2 * entries + 1024) {
    return err(o.sub("vocab"),
               "%lld tokens with ids up to %lld: a sparse vocabulary is not supported",
               static_cast<long long>(entries), static_cast<long long>(max_id));
  }
  std::vector<const std::string*> owner;
  for (const json::Member& e : v->members()) {
    const std::optional<int64_t> id = e.value.as_int64();
    if (e.key.empty())
      return err(o.sub("vocab"), "empty token (id %lld)", static_cast<long long>(*id));
    const auto i = static_cast<size_t>(*id);
    if (i >= m->vocab.size()) {
      m->vocab.resize(i + 1);
      owner.resize(i + 1, nullptr);
    }
    if (owner[i]) {
      return err(o.sub("vocab"), "tokens '%s' and '%s' both have id %zu", owner[i]->c_str(),
                 e.key.c_str(), i);
    }
    owner[i] = &e.key;
    m->vocab[i] = e.key;
  }
  return Status::ok();
}

Status model(const Value& v, ModelSpec* m) {
  LAYA_ASSIGN_OR_RETURN(Obj o, object(v, "model"));
  std::string type;
  if (o.get("type")) {
    LAYA_RETURN_IF_ERROR(o.string("type", nullptr, &type));
  } else if (o.get("merges")) {
    type = "BPE";  // files written before the type tag
  } else if (o.get("max_input_chars_per_word")) {
    type = "WordPiece";
  } else {
    return err("model", "missing type");
  }
  if (type == "BPE") {
    m->kind = ModelKind::kBpe;
  } else if (type == "WordPiece") {
    m->kind = ModelKind::kWordPiece;
  } else if (type == "WordLevel") {
    m->kind = ModelKind::kWordLevel;
  } else if (type == "Unigram") {
    return unsupported("model", type, "BPE, WordPiece, WordLevel");
  } else {
    return err("model", "unknown model type '%s'", type.c_str());
  }
  LAYA_RETURN_IF_ERROR(vocab(o, m));
  switch (m->kind) {
    case ModelKind::kBpe: {
      const Value* dropout = o.get("dropout");
      if (dropout && (!dropout->is_number() || dropout->as_double() != 0.0)) {
        return status_error(StatusCode::kUnsupported,
                            "tokenizer.json: model.dropout: BPE dropout (random merges) is not "
                            "supported");
      }
      LAYA_RETURN_IF_ERROR(o.string("unk_token", "", &m->unk_token));
      LAYA_RETURN_IF_ERROR(
          o.string("continuing_subword_prefix", "", &m->continuing_subword_prefix));
      LAYA_RETURN_IF_ERROR(o.string("end_of_word_suffix", "", &m->end_of_word_suffix));
      LAYA_RETURN_IF_ERROR(o.boolean("fuse_unk", false, &m->fuse_unk));
      LAYA_RETURN_IF_ERROR(o.boolean("byte_fallback", false, &m->byte_fallback));
      LAYA_RETURN_IF_ERROR(o.boolean("ignore_merges", false, &m->ignore_merges));
      const Value* merges = o.get("merges");
      if (!merges || !merges->is_array()) return err("model.merges", "expected an array");
      m->merges.reserve(merges->items().size());
      for (size_t i = 0; i < merges->items().size(); ++i) {
        const Value& e = merges->items()[i];
        std::pair<std::string, std::string> pair;
        if (e.is_string()) {
          Status s = parse_merge_line(e.as_string(), i, &pair);
          if (!s.is_ok()) return err("model.merges", "%s", s.message());
        } else if (e.is_array() && e.items().size() == 2 && e.items()[0].is_string() &&
                   e.items()[1].is_string()) {
          pair = {e.items()[0].as_string(), e.items()[1].as_string()};
        } else {
          return err("model.merges", "merge %zu: expected \"a b\" or [\"a\", \"b\"]", i);
        }
        m->merges.push_back(std::move(pair));
      }
      break;
    }
    case ModelKind::kWordPiece: {
      int64_t max_chars = 100;
      LAYA_RETURN_IF_ERROR(o.string("unk_token", "[UNK]", &m->unk_token));
      LAYA_RETURN_IF_ERROR(
          o.string("continuing_subword_prefix", "##", &m->continuing_subword_prefix));
      LAYA_RETURN_IF_ERROR(o.integer("max_input_chars_per_word", 100, 0, INT32_MAX, &max_chars));
      m->max_input_chars_per_word = static_cast<uint32_t>(max_chars);
      break;
    }
    case ModelKind::kWordLevel:
      LAYA_RETURN_IF_ERROR(o.string("unk_token", "<unk>", &m->unk_token));
      break;
    case ModelKind::kBpeScores:
      break;
  }
  return Status::ok();
}

Status added_tokens(const Value& v, std::vector<AddedTokenSpec>* out) {
  if (v.is_null()) return Status::ok();
  if (!v.is_array()) return err("added_tokens", "expected an array");
  for (size_t i = 0; i < v.items().size(); ++i) {
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    LAYA_ASSIGN_OR_RETURN(Obj o, object(v.items()[i], path));
    AddedTokenSpec t;
    int64_t id = 0;
    LAYA_RETURN_IF_ERROR(o.integer("id", -1, 0, kMaxId, &id));
    if (id < 0) return err(o.sub("id"), "missing");
    t.id = static_cast<int32_t>(id);
    LAYA_RETURN_IF_ERROR(o.string("content", nullptr, &t.content));
    LAYA_RETURN_IF_ERROR(o.boolean("single_word", false, &t.single_word));
    LAYA_RETURN_IF_ERROR(o.boolean("lstrip", false, &t.lstrip));
    LAYA_RETURN_IF_ERROR(o.boolean("rstrip", false, &t.rstrip));
    LAYA_RETURN_IF_ERROR(o.boolean("normalized", true, &t.normalized));
    LAYA_RETURN_IF_ERROR(o.boolean("special", false, &t.special));
    out->push_back(std::move(t));
  }
  return Status::ok();
}

const Value& field(const Value& root, std::string_view key) {
  static const Value kNull;
  const Value* v = root.find(key);
  return v ? *v : kNull;
}

}  // namespace

Result<TokenizerSpec> tokenizer_spec_from_json(const Value& root) {
  if (!root.is_object()) return err("(root)", "expected an object");
  const Value& version = field(root, "version");
  if (!version.is_null() && !(version.is_string() && version.as_string() == "1.0")) {
    return err("version", "unknown tokenizer.json version '%s' (expected 1.0)",
               version.as_string().c_str());
  }
  TokenizerSpec spec;
  const Value* m = root.find("model");
  if (!m) return err("model", "missing");
  LAYA_RETURN_IF_ERROR(model(*m, &spec.model));
  LAYA_RETURN_IF_ERROR(added_tokens(field(root, "added_tokens"), &spec.added_tokens));
  LAYA_RETURN_IF_ERROR(normalizer(field(root, "normalizer"), "normalizer", &spec.normalizers));
  LAYA_RETURN_IF_ERROR(
      pre_tokenizer(field(root, "pre_tokenizer"), "pre_tokenizer", &spec.pre_tokenizers));
  LAYA_RETURN_IF_ERROR(
      post_processor(field(root, "post_processor"), "post_processor", &spec.post_processor));
  LAYA_RETURN_IF_ERROR(decoder(field(root, "decoder"), "decoder", &spec.decoders));
  if (!spec.model.unk_token.empty()) {
    for (size_t id = 0; id < spec.model.vocab.size(); ++id) {
      if (spec.model.vocab[id] == spec.model.unk_token)
        spec.special_ids.unk = static_cast<int32_t>(id);
    }
  }
  return spec;
}

Result<TokenizerSpec> parse_tokenizer_json(std::string_view text) {
  LAYA_ASSIGN_OR_RETURN(Value root, json::parse(text, {}, "tokenizer.json"));
  return tokenizer_spec_from_json(root);
}

Status apply_tokenizer_config(std::string_view text, TokenizerSpec* spec) {
  LAYA_ASSIGN_OR_RETURN(Value root, json::parse(text, {}, "tokenizer_config.json"));
  if (!root.is_object()) {
    return Status(StatusCode::kInvalidArgument, "tokenizer_config.json: expected an object");
  }
  const std::pair<const char*, int32_t*> roles[] = {
      {"bos_token", &spec->special_ids.bos},  {"eos_token", &spec->special_ids.eos},
      {"unk_token", &spec->special_ids.unk},  {"sep_token", &spec->special_ids.sep},
      {"pad_token", &spec->special_ids.pad},  {"cls_token", &spec->special_ids.cls},
      {"mask_token", &spec->special_ids.mask}};
  for (const auto& [key, dst] : roles) {
    const Value* v = root.find(key);
    if (!v || v->is_null()) continue;
    const Value* c = v->is_object() ? v->find("content") : v;
    if (!c || !c->is_string()) {
      return status_error(StatusCode::kInvalidArgument,
                          "tokenizer_config.json: %s: expected a string or {\"content\": ...}",
                          key);
    }
    const std::string& name = c->as_string();
    int32_t id = -1;
    for (const AddedTokenSpec& a : spec->added_tokens) {
      if (a.content == name) id = a.id;
    }
    for (size_t i = 0; id < 0 && i < spec->model.vocab.size(); ++i) {
      if (spec->model.vocab[i] == name) id = static_cast<int32_t>(i);
    }
    if (id < 0) {
      return status_error(StatusCode::kInvalidArgument,
                          "tokenizer_config.json: %s '%s' is not a token of this tokenizer", key,
                          name.c_str());
    }
    *dst = id;
  }
  return Status::ok();
}

}  // namespace laya::tok
