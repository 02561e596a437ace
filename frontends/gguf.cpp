#include "frontends/gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

namespace laya::frontends::gguf {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little endian

bool value_type_valid(uint32_t t) {
  return t <= static_cast<uint32_t>(ValueType::kF64);
}

// Smallest encoding of one element: the floor used to bound array counts by the bytes left.
uint64_t min_element_bytes(ValueType t) {
  if (t == ValueType::kString) return 8;  // u64 length
  if (t == ValueType::kArray) return 12;  // u32 type + u64 count
  return value_type_size(t);
}

// Reads the file front to back; every read checks the bytes left first.
class Cursor {
 public:
  Cursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}
  uint64_t pos() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }
  const uint8_t* at(uint64_t p) const { return base_ + p; }

  Status need(uint64_t n, const char* what) const {
    if (n > left())
      return status_error(StatusCode::kFileTruncated,
                          "GGUF: %s needs %llu bytes at offset %llu, the file has %llu left", what,
                          static_cast<unsigned long long>(n), static_cast<unsigned long long>(pos_),
                          static_cast<unsigned long long>(left()));
    return Status::ok();
  }
  template <class T>
  Status read(T* v, const char* what) {
    LAYA_RETURN_IF_ERROR(need(sizeof(T), what));
    std::memcpy(v, base_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::ok();
  }
  Status string(std::string_view* s, const char* what) {
    uint64_t len = 0;
    LAYA_RETURN_IF_ERROR(read(&len, what));
    if (len > kMaxStringBytes)
      return status_error(StatusCode::kFileCorrupt, "GGUF: %s is %llu bytes long (limit %llu)",
                          what, static_cast<unsigned long long>(len),
                          static_cast<unsigned long long>(kMaxStringBytes));
    LAYA_RETURN_IF_ERROR(need(len, what));
    *s = std::string_view(reinterpret_cast<const char*>(base_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return Status::ok();
  }
  Status skip(uint64_t n, const char* what) {
    LAYA_RETURN_IF_ERROR(need(n, what));
    pos_ += n;
    return Status::ok();
  }

 private:
  const uint8_t* base_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// Short printable form of a key or tensor name for messages (names come from the file).
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 80)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 80) out += "...";
  return out;
}

Status read_value(Cursor& c, ValueType type, int depth, const std::string& key, Value* v) {
  v->type = type;
  if (type == ValueType::kString) return c.string(&v->str, "a string value");
  if (type != ValueType::kArray) {
    const uint64_t n = value_type_size(type);
    LAYA_RETURN_IF_ERROR(c.need(n, "a scalar value"));
    std::memcpy(&v->bits, c.at(c.pos()), static_cast<size_t>(n));
    if (type == ValueType::kBool && v->bits > 1)
      return status_error(StatusCode::kFileCorrupt, "GGUF: key '%s': bool value %llu", key.c_str(),
                          static_cast<unsigned long long>(v->bits));
    return c.skip(n, "a scalar value");
  }
  if (depth >= kMaxArrayDepth)
    return status_error(StatusCode::kFileCorrupt, "GGUF: key '%s': arrays nested deeper than %d",
                        key.c_str(), kMaxArrayDepth);
  uint32_t et = 0;
  LAYA_RETURN_IF_ERROR(c.read(&et, "an array's element type"));
  if (!value_type_valid(et))
    return status_error(StatusCode::kFileCorrupt, "GGUF: key '%s': unknown array element type %u",
                        key.c_str(), et);
  v->elem_type = static_cast<ValueType>(et);
  LAYA_RETURN_IF_ERROR(c.read(&v->count, "an array's count"));
  // The count is bounded by the bytes left before anything is allocated.
  const uint64_t min_bytes = min_element_bytes(v->elem_type);
  if (v->count > c.left() / min_bytes)
    return status_error(StatusCode::kFileTruncated,
                        "GGUF: key '%s': array of %llu %s elements does not fit in the %llu bytes "
                        "left",
                        key.c_str(), static_cast<unsigned long long>(v->count),
                        value_type_name(v->elem_type), static_cast<unsigned long long>(c.left()));
  if (v->elem_type == ValueType::kString) {
    v->strings.resize(static_cast<size_t>(v->count));
    for (std::string_view& s : v->strings)
      LAYA_RETURN_IF_ERROR(c.string(&s, "an array's string element"));
  } else if (v->elem_type == ValueType::kArray) {
    v->arrays.resize(static_cast<size_t>(v->count));
    for (Value& e : v->arrays)
      LAYA_RETURN_IF_ERROR(read_value(c, ValueType::kArray, depth + 1, key, &e));
  } else {
    v->elems = c.at(c.pos());
    LAYA_RETURN_IF_ERROR(c.skip(v->count * min_bytes, "an array's elements"));
    if (v->elem_type == ValueType::kBool)
      for (uint64_t i = 0; i < v->count; ++i)
        if (v->elems[i] > 1)
          return status_error(StatusCode::kFileCorrupt, "GGUF: key '%s': bool element %llu is %u",
                              key.c_str(), static_cast<unsigned long long>(i), v->elems[i]);
  }
  return Status::ok();
}

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// A scalar (bits or element bytes) of type t as int64 (u64 may exceed: `ok` false).
int64_t int_of(ValueType t, const uint8_t* p, bool* ok) {
  *ok = true;
  switch (t) {
    case ValueType::kU8:
      return load<uint8_t>(p);
    case ValueType::kI8:
      return load<int8_t>(p);
    case ValueType::kU16:
      return load<uint16_t>(p);
    case ValueType::kI16:
      return load<int16_t>(p);
    case ValueType::kU32:
      return load<uint32_t>(p);
    case ValueType::kI32:
      return load<int32_t>(p);
    case ValueType::kU64: {
      const uint64_t u = load<uint64_t>(p);
      *ok = u <= static_cast<uint64_t>(INT64_MAX);
      return static_cast<int64_t>(u);
    }
    case ValueType::kI64:
      return load<int64_t>(p);
    default:
      *ok = false;
      return 0;
  }
}

