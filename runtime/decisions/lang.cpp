#include "runtime/decisions/lang.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/text/pystr.h"
#include "runtime/decisions/router_tables.inc"

namespace laya::decision {

namespace t = tables;
using U32 = std::u32string;
using U32V = std::u32string_view;

namespace {

constexpr int kMaxChars = 4000;
constexpr size_t kNumLangs = std::size(t::kStopLanguages);

// ---- word lists ----

template <size_t N>
bool in_list(const std::string_view (&list)[N], std::string_view w) {
  return std::binary_search(std::begin(list), std::end(list), w);
}
bool in_stop(size_t lang, std::string_view w) {
  const t::WordList& l = t::kStop[lang];
  return std::binary_search(l.words, l.words + l.size, w);
}
int lang_index(std::string_view code) {
  for (size_t i = 0; i < kNumLangs; ++i)
    if (t::kStopLanguages[i] == code) return static_cast<int>(i);
  return -1;
}
bool is_diacritic(char32_t c) {
  return std::binary_search(std::begin(t::kNonEnDiacritics), std::end(t::kNonEnDiacritics), c);
}

// ---- characters ----

// laya.lang._is_letter: isalpha, or a letter a newer Unicode database knows.
bool is_letter(char32_t c) {
  if (py::is_alpha(c)) return true;
  if (c < t::kPostDatabaseLetterFloor || !py::is_unassigned(c)) return false;
  for (const auto& r : t::kPostDatabaseLetters)
    if (r.lo <= c && c <= r.hi) return true;
  return false;
}

bool latin_block(char32_t cp, char32_t limit) {
  return cp < limit || (0x1E00 <= cp && cp <= 0x1EFF) || (0xFF21 <= cp && cp <= 0xFF3A) ||
         (0xFF41 <= cp && cp <= 0xFF5A);
}

// Index into kScriptNames of the range holding cp, or -1.
int script_range(char32_t cp) {
  const auto* end = std::end(t::kScriptRanges);
  const auto* it = std::upper_bound(std::begin(t::kScriptRanges), end, static_cast<uint32_t>(cp),
                                    [](uint32_t v, const t::ScriptRange& r) { return v < r.lo; });
  if (it == std::begin(t::kScriptRanges)) return -1;
  --it;
  return cp <= it->hi ? it->script : -1;
}

// ---- the regular expressions upstream uses, on code points ----

bool wordish(char32_t c) {
  return py::is_word(c) || c == U'-';
}  // [\w-]

// _IDENTIFIER.sub(" ", s): (?<![\w-])[\w-]*(?:[.@][\w-]+)+ -> " "
U32 strip_identifiers(U32V s) {
  U32 out;
  out.reserve(s.size());
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    if (i == 0 || !wordish(s[i - 1])) {
      size_t k = i;
      while (k < n && wordish(s[k])) ++k;
      int groups = 0;
      while (k + 1 < n && (s[k] == U'.' || s[k] == U'@') && wordish(s[k + 1])) {
        ++k;
        while (k < n && wordish(s[k])) ++k;
        ++groups;
      }
      if (groups > 0) {
        out.push_back(U' ');
        i = k;
        continue;
      }
    }
    out.push_back(s[i]);
    ++i;
  }
  return out;
}

// _WORD.findall(s): maximal runs of [^\W\d_].
std::vector<U32V> find_words(U32V s) {
  std::vector<U32V> out;
  size_t i = 0;
  while (i < s.size()) {
    if (!py::is_word_letter(s[i])) {
      ++i;
      continue;
    }
    const size_t b = i;
    while (i < s.size() && py::is_word_letter(s[i])) ++i;
    out.push_back(s.substr(b, i - b));
  }
  return out;
}

// _LETTER_RUN.sub(lambda m: " " if m.group().isupper() else m.group(), s): runs of two or more
// [^\W\d_] that are all caps become one space. `any_caps` / `long_caps` report what was seen.
U32 blank_caps_runs(U32V s, bool* any_caps = nullptr, bool* long_caps = nullptr) {
  U32 out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (!py::is_word_letter(s[i])) {
      out.push_back(s[i++]);
      continue;
    }
    const size_t b = i;
    while (i < s.size() && py::is_word_letter(s[i])) ++i;
    const U32V run = s.substr(b, i - b);
    if (run.size() >= 2 && py::str_isupper(run)) {
      out.push_back(U' ');
      if (any_caps) *any_caps = true;
      if (long_caps && run.size() >= static_cast<size_t>(t::kShoutedMinWord)) *long_caps = true;
    } else {
      out.append(run);
    }
  }
  return out;
}

