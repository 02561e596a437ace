// laya-parity: the imported Laya network against the upstream SDK's recorded forwards, per weight
// format, and each reduced-precision format against the first one (normally f32).
//
//   laya-parity CHECKPOINT [--cases FILE] [--dtype f32,bf16,int8[@ax8850[-f32]]] [--head-dtype D]
//               [--override PATTERN=D]... [--threads N] [--kernels K]
//               [--int8-activations f32|i8] [--check]
//
// CHECKPOINT is a Laya checkpoint directory; FILE (default CHECKPOINT/cases.json) a laya-cases/1
// file recorded from it by tools/reference/run_laya_cases.py. Every recorded forward's rows run
// packed, one forward per execute. Per format it prints, over every question row: argmax agreement
// and max |dp| with the SDK's fp32 logits (untempered, and tempered with the checkpoint's own
// temperature rules: the probabilities users see), max |d act_probability|, the shortlist
// embeddings' min cosine; for the formats after the first, decision (argmax) agreement with the
// first format and max |dp| from it. "source" runs the checkpoint's own weights in place; a
// format may carry its own overrides: "int8:encoder.layers.*.mlp.Wo.weight=f16;head.*=f16".
// --head-dtype / --override (laya-convert's) apply to every format but "source".
// A format ending in "@ax8850" runs on the AX8850 simulator (what it takes; the rest on the
// cpu) with its default bf16 activations, "@ax8850-f32" in its f32 reference semantics:
// "f32,int8,int8@ax8850" compares the NPU's w8a16 with the CPU's f32 and int8.
// --int8-activations: the cpu backend's setting (f32: int8 weights against f32 activations, the
// default; i8: the a8w8 kernels, activations quantized per token).
// --check: exit 1 unless the first format meets the fp32 bars (identical argmax, max |dp| <= 2e-4)
// and every other one the reduced-precision bars (>= 99.5% agreement, max |dp| <= 0.01).
// Exit codes: 0 ok, 1 failure (or a missed bar with --check), 2 bad arguments.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frontends/import.h"
#include "kernels/kernels.h"
#include "ir/model_file.h"
#include "runtime/text/json.h"
#include "runtime/decisions/answers.h"
#include "tools/cli.h"
#include "tools/laya_request.h"

