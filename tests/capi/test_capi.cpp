// The C API (include/laya/laya.h) through the library as installed (liblaya.so): every function,
// every status code a caller can meet and the state each failure leaves (the context usable, its
// results cleared), the buffer convention, the typed view against the JSON, batches against single
// bodies, the decoder calls (schema decisions, generation with its callbacks, scoring, tokens),
// and 8 threads with 8 contexts on one model answering exactly as one thread does.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "include/laya/laya.h"
#include "runtime/text/json.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string tiny_laya() {
  return env("LAYA_TINY_LAYA");
}
std::string tiny_gguf() {
  return env("LAYA_TINY_CHAT_GGUF");
}
std::string example(const char* name) {
  return read(env("LAYA_SOURCE_ROOT") + "/examples/" + name);
}

laya_model* open(const std::string& path, laya_model_params p = laya_model_default_params()) {
  laya_model* m = nullptr;
  laya_error err;
  const laya_status s = laya_model_open_file(path.c_str(), &p, &m, &err);
  REQUIRE_MESSAGE(s == LAYA_OK, err.message);
  return m;
}

// A context on regions of its own.
struct Ctx {
  laya_context* ctx = nullptr;
  std::vector<void*> mem;
  laya_status status = LAYA_OK;
  laya_error err = {};
  Ctx(laya_model* m, const laya_context_limits* lim) {
    laya_memory_requirements req = laya_memory_requirements_init();
    status = laya_context_requirements(m, lim, &req, &err);
    if (status != LAYA_OK) return;
    laya_region regions[LAYA_REGION_COUNT];
    for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
      const size_t a = static_cast<size_t>(req.alignment[r]);
      const size_t n = (static_cast<size_t>(req.size[r]) + a - 1) / a * a;
      void* p = n ? std::aligned_alloc(a, n) : nullptr;
      mem.push_back(p);
      regions[r] = {p, n};
    }
    status = laya_context_create(m, lim, regions, &ctx, &err);
  }
  ~Ctx() {
    laya_context_destroy(ctx);
    for (void* p : mem) std::free(p);
  }
  // laya_decide into a string (the size query, then the copy).
  laya_status decide(const std::string& body, std::string* out) {
    size_t n = 0;
    const laya_status s = laya_decide(ctx, body.data(), body.size(), nullptr, 0, &n);
    if (s != LAYA_OK) return s;
    out->assign(n + 1, '\0');
    REQUIRE(laya_result_json(ctx, out->data(), out->size(), &n) == LAYA_OK);
    out->resize(n);
    return s;
  }
};

TEST_CASE("version, ABI and status strings") {
  CHECK(std::string(laya_version()) == LAYA_VERSION_STRING);
  CHECK(laya_abi_version() == LAYA_ABI_VERSION);
  std::set<std::string> seen;
  for (int s = LAYA_OK; s <= LAYA_E_INTERNAL; ++s) {
    const char* t = laya_status_string(static_cast<laya_status>(s));
    REQUIRE(t != nullptr);
    seen.insert(t);
  }
  CHECK(seen.size() == LAYA_E_INTERNAL + 1);  // every code has its own text
  CHECK(std::string(laya_status_string(static_cast<laya_status>(999))) == "unknown status");
}

TEST_CASE("opening models: files, memory, every refusal with a message") {
  laya_model* m = nullptr;
  laya_error err;
  laya_model_params p = laya_model_default_params();
  CHECK(laya_model_open_file(nullptr, &p, &m, &err) == LAYA_E_INVALID_ARGUMENT);
  CHECK(laya_model_open_file(tiny_laya().c_str(), &p, nullptr, &err) == LAYA_E_INVALID_ARGUMENT);
  CHECK(laya_model_open_file("/nonexistent/m.laya", &p, &m, &err) == LAYA_E_IO);
  CHECK(err.code == LAYA_E_IO);
  CHECK(std::string(err.message).find("/nonexistent/m.laya") != std::string::npos);
  CHECK(m == nullptr);
  // Not a model, and a truncated one.
  const std::string json_path = env("LAYA_SOURCE_ROOT") + "/examples/support-ticket.json";
  CHECK(laya_model_open_file(json_path.c_str(), &p, &m, &err) == LAYA_E_MODEL_INVALID);
  const std::string bytes = read(tiny_laya());
  alignas(64) static char image[8 << 20];
  REQUIRE(bytes.size() < sizeof image);
  std::memcpy(image, bytes.data(), bytes.size());
  CHECK(laya_model_open_memory(image, bytes.size() / 2, &p, &m, &err) == LAYA_E_MODEL_INVALID);
  CHECK(laya_model_open_memory(image + 1, bytes.size() - 1, &p, &m, &err) ==
        LAYA_E_INVALID_ARGUMENT);  // misaligned
  CHECK(laya_model_open_memory(nullptr, 10, &p, &m, &err) == LAYA_E_INVALID_ARGUMENT);
  // Structs of another size or ABI.
  laya_model_params bad = p;
  bad.struct_size = sizeof bad + 8;
  CHECK(laya_model_open_file(tiny_laya().c_str(), &bad, &m, &err) == LAYA_E_ABI_MISMATCH);
  CHECK(std::string(err.message).find("struct_size") != std::string::npos);
  bad = p;
  bad.abi_version = LAYA_ABI_VERSION + 1;
  CHECK(laya_model_open_file(tiny_laya().c_str(), &bad, &m, &err) == LAYA_E_ABI_MISMATCH);
  CHECK(std::string(err.message).find("ABI") != std::string::npos);
  bad = p;
  bad.n_threads = -1;
  CHECK(laya_model_open_file(tiny_laya().c_str(), &bad, &m, &err) == LAYA_E_INVALID_ARGUMENT);
  bad = p;
  bad.backends = "cpu,";
  CHECK(laya_model_open_file(tiny_laya().c_str(), &bad, &m, &err) == LAYA_E_INVALID_ARGUMENT);
  // From memory, zero-copy, with the trusted verification level; NULL params are the defaults.
  laya_model_params trusted = p;
  trusted.verify = LAYA_VERIFY_TRUSTED;
  REQUIRE(laya_model_open_memory(image, bytes.size(), &trusted, &m, &err) == LAYA_OK);
  CHECK(err.code == LAYA_OK);
  laya_model_info info = laya_model_info_init();
  REQUIRE(laya_model_info_get(m, &info) == LAYA_OK);
  CHECK(info.kind == LAYA_MODEL_ENCODER);
  CHECK(std::string(info.architecture) == "laya");
  CHECK(info.parameters > 0);
  CHECK(info.max_len > 0);
  // tests/fixtures/laya-tiny-modernbert/encoder/config.json
  CHECK(info.layers == 4);
  CHECK(info.hidden_size == 48);
  CHECK(info.vocab_size == 1024);
  laya_model_close(m);
  REQUIRE(laya_model_open_file(tiny_laya().c_str(), nullptr, &m, nullptr) == LAYA_OK);
  laya_model_close(m);
  laya_model_close(nullptr);  // a no-op
  CHECK(laya_model_info_get(nullptr, &info) == LAYA_E_INVALID_ARGUMENT);
  laya_model_info small = info;
  small.struct_size = 8;
  m = open(tiny_laya());
  CHECK(laya_model_info_get(m, &small) == LAYA_E_ABI_MISMATCH);
  laya_model_close(m);
}

