// The imported Laya network against the upstream SDK: the recorded token rows of every case in
// tests/fixtures/laya-tiny-*/cases.json (tools/reference/run_laya_cases.py, upstream's own
// classes and weights) run packed through the graph; probabilities, argmax, act probabilities and
// shortlist embeddings are compared with what the SDK computed in fp32.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "frontends/import.h"
#include "frontends/safetensors.h"
#include "ir/model_file.h"
#include "runtime/decisions/answers.h"
#include "tests/frontends/frontends_util.h"
#include "tools/laya_request.h"
#include "tests/runtime/session_util.h"

using namespace laya;

namespace {

struct Stats {
  int rows = 0, argmax_same = 0, embeddings = 0;
  double max_dp = 0, max_dact = 0, max_dlogit = 0, min_cos = 1;
  double max_dp64 = 0;  // ours against the SDK's float64 forward
  // Rows where the SDK's own fp32 lies more than 1e-4 from its float64 forward (the fixtures'
  // weights are scaled to make options far apart, which makes a few rows that sensitive), and the
  // rows where ours is further from the SDK than 2e-4 + 3 x that rounding of the SDK's own.
  int sensitive_rows = 0, rows_out_of_bound = 0;
};

void compare_case(runtime::Session& s, const json::Value& c, Stats* st) {
  Status run = tools::replay_forwards(s, c, [&](const tools::ReplayedRow& r) {
    const int64_t k = r.k();
    const std::vector<float> ref = r.recorded("logits", k), ref64 = r.recorded("logits_fp64", k);
    const float* ours = r.logits();
    for (int64_t j = k; j < r.out.k; ++j) CHECK(ours[j] == -1e4f);  // empty slots, exactly
    for (int64_t j = 0; j < k; ++j)
      st->max_dlogit = std::max(st->max_dlogit, std::fabs(double{ours[j]} - ref[j]));
    const std::vector<double> p = tools::softmax_d(ours, k), q = tools::softmax_d(ref.data(), k);
    const std::vector<double> q64 = tools::softmax_d(ref64.data(), k);
    double dp = 0, sdk_rounding = 0;
    size_t am_p = 0, am_q = 0;
    for (size_t j = 0; j < p.size(); ++j) {
      st->max_dp64 = std::max(st->max_dp64, std::fabs(p[j] - q64[j]));
      sdk_rounding = std::max(sdk_rounding, std::fabs(q[j] - q64[j]));
      dp = std::max(dp, std::fabs(p[j] - q[j]));
      if (p[j] > p[am_p]) am_p = j;
      if (q[j] > q[am_q]) am_q = j;
    }
    st->max_dp = std::max(st->max_dp, dp);
    st->sensitive_rows += sdk_rounding > 1e-4;
    st->rows_out_of_bound += dp > 2e-4 + 3 * sdk_rounding;
    st->argmax_same += am_p == am_q;
    const std::vector<float> act_ref = r.recorded("act_logits");
    REQUIRE(static_cast<int64_t>(act_ref.size()) == r.out.n_act);
    const std::vector<double> pa = tools::softmax_d(r.act_logits(), r.out.n_act);
    const std::vector<double> qa = tools::softmax_d(act_ref.data(), r.out.n_act);
    st->max_dact = std::max(st->max_dact, std::fabs(pa[0] - qa[0]));
    ++st->rows;
  });
  REQUIRE_MESSAGE(run.is_ok(), run.to_string());
  // Shortlist embeddings (recorded for one shortlist case only): one text per row, mean of the
  // final encoder states.
  run = tools::replay_embeddings(s, c, [&](double cosine) {
    st->min_cos = std::min(st->min_cos, cosine);
    ++st->embeddings;
  });
  REQUIRE_MESSAGE(run.is_ok(), run.to_string());
}

void check_fixture(const std::string& name) {
  const std::string dir = test::fixtures_dir() + "/" + name;
  Result<json::Value> cases = json::parse(test::read_text(dir + "/cases.json"));
  REQUIRE_MESSAGE(cases.is_ok(), cases.status().to_string());

  frontends::ImportOptions opts;
  opts.hash_sources = false;
  Result<ir::Graph> direct = frontends::import_laya(dir, opts);  // weights referenced, f16
  REQUIRE_MESSAGE(direct.is_ok(), direct.status().to_string());
  // The converted file (f32 weights streamed through model_write) must answer the same.
  test::TempDir tmp;
  opts.format = frontends::WeightFormat::kF32;
  Result<ir::Graph> converted = frontends::import_laya(dir, opts);
  REQUIRE_MESSAGE(converted.is_ok(), converted.status().to_string());
  REQUIRE(ir::model_write(*converted, tmp.file("m.laya")).is_ok());
  Result<ir::Graph> loaded = ir::model_load(tmp.file("m.laya"));
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.status().to_string());

