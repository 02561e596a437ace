// SHA-256 (FIPS 180-4) for the provenance block of converted models: every source file's digest is
// recorded so a model file names exactly what it was made from.
#pragma once

#include <cstdint>
#include <string>

#include "ir/status.h"

namespace laya::frontends {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, uint64_t n);
  // Lowercase hex of the digest; the object must not be updated afterwards.
  std::string hex_digest();

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  uint64_t len_ = 0;  // bytes so far
};

// The digest of a whole file, read in chunks (the page cache, not the heap, holds it).
// kIoError naming the file when it cannot be read.
Result<std::string> sha256_file(const std::string& path);

}  // namespace laya::frontends
