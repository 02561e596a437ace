// Element types, symbolic shapes and quantization parameters: the vocabulary of the IR.
//
// Shapes are symbolic: a dimension is an affine expression `c + sum_i coef[i] * sym[i]` over the
// graph's symbols (batch, seq, past, ...), each symbol with an inclusive [min, max] bound. This
// covers what transformer graphs need (seq, past + seq, 3 * d) while staying closed under shape
// inference; a product of two symbols is not representable and is reported as a shape error.
// Concrete shapes (`Extents`) come from evaluating a Shape at symbol values, at reshape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"

namespace laya::ir {

// ---- dtypes ----------------------------------------------------------------------------------

enum class DType : uint8_t {
#define DTYPE(name, Name, block_elems, block_bytes, kind) k##Name,
#include "ir/dtypes.inc"
#undef DTYPE
  kCount
};

enum class DTypeKind : uint8_t { kFloat, kInteger, kBlock };

struct DTypeInfo {
  const char* name;      // "f32", "q4_0", ...
  uint32_t block_elems;  // elements per storage block (1 for scalar types)
  uint32_t block_bytes;  // bytes per storage block
  DTypeKind kind;
};

// Precondition: dtype < kCount (the loader rejects out-of-range values before building a DType).
const DTypeInfo& dtype_info(DType dtype);
inline const char* dtype_name(DType d) {
  return dtype_info(d).name;
}
bool dtype_is_valid(uint32_t raw);
// Parses "f32", "q4_0", ...; kInvalidArgument for an unknown name.
Result<DType> dtype_from_name(const std::string& name);

// Bytes used by `n_elems` elements of `dtype`. Fails with kFileSizeOverflow when the byte count
// does not fit in int64, and kGraphShapeMismatch when a block type's count is not a whole number of
// blocks.
Result<uint64_t> dtype_bytes(DType dtype, int64_t n_elems);

// ---- symbolic shapes -------------------------------------------------------------------------

inline constexpr int kMaxRank = 6;
inline constexpr int kMaxSymbols = 8;

// A named symbolic dimension with inclusive bounds, e.g. {"seq", 1, 512}.
struct Symbol {
  std::string name;
  int64_t min = 1;
  int64_t max = 1;
};

// An affine dimension expression: c + sum_i coef[i] * symbol_i.
struct Dim {
  int64_t c = 0;
  int32_t coef[kMaxSymbols] = {};

  static Dim fixed(int64_t value) {
    Dim d;
    d.c = value;
    return d;
  }
  static Dim sym(int symbol, int32_t coef = 1) {
    Dim d;
    d.coef[symbol] = coef;
    return d;
  }
  bool is_fixed() const {
    for (int32_t k : coef)
      if (k != 0) return false;
    return true;
  }
  bool operator==(const Dim& o) const {
    if (c != o.c) return false;
    for (int i = 0; i < kMaxSymbols; ++i)
      if (coef[i] != o.coef[i]) return false;
    return true;
  }
  // Value at concrete symbol values (`values[i]` for symbol i).
  int64_t eval(const int64_t* values) const {
    int64_t v = c;
    for (int i = 0; i < kMaxSymbols; ++i) v += int64_t{coef[i]} * values[i];
    return v;
  }
};

// a + b and d * k, term by term, in checked arithmetic: kOutOfRange when a coefficient leaves
// int32 or the constant leaves int64 (a Dim never wraps).
Result<Dim> dim_add(const Dim& a, const Dim& b);
Result<Dim> dim_mul(const Dim& d, int64_t k);

// Smallest / largest value of `d` over the symbols' bounds; saturates at INT64_MIN / INT64_MAX
// when the true bound does not fit in int64.
int64_t dim_min(const Dim& d, const std::vector<Symbol>& symbols);
int64_t dim_max(const Dim& d, const std::vector<Symbol>& symbols);
// "seq", "past + seq", "3 * d", "384" (symbol names from `symbols`).
std::string dim_to_string(const Dim& d, const std::vector<Symbol>& symbols);

struct Shape {
  int32_t rank = 0;
  Dim dims[kMaxRank];

  static Shape of(std::initializer_list<Dim> dims);
  static Shape fixed(std::initializer_list<int64_t> dims);
  bool operator==(const Shape& o) const {
    if (rank != o.rank) return false;
    for (int i = 0; i < rank; ++i)
      if (!(dims[i] == o.dims[i])) return false;
    return true;
  }
  bool is_fixed() const {
    for (int i = 0; i < rank; ++i)
      if (!dims[i].is_fixed()) return false;
    return true;
  }
  const Dim& back() const { return dims[rank - 1]; }
};

// "[batch, seq, 384]".
std::string shape_to_string(const Shape& s, const std::vector<Symbol>& symbols);

// A concrete shape.
struct Extents {
  int32_t rank = 0;
  int64_t d[kMaxRank] = {};

  int64_t count() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= d[i];
    return n;
  }
  int64_t back() const { return d[rank - 1]; }
  // Product of all dims but the last (the "rows" of a row-major tensor).
  int64_t rows() const {
    int64_t n = 1;
    for (int i = 0; i + 1 < rank; ++i) n *= d[i];
    return n;
  }
};

// Evaluates `s` at symbol values. kOutOfRange if a dimension comes out negative.
Status shape_eval(const Shape& s, const int64_t* values, Extents* out);
// Element count of `s` at the symbols' max bounds; kFileSizeOverflow if it overflows int64.
Result<int64_t> shape_max_count(const Shape& s, const std::vector<Symbol>& symbols);

// ---- quantization ----------------------------------------------------------------------------

enum class QuantKind : uint8_t {
  kNone = 0,    // plain values (floats, or integers such as ids and masks)
  kPerTensor,   // x = scale * (q - zero_point); one scale
  kPerChannel,  // one scale (and zero point) per index of `axis`
  kBlock,       // GGUF-style block dtype: scales live inside the blocks (q8_0, ..., q6_K)
};
const char* quant_kind_name(QuantKind k);

struct Quant {
  QuantKind kind = QuantKind::kNone;
  int32_t axis = 0;                  // kPerChannel: the channel axis
  std::vector<float> scales;         // kPerTensor: 1; kPerChannel: dims[axis]
  std::vector<int32_t> zero_points;  // empty (symmetric) or one per scale

  bool operator==(const Quant& o) const {
    return kind == o.kind && axis == o.axis && scales == o.scales && zero_points == o.zero_points;
  }
};

}  // namespace laya::ir
