#include "tools/laya-serve/config.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "runtime/text/json.h"
#include "runtime/text/pystr.h"
#include "tools/cli.h"

namespace laya::serve {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

std::string strip(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// Python's int(text) for base 10: surrounding whitespace, a sign, digits with single '_' between
// them. Values beyond int64 are refused (upstream would take them and then refuse the range).
std::optional<int64_t> py_int(const std::string& raw) {
  const std::string s = strip(raw);
  size_t i = 0;
  bool neg = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (i >= s.size()) return std::nullopt;
  int64_t v = 0;
  bool digit_before = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '_') {
      if (!digit_before || i + 1 >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i + 1])))
        return std::nullopt;
      digit_before = false;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    if (v > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
    v = v * 10 + (c - '0');
    digit_before = true;
  }
  return neg ? -v : v;
}

// Python's float(text): whitespace, a decimal or "inf" / "nan" spellings (refused by the callers).
std::optional<double> py_float(const std::string& raw) {
  const std::string s = strip(raw);
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

bool py_bool(const std::optional<std::string>& raw, bool dflt) {
  if (!raw || strip(*raw).empty()) return dflt;
  std::string s = strip(*raw);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s == "1" || s == "true" || s == "yes" || s == "on";
}

// Upstream's "unset or invalid or <= 0 -> default" integers.
int64_t positive_or(const std::optional<std::string>& raw, int64_t dflt) {
  if (!raw || strip(*raw).empty()) return dflt;
  const std::optional<int64_t> v = py_int(*raw);
  return v && *v > 0 ? *v : dflt;
}

std::string repr(const std::string& s) {
  return py::repr(s);
}

bool env_config(Config* c, std::string* err) {
  if (auto v = env("LAYA_HOST")) c->host = *v;
  if (auto v = env("LAYA_PORT"); v && !strip(*v).empty()) {
    const std::optional<int64_t> p = py_int(*v);
    if (!p || *p < 1 || *p > 65535) {
      *err = "invalid LAYA_PORT " + repr(*v) + ": must be an integer 1-65535";
      return false;
    }
    c->port = static_cast<int>(*p);
  }
  if (auto v = env("LAYA_LOG_LEVEL"); v && !strip(*v).empty()) {
    std::string s = strip(*v);
    for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (s != "critical" && s != "debug" && s != "error" && s != "info" && s != "trace" &&
        s != "warning") {
      *err = "invalid LAYA_LOG_LEVEL " + repr(strip(*v)) +
             ": must be one of critical, debug, error, info, trace, warning";
      return false;
    }
    c->log_level = s;
  }
  if (auto v = env("LAYA_API_KEY")) c->api_key = *v;
  c->max_concurrent =
      static_cast<int>(std::min<int64_t>(positive_or(env("LAYA_MAX_CONCURRENT"), 16), 100000));
  if (auto v = env("LAYA_BODY_READ_TIMEOUT"); v && !strip(*v).empty()) {
    const std::optional<double> t = py_float(*v);
    if (t && std::isfinite(*t) && *t > 0) c->body_read_timeout_s = *t;
  }
  c->max_token_budget = positive_or(env("LAYA_MAX_TOKEN_BUDGET"), 8192);
  c->max_batch_tokens = positive_or(env("LAYA_MAX_BATCH_TOKENS"), 131072);
  c->jev_strict = py_bool(env("LAYA_JEV_STRICT"), false);
  c->auto_task = py_bool(env("LAYA_AUTO_TASK"), false);
  if (auto v = env("LAYA_THREADS"); v && !strip(*v).empty()) {
    const std::optional<int64_t> t = py_int(*v);
    if (t && *t > 0) c->threads = static_cast<int>(std::min<int64_t>(*t, 1024));
  }
  if (auto v = env("LAYA_TOURNAMENT_GROUP"); v && !strip(*v).empty()) {
    const std::optional<int64_t> g = py_int(*v);
    c->tournament_group = g && *g >= 2 && *g <= 100 ? static_cast<int>(*g) : 0;
  }
  // Models: LAYA_EXTRA_MODELS registers {name: path}; LAYA_MODELS picks which to load (names,
  // or NAME=PATH / PATH items of our own). Without LAYA_MODELS every registered model loads.
  std::vector<ModelSpec> extra;
  if (auto v = env("LAYA_EXTRA_MODELS"); v && !strip(*v).empty()) {
    Result<json::Value> j = json::parse(*v);
    if (!j.is_ok()) {
      *err = std::string("invalid LAYA_EXTRA_MODELS: not a JSON object (") + j.status().message() +
             ")";
      return false;
    }
    if (!j->is_object()) {
      *err = "invalid LAYA_EXTRA_MODELS: a JSON object {name: source}, got " +
             std::string(j->is_array()     ? "list"
                         : j->is_string()  ? "str"
                         : j->is_bool()    ? "bool"
                         : j->is_null()    ? "NoneType"
                         : j->is_integer() ? "int"
                                           : "float");
      return false;
    }
    for (const auto& m : j->members()) {
      if (!m.value.is_string()) {
        *err = "invalid LAYA_EXTRA_MODELS: source for " + repr(m.key) +
               " must be a path to a .laya or GGUF file; got " + py::repr(m.value);
        return false;
      }
      extra.push_back({m.key, m.value.as_string()});
    }
  }
  if (auto v = env("LAYA_MODELS"); v && !strip(*v).empty()) {
    std::string item;
    std::string s = *v + ",";
    for (char ch : s) {
      if (ch != ',') {
        item += ch;
        continue;
      }
      item = strip(item);
      if (!item.empty()) {
        std::string name, path;
        if (tools::split_assignment(item, &name, &path)) {
          c->models.push_back({name, path});
        } else {
          bool found = false;
          for (const ModelSpec& e : extra)
            if (e.name == item) {
              c->models.push_back(e);
              found = true;
            }
          if (!found) c->models.push_back({"", item});
        }
      }
      item.clear();
    }
  } else {
    c->models = extra;
  }
  if (auto v = env("LAYA_DEFAULT_MODEL"); v && !strip(*v).empty()) c->default_model = strip(*v);
  return true;
}

}  // namespace

