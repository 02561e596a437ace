// Minimal NumPy .npy v1/v2 reading and writing for laya-run inputs and outputs: little-endian
// f4 / i4 arrays in C order. Anything else is refused with a message naming what was found.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"

namespace laya::tools {

struct NpyArray {
  std::string dtype;           // "<f4" or "<i4"
  std::vector<int64_t> shape;  // C order
  std::vector<uint8_t> data;   // element bytes
};

Result<NpyArray> npy_read(const std::string& path);
Status npy_write(const std::string& path, const std::string& dtype,
                 const std::vector<int64_t>& shape, const void* data, uint64_t nbytes);

}  // namespace laya::tools
