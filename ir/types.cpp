#include "ir/types.h"

#include <climits>
#include <cstring>

namespace laya::ir {

namespace {

constexpr DTypeInfo kDTypes[] = {
#define F DTypeKind::kFloat
#define I DTypeKind::kInteger
#define B DTypeKind::kBlock
#define DTYPE(name, Name, block_elems, block_bytes, kind) {#name, block_elems, block_bytes, kind},
#include "ir/dtypes.inc"
#undef DTYPE
#undef F
#undef I
#undef B
};
static_assert(sizeof kDTypes / sizeof kDTypes[0] == static_cast<size_t>(DType::kCount));

}  // namespace

const DTypeInfo& dtype_info(DType dtype) {
  return kDTypes[static_cast<size_t>(dtype)];
}

bool dtype_is_valid(uint32_t raw) {
  return raw < static_cast<uint32_t>(DType::kCount);
}

Result<DType> dtype_from_name(const std::string& name) {
  for (size_t i = 0; i < static_cast<size_t>(DType::kCount); ++i)
    if (name == kDTypes[i].name) return static_cast<DType>(i);
  return status_error(StatusCode::kInvalidArgument, "unknown dtype '%s'", name.c_str());
}

Result<uint64_t> dtype_bytes(DType dtype, int64_t n_elems) {
  const DTypeInfo& info = dtype_info(dtype);
  if (n_elems < 0) return status_error(StatusCode::kGraphShapeMismatch, "negative element count");
  if (n_elems % info.block_elems != 0)
    return status_error(StatusCode::kGraphShapeMismatch,
                        "%lld elements are not a whole number of %s blocks (%u elements each)",
                        static_cast<long long>(n_elems), info.name, info.block_elems);
  const uint64_t blocks = static_cast<uint64_t>(n_elems) / info.block_elems;
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(blocks, uint64_t{info.block_bytes}, &bytes) ||
      bytes > static_cast<uint64_t>(INT64_MAX))
    return status_error(StatusCode::kFileSizeOverflow, "%lld %s elements overflow a byte count",
                        static_cast<long long>(n_elems), info.name);
  return bytes;
}

namespace {

// c + sum_i coef[i] * (the bound of symbol i that minimizes / maximizes the term). False when the
// value does not fit in int64 (possible only with bounds near the int64 limits).
bool dim_bound(const Dim& d, const std::vector<Symbol>& symbols, bool want_max, int64_t* out) {
  int64_t v = d.c;
  for (size_t i = 0; i < symbols.size() && i < kMaxSymbols; ++i) {
    const bool use_max = (d.coef[i] >= 0) == want_max;
    int64_t term = 0;
    if (__builtin_mul_overflow(int64_t{d.coef[i]}, use_max ? symbols[i].max : symbols[i].min,
                               &term) ||
        __builtin_add_overflow(v, term, &v))
      return false;
  }
  *out = v;
  return true;
}

}  // namespace

Result<Dim> dim_add(const Dim& a, const Dim& b) {
  Dim r;
  bool overflow = __builtin_add_overflow(a.c, b.c, &r.c);
  for (int i = 0; i < kMaxSymbols; ++i)
    overflow = __builtin_add_overflow(a.coef[i], b.coef[i], &r.coef[i]) || overflow;
  if (overflow)
    return status_error(StatusCode::kOutOfRange,
                        "a dimension sum overflows (constant %lld + %lld, or a coefficient)",
                        static_cast<long long>(a.c), static_cast<long long>(b.c));
  return r;
}

Result<Dim> dim_mul(const Dim& d, int64_t k) {
  Dim r;
  bool overflow = __builtin_mul_overflow(d.c, k, &r.c);
  for (int i = 0; i < kMaxSymbols; ++i)
    overflow = __builtin_mul_overflow(d.coef[i], k, &r.coef[i]) || overflow;
  if (overflow)
    return status_error(StatusCode::kOutOfRange,
                        "a dimension times %lld overflows (constant %lld, or a coefficient)",
                        static_cast<long long>(k), static_cast<long long>(d.c));
  return r;
}

int64_t dim_min(const Dim& d, const std::vector<Symbol>& symbols) {
  int64_t v = 0;
  return dim_bound(d, symbols, false, &v) ? v : INT64_MIN;
}

int64_t dim_max(const Dim& d, const std::vector<Symbol>& symbols) {
  int64_t v = 0;
  return dim_bound(d, symbols, true, &v) ? v : INT64_MAX;
}

std::string dim_to_string(const Dim& d, const std::vector<Symbol>& symbols) {
  std::string s;
  for (int i = 0; i < kMaxSymbols; ++i) {
    const int32_t k = d.coef[i];
    if (k == 0) continue;
    std::string name = "s";  // unnamed symbol (an invalid graph); named ones below
    if (i < static_cast<int>(symbols.size()))
      name = symbols[i].name;
    else
      name += std::to_string(i);
    if (!s.empty())
      s += k < 0 ? " - " : " + ";
    else if (k < 0)
      s += "-";
    const int64_t a = k < 0 ? -int64_t{k} : k;  // int64: -INT32_MIN must not overflow
    if (a != 1) s += std::to_string(a) + " * ";
    s += name;
  }
  if (s.empty()) return std::to_string(d.c);
  if (d.c > 0) s += " + " + std::to_string(d.c);
  if (d.c < 0) s += " - " + std::to_string(0 - static_cast<uint64_t>(d.c));  // no -INT64_MIN
  return s;
}

Shape Shape::of(std::initializer_list<Dim> dims) {
  Shape s;
  for (const Dim& d : dims)
    if (s.rank < kMaxRank) s.dims[s.rank++] = d;
  return s;
}

Shape Shape::fixed(std::initializer_list<int64_t> dims) {
  Shape s;
  for (int64_t d : dims)
    if (s.rank < kMaxRank) s.dims[s.rank++] = Dim::fixed(d);
  return s;
}

std::string shape_to_string(const Shape& s, const std::vector<Symbol>& symbols) {
  std::string out = "[";
  for (int i = 0; i < s.rank; ++i) {
    if (i) out += ", ";
    out += dim_to_string(s.dims[i], symbols);
  }
  return out + "]";
}

Status shape_eval(const Shape& s, const int64_t* values, Extents* out) {
  out->rank = s.rank;
  for (int i = 0; i < s.rank; ++i) {
    out->d[i] = s.dims[i].eval(values);
    if (out->d[i] < 0)
      return status_error(StatusCode::kOutOfRange, "dimension %d evaluates to %lld", i,
                          static_cast<long long>(out->d[i]));
  }
  return Status::ok();
}

Result<int64_t> shape_max_count(const Shape& s, const std::vector<Symbol>& symbols) {
  int64_t n = 1;
  for (int i = 0; i < s.rank; ++i) {
    int64_t d = 0;
    const bool fits = dim_bound(s.dims[i], symbols, true, &d);
    if (fits && d < 0)
      return status_error(StatusCode::kGraphShapeMismatch, "dimension %d has a negative bound", i);
    if (!fits || __builtin_mul_overflow(n, d, &n))
      return status_error(StatusCode::kFileSizeOverflow, "shape %s overflows an element count",
                          shape_to_string(s, symbols).c_str());
  }
  return n;
}

const char* quant_kind_name(QuantKind k) {
  switch (k) {
    case QuantKind::kNone:
      return "none";
    case QuantKind::kPerTensor:
      return "per_tensor";
    case QuantKind::kPerChannel:
      return "per_channel";
    case QuantKind::kBlock:
      return "block";
  }
  return "?";
}

}  // namespace laya::ir
