#include "frontends/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "runtime/text/json.h"

namespace laya::frontends {

namespace {

using ull = unsigned long long;

struct DTypeName {
  StDType type;
  const char* name;
  int size;
};
constexpr DTypeName kDTypes[] = {
    {StDType::kF64, "F64", 8},   {StDType::kF32, "F32", 4}, {StDType::kF16, "F16", 2},
    {StDType::kBF16, "BF16", 2}, {StDType::kI64, "I64", 8}, {StDType::kI32, "I32", 4},
    {StDType::kI16, "I16", 2},   {StDType::kI8, "I8", 1},   {StDType::kU8, "U8", 1},
    {StDType::kBool, "BOOL", 1},
};

bool dtype_from_name(std::string_view s, StDType* out) {
  for (const DTypeName& d : kDTypes)
    if (s == d.name) {
      *out = d.type;
      return true;
    }
  return false;
}

Status io_error(const char* what, const std::string& path) {
  return status_error(StatusCode::kIoError, "%s '%s': %s", what, path.c_str(),
                      std::strerror(errno));
}

// An unmapping owner for open()'s mapping.
struct Mapping {
  void* addr = nullptr;
  size_t len = 0;
  ~Mapping() {
    if (addr != nullptr) ::munmap(addr, len);
  }
};

// A non-negative JSON integer that fits int64, or false.
bool json_nonneg(const json::Value& v, int64_t* out) {
  const std::optional<int64_t> i = v.as_int64();
  if (!i || *i < 0) return false;
  *out = *i;
  return true;
}

bool plain_file_name(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

std::string join(const std::string& dir, const std::string& name) {
  return dir.empty() || dir.back() == '/' ? dir + name : dir + "/" + name;
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

Result<std::string> read_text(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = io_error("cannot read", path);
      ::close(fd);
      return s;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

}  // namespace

const char* st_dtype_name(StDType t) {
  for (const DTypeName& d : kDTypes)
    if (d.type == t) return d.name;
  return "?";
}

int st_dtype_size(StDType t) {
  for (const DTypeName& d : kDTypes)
    if (d.type == t) return d.size;
  return 0;
}

bool st_dtype_to_ir(StDType t, ir::DType* out) {
  switch (t) {
    case StDType::kF32:
      *out = ir::DType::kF32;
      return true;
    case StDType::kF16:
      *out = ir::DType::kF16;
      return true;
    case StDType::kBF16:
      *out = ir::DType::kBF16;
      return true;
    default:
      return false;
  }
}

std::string st_shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// ---- SafetensorsFile -----------------------------------------------------------------------------

SafetensorsFile::~SafetensorsFile() = default;

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    Status s = io_error("cannot stat", path);
    ::close(fd);
    return s;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return status_error(StatusCode::kIoError, "'%s' is not a regular file", path.c_str());
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  auto map = std::make_shared<Mapping>();
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      Status s = io_error("cannot map", path);
      ::close(fd);
      return s;
    }
    map->addr = p;
    map->len = size;
  }
  ::close(fd);
  const uint8_t* data = static_cast<const uint8_t*>(map->addr);
  LAYA_ASSIGN_OR_RETURN(std::shared_ptr<SafetensorsFile> f, parse(data, size, map, path));
  f->mapped_ = true;
  return f;
}

Result<std::shared_ptr<SafetensorsFile>> SafetensorsFile::parse(const uint8_t* data, uint64_t size,
                                                                std::shared_ptr<const void> owner,
                                                                const std::string& name) {
  std::shared_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->path_ = name;
  f->data_ = data;
  f->size_ = size;
  f->owner_ = std::move(owner);
  LAYA_RETURN_IF_ERROR(f->parse_header());
  return f;
}

Status SafetensorsFile::parse_header() {
  const char* p = path_.c_str();
  if (size_ < 8)
    return status_error(StatusCode::kFileTruncated,
                        "'%s': %llu bytes, too short for the 8-byte safetensors header size", p,
                        static_cast<ull>(size_));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data_[i];
  if (n > kMaxHeaderBytes)
    return status_error(StatusCode::kFileCorrupt,
                        "'%s': header size %llu is above the %llu-byte limit (not a safetensors "
                        "file?)",
                        p, static_cast<ull>(n), static_cast<ull>(kMaxHeaderBytes));
  if (n > size_ - 8)
    return status_error(StatusCode::kFileTruncated,
                        "'%s': the header announces %llu bytes, only %llu follow", p,
                        static_cast<ull>(n), static_cast<ull>(size_ - 8));
  const std::string_view text(reinterpret_cast<const char*>(data_ + 8), static_cast<size_t>(n));
  Result<json::Value> parsed = json::parse(text, {}, "safetensors header");
  if (!parsed.is_ok())
    return status_error(StatusCode::kFileCorrupt, "'%s': %s", p, parsed.status().message());
  const json::Value& root = *parsed;
  if (!root.is_object())
    return status_error(StatusCode::kFileCorrupt, "'%s': the header is a JSON %s, not an object", p,
                        json::kind_name(root.kind()));
  const uint64_t data_start = 8 + n, data_size = size_ - data_start;

  for (const json::Member& m : root.members()) {
    const char* tn = m.key.c_str();
    if (m.key == "__metadata__") {
      if (!m.value.is_object())
        return status_error(StatusCode::kFileCorrupt, "'%s': __metadata__ is not an object", p);
      for (const json::Member& kv : m.value.members()) {
        if (!kv.value.is_string())
          return status_error(StatusCode::kFileCorrupt,
                              "'%s': __metadata__ value of '%s' is a %s, not a string", p,
                              kv.key.c_str(), json::kind_name(kv.value.kind()));
        metadata_.emplace_back(kv.key, kv.value.as_string());
      }
      continue;
    }
    const json::Value& e = m.value;
    if (!e.is_object())
      return status_error(StatusCode::kFileCorrupt, "'%s': tensor '%s' is a %s, not an object", p,
                          tn, json::kind_name(e.kind()));
    const json::Value* dt = e.find("dtype");
    const json::Value* shape = e.find("shape");
    const json::Value* offs = e.find("data_offsets");
    if (dt == nullptr || shape == nullptr || offs == nullptr || e.members().size() != 3)
      return status_error(StatusCode::kFileCorrupt,
                          "'%s': tensor '%s' needs exactly the fields dtype, shape and "
                          "data_offsets",
                          p, tn);
    StTensor t;
    t.name = m.key;
    if (!dt->is_string() || !dtype_from_name(dt->as_string(), &t.dtype))
      return status_error(StatusCode::kFileCorrupt, "'%s': tensor '%s' has unknown dtype %s", p, tn,
                          json::dump(*dt).c_str());
    if (!shape->is_array())
      return status_error(StatusCode::kFileCorrupt, "'%s': tensor '%s': shape is not a list", p,
                          tn);
    if (shape->items().size() > static_cast<size_t>(ir::kMaxRank))
      return status_error(StatusCode::kFileSizeOverflow,
                          "'%s': tensor '%s' has rank %zu, at most %d is supported", p, tn,
                          shape->items().size(), ir::kMaxRank);
    int64_t count = 1;
    for (const json::Value& d : shape->items()) {
      int64_t v = 0;
      if (!json_nonneg(d, &v))
        return status_error(StatusCode::kFileCorrupt,
                            "'%s': tensor '%s': dimension %s is not a non-negative integer", p, tn,
                            json::dump(d).c_str());
      t.shape.push_back(v);
      if (__builtin_mul_overflow(count, v, &count))
        return status_error(StatusCode::kFileSizeOverflow,
                            "'%s': tensor '%s': element count of %s overflows", p, tn,
                            st_shape_string(t.shape).c_str());
    }
    t.elements = count;
    int64_t bytes = 0;
    if (__builtin_mul_overflow(count, int64_t{st_dtype_size(t.dtype)}, &bytes))
      return status_error(StatusCode::kFileSizeOverflow, "'%s': tensor '%s': byte size overflows",
                          p, tn);
    int64_t begin = 0, end = 0;
    if (!offs->is_array() || offs->items().size() != 2 || !json_nonneg(offs->items()[0], &begin) ||
        !json_nonneg(offs->items()[1], &end))
      return status_error(StatusCode::kFileCorrupt,
                          "'%s': tensor '%s': data_offsets is not two non-negative integers", p,
                          tn);
    if (begin > end || static_cast<uint64_t>(end) > data_size)
      return status_error(StatusCode::kFileOffsetOutOfBounds,
                          "'%s': tensor '%s': bytes [%lld, %lld) outside the %llu data bytes", p,
                          tn, static_cast<long long>(begin), static_cast<long long>(end),
                          static_cast<ull>(data_size));
    if (end - begin != bytes)
      return status_error(StatusCode::kFileSizeMismatch,
                          "'%s': tensor '%s': %lld bytes stored, %s %s needs %lld", p, tn,
                          static_cast<long long>(end - begin), st_dtype_name(t.dtype),
                          st_shape_string(t.shape).c_str(), static_cast<long long>(bytes));
    t.nbytes = static_cast<uint64_t>(bytes);
    t.file_offset = data_start + static_cast<uint64_t>(begin);
    t.data = t.nbytes > 0 ? data_ + t.file_offset : nullptr;
    tensors_.push_back(std::move(t));
  }

  // The data must be indexed completely, without overlaps (the reference implementation's rule).
  std::stable_sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
    return a.file_offset < b.file_offset || (a.file_offset == b.file_offset && a.nbytes < b.nbytes);
  });
  uint64_t at = data_start;
  const StTensor* prev = nullptr;
  for (const StTensor& t : tensors_) {
    if (t.file_offset < at)
      return status_error(StatusCode::kFileCorrupt, "'%s': tensors '%s' and '%s' overlap", p,
                          prev->name.c_str(), t.name.c_str());
    if (t.file_offset > at)
      return status_error(StatusCode::kFileCorrupt,
                          "'%s': %llu data bytes before tensor '%s' belong to no tensor", p,
                          static_cast<ull>(t.file_offset - at), t.name.c_str());
    at = t.file_offset + t.nbytes;
    prev = &t;
  }
  if (at != size_)
    return status_error(StatusCode::kFileCorrupt,
                        "'%s': %llu bytes after the last tensor belong to no tensor", p,
                        static_cast<ull>(size_ - at));
  return Status::ok();
}