TEST_CASE("the log callback hears the open") {
  struct Log {
    int calls = 0;
    std::string last;
  } log;
  laya_model_params p = laya_model_default_params();
  p.log = [](void* user, laya_log_level level, const char* message) {
    auto* l = static_cast<Log*>(user);
    ++l->calls;
    l->last = message;
    CHECK(level == LAYA_LOG_INFO);
  };
  p.log_user = &log;
  laya_model* m = open(tiny_laya(), p);
  CHECK(log.calls == 1);
  CHECK(log.last.find("opened") != std::string::npos);
  laya_model_close(m);
}

TEST_CASE("contexts: requirements, regions, limits") {
  laya_model* m = open(tiny_laya());
  laya_error err;
  laya_memory_requirements req = laya_memory_requirements_init();
  REQUIRE(laya_context_requirements(m, nullptr, &req, &err) == LAYA_OK);
  CHECK(req.size[LAYA_REGION_WORK] > 0);
  CHECK(req.size[LAYA_REGION_ACTIVATIONS] > 0);
  CHECK(req.size[LAYA_REGION_KV] == 0);  // an encoder
  for (int r = 0; r < LAYA_REGION_COUNT; ++r) CHECK(req.alignment[r] >= 64);
  CHECK(req.limits.max_request_bytes == (2u << 20));
  CHECK(req.limits.max_tokens > 0);
  CHECK(laya_context_requirements(nullptr, nullptr, &req, &err) == LAYA_E_INVALID_ARGUMENT);
  laya_context_limits lim = laya_context_default_limits();
  lim.max_rows = -1;
  CHECK(laya_context_requirements(m, &lim, &req, &err) == LAYA_E_INVALID_ARGUMENT);
  lim = laya_context_default_limits();
  lim.max_options = 1 << 20;
  CHECK(laya_context_requirements(m, &lim, &req, &err) == LAYA_E_INVALID_ARGUMENT);
  CHECK(std::string(err.message).find("max_options") != std::string::npos);
  // Regions too small, misaligned, missing.
  lim = laya_context_default_limits();
  REQUIRE(laya_context_requirements(m, &lim, &req, &err) == LAYA_OK);
  std::vector<void*> mem;
  laya_region regions[LAYA_REGION_COUNT];
  for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
    const size_t n = static_cast<size_t>(req.size[r]) + 128;
    mem.push_back(std::aligned_alloc(64, (n + 63) / 64 * 64));
    regions[r] = {mem.back(), static_cast<size_t>(req.size[r])};
  }
  laya_context* ctx = nullptr;
  laya_region small[LAYA_REGION_COUNT];
  std::memcpy(small, regions, sizeof small);
  small[LAYA_REGION_WORK].size -= 64;
  CHECK(laya_context_create(m, &lim, small, &ctx, &err) == LAYA_E_MEMORY);
  CHECK(std::string(err.message).find("work") != std::string::npos);
  CHECK(ctx == nullptr);
  std::memcpy(small, regions, sizeof small);
  small[LAYA_REGION_ACTIVATIONS].data = static_cast<char*>(small[LAYA_REGION_ACTIVATIONS].data) + 8;
  CHECK(laya_context_create(m, &lim, small, &ctx, &err) == LAYA_E_INVALID_ARGUMENT);
  CHECK(laya_context_create(m, &lim, nullptr, &ctx, &err) == LAYA_E_INVALID_ARGUMENT);
  CHECK(laya_context_create(nullptr, &lim, regions, &ctx, &err) == LAYA_E_INVALID_ARGUMENT);
  REQUIRE(laya_context_create(m, &lim, regions, &ctx, &err) == LAYA_OK);
  // The context lives at the start of the work region.
  CHECK(static_cast<void*>(ctx) == regions[LAYA_REGION_WORK].data);
  laya_context_stats st = laya_context_stats_init();
  REQUIRE(laya_context_stats_get(ctx, &st) == LAYA_OK);
  CHECK(st.calls == 0);
  CHECK(st.arena_bytes > 0);
  CHECK(std::string(laya_context_error(ctx)).empty());
  laya_context_destroy(ctx);
  laya_context_destroy(nullptr);
  for (void* p : mem) std::free(p);
  laya_model_close(m);
}

