// Which Laya checkpoint should answer a request: the upstream SDK's `Router.route`, without
// loading anything (laya 0.4.15, laya/router.py).
//
// Three checkpoints exist: `english` (ModernBERT-large, 512 tokens), `multilingual` (mmBERT-base,
// 1024 tokens, 100+ languages) and `typed-decisions` (ModernBERT-large fine-tuned on four
// workflows). Precedence, first match wins:
//   1. explicit `model` (a name or alias: en, laya, default, multi, ml, typed, decisions, ...)
//   2. explicit `task` ("typed_decisions" / "typed-decisions", or any checkpoint name)
//   3. the question ids equal one typed-decisions workflow's exactly (customer_service,
//      invoice_processing, security_incidents, agent_trace_observability), only with
//      `auto_task_detection`
//   4. explicit `lang` (a code: en, en-US, en_US.UTF-8, eng, English -> english; any other
//      language -> multilingual; blank, C, POSIX, und, zxx, mul -> no answer, fall through)
//   5. `lang_guess` of the call, then the router's own
//   6. detection (lang.h): no letters -> the default; a non-Latin script -> multilingual;
//      Latin but not English -> multilingual; undecided -> the default; else english
// The default is `multilingual` (laya >= 0.4.0). Every decision names its reason in upstream's
// words, and carries the detection (steps 6) and the matched workflow (steps 4-6, else null).
//
// Names are trimmed and lowercased before the alias table. An unknown name is an error
// (kRequestUnprocessable, HTTP 422 as upstream's server answers a ValueError): "unknown model
// 'x'; choose one of [...] (or an alias: [...])". Questions that are not an object are
// kRequestInvalid (upstream raises TypeError).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "runtime/text/json.h"

namespace laya::decision {

// Router(...) keyword arguments that can be data (hooks and callables cannot).
struct RouterOptions {
  std::string default_model = "multilingual";  // any name or alias the router knows
  bool auto_task_detection = false;
  bool standalone_repos = false;  // report the standalone repos instead of the bundle's subfolders
  // Router(models={name: source}): re-points a built-in name or registers a new checkpoint
  // (lowercase letters, digits, '.', '_', '-'; not "auto").
  std::vector<std::pair<std::string, std::string>> models;
  std::optional<std::string> lang_guess;  // a language code applied to every request
};

// Router.route(...) arguments. Values are the request's JSON values (absent = null), so a
// non-string `model` or `lang` behaves as Python's str() of it, as upstream's library does.
struct RouteQuery {
  json::Value state;                       // any JSON value; null has no text
  const json::Value* questions = nullptr;  // an object, or null / absent (borrowed for the call)
  json::Value model, task, lang, lang_guess;
  bool explain = false;  // adds the detection's "diagnostic"
};

class Router {
 public:
  // Validates the options (unknown default, bad registered name: kRequestUnprocessable).
  static Result<Router> create(const RouterOptions& opts = {});

  // The RouteDecision: {"model", "repo", "reason", "detection", "workflow"}.
  Result<json::Value> route(const RouteQuery& q) const;

  // Canonical name of a checkpoint this router knows (built-in, alias or registered).
  Result<std::string> resolve(const json::Value& name) const;

 private:
  struct Model {
    std::string name, repo;  // repo: "repo" or "repo/subfolder"
  };
  std::string repo_of(const std::string& name) const;
  std::vector<Model> models_;
  std::string default_;
  bool auto_task_ = false;
  std::optional<std::string> lang_guess_;
};

}  // namespace laya::decision
