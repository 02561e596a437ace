// The C API (include/laya/laya.h) over runtime/decisions (Model, Context). Every entry point
// checks its arguments, maps Status codes to laya_status, and writes messages without allocating.
#include "include/laya/laya.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/decisions/context.h"
#include "runtime/decisions/lang.h"
#include "runtime/decisions/model.h"
#include "runtime/decisions/router.h"
#include "runtime/decisions/tournament.h"
#include "runtime/text/json.h"
#include "runtime/text/pystr.h"

using laya::Status;
using laya::StatusCode;
namespace d = laya::decision;

struct laya_tournament {
  laya::decision::Tournament t;
};

struct laya_model {
  std::shared_ptr<const d::Model> model;
  laya_log_fn log = nullptr;
  void* log_user = nullptr;
};

// A laya_context is the decision::Context at the start of the work region.
static d::Context* ctx_of(laya_context* c) {
  return reinterpret_cast<d::Context*>(c);
}
static const d::Context* ctx_of(const laya_context* c) {
  return reinterpret_cast<const d::Context*>(c);
}

namespace {

laya_status to_status(StatusCode c) {
  const int v = static_cast<int>(c);
  switch (c) {
    case StatusCode::kOk:
      return LAYA_OK;
    case StatusCode::kResourceExhausted:
      return LAYA_E_MEMORY;
    case StatusCode::kDeadlineExceeded:
      return LAYA_E_DEADLINE;
    case StatusCode::kAborted:
      return LAYA_E_ABORTED;
    case StatusCode::kLimitExceeded:
      return LAYA_E_LIMIT;
    case StatusCode::kRequestInvalid:
      return LAYA_E_REQUEST_INVALID;
    case StatusCode::kRequestTooLarge:
      return LAYA_E_REQUEST_TOO_LARGE;
    case StatusCode::kRequestUnprocessable:
      return LAYA_E_REQUEST_UNPROCESSABLE;
    case StatusCode::kIoError:
      return LAYA_E_IO;
    case StatusCode::kUnsupported:
    case StatusCode::kBackendVersionMismatch:
      return LAYA_E_UNSUPPORTED;
    case StatusCode::kBackendError:
      return LAYA_E_BACKEND;
    case StatusCode::kInternal:
      return LAYA_E_INTERNAL;
    default:
      break;
  }
  if (v >= 200 && v < 400) return LAYA_E_MODEL_INVALID;  // file and graph errors
  return LAYA_E_INVALID_ARGUMENT;
}

laya_status fail(laya_error* err, laya_status code, const char* message) {
  if (err != nullptr) {
    err->code = code;
    std::snprintf(err->message, sizeof(err->message), "%s", message);
  }
  return code;
}

laya_status fail(laya_error* err, const Status& s) {
  return fail(err, to_status(s.code()), s.message());
}

laya_status ok(laya_error* err) {
  if (err != nullptr) {
    err->code = LAYA_OK;
    err->message[0] = '\0';
  }
  return LAYA_OK;
}

// A struct of the caller's: its size and ABI must be this library's.
template <class T>
laya_status check_struct(const T* p, const char* what, laya_error* err) {
  if (p == nullptr) return fail(err, LAYA_E_INVALID_ARGUMENT, what);
  if (p->struct_size != sizeof(T)) {
    char m[LAYA_ERROR_MESSAGE_MAX];
    std::snprintf(m, sizeof m,
                  "%s: struct_size %zu, this library's is %zu (use the *_init / *_default_params "
                  "macros of the laya.h this library was built with, ABI %u)",
                  what, p->struct_size, sizeof(T), static_cast<unsigned>(LAYA_ABI_VERSION));
    return fail(err, LAYA_E_ABI_MISMATCH, m);
  }
  if constexpr (requires { p->abi_version; }) {
    if (p->abi_version != LAYA_ABI_VERSION) {
      char m[LAYA_ERROR_MESSAGE_MAX];
      std::snprintf(m, sizeof m, "%s: built against laya.h ABI %u, this library has ABI %u", what,
                    static_cast<unsigned>(p->abi_version), static_cast<unsigned>(LAYA_ABI_VERSION));
      return fail(err, LAYA_E_ABI_MISMATCH, m);
    }
  }
  return LAYA_OK;
}

template <class T>
T init_struct(uint32_t abi, size_t size) {
  T t;
  std::memset(&t, 0, sizeof t);
  t.struct_size = size;
  if constexpr (requires { t.abi_version; }) t.abi_version = abi;
  return t;
}

// Copies `text` out under the library's buffer convention.
laya_status copy_out(std::string_view text, char* out, size_t cap, size_t* out_len) {
  if (out_len != nullptr) *out_len = text.size();
  if (out == nullptr) return LAYA_OK;
  if (cap < text.size() + 1) {
    if (cap > 0) out[0] = '\0';
    return LAYA_E_BUFFER_TOO_SMALL;
  }
  std::memcpy(out, text.data(), text.size());
  out[text.size()] = '\0';
  return LAYA_OK;
}

// The result of a call on a context: its status, the JSON copied out when it succeeded.
laya_status context_result(d::Context* c, const Status& st, std::string_view json, char* out,
                           size_t cap, size_t* out_len) {
  if (!st.is_ok()) {
    if (out_len != nullptr) *out_len = 0;
    return to_status(st.code());
  }
  return copy_out(json, out, cap, out_len);
  (void)c;
}

laya::SamplerConfig sampler_of(const laya_sampling& s) {
  laya::SamplerConfig sc;
  sc.temperature = s.temperature;
  sc.top_k = s.top_k;
  sc.top_p = s.top_p > 0 ? s.top_p : 1.0f;
  sc.seed = s.seed;
  return sc;
}

d::ContextLimits limits_of(const laya_context_limits* l) {
  d::ContextLimits c;
  if (l == nullptr) return c;
  c.max_tokens = l->max_tokens;
  c.max_rows = l->max_rows;
  c.max_options = l->max_options;
  c.max_request_bytes = l->max_request_bytes;
  c.max_batch = l->max_batch;
  c.kv_cells = l->kv_cells;
  c.prefix_slots = l->prefix_slots;
  c.prefix_cache_bytes = l->prefix_cache_bytes;
  c.prefix_block = l->prefix_block;
  c.chunk = l->chunk;
  c.n_threads = l->n_threads;
  c.arena_bytes = l->arena_bytes;
  return c;
}

laya_context_limits limits_to_c(const d::ContextLimits& c) {
  laya_context_limits l =
      init_struct<laya_context_limits>(LAYA_ABI_VERSION, sizeof(laya_context_limits));
  l.max_tokens = c.max_tokens;
  l.max_rows = c.max_rows;
  l.max_options = c.max_options;
  l.max_request_bytes = c.max_request_bytes;
  l.max_batch = c.max_batch;
  l.kv_cells = c.kv_cells;
  l.prefix_slots = c.prefix_slots;
  l.prefix_cache_bytes = c.prefix_cache_bytes;
  l.prefix_block = c.prefix_block;
  l.chunk = c.chunk;
  l.n_threads = c.n_threads;
  l.arena_bytes = c.arena_bytes;
  return l;
}

laya_status open_model(const void* data, size_t size, const char* path,
                       const laya_model_params* params, laya_model** out, laya_error* err) {
  if (out == nullptr) return fail(err, LAYA_E_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  laya_model_params defaults = laya_model_default_params();
  if (params == nullptr) params = &defaults;
  if (laya_status s = check_struct(params, "laya_model_params", err); s != LAYA_OK) return s;
  d::ModelOptions o;
  o.verify = params->verify != LAYA_VERIFY_TRUSTED;
  o.n_threads = params->n_threads;
  if (params->n_threads < 0) return fail(err, LAYA_E_INVALID_ARGUMENT, "n_threads < 0");
  if (params->kv_type != nullptr) o.kv_type = params->kv_type;
  if (params->backends != nullptr) {
    o.backends.clear();
    std::string b = params->backends;
    size_t start = 0;
    while (start <= b.size()) {
      const size_t comma = std::min(b.find(',', start), b.size());
      if (comma == start) return fail(err, LAYA_E_INVALID_ARGUMENT, "backends: an empty name");
      o.backends.push_back(b.substr(start, comma - start));
      start = comma + 1;
    }
  }
  laya::hal::BackendOptions cpu;
  cpu.n_threads = params->n_threads;
  cpu.settings = {{"kernels", params->kernels != nullptr ? params->kernels : "auto"}};
  o.backend_options.emplace_back("cpu", cpu);
  laya::Result<std::shared_ptr<const d::Model>> m =
      path != nullptr ? d::Model::open_file(path, o)
                      : d::Model::open_memory(data, size, o, nullptr);
  if (!m.is_ok()) return fail(err, m.status());
  laya_model* lm = new (std::nothrow) laya_model();
  if (lm == nullptr) return fail(err, LAYA_E_MEMORY, "no memory for the model handle");
  lm->model = std::move(m).value();
  lm->log = params->log;
  lm->log_user = params->log_user;
  if (lm->log != nullptr) {
    char msg[512];
    const d::ModelInfo& i = lm->model->info();
    std::snprintf(msg, sizeof msg, "opened %s (%s, %s, %lld parameters, weights %s)",
                  i.name.c_str(), i.kind == d::ModelKind::kEncoder ? "encoder" : "decoder",
                  i.format.c_str(), static_cast<long long>(i.parameters), i.weight_dtypes.c_str());
    lm->log(lm->log_user, LAYA_LOG_INFO, msg);
  }
  *out = lm;
  return ok(err);
}

// A JSON argument of the routing and tournament calls (NULL with length 0: `empty`).
laya::Result<laya::json::Value> parse_arg(const char* text, size_t len, const char* what,
                                          const char* empty) {
  if (text == nullptr && len > 0)
    return Status(StatusCode::kRequestInvalid, std::string(what) + " is NULL");
  const std::string_view s = text != nullptr && len > 0 ? std::string_view(text, len) : empty;
  laya::Result<laya::json::Value> v = laya::json::parse(s, laya::json::ParseOptions{}, what);
  if (!v.is_ok()) return Status(StatusCode::kRequestInvalid, v.status().message());
  if (!v->is_object())
    return Status(StatusCode::kRequestInvalid, std::string(what) + " must be a JSON object");
  return v;
}

Status bad_key(const char* what, const std::string& key) {
  return Status(StatusCode::kRequestInvalid,
                std::string("unknown ") + what + " " + laya::py::repr(std::string_view(key)));
}

laya::Result<d::RouterOptions> router_options(const laya::json::Value& v) {
  d::RouterOptions o;
  for (const laya::json::Member& m : v.members()) {
    const laya::json::Value& x = m.value;
    if (m.key == "default") {
      if (!x.is_null()) o.default_model = x.is_string() ? x.as_string() : laya::py::str(x);
    } else if (m.key == "auto_task_detection" || m.key == "standalone_repos") {
      if (!x.is_bool() && !x.is_null())
        return Status(StatusCode::kRequestInvalid, m.key + " must be a boolean");
      (m.key == "auto_task_detection" ? o.auto_task_detection : o.standalone_repos) = x.as_bool();
    } else if (m.key == "models") {
      if (x.is_null()) continue;
      if (!x.is_object())
        return Status(StatusCode::kRequestInvalid, "models must be an object of name -> source");
      for (const laya::json::Member& e : x.members()) {
        if (!e.value.is_string())
          return Status(
              StatusCode::kRequestInvalid,
              "the source of " + laya::py::repr(std::string_view(e.key)) + " must be a string");
        o.models.emplace_back(e.key, e.value.as_string());
      }
    } else if (m.key == "lang_guess") {
      if (!x.is_null()) o.lang_guess = x.is_string() ? x.as_string() : laya::py::str(x);
    } else {
      return bad_key("router option", m.key);
    }
  }
  return o;
}

laya::Result<laya::json::Value> route(const laya::json::Value& opts,
                                      const laya::json::Value& query) {
  LAYA_ASSIGN_OR_RETURN(d::RouterOptions o, router_options(opts));
  LAYA_ASSIGN_OR_RETURN(d::Router r, d::Router::create(o));
  d::RouteQuery q;
  for (const laya::json::Member& m : query.members()) {
    if (m.key == "state") {
      q.state = m.value;
    } else if (m.key == "questions") {
      q.questions = &m.value;
    } else if (m.key == "model") {
      q.model = m.value;
    } else if (m.key == "task") {
      q.task = m.value;
    } else if (m.key == "lang") {
      q.lang = m.value;
    } else if (m.key == "lang_guess") {
      q.lang_guess = m.value;
    } else if (m.key == "explain") {
      if (!m.value.is_bool() && !m.value.is_null())
        return Status(StatusCode::kRequestInvalid, "explain must be a boolean");
      q.explain = m.value.as_bool();
    } else {
      return bad_key("route argument", m.key);
    }
  }
  return r.route(q);
}

}  // namespace

extern "C" {

const char* laya_status_string(laya_status s) {
  switch (s) {
    case LAYA_OK:
      return "ok";
    case LAYA_E_INVALID_ARGUMENT:
      return "invalid argument";
    case LAYA_E_ABI_MISMATCH:
      return "ABI mismatch";
    case LAYA_E_BUFFER_TOO_SMALL:
      return "buffer too small";
    case LAYA_E_MEMORY:
      return "memory";
    case LAYA_E_IO:
      return "i/o error";
    case LAYA_E_MODEL_INVALID:
      return "invalid model";
    case LAYA_E_UNSUPPORTED:
      return "unsupported";
    case LAYA_E_REQUEST_INVALID:
      return "malformed request";
    case LAYA_E_REQUEST_TOO_LARGE:
      return "request too large";
    case LAYA_E_REQUEST_UNPROCESSABLE:
      return "request cannot be answered";
    case LAYA_E_LIMIT:
      return "over the context's limits";
    case LAYA_E_DEADLINE:
      return "deadline passed";
    case LAYA_E_ABORTED:
      return "aborted";
    case LAYA_E_BACKEND:
      return "backend error";
    case LAYA_E_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

const char* laya_version(void) {
  return LAYA_VERSION_STRING;
}

uint32_t laya_abi_version(void) {
  return LAYA_ABI_VERSION;
}

laya_model_params laya_model_default_params_(uint32_t abi, size_t size) {
  return init_struct<laya_model_params>(abi, size);
}
laya_model_info laya_model_info_init_(uint32_t abi, size_t size) {
  return init_struct<laya_model_info>(abi, size);
}
laya_context_limits laya_context_default_limits_(uint32_t abi, size_t size) {
  return init_struct<laya_context_limits>(abi, size);
}
laya_memory_requirements laya_memory_requirements_init_(uint32_t abi, size_t size) {
  return init_struct<laya_memory_requirements>(abi, size);
}
laya_context_stats laya_context_stats_init_(uint32_t abi, size_t size) {
  return init_struct<laya_context_stats>(abi, size);
}
laya_answer laya_answer_init_(uint32_t abi, size_t size) {
  return init_struct<laya_answer>(abi, size);
}
laya_usage laya_usage_init_(uint32_t abi, size_t size) {
  return init_struct<laya_usage>(abi, size);
}
laya_schema_request laya_schema_request_init_(uint32_t abi, size_t size) {
  laya_schema_request r = init_struct<laya_schema_request>(abi, size);
  r.min_confidence = -1;
  return r;
}
laya_field laya_field_init_(uint32_t abi, size_t size) {
  return init_struct<laya_field>(abi, size);
}
laya_schema_result laya_schema_result_init_(uint32_t abi, size_t size) {
  return init_struct<laya_schema_result>(abi, size);
}
laya_generate_params laya_generate_params_init_(uint32_t abi, size_t size) {
  laya_generate_params p = init_struct<laya_generate_params>(abi, size);
  p.max_tokens = 16;
  return p;
}
laya_generation laya_generation_init_(uint32_t abi, size_t size) {
  return init_struct<laya_generation>(abi, size);
}

laya_status laya_model_open_file(const char* path, const laya_model_params* params,
                                 laya_model** out, laya_error* err) {
  if (path == nullptr) return fail(err, LAYA_E_INVALID_ARGUMENT, "path is NULL");
  return open_model(nullptr, 0, path, params, out, err);
}

laya_status laya_model_open_memory(const void* data, size_t size, const laya_model_params* params,
                                   laya_model** out, laya_error* err) {
  if (data == nullptr && size > 0) return fail(err, LAYA_E_INVALID_ARGUMENT, "data is NULL");
  return open_model(data, size, nullptr, params, out, err);
}

void laya_model_close(laya_model* model) {
  delete model;
}

laya_status laya_model_info_get(const laya_model* model, laya_model_info* out) {
  if (model == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(out, "laya_model_info", nullptr); s != LAYA_OK) return s;
  const d::ModelInfo& i = model->model->info();
  out->kind = i.kind == d::ModelKind::kEncoder ? LAYA_MODEL_ENCODER : LAYA_MODEL_DECODER;
  out->name = i.name.c_str();
  out->architecture = i.architecture.c_str();
  out->format = i.format.c_str();
  out->source = i.source.c_str();
  out->converter = i.converter.c_str();
  out->source_sha256 = i.source_sha256.c_str();
  out->weight_dtypes = i.weight_dtypes.c_str();
  out->chat_format = i.chat_format.c_str();
  out->weight_bytes = i.weight_bytes;
  out->parameters = i.parameters;
  out->vocab_size = i.vocab_size;
  out->layers = i.layers;
  out->hidden_size = i.hidden_size;
  out->max_tokens = i.max_tokens;
  out->max_options = i.max_options;
  out->max_len = i.max_len;
  out->head_max_len = i.head_max_len;
  for (int k = 0; k < 3; ++k) out->temperature[k] = i.temperature[k];
  return LAYA_OK;
}

laya_status laya_context_requirements(const laya_model* model, const laya_context_limits* limits,
                                      laya_memory_requirements* out, laya_error* err) {
  if (model == nullptr) return fail(err, LAYA_E_INVALID_ARGUMENT, "model is NULL");
  if (laya_status s = check_struct(out, "laya_memory_requirements", err); s != LAYA_OK) return s;
  if (limits != nullptr)
    if (laya_status s = check_struct(limits, "laya_context_limits", err); s != LAYA_OK) return s;
  laya::Result<d::ContextLayout> lay = d::Context::layout(*model->model, limits_of(limits));
  if (!lay.is_ok()) return fail(err, lay.status());
  for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
    out->size[r] = lay->bytes[r];
    out->alignment[r] = lay->align[r];
  }
  out->model_shared_bytes = lay->shared_bytes;
  out->limits = limits_to_c(lay->limits);
  return ok(err);
}

laya_status laya_context_create(laya_model* model, const laya_context_limits* limits,
                                const laya_region* regions, laya_context** out, laya_error* err) {
  if (out == nullptr) return fail(err, LAYA_E_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (model == nullptr) return fail(err, LAYA_E_INVALID_ARGUMENT, "model is NULL");
  if (regions == nullptr) return fail(err, LAYA_E_INVALID_ARGUMENT, "regions is NULL");
  if (limits != nullptr)
    if (laya_status s = check_struct(limits, "laya_context_limits", err); s != LAYA_OK) return s;
  laya::runtime::MemoryRegion r[d::kRegionCount];
  for (int i = 0; i < d::kRegionCount; ++i) r[i] = {regions[i].data, regions[i].size};
  laya::Result<d::Context*> c = d::Context::create(model->model, limits_of(limits), r);
  if (!c.is_ok()) return fail(err, c.status());
  *out = reinterpret_cast<laya_context*>(*c);
  return ok(err);
}

void laya_context_destroy(laya_context* ctx) {
  d::Context::destroy(ctx_of(ctx));
}

const char* laya_context_error(const laya_context* ctx) {
  if (ctx == nullptr) return "context is NULL";
  return ctx_of(ctx)->error().data();
}

laya_status laya_context_stats_get(const laya_context* ctx, laya_context_stats* out) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(out, "laya_context_stats", nullptr); s != LAYA_OK) return s;
  const laya::mem::Arena& a = ctx_of(ctx)->arena();
  out->arena_bytes = a.capacity();
  out->arena_high_water = a.high_water();
  out->arena_overflows = a.overflows();
  out->calls = ctx_of(ctx)->calls();
  return LAYA_OK;
}

laya_status laya_decide(laya_context* ctx, const char* body, size_t body_len, char* out,
                        size_t out_capacity, size_t* out_len) {
  if (ctx == nullptr || (body == nullptr && body_len > 0)) return LAYA_E_INVALID_ARGUMENT;
  d::Context* c = ctx_of(ctx);
  const Status st = c->decide(std::string_view(body != nullptr ? body : "", body_len));
  return context_result(c, st, c->json(), out, out_capacity, out_len);
}

laya_status laya_decide_batch(laya_context* ctx, laya_batch_item* items, size_t n, char* out,
                              size_t out_capacity, size_t* out_len) {
  if (ctx == nullptr || (items == nullptr && n > 0)) return LAYA_E_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; ++i)
    if (items[i].body == nullptr && items[i].body_len > 0) return LAYA_E_INVALID_ARGUMENT;
  d::Context* c = ctx_of(ctx);
  const Status st = c->decide_batch(
      n,
      [](const void* it, size_t i) {
        const laya_batch_item& b = static_cast<const laya_batch_item*>(it)[i];
        return std::string_view(b.body != nullptr ? b.body : "", b.body_len);
      },
      items);
  if (!st.is_ok()) {
    if (out_len != nullptr) *out_len = 0;
    return to_status(st.code());
  }
  // Body i's JSON, or for a body that failed its message.
  auto text_of = [c](size_t i) {
    const Status& s = c->status_of(i);
    return s.is_ok() ? c->json_of(i) : std::string_view(s.message());
  };
  size_t need = 0;
  for (size_t i = 0; i < n; ++i) {
    items[i].status = to_status(c->status_of(i).code());
    items[i].json_offset = need;
    items[i].json_len = text_of(i).size();
    need += items[i].json_len + 1;
  }
  if (out_len != nullptr) *out_len = need;
  if (out == nullptr) return LAYA_OK;
  if (out_capacity < need) return LAYA_E_BUFFER_TOO_SMALL;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view j = text_of(i);
    std::memcpy(out + items[i].json_offset, j.data(), j.size());
    out[items[i].json_offset + j.size()] = '\0';
  }
  return LAYA_OK;
}