TEST_CASE("decide: the JSON, the buffer convention, refusals and what they leave") {
  laya_model* m = open(tiny_laya());
  Ctx c(m, nullptr);
  REQUIRE(c.status == LAYA_OK);
  const std::string body = example("support-ticket.json");
  std::string json;
  REQUIRE(c.decide(body, &json) == LAYA_OK);
  laya::Result<laya::json::Value> v = laya::json::parse(json);
  REQUIRE(v.is_ok());
  CHECK(v->find("answers")->members().size() == 3);
  // Too small a buffer: the bytes needed, and the result stays for laya_result_json.
  char tiny[8];
  size_t n = 0;
  CHECK(laya_decide(c.ctx, body.data(), body.size(), tiny, sizeof tiny, &n) ==
        LAYA_E_BUFFER_TOO_SMALL);
  CHECK(n == json.size());
  CHECK(tiny[0] == '\0');
  std::string again(n + 1, '\0');
  REQUIRE(laya_result_json(c.ctx, again.data(), again.size(), &n) == LAYA_OK);
  again.resize(n);
  CHECK(again == json);
  // The typed view matches the JSON.
  REQUIRE(laya_result_states(c.ctx) == 1);
  REQUIRE(laya_result_questions(c.ctx) == 3);
  laya_answer a = laya_answer_init();
  REQUIRE(laya_result_answer(c.ctx, 0, 0, &a) == LAYA_OK);
  CHECK(std::string(a.question_id) == "department");
  CHECK(a.type == LAYA_CHOICE);
  CHECK(a.n_options == 3);
  const laya::json::Value& dep = *v->find("answers")->find("department");
  CHECK(std::string(a.choice_label) == dep.find("choice")->as_string());
  double sum = 0;
  for (int i = 0; i < a.n_options; ++i) {
    const char* label = nullptr;
    REQUIRE(laya_result_option(c.ctx, 0, static_cast<size_t>(i), &label) == LAYA_OK);
    const double p = a.probabilities[i];
    sum += p;
    CHECK(std::fabs(p - dep.find("probabilities")->find(label)->as_double()) <= 5e-5);
  }
  CHECK(std::fabs(sum - 1.0) < 1e-5);
  CHECK(std::fabs(a.confidence - dep.find("confidence")->as_double()) <= 5e-5);
  CHECK(a.has_action == 1);
  CHECK(a.abstention == LAYA_ABSTENTION_NONE);
  REQUIRE(laya_result_answer(c.ctx, 0, 1, &a) == LAYA_OK);
  CHECK(a.type == LAYA_SCORE);
  CHECK(a.choice == -1);
  REQUIRE(laya_result_answer(c.ctx, 0, 2, &a) == LAYA_OK);
  CHECK(a.type == LAYA_NOUL);
  CHECK(std::fabs(a.noul - a.probabilities[1]) < 1e-7);
  CHECK(laya_result_answer(c.ctx, 0, 3, &a) == LAYA_E_INVALID_ARGUMENT);
  CHECK(laya_result_answer(c.ctx, 1, 0, &a) == LAYA_E_INVALID_ARGUMENT);
  laya_usage u = laya_usage_init();
  REQUIRE(laya_result_usage(c.ctx, 0, &u) == LAYA_OK);
  CHECK(u.input_tokens == *v->find("usage")->find("input_tokens")->as_int64());
  // Refusals: the code of each class, the message, no results, the context still answers.
  struct Case {
    const char* body;
    laya_status want;
    const char* says;
  };
  for (const Case& k : {Case{"not json", LAYA_E_REQUEST_INVALID, "Expecting value"},
                        Case{"{\"questions\": {}}", LAYA_E_REQUEST_INVALID, "state"},
                        Case{"{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"nope\", "
                             "\"instructions\": \"?\"}}}",
                             LAYA_E_REQUEST_UNPROCESSABLE, "type"},
                        Case{"{\"state\": \"x\", \"hooks\": 1, \"questions\": {}}",
                             LAYA_E_REQUEST_UNPROCESSABLE, "hooks"}}) {
    CAPTURE(k.body);
    CHECK(laya_decide(c.ctx, k.body, std::strlen(k.body), nullptr, 0, &n) == k.want);
    CHECK(std::string(laya_context_error(c.ctx)).find(k.says) != std::string::npos);
    CHECK(laya_result_states(c.ctx) == 0);
    CHECK(laya_result_json(c.ctx, tiny, sizeof tiny, &n) == LAYA_OK);
    CHECK(n == 0);
  }
  const std::string huge(3 << 20, ' ');
  CHECK(laya_decide(c.ctx, huge.data(), huge.size(), nullptr, 0, &n) == LAYA_E_REQUEST_TOO_LARGE);
  CHECK(laya_decide(nullptr, "{}", 2, nullptr, 0, &n) == LAYA_E_INVALID_ARGUMENT);
  CHECK(laya_decide(c.ctx, nullptr, 5, nullptr, 0, &n) == LAYA_E_INVALID_ARGUMENT);
  std::string after;
  REQUIRE(c.decide(body, &after) == LAYA_OK);
  CHECK(after == json);
  CHECK(std::string(laya_context_error(c.ctx)).empty());
  // Encoder-only model: decoder calls are refused.
  laya_schema_request sr = laya_schema_request_init();
  sr.state = "{}";
  sr.schema = "{\"type\": \"boolean\"}";
  CHECK(laya_decide_schema(c.ctx, &sr, nullptr, 0, &n) == LAYA_E_UNSUPPORTED);
  laya_generate_params gp = laya_generate_params_init();
  gp.prompt = "hi";
  CHECK(laya_generate(c.ctx, &gp, nullptr, 0, &n) == LAYA_E_UNSUPPORTED);
  // Tokens of an encoder: its [CLS] ... [SEP] template.
  int32_t ids[64];
  size_t nid = 0;
  REQUIRE(laya_tokenize(c.ctx, "hello world", 11, 1, ids, 64, &nid) == LAYA_OK);
  CHECK(nid >= 4);
  CHECK(laya_tokenize(c.ctx, "hello world", 11, 1, ids, 1, &nid) == LAYA_E_BUFFER_TOO_SMALL);
  std::string text(64, '\0');
  REQUIRE(laya_detokenize(c.ctx, ids, nid, 1, text.data(), text.size(), &n) == LAYA_OK);
  CHECK(std::string(text.c_str()).find("hello world") != std::string::npos);
  laya_context_stats st = laya_context_stats_init();
  REQUIRE(laya_context_stats_get(c.ctx, &st) == LAYA_OK);
  CHECK(st.arena_overflows == 0);
  CHECK(st.calls > 10);
  laya_model_close(m);
}

