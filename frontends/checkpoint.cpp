#include "frontends/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <unordered_set>

#include "frontends/sha256.h"
#include "kernels/quant.h"

namespace laya::frontends {

// ---- files and JSON --------------------------------------------------------------------------

std::string path_join(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool path_is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

Result<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return status_error(StatusCode::kIoError, "cannot open '%s': %s", path.c_str(),
                        std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      return status_error(StatusCode::kIoError, "cannot read '%s': %s", path.c_str(),
                          std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

Result<json::Value> read_json(const std::string& path) {
  LAYA_ASSIGN_OR_RETURN(std::string text, read_file(path));
  Result<json::Value> v = json::parse(text, {}, path);
  if (!v.is_ok()) return Status(StatusCode::kInvalidArgument, v.status().message());
  return v;
}

Status JsonFields::error(const char* key, const std::string& what) const {
  return status_error(StatusCode::kInvalidArgument, "%s: \"%s\" %s", file_.c_str(), key,
                      what.c_str());
}

Result<int64_t> JsonFields::integer(const char* key, std::optional<int64_t> def) const {
  const json::Value* v = obj_.find(key);
  if (v == nullptr || v->is_null()) {
    if (def) return *def;
    return error(key, "is missing");
  }
  const std::optional<int64_t> i = v->as_int64();
  if (!i) return error(key, "must be an integer, got " + json::dump(*v));
  return *i;
}

Result<double> JsonFields::number(const char* key, std::optional<double> def) const {
  const json::Value* v = obj_.find(key);
  if (v == nullptr || v->is_null()) {
    if (def) return *def;
    return error(key, "is missing");
  }
  if (!v->is_number()) return error(key, "must be a number, got " + json::dump(*v));
  return v->as_double();
}

Result<bool> JsonFields::boolean(const char* key, std::optional<bool> def) const {
  const json::Value* v = obj_.find(key);
  if (v == nullptr || v->is_null()) {
    if (def) return *def;
    return error(key, "is missing");
  }
  if (!v->is_bool()) return error(key, "must be true or false, got " + json::dump(*v));
  return v->as_bool();
}

Result<std::string> JsonFields::string(const char* key, std::optional<std::string> def) const {
  const json::Value* v = obj_.find(key);
  if (v == nullptr || v->is_null()) {
    if (def) return *def;
    return error(key, "is missing");
  }
  if (!v->is_string()) return error(key, "must be a string, got " + json::dump(*v));
  return v->as_string();
}

// ---- weights ---------------------------------------------------------------------------------

namespace {

using ull = unsigned long long;

int ir_size(ir::DType d) {
  return static_cast<int>(ir::dtype_info(d).block_bytes);
}

// Elements [begin, begin + n) of a float tensor, as f32 (the source may be unaligned).
void source_to_f32(const StTensor& t, int64_t begin, int64_t n, float* out) {
  const uint8_t* p = t.data + begin * st_dtype_size(t.dtype);
  switch (t.dtype) {
    case StDType::kF32:
      std::memcpy(out, p, static_cast<size_t>(n) * 4);
      return;
    case StDType::kF16:
    case StDType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = t.dtype == StDType::kF16 ? kernels::f16_to_f32(h) : kernels::bf16_to_f32(h);
      }
      return;
    default:
      return;  // take() admits float tensors only
  }
}

constexpr int64_t kConvertBlock = 2048;  // elements converted per step (on the stack)

// A tensor of the mapped checkpoint converted to `out` on demand (see ir::WeightFill). Int8 keeps
// 127 / amax per row (computed once at import), so a range quantizes exactly as
// kernels::quantize_row_i8 would quantize its whole row.
class ConvertFill final : public ir::WeightFill {
 public:
  ConvertFill(std::shared_ptr<SafetensorsFile> file, const StTensor* t, ir::DType out,
              std::vector<float> inv, int64_t row_len)
      : file_(std::move(file)), t_(t), out_(out), inv_(std::move(inv)), row_len_(row_len) {}

  Status fill(uint64_t offset, uint8_t* dst, uint64_t n) const override {
    const int osz = ir_size(out_);
    const int64_t first = static_cast<int64_t>(offset / osz);
    const int64_t count = static_cast<int64_t>(n / osz);
    if (first < 0 || count < 0 || first + count > t_->elements)
      return status_error(StatusCode::kInternal, "fill range [%llu, +%llu) outside the tensor",
                          static_cast<ull>(offset), static_cast<ull>(n));
    float tmp[kConvertBlock];
    for (int64_t done = 0; done < count;) {
      const int64_t m = std::min(kConvertBlock, count - done);
      const int64_t e0 = first + done;
      source_to_f32(*t_, e0, m, tmp);
      uint8_t* o = dst + done * osz;
      switch (out_) {
        case ir::DType::kF32:
          std::memcpy(o, tmp, static_cast<size_t>(m) * 4);
          break;
        case ir::DType::kF16:
          for (int64_t j = 0; j < m; ++j) {
            const uint16_t h = kernels::f32_to_f16(tmp[j]);
            if ((h & 0x7c00u) == 0x7c00u && std::isfinite(tmp[j]))
              return status_error(
                  StatusCode::kOutOfRange, "tensor '%s': value %g at element %lld does not fit f16",
                  t_->name.c_str(), static_cast<double>(tmp[j]), static_cast<long long>(e0 + j));
            std::memcpy(o + 2 * j, &h, 2);
          }
          break;
        case ir::DType::kBF16:
          for (int64_t j = 0; j < m; ++j) {
            const uint16_t h = kernels::f32_to_bf16(tmp[j]);
            std::memcpy(o + 2 * j, &h, 2);
          }
          break;
        case ir::DType::kI8:
          for (int64_t j = 0; j < m; ++j) {
            const float inv = inv_[static_cast<size_t>((e0 + j) / row_len_)];
            const float r = inv == 0.0f ? 0.0f : std::nearbyintf(tmp[j] * inv);
            o[j] =
                static_cast<uint8_t>(static_cast<int8_t>(std::fmax(-127.0f, std::fmin(127.0f, r))));
          }
          break;
        default:
          return status_error(StatusCode::kInternal, "no conversion to %s", ir::dtype_name(out_));
      }
      done += m;
    }
    // The converted source pages are not needed again: keep the resident set small.
    const int ssz = st_dtype_size(t_->dtype);
    file_->release_range(t_->file_offset + static_cast<uint64_t>(first) * ssz,
                         static_cast<uint64_t>(count) * ssz);
    return Status::ok();
  }

 private:
  std::shared_ptr<SafetensorsFile> file_;  // keeps the mapping (and *t_) alive
  const StTensor* t_;
  ir::DType out_;
  std::vector<float> inv_;  // int8: 127 / amax per row (0 for an all-zero row)
  int64_t row_len_;
};

// Per-row amax of a [rows, row_len] tensor, read in blocks; the pages are released afterwards.
std::vector<float> row_amax(const SafetensorsFile& file, const StTensor& t, int64_t rows,
                            int64_t row_len) {
  std::vector<float> amax(static_cast<size_t>(rows), 0.0f);
  float tmp[kConvertBlock];
  for (int64_t e = 0; e < t.elements;) {
    const int64_t m = std::min(kConvertBlock, t.elements - e);
    source_to_f32(t, e, m, tmp);
    for (int64_t j = 0; j < m; ++j) {
      float& a = amax[static_cast<size_t>((e + j) / row_len)];
      a = std::fmax(a, std::fabs(tmp[j]));
    }
    e += m;
  }
  file.release(t);
  return amax;
}

ir::Shape to_shape(const std::vector<int64_t>& dims) {
  ir::Shape s;
  s.rank = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) s.dims[i] = ir::Dim::fixed(dims[i]);
  return s;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& name) {
  size_t p = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

Status check_formats(const ImportOptions& opts) {
  for (const FormatOverride& o : opts.overrides)
    if ((o.format == WeightFormat::kSource) != (opts.format == WeightFormat::kSource))
      return status_error(StatusCode::kInvalidArgument,
                          "override '%s' = %s: weights are either all in place (source) or all "
                          "converted",
                          o.pattern.c_str(), weight_format_name(o.format));
  return Status::ok();
}

Result<ir::ValueId> WeightSource::take(ir::GraphBuilder& b, const std::string& name,
                                       const std::vector<int64_t>& shape, WeightRole role) {
  LAYA_RETURN_IF_ERROR(expect(name, shape));
  std::shared_ptr<SafetensorsFile> file;
  const StTensor* t = ck_.find(name, &file);
  ir::DType src;
  if (!st_dtype_to_ir(t->dtype, &src))
    return status_error(StatusCode::kInvalidArgument,
                        "%s: tensor '%s' is %s; weights must be F32, F16 or BF16", what_.c_str(),
                        name.c_str(), st_dtype_name(t->dtype));
  WeightFormat format = format_;
  for (const FormatOverride& o : overrides_)
    if (glob_match(o.pattern, name)) {
      format = o.format;
      break;
    }
  const ir::Shape ishape = to_shape(shape);

  if (format == WeightFormat::kSource) {
    const bool aligned = reinterpret_cast<uintptr_t>(t->data) % ir_size(src) == 0;
    if (role != WeightRole::kVector || src == ir::DType::kF32) {
      if (aligned || t->nbytes == 0)
        return b.weight_ref(name, src, ishape, t->data, t->nbytes, file);
      // An unaligned tensor (the file's own layout) is copied as it is.
      return b.weight(name, src, ishape, t->data, t->nbytes);
    }
    // A 16-bit vector becomes f32 in memory (norms and biases: kilobytes).
    std::vector<float> v(static_cast<size_t>(t->elements));
    source_to_f32(*t, 0, t->elements, v.data());
    return b.weight(name, ir::DType::kF32, ishape, v.data(), v.size() * 4);
  }

  ir::DType out = ir::DType::kF32;
  if (role != WeightRole::kVector) {
    switch (format) {
      case WeightFormat::kF16:
        out = ir::DType::kF16;
        break;
      case WeightFormat::kBF16:
        // A table is gathered, not multiplied: its 16-bit source (f16 keeps 3 more mantissa
        // bits than bf16) costs the same memory and no speed.
        out = role == WeightRole::kTable && src != ir::DType::kF32 ? src : ir::DType::kBF16;
        break;
      case WeightFormat::kInt8:
        out = role == WeightRole::kMatrix ? ir::DType::kI8
              : src == ir::DType::kF32    ? ir::DType::kBF16
                                          : src;
        break;
      default:
        break;
    }
  }
  std::vector<float> inv;
  ir::Quant quant;
  int64_t row_len = shape.empty() ? 1 : shape.back();
  if (out == ir::DType::kI8) {
    const int64_t rows = shape[0];
    row_len = t->elements / std::max<int64_t>(rows, 1);
    const std::vector<float> amax = row_amax(*file, *t, rows, row_len);
    quant.kind = ir::QuantKind::kPerChannel;
    quant.axis = 0;
    for (float a : amax) {
      if (!std::isfinite(a))
        return status_error(StatusCode::kInvalidArgument,
                            "%s: tensor '%s' holds a non-finite value", what_.c_str(),
                            name.c_str());
      quant.scales.push_back(a == 0.0f ? 1.0f : a / 127.0f);
      inv.push_back(a == 0.0f ? 0.0f : 127.0f / a);
    }
  }
  auto fill = std::make_shared<ConvertFill>(file, t, out, std::move(inv), row_len);
  return b.weight_deferred(name, out, ishape, std::move(fill), std::move(quant));
}

Status WeightSource::expect(const std::string& name, const std::vector<int64_t>& shape) {
  std::shared_ptr<SafetensorsFile> file;
  const StTensor* t = ck_.find(name, &file);
  if (t == nullptr)
    return status_error(StatusCode::kInvalidArgument, "%s: tensor '%s' %s is missing",
                        what_.c_str(), name.c_str(), st_shape_string(shape).c_str());
  if (t->shape != shape)
    return status_error(StatusCode::kInvalidArgument,
                        "%s: tensor '%s' is %s in '%s', the configuration needs %s", what_.c_str(),
                        name.c_str(), st_shape_string(t->shape).c_str(), file->path().c_str(),
                        st_shape_string(shape).c_str());
  used_.push_back(name);
  return Status::ok();
}

void WeightSource::ignore(const std::string& name) {
  used_.push_back(name);
}

Status WeightSource::check_all_used() const {
  const std::unordered_set<std::string> used(used_.begin(), used_.end());
  std::string list;
  int count = 0;
  for (const auto& [t, f] : ck_.all()) {
    if (used.count(t->name)) continue;
    if (++count <= 3)
      list += (list.empty() ? "" : ", ") + ("'" + t->name + "' " + st_shape_string(t->shape));
  }
  if (count == 0) return Status::ok();
  return status_error(StatusCode::kInvalidArgument,
                      "%s: %d tensor(s) are not part of this architecture: %s%s", what_.c_str(),
                      count, list.c_str(), count > 3 ? ", ..." : "");
}

// ---- tokenizer -------------------------------------------------------------------------------

namespace {

const char* const kRoles[] = {"cls", "sep", "pad", "mask", "unk"};

// A special token entry: "text" or {"content": "text", ...}.
std::optional<std::string> token_text(const json::Value* v) {
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) return v->as_string();
  if (v->is_object())
    if (const json::Value* c = v->find("content"); c != nullptr && c->is_string())
      return c->as_string();
  return std::nullopt;
}

std::optional<int64_t> lookup_id(const json::Value& tok, const json::Value* tok_config,
                                 const std::string& text) {
  if (const json::Value* added = tok.find("added_tokens"); added != nullptr && added->is_array())
    for (const json::Value& a : added->items()) {
      const json::Value* c = a.find("content");
      const json::Value* id = a.find("id");
      if (c != nullptr && c->is_string() && c->as_string() == text && id != nullptr &&
          id->as_int64())
        return *id->as_int64();
    }
  if (const json::Value* model = tok.find("model"); model != nullptr && model->is_object())
    if (const json::Value* vocab = model->find("vocab")) {
      if (vocab->is_object()) {
        if (const json::Value* id = vocab->find(text); id != nullptr && id->as_int64())
          return *id->as_int64();
      } else if (vocab->is_array()) {  // Unigram: [[piece, score], ...]
        for (size_t i = 0; i < vocab->items().size(); ++i) {
          const json::Value& e = vocab->items()[i];
          if (e.is_array() && !e.items().empty() && e.items()[0].is_string() &&
              e.items()[0].as_string() == text)
            return static_cast<int64_t>(i);
        }
      }
    }
  if (tok_config != nullptr)
    if (const json::Value* dec = tok_config->find("added_tokens_decoder");
        dec != nullptr && dec->is_object())
      for (const json::Member& m : dec->members())
        if (token_text(&m.value) == text) {
          char* end = nullptr;
          const long long id = std::strtoll(m.key.c_str(), &end, 10);
          if (end != m.key.c_str() && *end == '\0' && id >= 0) return id;
        }
  return std::nullopt;
}

}  // namespace

Result<TokenizerFiles> read_tokenizer(const std::string& dir,
                                      const std::vector<std::string>& required) {
  TokenizerFiles out;
  const std::string tok_path = path_join(dir, "tokenizer.json");
  LAYA_ASSIGN_OR_RETURN(std::string text, read_file(tok_path));
  out.files.push_back(tok_path);
  Result<json::Value> tok = json::parse(text, {}, tok_path);
  if (!tok.is_ok()) return Status(StatusCode::kInvalidArgument, tok.status().message());
  out.json = std::make_shared<std::string>(std::move(text));

  std::optional<json::Value> config, map;
  const std::string config_path = path_join(dir, "tokenizer_config.json");
  const std::string map_path = path_join(dir, "special_tokens_map.json");
  if (path_exists(config_path)) {
    LAYA_ASSIGN_OR_RETURN(config, read_json(config_path));
    out.files.push_back(config_path);
  }
  if (path_exists(map_path)) {
    LAYA_ASSIGN_OR_RETURN(map, read_json(map_path));
    out.files.push_back(map_path);
  }
  for (const char* role : kRoles) {
    const std::string key = std::string(role) + "_token";
    std::optional<std::string> name;
    if (config) name = token_text(config->find(key));
    if (map)
      if (std::optional<std::string> m = token_text(map->find(key))) name = m;
    const bool needed = std::find(required.begin(), required.end(), role) != required.end();
    if (!name) {
      if (needed)
        return status_error(StatusCode::kInvalidArgument,
                            "%s: no %s_token in tokenizer_config.json or special_tokens_map.json",
                            dir.c_str(), role);
      continue;
    }
    const std::optional<int64_t> id = lookup_id(*tok, config ? &*config : nullptr, *name);
    if (!id) {
      if (needed)
        return status_error(StatusCode::kInvalidArgument,
                            "%s: %s_token \"%s\" is not in the tokenizer's vocabulary", dir.c_str(),
                            role, name->c_str());
      continue;
    }
    out.special.push_back(SpecialToken{role, *name, *id});
  }
  return out;
}

void add_property(ir::Graph& g, const std::string& key, const std::string& value) {
  g.meta.properties.emplace_back(key, value);
}

void attach_tokenizer(ir::Graph& g, const TokenizerFiles& tok) {
  g.meta.tokenizer_kind = "hf-tokenizer-json";
  g.meta.tokenizer.data = reinterpret_cast<const uint8_t*>(tok.json->data());
  g.meta.tokenizer.size = tok.json->size();
  g.keepalive.push_back(tok.json);
  for (const SpecialToken& s : tok.special) {
    add_property(g, "tokenizer." + s.role + "_id", std::to_string(s.id));
    add_property(g, "tokenizer." + s.role + "_token", s.content);
  }
}

void add_bucket_properties(ir::Graph& g, int64_t max_tokens, int64_t max_rows,
                           int64_t max_options) {
  auto list = [](std::vector<int64_t> b, int64_t max) {
    std::string s;
    for (int64_t v : b)
      if (v < max) s += std::to_string(v) + ",";
    return s + std::to_string(max);
  };
  std::vector<int64_t> tokens;
  for (int64_t t = 64; t < max_tokens; t *= 2) tokens.push_back(t);
  add_property(g, "buckets.tokens", list(tokens, max_tokens));
  if (max_rows > 0) add_property(g, "buckets.rows", list({1, 4, 16}, max_rows));
  if (max_options > 0) add_property(g, "buckets.options", list({4, 16, 64}, max_options));
}

// ---- provenance ------------------------------------------------------------------------------

Status set_provenance(ir::Graph& g, const std::string& dir, const std::vector<std::string>& files,
                      const ImportOptions& opts) {
  ir::Provenance& p = g.meta.provenance;
  p.source = dir;
  p.converter_version = opts.converter_version;
  for (const std::string& f : files) {
    ir::SourceFile sf;
    sf.name = f.compare(0, dir.size(), dir) == 0 ? f.substr(dir.size()) : f;
    while (!sf.name.empty() && sf.name.front() == '/') sf.name.erase(0, 1);
    if (opts.hash_sources) {
      LAYA_ASSIGN_OR_RETURN(sf.sha256, sha256_file(f));
    }
    p.files.push_back(std::move(sf));
  }
  return Status::ok();
}

}  // namespace laya::frontends