  for (const ir::Graph* g : {&*direct, &*loaded})
    for (const std::string kernels : {"auto", "ref", "ax8850"}) {
      if (g == &*loaded && kernels != "auto") continue;  // the weights are the same values
      runtime::SessionOptions o = test::cpu_options(kernels == "auto" ? "auto" : "ref", 2);
      if (kernels == "ax8850") {
        // The AX8850 simulator in its reference semantics (f32 activations: the CPU reference
        // kernels'), every op it takes kept on it: the head's gathers and query-row attention
        // as the NPU path runs them.
        o.backends = {"ax8850"};
        o.backend_options.push_back({"ax8850", hal::BackendOptions{}});
        o.activations = {{"ax8850", ir::DType::kF32}};
        o.schedule.cost_placement = false;
      }
      test::TinyRun run = test::make_run(*g, o);
      Stats st;
      for (const json::Value& c : cases->find("cases")->items()) compare_case(*run.session, c, &st);
      const std::string what = g == &*direct ? " (f16 weights in place), " : " (converted f32), ";
      MESSAGE(name << what << kernels << " kernels: " << st.rows << " rows, argmax "
                   << st.argmax_same << "/" << st.rows << ", max |dp| " << st.max_dp
                   << " (from the SDK's float64 forward " << st.max_dp64 << "; "
                   << st.sensitive_rows << " rows where the SDK's own fp32 is > 1e-4 from it), "
                   << "max |dlogit| " << st.max_dlogit << ", max |d act_p| " << st.max_dact << "; "
                   << st.embeddings << " embeddings, min cosine " << st.min_cos);
      CHECK(st.rows > 0);
      CHECK(st.argmax_same == st.rows);
      CHECK(st.max_dact <= 2e-4);
      CHECK(st.embeddings > 0);
      CHECK(st.min_cos >= 0.9999);
      if (kernels != "auto") {
        // The reference kernels accumulate in double: within 2e-4 of upstream's exact forward.
        CHECK(st.max_dp64 <= 2e-4);
      } else {
        // fp32 accumulation, as the SDK's own: within 2e-4 of the SDK on every row but the few
        // where the SDK's own fp32 rounding is itself that large, and within 3x of it there.
        CHECK(st.rows_out_of_bound == 0);
        CHECK(st.sensitive_rows <= st.rows / 20);
      }
    }
}

}  // namespace

TEST_CASE("laya parity: tiny ModernBERT checkpoint vs the upstream SDK") {
  check_fixture("laya-tiny-modernbert");
}

TEST_CASE("laya parity: tiny mmBERT checkpoint vs the upstream SDK") {
  check_fixture("laya-tiny-mmbert");
}

