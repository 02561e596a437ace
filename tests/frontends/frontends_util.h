// Helpers for the frontends tests (with tests/test_files.h): safetensors images written by hand (the
// format is simple enough to state in a few lines), fixture paths.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/test_files.h"

namespace laya::test {

// A safetensors image from its header text and data bytes: u64 LE header size, header, data.
inline std::vector<uint8_t> st_raw(const std::string& header, const std::vector<uint8_t>& data) {
  // One allocation and memcpy (GCC 12 misreads vector::insert after 8 bytes as out of bounds).
  std::vector<uint8_t> out(8 + header.size() + data.size());
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(n >> (8 * i));
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

struct StEntry {
  std::string name;
  std::string dtype;  // "F32", "F16", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// A well-formed image: tensors stored back to back in the given order, the header padded with
// spaces to a multiple of 8 (as the reference writer does).
inline std::vector<uint8_t> st_image(const std::vector<StEntry>& entries,
                                     const std::string& metadata_json = "") {
  std::string h = "{";
  std::vector<uint8_t> data;
  if (!metadata_json.empty()) h += "\"__metadata__\":" + metadata_json;
  for (const StEntry& e : entries) {
    if (h.size() > 1) h += ",";
    std::string shape = "[";
    for (size_t i = 0; i < e.shape.size(); ++i)
      shape += (i ? "," : "") + std::to_string(e.shape[i]);
    shape += "]";
    h += "\"" + e.name + "\":{\"dtype\":\"" + e.dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(data.size()) + "," +
         std::to_string(data.size() + e.bytes.size()) + "]}";
    data.insert(data.end(), e.bytes.begin(), e.bytes.end());
  }
  h += "}";
  while (h.size() % 8 != 0) h += ' ';
  return st_raw(h, data);
}

inline std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

inline std::vector<uint8_t> u16_bytes(const std::vector<uint16_t>& v) {
  std::vector<uint8_t> b(v.size() * 2);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Whether `p` lies in a mapping of the file `path` (per /proc/self/maps).
inline bool in_mapping_of(const void* p, const std::string& path) {
  const std::string real = std::filesystem::canonical(path).string();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p);
  while (std::getline(maps, line)) {
    if (line.size() < real.size() || line.compare(line.size() - real.size(), real.size(), real))
      continue;
    unsigned long long start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &start, &end) == 2 && at >= start && at < end)
      return true;
  }
  return false;
}

// tests/fixtures (meson passes LAYA_FIXTURES).
inline std::string fixtures_dir() {
  const char* d = std::getenv("LAYA_FIXTURES");
  REQUIRE_MESSAGE(d != nullptr, "LAYA_FIXTURES is not set");
  return d;
}

// Copies a fixture directory into `dst` (tests edit the copy).
inline void copy_dir(const std::string& src, const std::string& dst) {
  std::filesystem::copy(src, dst, std::filesystem::copy_options::recursive);
}

}  // namespace laya::test