const char* usage_text() {
  return R"(usage: laya-serve --model PATH [--model NAME=PATH ...] [--port N] [--host H] [options]

Serves Laya decisions over upstream laya-serve's HTTP API (laya 0.4.15): POST /v1/systemone,
POST /v1/systemone/batch, GET /health; and GET /v1/models, GET /ready, GET /metrics,
POST /v1/decide (decoder schema decisions, "stream": true for server-sent events),
POST /admin/reload. PATH is a .laya file (an encoder decision model or a decoder) or a GGUF
decoder; NAME defaults to the model's own name. Upstream's environment variables configure it
(LAYA_HOST, LAYA_PORT, LAYA_API_KEY, LAYA_MODELS, LAYA_EXTRA_MODELS, LAYA_DEFAULT_MODEL,
LAYA_MAX_CONCURRENT, LAYA_BODY_READ_TIMEOUT, LAYA_MAX_TOKEN_BUDGET, LAYA_MAX_BATCH_TOKENS,
LAYA_JEV_STRICT, LAYA_THREADS, LAYA_TOURNAMENT_GROUP, LAYA_AUTO_TASK, LAYA_LOG_LEVEL); flags
override them. SIGHUP reloads every model from its file; SIGTERM drains and exits 0.

  --model [NAME=]PATH       a model to serve (repeatable)
  --host H                  address to bind (LAYA_HOST, 0.0.0.0)
  --port N                  port (LAYA_PORT, 8000; 0: any free port, printed at start)
  --default-model NAME      the model requests without one go to (the first --model)
  --threads N               CPU threads per worker (LAYA_THREADS; default: every core)
  --workers N               contexts per model, each making decisions on its own thread (1)
  --max-concurrent N        requests admitted at once; more get 503 (LAYA_MAX_CONCURRENT, 16)
  --batch-window-ms MS      how long a batch waits for more requests (10; 0: no wait)
  --max-batch N             requests per batch (16; 1: no batching)
  --sequence-header NAME    requests with the same value never share a batch and run in
                            arrival order (X-Laya-Sequence)
  --body-read-timeout S     seconds to receive a body; then 408 (LAYA_BODY_READ_TIMEOUT, 10)
  --keep-alive S            idle keep-alive connection timeout (5)
  --drain-timeout S         SIGTERM: how long in-flight requests may finish (30)
  --io-threads N            threads serving connections (1)
  --strict                  LAYA_JEV_STRICT: answers reduced to the Jev fields

exit codes: 0 stopped by SIGTERM / SIGINT, 1 a bad model or environment, 2 bad arguments
)";
}