laya_status laya_result_json(const laya_context* ctx, char* out, size_t out_capacity,
                             size_t* out_len) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  return copy_out(ctx_of(ctx)->json(), out, out_capacity, out_len);
}

size_t laya_result_states(const laya_context* ctx) {
  if (ctx == nullptr) return 0;
  const d::Context* c = ctx_of(ctx);
  if (c->model().kind() == d::ModelKind::kDecoder && c->decoder_output().schema)
    return c->decoder_output().decisions.size();
  return c->questions_output().states.size();
}

size_t laya_result_questions(const laya_context* ctx) {
  if (ctx == nullptr) return 0;
  return ctx_of(ctx)->questions_output().questions.size();
}

laya_status laya_result_answer(const laya_context* ctx, size_t state, size_t question,
                               laya_answer* out) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(out, "laya_answer", nullptr); s != LAYA_OK) return s;
  const d::Context* c = ctx_of(ctx);
  const d::DecisionOutput& o = c->questions_output();
  if (state >= o.states.size() || question >= o.states[state].answers.size())
    return LAYA_E_INVALID_ARGUMENT;
  const d::Question& q = o.questions[question];
  const d::Answer& a = o.states[state].answers[question];
  out->question_id = q.id.c_str();
  out->type = static_cast<laya_question_type>(a.type);
  out->n_options = static_cast<int32_t>(a.p.size());
  out->probabilities = a.p.data();
  out->choice = a.type == d::QType::kChoice ? a.arg : -1;
  out->choice_label = a.type == d::QType::kChoice && question < c->option_labels().size() &&
                              static_cast<size_t>(a.arg) < c->option_labels()[question].size()
                          ? c->option_labels()[question][static_cast<size_t>(a.arg)].c_str()
                          : nullptr;
  out->score = a.type == d::QType::kScore ? a.score : 0.0;
  out->noul = a.type == d::QType::kNoul && a.p.size() > 1 ? static_cast<double>(a.p[1]) : 0.0;
  out->confidence = a.confidence;
  out->answer_confidence = a.answer_confidence;
  out->abstention = static_cast<laya_abstention>(a.abstention);
  out->abstention_threshold = a.threshold;
  out->has_action = a.has_action ? 1 : 0;
  out->act_probability = a.has_action ? static_cast<double>(a.act_probability) : 0.0;
  return LAYA_OK;
}

