// laya-run route / decide: the Laya decision path from the command line.
//
//   laya-run route --request REQ.json [router options]
//   laya-run decide --model M.laya --request REQ.json [--explain] [session options]
//   laya-run decide --model M.gguf --request REQ.json [sampling options] [session options]
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
#include "kernels/kernels.h"
#include "runtime/decisions/context.h"
#include "runtime/decisions/decoder_decide.h"
#include "runtime/decisions/model.h"
#include "runtime/decisions/model_tokenizer.h"
#include "runtime/decisions/request.h"
#include "runtime/decisions/router.h"
#include "runtime/text/json.h"
#include "tools/cli.h"
#include "tools/http_status.h"
#include "tools/laya-run/capi.h"

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
    "       laya-run decide --model M.gguf --request REQ.json [options]\n"
    "       laya-run decide --explain --tokenizer tokenizer.json --request REQ.json\n"
    "\n"
    "Answers a /v1/systemone request body and prints the result as JSON. REQ.json may be - for\n"
    "stdin. A refused request exits 1 with the HTTP status upstream's server answers and its\n"
    "message, and prints nothing.\n"
    "\n"
    "On a Laya decision model (.laya encoder): the upstream SDK's result object: Agent.predict's\n"
    "for `state`, predict_batch's list for `states`, predict_shortlist's for `shortlist`,\n"
    "decide's details for `schema`. Body fields: state | states, questions | schema,\n"
    "min_confidence, max_len, head_max_len, batch_size, shortlist.\n"
    "\n"
    "On a decoder LM (.gguf: llama / qwen2 with a ChatML or Llama-3 chat template, or the .laya\n"
    "laya-convert makes of one; see\n"
    "docs/generation.md): with `questions`, the same result shape (no `action`: no act head),\n"
    "options read as the label tokens A, B, ... after one shared prompt; with `schema`,\n"
    "{decision, fields, fallback, usage, timings}: the decision is generated under the schema's\n"
    "grammar (it cannot be invalid), every enum / boolean value scored option by option. Body\n"
    "fields: state | states, questions | schema, min_confidence, system, and for a schema\n"
    "fallback, max_tokens (default 256), deadline_ms. Temperatures: a .laya's decision config\n"
    "(laya-convert --decision-config; laya-run calibrate fits it), else 1 (uncalibrated).\n"
    "\n"
    "  --explain          print {rows: [{question, input_ids, marker_positions, truncated}],\n"
    "                     usage} instead: the rows the network would read (no forward pass,\n"
    "                     except for a shortlist's embeddings); works on any model that\n"
    "                     carries a tokenizer (encoders only)\n"
    "  --tokenizer FILE   with --explain and no --model: a tokenizer.json (special tokens from\n"
    "                     tokenizer_config.json beside it); max_len 512 / head_max_len 192\n"
    "                     unless the request sets them\n"
    "  --temperature T, --top-k K, --top-p P, --seed S\n"
    "                     decoder schema decisions: sample (options and free values) instead of\n"
    "                     greedy, as laya-run generate does\n"
    "  --chunk N          decoder prefill chunk in tokens, 1..4096 (default 128)\n"
    "  --kv-type T        f32 | f16: a decoder's KV cache element type (default f16; a .laya\n"
    "                     decoder: the type laya-convert --kv-type stored)\n"
    "  --threads N        CPU threads (default: all cores)\n"
    "  --kernels K        auto | ref | a Highway target name (default auto)\n"
    "  --backends A,B     backends in order of preference (default: cpu)\n";

int usage_error(const std::string& msg, const char* usage) {
  std::fprintf(stderr, "laya-run: %s\n\n%s", msg.c_str(), usage);
  return 2;
}

