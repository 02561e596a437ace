// laya-run route / decide: the Laya decision path from the command line.
//
//   laya-run route --request REQ.json [router options]
//   laya-run decide --model M.laya --request REQ.json [--explain] [session options]
//
// Exit codes: 0 success, 1 a refused request or a model / runtime failure (message on stderr,
// nothing on stdout), 2 bad arguments.
#include "tools/laya-run/commands.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ir/model_file.h"
#include "runtime/json.h"
#include "runtime/laya/agent.h"
#include "runtime/laya/model_tokenizer.h"
#include "runtime/laya/request.h"
#include "runtime/laya/router.h"
#include "runtime/session.h"

namespace laya::tools {

namespace {

using json::Value;

constexpr const char* kRouteUsage =
    "usage: laya-run route --request REQ.json [options]\n"
    "\n"
    "Chooses the Laya checkpoint for a /v1/systemone request body as the upstream SDK's\n"
    "Router.route does (no model is loaded) and prints {model, reason, detection, workflow}.\n"
    "The body's state, questions, model, task, lang and lang_guess are read; REQ.json may be -\n"
    "for stdin.\n"
    "\n"
    "  --default NAME          the checkpoint for text with no language evidence\n"
    "                          (default multilingual)\n"
    "  --auto-task-detection   route the four typed-decisions workflows' question sets to\n"
    "                          typed-decisions\n"
    "  --standalone-repos      report the standalone repos instead of the bundle's subfolders\n"
    "  --register NAME=SOURCE  a checkpoint of your own (or re-point a built-in name); repeatable\n"
    "  --lang-guess CODE       a language code applied to every request (Router(lang_guess=))\n"
    "  --explain               add the detector's diagnostic (stage, reason, source)\n";

constexpr const char* kDecideUsage =
    "usage: laya-run decide --model M.laya --request REQ.json [options]\n"
    "       laya-run decide --explain --tokenizer tokenizer.json --request REQ.json\n"
    "\n"
    "Answers a /v1/systemone request body on a Laya decision model and prints the upstream SDK's\n"
    "result object as JSON: Agent.predict's for `state`, predict_batch's list for `states`,\n"
    "predict_shortlist's for `shortlist`, decide's details for `schema`. Body fields: state |\n"
    "states, questions | schema, min_confidence, max_len, head_max_len, batch_size, shortlist.\n"
    "A refused request exits 1 with the HTTP status upstream's server answers and its message,\n"
    "and prints nothing. REQ.json may be - for stdin.\n"
    "\n"
    "  --explain          print {rows: [{question, input_ids, marker_positions, truncated}],\n"
    "                     usage} instead: the rows the network would read (no forward pass,\n"
    "                     except for a shortlist's embeddings); works on any model that\n"
    "                     carries a tokenizer\n"
    "  --tokenizer FILE   with --explain and no --model: a tokenizer.json (special tokens from\n"
    "                     tokenizer_config.json beside it); max_len 512 / head_max_len 192\n"
    "                     unless the request sets them\n"
    "  --threads N        CPU threads (default: all cores)\n"
    "  --kernels K        auto | ref | a Highway target name (default auto)\n"
    "  --backends A,B     backends in order of preference (default: cpu)\n";

struct Args {
  std::vector<std::pair<std::string, std::string>> opts;  // in order
  std::vector<std::string> flags;
  std::vector<std::string> positional;
};

bool parse(int argc, char** argv, const std::vector<std::string>& with_value,
           const std::vector<std::string>& flags, Args* a, std::string* err) {
  for (int i = 2; i < argc; ++i) {
    std::string t = argv[i];
    if (t == "-h") t = "--help";
    if (t.rfind("--", 0) != 0) {
      a->positional.push_back(t);
      continue;
    }
    std::string key = t.substr(2), value;
    const size_t eq = key.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    }
    if (key == "help" || std::find(flags.begin(), flags.end(), key) != flags.end()) {
      a->flags.push_back(key);
      continue;
    }
    if (std::find(with_value.begin(), with_value.end(), key) == with_value.end()) {
      *err = "unknown option --" + key;
      return false;
    }
    if (!inline_value) {
      if (i + 1 >= argc) {
        *err = "--" + key + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    a->opts.emplace_back(key, value);
  }
  return true;
}

bool flag(const Args& a, const char* f) {
  return std::find(a.flags.begin(), a.flags.end(), f) != a.flags.end();
}

const std::string* last(const Args& a, const char* key) {
  const std::string* out = nullptr;
  for (const auto& [k, v] : a.opts)
    if (k == key) out = &v;
  return out;
}

int usage_error(const std::string& msg, const char* usage) {
  std::fprintf(stderr, "laya-run: %s\n\n%s", msg.c_str(), usage);
  return 2;
}

int refuse(const Status& s) {
  const int http = status_http_status(s.code());
  if (http)
    std::fprintf(stderr, "laya-run: request refused (HTTP %d): %s\n", http, s.message());
  else
    std::fprintf(stderr, "laya-run: %s\n", s.to_string().c_str());
  return 1;
}

}  // namespace

Result<std::string> read_request_file(const std::string& path) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
  } else {
    std::ifstream f(path, std::ios::binary);
    if (!f.good()) return status_error(StatusCode::kIoError, "cannot open %s", path.c_str());
    ss << f.rdbuf();
  }
  std::string text = ss.str();
  if (text.size() > decision::kMaxBodyBytes)
    return Status(StatusCode::kRequestTooLarge, "request body too large");
  return text;
}