double float_of(ValueType t, const uint8_t* p) {
  if (t == ValueType::kF32) return load<float>(p);
  if (t == ValueType::kF64) return load<double>(p);
  bool ok = false;
  return static_cast<double>(int_of(t, p, &ok));
}

bool is_int_type(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kU16:
    case ValueType::kI16:
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kU64:
    case ValueType::kI64:
      return true;
    default:
      return false;
  }
}

struct GgmlType {
  uint32_t id;
  const char* name;
};
constexpr GgmlType kGgmlTypes[] = {
    {0, "f32"},     {1, "f16"},    {2, "q4_0"},     {3, "q4_1"},    {6, "q5_0"},     {7, "q5_1"},
    {8, "q8_0"},    {9, "q8_1"},   {10, "q2_K"},    {11, "q3_K"},   {12, "q4_K"},    {13, "q5_K"},
    {14, "q6_K"},   {15, "q8_K"},  {16, "iq2_xxs"}, {17, "iq2_xs"}, {18, "iq3_xxs"}, {19, "iq1_s"},
    {20, "iq4_nl"}, {21, "iq3_s"}, {22, "iq2_s"},   {23, "iq4_xs"}, {24, "i8"},      {25, "i16"},
    {26, "i32"},    {27, "i64"},   {28, "f64"},     {29, "iq1_m"},  {30, "bf16"},    {34, "tq1_0"},
    {35, "tq2_0"},  {39, "mxfp4"}, {40, "nvfp4"},   {41, "q1_0"},
};

}  // namespace

// ---- Value --------------------------------------------------------------------------------------

uint64_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::kU8:
    case ValueType::kI8:
    case ValueType::kBool:
      return 1;
    case ValueType::kU16:
    case ValueType::kI16:
      return 2;
    case ValueType::kU32:
    case ValueType::kI32:
    case ValueType::kF32:
      return 4;
    case ValueType::kU64:
    case ValueType::kI64:
    case ValueType::kF64:
      return 8;
    case ValueType::kString:
    case ValueType::kArray:
      return 0;
  }
  return 0;
}

const char* value_type_name(ValueType t) {
  static const char* const kNames[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                       "bool", "string", "array", "u64", "i64", "f64"};
  const uint32_t i = static_cast<uint32_t>(t);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "?";
}

bool Value::is_integer() const {
  return is_int_type(type);
}
bool Value::is_float() const {
  return type == ValueType::kF32 || type == ValueType::kF64;
}