// _CODE_LINE.search: [=;{}\[\]]|\w\(
bool code_line(U32V s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const char32_t c = s[i];
    if (c == U'=' || c == U';' || c == U'{' || c == U'}' || c == U'[' || c == U']') return true;
    if (i + 1 < s.size() && s[i + 1] == U'(' && py::is_word(c)) return true;
  }
  return false;
}

// _JOINED.search: [^\W_][._/\\][^\W_]
bool joined(U32V s) {
  for (size_t i = 0; i + 2 < s.size(); ++i) {
    const char32_t m = s[i + 1];
    if ((m == U'.' || m == U'_' || m == U'/' || m == U'\\') && py::is_alnum(s[i]) &&
        py::is_alnum(s[i + 2]))
      return true;
  }
  return false;
}

size_t count_alpha(U32V s) {
  size_t n = 0;
  for (char32_t c : s) n += py::is_alpha(c) ? 1 : 0;
  return n;
}

bool shouted(U32V s) {
  bool upper = false;
  for (char32_t c : s) {
    if (py::is_lower(c)) return false;
    if (py::is_upper(c)) upper = true;
  }
  return upper;
}

// ---- unique words (Python sets of the lowered words, as UTF-8) ----

struct WordCount {
  std::string word;
  int count;
};

std::vector<WordCount> count_words(const std::vector<U32V>& words) {
  std::vector<U32V> sorted = words;
  std::sort(sorted.begin(), sorted.end());
  std::vector<WordCount> out;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i + 1;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    out.push_back({py::encode(sorted[i]), static_cast<int>(j - i)});
    i = j;
  }
  return out;
}

// ---- the detection result ----

struct Source {
  int leaf_index = 0;
  std::optional<std::vector<json::Value>> path;
  int line = 0;
};

struct Diagnostic {
  std::string stage = "whole_state";
  std::optional<std::string> reason;
  std::optional<Source> source;
};

struct Det {
  std::string script;
  std::vector<std::pair<std::string, double>> profile;
  std::optional<std::string> language;
  bool is_english = true;
  bool undecided = true;
  double diacritic_rate = 0.0;
  double non_latin = 0.0;
  std::optional<U32> mixed;
};

struct LatinProfile {
  std::optional<std::string> language;
  int english_hits = 0;
  double diacritic_rate = 0.0;
  bool looks_non_english = false;
};

// ---- laya.lang internals ----

// _iter_text: string leaves (depth <= 6), with their paths when `paths` is given.
void iter_text(const json::Value& v, int depth, std::vector<U32>& leaves,
               std::vector<std::optional<std::vector<json::Value>>>* paths,
               const std::optional<std::vector<json::Value>>& path) {
  if (depth > 6 || v.is_null()) return;
  if (v.is_string()) {
    leaves.push_back(py::decode(v.as_string()));
    if (paths) paths->push_back(path);
    return;
  }
  if (v.is_object()) {
    for (const auto& m : v.members()) {
      std::optional<std::vector<json::Value>> p;
      if (paths && path && py::decode(m.key).size() <= 128) {
        p = *path;
        p->push_back(json::Value::string(m.key));
      }
      iter_text(m.value, depth + 1, leaves, paths, p);
    }
    return;
  }
  if (v.is_array()) {
    for (size_t i = 0; i < v.items().size(); ++i) {
      std::optional<std::vector<json::Value>> p = path;
      if (paths && path) p->push_back(json::Value::integer(static_cast<int64_t>(i)));
      iter_text(v.items()[i], depth + 1, leaves, paths, p);
    }
  }
}

// The string leaves of a state, decoded once, with their paths when `with_paths`.
struct Leaves {
  std::vector<U32> text;
  std::vector<std::optional<std::vector<json::Value>>> paths;
};

Leaves leaves_of(const json::Value& state, bool with_paths) {
  Leaves l;
  iter_text(state, 0, l.text, with_paths ? &l.paths : nullptr, std::vector<json::Value>{});
  return l;
}

