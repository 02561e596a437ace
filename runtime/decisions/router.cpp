#include "runtime/decisions/router.h"

#include <algorithm>
#include <cstdio>

#include "runtime/decisions/lang.h"
#include "runtime/text/pystr.h"
#include "runtime/decisions/router_tables.inc"

namespace laya::decision {

namespace t = tables;

namespace {

// canonical_name: str(name).strip().lower(), then the alias table.
std::string canonical_name(const json::Value& name) {
  const std::u32string s = py::decode(py::str(name));
  std::string key = py::encode(py::lower(py::strip(s)));
  for (const auto& a : t::kAliases)
    if (a.alias == key) return std::string(a.name);
  return key;
}

std::string sorted_list_repr(std::vector<std::string> items) {
  std::sort(items.begin(), items.end());
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += py::repr(std::string_view(items[i]));
  }
  return out + "]";
}

bool valid_name(const std::string& key) {
  if (key.empty()) return false;
  auto ok = [](char c, bool first) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           (!first && (c == '.' || c == '_' || c == '-'));
  };
  for (size_t i = 0; i < key.size(); ++i)
    if (!ok(key[i], i == 0)) return false;
  return true;
}

// _english_from_code: true / false for a language code, nullopt when it names no language.
std::optional<bool> english_from_code(const json::Value& v) {
  if (v.is_null()) return std::nullopt;
  std::string code = py::encode(py::lower(py::strip(py::decode(py::str(v)))));
  if (code.empty()) return std::nullopt;
  code = code.substr(0, code.find('.'));
  std::replace(code.begin(), code.end(), '_', '-');
  const std::string primary = code.substr(0, code.find('-'));
  if (primary.empty()) return std::nullopt;
  for (auto c : t::kLanguageAgnosticCodes)
    if (c == primary) return std::nullopt;
  for (auto c : t::kEnglishSubtags)
    if (c == primary) return true;
  return false;
}

std::optional<std::string> match_workflow(const json::Value* questions) {
  if (!questions || !questions->is_object()) return std::nullopt;
  std::vector<std::string> ids;
  for (const auto& m : questions->members()) ids.push_back(m.key);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (const auto& wf : t::kTypedDecisionWorkflows) {
    if (static_cast<int>(ids.size()) != wf.n_ids) continue;
    bool same = true;
    for (int i = 0; i < wf.n_ids && same; ++i) same = ids[static_cast<size_t>(i)] == wf.ids[i];
    if (same) return std::string(wf.name);
  }
  return std::nullopt;
}

json::Value decision(const std::string& model, const std::string& repo, const std::string& reason,
                     json::Value detection, const std::optional<std::string>& workflow) {
  json::Value d = json::Value::object();
  d.set("model", json::Value::string(model));
  d.set("repo", json::Value::string(repo));
  d.set("reason", json::Value::string(reason));
  d.set("detection", std::move(detection));
  d.set("workflow", workflow ? json::Value::string(*workflow) : json::Value());
  return d;
}

std::string percent0(double fraction) {
  return py::format_fixed(100.0 * fraction, 0) + "%";
}

}  // namespace

Result<Router> Router::create(const RouterOptions& opts) {
  Router r;
  for (const auto& m : t::kDefaultModels) {
    std::string repo = opts.standalone_repos ? std::string(m.standalone_repo) : std::string(m.repo);
    if (!opts.standalone_repos && !m.subfolder.empty()) repo += "/" + std::string(m.subfolder);
    r.models_.push_back({std::string(m.name), repo});
  }
  for (const auto& [name, source] : opts.models) {
    const std::string key = canonical_name(json::Value::string(name));
    auto it = std::find_if(r.models_.begin(), r.models_.end(),
                           [&](const Model& m) { return m.name == key; });
    bool builtin = false;
    for (const auto& m : t::kDefaultModels) builtin |= m.name == key;
    if (!builtin) {
      if (!valid_name(key))
        return status_error(StatusCode::kRequestUnprocessable,
                            "invalid checkpoint name %s: use lowercase letters, digits, '.', '_' "
                            "or '-', starting with a letter or digit",
                            py::repr(std::string_view(name)).c_str());
      if (key == "auto")
        return status_error(StatusCode::kRequestUnprocessable,
                            "invalid checkpoint name %s: 'auto' means automatic routing in every "
                            "model= argument",
                            py::repr(std::string_view(name)).c_str());
    }
    if (it != r.models_.end())
      it->repo = source;
    else
      r.models_.push_back({key, source});
  }
  LAYA_ASSIGN_OR_RETURN(r.default_, r.resolve(json::Value::string(opts.default_model)));
  r.auto_task_ = opts.auto_task_detection;
  r.lang_guess_ = opts.lang_guess;
  return r;
}

