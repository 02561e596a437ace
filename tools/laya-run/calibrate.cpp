// laya-run calibrate: fits a decoder's decision temperatures on labelled questions requests
// (runtime/decisions/calibration.h) and writes the --decision-config laya-convert takes.
//
//   laya-run calibrate --model M.gguf|M.laya --data labelled.jsonl [-o cfg.json] [--holdout F]
//
// Exit codes: 0 success, 1 bad data or a model / runtime failure (message on stderr, nothing on
// stdout, no config written), 2 bad arguments.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "runtime/decisions/calibration.h"
#include "runtime/decisions/context.h"
#include "runtime/decisions/decoder_decide.h"
#include "runtime/decisions/model.h"
#include "runtime/text/json.h"
#include "tools/cli.h"
#include "tools/laya-run/commands.h"

namespace laya::tools {

namespace {

using json::Value;

constexpr const char* kCalibrateUsage =
    "usage: laya-run calibrate --model M.gguf|M.laya --data labelled.jsonl [-o cfg.json]\n"
    "                          [--holdout F] [options]\n"
    "\n"
    "Fits the decision temperatures of a decoder LM (docs/generation.md \"Temperatures\"): runs\n"
    "every labelled questions request once at T = 1, reads each question's option logits, and\n"
    "finds the temperatures that minimise the labels' negative log-likelihood: one per question\n"
    "type (`temperature` [choice, score, noul], a type with fewer than 10 questions keeps 1) and\n"
    "one per option-count bucket (`temperature_by_options`, <type>:<2|3-5|6-10|11+>) with at\n"
    "least --min-bucket questions. Prints a JSON report: the temperatures, every fit, and NLL,\n"
    "accuracy and ECE (10 bins) before (the model's temperatures: 1 for a GGUF) and after, on\n"
    "the training lines and the held-out ones, in all and per question type. The temperatures\n"
    "are fitted on the training lines only.\n"
    "\n"
    "Each line of --data is a decoder questions request with the right answers:\n"
    "  {\"state\": ..., \"questions\": {QID: {...}}, \"system\"?: ..., \"labels\": {QID: LABEL}}\n"
    "LABEL: choice, one of the question's labels; score, the level index (0..K-1, a fractional\n"
    "value splits between two levels); noul, true / false (1 / 0, \"yes\" / \"no\"). A question\n"
    "without a label is not used. Blank lines are skipped.\n"
    "\n"
    "  -o, --output FILE  write {\"temperature\", \"temperature_by_options\"} there, the file\n"
    "                     laya-convert model.gguf --decision-config FILE reads\n"
    "  --holdout F        fraction of the lines held out for evaluation, 0..0.9 (default 0.25);\n"
    "                     the lines are shuffled with --seed first\n"
    "  --seed S           the shuffle's seed (default 0)\n"
    "  --min-bucket N     questions a bucket needs for its own temperature (default 30)\n"
    "  --chunk N          prefill chunk in tokens, 1..4096 (default 128)\n"
    "  --threads N        CPU threads (default: all cores)\n"
    "  --kernels K        auto | ref | a Highway target name (default auto)\n"
    "  --backends A,B     backends in order of preference (default: cpu)\n";

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "laya-run: %s\n\n%s", msg.c_str(), kCalibrateUsage);
  return 2;
}

int fail(const Status& s) {
  std::fprintf(stderr, "laya-run: %s\n", s.to_string().c_str());
  return 1;
}

// One labelled line: its request and, per question, the label's target (slot order; empty when
// the question has no label).
struct Line {
  int number = 0;
  runtime::DecoderRequest req;
  std::vector<std::vector<double>> targets;
};

Status line_error(int n, const std::string& msg) {
  return Status(StatusCode::kInvalidArgument, "line " + std::to_string(n) + ": " + msg);
}

Result<Line> read_line(int n, const std::string& text) {
  json::ParseOptions po;
  po.max_bytes = decision::kMaxBodyBytes;
  Result<Value> body = json::parse(text, po, "line");
  if (!body.is_ok()) return line_error(n, body.status().message());
  if (!body->is_object()) return line_error(n, "not a JSON object");
  if (body->find("schema") && !body->find("questions"))
    return line_error(n, "a schema request; calibration reads questions requests");
  if (body->find("states"))
    return line_error(n, "'states' given; one labelled state per line ('state')");
  const Value* labels = body->find("labels");
  if (!labels || !labels->is_object())
    return line_error(n, "'labels' must be an object {question id: answer}");
  Line line;
  line.number = n;
  Result<runtime::DecoderRequest> req = runtime::parse_decoder_request(text);
  if (!req.is_ok()) return line_error(n, req.status().message());
  line.req = std::move(req).value();
  const std::vector<decision::Question>& qs = line.req.questions.questions;
  line.targets.resize(qs.size());
  for (const auto& m : labels->members()) {
    size_t j = 0;
    while (j < qs.size() && qs[j].id != m.key) ++j;
    if (j == qs.size()) return line_error(n, "label for '" + m.key + "', which is no question");
    Result<std::vector<double>> t = decision::label_target(qs[j], m.value);
    if (!t.is_ok()) return line_error(n, t.status().message());
    line.targets[j] = std::move(t).value();
  }
  return line;
}