U32 state_text(const Leaves& leaves) {
  U32 out;
  int budget = kMaxChars;
  bool first = true;
  for (const U32& leaf : leaves.text) {
    if (budget <= 0) break;
    if (!first) out.push_back(U' ');
    first = false;
    if (static_cast<int>(leaf.size()) > budget) {
      out.append(leaf, 0, static_cast<size_t>(budget));
      break;
    }
    out.append(leaf);
    budget -= static_cast<int>(leaf.size()) + 1;
  }
  if (out.size() > kMaxChars) out.resize(kMaxChars);
  return out;
}

bool non_latin_carries(double non_latin, double n_non_latin) {
  return non_latin >= t::kNonLatinFraction ||
         (non_latin >= t::kNonLatinMinFraction && n_non_latin >= t::kNonLatinMinLetters);
}

// _non_latin_words(text): are there lowercase-initial runs (>= 2) of one named non-Latin script?
bool has_non_latin_words(U32V text) {
  U32 cur;
  int script = -1;
  auto good = [](const U32& w) { return w.size() >= 2 && !py::is_upper(w[0]); };
  for (char32_t ch : text) {
    if (py::is_combining(ch)) continue;
    const int s = latin_block(ch, 0x0250) ? -1 : script_range(ch);
    if (s >= 0 && s == script) {
      cur.push_back(ch);
      continue;
    }
    if (!cur.empty() && good(cur)) return true;
    cur.clear();
    script = s;
    if (s >= 0) cur.push_back(ch);
  }
  return !cur.empty() && good(cur);
}

LatinProfile latin_profile(U32V text, Diagnostic* diag) {
  U32 cleaned = strip_identifiers(text);
  for (char32_t& c : cleaned)
    if (c == 0x130) c = U'i';
  const U32 lowered_words = py::lower(cleaned);
  const std::vector<U32V> words = find_words(lowered_words);
  const U32 lowered = py::lower(text);
  size_t diac = 0;
  for (char32_t c : lowered) diac += is_diacritic(c) ? 1 : 0;
  const double diac_rate =
      static_cast<double>(diac) / static_cast<double>(std::max<size_t>(1, lowered.size()));
  const bool non_english = diac_rate >= t::kNonEnDiacriticRate;
  const std::vector<WordCount> uniq = count_words(words);
  bool any_nordic = false, any_en_only = false, any_short_sv = false;
  for (const auto& w : uniq) {
    any_nordic |= in_list(t::kNordicOverlapWords, w.word);
    any_en_only |= in_list(t::kEnOnlyWords, w.word);
    any_short_sv |= in_list(t::kShortSwedishWords, w.word);
  }
  const bool nordic_overlap = any_nordic && !any_en_only;
  LatinProfile out;
  out.diacritic_rate = diac_rate;
  if (words.size() > 1 && words.size() < 4 && any_short_sv) {
    if (diag) diag->reason = "short_swedish";
    out.language = "sv";
    out.looks_non_english = non_english;
    return out;
  }
  if (words.size() < 4) {
    if (diag) diag->reason = "insufficient_words";
    out.looks_non_english = non_english || nordic_overlap;
    return out;
  }
  int scores[kNumLangs] = {};
  bool evidenced[kNumLangs] = {};
  for (size_t lg = 0; lg < kNumLangs; ++lg) {
    for (const auto& w : uniq) {
      if (!in_stop(lg, w.word)) continue;
      scores[lg] += in_list(t::kEnCollisionWords, w.word) ? 1 : w.count;
      if (!in_list(t::kSharedWords, w.word)) evidenced[lg] = true;
    }
  }
  const int en = scores[0];
  int best_lg = -1, best = 0;
  for (size_t lg = 1; lg < kNumLangs; ++lg) {
    if (!evidenced[lg]) continue;
    if (best_lg < 0 || scores[lg] > best) {
      best_lg = static_cast<int>(lg);
      best = scores[lg];
    }
  }
  auto word_is = [&](U32V w, std::u32string_view lit) { return w == lit; };
  auto has_word = [&](std::u32string_view lit) {
    return std::any_of(words.begin(), words.end(), [&](U32V w) { return word_is(w, lit); });
  };
  std::optional<std::string> lang;
  const bool is_sv = best_lg >= 0 && t::kStopLanguages[best_lg] == "sv";
  if (best_lg >= 0 && best >= std::max(2, en + 2)) {
    lang = std::string(t::kStopLanguages[best_lg]);
  } else if (is_sv && has_word(U"inte") && has_word(U"kan") &&
             (words[0] == U"kan" || words[0] == U"jag" || words[0] == U"vi") && en <= 1) {
    lang = std::string(t::kStopLanguages[best_lg]);
  } else if (best_lg >= 0 && non_english && best >= std::max(2, en)) {
    lang = std::string(t::kStopLanguages[best_lg]);
  } else if (en) {
    bool rescued = false;
    if (non_english && diac_rate < t::kEnglishRescueDiacriticRate) {
      int en_only = 0, with_diacritic = 0;
      for (const auto& w : uniq) {
        en_only += in_list(t::kEnOnlyWords, w.word) ? 1 : 0;
        const U32 d = py::decode(w.word);
        with_diacritic += std::any_of(d.begin(), d.end(), is_diacritic) ? 1 : 0;
      }
      rescued = en_only >= 2 && with_diacritic <= 1;
    }
    if (!non_english || rescued) lang = "en";
  }
  if (diag) diag->reason = lang ? "language_evidence" : "no_language_evidence";
  out.language = lang;
  out.english_hits = en;
  out.looks_non_english = non_english || (!lang && nordic_overlap);
  return out;
}

