// Upstream laya-serve's wire format around the library's answers (laya 0.4.15, laya/serve.py and
// laya/confidence.py): what the server adds to a Router.predict payload, and how it writes JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "runtime/text/json.h"

namespace laya::serve {

// confidence.jev_confidence: TypeSafe's confidence of a choice or score answer's probabilities
// (choice: (max p - 1/n) / (1 - 1/n); score: 1 - spread / uniform spread), or none.
std::optional<double> jev_confidence(const json::Value& answer);

// One result as /v1/systemone answers it: `routing` added after the payload's keys (as
// Router.predict does; null: not added), then with `strict` (LAYA_JEV_STRICT) the Jev projection
// (model, answers with the contracted keys, usage's two counts), else x_jev_confidence (rounded
// to 4 places) appended to each choice and score answer that has one.
json::Value serve_result(json::Value result, const json::Value* routing, bool strict);

// Starlette's JSONResponse text: json.dumps(..., ensure_ascii=False, separators=(",", ":")).
std::string response_text(const json::Value& v);

// {"detail": message}, as FastAPI's HTTPException handler writes it.
std::string detail_body(std::string_view message);

// Upstream's fixed refusal messages.
inline constexpr std::string_view kUnauthorized = "invalid or missing bearer token";
inline constexpr std::string_view kBusy = "server busy, try again later";
inline constexpr std::string_view kTooLarge = "request body too large";
inline constexpr std::string_view kTimeout = "request body was not received in time";
inline constexpr std::string_view kBadJson = "request body must be valid JSON";
inline constexpr std::string_view kSurrogate =
    "request body contains an unpaired surrogate escape; those cannot be encoded as UTF-8";
inline constexpr std::string_view kInferenceFailed = "inference failed";
inline constexpr size_t kMaxBodyBytes = 2097152;

}  // namespace laya::serve