Result<int64_t> Value::as_int() const {
  if (!is_integer())
    return status_error(StatusCode::kInvalidArgument, "GGUF value is %s, not an integer",
                        value_type_name(type));
  bool ok = false;
  const int64_t v = int_of(type, reinterpret_cast<const uint8_t*>(&bits), &ok);
  if (!ok) return status_error(StatusCode::kOutOfRange, "GGUF u64 value exceeds int64");
  return v;
}

Result<double> Value::as_float() const {
  if (!is_integer() && !is_float())
    return status_error(StatusCode::kInvalidArgument, "GGUF value is %s, not a number",
                        value_type_name(type));
  return float_of(type, reinterpret_cast<const uint8_t*>(&bits));
}

Result<bool> Value::as_bool() const {
  if (type != ValueType::kBool)
    return status_error(StatusCode::kInvalidArgument, "GGUF value is %s, not a bool",
                        value_type_name(type));
  return bits != 0;
}

Result<std::string_view> Value::as_string() const {
  if (type != ValueType::kString)
    return status_error(StatusCode::kInvalidArgument, "GGUF value is %s, not a string",
                        value_type_name(type));
  return str;
}

int64_t Value::int_at(uint64_t i) const {
  bool ok = false;
  return int_of(elem_type, elems + i * value_type_size(elem_type), &ok);
}

double Value::float_at(uint64_t i) const {
  return float_of(elem_type, elems + i * value_type_size(elem_type));
}

// ---- types --------------------------------------------------------------------------------------

const char* ggml_type_name(uint32_t ggml_type) {
  for (const GgmlType& t : kGgmlTypes)
    if (t.id == ggml_type) return t.name;
  static thread_local char buf[32];
  std::snprintf(buf, sizeof buf, "type %u", ggml_type);
  return buf;
}

Result<ir::DType> dtype_of_ggml_type(uint32_t ggml_type) {
  switch (ggml_type) {
    case 0:
      return ir::DType::kF32;
    case 1:
      return ir::DType::kF16;
    case 2:
      return ir::DType::kQ4_0;
    case 3:
      return ir::DType::kQ4_1;
    case 6:
      return ir::DType::kQ5_0;
    case 7:
      return ir::DType::kQ5_1;
    case 8:
      return ir::DType::kQ8_0;
    case 12:
      return ir::DType::kQ4_K;
    case 13:
      return ir::DType::kQ5_K;
    case 14:
      return ir::DType::kQ6_K;
    case 24:
      return ir::DType::kI8;
    case 26:
      return ir::DType::kI32;
    case 30:
      return ir::DType::kBF16;
    default:
      return status_error(StatusCode::kUnsupported, "GGML type %s (%u) has no runtime dtype",
                          ggml_type_name(ggml_type), ggml_type);
  }
}

// ---- File ---------------------------------------------------------------------------------------

File::File(File&& o) noexcept {
  *this = std::move(o);
}

File& File::operator=(File&& o) noexcept {
  if (this == &o) return *this;
  if (mapped_ && base_ != nullptr) munmap(const_cast<uint8_t*>(base_), static_cast<size_t>(size_));
  base_ = o.base_;
  size_ = o.size_;
  mapped_ = o.mapped_;
  version_ = o.version_;
  alignment_ = o.alignment_;
  data_offset_ = o.data_offset_;
  kv_ = std::move(o.kv_);
  tensors_ = std::move(o.tensors_);
  o.base_ = nullptr;
  o.mapped_ = false;
  o.size_ = 0;
  return *this;
}

File::~File() {
  if (mapped_ && base_ != nullptr) munmap(const_cast<uint8_t*>(base_), static_cast<size_t>(size_));
}

Result<File> File::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return status_error(StatusCode::kIoError, "cannot open '%s': %s", path.c_str(),
                        std::strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return status_error(StatusCode::kIoError, "cannot stat '%s': %s", path.c_str(),
                        std::strerror(e));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return status_error(StatusCode::kFileEmpty, "'%s' is empty", path.c_str());
  }
  void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (p == MAP_FAILED)
    return status_error(StatusCode::kIoError, "cannot map '%s': %s", path.c_str(),
                        std::strerror(e));
  File f;
  f.base_ = static_cast<const uint8_t*>(p);
  f.size_ = size;
  f.mapped_ = true;
  Status st2 = f.parse_all();
  if (!st2.is_ok()) return Status(st2.code(), path + ": " + st2.message());
  return f;
}

