// No heap after laya_context_create (include/laya/laya.h): with the process-wide allocation
// counter on (tests/alloc_hook.h: malloc / free / operator new / delete, oneTBB's allocator),
//  - 1,000 varied encoder decisions through laya_decide and laya_decide_batch on the tiny
//    ModernBERT Laya checkpoint: string, object, list and number states, every question type,
//    option orders, truncation (small max_len / head_max_len), the min_confidence gate (scalar and
//    per bucket), `states` batches, shortlists, and refusals of every class (bad JSON, missing
//    fields, malformed questions, over-limit bodies);
//  - 100 schema decisions on the tiny chat llama (the examples' three schemas, states varied, the
//    fallback on a tiny max_tokens, refused bodies) through laya_decide and laya_decide_schema,
//    plus generation, tokenization and the typed result accessors;
// count 0 allocations and 0 arena overflows. The schemas are compiled first
// (laya_model_compile_schema: a load step). The library is the installed one (liblaya.so), whose
// operator new / delete references go to the context's work region during a call.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "include/laya/laya.h"
#include "tests/alloc_hook.h"

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

// A deterministic generator.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return s >> 33;
  }
  int pick(int n) { return static_cast<int>(next() % static_cast<uint64_t>(n)); }
};

const char* kWords[] = {"billing", "refund",    "invoice",        "login", "error",
                        "urgent",  "server",    "customer",       "twice", "charged",
                        "Friday",  "password",  "[MASK]",         "café",  "naïve",
                        "日本語",  "emoji🙂", "\\\"quoted\\\"", "x"};

std::string words(Rng& r, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += kWords[r.pick(static_cast<int>(std::size(kWords)))];
  }
  return s;
}

std::string state(Rng& r) {
  switch (r.pick(4)) {
    case 0:
      return "\"" + words(r, 1 + r.pick(r.pick(8) == 0 ? 400 : 30)) + "\"";
    case 1:
      return "{\"channel\": \"email\", \"months\": " + std::to_string(r.pick(50)) +
             ", \"message\": \"" + words(r, 3 + r.pick(20)) + "\", \"tags\": [1, 2.5, true, null]}";
    case 2: {
      std::string s = "[";
      const int n = 1 + r.pick(5);
      for (int i = 0; i < n; ++i)
        s += std::string(i ? ", " : "") + "{\"role\": \"user\", \"content\": \"" +
             words(r, 2 + r.pick(10)) + "\"}";
      return s + "]";
    }
    default:
      return std::to_string(r.pick(1000));
  }
}

std::string question(Rng& r, int i) {
  const std::string id = "\"q" + std::to_string(i) + "\": ";
  switch (r.pick(3)) {
    case 0: {
      std::string c = "{";
      const int k = 2 + r.pick(r.pick(6) == 0 ? 30 : 6);
      for (int j = 0; j < k; ++j)
        c += std::string(j ? ", " : "") + "\"l" + std::to_string(j) + "\": \"" +
             words(r, 1 + r.pick(4)) + "\"";
      c += "}";
      std::string q = id + "{\"type\": \"choice\", \"instructions\": \"" + words(r, 4) +
                      "\", \"criteria\": " + c;
      if (r.pick(5) == 0) {
        q += ", \"option_order\": [";
        for (int j = k - 1; j >= 0; --j) q += std::to_string(j) + (j ? ", " : "");
        q += "]";
      }
      return q + "}";
    }
    case 1: {
      std::string c = "[";
      const int k = 2 + r.pick(5);
      for (int j = 0; j < k; ++j) c += std::string(j ? ", " : "") + "\"" + words(r, 2) + "\"";
      return id + "{\"type\": \"score\", \"instructions\": \"" + words(r, 5) +
             "\", \"criteria\": " + c + "]}";
    }
    default:
      return id + "{\"type\": \"noul\", \"instructions\": \"" + words(r, 3) + "\"}";
  }
}