laya_status laya_result_usage(const laya_context* ctx, size_t state, laya_usage* out) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(out, "laya_usage", nullptr); s != LAYA_OK) return s;
  const d::Context* c = ctx_of(ctx);
  const d::Usage* u = nullptr;
  if (c->model().kind() == d::ModelKind::kDecoder && c->decoder_output().schema) {
    if (state >= c->decoder_output().decisions.size()) return LAYA_E_INVALID_ARGUMENT;
    u = &c->decoder_output().decisions[state].usage;
  } else {
    if (state >= c->questions_output().states.size()) return LAYA_E_INVALID_ARGUMENT;
    u = &c->questions_output().states[state].usage;
  }
  out->input_tokens = u->input_tokens;
  out->output_tokens = u->output_tokens;
  out->state_tokens = u->state_tokens;
  out->state_tokens_dropped = u->state_tokens_dropped;
  out->truncated_questions = u->truncated_questions;
  out->prefill_tokens = u->prefill_tokens;
  out->prefix_hit_tokens = u->prefix_hit_tokens;
  return LAYA_OK;
}

laya_status laya_result_option(const laya_context* ctx, size_t question, size_t option,
                               const char** label) {
  if (ctx == nullptr || label == nullptr) return LAYA_E_INVALID_ARGUMENT;
  const auto& labels = ctx_of(ctx)->option_labels();
  if (question >= labels.size() || option >= labels[question].size())
    return LAYA_E_INVALID_ARGUMENT;
  *label = labels[question][option].c_str();
  return LAYA_OK;
}

