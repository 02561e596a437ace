// Reading the test fixtures (tests/fixtures, or $LAYA_FIXTURES) from doctest suites.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "runtime/text/json.h"

namespace laya::test {

inline std::string fixture_path(const std::string& rel) {
  const char* root = std::getenv("LAYA_FIXTURES");
  return std::string(root ? root : "tests/fixtures") + "/" + rel;
}

inline std::string fixture_text(const std::string& rel) {
  const std::string path = fixture_path(rel);
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot open " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline json::Value fixture_json(const std::string& rel) {
  Result<json::Value> r = json::parse(fixture_text(rel), {}, rel);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  return std::move(r).value();
}

}  // namespace laya::test