// A request body; about one in ten is refused by the checks.
std::string encoder_body(Rng& r) {
  const int refusal = r.pick(10) == 0 ? 1 + r.pick(8) : 0;
  switch (refusal) {
    case 1:
      return "{\"state\": \"x\", \"questions\": ";  // not JSON
    case 2:
      return "{\"questions\": {}}";  // no state
    case 3:
      return "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"maybe\", \"instructions\": "
             "\"?\"}}}";
    case 4: {
      std::string q = "{\"state\": \"x\", \"questions\": {";
      for (int i = 0; i < 65; ++i) q += (i ? ", " : "") + question(r, i);
      return q + "}}";
    }
    case 5:
      return "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"noul\"}}}";
    case 6:
      return "{\"state\": \"x\", \"hooks\": [], \"questions\": {}}";
    case 7:
      return "[1, 2, 3]";
    case 8:
      return "{\"state\": \"x\", \"questions\": {\"q\": {\"type\": \"noul\", \"instructions\": "
             "\"?\"}}, \"max_len\": -4}";
    default:
      break;
  }
  std::string b = "{";
  if (r.pick(5) == 0) {
    b += "\"states\": [";
    const int n = 2 + r.pick(4);
    for (int i = 0; i < n; ++i) b += (i ? ", " : "") + state(r);
    b += "], ";
  } else {
    b += "\"state\": " + state(r) + ", ";
  }
  b += "\"questions\": {";
  const int nq = r.pick(8) == 0 ? 0 : 1 + r.pick(5);
  for (int i = 0; i < nq; ++i) b += (i ? ", " : "") + question(r, i);
  b += "}";
  switch (r.pick(6)) {
    case 0:
      b += ", \"min_confidence\": 0.6";
      break;
    case 1:
      b += ", \"min_confidence\": {\"choice:2\": 0.9, \"default\": 0.3}";
      break;
    case 2:
      b += ", \"max_len\": " + std::to_string(48 + r.pick(40)) + ", \"head_max_len\": 32";
      break;
    case 3:
      b += ", \"shortlist\": 3";
      break;
    default:
      break;
  }
  return b + "}";
}

// A context on regions this test allocates (before counting).
struct Ctx {
  laya_context* ctx = nullptr;
  std::vector<void*> mem;
  Ctx(laya_model* m, const laya_context_limits& lim) {
    laya_memory_requirements req = laya_memory_requirements_init();
    laya_error err;
    REQUIRE_MESSAGE(laya_context_requirements(m, &lim, &req, &err) == LAYA_OK, err.message);
    laya_region regions[LAYA_REGION_COUNT];
    for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
      const size_t a = static_cast<size_t>(req.alignment[r]);
      const size_t n = (static_cast<size_t>(req.size[r]) + a - 1) / a * a;
      void* p = n ? std::aligned_alloc(a, n) : nullptr;
      mem.push_back(p);
      regions[r] = {p, n};
    }
    REQUIRE_MESSAGE(laya_context_create(m, &lim, regions, &ctx, &err) == LAYA_OK, err.message);
  }
  ~Ctx() {
    laya_context_destroy(ctx);
    for (void* p : mem) std::free(p);
  }
};

// The typed view of every answer of the last decision, read as an embedder reads it.
double read_answers(laya_context* ctx) {
  double sum = 0;
  const size_t ns = laya_result_states(ctx), nq = laya_result_questions(ctx);
  for (size_t s = 0; s < ns; ++s) {
    laya_usage u = laya_usage_init();
    if (laya_result_usage(ctx, s, &u) == LAYA_OK) sum += static_cast<double>(u.input_tokens);
    for (size_t q = 0; q < nq; ++q) {
      laya_answer a = laya_answer_init();
      if (laya_result_answer(ctx, s, q, &a) != LAYA_OK) continue;
      for (int32_t i = 0; i < a.n_options; ++i) sum += a.probabilities[i];
      sum += a.confidence;
    }
  }
  return sum;
}