bool load_config(int argc, const char* const* argv, Config* cfg, std::string* err, bool* usage,
                 bool* help) {
  *usage = false;
  *help = false;
  if (!env_config(cfg, err)) return false;
  tools::ArgParser ap;
  std::vector<std::string> models;
  std::string host, default_model, sequence_header;
  int64_t port = -1, threads = 0, workers = 0, max_concurrent = 0, max_batch = 0, io_threads = 0;
  double window = -1, body_timeout = 0, keep_alive = 0, drain = -1;
  bool strict = false;
  ap.flag("help", help);
  ap.repeated("model", &models);
  ap.text("host", &host);
  ap.integer("port", 0, 65535, &port);
  ap.text("default-model", &default_model);
  ap.integer("threads", 1, 1024, &threads);
  ap.integer("workers", 1, 64, &workers);
  ap.integer("max-concurrent", 1, 100000, &max_concurrent);
  ap.number("batch-window-ms", 0, 10000, &window);
  ap.integer("max-batch", 1, 256, &max_batch);
  ap.text("sequence-header", &sequence_header);
  ap.number("body-read-timeout", 0, 3600, &body_timeout, true);
  ap.number("keep-alive", 0, 3600, &keep_alive, true);
  ap.number("drain-timeout", 0, 3600, &drain);
  ap.integer("io-threads", 1, 64, &io_threads);
  ap.flag("strict", &strict);
  std::vector<std::string> positional;
  if (!ap.parse(argc, argv, 1, &positional)) {
    *err = ap.error();
    *usage = true;
    return false;
  }
  if (*help) return true;
  if (!positional.empty()) {
    *err = "unexpected argument '" + positional[0] + "'";
    *usage = true;
    return false;
  }
  if (!models.empty()) {
    cfg->models.clear();
    for (const std::string& m : models) {
      std::string name, path;
      if (tools::split_assignment(m, &name, &path) && m.find('/') > m.find('='))
        cfg->models.push_back({name, path});
      else
        cfg->models.push_back({"", m});
    }
  }
  if (!host.empty()) cfg->host = host;
  if (port >= 0) cfg->port = static_cast<int>(port);
  if (!default_model.empty()) cfg->default_model = default_model;
  if (threads > 0) cfg->threads = static_cast<int>(threads);
  if (workers > 0) cfg->workers = static_cast<int>(workers);
  if (max_concurrent > 0) cfg->max_concurrent = static_cast<int>(max_concurrent);
  if (window >= 0) cfg->batch_window_ms = window;
  if (max_batch > 0) cfg->max_batch = static_cast<int>(max_batch);
  if (!sequence_header.empty()) cfg->sequence_header = sequence_header;
  if (body_timeout > 0) cfg->body_read_timeout_s = body_timeout;
  if (keep_alive > 0) cfg->keep_alive_s = keep_alive;
  if (drain >= 0) cfg->drain_timeout_s = drain;
  if (io_threads > 0) cfg->io_threads = static_cast<int>(io_threads);
  if (strict) cfg->jev_strict = true;
  if (cfg->models.empty()) {
    *err = "no model to serve: give --model PATH (or LAYA_MODELS / LAYA_EXTRA_MODELS)";
    *usage = true;
    return false;
  }
  return true;
}

}  // namespace laya::serve