namespace {

using namespace laya;

struct RowResult {
  std::vector<double> p, pt;  // untempered, tempered
  int argmax = 0;
  double act_p = 0;
};

struct Report {
  std::vector<RowResult> rows;
  int argmax_sdk = 0;
  double dp_sdk = 0, dpt_sdk = 0, dact_sdk = 0, min_cos = 1;
  int embeddings = 0;
};

int argmax(const std::vector<double>& p) {
  int a = 0;
  for (size_t i = 1; i < p.size(); ++i)
    if (p[i] > p[static_cast<size_t>(a)]) a = static_cast<int>(i);
  return a;
}

Status run_cases(runtime::Session& s, const json::Value& doc, Report* rep) {
  const decision::Temperatures temps = decision::model_temperatures(s.graph().meta);
  for (const json::Value& c : doc.find("cases")->items()) {
    LAYA_RETURN_IF_ERROR(tools::replay_forwards(s, c, [&](const tools::ReplayedRow& r) {
      const int64_t k = r.k();
      const double t = temps.get(static_cast<decision::QType>(r.row.qtype), static_cast<int>(k));
      const std::vector<float> ref = r.recorded("logits", k), act_ref = r.recorded("act_logits");
      RowResult rr;
      rr.p = tools::softmax_d(r.logits(), k);
      rr.pt = tools::softmax_d(r.logits(), k, t);
      rr.argmax = argmax(rr.p);
      const std::vector<double> q = tools::softmax_d(ref.data(), k);
      const std::vector<double> qt = tools::softmax_d(ref.data(), k, t);
      rep->argmax_sdk += rr.argmax == argmax(q);
      for (size_t j = 0; j < q.size(); ++j) {
        rep->dp_sdk = std::max(rep->dp_sdk, std::fabs(rr.p[j] - q[j]));
        rep->dpt_sdk = std::max(rep->dpt_sdk, std::fabs(rr.pt[j] - qt[j]));
      }
      rr.act_p = tools::softmax_d(r.act_logits(), r.out.n_act)[0];
      rep->dact_sdk = std::max(
          rep->dact_sdk, std::fabs(rr.act_p - tools::softmax_d(act_ref.data(), r.out.n_act)[0]));
      rep->rows.push_back(std::move(rr));
    }));
    LAYA_RETURN_IF_ERROR(tools::replay_embeddings(s, c, [&](double cosine) {
      rep->min_cos = std::min(rep->min_cos, cosine);
      ++rep->embeddings;
    }));
  }
  return Status::ok();
}

constexpr const char* kUsage =
    "usage: laya-parity CHECKPOINT [--cases FILE] [--dtype f32,bf16,int8[@ax8850[-f32]]]\n"
    "                   [--head-dtype D]\n"
    "                   [--override P=D]... [--threads N] [--kernels K]\n"
    "                   [--int8-activations f32|i8] [--check]\n";

int usage(const char* why) {
  std::fprintf(stderr, "laya-parity: %s\n%s", why, kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cases_path, dtypes = "f32", head, kernels = "auto", int8_act = "f32";
  std::vector<std::string> override_specs, positional;
  int64_t threads = 2;
  bool check = false, help = false;
  tools::ArgParser p;
  p.flag("help", &help);
  p.text("cases", &cases_path);
  p.text("dtype", &dtypes);
  p.text("head-dtype", &head);
  p.repeated("override", &override_specs);
  p.integer("threads", 0, 1024, &threads);
  p.choice("kernels", kernels::kernel_table_names(), &kernels);
  p.choice("int8-activations", {"f32", "i8"}, &int8_act);
  p.flag("check", &check);
  if (!p.parse(argc, argv, 1, &positional)) return usage(p.error().c_str());
  if (help) {
    std::printf("%s", kUsage);
    return 0;
  }
  if (positional.size() != 1)
    return usage(positional.empty() ? "no checkpoint directory" : "one checkpoint directory only");
  const std::string dir = positional[0];
  if (cases_path.empty()) cases_path = dir + "/cases.json";
  std::ifstream in(cases_path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "laya-parity: cannot read %s: %s\n", cases_path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Result<json::Value> doc = json::parse(text, {}, cases_path);
  if (!doc.is_ok() || doc->find("cases") == nullptr) {
    std::fprintf(stderr, "laya-parity: %s is not a laya-cases file\n", cases_path.c_str());
    return 1;
  }
  char tmpl[] = "/tmp/laya_parity_XXXXXX";
  const char* tmp = ::mkdtemp(tmpl);
  if (tmp == nullptr) return 1;

  std::vector<Report> reports;
  std::vector<std::string> names;
  bool ok = true;
  for (size_t at = 0; at <= dtypes.size();) {
    const size_t comma = std::min(dtypes.find(',', at), dtypes.size());
    const std::string name = dtypes.substr(at, comma - at);
    at = comma + 1;
    // FORMAT or FORMAT:PATTERN=D;PATTERN=D... (overrides of this variant only), then optionally
    // @ax8850 (the AX8850 simulator, bf16 activations) or @ax8850-f32 (its reference semantics).
    const size_t at_sign = name.find('@');
    const std::string npu = at_sign == std::string::npos ? "" : name.substr(at_sign + 1);
    if (!npu.empty() && npu != "ax8850" && npu != "ax8850-f32")
      return usage(("unknown backend '" + npu + "' (ax8850 or ax8850-f32)").c_str());
    const std::string spec = name.substr(0, at_sign);
    const size_t colon = spec.find(':');
    Result<frontends::WeightFormat> fmt = frontends::weight_format_from_name(spec.substr(0, colon));
    if (!fmt.is_ok()) return usage(fmt.status().message());
    frontends::ImportOptions opts;
    opts.format = *fmt;
    opts.hash_sources = false;
    for (size_t p = colon; p != std::string::npos && p < spec.size();) {
      const size_t semi = std::min(spec.find(';', p + 1), spec.size());
      Result<frontends::FormatOverride> o =
          frontends::parse_format_override(spec.substr(p + 1, semi - p - 1));
      if (!o.is_ok()) return usage(o.status().message());
      opts.overrides.push_back(*o);
      p = semi;
    }
    for (const std::string& spec : override_specs) {
      Result<frontends::FormatOverride> o = frontends::parse_format_override(spec);
      if (!o.is_ok()) return usage(o.status().message());
      if (*fmt != frontends::WeightFormat::kSource) opts.overrides.push_back(*o);
    }
    if (!head.empty() && *fmt != frontends::WeightFormat::kSource) {
      Result<frontends::WeightFormat> h = frontends::weight_format_from_name(head);
      if (!h.is_ok()) return usage(h.status().message());
      for (const char* p : frontends::kLayaHeadPatterns) opts.overrides.push_back({p, *h});
    }
    Result<ir::Graph> g = frontends::import_laya(dir, opts);
    if (g.is_ok() && *fmt != frontends::WeightFormat::kSource) {
      const std::string path = std::string(tmp) + "/" + name + ".laya";
      Status st = ir::model_write(*g, path);
      g = st.is_ok() ? ir::model_load(path) : Result<ir::Graph>(st);
      std::filesystem::remove(path);  // the mapping keeps the bytes
    }
    if (!g.is_ok()) {
      std::fprintf(stderr, "laya-parity: %s: %s\n", name.c_str(), g.status().to_string().c_str());
      return 1;
    }
    runtime::SessionOptions so;
    hal::BackendOptions cpu;
    cpu.n_threads = static_cast<int>(threads);
    cpu.settings = {{"kernels", kernels}, {"int8_activations", int8_act}};
    so.backend_options.emplace_back("cpu", cpu);
    so.backend.n_threads = static_cast<int>(threads);
    if (!npu.empty()) {
      so.backends = {"ax8850", "cpu"};
      so.activations = {{"ax8850", npu == "ax8850" ? ir::DType::kBF16 : ir::DType::kF32}};
    }
    auto s = runtime::Session::prepare(*g, so);
    Result<runtime::SessionBuffers> buf = s.is_ok() ? runtime::session_buffers_alloc(**s)
                                                    : Result<runtime::SessionBuffers>(s.status());
    Status st = buf.is_ok() ? (*s)->bind_memory(buf->persistent.region(), buf->activations.region(),
                                                buf->scratch.region())
                            : buf.status();
    Report rep;
    if (st.is_ok()) st = run_cases(**s, *doc, &rep);
    if (!st.is_ok()) {
      std::fprintf(stderr, "laya-parity: %s: %s\n", name.c_str(), st.to_string().c_str());
      return 1;
    }
    const size_t n = rep.rows.size();
    std::printf(
        "%-6s vs SDK fp32: %zu rows, argmax %d/%zu, max |dp| %.3g (tempered %.3g), "
        "max |d act_p| %.3g, %d embeddings min cosine %.6f\n",
        name.c_str(), n, rep.argmax_sdk, n, rep.dp_sdk, rep.dpt_sdk, rep.dact_sdk, rep.embeddings,
        rep.min_cos);
    if (reports.empty()) {
      ok = ok && rep.argmax_sdk == static_cast<int>(n) && rep.dp_sdk <= 2e-4 &&
           rep.dact_sdk <= 2e-4 && rep.min_cos >= 0.9999;
    } else {
      const Report& ref = reports.front();
      int agree = 0;
      double dp = 0, dpt = 0, dact = 0;
      for (size_t r = 0; r < n; ++r) {
        agree += rep.rows[r].argmax == ref.rows[r].argmax;
        for (size_t j = 0; j < rep.rows[r].p.size(); ++j) {
          dp = std::max(dp, std::fabs(rep.rows[r].p[j] - ref.rows[r].p[j]));
          dpt = std::max(dpt, std::fabs(rep.rows[r].pt[j] - ref.rows[r].pt[j]));
        }
        dact = std::max(dact, std::fabs(rep.rows[r].act_p - ref.rows[r].act_p));
      }
      std::printf(
          "%-6s vs %s: decision agreement %d/%zu (%.2f%%), max |dp| %.3g (tempered %.3g), "
          "max |d act_p| %.3g\n",
          name.c_str(), names.front().c_str(), agree, n, 100.0 * agree / n, dp, dpt, dact);
      ok = ok && agree >= 0.995 * static_cast<double>(n) && dpt <= 0.01;
    }
    reports.push_back(std::move(rep));
    names.push_back(name);
  }
  std::filesystem::remove_all(tmp);
  return check && !ok ? 1 : 0;
}