void File::release(const uint8_t* p, uint64_t n) const {
  if (!mapped_ || n == 0 || p < base_ || p > base_ + size_ ||
      n > size_ - static_cast<uint64_t>(p - base_))
    return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t off = static_cast<uint64_t>(p - base_);
  // Whole pages inside the range only: a neighbour's page stays.
  const uint64_t lo = (off + page - 1) / page * page;
  const uint64_t hi = (off + n) / page * page;
  if (hi > lo) (void)::madvise(const_cast<uint8_t*>(base_) + lo, hi - lo, MADV_DONTNEED);
}

Result<File> File::parse(const uint8_t* data, uint64_t size) {
  if (size == 0 || data == nullptr) return Status(StatusCode::kFileEmpty, "GGUF: empty input");
  File f;
  f.base_ = data;
  f.size_ = size;
  LAYA_RETURN_IF_ERROR(f.parse_all());
  return f;
}

Status File::parse_all() {
  Cursor c(base_, size_);
  uint32_t magic = 0;
  if (size_ < 4 || (std::memcpy(&magic, base_, 4), magic != kMagic))
    return Status(StatusCode::kFileBadIdentifier, "not a GGUF file (no 'GGUF' magic)");
  LAYA_RETURN_IF_ERROR(c.skip(4, "the magic"));
  LAYA_RETURN_IF_ERROR(c.read(&version_, "the version"));
  if (version_ == 1)
    return Status(StatusCode::kFileUnsupportedVersion, "GGUF v1 is not supported (v2 and v3 are)");
  if (version_ != 2 && version_ != 3)
    return status_error(StatusCode::kFileUnsupportedVersion,
                        "GGUF version %u is not supported (v2 and v3 are; a big-endian file reads "
                        "as version 0x%08x)",
                        version_, version_);
  uint64_t n_tensors = 0, n_kv = 0;
  LAYA_RETURN_IF_ERROR(c.read(&n_tensors, "the tensor count"));
  LAYA_RETURN_IF_ERROR(c.read(&n_kv, "the key count"));
  if (n_tensors > kMaxTensors || n_kv > kMaxKeys)
    return status_error(
        StatusCode::kFileCorrupt,
        "GGUF: %llu tensors and %llu metadata keys exceed the limits (%llu, %llu)",
        static_cast<unsigned long long>(n_tensors), static_cast<unsigned long long>(n_kv),
        static_cast<unsigned long long>(kMaxTensors), static_cast<unsigned long long>(kMaxKeys));
  // Each key takes at least 12 bytes (length, value type), each tensor info 24.
  if (n_kv > c.left() / 12 || n_tensors > (c.left() - n_kv * 12) / 24)
    return status_error(
        StatusCode::kFileTruncated,
        "GGUF: %llu metadata keys and %llu tensors cannot fit in the %llu bytes left",
        static_cast<unsigned long long>(n_kv), static_cast<unsigned long long>(n_tensors),
        static_cast<unsigned long long>(c.left()));

  kv_.reserve(static_cast<size_t>(n_kv));
  std::unordered_set<std::string_view> keys;
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    LAYA_RETURN_IF_ERROR(c.string(&kv.key, "a metadata key"));
    const std::string key = printable(kv.key);
    if (!keys.insert(kv.key).second)
      return status_error(StatusCode::kFileCorrupt, "GGUF: duplicate key '%s'", key.c_str());
    uint32_t type = 0;
    LAYA_RETURN_IF_ERROR(c.read(&type, "a value type"));
    if (!value_type_valid(type))
      return status_error(StatusCode::kFileCorrupt, "GGUF: key '%s' has unknown value type %u",
                          key.c_str(), type);
    Status st = read_value(c, static_cast<ValueType>(type), 0, key, &kv.value);
    if (!st.is_ok()) {
      if (std::strstr(st.message(), "key '") != nullptr) return st;
      return Status(st.code(), "key '" + key + "': " + st.message());
    }
    kv_.push_back(std::move(kv));
  }

  if (const Value* a = find("general.alignment")) {
    if (a->type != ValueType::kU32)
      return status_error(StatusCode::kFileCorrupt, "GGUF: general.alignment is %s, not u32",
                          value_type_name(a->type));
    alignment_ = a->bits;
    if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0)
      return status_error(StatusCode::kFileCorrupt,
                          "GGUF: general.alignment %llu is not a power of two",
                          static_cast<unsigned long long>(alignment_));
  }

  tensors_.reserve(static_cast<size_t>(n_tensors));
  std::unordered_set<std::string_view> names;
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    LAYA_RETURN_IF_ERROR(c.string(&t.name, "a tensor name"));
    const std::string name = printable(t.name);
    if (!names.insert(t.name).second)
      return status_error(StatusCode::kFileCorrupt, "GGUF: duplicate tensor '%s'", name.c_str());
    LAYA_RETURN_IF_ERROR(c.read(&t.n_dims, "a tensor's dimension count"));
    if (t.n_dims == 0 || t.n_dims > kMaxDims)
      return status_error(StatusCode::kFileCorrupt, "GGUF: tensor '%s' has %u dimensions (1..%u)",
                          name.c_str(), t.n_dims, kMaxDims);
    int64_t count = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      uint64_t ne = 0;
      LAYA_RETURN_IF_ERROR(c.read(&ne, "a tensor dimension"));
      if (ne > static_cast<uint64_t>(INT64_MAX) ||
          __builtin_mul_overflow(count, static_cast<int64_t>(ne), &count))
        return status_error(StatusCode::kFileSizeOverflow,
                            "GGUF: tensor '%s': element count overflows int64", name.c_str());
      t.ne[d] = static_cast<int64_t>(ne);
    }
    for (uint32_t d = 0; d < t.n_dims; ++d) t.shape[d] = t.ne[t.n_dims - 1 - d];
    t.n_elems = count;
    LAYA_RETURN_IF_ERROR(c.read(&t.ggml_type, "a tensor type"));
    LAYA_RETURN_IF_ERROR(c.read(&t.offset, "a tensor offset"));
    Result<ir::DType> dt = dtype_of_ggml_type(t.ggml_type);
    if (!dt.is_ok())
      return status_error(
          StatusCode::kUnsupported,
          "GGUF: tensor '%s' has type %s (%u), which the runtime does not support "
          "(supported: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K, i8, "
          "i32)",
          name.c_str(), ggml_type_name(t.ggml_type), t.ggml_type);
    t.dtype = *dt;
    const ir::DTypeInfo& info = ir::dtype_info(t.dtype);
    if (t.ne[0] % info.block_elems != 0)
      return status_error(StatusCode::kFileCorrupt,
                          "GGUF: tensor '%s': row length %lld is not a multiple of the %s block "
                          "(%u)",
                          name.c_str(), static_cast<long long>(t.ne[0]), info.name,
                          info.block_elems);
    Result<uint64_t> bytes = ir::dtype_bytes(t.dtype, t.n_elems);
    if (!bytes.is_ok())
      return status_error(StatusCode::kFileSizeOverflow, "GGUF: tensor '%s': %s", name.c_str(),
                          bytes.status().message());
    t.bytes = *bytes;
    if (t.offset % alignment_ != 0)
      return status_error(StatusCode::kFileMisaligned,
                          "GGUF: tensor '%s' offset %llu is not a multiple of the alignment %llu",
                          name.c_str(), static_cast<unsigned long long>(t.offset),
                          static_cast<unsigned long long>(alignment_));
    tensors_.push_back(t);
  }

  // The data section starts at the next multiple of the alignment.
  const uint64_t pad = (alignment_ - c.pos() % alignment_) % alignment_;
  data_offset_ = c.pos() + pad;
  if (data_offset_ > size_ && !tensors_.empty())
    return status_error(StatusCode::kFileTruncated,
                        "GGUF: the data section would start at %llu, past the end of the file "
                        "(%llu bytes)",
                        static_cast<unsigned long long>(data_offset_),
                        static_cast<unsigned long long>(size_));
  const uint64_t data_size = data_offset_ <= size_ ? size_ - data_offset_ : 0;
  for (TensorInfo& t : tensors_) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      return status_error(StatusCode::kFileOffsetOutOfBounds,
                          "GGUF: tensor '%s' [%llu, +%llu) runs past the data section (%llu "
                          "bytes)",
                          printable(t.name).c_str(), static_cast<unsigned long long>(t.offset),
                          static_cast<unsigned long long>(t.bytes),
                          static_cast<unsigned long long>(data_size));
    t.data = base_ + data_offset_ + t.offset;
  }
  // No two tensors share bytes.
  std::vector<const TensorInfo*> order;
  order.reserve(tensors_.size());
  for (const TensorInfo& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const TensorInfo& a = *order[i - 1];
    const TensorInfo& b = *order[i];
    if (a.bytes > 0 && b.bytes > 0 && a.offset + a.bytes > b.offset)
      return status_error(StatusCode::kFileCorrupt, "GGUF: tensors '%s' and '%s' overlap",
                          printable(a.name).c_str(), printable(b.name).c_str());
  }
  return Status::ok();
}

