// laya-run route / decide: the Laya decision path from the command line.
//
//   laya-run route --request REQ.json [router options]
//   laya-run decide --model M.laya --request REQ.json [--explain] [session options]
//
// Exit codes: 0 success, 1 a refused request or a model / runtime failure (message on stderr,
// nothing on stdout), 2 bad arguments.
#include "tools/laya-run/commands.h"

#include <cstdio>
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
#include "kernels/kernels.h"
#include "runtime/session.h"
#include "tools/cli.h"

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
  bool help = false, auto_task = false, standalone = false, explain = false;
  std::string request, default_model, lang_guess;
  std::vector<std::string> registers, positional;
  ArgParser p;
  p.flag("help", &help);
  p.text("request", &request);
  p.text("default", &default_model);
  p.repeated("register", &registers);
  p.text("lang-guess", &lang_guess);
  p.flag("auto-task-detection", &auto_task);
  p.flag("standalone-repos", &standalone);
  p.flag("explain", &explain);
  if (!p.parse(argc, argv, 2, &positional)) return usage_error(p.error(), kRouteUsage);
  if (help) {
    std::printf("%s", kRouteUsage);
    return 0;
  }
  if (!positional.empty()) return usage_error("unexpected argument " + positional[0], kRouteUsage);
  if (request.empty()) return usage_error("--request is required", kRouteUsage);

  decision::RouterOptions opts;
  if (!default_model.empty()) opts.default_model = default_model;
  opts.auto_task_detection = auto_task;
  opts.standalone_repos = standalone;
  if (!lang_guess.empty()) opts.lang_guess = lang_guess;
  for (const std::string& v : registers) {
    std::string name, source;
    if (!split_assignment(v, &name, &source))
      return usage_error("--register needs NAME=SOURCE, got " + v, kRouteUsage);
    opts.models.emplace_back(name, source);
  }
  Result<decision::Router> router = decision::Router::create(opts);
  if (!router.is_ok()) return refuse(router.status());

  Result<std::string> text = read_request_file(request);
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
  q.explain = explain;
  Result<Value> d = router->route(q);
  if (!d.is_ok()) return refuse(d.status());
  Value out = Value::object();
  for (const char* k : {"model", "reason", "detection", "workflow"}) out.set(k, *d->find(k));
  print_json(out);
  return 0;
}

int cmd_decide(int argc, char** argv) {
  bool help = false, explain = false;
  std::string model, request, tokenizer, kernels = "auto", backends = "cpu";
  int64_t threads = 0;
  std::vector<std::string> positional;
  ArgParser p;
  p.flag("help", &help);
  p.flag("explain", &explain);
  p.text("model", &model);
  p.text("request", &request);
  p.text("tokenizer", &tokenizer);
  p.choice("kernels", kernels::kernel_table_names(), &kernels);
  p.text("backends", &backends);
  p.integer("threads", 0, 1024, &threads);
  if (!p.parse(argc, argv, 2, &positional)) return usage_error(p.error(), kDecideUsage);
  if (help) {
    std::printf("%s", kDecideUsage);
    return 0;
  }
  if (!positional.empty()) return usage_error("unexpected argument " + positional[0], kDecideUsage);
  if (request.empty()) return usage_error("--request is required", kDecideUsage);
  if (model.empty() && !(explain && !tokenizer.empty()))
    return usage_error("--model is required (or --explain --tokenizer FILE)", kDecideUsage);
  if (!model.empty() && !tokenizer.empty())
    return usage_error("--tokenizer is for --explain without a model", kDecideUsage);
  runtime::SessionOptions so;
  std::string err;
  so.backends.clear();
  if (!split_list(backends, "--backends", &so.backends, &err))
    return usage_error(err, kDecideUsage);
  so.backend.n_threads = static_cast<int>(threads);
  hal::BackendOptions cpu;
  cpu.n_threads = static_cast<int>(threads);
  cpu.settings = {{"kernels", kernels}};
  so.backend_options.emplace_back("cpu", cpu);

  // The request first: a refused request never costs a model load.
  Result<std::string> text = read_request_file(request);
  if (!text.is_ok()) return refuse(text.status());
  Result<decision::DecisionRequest> req = decision::parse_request(*text);
  if (!req.is_ok()) return refuse(req.status());

  if (model.empty()) {
    Result<decision::ModelTokenizer> tok = decision::tokenizer_from_file(tokenizer);
    if (!tok.is_ok()) return refuse(tok.status());
    decision::DecisionSettings settings;
    Result<Value> out =
        decision::explain_decision(*req, *tok->encoder, tok->specials, settings, nullptr);
    if (!out.is_ok()) return refuse(out.status());
    print_json(*out);
    return 0;
  }
  Result<ir::Graph> g = ir::model_load(model);
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