bool shouted_evidence(const std::vector<U32V>& tokens, const std::string& lang,
                      double diacritic_rate) {
  if (!std::any_of(tokens.begin(), tokens.end(),
                   [](U32V w) { return w.size() >= static_cast<size_t>(t::kShoutedMinWord); }))
    return false;
  if (diacritic_rate >= t::kNonEnDiacriticRate) return true;
  const int lg = lang_index(lang);
  if (lg < 0) return false;
  for (U32V tok : tokens) {
    const U32 w = py::lower(tok);
    if (w.size() >= static_cast<size_t>(t::kShoutedMinStopword) && in_stop(lg, py::encode(w)))
      return true;
  }
  return false;
}

// _named_prose_language(segment)
std::optional<std::string> named_prose_language(U32V segment) {
  if (py::strip(segment).empty() || code_line(segment)) return std::nullopt;
  U32 prose;
  for (U32V tok : py::split_ws(segment)) {
    if (joined(tok)) continue;
    if (!prose.empty()) prose.push_back(U' ');
    prose.append(tok);
  }
  const bool is_shouted = shouted(prose);
  if (!is_shouted) prose = blank_caps_runs(prose);
  const std::vector<U32V> tokens = find_words(prose);
  if (tokens.size() < 4) return std::nullopt;
  const LatinProfile prof = latin_profile(prose, nullptr);
  if (!prof.language || *prof.language == "en") return std::nullopt;
  if (is_shouted && !shouted_evidence(tokens, *prof.language, prof.diacritic_rate))
    return std::nullopt;
  const int lg = lang_index(*prof.language);
  std::vector<std::string> matched;
  for (U32V tok : tokens) {
    std::string w = py::encode(py::lower(tok));
    if (in_stop(lg, w) && std::find(matched.begin(), matched.end(), w) == matched.end())
      matched.push_back(std::move(w));
  }
  if (matched.size() < 2) return std::nullopt;
  return prof.language;
}

