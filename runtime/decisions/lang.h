// Script and language detection for routing: the upstream SDK's `laya.lang.analyse`, exactly.
//
// The router (router.h) needs one bit per request: can the English checkpoint read this state? It
// answers it from the state's text alone, in microseconds, with the heuristics of laya 0.4.15:
//  - the dominant script of the letters (25 named non-Latin scripts, "other", "latin", "unknown");
//    non-Latin letters carry a Latin-plurality state when they are >= 20% of the letters, or >= 10%
//    and >= 10 letters, and form lowercase-initial runs of two or more;
//  - for Latin text, weighted stopword hits per language (en fr de es pt it nl sv ro bn az), a named
//    language needing a word no other list claims, a margin over English, and the rate of letters
//    ordinary English does not use (>= 2%);
//  - acronym and shouting bars (all-caps runs are not words unless >= 5 letters);
//  - for structured states, each line and each string value read on its own, so a short foreign
//    message is not outvoted by a long English field.
// Every string property is CPython 3.11's (pystr.h). The output is the dict upstream returns, key
// for key, so `laya-run route` can print it; with `explain` it adds upstream's `diagnostic`.
//
// A state is the JSON value of a request (string, object, array, or a scalar, which has no text).
// Only string values are read, object keys never; nesting deeper than 6 levels is ignored, and at
// most 4000 characters are read as one window.
#pragma once

#include "runtime/text/json.h"

namespace laya::decision {

// laya.lang.analyse(state, explain=explain) as a JSON object:
//   {"script", "script_profile", "language", "is_english", "language_undecided",
//    "diacritic_rate", "non_latin_fraction", "mixed_segment"[, "diagnostic"]}
// `state` may be null (no text: script "unknown").
json::Value analyse_state(const json::Value& state, bool explain = false);

}  // namespace laya::decision