const Value* File::find(std::string_view key) const {
  for (const KeyValue& kv : kv_)
    if (kv.key == key) return &kv.value;
  return nullptr;
}

const TensorInfo* File::tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

Status missing(std::string_view key) {
  return Status(StatusCode::kNotFound, "GGUF: no key '" + std::string(key) + "'");
}
Status wrong(std::string_view key, const Status& st) {
  return Status(st.code(), "GGUF: key '" + std::string(key) + "': " + st.message());
}

}  // namespace

Result<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  Result<int64_t> r = v->as_int();
  if (!r.is_ok()) return wrong(key, r.status());
  return r;
}

Result<double> File::get_float(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  Result<double> r = v->as_float();
  if (!r.is_ok()) return wrong(key, r.status());
  return r;
}

Result<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  Result<bool> r = v->as_bool();
  if (!r.is_ok()) return wrong(key, r.status());
  return r;
}

Result<std::string_view> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  Result<std::string_view> r = v->as_string();
  if (!r.is_ok()) return wrong(key, r.status());
  return r;
}

Result<std::vector<std::string_view>> File::get_strings(std::string_view key) const {
  const Value* v = find(key);
  if (v == nullptr) return missing(key);
  if (v->type != ValueType::kArray || v->elem_type != ValueType::kString)
    return wrong(key, Status(StatusCode::kInvalidArgument, "not an array of strings"));
  return v->strings;
}