laya_status laya_model_compile_schema(const laya_model* model, const char* schema,
                                      size_t schema_len, laya_error* err) {
  if (model == nullptr || (schema == nullptr && schema_len > 0))
    return fail(err, LAYA_E_INVALID_ARGUMENT, "model or schema is NULL");
  laya::Result<laya::json::Value> v = laya::json::parse(
      std::string_view(schema != nullptr ? schema : "", schema_len), {}, "schema");
  if (!v.is_ok()) return fail(err, LAYA_E_INVALID_ARGUMENT, v.status().message());
  laya::Result<std::shared_ptr<const laya::grammar::TokenAutomaton>> a =
      model->model->automaton(*v);
  if (!a.is_ok()) return fail(err, a.status());
  return ok(err);
}

laya_status laya_decide_schema(laya_context* ctx, const laya_schema_request* req, char* out,
                               size_t out_capacity, size_t* out_len) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(req, "laya_schema_request", nullptr); s != LAYA_OK) return s;
  if (req->state == nullptr || req->schema == nullptr) return LAYA_E_INVALID_ARGUMENT;
  d::SchemaRequestParts p;
  if (req->system != nullptr) p.system = req->system;
  p.state = req->state;
  p.state_is_text = req->state_is_text != 0;
  p.schema = req->schema;
  if (req->fallback != nullptr) p.fallback = req->fallback;
  p.max_tokens = req->max_tokens;
  p.deadline_ms = req->deadline_ms;
  p.min_confidence = req->min_confidence;
  p.sampler = sampler_of(req->sampling);
  d::Context* c = ctx_of(ctx);
  const Status st = c->decide_schema(p);
  return context_result(c, st, c->json(), out, out_capacity, out_len);
}