Result<std::vector<Line>> read_data(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f.good()) return status_error(StatusCode::kIoError, "cannot open %s", path.c_str());
  std::vector<Line> lines;
  std::string text;
  for (int n = 1; std::getline(f, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    LAYA_ASSIGN_OR_RETURN(Line line, read_line(n, text));
    lines.push_back(std::move(line));
  }
  if (lines.empty()) return Status(StatusCode::kInvalidArgument, path + " has no labelled lines");
  return lines;
}

// splitmix64: the shuffle's generator (the split must not depend on the standard library).
uint64_t splitmix64(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Value number_or_null(double v) {
  return std::isfinite(v) ? Value::number(v) : Value();
}

Value metrics_json(const decision::CalibrationMetrics& m) {
  Value o = Value::object();
  o.set("nll", number_or_null(m.nll));
  o.set("accuracy", number_or_null(m.accuracy));
  o.set("ece", number_or_null(m.ece));
  return o;
}

Value split_json(std::span<const decision::CalibrationRecord> recs, int64_t lines,
                 const decision::Temperatures& before, const decision::Temperatures& after) {
  Value o = Value::object();
  o.set("lines", Value::integer(lines));
  o.set("questions", Value::integer(static_cast<int64_t>(recs.size())));
  o.set("before", metrics_json(decision::calibration_metrics(recs, before, 10)));
  o.set("after", metrics_json(decision::calibration_metrics(recs, after, 10)));
  Value types = Value::object();
  for (int t = 0; t < 3; ++t) {
    std::vector<decision::CalibrationRecord> of;
    for (const decision::CalibrationRecord& r : recs)
      if (static_cast<int>(r.type) == t) of.push_back(r);
    if (of.empty()) continue;
    Value m = Value::object();
    m.set("questions", Value::integer(static_cast<int64_t>(of.size())));
    m.set("before", metrics_json(decision::calibration_metrics(of, before, 10)));
    m.set("after", metrics_json(decision::calibration_metrics(of, after, 10)));
    types.set(decision::qtype_name(static_cast<decision::QType>(t)), std::move(m));
  }
  o.set("types", std::move(types));
  return o;
}

Status write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    if (!f.good()) return status_error(StatusCode::kIoError, "cannot write %s", tmp.c_str());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return status_error(StatusCode::kIoError, "cannot write %s", path.c_str());
  }
  return Status::ok();
}

}  // namespace

