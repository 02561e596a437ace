// The importers: the Laya graph contract (inputs, outputs, metadata), strictness (missing, extra
// and mis-shaped tensors, bad configs, each an error naming what is wrong), weight formats
// (referenced in place, converted on write, int8 scales), provenance digests against Python's
// hashlib, SHA-256 test vectors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "frontends/import.h"
#include "frontends/safetensors.h"
#include "frontends/sha256.h"
#include "ir/model_file.h"
#include "kernels/quant.h"
#include "runtime/text/json.h"
#include "tests/frontends/frontends_util.h"
#include "tests/ir/ir_test_util.h"

using namespace laya;
using namespace laya::frontends;

namespace {

const char* const kTiny = "laya-tiny-modernbert";

json::Value fixture_cases(const std::string& name) {
  Result<json::Value> v =
      json::parse(test::read_text(test::fixtures_dir() + "/" + name + "/cases.json"));
  REQUIRE_MESSAGE(v.is_ok(), v.status().to_string());
  return std::move(v).value();
}

std::string prop(const ir::Graph& g, const std::string& key) {
  for (const auto& [k, v] : g.meta.properties)
    if (k == key) return v;
  return "<absent>";
}

// The tiny fixture's hidden size (encoder/config.json).
int64_t fixture_hidden() {
  Result<json::Value> v =
      json::parse(test::read_text(test::fixtures_dir() + "/" + kTiny + "/encoder/config.json"));
  REQUIRE(v.is_ok());
  return *v->find("hidden_size")->as_int64();
}

const ir::Value& value(const ir::Graph& g, const std::string& name) {
  const ir::ValueId id = g.find_value(name);
  REQUIRE_MESSAGE(id != ir::kNoValue, name);
  return g.values[id];
}

// A copy of a fixture checkpoint in a temporary directory, to be edited.
struct Copy {
  test::TempDir tmp;
  std::string dir;
  explicit Copy(const std::string& name = kTiny) : dir(tmp.file("ck")) {
    test::copy_dir(test::fixtures_dir() + "/" + name, dir);
  }
  std::string file(const std::string& rel) const { return dir + "/" + rel; }
  // Rewrites model.safetensors through `edit` (the tensors as entries, in file order).
  template <class F>
  void edit_tensors(F&& edit) {
    auto f = SafetensorsFile::open(file("model.safetensors"));
    REQUIRE(f.is_ok());
    std::vector<test::StEntry> entries;
    for (const StTensor& t : (*f)->tensors())
      entries.push_back({t.name, st_dtype_name(t.dtype), t.shape,
                         std::vector<uint8_t>(t.data, t.data + t.nbytes)});
    f = Status(StatusCode::kInternal, "release the mapping");
    edit(entries);
    test::write_bytes(file("model.safetensors"), test::st_image(entries));
  }
  // Replaces `key` in rl_agent_config.json with `json` (or removes it when json is empty).
  void set_config(const std::string& key, const std::string& text) {
    Result<json::Value> v = json::parse(test::read_text(file("rl_agent_config.json")));
    REQUIRE(v.is_ok());
    json::Value out = json::Value::object();
    for (const json::Member& m : v->members())
      if (m.key != key) out.set(m.key, m.value);
    if (!text.empty()) {
      Result<json::Value> nv = json::parse(text);
      REQUIRE(nv.is_ok());
      out.set(key, *nv);
    }
    test::write_text(file("rl_agent_config.json"), json::dump(out));
  }
};

ImportOptions quick() {
  ImportOptions o;
  o.hash_sources = false;
  return o;
}

}  // namespace