TEST_CASE("decide_batch: every result byte-identical to its body alone, statuses per body") {
  laya_model* m = open(tiny_laya());
  laya_context_limits lim = laya_context_default_limits();
  lim.max_batch = 4;
  Ctx c(m, &lim);
  REQUIRE(c.status == LAYA_OK);
  const std::string a = example("support-ticket.json");
  const std::string b =
      "{\"states\": [\"the printer is on fire\", {\"x\": [1, 2]}], \"questions\": {\"q\": "
      "{\"type\": \"noul\", \"instructions\": \"Is it urgent?\"}}}";
  const std::string bad = "{\"state\": 1}";
  std::string ja, jb;
  REQUIRE(c.decide(a, &ja) == LAYA_OK);
  REQUIRE(c.decide(b, &jb) == LAYA_OK);
  laya_batch_item items[3] = {{b.data(), b.size(), LAYA_OK, 0, 0},
                              {bad.data(), bad.size(), LAYA_OK, 0, 0},
                              {a.data(), a.size(), LAYA_OK, 0, 0}};
  size_t n = 0;
  REQUIRE(laya_decide_batch(c.ctx, items, 3, nullptr, 0, &n) == LAYA_OK);
  std::vector<char> out(n);
  REQUIRE(laya_decide_batch(c.ctx, items, 3, out.data(), out.size(), &n) == LAYA_OK);
  CHECK(items[0].status == LAYA_OK);
  CHECK(items[1].status == LAYA_E_REQUEST_INVALID);
  CHECK(items[2].status == LAYA_OK);
  CHECK(std::string(out.data() + items[0].json_offset, items[0].json_len) == jb);
  CHECK(std::string(out.data() + items[2].json_offset, items[2].json_len) == ja);
  // A failed body's message in place of its JSON: the one laya_decide gives it alone.
  std::string jbad;
  CHECK(c.decide(bad, &jbad) == LAYA_E_REQUEST_INVALID);
  const std::string alone = laya_context_error(c.ctx);
  CHECK(!alone.empty());
  REQUIRE(laya_decide_batch(c.ctx, items, 3, out.data(), out.size(), &n) == LAYA_OK);
  CHECK(std::string(out.data() + items[1].json_offset, items[1].json_len) == alone);
  std::vector<char> small(n - 1);
  CHECK(laya_decide_batch(c.ctx, items, 3, small.data(), small.size(), &n) ==
        LAYA_E_BUFFER_TOO_SMALL);
  laya_batch_item five[5] = {};
  for (laya_batch_item& it : five) it = {a.data(), a.size(), LAYA_OK, 0, 0};
  CHECK(laya_decide_batch(c.ctx, five, 5, nullptr, 0, &n) == LAYA_E_LIMIT);
  laya_model_close(m);
}

TEST_CASE("detect_language: upstream's analyse of a state, no model") {
  const std::string state = "\"hello there my friend\"";
  size_t n = 0;
  laya_error err;
  REQUIRE(laya_detect_language(state.data(), state.size(), 0, nullptr, 0, &n, &err) == LAYA_OK);
  std::vector<char> out(n + 1);
  REQUIRE(laya_detect_language(state.data(), state.size(), 0, out.data(), out.size(), &n, &err) ==
          LAYA_OK);
  laya::Result<laya::json::Value> v = laya::json::parse(std::string_view(out.data(), n));
  REQUIRE(v.is_ok());
  CHECK(v->find("language")->as_string() == "en");
  CHECK(v->find("diagnostic") == nullptr);
  REQUIRE(laya_detect_language(state.data(), state.size(), 1, nullptr, 0, &n, &err) == LAYA_OK);
  std::vector<char> small(n);  // no room for the NUL
  CHECK(laya_detect_language(state.data(), state.size(), 1, small.data(), small.size(), &n, &err) ==
        LAYA_E_BUFFER_TOO_SMALL);
  CHECK(laya_detect_language("{\"a\":", 5, 0, nullptr, 0, &n, &err) == LAYA_E_REQUEST_INVALID);
  CHECK(err.code == LAYA_E_REQUEST_INVALID);
  CHECK(std::string(err.message).rfind("state", 0) == 0);
  CHECK(laya_detect_language(nullptr, 3, 0, nullptr, 0, &n, nullptr) == LAYA_E_INVALID_ARGUMENT);
}

TEST_CASE("request rules: upstream laya-serve's limits by default, the SDK's on request") {
  laya_model* m = open(tiny_laya());
  Ctx c(m, nullptr);
  REQUIRE(c.status == LAYA_OK);
  // 65 questions: past the server's 64; the SDK answers them all.
  std::string many = "{\"state\": \"the printer is on fire\", \"questions\": {";
  for (int i = 0; i < 65; ++i)
    many += (i ? ", " : "") + std::string("\"q") + std::to_string(i) +
            "\": {\"type\": \"noul\", \"instructions\": \"Urgent?\"}";
  many += "}}";
  const std::string empty = "{\"states\": [], \"questions\": {}}";
  // A null score level: the server's check and message, then the SDK's own.
  const std::string null_level =
      "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"score\", \"instructions\": "
      "\"How?\", \"criteria\": [\"low\", null]}}}";
  std::string out;
  CHECK(c.decide(many, &out) == LAYA_E_REQUEST_TOO_LARGE);
  CHECK(std::string(laya_context_error(c.ctx)) == "too many questions (65 > 64)");
  CHECK(c.decide(empty, &out) == LAYA_E_REQUEST_INVALID);
  CHECK(c.decide(null_level, &out) == LAYA_E_REQUEST_UNPROCESSABLE);
  CHECK(std::string(laya_context_error(c.ctx)).rfind("score question 'q' has a null level", 0) ==
        0);
  REQUIRE(laya_context_set_rules(c.ctx, LAYA_RULES_SDK) == LAYA_OK);
  REQUIRE(c.decide(many, &out) == LAYA_OK);
  laya::Result<laya::json::Value> v = laya::json::parse(out);
  REQUIRE(v.is_ok());
  CHECK(v->find("answers")->members().size() == 65);
  REQUIRE(c.decide(empty, &out) == LAYA_OK);
  CHECK(out == "[]");
  CHECK(c.decide(null_level, &out) == LAYA_E_REQUEST_UNPROCESSABLE);
  CHECK(std::string(laya_context_error(c.ctx)) ==
        "question 'q': score level 1 is null; give every level a description, index 0 first");
  // Back to the server's rules; anything else is refused.
  REQUIRE(laya_context_set_rules(c.ctx, LAYA_RULES_SERVER) == LAYA_OK);
  CHECK(c.decide(many, &out) == LAYA_E_REQUEST_TOO_LARGE);
  CHECK(laya_context_set_rules(c.ctx, static_cast<laya_request_rules>(2)) ==
        LAYA_E_INVALID_ARGUMENT);
  CHECK(laya_context_set_rules(nullptr, LAYA_RULES_SDK) == LAYA_E_INVALID_ARGUMENT);
  laya_model_close(m);
}