TEST_CASE("encoder decisions through the C API allocate nothing after laya_context_create") {
  REQUIRE(laya::test::alloc_hook::tbbmalloc_shim_loaded());
  const std::string model_path = env("LAYA_TINY_LAYA");
  REQUIRE_MESSAGE(!model_path.empty(), "LAYA_TINY_LAYA names the converted tiny checkpoint");
  laya_model* m = nullptr;
  laya_error err;
  laya_model_params mp = laya_model_default_params();
  REQUIRE_MESSAGE(laya_model_open_file(model_path.c_str(), &mp, &m, &err) == LAYA_OK, err.message);
  {
    laya_context_limits lim = laya_context_default_limits();
    lim.max_request_bytes = 256 << 10;
    lim.max_batch = 4;
    Ctx c(m, lim);
    // The requests first, so that making them is not counted.
    Rng r{1};
    std::vector<std::string> bodies;
    for (int i = 0; i < 1000; ++i) bodies.push_back(encoder_body(r));
    // A few large ones within the limits: 40 questions over 8 long states (noul questions, or
    // any: then some have more options than the tiny checkpoint's max_len holds, a refusal after
    // every row is built).
    for (int k = 0; k < 6; ++k) {
      std::string b = "{\"states\": [";
      for (int i = 0; i < 8; ++i) b += std::string(i ? ", " : "") + "\"" + words(r, 600) + "\"";
      b += "], \"questions\": {";
      for (int i = 0; i < 40; ++i)
        b += (i ? ", " : "") +
             (k % 2 ? question(r, i)
                    : "\"q" + std::to_string(i) + "\": {\"type\": \"noul\", \"instructions\": \"" +
                          words(r, 6) + "\"}");
      bodies[static_cast<size_t>(100 + 150 * k)] = b + "}}";
    }
    std::vector<char> out(1 << 20);
    int ok = 0, refused = 0, batches = 0;
    double sink = 0;
    laya::test::alloc_hook::start();
    for (size_t i = 0; i < bodies.size(); ++i) {
      size_t n = 0;
      if (i % 10 == 9 && i >= 3) {
        laya_batch_item items[4];
        for (int j = 0; j < 4; ++j) {
          const std::string& b = bodies[i - static_cast<size_t>(j)];
          items[j] = {b.data(), b.size(), LAYA_OK, 0, 0};
        }
        if (laya_decide_batch(c.ctx, items, 4, out.data(), out.size(), &n) == LAYA_OK) ++batches;
        continue;
      }
      const laya_status s =
          laya_decide(c.ctx, bodies[i].data(), bodies[i].size(), out.data(), out.size(), &n);
      if (s == LAYA_OK) {
        ++ok;
        sink += read_answers(c.ctx);
      } else {
        ++refused;
        sink += static_cast<double>(std::strlen(laya_context_error(c.ctx)));
      }
    }
    const long calls = laya::test::alloc_hook::stop();
    CHECK_MESSAGE(calls == 0, "heap calls during the decisions: "
                                  << calls << " (first thread "
                                  << laya::test::alloc_hook::first_thread() << ")");
    laya_context_stats st = laya_context_stats_init();
    REQUIRE(laya_context_stats_get(c.ctx, &st) == LAYA_OK);
    CHECK(st.arena_overflows == 0);
    MESSAGE("answered " << ok << ", refused " << refused << ", batches " << batches
                        << "; arena high water " << st.arena_high_water << " of " << st.arena_bytes
                        << " bytes (" << sink << ")");
    CHECK(ok > 700);
    CHECK(refused > 50);
    CHECK(batches == 100);
  }
  laya_model_close(m);
}