TEST_CASE("sha256: FIPS 180-4 test vectors") {
  auto hex = [](const std::string& s) {
    Sha256 h;
    h.update(s.data(), s.size());
    return h.hex_digest();
  };
  CHECK(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 m;  // one million 'a', fed in uneven pieces
  const std::string a(777, 'a');
  uint64_t left = 1000000;
  while (left > 0) {
    const uint64_t n = std::min<uint64_t>(left, a.size());
    m.update(a.data(), n);
    left -= n;
  }
  CHECK(m.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("laya import: the graph contract") {
  const std::string dir = test::fixtures_dir() + "/" + kTiny;
  Result<ir::Graph> r = import_laya(dir, ImportOptions());
  REQUIRE_MESSAGE(r.is_ok(), r.status().to_string());
  const ir::Graph& g = *r;
  REQUIRE(g.symbols.size() == 3);
  CHECK(g.symbols[0].name == "tokens");
  CHECK(g.symbols[1].name == "rows");
  CHECK(g.symbols[2].name == "options");
  CHECK(g.symbols[0].max == 96 * 64);  // max_len * max_rows
  CHECK(g.symbols[1].max == 64);
  CHECK(g.symbols[2].max == 512);
  const char* const ins[] = {"ids", "pos", "seq", "row_start", "qtype", "markers", "marker_valid"};
  REQUIRE(g.inputs.size() == 7);
  for (size_t i = 0; i < 7; ++i) {
    CHECK(g.values[g.inputs[i]].name == ins[i]);
    CHECK(g.values[g.inputs[i]].dtype == ir::DType::kI32);
  }
  const ir::Dim T = ir::Dim::sym(0), R = ir::Dim::sym(1), K = ir::Dim::sym(2);
  CHECK(value(g, "ids").shape == ir::Shape::of({ir::Dim::fixed(1), T}));
  CHECK(value(g, "row_start").shape == ir::Shape::of({R}));
  CHECK(value(g, "markers").shape == ir::Shape::of({R, K}));
  CHECK(value(g, "ids").role == ir::InputRole::kTokenIds);
  CHECK(value(g, "pos").role == ir::InputRole::kPositions);
  REQUIRE(g.outputs.size() == 3);
  CHECK(g.values[g.outputs[0]].name == "logits");
  CHECK(g.values[g.outputs[0]].shape == ir::Shape::of({R, K}));
  CHECK(g.values[g.outputs[1]].name == "act_logits");
  CHECK(g.values[g.outputs[1]].shape == ir::Shape::of({R, ir::Dim::fixed(2)}));
  CHECK(g.values[g.outputs[2]].name == "embeddings");
  CHECK(g.values[g.outputs[2]].shape == ir::Shape::of({R, ir::Dim::fixed(fixture_hidden())}));

  // Metadata: special ids as the upstream tokenizer resolves them, the config as written.
  const json::Value cases = fixture_cases(kTiny);
  const json::Value& sp = *cases.find("special_tokens");
  for (const char* role : {"cls", "sep", "pad", "mask", "unk"}) {
    const std::string role_name = role;
    CAPTURE(role_name);
    CHECK(prop(g, std::string("tokenizer.") + role + "_id") ==
          sp.find(std::string(role) + "_id")->as_string());
    CHECK(prop(g, std::string("tokenizer.") + role + "_token") ==
          sp.find(std::string(role) + "_token")->as_string());
  }
  CHECK(g.meta.architecture == "laya");
  CHECK(g.meta.tokenizer_kind == "hf-tokenizer-json");
  const std::string tok = test::read_text(dir + "/tokenizer/tokenizer.json");
  REQUIRE(g.meta.tokenizer.size == tok.size());
  CHECK(std::memcmp(g.meta.tokenizer.data, tok.data(), tok.size()) == 0);
  Result<json::Value> cfg = json::parse(test::read_text(dir + "/rl_agent_config.json"));
  REQUIRE(cfg.is_ok());
  const ir::DecisionConfig& d = g.meta.decision;
  CHECK(d.present);
  CHECK(d.max_len == *cfg->find("max_len")->as_int64());
  CHECK(d.head_max_len == *cfg->find("head_max_len")->as_int64());
  CHECK(d.head_layers == *cfg->find("head_layers")->as_int64());
  for (int i = 0; i < 3; ++i)
    CHECK(
        d.temperature[i] ==
        static_cast<float>(cfg->find("temperature")->items()[static_cast<size_t>(i)].as_double()));
  const json::Value& tbo = *cfg->find("temperature_by_options");
  REQUIRE(d.temperature_by_options.size() == tbo.members().size());
  for (size_t i = 0; i < tbo.members().size(); ++i) {  // file order, raw (0.1 and 7.0 unclamped)
    CHECK(d.temperature_by_options[i].first == tbo.members()[i].key);
    CHECK(d.temperature_by_options[i].second ==
          static_cast<float>(tbo.members()[i].value.as_double()));
  }
  CHECK(d.act_costs.size() == cfg->find("act_costs")->members().size());
  CHECK(prop(g, "laya.option_layout") == "sequential");
  CHECK(prop(g, "encoder.layer_types") == "FSSF");
  CHECK(prop(g, "buckets.tokens") == "64,128,256,512,1024,2048,4096,6144");

  // Provenance: every file read, with the digest Python's hashlib recorded.
  const json::Value& ck = *cases.find("checkpoint");
  bool saw_weights = false, saw_tok = false;
  CHECK(g.meta.provenance.source == dir);
  for (const ir::SourceFile& f : g.meta.provenance.files) {
    if (f.name == "model.safetensors") {
      saw_weights = true;
      CHECK(f.sha256 == ck.find("model_safetensors_sha256")->as_string());
    }
    if (f.name == "tokenizer/tokenizer.json") {
      saw_tok = true;
      CHECK(f.sha256 == ck.find("tokenizer_json_sha256")->as_string());
    }
  }
  CHECK(saw_weights);
  CHECK(saw_tok);
  CHECK(g.meta.provenance.files.size() == 5);  // config, encoder config, weights, 2 tokenizer

  // kSource: matrices point into the mapped safetensors file (no copy).
  auto f = SafetensorsFile::open(dir + "/model.safetensors");
  REQUIRE(f.is_ok());
  const StTensor* wqkv = (*f)->find("encoder.layers.1.attn.Wqkv.weight");
  REQUIRE(wqkv != nullptr);
  const ir::Value& v = value(g, "encoder.layers.1.attn.Wqkv.weight");
  CHECK(v.dtype == ir::DType::kF16);
  CHECK(v.fill == nullptr);
  CHECK(std::memcmp(v.data, wqkv->data, wqkv->nbytes) == 0);
  CHECK(test::in_mapping_of(v.data, dir + "/model.safetensors"));
  CHECK(value(g, "encoder.embeddings.norm.weight").dtype == ir::DType::kF32);
}

TEST_CASE("laya import: weight formats on write") {
  const std::string dir = test::fixtures_dir() + "/" + kTiny;
  auto src = SafetensorsFile::open(dir + "/model.safetensors");
  REQUIRE(src.is_ok());
  const StTensor* wi = (*src)->find("encoder.layers.2.mlp.Wi.weight");
  const StTensor* emb = (*src)->find("encoder.embeddings.tok_embeddings.weight");
  const StTensor* ln = (*src)->find("head.layers.0.norm1.bias");
  REQUIRE((wi && emb && ln));
  auto f16 = [](const StTensor* t, int64_t i) {
    uint16_t h;
    std::memcpy(&h, t->data + 2 * i, 2);
    return kernels::f16_to_f32(h);
  };
  test::TempDir tmp;
  for (WeightFormat fmt :
       {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBF16, WeightFormat::kInt8}) {
    const std::string format = weight_format_name(fmt);
    CAPTURE(format);
    ImportOptions o = quick();
    o.format = fmt;
    Result<ir::Graph> g = import_laya(dir, o);
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    for (const ir::Value& v : g->values)
      if (v.kind == ir::ValueKind::kWeight) CHECK((v.data == nullptr && v.fill != nullptr));
    const std::string path = tmp.file(std::string(weight_format_name(fmt)) + ".laya");
    REQUIRE(ir::model_write(*g, path).is_ok());
    Result<ir::Graph> back = ir::model_load(path);
    REQUIRE_MESSAGE(back.is_ok(), back.status().to_string());
    const ir::Value& w = value(*back, wi->name);
    const ir::Value& e = value(*back, emb->name);
    const ir::Value& b = value(*back, ln->name);
    CHECK(b.dtype == ir::DType::kF32);  // vectors stay f32
    for (int64_t i = 0; i < ln->elements; ++i) {
      float x;
      std::memcpy(&x, b.data + 4 * i, 4);
      CHECK(x == f16(ln, i));
    }
    const int64_t rows = wi->shape[0], cols = wi->shape[1];
    switch (fmt) {
      case WeightFormat::kF32:
      case WeightFormat::kF16:
      case WeightFormat::kBF16: {
        CHECK(w.dtype == (fmt == WeightFormat::kF32   ? ir::DType::kF32
                          : fmt == WeightFormat::kF16 ? ir::DType::kF16
                                                      : ir::DType::kBF16));
        // Tables are gathered, not multiplied: bf16 keeps the source's f16 table exactly.
        CHECK(e.dtype == (fmt == WeightFormat::kBF16 ? ir::DType::kF16 : w.dtype));
        if (e.dtype == ir::DType::kF16)
          CHECK(std::memcmp(e.data, emb->data, static_cast<size_t>(emb->nbytes)) == 0);
        bool same = true;
        for (int64_t i = 0; i < wi->elements; ++i) {
          float x;
          if (w.dtype == ir::DType::kF32) {
            std::memcpy(&x, w.data + 4 * i, 4);
          } else {
            uint16_t h;
            std::memcpy(&h, w.data + 2 * i, 2);
            x = w.dtype == ir::DType::kF16 ? kernels::f16_to_f32(h) : kernels::bf16_to_f32(h);
          }
          const float want = w.dtype == ir::DType::kBF16
                                 ? kernels::bf16_to_f32(kernels::f32_to_bf16(f16(wi, i)))
                                 : f16(wi, i);
          same = same && x == want;
        }
        CHECK(same);
        break;
      }
      case WeightFormat::kInt8: {
        CHECK(w.dtype == ir::DType::kI8);
        REQUIRE(w.quant.kind == ir::QuantKind::kPerChannel);
        REQUIRE(w.quant.scales.size() == static_cast<size_t>(rows));
        CHECK(e.dtype == ir::DType::kF16);  // tables keep the source's 16 bits
        std::vector<float> row(static_cast<size_t>(cols));
        std::vector<int8_t> q(static_cast<size_t>(cols));
        bool same = true;
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t c = 0; c < cols; ++c) row[c] = f16(wi, r * cols + c);
          const float scale = kernels::quantize_row_i8(row.data(), q.data(), cols);
          same = same && scale == w.quant.scales[r] &&
                 std::memcmp(q.data(), w.data + r * cols, static_cast<size_t>(cols)) == 0;
        }
        CHECK(same);
        break;
      }
      default:
        break;
    }
  }
}

TEST_CASE("laya import: a missing, extra or mis-shaped tensor names it and both shapes") {
  const std::string d = std::to_string(fixture_hidden());
  {
    Copy c;
    c.edit_tensors([](std::vector<test::StEntry>& e) {
      e.erase(std::remove_if(
                  e.begin(), e.end(),
                  [](const test::StEntry& x) { return x.name == "head.layers.1.linear2.bias"; }),
              e.end());
    });
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "'head.layers.1.linear2.bias' [" + d + "] is missing");
  }
  {
    Copy c;
    c.edit_tensors([](std::vector<test::StEntry>& e) {
      e.push_back({"head.extra.weight", "F16", {2, 2}, std::vector<uint8_t>(8, 0)});
    });
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "'head.extra.weight' [2, 2]", "not part of this architecture");
  }
  {
    Copy c;
    c.edit_tensors([](std::vector<test::StEntry>& e) {
      for (test::StEntry& x : e)
        if (x.name == "scorer.1.weight") {
          x.shape[1] /= 2;
          x.bytes.resize(x.bytes.size() / 2);
        }
    });
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "'scorer.1.weight' is [" + d + ", " + std::to_string(fixture_hidden() / 2) + "]",
                 "needs [" + d + ", " + d + "]");
  }
  {
    Copy c;  // the temperature buffer is required (upstream's strict load)
    c.edit_tensors([](std::vector<test::StEntry>& e) {
      e.erase(std::remove_if(e.begin(), e.end(),
                             [](const test::StEntry& x) { return x.name == "temperature"; }),
              e.end());
    });
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "'temperature' [3] is missing");
  }
  {
    Copy c;  // an integer weight
    c.edit_tensors([](std::vector<test::StEntry>& e) {
      for (test::StEntry& x : e)
        if (x.name == "type_emb.weight") x.dtype = "I16";
    });
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "'type_emb.weight' is I16");
  }
  {
    Copy c;  // two act costs: the act head must have 3 outputs
    c.set_config("act_costs", R"({"escalate": 0.5, "ask": 0.25})");
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "'act_head.2.weight' is [2, 256]", "needs [3, 256]");
  }
  {
    Copy c;  // a truncated file
    const std::string p = c.file("model.safetensors");
    std::string bytes = test::read_text(p);
    bytes.resize(bytes.size() - 100);
    test::write_text(p, bytes);
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kFileOffsetOutOfBounds,
                 "model.safetensors");
  }
}