// ---- decoder metadata ---------------------------------------------------------------------------

Result<DecoderParams> decoder_params(const File& f) {
  DecoderParams p;
  LAYA_ASSIGN_OR_RETURN(std::string_view arch, f.get_string("general.architecture"));
  p.arch = std::string(arch);
  const std::string a = p.arch + ".";
  LAYA_ASSIGN_OR_RETURN(p.context_length, f.get_int(a + "context_length"));
  LAYA_ASSIGN_OR_RETURN(p.embedding_length, f.get_int(a + "embedding_length"));
  LAYA_ASSIGN_OR_RETURN(p.block_count, f.get_int(a + "block_count"));
  LAYA_ASSIGN_OR_RETURN(p.head_count, f.get_int(a + "attention.head_count"));
  LAYA_ASSIGN_OR_RETURN(p.rms_norm_eps, f.get_float(a + "attention.layer_norm_rms_epsilon"));
  p.head_count_kv = p.head_count;
  if (f.find(a + "attention.head_count_kv") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(p.head_count_kv, f.get_int(a + "attention.head_count_kv"));
  }
  if (f.find(a + "feed_forward_length") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(p.feed_forward_length, f.get_int(a + "feed_forward_length"));
  }
  if (f.find(a + "rope.freq_base") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(p.rope_freq_base, f.get_float(a + "rope.freq_base"));
  }
  if (p.head_count <= 0 || p.head_count_kv <= 0 || p.head_count % p.head_count_kv != 0 ||
      p.embedding_length <= 0 || p.embedding_length % p.head_count != 0 ||
      (p.embedding_length / p.head_count) % 2 != 0 || p.block_count <= 0 || p.context_length <= 0)
    return status_error(
        StatusCode::kFileCorrupt,
        "GGUF %s: inconsistent attention shape (d_model %lld, heads %lld, kv heads "
        "%lld, layers %lld, context %lld)",
        p.arch.c_str(), static_cast<long long>(p.embedding_length),
        static_cast<long long>(p.head_count), static_cast<long long>(p.head_count_kv),
        static_cast<long long>(p.block_count), static_cast<long long>(p.context_length));
  p.rope_dimension_count = p.embedding_length / p.head_count;
  if (f.find(a + "rope.dimension_count") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(p.rope_dimension_count, f.get_int(a + "rope.dimension_count"));
  }
  if (p.rope_dimension_count <= 0 || p.rope_dimension_count % 2 != 0 ||
      p.rope_dimension_count > p.embedding_length / p.head_count)
    return status_error(StatusCode::kFileCorrupt, "GGUF %s: rope.dimension_count %lld",
                        p.arch.c_str(), static_cast<long long>(p.rope_dimension_count));
  if (f.find(a + "vocab_size") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(p.vocab_size, f.get_int(a + "vocab_size"));
  } else if (const Value* t = f.find("tokenizer.ggml.tokens");
             t != nullptr && t->type == ValueType::kArray) {
    p.vocab_size = static_cast<int64_t>(t->count);
  }
  return p;
}