int cmd_calibrate(int argc, char** argv) {
  bool help = false;
  std::string model, data, output, kernels = "auto", backends = "cpu";
  double holdout = 0.25;
  int64_t seed = 0, min_bucket = decision::kMinBucketRecords, chunk = 128, threads = 0;
  std::vector<std::string> positional;
  ArgParser p;
  p.flag("help", &help);
  p.text("model", &model);
  p.text("data", &data);
  p.text("output", &output);
  p.number("holdout", 0, 0.9, &holdout);
  p.integer("seed", 0, INT64_MAX, &seed);
  p.integer("min-bucket", 1, 1000000, &min_bucket);
  p.integer("chunk", 1, 4096, &chunk);
  p.integer("threads", 0, 1024, &threads);
  p.choice("kernels", kernels::kernel_table_names(), &kernels);
  p.text("backends", &backends);
  // "-o" is "--output" (the parser itself knows only "-h").
  std::vector<const char*> args(argv, argv + argc);
  for (const char*& a : args)
    if (std::strcmp(a, "-o") == 0) a = "--output";
  if (!p.parse(argc, args.data(), 2, &positional)) return usage_error(p.error());
  if (help) {
    std::printf("%s", kCalibrateUsage);
    return 0;
  }
  if (!positional.empty()) return usage_error("unexpected argument " + positional[0]);
  if (model.empty()) return usage_error("--model is required");
  if (data.empty()) return usage_error("--data is required");
  decision::ModelOptions mo;
  std::string err;
  mo.backends.clear();
  if (!split_list(backends, "--backends", &mo.backends, &err)) return usage_error(err);
  mo.n_threads = static_cast<int>(threads);
  hal::BackendOptions cpu;
  cpu.n_threads = static_cast<int>(threads);
  cpu.settings = {{"kernels", kernels}};
  mo.backend_options.emplace_back("cpu", cpu);

  // The data first: a bad line never costs a model load.
  Result<std::vector<Line>> lines = read_data(data);
  if (!lines.is_ok()) return fail(lines.status());
  Result<std::shared_ptr<const decision::Model>> m = decision::Model::open_file(model, mo);
  if (!m.is_ok()) return fail(m.status());
  if ((*m)->kind() != decision::ModelKind::kDecoder)
    return fail(Status(StatusCode::kUnsupported,
                       model + " is not a decoder LM (calibrate fits a decoder's temperatures)"));
  Status why;
  const runtime::DecoderText* text = (*m)->decoder_text_or(&why);
  if (text == nullptr) return fail(why);
  runtime::DecoderCells cells;
  for (const Line& line : *lines) {
    Result<runtime::DecoderCells> c = runtime::decoder_request_cells(*text, line.req);
    if (!c.is_ok()) return fail(line_error(line.number, c.status().message()));
    cells.working = std::max(cells.working, c->working);
    cells.stored = std::max(cells.stored, c->stored);
  }
  decision::ContextLimits lim;
  lim.kv_cells = cells.working;
  lim.chunk = chunk;
  lim.prefix_slots = 2;
  Result<decision::ContextLayout> lay = decision::Context::layout(**m, lim);
  if (!lay.is_ok()) return fail(lay.status());
  lim.prefix_cache_bytes = 0;
  std::vector<runtime::RegionBuffer> buffers;
  std::vector<runtime::MemoryRegion> regions;
  for (int r = 0; r < decision::kRegionCount; ++r) {
    Result<runtime::RegionBuffer> b = runtime::RegionBuffer::alloc(
        lay->bytes[r], std::max<uint64_t>(lay->align[r], 64), lay->bytes[r] >= (uint64_t{2} << 20));
    if (!b.is_ok()) return fail(b.status());
    buffers.push_back(std::move(b).value());
    regions.push_back(buffers.back().region());
  }
  Result<decision::Context*> made = decision::Context::create(*m, lim, regions);
  if (!made.is_ok()) return fail(made.status());
  std::unique_ptr<decision::Context, void (*)(decision::Context*)> ctx(*made,
                                                                       decision::Context::destroy);
  const decision::Temperatures before = (*m)->temperatures();

  // The split: a seeded shuffle of the lines, the first round(n * holdout) held out.
  const size_t n = lines->size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  uint64_t state = static_cast<uint64_t>(seed);
  for (size_t i = n; i > 1; --i) std::swap(order[i - 1], order[splitmix64(state) % i]);
  const size_t n_hold = static_cast<size_t>(std::llround(static_cast<double>(n) * holdout));
  if (n_hold >= n)
    return fail(Status(StatusCode::kInvalidArgument, "--holdout " + std::to_string(holdout) +
                                                         " leaves no training line of " +
                                                         std::to_string(n)));
  std::vector<bool> held(n, false);
  for (size_t i = 0; i < n_hold; ++i) held[order[i]] = true;

  std::vector<decision::CalibrationRecord> train, test;
  int64_t unlabelled = 0;
  for (size_t i = 0; i < n; ++i) {
    const Line& line = (*lines)[i];
    const runtime::DecoderRequest& req = line.req;
    std::vector<std::vector<float>> scores;
    if (Status st = ctx->question_scores(req, &scores); !st.is_ok())
      return fail(line_error(line.number, st.message()));
    for (size_t j = 0; j < req.questions.questions.size(); ++j) {
      if (line.targets[j].empty()) {
        ++unlabelled;
        continue;
      }
      decision::CalibrationRecord r;
      r.type = req.questions.questions[j].type;
      r.logits = scores[j];
      r.target = line.targets[j];
      (held[i] ? test : train).push_back(std::move(r));
    }
  }
  decision::CalibrationOptions co;
  co.min_bucket = min_bucket;
  Result<decision::CalibrationFit> fit = decision::fit_calibration(train, co);
  if (!fit.is_ok()) return fail(fit.status());

  const Value config = decision::decision_config(fit->temps);
  Value report = Value::object();
  report.set("model", Value::string(model));
  for (const auto& m : config.members()) report.set(m.key, m.value);
  Value fits = Value::object();
  for (const auto& [name, f] : fit->fits) {
    Value o = Value::object();
    o.set("questions", Value::integer(f.n));
    o.set("fitted", Value::number(f.fitted));
    o.set("applied", Value::number(f.applied));
    fits.set(name, std::move(o));
  }
  report.set("fits", std::move(fits));
  Value counts = Value::object();
  for (const auto& [name, c] : fit->counts) counts.set(name, Value::integer(c));
  report.set("train_questions", std::move(counts));
  report.set("unlabelled_questions", Value::integer(unlabelled));
  report.set("train", split_json(train, static_cast<int64_t>(n - n_hold), before, fit->temps));
  report.set("holdout", split_json(test, static_cast<int64_t>(n_hold), before, fit->temps));
  if (!output.empty())
    if (Status st = write_file(output, json::dump(config) + "\n"); !st.is_ok()) return fail(st);
  print_json(report);
  return 0;
}

}  // namespace laya::tools
