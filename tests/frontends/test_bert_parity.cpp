// BERT import against transformers: all-MiniLM-L6-v2 (the real weights, fetched by
// tools/fetch-models.sh) embeds the 50 sentences of tests/fixtures/minilm/cases.json
// (tools/reference/make_minilm_cases.py: token ids and transformers' mean-pooled last_hidden_state
// per sentence), all sentences packed into one request; every embedding's cosine with
// transformers' >= 0.9999. The model directory: LAYA_MINILM_DIR, else
// $LAYA_MODEL_CACHE/minilm/model, else ~/.cache/laya-models/minilm/model (fetch-models.sh's).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "frontends/import.h"
#include "ir/model_file.h"
#include "runtime/text/json.h"
#include "tests/frontends/frontends_util.h"
#include "tests/runtime/session_util.h"

using namespace laya;

namespace {

struct Sentence {
  std::vector<int32_t> ids, types;
  std::vector<double> want;
};

std::vector<Sentence> load_cases(const std::string& path) {
  Result<json::Value> v = json::parse(test::read_text(path));
  REQUIRE_MESSAGE(v.is_ok(), v.status().to_string());
  std::vector<Sentence> out;
  REQUIRE(v->find("format")->as_string() == "minilm-cases/1");
  for (const json::Value& s : v->find("cases")->items()) {
    Sentence x;
    for (const json::Value& i : s.find("input_ids")->items())
      x.ids.push_back(static_cast<int32_t>(*i.as_int64()));
    x.types.assign(x.ids.size(), 0);  // one segment per sentence
    for (const json::Value& e : s.find("mean_pooled")->items()) x.want.push_back(e.as_double());
    out.push_back(std::move(x));
  }
  return out;
}

// Runs all sentences as one packed request; returns min cosine and max |diff|.
void compare(const ir::Graph& g, const std::vector<Sentence>& cases, double* min_cos,
             double* max_abs) {
  test::TinyRun run = test::make_run(g, test::cpu_options("auto", 2));
  std::vector<int32_t> ids, pos, seq, types, starts;
  for (size_t r = 0; r < cases.size(); ++r) {
    starts.push_back(static_cast<int32_t>(ids.size()));
    for (size_t i = 0; i < cases[r].ids.size(); ++i) {
      ids.push_back(cases[r].ids[i]);
      types.push_back(cases[r].types[i]);
      pos.push_back(static_cast<int32_t>(i));
      seq.push_back(static_cast<int32_t>(r));
    }
  }
  const int64_t sym[2] = {static_cast<int64_t>(ids.size()), static_cast<int64_t>(cases.size())};
  REQUIRE(run.session->reshape(sym).is_ok());
  std::vector<const void*> in;
  for (ir::ValueId v : g.inputs) {
    const std::string& n = g.values[v].name;
    in.push_back(n == "ids"         ? ids.data()
                 : n == "pos"       ? pos.data()
                 : n == "seq"       ? seq.data()
                 : n == "row_start" ? starts.data()
                                    : types.data());
  }
  const int64_t d = static_cast<int64_t>(cases[0].want.size());
  std::vector<float> emb(cases.size() * static_cast<size_t>(d));
  void* out[1] = {emb.data()};
  const Status st = run.session->execute(in, out);
  REQUIRE_MESSAGE(st.is_ok(), st.to_string());
  *min_cos = 1;
  *max_abs = 0;
  for (size_t r = 0; r < cases.size(); ++r) {
    double dot = 0, na = 0, nb = 0;
    for (int64_t j = 0; j < d; ++j) {
      const double a = emb[r * static_cast<size_t>(d) + static_cast<size_t>(j)],
                   b = cases[r].want[j];
      dot += a * b;
      na += a * a;
      nb += b * b;
      *max_abs = std::max(*max_abs, std::fabs(a - b));
    }
    *min_cos = std::min(*min_cos, dot / std::sqrt(na * nb));
  }
}

}  // namespace

TEST_CASE("bert parity: all-MiniLM-L6-v2 embeddings vs transformers") {
  std::string dir;
  if (const char* d = std::getenv("LAYA_MINILM_DIR")) {
    dir = d;
  } else if (const char* c = std::getenv("LAYA_MODEL_CACHE")) {
    dir = std::string(c) + "/minilm/model";
  } else if (const char* h = std::getenv("HOME")) {
    dir = std::string(h) + "/.cache/laya-models/minilm/model";
  }
  REQUIRE_MESSAGE(std::filesystem::exists(dir + "/model.safetensors"),
                  "no all-MiniLM-L6-v2 at '" << dir << "': run tools/fetch-models.sh");
  const std::vector<Sentence> cases = load_cases(test::fixtures_dir() + "/minilm/cases.json");
  REQUIRE(!cases.empty());
  frontends::ImportOptions opts;
  opts.hash_sources = false;
  Result<ir::Graph> g = frontends::import_bert(dir, opts);
  REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
  CHECK(g->meta.architecture == "bert");
  CHECK(g->values[g->outputs[0]].name == "embeddings");
  double cos = 0, diff = 0;
  compare(*g, cases, &cos, &diff);
  MESSAGE("MiniLM, f32 weights in place: " << cases.size() << " sentences, min cosine " << cos
                                           << ", max |diff| " << diff);
  CHECK(cos >= 0.9999);
  // Through laya-convert's path: converted to f32, written, loaded.
  test::TempDir tmp;
  opts.format = frontends::WeightFormat::kF32;
  Result<ir::Graph> conv = frontends::import_bert(dir, opts);
  REQUIRE(conv.is_ok());
  REQUIRE(ir::model_write(*conv, tmp.file("m.laya")).is_ok());
  Result<ir::Graph> loaded = ir::model_load(tmp.file("m.laya"));
  REQUIRE_MESSAGE(loaded.is_ok(), loaded.status().to_string());
  compare(*loaded, cases, &cos, &diff);
  MESSAGE("MiniLM, converted file: min cosine " << cos << ", max |diff| " << diff);
  CHECK(cos >= 0.9999);
}