laya_status laya_result_schema(const laya_context* ctx, size_t state, laya_schema_result* out) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(out, "laya_schema_result", nullptr); s != LAYA_OK) return s;
  const d::Context* c = ctx_of(ctx);
  const laya::runtime::DecoderOutput& o = c->decoder_output();
  if (!o.schema || state >= o.decisions.size()) return LAYA_E_INVALID_ARGUMENT;
  const laya::runtime::SchemaDecision& s = o.decisions[state];
  out->decision_json = c->decision_text(state).data();
  out->fallback = s.fallback ? 1 : 0;
  out->n_fields = s.fields.size();
  out->input_tokens = s.usage.input_tokens;
  out->prefix_hit_tokens = s.usage.prefix_hit_tokens;
  out->output_tokens = s.usage.output_tokens;
  out->ttft_ms = s.timings.ttft_ms;
  out->prefill_ms = s.timings.prefill_ms;
  out->decode_tokens_per_s = s.timings.decode_tokens_per_s;
  return LAYA_OK;
}

laya_status laya_result_field(const laya_context* ctx, size_t state, size_t field,
                              laya_field* out) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(out, "laya_field", nullptr); s != LAYA_OK) return s;
  const d::Context* c = ctx_of(ctx);
  const laya::runtime::DecoderOutput& o = c->decoder_output();
  if (!o.schema || state >= o.decisions.size() || field >= o.decisions[state].fields.size())
    return LAYA_E_INVALID_ARGUMENT;
  const laya::runtime::FieldResult& f = o.decisions[state].fields[field];
  out->path = f.path.c_str();
  out->n_options = static_cast<int32_t>(f.options.size());
  out->options = c->field_options(state, field);
  out->probabilities = f.p.data();
  out->chosen = f.chosen;
  out->confidence = f.confidence;
  out->needs_review = f.needs_review ? 1 : 0;
  return LAYA_OK;
}