int refuse(const Status& s) {
  const int http = http_status(s.code());
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

namespace {

// A decision through the C API: the model opened, a context with the CLI's limits on regions
// allocated here, laya_decide on the body; prints the result JSON.
int decide_capi(const std::string& model, const std::string& body, const CapiModelOptions& mo,
                int64_t chunk, const laya_sampling& sampling) {
  CapiModel m;
  if (CapiError e = m.open(model, mo); !e.ok()) return report(e);
  laya_context_limits lim = laya_context_default_limits();
  lim.chunk = m.info().kind == LAYA_MODEL_DECODER ? chunk : 0;
  CapiContext ctx;
  if (CapiError e = ctx.create(m.get(), lim); !e.ok()) return report(e);
  if (laya_status s = laya_context_set_sampling(ctx.get(), &sampling); s != LAYA_OK)
    return report(ctx.error(s));
  size_t n = 0;
  laya_status s = laya_decide(ctx.get(), body.data(), body.size(), nullptr, 0, &n);
  if (s != LAYA_OK) return report(ctx.error(s));
  std::string out(n + 1, '\0');
  s = laya_result_json(ctx.get(), out.data(), out.size(), &n);
  if (s != LAYA_OK) return report(ctx.error(s));
  out.resize(n);
  out.push_back('\n');
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

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
  std::string model, request, tokenizer, kernels = "auto", backends = "cpu", kv_type;
  int64_t threads = 0, chunk = 128;
  double temperature = -1, top_p = -1;
  int64_t top_k = -1, seed = -1;
  std::vector<std::string> positional;
  ArgParser p;
  p.flag("help", &help);
  p.flag("explain", &explain);
  p.integer("chunk", 1, 4096, &chunk);
  p.choice("kv-type", {"f32", "f16"}, &kv_type);
  p.number("temperature", 0, 100, &temperature);
  p.integer("top-k", 0, 1000000, &top_k);
  p.number("top-p", 0, 1, &top_p, /*lo_open=*/true);
  p.integer("seed", 0, INT64_MAX, &seed);
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
  std::vector<std::string> backend_list;
  std::string err;
  if (!split_list(backends, "--backends", &backend_list, &err))
    return usage_error(err, kDecideUsage);
  CapiModelOptions mo;
  mo.backends = backends;
  mo.kernels = kernels;
  mo.kv_type = kv_type;
  mo.threads = static_cast<int>(threads);
  laya_sampling sampling = {};
  if (temperature >= 0 || top_k >= 0 || top_p >= 0 || seed >= 0) {
    sampling.temperature = temperature >= 0 ? static_cast<float>(temperature) : 1.0f;
    sampling.top_k = top_k >= 0 ? static_cast<int32_t>(top_k) : 0;
    sampling.top_p = top_p >= 0 ? static_cast<float>(top_p) : 1.0f;
    sampling.seed = seed >= 0 ? static_cast<uint64_t>(seed) : 0;
  }
  const bool gguf = model.size() >= 5 && model.compare(model.size() - 5, 5, ".gguf") == 0;
  if (gguf && explain) return usage_error("--explain is for encoder models", kDecideUsage);

  Result<std::string> text = read_request_file(request);
  if (!text.is_ok()) return refuse(text.status());
  // The request is checked first: a refused request never costs a model load.
  if (gguf) {
    if (Result<runtime::DecoderRequest> r = runtime::parse_decoder_request(*text); !r.is_ok())
      return refuse(r.status());
  } else if (!explain) {
    if (Result<decision::DecisionRequest> r = decision::parse_request(*text); !r.is_ok()) {
      // A .laya decoder reads its body differently (runtime/decisions/decoder_decide.h).
      Result<ir::Graph> g = ir::model_load(model);
      if (!g.is_ok() || g->states.empty()) return refuse(r.status());
    }
  }
  if (!explain) return decide_capi(model, *text, mo, chunk, sampling);

  // --explain: the rows the network would read (the library's explain_decision).
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
  decision::ModelOptions o;
  o.backends = backend_list;
  hal::BackendOptions cpu;
  cpu.n_threads = static_cast<int>(threads);
  cpu.settings = {{"kernels", kernels}};
  o.backend_options.emplace_back("cpu", cpu);
  o.n_threads = static_cast<int>(threads);
  Result<std::shared_ptr<const decision::Model>> m = decision::Model::open_file(model, o);
  if (!m.is_ok()) return refuse(m.status());
  if ((*m)->kind() != decision::ModelKind::kEncoder)
    return usage_error("--explain is for encoder models", kDecideUsage);
  if (!req->shortlist_k) {
    // No network: the rows need only the tokenizer and the decision settings.
    Result<Value> out = decision::explain_decision(*req, (*m)->encoder(), (*m)->specials(),
                                                   (*m)->settings(), nullptr);
    if (!out.is_ok()) return refuse(out.status());
    print_json(*out);
    return 0;
  }
  // A shortlist's rows depend on the embeddings: a context runs them.
  Result<decision::ContextLayout> lay = decision::Context::layout(**m, {});
  if (!lay.is_ok()) return refuse(lay.status());
  std::vector<runtime::RegionBuffer> buffers;
  std::vector<runtime::MemoryRegion> regions;
  for (int r = 0; r < decision::kRegionCount; ++r) {
    Result<runtime::RegionBuffer> b =
        runtime::RegionBuffer::alloc(lay->bytes[r], std::max<uint64_t>(lay->align[r], 64), false);
    if (!b.is_ok()) return refuse(b.status());
    buffers.push_back(std::move(b).value());
    regions.push_back(buffers.back().region());
  }
  Result<decision::Context*> c = decision::Context::create(*m, {}, regions);
  if (!c.is_ok()) return refuse(c.status());
  const Status st = (*c)->explain(*text);
  if (st.is_ok()) {
    std::fwrite((*c)->json().data(), 1, (*c)->json().size(), stdout);
    std::fputc('\n', stdout);
  }
  decision::Context::destroy(*c);
  return st.is_ok() ? 0 : refuse(st);
}

}  // namespace laya::tools
