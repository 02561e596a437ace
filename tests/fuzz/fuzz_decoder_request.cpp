// Fuzz target: a decoder decision body (runtime/decisions/decoder_decide.h) through parse_decoder_request:
// `state` / `states`, `questions` (decision::parse_request) or `schema` with `fallback`,
// `max_tokens`, `deadline_ms`, `min_confidence`, `system`. A schema request's schema is then
// compiled against a small fixed byte-level vocabulary (every byte, some multi-byte pieces of
// JSON text, a partial UTF-8 character, a stop token) with lowered automaton limits, and one
// walk through its token automaton picks tokens (the stop token once allowed): a text it
// completes must parse with runtime/text/json and validate against the schema, and the request's
// fallback must validate too; the harness aborts otherwise. Any input must give a Status, never
// a crash, a sanitizer report or a leak.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/decisions/decoder_decide.h"
#include "runtime/decisions/grammar/schema.h"
#include "runtime/decisions/grammar/token_automaton.h"
#include "runtime/decisions/grammar/vocab.h"
#include "runtime/text/json.h"

namespace {

using namespace laya;

// Ids 0..255: the single bytes; then multi-byte pieces; the last id is the stop token (no piece).
const std::shared_ptr<const grammar::TokenVocab>& tiny_vocab() {
  static const std::shared_ptr<const grammar::TokenVocab> vocab = [] {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
    for (const char* p : {"{\"",          "\": ", "\"",  ", \"",  "\"}",      "}",     "true",
                          "false",        "null", "0",   "12",    "-1",       ".5",    "e+",
                          "ab",           " ",    "\\n", "\\u00", "\xc3\xa9", "\xc3",  "\xe2\x82",
                          "\xe2\x82\xac", "[",    "]",   ", ",    "\"a",      "abc\"", "ing"})
      pieces.emplace_back(p);
    pieces.emplace_back();  // the stop token
    const int32_t stop = static_cast<int32_t>(pieces.size()) - 1;
    Result<std::shared_ptr<const grammar::TokenVocab>> v =
        grammar::TokenVocab::create(std::move(pieces), {stop});
    if (!v.is_ok()) std::abort();
    return std::move(v).value();
  }();
  return vocab;
}

// The grammar's promise: whatever a walk completes parses and validates.
void walk(const grammar::TokenAutomaton& ta, uint64_t seed) {
  const grammar::TokenVocab& vocab = ta.vocab();
  const int32_t V = vocab.size();
  grammar::GrammarMatcher m(&ta);
  std::string text;
  for (int step = 0; step < 600 && !m.complete(); ++step) {
    const uint64_t* mask = m.mask();
    // The stop token when allowed (the text may end), else the allowed id at or after a
    // pseudo-random start.
    int32_t pick = -1;
    for (int32_t s : vocab.stop_ids())
      if ((mask[s / 64] >> (s % 64)) & 1) pick = s;
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    const int32_t start = static_cast<int32_t>((seed >> 33) % static_cast<uint64_t>(V));
    for (int32_t i = 0; i < V && pick < 0; ++i) {
      const int32_t t = (start + i) % V;
      if ((mask[t / 64] >> (t % 64)) & 1) pick = t;
    }
    if (pick < 0) std::abort();  // a state with no way on
    if (!m.accept(pick).is_ok()) std::abort();
    if (vocab.is_stop(pick)) break;
    text += vocab.piece(pick);
  }
  if (!m.complete()) return;
  Result<json::Value> doc = json::parse(text);
  if (!doc.is_ok()) std::abort();
  if (!grammar::schema_validate(ta.schema(), *doc).is_ok()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  Result<runtime::DecoderRequest> req = runtime::parse_decoder_request(body);
  if (!req.is_ok() || !req->schema) return 0;
  const runtime::DecoderSchemaRequest& sr = req->schema_request;
  // Small limits keep one input fast; the limits' own errors are exercised too.
  grammar::CompileOptions opts;
  opts.automaton.max_nfa_states = 20000;
  opts.automaton.max_dfa_states = 5000;
  Result<std::shared_ptr<const grammar::TokenAutomaton>> ta =
      grammar::TokenAutomaton::compile(sr.schema, tiny_vocab(), opts);
  if (!ta.is_ok()) return 0;
  if (sr.fallback && !grammar::schema_validate((*ta)->schema(), *sr.fallback).is_ok())
    std::abort();  // parse_decoder_request validated it
  walk(**ta, size);
  return 0;
}