Result<TokenizerData> tokenizer_data(const File& f) {
  TokenizerData t;
  LAYA_ASSIGN_OR_RETURN(t.model, f.get_string("tokenizer.ggml.model"));
  if (f.find("tokenizer.ggml.pre") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(t.pre, f.get_string("tokenizer.ggml.pre"));
  }
  LAYA_ASSIGN_OR_RETURN(t.tokens, f.get_strings("tokenizer.ggml.tokens"));
  if (f.find("tokenizer.ggml.merges") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(t.merges, f.get_strings("tokenizer.ggml.merges"));
  }
  const uint64_t n = t.tokens.size();
  auto per_token = [&](const char* key, auto fill) -> Status {
    const Value* v = f.find(key);
    if (v == nullptr) return Status::ok();
    if (v->type != ValueType::kArray || v->count != n || v->elem_type == ValueType::kString ||
        v->elem_type == ValueType::kArray)
      return status_error(StatusCode::kFileCorrupt,
                          "GGUF: %s must be a numeric array with one entry per token (%llu)", key,
                          static_cast<unsigned long long>(n));
    fill(*v);
    return Status::ok();
  };
  LAYA_RETURN_IF_ERROR(per_token("tokenizer.ggml.token_type", [&](const Value& v) {
    if (!is_int_type(v.elem_type)) return;
    t.token_type.resize(n);
    for (uint64_t i = 0; i < n; ++i) t.token_type[i] = static_cast<int32_t>(v.int_at(i));
  }));
  if (const Value* v = f.find("tokenizer.ggml.token_type");
      v != nullptr && t.token_type.size() != n)
    return Status(StatusCode::kFileCorrupt, "GGUF: tokenizer.ggml.token_type must be integers");
  LAYA_RETURN_IF_ERROR(per_token("tokenizer.ggml.scores", [&](const Value& v) {
    t.scores.resize(n);
    for (uint64_t i = 0; i < n; ++i) t.scores[i] = static_cast<float>(v.float_at(i));
  }));
  struct Id {
    const char* key;
    int64_t* out;
  };
  for (const Id& id :
       {Id{"tokenizer.ggml.bos_token_id", &t.bos_id}, Id{"tokenizer.ggml.eos_token_id", &t.eos_id},
        Id{"tokenizer.ggml.padding_token_id", &t.pad_id},
        Id{"tokenizer.ggml.unknown_token_id", &t.unk_id}}) {
    if (f.find(id.key) == nullptr) continue;
    LAYA_ASSIGN_OR_RETURN(*id.out, f.get_int(id.key));
    if (*id.out < 0 || static_cast<uint64_t>(*id.out) >= n)
      return status_error(StatusCode::kFileCorrupt, "GGUF: %s = %lld is outside the %llu tokens",
                          id.key, static_cast<long long>(*id.out),
                          static_cast<unsigned long long>(n));
  }
  for (auto [key, out] : {std::pair{"tokenizer.ggml.add_bos_token", &t.add_bos},
                          std::pair{"tokenizer.ggml.add_eos_token", &t.add_eos}}) {
    if (f.find(key) == nullptr) continue;
    LAYA_ASSIGN_OR_RETURN(bool b, f.get_bool(key));
    *out = b ? 1 : 0;
  }
  if (f.find("tokenizer.chat_template") != nullptr) {
    LAYA_ASSIGN_OR_RETURN(t.chat_template, f.get_string("tokenizer.chat_template"));
  }
  return t;
}