TEST_CASE("decoders: schema decisions, fields, generation, callbacks, scoring, limits") {
  laya_model* m = open(tiny_gguf());
  laya_model_info info = laya_model_info_init();
  REQUIRE(laya_model_info_get(m, &info) == LAYA_OK);
  CHECK(info.kind == LAYA_MODEL_DECODER);
  CHECK(std::string(info.chat_format) == "chatml");
  CHECK(info.layers == 2);  // tests/fixtures/gguf/tiny-llama.gguf
  CHECK(info.hidden_size == 64);
  laya_context_limits lim = laya_context_default_limits();
  lim.kv_cells = 2048;
  Ctx c(m, &lim);
  REQUIRE_MESSAGE(c.status == LAYA_OK, c.err.message);
  // A schema decision: as the body would give it, and field by field through the typed call.
  std::string json;
  REQUIRE(c.decide(example("industrial-alarm.json"), &json) == LAYA_OK);
  laya::Result<laya::json::Value> v = laya::json::parse(json);
  REQUIRE(v.is_ok());
  REQUIRE(laya_result_states(c.ctx) == 1);
  laya_schema_result res = laya_schema_result_init();
  REQUIRE(laya_result_schema(c.ctx, 0, &res) == LAYA_OK);
  CHECK(laya::json::parse(res.decision_json).is_ok());
  CHECK(*laya::json::parse(res.decision_json) == *v->find("decision"));
  CHECK(res.n_fields == v->find("fields")->members().size());
  for (size_t f = 0; f < res.n_fields; ++f) {
    laya_field fld = laya_field_init();
    REQUIRE(laya_result_field(c.ctx, 0, f, &fld) == LAYA_OK);
    const laya::json::Value* want = v->find("fields")->find(fld.path);
    REQUIRE(want != nullptr);
    double sum = 0;
    for (int32_t o = 0; o < fld.n_options; ++o) {
      sum += fld.probabilities[o];
      CHECK(std::fabs(fld.probabilities[o] -
                      want->find("probabilities")->find(fld.options[o])->as_double()) <= 5e-5);
    }
    CHECK(std::fabs(sum - 1.0) < 1e-9);
  }
  laya_field fld = laya_field_init();
  CHECK(laya_result_field(c.ctx, 0, res.n_fields, &fld) == LAYA_E_INVALID_ARGUMENT);
  laya_schema_request sr = laya_schema_request_init();
  sr.state = "the tank is full";
  sr.state_is_text = 1;
  sr.schema =
      "{\"type\": \"object\", \"properties\": {\"open_valve\": {\"type\": \"boolean\"}}, "
      "\"required\": [\"open_valve\"]}";
  size_t n = 0;
  REQUIRE(laya_decide_schema(c.ctx, &sr, nullptr, 0, &n) == LAYA_OK);
  REQUIRE(laya_result_schema(c.ctx, 0, &res) == LAYA_OK);
  CHECK(res.n_fields == 1);
  CHECK(res.fallback == 0);
  sr.fallback = "{\"open_valve\": \"yes\"}";  // not schema-valid
  CHECK(laya_decide_schema(c.ctx, &sr, nullptr, 0, &n) == LAYA_E_REQUEST_UNPROCESSABLE);
  CHECK(laya_result_states(c.ctx) == 0);
  sr.fallback = "{\"open_valve\": false}";
  sr.max_tokens = 1;
  REQUIRE(laya_decide_schema(c.ctx, &sr, nullptr, 0, &n) == LAYA_OK);
  REQUIRE(laya_result_schema(c.ctx, 0, &res) == LAYA_OK);
  CHECK(res.fallback == 1);
  sr.fallback = nullptr;
  CHECK(laya_decide_schema(c.ctx, &sr, nullptr, 0, &n) == LAYA_E_LIMIT);
  // Streaming a schema decision: the pieces are the decision's text; stopping aborts the call
  // and leaves the context usable.
  struct Pieces {
    std::string text;
    int calls = 0, stop_at = 0;
  } pieces;
  auto on_piece = [](void* user, int32_t, const char* piece, size_t len) {
    auto* p = static_cast<Pieces*>(user);
    p->text.append(piece, len);
    return ++p->calls == p->stop_at ? 1 : 0;
  };
  REQUIRE(laya_context_set_stream(c.ctx, on_piece, nullptr, &pieces) == LAYA_OK);
  sr.fallback = nullptr;
  sr.max_tokens = 0;
  REQUIRE(laya_decide_schema(c.ctx, &sr, nullptr, 0, &n) == LAYA_OK);
  REQUIRE(laya_result_schema(c.ctx, 0, &res) == LAYA_OK);
  REQUIRE(res.fallback == 0);
  CHECK(pieces.calls >= 3);
  INFO(pieces.text);
  REQUIRE(laya::json::parse(pieces.text).is_ok());
  CHECK(*laya::json::parse(pieces.text) == *laya::json::parse(res.decision_json));
  pieces = Pieces();
  pieces.stop_at = 2;
  CHECK(c.decide(example("industrial-alarm.json"), &json) == LAYA_E_ABORTED);
  CHECK(pieces.calls == 2);
  CHECK(laya_result_states(c.ctx) == 0);
  REQUIRE(laya_context_set_stream(
              c.ctx, nullptr, [](void*) { return 1; }, nullptr) == LAYA_OK);
  CHECK(c.decide(example("industrial-alarm.json"), &json) == LAYA_E_ABORTED);
  REQUIRE(laya_context_set_stream(c.ctx, nullptr, nullptr, nullptr) == LAYA_OK);
  REQUIRE(c.decide(example("industrial-alarm.json"), &json) == LAYA_OK);
  CHECK(laya_context_set_stream(nullptr, nullptr, nullptr, nullptr) == LAYA_E_INVALID_ARGUMENT);
  // Generation: streaming callback (stop after 3), abort, the result accessors.
  struct Stream {
    int tokens = 0;
    std::string text;
  } stream;
  laya_generate_params gp = laya_generate_params_init();
  const laya_message msgs[2] = {{"system", "Reply briefly."}, {"user", "hello"}};
  gp.messages = msgs;
  gp.n_messages = 2;
  gp.max_tokens = 10;
  gp.on_token = [](void* user, int32_t, const char* piece, size_t len) {
    auto* s = static_cast<Stream*>(user);
    s->text.append(piece, len);
    return ++s->tokens == 3 ? 1 : 0;
  };
  gp.on_token_user = &stream;
  REQUIRE(laya_generate(c.ctx, &gp, nullptr, 0, &n) == LAYA_OK);
  laya_generation g = laya_generation_init();
  REQUIRE(laya_result_generation(c.ctx, &g) == LAYA_OK);
  CHECK(stream.tokens == 3);
  CHECK(g.n_ids == 3);
  CHECK(std::string(g.finish_reason) == "callback");
  gp.on_token = nullptr;
  gp.abort = [](void*) { return 1; };
  CHECK(laya_generate(c.ctx, &gp, nullptr, 0, &n) == LAYA_E_ABORTED);
  CHECK(laya_result_generation(c.ctx, &g) == LAYA_E_INVALID_ARGUMENT);  // nothing kept
  gp.abort = nullptr;
  gp.max_tokens = 5000;
  CHECK(laya_generate(c.ctx, &gp, nullptr, 0, &n) == LAYA_E_LIMIT);
  gp.max_tokens = 4;
  gp.prompt = "two forms";
  CHECK(laya_generate(c.ctx, &gp, nullptr, 0, &n) == LAYA_E_INVALID_ARGUMENT);
  // Tokens and scoring.
  int32_t ids[64];
  size_t nid = 0;
  REQUIRE(laya_tokenize(c.ctx, "hello", 5, 0, ids, 64, &nid) == LAYA_OK);
  REQUIRE(nid > 0);
  struct Scores {
    size_t calls = 0, vocab = 0;
  } sc;
  REQUIRE(laya_score(
              c.ctx, ids, nid,
              [](void* user, size_t, const float*, size_t vocab) {
                auto* s = static_cast<Scores*>(user);
                ++s->calls;
                s->vocab = vocab;
              },
              &sc) == LAYA_OK);
  CHECK(sc.calls == nid);
  CHECK(sc.vocab == static_cast<size_t>(info.vocab_size));
  CHECK(laya_score(c.ctx, ids, nid, nullptr, nullptr) == LAYA_E_INVALID_ARGUMENT);
  // Sampling set on the context for laya_decide.
  laya_sampling s = {0.7f, 20, 0.9f, 3};
  CHECK(laya_context_set_sampling(c.ctx, &s) == LAYA_OK);
  REQUIRE(c.decide(example("smart-home-hub.json"), &json) == LAYA_OK);
  CHECK(laya_context_set_sampling(c.ctx, nullptr) == LAYA_E_INVALID_ARGUMENT);
  // Compiling a schema up front; a bad one.
  laya_error err;
  CHECK(laya_model_compile_schema(m, sr.schema, std::strlen(sr.schema), &err) == LAYA_OK);
  CHECK(laya_model_compile_schema(m, "{\"type\": \"wat\"}", 15, &err) != LAYA_OK);
  CHECK(laya_model_compile_schema(m, "{", 1, &err) == LAYA_E_INVALID_ARGUMENT);
  laya_model_close(m);
}