namespace {

struct TokenBridge {
  const laya_generate_params* p;
  static bool on_token(void* user, int32_t id, std::string_view piece) {
    const auto* b = static_cast<const TokenBridge*>(user);
    return b->p->on_token(b->p->on_token_user, id, piece.data(), piece.size()) != 0;
  }
  static bool abort(void* user) {
    const auto* b = static_cast<const TokenBridge*>(user);
    return b->p->abort(b->p->abort_user) != 0;
  }
  static void profile(void* user, int phase, std::string_view node, double ms) {
    const auto* b = static_cast<const TokenBridge*>(user);
    char key[256];
    std::snprintf(key, sizeof key, "%.*s", static_cast<int>(node.size()), node.data());
    b->p->profile(b->p->profile_user, phase, key, ms);
  }
};

}  // namespace

laya_status laya_generate(laya_context* ctx, const laya_generate_params* p, char* out,
                          size_t out_capacity, size_t* out_len) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(p, "laya_generate_params", nullptr); s != LAYA_OK) return s;
  if ((p->messages == nullptr && p->n_messages > 0) ||
      (p->prompt_ids == nullptr && p->n_prompt_ids > 0))
    return LAYA_E_INVALID_ARGUMENT;
  // The messages as (role, content) views, on the stack: nothing is allocated out of the call.
  constexpr size_t kMaxMessages = 64;
  if (p->n_messages > kMaxMessages) return LAYA_E_INVALID_ARGUMENT;
  std::pair<std::string_view, std::string_view> messages[kMaxMessages];
  for (size_t i = 0; i < p->n_messages; ++i) {
    if (p->messages[i].role == nullptr || p->messages[i].content == nullptr)
      return LAYA_E_INVALID_ARGUMENT;
    messages[i] = {p->messages[i].role, p->messages[i].content};
  }
  TokenBridge bridge{p};
  d::GenerateParams g;
  if (p->prompt != nullptr) g.prompt = p->prompt;
  g.messages = std::span(messages, p->n_messages);
  g.prompt_ids = std::span<const int32_t>(p->prompt_ids, p->n_prompt_ids);
  g.max_tokens = p->max_tokens;
  g.sampler = sampler_of(p->sampling);
  g.stop_after_json = p->stop_after_json != 0;
  g.prefix_cache = p->no_prefix_cache == 0;
  if (p->on_token != nullptr) {
    g.on_token = TokenBridge::on_token;
    g.on_token_user = &bridge;
  }
  if (p->abort != nullptr) {
    g.abort = TokenBridge::abort;
    g.abort_user = &bridge;
  }
  if (p->profile != nullptr) {
    g.profile = TokenBridge::profile;
    g.profile_user = &bridge;
  }
  d::Context* c = ctx_of(ctx);
  const Status st = c->generate(g);
  return context_result(c, st, c->generate_output().text, out, out_capacity, out_len);
}