// A ModernBERT Hugging Face directory (ModernBertForMaskedLM layout: "model." prefix, MLM head
// tensors) made of the tiny Laya checkpoint's encoder: its last_hidden_state, mean-pooled per
// text, must match the shortlist embeddings the SDK computed with transformers' ModernBertModel.
TEST_CASE("modernbert import: last_hidden_state vs transformers (the SDK's shortlist embeddings)") {
  for (const std::string name : {"laya-tiny-modernbert", "laya-tiny-mmbert"}) {
    CAPTURE(name);
    const std::string src = test::fixtures_dir() + "/" + name;
    test::TempDir tmp;
    std::filesystem::copy(src + "/encoder/config.json", tmp.file("config.json"));
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
      std::filesystem::copy(src + "/tokenizer/" + f, tmp.file(f));
    auto st = frontends::SafetensorsFile::open(src + "/model.safetensors");
    REQUIRE(st.is_ok());
    std::vector<test::StEntry> entries;
    int64_t d = 0;
    for (const frontends::StTensor& t : (*st)->tensors()) {
      if (t.name.rfind("encoder.", 0) != 0) continue;
      entries.push_back({"model." + t.name.substr(8), frontends::st_dtype_name(t.dtype), t.shape,
                         std::vector<uint8_t>(t.data, t.data + t.nbytes)});
      if (t.name == "encoder.final_norm.weight") d = t.shape[0];
    }
    entries.push_back({"head.dense.weight", "F16", {d, d}, std::vector<uint8_t>(2 * d * d, 0)});
    entries.push_back({"head.norm.weight", "F16", {d}, std::vector<uint8_t>(2 * d, 0)});
    entries.push_back({"decoder.bias", "F16", {7}, std::vector<uint8_t>(14, 0)});
    test::write_bytes(tmp.file("model.safetensors"), test::st_image(entries));

    frontends::ImportOptions opts;
    opts.hash_sources = false;
    Result<ir::Graph> g = frontends::import_checkpoint(tmp.path, opts);
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    CHECK(g->meta.architecture == "modernbert");
    REQUIRE(g->outputs.size() == 1);
    CHECK(g->values[g->outputs[0]].name == "last_hidden_state");
    test::TinyRun run = test::make_run(*g, test::cpu_options("auto", 2));

    Result<json::Value> cases = json::parse(test::read_text(src + "/cases.json"));
    REQUIRE(cases.is_ok());
    int n = 0;
    double min_cos = 1;
    for (const json::Value& c : cases->find("cases")->items())
      if (const json::Value* embs = c.find("embeddings"))
        for (const json::Value& e : embs->items()) {
          const json::Value* want = e.find("embedding");
          if (want == nullptr) continue;
          std::vector<int32_t> ids, pos, seq;
          for (const json::Value& v : e.find("input_ids")->items()) {
            ids.push_back(static_cast<int32_t>(*v.as_int64()));
            pos.push_back(static_cast<int32_t>(pos.size()));
            seq.push_back(0);
          }
          const int64_t t = static_cast<int64_t>(ids.size());
          REQUIRE(run.session->reshape({&t, 1}).is_ok());
          std::vector<float> h(static_cast<size_t>(t * d));
          const void* in[3] = {ids.data(), pos.data(), seq.data()};
          void* out[1] = {h.data()};
          REQUIRE(run.session->execute(in, out).is_ok());
          double dot = 0, na = 0, nb = 0;
          for (int64_t j = 0; j < d; ++j) {
            double mean = 0;
            for (int64_t i = 0; i < t; ++i) mean += h[static_cast<size_t>(i * d + j)];
            mean /= static_cast<double>(t);
            const double b = want->items()[static_cast<size_t>(j)].as_double();
            dot += mean * b;
            na += mean * mean;
            nb += b * b;
          }
          min_cos = std::min(min_cos, dot / std::sqrt(na * nb));
          ++n;
        }
    MESSAGE(name << " as a ModernBERT directory: " << n << " texts, min cosine " << min_cos);
    CHECK(n > 0);
    CHECK(min_cos >= 0.9999);
  }
}