void print_json(const json::Value& v) {
  const std::string out = json::dump(v);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fputc('\n', stdout);
}

int cmd_route(int argc, char** argv) {
  Args a;
  std::string err;
  if (!parse(argc, argv, {"request", "default", "register", "lang-guess"},
             {"auto-task-detection", "standalone-repos", "explain"}, &a, &err))
    return usage_error(err, kRouteUsage);
  if (flag(a, "help")) {
    std::printf("%s", kRouteUsage);
    return 0;
  }
  if (!a.positional.empty())
    return usage_error("unexpected argument " + a.positional[0], kRouteUsage);
  const std::string* request = last(a, "request");
  if (!request) return usage_error("--request is required", kRouteUsage);

  decision::RouterOptions opts;
  if (const std::string* d = last(a, "default")) opts.default_model = *d;
  opts.auto_task_detection = flag(a, "auto-task-detection");
  opts.standalone_repos = flag(a, "standalone-repos");
  if (const std::string* g = last(a, "lang-guess")) opts.lang_guess = *g;
  for (const auto& [k, v] : a.opts) {
    if (k != "register") continue;
    const size_t eq = v.find('=');
    if (eq == std::string::npos || eq == 0)
      return usage_error("--register needs NAME=SOURCE, got " + v, kRouteUsage);
    opts.models.emplace_back(v.substr(0, eq), v.substr(eq + 1));
  }
  Result<decision::Router> router = decision::Router::create(opts);
  if (!router.is_ok()) return refuse(router.status());

  Result<std::string> text = read_request_file(*request);
  if (!text.is_ok()) return refuse(text.status());
  json::ParseOptions po;
  po.max_bytes = decision::kMaxBodyBytes;
  Result<Value> body = json::parse(*text, po, "request body");
  if (!body.is_ok())
    return refuse(
        Status(StatusCode::kRequestInvalid,
               std::string("request body must be valid JSON (") + body.status().message() + ")"));
  if (!body->is_object())
    return refuse(Status(StatusCode::kRequestInvalid, "request body must be a JSON object"));
  auto field = [&](const char* k) { return body->find(k) ? *body->find(k) : Value(); };
  decision::RouteQuery q;
  q.state = field("state");
  q.questions = body->find("questions");
  q.model = field("model");
  q.task = field("task");
  q.lang = field("lang");
  q.lang_guess = field("lang_guess");
  q.explain = flag(a, "explain");
  Result<Value> d = router->route(q);
  if (!d.is_ok()) return refuse(d.status());
  Value out = Value::object();
  for (const char* k : {"model", "reason", "detection", "workflow"}) out.set(k, *d->find(k));
  print_json(out);
  return 0;
}

