// Minimal NumPy .npy (versions 1.0, 2.0, 3.0) reading and writing for laya-run's inputs and
// outputs: little-endian f4 / i4 arrays in C order. Anything else is refused with a message naming
// what was found.
//
// The header is parsed strictly: a dict literal with exactly the keys 'descr' (a quoted string),
// 'fortran_order' (True / False) and 'shape' (a tuple of at most kNpyMaxRank non-negative
// integers), then spaces and a newline. The element count and byte size are computed with checked
// arithmetic, and the data must have exactly that many bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"

namespace laya::tools {

inline constexpr int kNpyMaxRank = 32;                           // NumPy's own limit
inline constexpr uint64_t kNpyMaxFileBytes = uint64_t{1} << 36;  // npy_read refuses larger files

struct NpyArray {
  std::string dtype;           // "<f4" or "<i4"
  std::vector<int64_t> shape;  // C order
  std::vector<uint8_t> data;   // element bytes
};

// Parses a whole .npy image of `size` bytes at `bytes` (borrowed for the call; copied into the
// result). kInvalidArgument with a message naming the problem.
Result<NpyArray> npy_parse(const uint8_t* bytes, uint64_t size);

// Reads the regular file `path` (ir/file_io.h: kIoError naming the path and the OS reason) and
// parses it; parse errors are prefixed with the path.
Result<NpyArray> npy_read(const std::string& path);

// Writes a C-order array of `dtype` ("<f4", "<i4") and `shape`, `nbytes` bytes at `data`
// (borrowed), atomically (ir/file_io.h). kIoError naming the path and the OS reason.
Status npy_write(const std::string& path, const std::string& dtype,
                 const std::vector<int64_t>& shape, const void* data, uint64_t nbytes);

}  // namespace laya::tools
