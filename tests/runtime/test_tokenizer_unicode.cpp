// Character classes against HF, code point by code point (tests/fixtures/tokenizers/
// unicode-classes.json, recorded by tools/reference/make_tokenizer_cases.py from HF `tokenizers`):
//  - regex classes: what the Oniguruma -> PCRE2 translation (runtime/text/tokenizer/regex.h) matches,
//    identical everywhere except on code points PCRE2 10.42's Unicode 14 tables do not know;
//  - the utf8proc classes behind the normalizers and pre-tokenizers (runtime/text/tokenizer/unicode.h):
//    HF's own tables are of Unicode 8.0 (unicode_categories) and 16.0 (Rust std), utf8proc's of
//    15.0, so characters assigned in between differ; the counts are pinned (docs/tokenizers.md).
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/text/json.h"
#include "runtime/text/tokenizer/regex.h"
#include "runtime/text/tokenizer/unicode.h"

namespace laya::tok {
namespace {

namespace fs = std::filesystem;
constexpr char32_t kCodePoints = 0x110000;

const json::Value& classes() {
  static const json::Value doc = [] {
    const char* root = std::getenv("LAYA_FIXTURES");
    const fs::path p =
        fs::path(root ? root : "tests/fixtures") / "tokenizers" / "unicode-classes.json";
    std::ifstream f(p, std::ios::binary);
    REQUIRE_MESSAGE(f.good(), "cannot open " << p);
    std::stringstream ss;
    ss << f.rdbuf();
    Result<json::Value> v = json::parse(ss.str());
    REQUIRE_MESSAGE(v.is_ok(), v.status().to_string());
    return std::move(v).value();
  }();
  return doc;
}

bool is_surrogate(char32_t c) {
  return c >= 0xD800 && c <= 0xDFFF;
}

std::vector<bool> set_of(const json::Value& ranges) {
  std::vector<bool> out(kCodePoints, false);
  for (const json::Value& lohi : ranges.items()) {
    for (int64_t c = *lohi.items()[0].as_int64(); c <= *lohi.items()[1].as_int64(); ++c) {
      out[static_cast<size_t>(c)] = true;
    }
  }
  return out;
}

// Every code point but the surrogates, in order, as one UTF-8 string.
const std::string& all_code_points() {
  static const std::string s = [] {
    std::string out;
    for (char32_t c = 0; c < kCodePoints; ++c) {
      if (!is_surrogate(c)) unicode::append_utf8(out, c);
    }
    return out;
  }();
  return s;
}

// The code points a single-character pattern matches (one scan over all of them).
std::vector<bool> matched_by(const Regex& re) {
  std::vector<bool> out(kCodePoints, false);
  const std::string& s = all_code_points();
  RegexScratch scratch;
  const Status st = re.for_each_match(s, scratch, [&](size_t b, size_t e) {
    size_t i = b;
    const char32_t c = unicode::next_cp(s, i);
    if (i == e) out[c] = true;
  });
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  return out;
}

TEST_CASE("regex classes match HF's on every code point PCRE2's tables know") {
  const json::Value* patterns = classes().find("regex_matches");
  REQUIRE(patterns);
  Result<Regex> cn = Regex::hf("\\p{Cn}", RegexDialect::kOniguruma);
  REQUIRE(cn.is_ok());
  const std::vector<bool> unknown = matched_by(cn.value());
  for (const json::Member& m : patterns->members()) {
    CAPTURE(m.key);
    Result<Regex> re = Regex::hf(m.key, RegexDialect::kOniguruma);
    REQUIRE_MESSAGE(re.is_ok(), re.status().to_string());
    const std::vector<bool> ours = matched_by(re.value());
    const std::vector<bool> hf = set_of(m.value);
    int64_t differ = 0, newer = 0;
    for (char32_t c = 0; c < kCodePoints; ++c) {
      if (is_surrogate(c) || ours[c] == hf[c]) continue;
      if (unknown[c]) {
        ++newer;
      } else {
        ++differ;
      }
    }
    MESSAGE(m.key << ": " << differ << " code points differ, " << newer
                  << " more that PCRE2's Unicode 14 does not know");
    // [[:alpha:]] is Alphabetic, a property Unicode 16 gave 38 combining letters (U+0363..) that
    // PCRE2's Unicode 14 tables do not have.
    CHECK(differ == (m.key == "[[:alpha:]]" ? 38 : 0));
  }
}

// Code points where `ours` and HF's set disagree.
int64_t count_differences(const char* key, bool (*ours)(char32_t)) {
  const json::Value* r = classes().find(key);
  REQUIRE_MESSAGE(r, key);
  const std::vector<bool> hf = set_of(*r);
  int64_t differ = 0;
  for (char32_t c = 0; c < kCodePoints; ++c) {
    if (!is_surrogate(c) && c != 'a' && ours(c) != hf[c]) ++differ;
  }
  MESSAGE(std::string(key) << ": " << differ << " code points differ");
  return differ;
}

TEST_CASE("utf8proc classes: only characters assigned between Unicode 8.0 and 16.0 differ") {
  // HF BertNormalizer clean_text: \0, U+FFFD and controls are removed, whitespace becomes ' '.
  CHECK(count_differences("bert_clean_removed", [](char32_t c) {
          return c == 0 || c == 0xFFFD || unicode::is_bert_control(c);
        }) == 20);
  CHECK(count_differences("bert_clean_to_space", [](char32_t c) {
          return c != ' ' && unicode::is_white_space(c) && !unicode::is_bert_control(c);
        }) == 0);
  CHECK(count_differences("bert_punctuation", [](char32_t c) {
          return !unicode::is_white_space(c) && unicode::is_punctuation(c);
        }) == 129);
  CHECK(count_differences("digits_numeric", unicode::is_numeric) == 93);
  CHECK(count_differences("white_space", unicode::is_white_space) == 0);
  // HF's StripAccents table (unicode-normalization-alignments) predates most marks added since
  // Unicode 10 (355 of them) and still has two characters that are letters today.
  CHECK(count_differences("strip_accents_removed", unicode::is_mark) == 357);

  const json::Value* lower = classes().find("lowercase");
  REQUIRE(lower);
  std::vector<std::string> hf(kCodePoints);
  for (const json::Member& m : lower->members()) hf[std::stoul(m.key)] = m.value.as_string();
  int64_t differ = 0;
  std::string in, out;
  for (char32_t c = 1; c < kCodePoints; ++c) {
    if (is_surrogate(c)) continue;
    in.clear();
    out.clear();
    unicode::append_utf8(in, c);
    unicode::lowercase(in, &out);
    const std::string& want = hf[c].empty() ? in : hf[c];
    if (out != want) ++differ;
  }
  MESSAGE("lowercase: " << differ << " code points differ");
  CHECK(differ == 55);
}

}  // namespace
}  // namespace laya::tok