int cmd_decide(int argc, char** argv) {
  Args a;
  std::string err;
  if (!parse(argc, argv, {"model", "request", "tokenizer", "threads", "kernels", "backends"},
             {"explain"}, &a, &err))
    return usage_error(err, kDecideUsage);
  if (flag(a, "help")) {
    std::printf("%s", kDecideUsage);
    return 0;
  }
  if (!a.positional.empty())
    return usage_error("unexpected argument " + a.positional[0], kDecideUsage);
  const std::string* model = last(a, "model");
  const std::string* request = last(a, "request");
  const std::string* tokenizer = last(a, "tokenizer");
  const bool explain = flag(a, "explain");
  if (!request) return usage_error("--request is required", kDecideUsage);
  if (!model && !(explain && tokenizer))
    return usage_error("--model is required (or --explain --tokenizer FILE)", kDecideUsage);
  if (model && tokenizer)
    return usage_error("--tokenizer is for --explain without a model", kDecideUsage);
  runtime::SessionOptions so;
  if (const std::string* b = last(a, "backends")) {
    so.backends.clear();
    size_t at = 0;
    while (at <= b->size()) {
      const size_t c = b->find(',', at);
      const std::string item = b->substr(at, c == std::string::npos ? std::string::npos : c - at);
      if (!item.empty()) so.backends.push_back(item);
      if (c == std::string::npos) break;
      at = c + 1;
    }
    if (so.backends.empty()) return usage_error("--backends needs at least one name", kDecideUsage);
  }
  if (const std::string* k = last(a, "kernels")) so.backend.kernels = *k;
  if (const std::string* t = last(a, "threads")) {
    char* end = nullptr;
    const long v = std::strtol(t->c_str(), &end, 10);
    if (t->empty() || *end || v < 0 || v > 1024)
      return usage_error("--threads must be a number >= 0", kDecideUsage);
    so.backend.n_threads = static_cast<int>(v);
  }

  // The request first: a refused request never costs a model load.
  Result<std::string> text = read_request_file(*request);
  if (!text.is_ok()) return refuse(text.status());
  Result<decision::DecisionRequest> req = decision::parse_request(*text);
  if (!req.is_ok()) return refuse(req.status());

  if (!model) {
    Result<decision::ModelTokenizer> tok = decision::tokenizer_from_file(*tokenizer);
    if (!tok.is_ok()) return refuse(tok.status());
    decision::DecisionSettings settings;
    Result<Value> out =
        decision::explain_decision(*req, *tok->encoder, tok->specials, settings, nullptr);
    if (!out.is_ok()) return refuse(out.status());
    print_json(*out);
    return 0;
  }
  Result<ir::Graph> g = ir::model_load(*model);
  if (!g.is_ok()) return refuse(g.status());
  Result<decision::ModelTokenizer> tok = decision::model_tokenizer(*g);
  if (!tok.is_ok()) return refuse(tok.status());
  if (explain && (g->meta.architecture != "laya" || !req->shortlist_k)) {
    // No session: the rows need only the tokenizer and the decision config (if any).
    decision::DecisionSettings settings;
    if (g->meta.decision.present) {
      if (g->meta.decision.max_len > 0) settings.max_len = g->meta.decision.max_len;
      if (g->meta.decision.head_max_len > 0) settings.head_max_len = g->meta.decision.head_max_len;
    }
    Result<Value> out =
        decision::explain_decision(*req, *tok->encoder, tok->specials, settings, nullptr);
    if (!out.is_ok()) return refuse(out.status());
    print_json(*out);
    return 0;
  }
  Result<std::unique_ptr<decision::Agent>> agent =
      decision::Agent::create(std::move(*g), std::move(*tok), so);
  if (!agent.is_ok()) return refuse(agent.status());
  Result<Value> out = explain ? (*agent)->explain(*req) : (*agent)->decide(*req);
  if (!out.is_ok()) return refuse(out.status());
  print_json(*out);
  return 0;
}

}  // namespace laya::tools
