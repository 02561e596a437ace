// Fuzz target: a tokenizer.json through runtime/text/tokenizer (parse_tokenizer_json: model,
// added_tokens, normalizer, pre_tokenizer, post_processor, decoder), Tokenizer::create (the spec's
// checks, regexes, lookup tables), then a few fixed strings through encode (plain, with the
// special-token template, with split_special), encode_pair, decode with and without special
// tokens, token_to_piece and the id <-> token lookups. Any input must give a Status, never a
// crash, a sanitizer report or a leak.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/text/tokenizer/tokenizer.h"
#include "runtime/text/tokenizer/tokenizer_json.h"

namespace {

using namespace laya;

// Text a real request carries: ASCII words and numbers, Unicode letters and marks (NFC / NFD
// forms, CJK, an emoji), whitespace runs, the usual special-token spellings, and a byte that is
// not UTF-8 (an error, never a crash).
constexpr std::string_view kTexts[] = {
    "Hello, world! The 2024 caf\xc3\xa9 costs $3.50 -- isn't it?",
    "  leading\tand trailing  \n\n spaces ",
    "[CLS] choice question: pick one [SEP][MASK] yes[MASK] no <mask> <s></s> <|endoftext|>",
    "\xe4\xb8\x96\xe7\x95\x8c\xe3\x81\x93\xe3\x82\x93\xe3\x81\xab\xe3\x81\xa1\xe3\x81\xaf "
    "\xf0\x9f\x98\x80 e\xcc\x81 \xc3\x85ngstr\xc3\xb6m",
    "",
    "bad \xff utf-8",
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Result<tok::TokenizerSpec> spec =
      tok::parse_tokenizer_json(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!spec.is_ok()) return 0;
  Result<std::unique_ptr<tok::Tokenizer>> made = tok::Tokenizer::create(std::move(spec).value());
  if (!made.is_ok()) return 0;
  const tok::Tokenizer& t = **made;
  const int32_t vocab = t.vocab_size();
  std::vector<int32_t> ids;
  std::string text;
  for (std::string_view s : kTexts) {
    for (int mode = 0; mode < 3; ++mode) {
      tok::EncodeOptions opts;
      opts.add_special_tokens = mode >= 1;
      opts.split_special = mode == 2;
      ids.clear();
      if (!t.encode(s, opts, &ids).is_ok()) continue;
      for (int32_t id : ids)
        if (id < 0 || id >= vocab) std::abort();  // an id outside the vocabulary
      (void)t.decode(ids, mode == 0, &text);
    }
    ids.clear();
    tok::EncodeOptions special;
    special.add_special_tokens = true;
    (void)t.encode_pair(s, kTexts[0], special, &ids);
  }
  // Every id (a few thousand at most) through the lookups; ids past the vocabulary too.
  const int32_t n = vocab < 4096 ? vocab + 2 : 4096;
  for (int32_t id = -1; id < n; ++id) {
    (void)t.token_to_id(t.id_to_token(id));
    (void)t.is_added(id);
    (void)t.is_special(id);
    text.clear();
    (void)t.token_to_piece(id, id % 2 == 0, &text);
  }
  (void)t.special_ids();
  (void)t.model_kind();
  return 0;
}