// _analyse_text(text, diagnostic)
Det analyse_text(U32V text, Diagnostic* diag) {
  // _script_counts: non-Latin scripts in order of first appearance, then "latin".
  std::vector<std::pair<std::string, int64_t>> counts;
  int64_t latin = 0;
  for (char32_t ch : text) {
    if (!is_letter(ch)) continue;
    if (latin_block(ch, 0x02B0)) {
      ++latin;
      continue;
    }
    const int s = script_range(ch);
    const std::string name = s >= 0 ? std::string(t::kScriptNames[s]) : std::string("other");
    auto it = std::find_if(counts.begin(), counts.end(),
                           [&](const auto& kv) { return kv.first == name; });
    if (it == counts.end())
      counts.emplace_back(name, 1);
    else
      ++it->second;
  }
  counts.emplace_back("latin", latin);
  int64_t total = 0;
  for (const auto& kv : counts) total += kv.second;
  Det d;
  if (total > 0) {
    if (latin) d.profile.emplace_back("latin", static_cast<double>(latin) / total);
    for (const auto& kv : counts)
      if (kv.first != "latin" && kv.second)
        d.profile.emplace_back(kv.first, static_cast<double>(kv.second) / total);
    // max() over the counts keeps the first maximal entry; Latin is last, so it loses ties.
    const auto* best = &counts[0];
    for (const auto& kv : counts)
      if (kv.second > best->second) best = &kv;
    d.script = best->first;
  } else {
    d.script = "unknown";
  }
  double latin_share = 0.0;
  for (const auto& kv : d.profile)
    if (kv.first == "latin") latin_share = kv.second;
  const double non_latin = d.profile.empty() ? 0.0 : py::round(1.0 - latin_share, 4);
  const double n_non_latin = py::round_int(non_latin * static_cast<double>(count_alpha(text)));
  if (d.script == "latin" && has_non_latin_words(text) &&
      non_latin_carries(non_latin, n_non_latin)) {
    const std::pair<std::string, double>* best = nullptr;
    for (const auto& kv : d.profile)
      if (kv.first != "latin" && (!best || kv.second > best->second)) best = &kv;
    d.script = best->first;
  }
  if (d.script == "unknown") {
    if (diag) diag->reason = "no_letters";
    return d;
  }
  if (d.script != "latin") {
    if (diag) diag->reason = "non_latin_script";
    d.is_english = false;
    d.non_latin = non_latin;
    return d;
  }
  const LatinProfile prof = latin_profile(text, diag);
  std::optional<std::string> lang = prof.language;
  if (lang && *lang != "en" && !non_latin_carries(non_latin, n_non_latin)) {
    if (shouted(text)) {
      if (!shouted_evidence(find_words(text), *lang, prof.diacritic_rate)) {
        lang.reset();
        if (diag) diag->reason = "caps_veto";
      }
    } else {
      bool any_caps = false, long_caps = false;
      const U32 blanked = blank_caps_runs(text, &any_caps, &long_caps);
      if (any_caps && !long_caps && blanked != text) {
        lang = latin_profile(blanked, nullptr).language;
        if (diag) diag->reason = "caps_filtered";
      }
    }
  }
  d.undecided = !lang;
  d.is_english = (lang && *lang == "en") || (d.undecided && !prof.looks_non_english);
  if (diag && d.undecided && !d.is_english) diag->reason = "non_english_markers";
  d.language = lang;
  d.diacritic_rate = py::round(prof.diacritic_rate, 4);
  d.non_latin = non_latin;
  return d;
}

std::vector<U32V> split_lines(U32V s) {
  std::vector<U32V> out;
  size_t b = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == U'\n') {
      out.push_back(s.substr(b, i - b));
      b = i + 1;
    }
  }
  return out;
}

Source make_source(const Leaves& leaves, size_t index, size_t line) {
  Source s;
  s.leaf_index = static_cast<int>(index);
  if (index < leaves.paths.size()) s.path = leaves.paths[index];
  s.line = static_cast<int>(line);
  return s;
}

// _non_english_segment(state): the first line or field that names a non-English language.
bool non_english_segment(const Leaves& leaves, Diagnostic* diag, std::string* lang, U32* seg) {
  size_t seen = 0;
  for (size_t index = 0; index < leaves.text.size(); ++index) {
    const std::vector<U32V> lines = split_lines(leaves.text[index]);
    for (size_t line = 0; line < lines.size(); ++line) {
      if (seen >= static_cast<size_t>(kMaxChars)) return false;
      const U32V s = lines[line].substr(0, kMaxChars - seen);
      seen += s.size();
      const std::optional<std::string> named = named_prose_language(s);
      if (named) {
        if (diag) {
          diag->stage = "segment";
          diag->reason = "named_segment";
          diag->source = make_source(leaves, index, line + 1);
        }
        *lang = *named;
        *seg = U32(py::strip(s));
        return true;
      }
    }
  }
  return false;
}