TEST_CASE("laya import: rl_agent_config.json, encoder config and tokenizer errors") {
  struct Case {
    const char* key;
    const char* json;  // "" removes the key
    const char* part;
  };
  const Case cases[] = {
      {"head_layers", "", "\"head_layers\" is missing"},
      {"encoder", "", "\"encoder\" is missing"},
      {"head_layers", "1.5", "\"head_layers\" must be an integer"},
      {"head_layers", "true", "\"head_layers\" must be an integer"},
      {"max_len", "0", "must be positive"},
      {"temperature", "[1, 2]", "list of 3"},
      {"temperature", "1.0", "list of 3"},
      {"temperature_by_options", "[1]", "bucket -> float"},
      {"act_costs", "3", "object or a list"},
      {"option_layout", "\"parallel\"", "\"parallel\", which this runtime does not implement"},
      {"option_layout", "\"diagonal\"", "\"sequential\" or \"parallel\""},
  };
  for (const Case& k : cases) {
    const std::string key = k.key, value = k.json;
    CAPTURE(key);
    CAPTURE(value);
    Copy c;
    c.set_config(k.key, k.json);
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument, k.part);
  }
  {
    Copy c;  // values upstream's clamp reads as "not a number" become NaN (-> 1.0 there)
    c.set_config("temperature", R"([true, " 2.5 ", null])");
    c.set_config("temperature_by_options", R"({"choice:2": "abc", "noul:2": 3})");
    Result<ir::Graph> g = import_laya(c.dir, quick());
    REQUIRE_MESSAGE(g.is_ok(), g.status().to_string());
    const ir::DecisionConfig& d = g->meta.decision;
    CHECK(std::isnan(d.temperature[0]));
    CHECK(d.temperature[1] == 2.5f);
    CHECK(std::isnan(d.temperature[2]));
    REQUIRE(d.temperature_by_options.size() == 2);
    CHECK(std::isnan(d.temperature_by_options[0].second));
    CHECK(d.temperature_by_options[1].second == 3.0f);
  }
  {
    Copy c;
    std::filesystem::remove(c.file("encoder/config.json"));
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "encoder/config.json is missing");
  }
  {
    Copy c;  // a RoPE type this runtime does not implement
    std::string cfg = test::read_text(c.file("encoder/config.json"));
    const size_t at = cfg.find("\"default\"");
    REQUIRE(at != std::string::npos);
    cfg.replace(at, 9, "\"yarn\"");
    test::write_text(c.file("encoder/config.json"), cfg);
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument, "rope_type",
                 "yarn");
  }
  {
    Copy c;
    std::filesystem::remove_all(c.file("tokenizer"));
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "tokenizer/ is missing");
  }
  {
    Copy c;  // a special token the vocabulary lacks
    test::write_text(c.file("tokenizer/tokenizer_config.json"),
                     R"({"cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                         "mask_token": "<nope>"})");
    CHECK_STATUS(import_laya(c.dir, quick()).status(), StatusCode::kInvalidArgument,
                 "mask_token \"<nope>\" is not in the tokenizer's vocabulary");
  }
  {
    Copy c;  // special_tokens_map.json overrides tokenizer_config.json
    test::write_text(c.file("tokenizer/special_tokens_map.json"), R"({"pad_token": "[CLS]"})");
    Result<ir::Graph> g = import_laya(c.dir, quick());
    REQUIRE(g.is_ok());
    CHECK(prop(*g, "tokenizer.pad_id") == prop(*g, "tokenizer.cls_id"));
  }
}

TEST_CASE("checkpoint detection") {
  CHECK(*detect_checkpoint(test::fixtures_dir() + "/" + kTiny) == CheckpointKind::kLaya);
  test::TempDir d;
  CHECK_STATUS(detect_checkpoint(d.path).status(), StatusCode::kInvalidArgument, "neither");
  test::write_text(d.file("config.json"), R"({"model_type": "gpt2"})");
  CHECK_STATUS(detect_checkpoint(d.path).status(), StatusCode::kInvalidArgument, "\"gpt2\"");
  test::write_text(d.file("config.json"), R"({"model_type": "bert"})");
  CHECK(*detect_checkpoint(d.path) == CheckpointKind::kBert);
  test::write_text(d.file("config.json"), R"({"model_type": "modernbert"})");
  CHECK(*detect_checkpoint(d.path) == CheckpointKind::kModernBert);
  CHECK(detect_checkpoint(d.file("nope")).status().code() == StatusCode::kIoError);
}
