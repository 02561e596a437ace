#include "frontends/gguf_import.h"

#include <cmath>
#include <cstring>
#include <string_view>
#include <utility>

#include "frontends/checkpoint.h"
#include "frontends/gguf_decoder.h"
#include "frontends/sha256.h"

namespace laya::frontends::gguf {

namespace {

// Copies a weight's bytes out of the GGUF mapping chunk by chunk, then drops those pages.
class MappedCopyFill final : public ir::WeightFill {
 public:
  MappedCopyFill(std::shared_ptr<const File> f, const uint8_t* src, uint64_t nbytes)
      : f_(std::move(f)), src_(src), nbytes_(nbytes) {}

  Status fill(uint64_t offset, uint8_t* dst, uint64_t n) const override {
    if (offset > nbytes_ || n > nbytes_ - offset)
      return status_error(StatusCode::kInternal, "fill range [%llu, +%llu) outside %llu bytes",
                          static_cast<unsigned long long>(offset),
                          static_cast<unsigned long long>(n),
                          static_cast<unsigned long long>(nbytes_));
    std::memcpy(dst, src_ + offset, static_cast<size_t>(n));
    f_->release(src_ + offset, n);
    return Status::ok();
  }

 private:
  std::shared_ptr<const File> f_;
  const uint8_t* src_;
  uint64_t nbytes_;
};

void put_bytes(std::string* out, const void* p, uint64_t n) {
  out->append(static_cast<const char*>(p), static_cast<size_t>(n));
}
template <class T>
void put(std::string* out, T v) {
  put_bytes(out, &v, sizeof v);
}
void put_string(std::string* out, std::string_view s) {
  put<uint64_t>(out, s.size());
  put_bytes(out, s.data(), s.size());
}

// A value's bytes as GGUF stores them after its type tag (little-endian host, as the reader).
void put_value(std::string* out, ValueType type, const Value& v) {
  if (type == ValueType::kString) {
    put_string(out, v.str);
  } else if (type == ValueType::kArray) {
    put<uint32_t>(out, static_cast<uint32_t>(v.elem_type));
    put<uint64_t>(out, v.count);
    if (v.elem_type == ValueType::kString) {
      for (std::string_view s : v.strings) put_string(out, s);
    } else if (v.elem_type == ValueType::kArray) {
      for (const Value& a : v.arrays) put_value(out, ValueType::kArray, a);
    } else {
      put_bytes(out, v.elems, v.count * value_type_size(v.elem_type));
    }
  } else {
    put_bytes(out, &v.bits, value_type_size(type));
  }
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Status prefixed(const std::string& path, const Status& s) {
  if (s.is_ok() || starts_with(s.message(), path)) return s;
  return Status(s.code(), path + ": " + s.message());
}

// Holds a parsed vocabulary image and the byte owners it points into.
struct EmbeddedVocab {
  std::vector<std::shared_ptr<const void>> owners;
  File file;
};

constexpr const char* kQTypes[] = {"choice", "score", "noul"};
constexpr const char* kBuckets[] = {"2", "3-5", "6-10", "11+"};

bool valid_bucket_key(const std::string& key) {
  const size_t colon = key.find(':');
  if (colon == std::string::npos) return false;
  const std::string t = key.substr(0, colon), b = key.substr(colon + 1);
  bool type_ok = false, bucket_ok = false;
  for (const char* q : kQTypes) type_ok = type_ok || t == q;
  for (const char* k : kBuckets) bucket_ok = bucket_ok || b == k;
  return type_ok && bucket_ok;
}

}  // namespace

Result<std::string> vocab_image(const File& f) {
  if (f.find("tokenizer.ggml.model") == nullptr || f.find("tokenizer.ggml.tokens") == nullptr)
    return Status(StatusCode::kNotFound,
                  "the GGUF has no vocabulary (tokenizer.ggml.model and tokenizer.ggml.tokens); "
                  "a .laya decoder must be able to tokenize");
  std::string body;
  uint64_t n = 0;
  for (const KeyValue& kv : f.metadata()) {
    if (!starts_with(kv.key, "tokenizer.ggml.")) continue;
    put_string(&body, kv.key);
    put<uint32_t>(&body, static_cast<uint32_t>(kv.value.type));
    put_value(&body, kv.value.type, kv.value);
    ++n;
  }
  std::string out;
  put_bytes(&out, "GGUF", 4);
  put<uint32_t>(&out, 3);
  put<uint64_t>(&out, 0);  // tensors
  put<uint64_t>(&out, n);  // keys
  out += body;
  out.resize((out.size() + 31) / 32 * 32, '\0');  // the (empty) data section's alignment
  return out;
}

Result<std::shared_ptr<const File>> embedded_vocab(const ir::Graph& g) {
  if (g.meta.tokenizer_kind != kGgufTokenizerKind)
    return Status(StatusCode::kNotFound, "the model carries no GGUF vocabulary (tokenizer_kind '" +
                                             g.meta.tokenizer_kind + "', not 'gguf')");
  if (g.meta.tokenizer.data == nullptr || g.meta.tokenizer.size == 0)
    return Status(StatusCode::kFileCorrupt, "the model's GGUF vocabulary is empty");
  Result<File> f = File::parse(g.meta.tokenizer.data, g.meta.tokenizer.size);
  if (!f.is_ok())
    return Status(f.status().code(),
                  std::string("the model's embedded GGUF vocabulary: ") + f.status().message());
  auto holder = std::make_shared<EmbeddedVocab>(EmbeddedVocab{g.keepalive, std::move(f).value()});
  return std::shared_ptr<const File>(holder, &holder->file);
}

Result<ir::Graph> import_gguf(const std::string& path, const GgufImportOptions& opts) {
  if (opts.max_chunk < 1 || opts.max_cells < 0)
    return status_error(StatusCode::kInvalidArgument,
                        "%s: max_chunk %lld must be >= 1 and max_cells %lld >= 0 (0: the context)",
                        path.c_str(), static_cast<long long>(opts.max_chunk),
                        static_cast<long long>(opts.max_cells));
  Result<File> opened = File::open(path);
  if (!opened.is_ok()) return prefixed(path, opened.status());
  auto f = std::make_shared<const File>(std::move(opened).value());
  Result<std::string> vocab = vocab_image(*f);
  if (!vocab.is_ok()) return prefixed(path, vocab.status());
  // The vocabulary must build a tokenizer here, not first on the device.
  if (Result<TokenizerData> td = tokenizer_data(*f); !td.is_ok())
    return prefixed(path, td.status());
  Result<DecoderParams> params = decoder_params(*f);
  if (!params.is_ok()) return prefixed(path, params.status());
  CachedDecoderGraphOptions go;
  go.max_seq = opts.max_chunk;
  go.max_cells = opts.max_cells > 0 ? opts.max_cells : params->context_length;
  go.kv_dtype = opts.kv_dtype;
  Result<ir::Graph> built = build_cached_decoder_graph(f, go);
  if (!built.is_ok()) return prefixed(path, built.status());
  ir::Graph g = std::move(built).value();

  // Every weight in the mapping becomes a deferred copy (as stored), released once written.
  const uint8_t* lo = f->bytes();
  const uint8_t* hi = lo + f->file_size();
  for (ir::Value& v : g.values) {
    if (v.kind != ir::ValueKind::kWeight || v.data == nullptr || v.data < lo || v.data >= hi)
      continue;
    v.fill = std::make_shared<MappedCopyFill>(f, v.data, v.nbytes);
    v.data = nullptr;
  }

  auto vocab_bytes = std::make_shared<std::string>(std::move(vocab).value());
  g.meta.tokenizer_kind = kGgufTokenizerKind;
  g.meta.tokenizer.data = reinterpret_cast<const uint8_t*>(vocab_bytes->data());
  g.meta.tokenizer.size = vocab_bytes->size();
  g.keepalive.push_back(vocab_bytes);

  g.meta.decision = opts.decision;
  g.meta.decision.present = true;

  ir::Provenance& p = g.meta.provenance;
  p.source = path;
  p.converter_version = opts.converter_version;
  ir::SourceFile sf;
  sf.name = base_name(path);
  if (opts.hash_source) {
    Result<std::string> h = sha256_file(path);
    if (!h.is_ok()) return prefixed(path, h.status());
    sf.sha256 = std::move(h).value();
  }
  p.files.push_back(std::move(sf));
  if (Result<std::string_view> name = f->get_string("general.name"); name.is_ok())
    add_property(g, "general.name", std::string(*name));
  return g;
}

Result<ir::DecisionConfig> read_decision_config(const std::string& path) {
  LAYA_ASSIGN_OR_RETURN(json::Value root, read_json(path));
  if (!root.is_object())
    return status_error(StatusCode::kInvalidArgument, "%s: not a JSON object", path.c_str());
  const JsonFields f(root, path);
  ir::DecisionConfig d;
  d.present = true;
  auto temperature = [&](const json::Value& v, const std::string& key) -> Result<float> {
    if (!v.is_number() || !std::isfinite(v.as_double()) || v.as_double() <= 0)
      return f.error(key.c_str(), "must be a finite number > 0, got " + json::dump(v));
    return static_cast<float>(v.as_double());
  };
  for (const json::Member& m : root.members()) {
    if (m.key == "temperature") {
      if (!m.value.is_array() || m.value.items().size() != 3)
        return f.error("temperature", "must be a list of 3 numbers (choice, score, noul), got " +
                                          json::dump(m.value));
      for (size_t i = 0; i < 3; ++i) {
        LAYA_ASSIGN_OR_RETURN(d.temperature[i],
                              temperature(m.value.items()[i], "temperature[" + std::to_string(i) +
                                                                  "] (" + kQTypes[i] + ")"));
      }
    } else if (m.key == "temperature_by_options") {
      if (!m.value.is_object())
        return f.error(
            "temperature_by_options",
            "must be an object \"<type>:<bucket>\" -> number, got " + json::dump(m.value));
      for (const json::Member& t : m.value.members()) {
        const std::string key = "temperature_by_options." + t.key;
        if (!valid_bucket_key(t.key))
          return f.error(key.c_str(),
                         "is not a bucket: \"<choice|score|noul>:<2|3-5|6-10|11+>\", e.g. "
                         "\"choice:3-5\"");
        LAYA_ASSIGN_OR_RETURN(const float v, temperature(t.value, key));
        d.temperature_by_options.emplace_back(t.key, v);
      }
    } else {
      return f.error(m.key.c_str(),
                     "is not a decision-config key (temperature, temperature_by_options)");
    }
  }
  return d;
}

}  // namespace laya::frontends::gguf