// _leaf_non_english(leaf): the longest line of one string value not safe for English, if any.
std::optional<Det> leaf_non_english(U32V leaf, int* best_line, std::string* best_reason) {
  size_t best_n = 0;
  bool have = false;
  std::optional<Det> best;
  const std::vector<U32V> lines = split_lines(leaf);
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    const U32V line = lines[ln];
    if (line.size() < 7) continue;
    const U32V sample = line.substr(0, kMaxChars);
    if (py::strip(sample).empty() || code_line(sample)) continue;
    Det det = analyse_text(sample, nullptr);
    if (det.is_english) continue;
    const bool named = det.language && *det.language != "en" && named_prose_language(sample);
    if (!named) {
      if (det.script != "latin" && det.script != "unknown") {
        if (!(has_non_latin_words(sample) &&
              count_alpha(sample) >= static_cast<size_t>(t::kNonLatinMinLetters)))
          continue;
      } else if (!(det.diacritic_rate >= t::kNonEnDiacriticRate &&
                   find_words(sample).size() >= 4)) {
        continue;
      }
    }
    const size_t n_alpha = count_alpha(sample);
    if (!have || n_alpha > best_n) {
      have = true;
      best_n = n_alpha;
      *best_line = static_cast<int>(ln + 1);
      *best_reason = named                                                ? "named_value"
                     : (det.script != "latin" && det.script != "unknown") ? "non_latin_value"
                                                                          : "diacritic_value";
      best = std::move(det);
    }
  }
  return best;
}

json::Value optional_string(const std::optional<std::string>& s) {
  return s ? json::Value::string(*s) : json::Value();
}

json::Value to_json(const Det& d, const Diagnostic* diag) {
  json::Value out = json::Value::object();
  out.set("script", json::Value::string(d.script));
  json::Value prof = json::Value::object();
  for (const auto& kv : d.profile) prof.set(kv.first, json::Value::number(kv.second));
  out.set("script_profile", std::move(prof));
  out.set("language", optional_string(d.language));
  out.set("is_english", json::Value::boolean(d.is_english));
  out.set("language_undecided", json::Value::boolean(d.undecided));
  out.set("diacritic_rate", json::Value::number(d.diacritic_rate));
  out.set("non_latin_fraction", json::Value::number(d.non_latin));
  out.set("mixed_segment", d.mixed ? json::Value::string(py::encode(*d.mixed)) : json::Value());
  if (diag) {
    json::Value g = json::Value::object();
    g.set("stage", json::Value::string(diag->stage));
    g.set("reason", optional_string(diag->reason));
    if (diag->source) {
      json::Value s = json::Value::object();
      s.set("leaf_index", json::Value::integer(diag->source->leaf_index));
      s.set("path", diag->source->path ? json::Value::array(*diag->source->path) : json::Value());
      s.set("line", json::Value::integer(diag->source->line));
      g.set("source", std::move(s));
    } else {
      g.set("source", json::Value());
    }
    out.set("diagnostic", std::move(g));
  }
  return out;
}

}  // namespace

json::Value analyse_state(const json::Value& state, bool explain) {
  Diagnostic diag_storage;
  Diagnostic* diag = explain ? &diag_storage : nullptr;
  const Leaves leaves = leaves_of(state, explain);
  Det result = analyse_text(state_text(leaves), diag);
  if (result.script == "latin" && result.is_english) {
    const bool multi = leaves.text.size() > 1 ||
                       std::any_of(leaves.text.begin(), leaves.text.end(),
                                   [](const U32& l) { return l.find(U'\n') != U32::npos; });
    std::string lang;
    U32 seg;
    if (multi && non_english_segment(leaves, diag, &lang, &seg)) {
      result.language = lang;
      result.is_english = false;
      result.undecided = false;
      result.mixed = std::move(seg);
    }
  }
  if (state.is_string() || state.is_null() || !result.is_english) return to_json(result, diag);
  std::optional<Det> best;
  size_t best_n = 0;
  Source best_source;
  std::string best_reason;
  for (size_t index = 0; index < leaves.text.size(); ++index) {
    int line = 0;
    std::string reason;
    std::optional<Det> det = leaf_non_english(leaves.text[index], &line, &reason);
    if (!det) continue;
    const size_t n_alpha = count_alpha(U32V(leaves.text[index]).substr(0, kMaxChars));
    if (!best || n_alpha > best_n) {
      best_n = n_alpha;
      best = std::move(det);
      best_source = make_source(leaves, index, static_cast<size_t>(line));
      best_reason = reason;
    }
  }
  if (!best) return to_json(result, diag);
  result.language = best->language;
  result.is_english = false;
  result.undecided = best->undecided;
  if (diag) {
    diag->stage = "value";
    diag->reason = best_reason;
    diag->source = best_source;
  }
  return to_json(result, diag);
}

}  // namespace laya::decision