TEST_CASE("8 threads with 8 contexts on one model answer exactly as one thread does") {
  laya_model* m = open(tiny_laya());
  std::vector<std::string> bodies = {example("support-ticket.json")};
  for (int i = 0; i < 7; ++i)
    bodies.push_back("{\"state\": \"ticket " + std::to_string(i) +
                     ": refund please\", \"questions\": {\"q\": {\"type\": \"choice\", "
                     "\"instructions\": \"Which team?\", \"criteria\": [\"billing\", \"support\", "
                     "\"sales\"]}, \"u\": {\"type\": \"noul\", \"instructions\": \"Urgent?\"}}}");
  std::vector<std::string> want(bodies.size());
  {
    Ctx c(m, nullptr);
    REQUIRE(c.status == LAYA_OK);
    for (size_t i = 0; i < bodies.size(); ++i) REQUIRE(c.decide(bodies[i], &want[i]) == LAYA_OK);
  }
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      Ctx c(m, nullptr);
      if (c.status != LAYA_OK) {
        mismatches[static_cast<size_t>(t)] = 1000;
        return;
      }
      for (int round = 0; round < 10; ++round)
        for (size_t i = 0; i < bodies.size(); ++i) {
          const size_t k = (i + static_cast<size_t>(t)) % bodies.size();
          std::string got;
          if (c.decide(bodies[k], &got) != LAYA_OK || got != want[k])
            ++mismatches[static_cast<size_t>(t)];
        }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 8; ++t) CHECK(mismatches[static_cast<size_t>(t)] == 0);
  laya_model_close(m);
}

}  // namespace