Result<std::string> Router::resolve(const json::Value& name) const {
  const std::string key = canonical_name(name);
  for (const auto& m : models_)
    if (m.name == key) return key;
  std::vector<std::string> names, aliases;
  for (const auto& m : models_) names.push_back(m.name);
  for (const auto& a : t::kAliases) aliases.emplace_back(a.alias);
  return Status(StatusCode::kRequestUnprocessable,
                "unknown model " + py::repr(name) + "; choose one of " + sorted_list_repr(names) +
                    " (or an alias: " + sorted_list_repr(aliases) + ")");
}

std::string Router::repo_of(const std::string& name) const {
  for (const auto& m : models_)
    if (m.name == name) return m.repo;
  return "";
}

Result<json::Value> Router::route(const RouteQuery& q) const {
  if (q.questions && !q.questions->is_null() && !q.questions->is_object())
    return status_error(StatusCode::kRequestInvalid,
                        "questions must be a dict of question id -> definition, got %s",
                        py::type_name(*q.questions));
  if (!q.model.is_null()) {
    LAYA_ASSIGN_OR_RETURN(std::string key, resolve(q.model));
    return decision(key, repo_of(key), "explicit model=" + py::repr(q.model), json::Value(),
                    std::nullopt);
  }
  if (!q.task.is_null()) {
    std::string norm = py::encode(py::lower(py::decode(py::str(q.task))));
    std::replace(norm.begin(), norm.end(), '-', '_');
    const json::Value name =
        norm == "typed_decisions" ? json::Value::string("typed-decisions") : q.task;
    LAYA_ASSIGN_OR_RETURN(std::string key, resolve(name));
    return decision(key, repo_of(key), "explicit task=" + py::repr(q.task), json::Value(),
                    std::nullopt);
  }
  const std::optional<std::string> workflow = match_workflow(q.questions);
  if (workflow && auto_task_) {
    return decision("typed-decisions", repo_of("typed-decisions"),
                    "question ids match the " + py::repr(std::string_view(*workflow)) +
                        " typed-decisions workflow",
                    json::Value(), workflow);
  }
  if (!q.lang.is_null()) {
    if (auto english = english_from_code(q.lang)) {
      const std::string key = *english ? "english" : "multilingual";
      return decision(key, repo_of(key), "explicit lang=" + py::repr(q.lang), json::Value(),
                      workflow);
    }
  }
  const json::Value router_guess = lang_guess_ ? json::Value::string(*lang_guess_) : json::Value();
  const std::pair<const char*, const json::Value*> hints[] = {
      {"lang_guess", &q.lang_guess}, {"Router(lang_guess=...)", &router_guess}};
  for (const auto& [source, hint] : hints) {
    if (auto english = english_from_code(*hint)) {
      const std::string key = *english ? "english" : "multilingual";
      return decision(key, repo_of(key),
                      std::string(source) + ": the caller identified this as " +
                          (*english ? "English" : "non-English") + " text",
                      json::Value(), workflow);
    }
  }
  json::Value det = analyse_state(q.state, q.explain);
  const std::string script = det.find("script")->as_string();
  const bool is_english = det.find("is_english")->as_bool();
  std::string key, reason;
  if (script == "unknown") {
    key = default_;
    reason = "no letters detected in state; using default (" + key + ")";
  } else if (script != "latin") {
    key = "multilingual";
    reason = "non-Latin script (" + script + ", " +
             percent0(det.find("non_latin_fraction")->as_double()) +
             " of letters); the English checkpoint cannot read it";
  } else if (!is_english) {
    key = "multilingual";
    const json::Value* mixed = det.find("mixed_segment");
    const json::Value* language = det.find("language");
    if (mixed && mixed->is_string() && !mixed->as_string().empty()) {
      const std::u32string m = py::decode(mixed->as_string());
      reason = "Latin script, mostly English, but a line or field reads as " + py::repr(*language) +
               " (" + py::repr(std::string_view(py::encode(m.substr(0, 60)))) +
               "); the English checkpoint cannot read it";
    } else if (language && language->is_string() && !language->as_string().empty()) {
      reason = "Latin script but language looks like " + py::repr(*language) + ", not English";
    } else {
      reason = "Latin script, language not identified but " +
               percent0(det.find("diacritic_rate")->as_double()) +
               " non-English letters; not safe for the English checkpoint";
    }
  } else if (det.find("language_undecided")->as_bool()) {
    key = default_;
    reason = "Latin script, language not identified and no non-English letters; using default (" +
             key + ")";
  } else {
    key = "english";
    reason = "English Latin text";
  }
  return decision(key, repo_of(key), reason, std::move(det), workflow);
}

}  // namespace laya::decision