// ---- llama-family tensors -----------------------------------------------------------------------

Result<ir::RopeMode> rope_mode_for_arch(std::string_view arch) {
  if (arch == "llama") return ir::RopeMode::kGptj;
  if (arch == "qwen2") return ir::RopeMode::kNeox;
  return Status(StatusCode::kUnsupported,
                "GGUF architecture '" + std::string(arch) + "' (known: llama, qwen2)");
}

bool arch_permutes_qk(std::string_view arch) {
  return arch == "llama";
}

std::string layer_tensor_name(int64_t layer, std::string_view what, std::string_view suffix) {
  return "blk." + std::to_string(layer) + "." + std::string(what) + "." + std::string(suffix);
}

Status check_decoder_tensors(const File& f, const DecoderParams& p) {
  LAYA_RETURN_IF_ERROR(rope_mode_for_arch(p.arch).status());
  const int64_t d = p.embedding_length, hd = d / p.head_count;
  const int64_t dq = p.head_count * hd, dkv = p.head_count_kv * hd;
  auto want = [&](const std::string& name, std::initializer_list<int64_t> shape,
                  bool required) -> Status {
    const TensorInfo* t = f.tensor(name);
    if (t == nullptr) {
      if (!required) return Status::ok();
      return Status(StatusCode::kNotFound, "GGUF: no tensor '" + name + "'");
    }
    bool ok = t->n_dims == shape.size();
    size_t i = 0;
    for (int64_t s : shape) {  // s < 0: any extent
      ok = ok && i < t->n_dims && (s < 0 || t->shape[i] == s);
      ++i;
    }
    if (!ok) {
      std::string got;
      for (uint32_t k = 0; k < t->n_dims; ++k) got += (k ? ", " : "") + std::to_string(t->shape[k]);
      return Status(StatusCode::kGraphShapeMismatch, "GGUF: tensor '" + name + "' is [" + got +
                                                         "], not the shape the metadata implies");
    }
    return Status::ok();
  };
  const int64_t ff = p.feed_forward_length > 0 ? p.feed_forward_length : -1;
  const int64_t vocab = p.vocab_size > 0 ? p.vocab_size : -1;
  LAYA_RETURN_IF_ERROR(want("token_embd.weight", {vocab, d}, true));
  LAYA_RETURN_IF_ERROR(want("output_norm.weight", {d}, true));
  LAYA_RETURN_IF_ERROR(want("output.weight", {vocab, d}, false));
  const bool qwen = p.arch == "qwen2";
  for (int64_t l = 0; l < p.block_count; ++l) {
    auto n = [&](const char* what, const char* suffix = "weight") {
      return layer_tensor_name(l, what, suffix);
    };
    LAYA_RETURN_IF_ERROR(want(n("attn_norm"), {d}, true));
    LAYA_RETURN_IF_ERROR(want(n("attn_q"), {dq, d}, true));
    LAYA_RETURN_IF_ERROR(want(n("attn_k"), {dkv, d}, true));
    LAYA_RETURN_IF_ERROR(want(n("attn_v"), {dkv, d}, true));
    LAYA_RETURN_IF_ERROR(want(n("attn_output"), {d, dq}, true));
    LAYA_RETURN_IF_ERROR(want(n("attn_q", "bias"), {dq}, qwen));
    LAYA_RETURN_IF_ERROR(want(n("attn_k", "bias"), {dkv}, qwen));
    LAYA_RETURN_IF_ERROR(want(n("attn_v", "bias"), {dkv}, qwen));
    LAYA_RETURN_IF_ERROR(want(n("ffn_norm"), {d}, true));
    LAYA_RETURN_IF_ERROR(want(n("ffn_gate"), {ff, d}, true));
    LAYA_RETURN_IF_ERROR(want(n("ffn_up"), {ff, d}, true));
    LAYA_RETURN_IF_ERROR(want(n("ffn_down"), {d, ff}, true));
  }
  return Status::ok();
}

}  // namespace laya::frontends::gguf