namespace {

// A call of the buffer convention into a string: the size query, then the copy.
template <class F>
laya_status into(std::string* out, F call) {
  size_t n = 0;
  laya_status s = call(nullptr, size_t{0}, &n);
  if (s != LAYA_OK) return s;
  out->assign(n + 1, '\0');
  s = call(out->data(), out->size(), &n);
  out->resize(n);
  return s;
}

laya::json::Value parsed(const std::string& text) {
  laya::Result<laya::json::Value> v = laya::json::parse(text);
  REQUIRE(v.is_ok());
  return std::move(v).value();
}

}  // namespace

TEST_CASE("route: upstream Router(...).route(...)'s recorded decisions, no model") {
  const laya::json::Value probe =
      parsed(read(env("LAYA_SOURCE_ROOT") + "/tests/fixtures/laya-router/analyse_probe.json"));
  const laya::json::Value* routes = probe.find("route");
  REQUIRE(routes != nullptr);
  REQUIRE(routes->items().size() >= 20);
  for (const laya::json::Value& c : routes->items()) {
    const std::string opts = laya::json::dump(*c.find("router_kwargs"));
    const std::string query = laya::json::dump(*c.find("route_kwargs"));
    std::string out;
    laya_error err;
    REQUIRE_MESSAGE(into(&out,
                         [&](char* o, size_t cap, size_t* n) {
                           return laya_route(opts.data(), opts.size(), query.data(), query.size(),
                                             o, cap, n, &err);
                         }) == LAYA_OK,
                    err.message);
    laya::json::Value got = parsed(out);
    REQUIRE(got.find("repo") != nullptr);
    CHECK(got.find("repo")->is_string());
    auto& mem = got.members();  // upstream's record leaves the repo out
    mem.erase(std::remove_if(mem.begin(), mem.end(), [](const auto& m) { return m.key == "repo"; }),
              mem.end());
    CHECK_MESSAGE(got == *c.find("decision"), query, " -> ", out);
  }
  // The repo: a registered checkpoint's source, a built-in's bundle subfolder.
  const std::string reg = R"({"models": {"Papers": "/data/papers.laya"}})";
  std::string out;
  laya_error err;
  auto route = [&](const std::string& o, const std::string& q) {
    return into(&out, [&](char* b, size_t cap, size_t* n) {
      return laya_route(o.data(), o.size(), q.data(), q.size(), b, cap, n, &err);
    });
  };
  REQUIRE(route(reg, R"({"state": "x", "model": "papers"})") == LAYA_OK);
  CHECK(parsed(out).find("repo")->as_string() == "/data/papers.laya");
  REQUIRE(route("", R"({"state": "Der Kunde wurde zweimal belastet"})") == LAYA_OK);
  CHECK(parsed(out).find("model")->as_string() == "multilingual");
  CHECK(parsed(out).find("repo")->as_string() == "convaiinnovations/laya/multilingual");
  // Refusals: upstream's ValueError and TypeError, and what is not JSON of the right shape.
  CHECK(route("", R"({"state": "x", "model": "nope"})") == LAYA_E_REQUEST_UNPROCESSABLE);
  CHECK(std::string(err.message).rfind("unknown model 'nope'; choose one of ['english', ", 0) == 0);
  CHECK(route(R"({"default": "nope"})", R"({"state": "x"})") == LAYA_E_REQUEST_UNPROCESSABLE);
  CHECK(route(R"({"models": {"a/b": "/x"}})", R"({"state": "x"})") == LAYA_E_REQUEST_UNPROCESSABLE);
  CHECK(std::string(err.message).rfind("invalid checkpoint name 'a/b'", 0) == 0);
  CHECK(route("", R"({"state": "x", "questions": ["a"]})") == LAYA_E_REQUEST_INVALID);
  CHECK(std::string(err.message) ==
        "questions must be a dict of question id -> definition, got list");
  CHECK(route("", R"({"state": "x", "modle": "english"})") == LAYA_E_REQUEST_INVALID);
  CHECK(route(R"({"auto_task_detection": "yes"})", R"({"state": "x"})") == LAYA_E_REQUEST_INVALID);
  CHECK(route("", R"({"state": )") == LAYA_E_REQUEST_INVALID);
  CHECK(route("", "[1]") == LAYA_E_REQUEST_INVALID);
  const std::string q = R"({"state": "hello there my friend"})";
  size_t n = 0;
  REQUIRE(laya_route(nullptr, 0, q.data(), q.size(), nullptr, 0, &n, &err) == LAYA_OK);
  std::vector<char> small(n);  // no room for the NUL
  CHECK(laya_route(nullptr, 0, q.data(), q.size(), small.data(), small.size(), &n, &err) ==
        LAYA_E_BUFFER_TOO_SMALL);
}