const StTensor* SafetensorsFile::find(const std::string& name) const {
  for (const StTensor& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

void SafetensorsFile::release_range(uint64_t file_offset, uint64_t nbytes) const {
  if (!mapped_ || nbytes == 0 || file_offset >= size_ || nbytes > size_ - file_offset) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // Whole pages inside the range only: a neighbour's page stays.
  const uint64_t lo = (file_offset + page - 1) / page * page;
  const uint64_t hi = (file_offset + nbytes) / page * page;
  if (hi > lo) (void)::madvise(const_cast<uint8_t*>(data_) + lo, hi - lo, MADV_DONTNEED);
}

// ---- SafetensorsCheckpoint -----------------------------------------------------------------------

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open(const std::string& path) {
  std::string file = path;
  if (is_dir(path)) {
    const std::string index = join(path, "model.safetensors.index.json");
    const std::string single = join(path, "model.safetensors");
    if (exists(index))
      file = index;
    else if (exists(single))
      file = single;
    else
      return status_error(StatusCode::kIoError,
                          "'%s' has neither model.safetensors nor model.safetensors.index.json",
                          path.c_str());
  }
  const bool is_index = file.size() >= 5 && file.compare(file.size() - 5, 5, ".json") == 0;
  if (!is_index) {
    SafetensorsCheckpoint ck;
    LAYA_ASSIGN_OR_RETURN(std::shared_ptr<SafetensorsFile> f, SafetensorsFile::open(file));
    ck.files_.push_back(std::move(f));
    ck.paths_.push_back(file);
    return ck;
  }

  LAYA_ASSIGN_OR_RETURN(std::string text, read_text(file));
  const std::string dir = file.find('/') == std::string::npos
                              ? std::string(".")
                              : file.substr(0, file.find_last_of('/'));
  return from_index(text, file, [&](const std::string& shard) {
    return SafetensorsFile::open(join(dir, shard));
  });
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::from_index(std::string_view index_json,
                                                                const std::string& index_name,
                                                                const ShardOpener& open_shard) {
  SafetensorsCheckpoint ck;
  const char* ip = index_name.c_str();
  Result<json::Value> parsed = json::parse(index_json, {}, "safetensors index");
  if (!parsed.is_ok())
    return status_error(StatusCode::kFileCorrupt, "'%s': %s", ip, parsed.status().message());
  const json::Value* map = parsed->find("weight_map");
  if (map == nullptr || !map->is_object())
    return status_error(StatusCode::kFileCorrupt, "'%s': no \"weight_map\" object", ip);
  ck.paths_.push_back(index_name);
  std::unordered_map<std::string, size_t> shard_index;  // shard name -> files_ index
  std::unordered_map<std::string, size_t> listed;       // tensor -> files_ index
  for (const json::Member& m : map->members()) {
    if (!m.value.is_string())
      return status_error(StatusCode::kFileCorrupt, "'%s': weight_map['%s'] is not a string", ip,
                          m.key.c_str());
    const std::string& shard = m.value.as_string();
    if (!plain_file_name(shard))
      return status_error(StatusCode::kFileCorrupt,
                          "'%s': shard name '%s' (tensor '%s') is not a plain file name", ip,
                          shard.c_str(), m.key.c_str());
    auto it = shard_index.find(shard);
    if (it == shard_index.end()) {
      LAYA_ASSIGN_OR_RETURN(std::shared_ptr<SafetensorsFile> f, open_shard(shard));
      it = shard_index.emplace(shard, ck.files_.size()).first;
      ck.paths_.push_back(f->path());
      ck.files_.push_back(std::move(f));
    }
    listed[m.key] = it->second;
  }
  if (ck.files_.empty())
    return status_error(StatusCode::kFileCorrupt, "'%s': weight_map lists no tensor", ip);
  // Every listed tensor is where the index says; every stored tensor is listed, once.
  for (const auto& [name, fi] : listed)
    if (ck.files_[fi]->find(name) == nullptr)
      return status_error(StatusCode::kFileCorrupt,
                          "'%s' maps tensor '%s' to '%s', which does not hold it", ip, name.c_str(),
                          ck.files_[fi]->path().c_str());
  for (size_t fi = 0; fi < ck.files_.size(); ++fi)
    for (const StTensor& t : ck.files_[fi]->tensors()) {
      auto it = listed.find(t.name);
      if (it == listed.end())
        return status_error(StatusCode::kFileCorrupt,
                            "'%s' holds tensor '%s', which the index '%s' does not list",
                            ck.files_[fi]->path().c_str(), t.name.c_str(), ip);
      if (it->second != fi)
        return status_error(StatusCode::kFileCorrupt, "tensor '%s' is stored in '%s' and '%s'",
                            t.name.c_str(), ck.files_[it->second]->path().c_str(),
                            ck.files_[fi]->path().c_str());
    }
  return ck;
}

const StTensor* SafetensorsCheckpoint::find(const std::string& name,
                                            std::shared_ptr<SafetensorsFile>* file) const {
  for (const auto& f : files_)
    if (const StTensor* t = f->find(name)) {
      if (file != nullptr) *file = f;
      return t;
    }
  return nullptr;
}

std::vector<std::pair<const StTensor*, const SafetensorsFile*>> SafetensorsCheckpoint::all() const {
  std::vector<std::pair<const StTensor*, const SafetensorsFile*>> out;
  for (const auto& f : files_)
    for (const StTensor& t : f->tensors()) out.emplace_back(&t, f.get());
  return out;
}

}  // namespace laya::frontends
