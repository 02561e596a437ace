// Test helpers for runtime/decisions/grammar: the real SmolLM2 vocabulary (llama.cpp's pieces, recorded by
// tools/reference/make_decoder_fixtures.py) and a tiny synthetic one.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/decisions/grammar/vocab.h"
#include "runtime/text/json.h"

namespace laya::testing {

// The recorded pieces: a JSON header line, then one line of hex per token id.
struct RecordedVocab {
  std::vector<std::string> pieces;
  json::Value header;
};

inline std::string unhex(const std::string& h) {
  std::string out;
  out.reserve(h.size() / 2);
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

// Decompressed by meson into the build tree (LAYA_SMOLLM2_PIECES).
inline const RecordedVocab& smollm2_pieces() {
  static const RecordedVocab v = [] {
    RecordedVocab r;
    const char* path = std::getenv("LAYA_SMOLLM2_PIECES");
    REQUIRE_MESSAGE(path != nullptr, "LAYA_SMOLLM2_PIECES is not set (run through meson test)");
    std::ifstream f(path, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), "cannot open " << path);
    std::string line;
    std::getline(f, line);
    Result<json::Value> h = json::parse(line);
    REQUIRE(h.is_ok());
    r.header = std::move(h).value();
    while (std::getline(f, line)) r.pieces.push_back(unhex(line));
    return r;
  }();
  return v;
}

// SmolLM2's vocabulary with its end-of-generation ids as stop tokens.
inline std::shared_ptr<const grammar::TokenVocab> smollm2_vocab() {
  static const std::shared_ptr<const grammar::TokenVocab> v = [] {
    const RecordedVocab& r = smollm2_pieces();
    std::vector<int32_t> stops;
    for (const json::Value& id : r.header.find("eog")->items())
      stops.push_back(static_cast<int32_t>(*id.as_int64()));
    Result<std::shared_ptr<const grammar::TokenVocab>> tv =
        grammar::TokenVocab::create(r.pieces, stops);
    REQUIRE(tv.is_ok());
    return std::move(tv).value();
  }();
  return v;
}

inline json::Value parse_json(std::string_view text) {
  Result<json::Value> r = json::parse(text);
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string() << " in " << text);
  return std::move(r).value();
}

}  // namespace laya::testing