laya_status laya_result_text(const laya_context* ctx, char* out, size_t out_capacity,
                             size_t* out_len) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  return copy_out(ctx_of(ctx)->generate_output().text, out, out_capacity, out_len);
}

laya_status laya_result_generation(const laya_context* ctx, laya_generation* out) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  if (laya_status s = check_struct(out, "laya_generation", nullptr); s != LAYA_OK) return s;
  const d::GenerateOutput& g = ctx_of(ctx)->generate_output();
  if (g.ids.empty()) return LAYA_E_INVALID_ARGUMENT;
  out->prompt_ids = g.prompt_ids.data();
  out->n_prompt_ids = g.prompt_ids.size();
  out->ids = g.ids.data();
  out->n_ids = g.ids.size();
  out->finish_reason = g.finish_reason.c_str();
  out->load_ms = g.stats.load_ms;
  out->prefill_ms = g.stats.prefill_end_ms;
  out->first_token_ms = g.stats.first_token_ms;
  out->total_ms = g.stats.token_ms.empty() ? 0.0 : g.stats.token_ms.back();
  out->decode_tokens_per_s = g.stats.decode_tokens_per_s();
  out->prefill_chunks = g.stats.prefill_steps;
  out->prefix_hit_tokens = g.stats.prefix_hit_tokens;
  out->decode_steps = g.stats.decode_steps;
  out->decode_step_ms = g.stats.decode_step_ms;
  out->decode_execute_ms = g.stats.decode_execute_ms;
  out->decode_pick_ms = g.stats.decode_pick_ms;
  out->prefill_execute_ms = g.stats.prefill_execute_ms;
  out->prefix_lookups = g.prefix.lookups;
  out->prefix_hits = g.prefix.hits;
  out->prefix_misses = g.prefix.misses;
  out->prefix_evictions = g.prefix.evictions;
  out->prefix_cached_tokens = g.prefix.cached_tokens;
  out->prefix_block_tokens = g.prefix_block;
  return LAYA_OK;
}

laya_status laya_score(laya_context* ctx, const int32_t* ids, size_t n_ids, laya_logits_fn fn,
                       void* user) {
  if (ctx == nullptr || (ids == nullptr && n_ids > 0) || fn == nullptr)
    return LAYA_E_INVALID_ARGUMENT;
  const Status st = ctx_of(ctx)->score(std::span<const int32_t>(ids, n_ids), fn, user);
  return to_status(st.code());
}

laya_status laya_context_set_sampling(laya_context* ctx, const laya_sampling* s) {
  if (ctx == nullptr || s == nullptr) return LAYA_E_INVALID_ARGUMENT;
  ctx_of(ctx)->set_sampler(sampler_of(*s));
  return LAYA_OK;
}

laya_status laya_context_set_rules(laya_context* ctx, laya_request_rules rules) {
  if (ctx == nullptr || (rules != LAYA_RULES_SERVER && rules != LAYA_RULES_SDK))
    return LAYA_E_INVALID_ARGUMENT;
  ctx_of(ctx)->set_request_mode(rules == LAYA_RULES_SDK ? d::RequestMode::kLibrary
                                                        : d::RequestMode::kServer);
  return LAYA_OK;
}

laya_status laya_context_set_stream(laya_context* ctx, laya_token_fn on_token, laya_abort_fn abort,
                                    void* user) {
  if (ctx == nullptr) return LAYA_E_INVALID_ARGUMENT;
  d::Context::Stream s;
  s.on_token = on_token;
  s.abort = abort;
  s.user = user;
  ctx_of(ctx)->set_stream(s);
  return LAYA_OK;
}

laya_status laya_detect_language(const char* state_json, size_t len, int32_t explain, char* out,
                                 size_t out_capacity, size_t* out_len, laya_error* err) {
  if (state_json == nullptr && len > 0) return fail(err, LAYA_E_INVALID_ARGUMENT, "state_json");
  laya::Result<laya::json::Value> state = laya::json::parse(
      std::string_view(state_json ? state_json : "", len), laya::json::ParseOptions{}, "state");
  if (!state.is_ok()) return fail(err, LAYA_E_REQUEST_INVALID, state.status().message());
  const laya_status s = copy_out(laya::json::dump(d::analyse_state(*state, explain != 0)), out,
                                 out_capacity, out_len);
  return s == LAYA_OK ? ok(err) : fail(err, s, "the output buffer is too small");
}