namespace {

// Decision (argmax) agreement with the SDK's fp32 over every recorded row of
// tests/fixtures/laya-trained-modernbert/precision-cases.json, and the largest |dp| of the
// probabilities a user sees (tempered with the checkpoint's calibrated temperatures), for one
// weight format and one cpu int8_activations setting.
struct Agreement {
  int rows = 0, same = 0;
  double max_dp = 0;
};

Agreement agreement(frontends::WeightFormat format, const std::string& int8_activations) {
  const std::string dir = test::fixtures_dir() + "/laya-trained-modernbert";
  Result<json::Value> cases = json::parse(test::read_text(dir + "/precision-cases.json"));
  REQUIRE_MESSAGE(cases.is_ok(), cases.status().to_string());
  frontends::ImportOptions opts;
  opts.hash_sources = false;
  opts.format = format;
  Result<ir::Graph> converted = frontends::import_laya(dir, opts);
  REQUIRE_MESSAGE(converted.is_ok(), converted.status().to_string());
  test::TempDir tmp;
  REQUIRE(ir::model_write(*converted, tmp.file("m.laya")).is_ok());
  Result<ir::Graph> g = ir::model_load(tmp.file("m.laya"));
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  runtime::SessionOptions o = test::cpu_options("auto", 2);
  o.backend_options[0].second.settings.push_back({"int8_activations", int8_activations});
  test::TinyRun run = test::make_run(*g, o);
  const decision::Temperatures temps = decision::model_temperatures(g->meta);
  Agreement a;
  for (const json::Value& c : cases->find("cases")->items()) {
    const Status st = tools::replay_forwards(*run.session, c, [&](const tools::ReplayedRow& r) {
      const int64_t k = r.k();
      const double t = temps.get(static_cast<decision::QType>(r.row.qtype), static_cast<int>(k));
      const std::vector<float> ref = r.recorded("logits", k);
      const std::vector<double> p = tools::softmax_d(r.logits(), k, t);
      const std::vector<double> q = tools::softmax_d(ref.data(), k, t);
      size_t am_p = 0, am_q = 0;
      for (size_t j = 0; j < p.size(); ++j) {
        a.max_dp = std::max(a.max_dp, std::fabs(p[j] - q[j]));
        if (p[j] > p[am_p]) am_p = j;
        if (q[j] > q[am_q]) am_q = j;
      }
      a.same += am_p == am_q;
      ++a.rows;
    });
    REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  }
  MESSAGE(std::string(frontends::weight_format_name(format))
          << ", int8_activations=" << int8_activations << ": argmax " << a.same << "/" << a.rows
          << ", max |dp| " << a.max_dp);
  return a;
}

}  // namespace

// The trained checkpoint (tools/reference/make_trained_checkpoint.py: upstream's own fine-tuner run
// to its end, temperatures calibrated by it) answers decisively (median tempered margin 0.94), so
// a rounding error shows in the probabilities rather than as flipped near-ties; docs/precision.md
// has the numbers. Measured on Zen 3 (AVX2), tempered: bf16 326/326, max |dp| 6.3e-3 (the issue's
// bars: >= 99.5%, <= 0.01); int8 (weights per row, f32 activations) 324/326, 1.5e-2, which misses
// both (upstream's own fp32 forward with the same int8 weights gives the same, so the format is
// what costs, not the kernels); the a8w8 kernels (int8_activations=i8) 322/326, 5.7e-2.
TEST_CASE(
    "laya parity: bf16 and int8 keep activations in f32; decisions on the trained checkpoint") {
  const Agreement bf = agreement(frontends::WeightFormat::kBF16, "f32");
  CHECK(bf.rows >= 300);
  CHECK(bf.same * 1000 >= bf.rows * 995);
  CHECK(bf.max_dp <= 0.01);
  const Agreement w8 = agreement(frontends::WeightFormat::kInt8, "f32");
  CHECK(w8.rows >= 300);
  CHECK(w8.same * 100 >= w8.rows * 99);
  CHECK(w8.max_dp <= 0.02);
  const Agreement a8 = agreement(frontends::WeightFormat::kInt8, "i8");  // the setting takes effect
  CHECK(a8.max_dp > 2 * w8.max_dp);
}