TEST_CASE("schema decisions and generation through the C API allocate nothing") {
  const std::string model_path = env("LAYA_TINY_CHAT_GGUF");
  const std::string root = env("LAYA_SOURCE_ROOT");
  REQUIRE(!model_path.empty());
  laya_model* m = nullptr;
  laya_error err;
  laya_model_params mp = laya_model_default_params();
  REQUIRE_MESSAGE(laya_model_open_file(model_path.c_str(), &mp, &m, &err) == LAYA_OK, err.message);
  {
    laya_context_limits lim = laya_context_default_limits();
    lim.max_request_bytes = 64 << 10;
    lim.kv_cells = 2048;
    Ctx c(m, lim);
    std::vector<std::string> examples;
    for (const char* ex : {"industrial-alarm", "smart-home-hub", "edge-quality-inspection"})
      examples.push_back(read(root + "/examples/" + ex + ".json"));
    // Each example's schema compiled up front (a load step).
    for (const std::string& e : examples) {
      const size_t at = e.find("\"schema\"");
      REQUIRE(at != std::string::npos);
      size_t start = e.find('{', at), depth = 0, end = start;
      for (; end < e.size(); ++end) {
        depth += e[end] == '{';
        depth -= e[end] == '}';
        if (depth == 0) break;
      }
      REQUIRE(laya_model_compile_schema(m, e.data() + start, end + 1 - start, &err) == LAYA_OK);
    }
    // Bodies: the examples, with max_tokens 2 (the fallback answers), and with a deadline_ms
    // outside its range (refused).
    std::vector<std::string> bodies;
    for (int i = 0; i < 100; ++i) {
      std::string b = examples[static_cast<size_t>(i % 3)];
      if (i % 10 == 4) b.insert(1, "\"max_tokens\": 2, ");
      if (i % 10 == 7) b.insert(1, "\"deadline_ms\": 0, ");  // refused (422)
      bodies.push_back(std::move(b));
    }
    const std::string state = "{\"temperature_c\": 81.5, \"pump\": \"p2\"}";
    const std::string schema =
        "{\"type\": \"object\", \"properties\": {\"action\": {\"enum\": [\"stop\", \"go\"]}, "
        "\"level\": {\"type\": \"integer\", \"minimum\": 0, \"maximum\": 9}}, \"required\": "
        "[\"action\", \"level\"]}";
    REQUIRE(laya_model_compile_schema(m, schema.data(), schema.size(), &err) == LAYA_OK);
    std::vector<char> out(1 << 20);
    int ok = 0, refused = 0;
    double sink = 0;
    laya::test::alloc_hook::start();
    for (size_t i = 0; i < bodies.size(); ++i) {
      size_t n = 0;
      laya_status s;
      if (i % 5 == 0) {
        laya_schema_request req = laya_schema_request_init();
        req.state = state.c_str();
        req.schema = schema.c_str();
        req.system = i % 2 ? "You control pumps." : nullptr;
        req.sampling.temperature = i % 3 ? 0.0f : 0.8f;
        req.sampling.seed = i;
        s = laya_decide_schema(c.ctx, &req, out.data(), out.size(), &n);
      } else {
        s = laya_decide(c.ctx, bodies[i].data(), bodies[i].size(), out.data(), out.size(), &n);
      }
      if (s == LAYA_OK) {
        ++ok;
        laya_schema_result res = laya_schema_result_init();
        if (laya_result_schema(c.ctx, 0, &res) == LAYA_OK) {
          sink += static_cast<double>(std::strlen(res.decision_json));
          for (size_t f = 0; f < res.n_fields; ++f) {
            laya_field fld = laya_field_init();
            if (laya_result_field(c.ctx, 0, f, &fld) == LAYA_OK) sink += fld.probabilities[0];
          }
        }
      } else {
        ++refused;
      }
    }
    // Generation and tokens.
    for (int i = 0; i < 10; ++i) {
      laya_generate_params gp = laya_generate_params_init();
      const laya_message msgs[2] = {{"system", "Be brief."}, {"user", "Status of pump 2?"}};
      gp.messages = msgs;
      gp.n_messages = 2;
      gp.max_tokens = 8;
      size_t n = 0;
      if (laya_generate(c.ctx, &gp, out.data(), out.size(), &n) == LAYA_OK) ++ok;
      int32_t ids[256];
      size_t nid = 0;
      if (laya_tokenize(c.ctx, "hello world", 11, 1, ids, 256, &nid) == LAYA_OK)
        sink += static_cast<double>(
            laya_detokenize(c.ctx, ids, nid, 0, out.data(), out.size(), &n) == LAYA_OK);
    }
    const long calls = laya::test::alloc_hook::stop();
    CHECK_MESSAGE(calls == 0, "heap calls during the decisions: " << calls);
    laya_context_stats st = laya_context_stats_init();
    REQUIRE(laya_context_stats_get(c.ctx, &st) == LAYA_OK);
    CHECK(st.arena_overflows == 0);
    MESSAGE("answered " << ok << ", refused " << refused << "; arena high water "
                        << st.arena_high_water << " of " << st.arena_bytes << " bytes (" << sink
                        << ")");
    CHECK(ok >= 80);
    CHECK(refused == 10);
  }
  laya_model_close(m);
}

}  // namespace