TEST_CASE("tournament: upstream predict_tournament's rounds, in one call or driven step by step") {
  laya_model* m = open(tiny_laya());
  {
    Ctx c(m, nullptr);
    REQUIRE(c.status == LAYA_OK);
    REQUIRE(laya_context_set_rules(c.ctx, LAYA_RULES_SDK) == LAYA_OK);
    std::string labels;
    for (int i = 0; i < 40; ++i)
      labels += (i ? ", " : "") + std::string("\"p") + std::to_string(i) + "\"";
    const std::string questions =
        R"({"p": {"type": "choice", "instructions": "Which product?", "criteria": [)" + labels +
        R"(]}, "u": {"type": "noul", "instructions": "Urgent?"}})";
    const std::string body =
        R"({"state": "I need product p17 today", "questions": )" + questions + "}";

    // Driven step by step: 40 labels in groups of at most 16 are 3 groups of 13, 13 and 14, in
    // criteria order; their 3 winners are the final call's choice.
    laya_tournament* t = nullptr;
    laya_error err;
    REQUIRE(laya_tournament_create(questions.data(), questions.size(), 16, &t, &err) == LAYA_OK);
    std::string next, reply;
    int32_t final_call = -1;
    REQUIRE(into(&next, [&](char* o, size_t cap, size_t* n) {
              return laya_tournament_next(t, o, cap, n, &final_call);
            }) == LAYA_OK);
    CHECK(final_call == 0);
    laya::json::Value round = parsed(next);
    REQUIRE(round.members().size() == 3);
    const size_t sizes[] = {13, 13, 14};
    for (size_t g = 0; g < 3; ++g) {
      const laya::json::Value& crit = *round.find(std::to_string(g))->find("criteria");
      REQUIRE(crit.items().size() == sizes[g]);
      CHECK(crit.items()[0].as_string() == "p" + std::to_string(g == 0 ? 0 : g == 1 ? 13 : 26));
    }
    REQUIRE(c.decide(R"({"state": "I need product p17 today", "questions": )" + next + "}",
                     &reply) == LAYA_OK);
    std::vector<laya::json::Value> winners;
    for (size_t g = 0; g < 3; ++g)
      winners.push_back(*parsed(reply).find("answers")->find(std::to_string(g))->find("choice"));
    REQUIRE(laya_tournament_answer(t, reply.data(), reply.size(), &err) == LAYA_OK);
    CHECK(laya_tournament_done(t) == 0);
    REQUIRE(into(&next, [&](char* o, size_t cap, size_t* n) {
              return laya_tournament_next(t, o, cap, n, &final_call);
            }) == LAYA_OK);
    CHECK(final_call == 1);
    const laya::json::Value fin = parsed(next);
    CHECK(fin.find("p")->find("criteria")->items() == winners);
    CHECK(*fin.find("u") == *parsed(questions).find("u"));
    std::string result;
    CHECK(laya_tournament_result(t, nullptr, 0, nullptr) == LAYA_E_INVALID_ARGUMENT);
    REQUIRE(c.decide(R"({"state": "I need product p17 today", "questions": )" + next + "}",
                     &reply) == LAYA_OK);
    REQUIRE(laya_tournament_answer(t, reply.data(), reply.size(), &err) == LAYA_OK);
    CHECK(laya_tournament_done(t) == 1);
    CHECK(laya_tournament_next(t, nullptr, 0, nullptr, nullptr) == LAYA_E_INVALID_ARGUMENT);
    CHECK(laya_tournament_answer(t, reply.data(), reply.size(), &err) == LAYA_E_INVALID_ARGUMENT);
    REQUIRE(into(&result, [&](char* o, size_t cap, size_t* n) {
              return laya_tournament_result(t, o, cap, n);
            }) == LAYA_OK);
    laya_tournament_free(t);
    const laya::json::Value res = parsed(result);
    const laya::json::Value* meta = res.find("tournament");
    REQUIRE(meta != nullptr);
    CHECK(res.members().back().key == "tournament");
    CHECK(meta->find("p")->find("labels")->items() == winners);
    CHECK(meta->find("p")->find("n")->as_int64() == 40);
    CHECK(meta->find("p")->find("rounds")->as_int64() == 1);
    CHECK(meta->find("u") == nullptr);  // not a choice: no entry
    CHECK(res.find("answers")->find("p")->find("probabilities")->members().size() == 3);

    // In one call on the context: the same result, kept as laya_result_json.
    std::string one, again;
    REQUIRE(into(&one, [&](char* o, size_t cap, size_t* n) {
              return laya_predict_tournament(c.ctx, body.data(), body.size(), 16, o, cap, n);
            }) == LAYA_OK);
    CHECK(one == result);
    REQUIRE(into(&again, [&](char* o, size_t cap, size_t* n) {
              return laya_result_json(c.ctx, o, cap, n);
            }) == LAYA_OK);
    CHECK(again == result);

    // Refusals before any call, with upstream's messages; the context stays usable.
    auto refuse = [&](const std::string& qs, int32_t g) {
      const std::string b = R"({"state": "x", "questions": )" + qs + "}";
      return laya_predict_tournament(c.ctx, b.data(), b.size(), g, nullptr, 0, nullptr);
    };
    CHECK(refuse(R"({"c": {"type": "choice", "instructions": "x", "criteria": "a"}})", 16) ==
          LAYA_E_REQUEST_INVALID);
    CHECK(std::string(laya_context_error(c.ctx)) ==
          "choice criteria must be a dict or list, got str");
    CHECK(refuse(R"({"c": {"type": "choice", "instructions": "x"}})", 16) ==
          LAYA_E_REQUEST_UNPROCESSABLE);
    CHECK(std::string(laya_context_error(c.ctx)) == "question 'c' is a choice but has no criteria");
    CHECK(refuse(R"({"c": {"type": "choice", "instructions": "x", "criteria": [1, "a", 1.0]}})",
                 16) == LAYA_E_REQUEST_UNPROCESSABLE);
    CHECK(std::string(laya_context_error(c.ctx)) == "choice criteria label 1.0 is duplicated");
    CHECK(refuse("[]", 16) == LAYA_E_REQUEST_INVALID);
    CHECK(refuse(questions, 1) == LAYA_E_INVALID_ARGUMENT);
    REQUIRE(
        c.decide(
            R"({"state": "x", "questions": {"u": {"type": "noul", "instructions": "Urgent?"}}})",
            &again) == LAYA_OK);
    // A reply of the wrong shape, driven by hand.
    REQUIRE(laya_tournament_create(questions.data(), questions.size(), 16, &t, &err) == LAYA_OK);
    CHECK(laya_tournament_answer(t, "[1]", 3, &err) == LAYA_E_REQUEST_INVALID);
    CHECK(std::string(err.message) == "predict/system_one must return a dict, got list");
    CHECK(laya_tournament_answer(t, "{}", 2, &err) == LAYA_E_REQUEST_INVALID);
    CHECK(std::string(err.message) ==
          "predict/system_one must return an answers dict, got NoneType");
    CHECK(laya_tournament_answer(t, R"({"answers": {"0": {}}})", 22, &err) ==
          LAYA_E_REQUEST_UNPROCESSABLE);
    laya_tournament_free(t);
    CHECK(laya_tournament_create("{", 1, 16, &t, &err) == LAYA_E_REQUEST_INVALID);
    CHECK(t == nullptr);
    CHECK(laya_tournament_create(questions.data(), questions.size(), 1, &t, &err) ==
          LAYA_E_INVALID_ARGUMENT);
    laya_tournament_free(nullptr);
  }
  laya_model_close(m);
}