laya_status laya_route(const char* options_json, size_t options_len, const char* query_json,
                       size_t query_len, char* out, size_t out_capacity, size_t* out_len,
                       laya_error* err) {
  laya::Result<laya::json::Value> opts = parse_arg(options_json, options_len, "options", "{}");
  if (!opts.is_ok()) return fail(err, opts.status());
  laya::Result<laya::json::Value> query = parse_arg(query_json, query_len, "query", "");
  if (!query.is_ok()) return fail(err, query.status());
  laya::Result<laya::json::Value> decision = route(*opts, *query);
  if (!decision.is_ok()) return fail(err, decision.status());
  const laya_status s = copy_out(laya::json::dump(*decision), out, out_capacity, out_len);
  return s == LAYA_OK ? ok(err) : fail(err, s, "the output buffer is too small");
}

laya_status laya_predict_tournament(laya_context* ctx, const char* body, size_t body_len,
                                    int32_t group_size, char* out, size_t out_capacity,
                                    size_t* out_len) {
  if (ctx == nullptr || (body == nullptr && body_len > 0) || group_size < 2)
    return LAYA_E_INVALID_ARGUMENT;
  d::Context* c = ctx_of(ctx);
  const Status st =
      c->decide_tournament(std::string_view(body != nullptr ? body : "", body_len), group_size);
  return context_result(c, st, c->json(), out, out_capacity, out_len);
}

laya_status laya_tournament_create(const char* questions_json, size_t len, int32_t group_size,
                                   laya_tournament** out, laya_error* err) {
  if (out == nullptr) return fail(err, LAYA_E_INVALID_ARGUMENT, "out is NULL");
  *out = nullptr;
  if (group_size < 2) return fail(err, LAYA_E_INVALID_ARGUMENT, "group_size must be at least 2");
  if (questions_json == nullptr && len > 0)
    return fail(err, LAYA_E_INVALID_ARGUMENT, "questions_json is NULL");
  laya::Result<laya::json::Value> qs =
      laya::json::parse(std::string_view(questions_json != nullptr ? questions_json : "", len),
                        laya::json::ParseOptions{}, "questions");
  if (!qs.is_ok()) return fail(err, LAYA_E_REQUEST_INVALID, qs.status().message());
  laya::Result<std::optional<d::Tournament>> plan =
      d::Tournament::plan(*qs, group_size, d::TournamentMode::kSdk);
  if (!plan.is_ok()) return fail(err, plan.status());
  laya_tournament* t = new (std::nothrow) laya_tournament{std::move(**plan)};
  if (t == nullptr) return fail(err, LAYA_E_MEMORY, "no memory for the tournament");
  *out = t;
  return ok(err);
}

int32_t laya_tournament_done(const laya_tournament* t) {
  return t != nullptr && t->t.done() ? 1 : 0;
}

laya_status laya_tournament_next(const laya_tournament* t, char* out, size_t out_capacity,
                                 size_t* out_len, int32_t* final_call) {
  if (t == nullptr || t->t.done()) return LAYA_E_INVALID_ARGUMENT;
  if (final_call != nullptr) *final_call = t->t.final_call() ? 1 : 0;
  return copy_out(laya::json::dump(t->t.next_questions()), out, out_capacity, out_len);
}

laya_status laya_tournament_answer(laya_tournament* t, const char* result_json, size_t len,
                                   laya_error* err) {
  if (t == nullptr || t->t.done() || (result_json == nullptr && len > 0))
    return fail(err, LAYA_E_INVALID_ARGUMENT, t == nullptr ? "t is NULL" : "no call is pending");
  laya::Result<laya::json::Value> r =
      laya::json::parse(std::string_view(result_json != nullptr ? result_json : "", len),
                        laya::json::ParseOptions{}, "result");
  if (!r.is_ok()) return fail(err, LAYA_E_REQUEST_INVALID, r.status().message());
  const Status st = t->t.answer(*r);
  return st.is_ok() ? ok(err) : fail(err, st);
}

laya_status laya_tournament_result(const laya_tournament* t, char* out, size_t out_capacity,
                                   size_t* out_len) {
  if (t == nullptr || !t->t.done()) return LAYA_E_INVALID_ARGUMENT;
  return copy_out(laya::json::dump(t->t.result()), out, out_capacity, out_len);
}

void laya_tournament_free(laya_tournament* t) {
  delete t;
}

laya_status laya_tokenize(laya_context* ctx, const char* text, size_t text_len, int32_t add_special,
                          int32_t* ids, size_t capacity, size_t* n_ids) {
  if (ctx == nullptr || (text == nullptr && text_len > 0)) return LAYA_E_INVALID_ARGUMENT;
  d::Context* c = ctx_of(ctx);
  const Status st =
      c->tokenize(std::string_view(text != nullptr ? text : "", text_len), add_special != 0);
  if (!st.is_ok()) return to_status(st.code());
  const std::vector<int32_t>& out = c->tokens();
  if (n_ids != nullptr) *n_ids = out.size();
  if (ids == nullptr) return LAYA_OK;
  if (capacity < out.size()) return LAYA_E_BUFFER_TOO_SMALL;
  std::copy(out.begin(), out.end(), ids);
  return LAYA_OK;
}

laya_status laya_detokenize(laya_context* ctx, const int32_t* ids, size_t n_ids,
                            int32_t skip_special, char* out, size_t out_capacity, size_t* out_len) {
  if (ctx == nullptr || (ids == nullptr && n_ids > 0)) return LAYA_E_INVALID_ARGUMENT;
  d::Context* c = ctx_of(ctx);
  const Status st = c->detokenize(std::span<const int32_t>(ids, n_ids), skip_special != 0);
  if (!st.is_ok()) return to_status(st.code());
  return copy_out(c->text(), out, out_capacity, out_len);
}

}  // extern "C"
