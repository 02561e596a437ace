#include "tools/laya-serve/server.h"

#include <pthread.h>
#include <zstd.h>

#include <utility>  // before Asio: its awaitable.hpp uses std::exchange

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <cinttypes>
#include <cstdio>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "runtime/decisions/request.h"
#include "runtime/decisions/router.h"
#include "runtime/text/json.h"
#include "runtime/text/pystr.h"
#include "tools/laya-serve/metrics.h"
#include "tools/laya-serve/models.h"
#include "runtime/decisions/tournament.h"
#include "tools/laya-serve/upstream.h"

namespace laya::serve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json::Value;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

std::string fmt2(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

void log_line(const char* fmt, const std::string& a, const std::string& b = "") {
  std::fprintf(stderr, fmt, a.c_str(), b.c_str());
  std::fputc('\n', stderr);
  std::fflush(stderr);
}

// Header bytes read as Latin-1 (as Starlette decodes them), written as UTF-8.
std::string latin1_to_utf8(std::string_view s) {
  std::string o;
  for (unsigned char c : s) {
    if (c < 0x80) {
      o += static_cast<char>(c);
    } else {
      o += static_cast<char>(0xC0 | (c >> 6));
      o += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return o;
}

// hmac.compare_digest: the time depends on the lengths only.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0 : 1;
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case json::Kind::kNull:
      return false;
    case json::Kind::kBool:
      return v.as_bool();
    case json::Kind::kNumber:
      return v.as_double() != 0;
    case json::Kind::kString:
      return !v.as_string().empty();
    case json::Kind::kArray:
      return !v.items().empty();
    case json::Kind::kObject:
      return !v.members().empty();
  }
  return false;
}

std::string strip(const std::string& s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return s.substr(a, b - a);
}

// A router name of a model name: lowercase letters, digits, '.', '_', '-'.
bool router_name(const std::string& s) {
  if (s.empty() || s == "auto") return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return false;
  return true;
}

enum class Route {
  kNone,
  kSystemOne,
  kBatch,
  kDecide,
  kHealth,
  kReady,
  kModels,
  kMetrics,
  kReload
};

struct RouteInfo {
  const char* path;
  Route route;
  http::verb verb;
  const char* name;  // metrics label
};

constexpr RouteInfo kRoutes[] = {
    {"/v1/systemone", Route::kSystemOne, http::verb::post, "systemone"},
    {"/v1/systemone/batch", Route::kBatch, http::verb::post, "batch"},
    {"/v1/decide", Route::kDecide, http::verb::post, "decide"},
    {"/health", Route::kHealth, http::verb::get, "health"},
    {"/ready", Route::kReady, http::verb::get, "ready"},
    {"/v1/models", Route::kModels, http::verb::get, "models"},
    {"/metrics", Route::kMetrics, http::verb::get, "metrics"},
    {"/admin/reload", Route::kReload, http::verb::post, "reload"},
};

// The HTTP status of a refused call.
int http_status(laya_status s) {
  switch (s) {
    case LAYA_E_REQUEST_INVALID:
      return 400;
    case LAYA_E_REQUEST_TOO_LARGE:
    case LAYA_E_LIMIT:
      return 413;
    case LAYA_E_REQUEST_UNPROCESSABLE:
    case LAYA_E_UNSUPPORTED:
      return 422;
    case LAYA_E_DEADLINE:
      return 504;
    default:
      return 500;
  }
}

// Content-Encoding: zstd, decoded into at most `cap` bytes. 413 past the cap, 400 when malformed.
int zstd_decode(const std::string& in, size_t cap, std::string* out) {
  ZSTD_DStream* ds = ZSTD_createDStream();
  if (ds == nullptr) return 500;
  ZSTD_initDStream(ds);
  out->clear();
  ZSTD_inBuffer ib{in.data(), in.size(), 0};
  char buf[1 << 16];
  int status = 0;
  for (;;) {
    ZSTD_outBuffer ob{buf, sizeof buf, 0};
    const size_t ret = ZSTD_decompressStream(ds, &ob, &ib);
    if (ZSTD_isError(ret)) {
      status = 400;
      break;
    }
    if (out->size() + ob.pos > cap) {
      status = 413;
      break;
    }
    out->append(buf, ob.pos);
    if (ret == 0 && ib.pos == ib.size) break;  // every frame complete, the input consumed
    if (ib.pos == ib.size && ob.pos == 0) {    // no input left and no progress: truncated
      status = 400;
      break;
    }
  }
  ZSTD_freeDStream(ds);
  return status;
}

}  // namespace

// ---- the server's state -------------------------------------------------------------------

struct Server::Impl {
  explicit Impl(Config c) : cfg(std::move(c)), signals(ioc) {}

  Config cfg;
  Metrics metrics;
  std::unique_ptr<CompletionQueue> cq;
  uint64_t cq_value = 0;
  std::vector<Job*> cq_jobs;
  ModelSet models;
  std::vector<ModelSpec> specs;  // every model with its resolved name
  std::string default_model;
  std::optional<decision::Router> router;
  std::mutex slot_mu;
  std::vector<std::unique_ptr<Job>> jobs;
  std::vector<Job*> free_jobs;
  std::atomic<bool> draining{false};
  std::atomic<int> in_flight{0};
  std::atomic<int> arriving{0};  // admitted, not yet queued (models.h BatchOptions)
  std::mutex reload_mu;
  // Reloads run in turn on one thread (loading takes a while; the I/O threads must not wait).
  struct ReloadJob {
    std::string name, path;
    std::function<void(bool ok, std::string out)> done;  // null: SIGHUP's (logged only)
  };
  std::mutex reload_q_mu;
  std::condition_variable reload_cv;
  std::deque<ReloadJob> reload_q;
  bool reload_stop = false;
  std::thread reloader;
  void queue_reload(ReloadJob j) {
    {
      std::lock_guard<std::mutex> lk(reload_q_mu);
      reload_q.push_back(std::move(j));
    }
    reload_cv.notify_one();
  }
  void reload_loop() {
    std::unique_lock<std::mutex> lk(reload_q_mu);
    for (;;) {
      reload_cv.wait(lk, [this] { return reload_stop || !reload_q.empty(); });
      if (reload_q.empty()) return;  // stopping
      ReloadJob j = std::move(reload_q.front());
      reload_q.pop_front();
      lk.unlock();
      std::string out;
      const bool ok = reload(j.name, j.path, &out);
      if (j.done) j.done(ok, std::move(out));
      lk.lock();
    }
  }
  std::atomic<uint64_t> request_counter{0};
  uint64_t id_seed = 0;
  BatchOptions batch_opts;

  Job* acquire() {
    std::lock_guard<std::mutex> lk(slot_mu);
    if (free_jobs.empty()) return nullptr;
    Job* j = free_jobs.back();
    free_jobs.pop_back();
    in_flight.fetch_add(1);
    arriving.fetch_add(1);
    metrics.in_flight(1);
    return j;
  }
  void arrived() { arriving.fetch_sub(1); }
  void release(Job* j) {
    j->done = nullptr;
    j->on_piece = nullptr;
    j->sequence.clear();
    j->kind = Job::Kind::kDecide;
    std::lock_guard<std::mutex> lk(slot_mu);
    free_jobs.push_back(j);
    in_flight.fetch_sub(1);
    metrics.in_flight(-1);
  }

  std::string next_request_id() {
    char b[40];
    std::snprintf(b, sizeof b, "req_%016" PRIx64 "%08" PRIx64, id_seed,
                  request_counter.fetch_add(1));
    return b;
  }

  std::shared_ptr<ServedModel> load(const ModelSpec& spec, std::string* err) {
    auto on_batch = [this](const BatchReport& r) { metrics.batch(r.size, r.infer_ms / 1000.0); };
    return ServedModel::load(spec.name, spec.path, batch_opts, cq.get(), on_batch, err);
  }

  // Reloads `name` (empty: every model) from its file (or `path`). Returns the JSON answer, or
  // an error message (the old model keeps serving).
  bool reload(const std::string& name, const std::string& path, std::string* out);

  void accept();
  void arm_completions();
  void drain_and_stop();
  void drain_poll();  // every 20 ms until nothing is in flight or the drain timeout passes
  Clock::time_point drain_until;

  // Declared last, destroyed first: destroying the io_context destroys the handlers still
  // queued (sessions, timers), whose destructors release job slots and count metrics.
  net::io_context ioc;
  std::optional<tcp::acceptor> acceptor;
  net::signal_set signals;
  std::unique_ptr<net::posix::stream_descriptor> cq_fd;
  std::optional<net::steady_timer> drain_timer;
};

// ---- one connection -----------------------------------------------------------------------

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& s, Server::Impl& srv)
      : stream_(std::move(s)), srv_(srv), body_timer_(stream_.get_executor()) {
    srv_.metrics.connection(1);
  }
  ~Session() {
    if (arriving_) srv_.arrived();
    if (job_ != nullptr) srv_.release(job_);
    srv_.metrics.connection(-1);
  }
  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

 private:
  // A call to a model: the body, and what came back.
  struct Call {
    std::shared_ptr<ServedModel> model;
    std::string body;
    std::vector<size_t> states;  // batch route: which of the request's states this call answers
    laya_status status = LAYA_OK;
    std::string text;
    double infer_ms = 0, queue_ms = 0;
    int batch_size = 0;
    uint64_t batch_id = 0;
  };

  void read_header() {
    header_.emplace();
    header_->header_limit(16 * 1024);
    header_->body_limit(std::numeric_limits<std::uint64_t>::max());
    stream_.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(srv_.cfg.keep_alive_s)));
    http::async_read_header(stream_, buffer_, *header_,
                            beast::bind_front_handler(&Session::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, size_t) {
    if (ec) {
      if (ec != http::error::end_of_stream && ec != beast::error::timeout &&
          ec != net::error::operation_aborted && ec != net::error::connection_reset &&
          ec != net::error::eof) {
        // A malformed request line or header, as uvicorn answers it.
        close_after_ = true;
        respond_text(400, "Invalid HTTP request received.", "text/plain; charset=utf-8");
        return;
      }
      return close();
    }
    t0_ = Clock::now();
    const auto& req = header_->get();
    keep_alive_ = req.keep_alive();
    request_id_ = std::string(req["x-typesafe-request-id"]);
    if (request_id_.empty()) request_id_ = srv_.next_request_id();
    std::string_view target(req.target().data(), req.target().size());
    if (size_t q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
    const bool has_body =
        (req.has_content_length() && req.payload_size().value_or(0) > 0) || req.chunked();
    // Route: the path, the trailing-slash redirect, the method.
    route_name_ = "other";
    const RouteInfo* hit = nullptr;
    for (const RouteInfo& r : kRoutes)
      if (target == r.path) hit = &r;
    if (hit == nullptr) {
      for (const RouteInfo& r : kRoutes)
        if (target.size() == std::strlen(r.path) + 1 && target.back() == '/' &&
            target.substr(0, target.size() - 1) == r.path) {
          std::string host(req[http::field::host]);
          if (host.empty()) host = "localhost";
          extra_.emplace_back("location", "http://" + host + r.path);
          if (has_body) close_after_ = true;
          return respond_raw(307, "", "");
        }
      if (has_body) close_after_ = true;
      return respond_detail(404, "Not Found");
    }
    route_ = hit->route;
    route_name_ = hit->name;
    if (req.method() != hit->verb) {
      extra_.emplace_back("allow", hit->verb == http::verb::post ? "POST" : "GET");
      if (has_body) close_after_ = true;
      return respond_detail(405, "Method Not Allowed");
    }
    if (srv_.draining.load()) {
      close_after_ = true;
      extra_.emplace_back("retry-after", "1");
      return respond_detail(503, "server is shutting down");
    }
    if (hit->verb == http::verb::get && has_body) close_after_ = true;  // its body is not read
    switch (route_) {
      case Route::kHealth:
        return health();
      case Route::kReady:
        return ready();
      case Route::kMetrics:
        return metrics();
      case Route::kModels:
        if (!authorized()) return refuse_unauthorized(has_body);
        return list_models();
      default:
        break;
    }
    // POST routes: auth, an admission slot, the declared length, then the body.
    if (!authorized()) return refuse_unauthorized(has_body);
    if (route_ == Route::kReload && srv_.cfg.api_key.empty() &&
        !stream_.socket().remote_endpoint().address().is_loopback()) {
      close_after_ = has_body;
      return respond_detail(403,
                            "POST /admin/reload without LAYA_API_KEY is for loopback clients only");
    }
    job_ = srv_.acquire();
    arriving_ = job_ != nullptr;
    if (job_ == nullptr) {
      srv_.metrics.admission_rejected();
      extra_.emplace_back("retry-after", "1");
      close_after_ = has_body;
      return respond_detail(503, kBusy);
    }
    if (auto cl = req[http::field::content_length]; !cl.empty()) {
      char* end = nullptr;
      const std::string s(cl);
      const unsigned long long n = std::strtoull(s.c_str(), &end, 10);
      if (end != s.c_str() && n > kMaxBodyBytes) {
        close_after_ = true;
        return respond_detail(413, kTooLarge);
      }
    }
    body_.emplace(std::move(*header_));
    header_.reset();
    body_->body_limit(kMaxBodyBytes);
    // The body's deadline covers the whole read (from here, the 100 Continue included). Our own
    // timer: a tcp_stream timeout would close the socket before the 408 could be written.
    stream_.expires_never();
    body_timed_out_ = false;
    body_timer_.expires_after(std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(srv_.cfg.body_read_timeout_s)));
    body_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return;  // cancelled: the body arrived
      self->body_timed_out_ = true;
      beast::error_code e;
      self->stream_.socket().cancel(e);
    });
    if (beast::iequals(body_->get()[http::field::expect], "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      http::async_write(stream_, *cont,
                        [self = shared_from_this(), cont](beast::error_code e, size_t) {
                          if (e) return self->close();
                          self->read_body();
                        });
      return;
    }
    read_body();
  }

  void read_body() {
    http::async_read(stream_, buffer_, *body_,
                     beast::bind_front_handler(&Session::on_body, shared_from_this()));
  }

  void on_body(beast::error_code ec, size_t) {
    body_timer_.cancel();
    if (ec == http::error::body_limit) {
      close_after_ = true;
      return respond_detail(413, kTooLarge);
    }
    if (body_timed_out_) {
      close_after_ = true;
      return respond_detail(408, kTimeout);
    }
    if (ec) return close();  // the client went away
    auto& req = body_->get();
    std::string& raw = req.body();
    if (beast::iequals(req[http::field::content_encoding], "zstd")) {
      std::string plain;
      const int st = zstd_decode(raw, kMaxBodyBytes, &plain);
      if (st == 413) return respond_detail(413, kTooLarge);
      if (st != 0) return respond_detail(400, "request body is not a valid zstd frame");
      raw.swap(plain);
    }
    sequence_ = std::string(req[srv_.cfg.sequence_header]);
    if (route_ == Route::kReload) return reload(raw);
    inference(raw);
  }

  bool authorized() const {
    if (srv_.cfg.api_key.empty()) return true;
    const http::fields& f = header_ ? header_->get().base() : body_->get().base();
    const std::string got = latin1_to_utf8(strip(std::string(f[http::field::authorization])));
    return constant_time_equal(got, "Bearer " + srv_.cfg.api_key);
  }

  void refuse_unauthorized(bool has_body) {
    close_after_ = has_body;
    respond_detail(401, kUnauthorized);
  }

  // ---- GET routes ----

  void health() {
    if (!srv_.cfg.api_key.empty() && !authorized()) return respond_json(200, "{\"status\":\"ok\"}");
    Value loaded = Value::array(), revisions = Value::object(), devices = Value::object(),
          fallbacks = Value::object();
    for (const auto& m : srv_.models.all()) {
      loaded.push(Value::string(m->name()));
      const char* sha = m->info().source_sha256;
      revisions.set(m->name(), sha != nullptr && *sha ? Value::string(sha) : Value());
      devices.set(m->name(), Value::string("cpu"));
      Value fb = Value::object();
      fb.set("count", Value::integer(0));
      fb.set("last_reason", Value());
      fallbacks.set(m->name(), std::move(fb));
    }
    Value v = Value::object();
    v.set("status", Value::string("ok"));
    v.set("loaded", std::move(loaded));
    v.set("revisions", std::move(revisions));
    v.set("device", Value::string("cpu"));
    v.set("device_is_preference", Value::boolean(false));
    v.set("checkpoint_devices", std::move(devices));
    v.set("cpu_fallbacks", std::move(fallbacks));
    respond_json(200, response_text(v));
  }

  void ready() {
    if (srv_.models.all().empty()) return respond_json(503, "{\"status\":\"loading\"}");
    respond_json(200, "{\"status\":\"ready\"}");
  }

  void metrics() {
    std::vector<Metrics::ModelRow> rows;
    for (const auto& m : srv_.models.all())
      rows.push_back({m->name(), m->path(), m->is_decoder() ? "decoder" : "encoder",
                      std::chrono::duration<double>(m->loaded_at().time_since_epoch()).count()});
    respond_raw(200, srv_.metrics.text(rows), "text/plain; version=0.0.4; charset=utf-8");
  }

  // The models as typesafe-sdk's models.list() reads them: {"models": [{"name", "description",
  // "release_date"}]}.
  void list_models() {
    Value list = Value::array();
    for (const auto& m : srv_.models.all()) {
      const laya_model_info& i = m->info();
      char desc[512];
      std::snprintf(desc, sizeof desc, "%s %s model, %lld parameters (%s), from %s", i.architecture,
                    m->is_decoder() ? "decoder" : "encoder decision",
                    static_cast<long long>(i.parameters), i.weight_dtypes, m->path().c_str());
      const std::time_t t = std::chrono::system_clock::to_time_t(m->loaded_at());
      std::tm tm{};
      gmtime_r(&t, &tm);
      char date[16];
      std::strftime(date, sizeof date, "%Y-%m-%d", &tm);
      Value e = Value::object();
      e.set("name", Value::string(m->name()));
      e.set("description", Value::string(desc));
      e.set("release_date", Value::string(date));
      list.push(std::move(e));
    }
    Value v = Value::object();
    v.set("models", std::move(list));
    respond_json(200, response_text(v));
  }

  // ---- inference ----

  // Which served model answers, and upstream's routing report. False when answered (refused).
  bool pick_model(const Value& body, const Value& state, std::shared_ptr<ServedModel>* model,
                  Value* routing) {
    decision::RouteQuery q;
    q.state = state;
    q.questions = body.find("questions");
    for (const char* k : {"task", "lang", "lang_guess"})
      if (const Value* v = body.find(k))
        (std::string(k) == "task" ? q.task : std::string(k) == "lang" ? q.lang : q.lang_guess) = *v;
    if (const Value* m = body.find("model"); m != nullptr && truthy(*m)) {
      const std::string text = strip(py::str(*m));
      const std::string low = py::encode(py::lower(py::decode(text)));
      std::string name;
      for (const auto& served : srv_.models.all())
        if (served->name() == low || served->name() == text) name = served->name();
      if (name.empty()) {
        if (low == "convaiinnovations/laya-multilingual") {
          name = "multilingual";
        } else if (low == "convaiinnovations/laya-typed-decisions") {
          name = "typed-decisions";
        } else if (low != "convaiinnovations/laya") {
          Result<std::string> r = srv_.router->resolve(*m);
          if (r.is_ok()) {
            name = *r;
          } else if (!text.empty() && (text[0] == '.' || text[0] == '~' ||
                                       text.find_first_of("/\\") != std::string::npos)) {
            respond_detail(422, std::string(r.status().message()) +
                                    ", or omit model to let the router choose");
            return false;
          }
        }
      }
      if (!name.empty()) q.model = Value::string(name);
    }
    Result<Value> d = srv_.router->route(q);
    if (!d.is_ok()) {
      const int st = d.status().code() == StatusCode::kRequestInvalid ? 400 : 422;
      respond_detail(st, d.status().message());
      return false;
    }
    *routing = std::move(d).value();
    const std::string chosen =
        routing->find("model") != nullptr ? routing->find("model")->as_string() : "";
    *model = srv_.models.get(chosen);
    if (*model == nullptr) {
      if (!q.model.is_null()) {
        respond_detail(422, "model " + py::repr(chosen) + " is not served here");
        return false;
      }
      *model = srv_.models.get(srv_.default_model);
      if (*model == nullptr) {
        respond_detail(503, "no model is loaded");
        return false;
      }
      routing->set("model", Value::string((*model)->name()));
      routing->set("repo", Value::string((*model)->path()));
      routing->set("reason",
                   Value::string(routing->find("reason")->as_string() + "; " + py::repr(chosen) +
                                 " is not served here, so the default"));
    }
    return true;
  }

  void inference(std::string& raw) {
    Result<Value> parsed = json::parse(raw, json::ParseOptions{}, "request body");
    if (!parsed.is_ok()) {
      const bool surrogate = std::string_view(parsed.status().message()).find("lone surrogate") !=
                             std::string_view::npos;
      return respond_detail(400, surrogate ? kSurrogate : kBadJson);
    }
    Value& body = *parsed;
    calls_.clear();
    routings_.clear();
    state_models_.clear();
    tour_.reset();
    tour_template_.reset();
    stream_requested_ = false;
    bool rewrite = false;
    if (route_ == Route::kSystemOne) {
      if (body.is_object() && body.find("states")) {  // upstream reads `state` only here
        auto& mem = body.members();
        mem.erase(std::remove_if(mem.begin(), mem.end(),
                                 [](const json::Member& m) { return m.key == "states"; }),
                  mem.end());
        rewrite = true;
      }
      const Value* st = body.is_object() ? body.find("state") : nullptr;
      Value routing;
      std::shared_ptr<ServedModel> model;
      const Value* qs = body.is_object() ? body.find("questions") : nullptr;
      if (qs != nullptr && qs->is_object() && st != nullptr && !st->is_null()) {
        if (!pick_model(body, *st, &model, &routing)) return;
      } else {
        model = srv_.models.get(srv_.default_model);  // the library refuses the body
      }
      routings_.push_back(std::move(routing));
      calls_.push_back(Call{model, rewrite ? json::dump(body) : std::move(raw), {0}});
    } else if (route_ == Route::kBatch) {
      if (!body.is_object() || (!body.find("questions") && !body.find("schema")) ||
          !body.find("states"))
        return respond_detail(
            400, "request body must be an object with 'states' and 'questions' fields");
      if (body.find("state")) {
        auto& mem = body.members();
        mem.erase(std::remove_if(mem.begin(), mem.end(),
                                 [](const json::Member& m) { return m.key == "state"; }),
                  mem.end());
        rewrite = true;
      }
      const Value& states = *body.find("states");
      const Value* qs = body.find("questions");
      if (!states.is_array() || states.items().empty() ||
          states.items().size() > static_cast<size_t>(64) || (qs != nullptr && !qs->is_object())) {
        // the library answers these with upstream's messages
        calls_.push_back(Call{
            srv_.models.get(srv_.default_model), rewrite ? json::dump(body) : std::move(raw), {}});
      } else {
        // Each state routed; states of one model answered together, in order.
        std::vector<std::shared_ptr<ServedModel>> chosen;
        for (const Value& s : states.items()) {
          Value routing;
          std::shared_ptr<ServedModel> m;
          if (s.is_null()) {
            m = srv_.models.get(srv_.default_model);  // the library refuses it
          } else if (!pick_model(body, s, &m, &routing)) {
            return;
          }
          routings_.push_back(std::move(routing));
          chosen.push_back(m);
        }
        state_models_ = chosen;
        for (size_t i = 0; i < chosen.size(); ++i) {
          Call* c = nullptr;
          for (Call& k : calls_)
            if (k.model == chosen[i]) c = &k;
          if (c == nullptr) {
            calls_.push_back(Call{chosen[i], "", {}});
            c = &calls_.back();
          }
          c->states.push_back(i);
        }
        if (calls_.size() == 1) {
          calls_[0].body = rewrite ? json::dump(body) : std::move(raw);
        } else {
          for (Call& c : calls_) {
            Value sub = body;
            Value list = Value::array();
            for (size_t i : c.states) list.push(states.items()[i]);
            sub.set("states", std::move(list));
            c.body = json::dump(sub);
          }
        }
      }
    } else {  // kDecide: a decoder's schema decision
      if (!body.is_object()) return respond_detail(400, "request body must be a JSON object");
      if (const Value* s = body.find("stream")) {
        if (!s->is_bool()) return respond_detail(422, "stream must be a boolean");
        stream_requested_ = s->as_bool();
        auto& mem = body.members();
        mem.erase(std::remove_if(mem.begin(), mem.end(),
                                 [](const json::Member& m) { return m.key == "stream"; }),
                  mem.end());
        rewrite = true;
      }
      std::shared_ptr<ServedModel> model;
      if (const Value* m = body.find("model"); m != nullptr && m->is_string()) {
        model = srv_.models.get(m->as_string());
        if (model == nullptr)
          return respond_detail(422, "model " + py::repr(m->as_string()) + " is not served here");
      } else {
        for (const auto& s : srv_.models.all())
          if (s->is_decoder() && (model == nullptr || s->name() == srv_.default_model)) model = s;
      }
      if (model == nullptr || !model->is_decoder())
        return respond_detail(422, "POST /v1/decide needs a decoder model (none is served)");
      if (!body.find("schema") || body.find("questions"))
        return respond_detail(400, "request body must be an object with a 'schema' field");
      calls_.push_back(Call{model, rewrite ? json::dump(body) : std::move(raw), {}});
    }
    if (calls_[0].model == nullptr) return respond_detail(503, "no model is loaded");
    if (route_ != Route::kDecide && srv_.cfg.tournament_group != 0 && body.is_object()) {
      const Value* states = body.find("states");
      const bool runnable = route_ == Route::kSystemOne ||
                            (states != nullptr && states->is_array() && !states->items().empty() &&
                             states->items().size() <= 64 && !state_models_.empty());
      bool refused = false;
      if (runnable && start_tournament(body, &refused)) {
        if (refused) return;
        tour_models_ = state_models_;
        calls_.resize(1);
        if (route_ == Route::kBatch) calls_[0].model = tour_models_[0];
        calls_[0].body = tournament_body();
      }
    }
    next_call_ = 0;
    submit(0);
  }

  void submit(size_t i) {
    Call& c = calls_[i];
    Job* j = job_;
    j->kind = stream_requested_ ? Job::Kind::kStream : Job::Kind::kDecide;
    j->body.assign(c.body);
    j->sequence = sequence_;
    j->status = LAYA_OK;
    j->text.clear();
    if (stream_requested_) {
      stream_open_ = std::make_shared<std::atomic<bool>>(true);
      j->on_piece = [self = shared_from_this(), open = stream_open_](std::string_view piece) {
        if (!open->load()) return false;
        net::post(self->stream_.get_executor(),
                  [self, p = std::string(piece)] { self->sse_event("token", token_json(p)); });
        return true;
      };
      start_sse();
    }
    j->done = [self = shared_from_this()] {
      net::post(self->stream_.get_executor(), [self] { self->on_call_done(); });
    };
    c.model->submit(j);
    if (arriving_) {
      arriving_ = false;
      srv_.arrived();
    }
  }

  static std::string token_json(const std::string& piece) {
    Value v = Value::object();
    v.set("text", Value::string(piece));
    return response_text(v);
  }

  void on_call_done() {
    Call& c = calls_[next_call_];
    c.status = job_->status;
    c.text.assign(job_->text);
    c.infer_ms = job_->infer_ms;
    c.queue_ms = job_->queue_ms;
    c.batch_size = job_->batch_size;
    c.batch_id = job_->batch_id;
    srv_.metrics.queue_wait(c.queue_ms / 1000.0);
    if (tour_) return tournament_step();
    if (c.status == LAYA_OK && ++next_call_ < calls_.size()) return submit(next_call_);
    finish_inference();
  }

  void finish_inference() {
    double infer = tour_infer_ms_, queue = tour_queue_ms_;
    for (const Call& c : calls_) {
      infer += c.infer_ms;
      queue += c.queue_ms;
    }
    extra_.emplace_back("server-timing", "inference;dur=" + fmt2(infer));
    extra_.emplace_back("x-inference-time-ms", fmt2(infer));
    extra_.emplace_back("x-laya-queue-ms", fmt2(queue));
    extra_.emplace_back("x-laya-batch", std::to_string(calls_.back().batch_id) + "/" +
                                            std::to_string(calls_.back().batch_size));
    for (const Call& c : calls_) {
      if (c.status == LAYA_OK) continue;
      if (c.status == LAYA_E_ABORTED) {  // a streaming client went away: nothing to answer
        close_after_ = true;
        if (stream_requested_) return sse_end("error", detail_body("aborted"));
        return respond_detail(499, "client closed the request");
      }
      const int st = http_status(c.status);
      if (st == 500) {
        log_line("laya-serve: inference failed: %s (%s)", c.text, c.model->name());
        if (stream_requested_) return sse_end("error", detail_body(kInferenceFailed));
        return respond_detail(500, kInferenceFailed);
      }
      if (stream_requested_) return sse_end("error", detail_body(c.text));
      return respond_detail(st, c.text);
    }
    if (tour_) {  // the tournament's results, rebuilt
      if (route_ == Route::kSystemOne) return respond_result(std::move(tour_results_[0]));
      return respond_batch(std::move(tour_results_));
    }
    Result<Value> first = json::parse(calls_[0].text);
    if (!first.is_ok()) return respond_detail(500, kInferenceFailed);
    if (route_ == Route::kDecide) {
      if (stream_requested_) return sse_end("decision", response_text(*first));
      return respond_json(200, response_text(*first));
    }
    if (route_ == Route::kSystemOne) return respond_result(std::move(first).value());
    // The batch route: results in the request's order.
    size_t n = 0;
    for (const Call& c : calls_) n += c.states.size();
    std::vector<Value> results(n);
    for (size_t k = 0; k < calls_.size(); ++k) {
      Result<Value> list = k == 0 ? std::move(first) : json::parse(calls_[k].text);
      if (!list.is_ok() || !list->is_array() || list->items().size() != calls_[k].states.size())
        return respond_detail(500, kInferenceFailed);
      for (size_t i = 0; i < calls_[k].states.size(); ++i)
        results[calls_[k].states[i]] = std::move(list->items()[i]);
    }
    respond_batch(std::move(results));
  }

  // /v1/systemone's answer: the result with its routing, strict or with x_jev_confidence.
  void respond_result(Value result) {
    const Value* routing = routings_.empty() || routings_[0].is_null() ? nullptr : &routings_[0];
    respond_json(200, response_text(serve_result(std::move(result), routing, srv_.cfg.jev_strict)));
  }

  // The batch route's answer: each result with its state's routing; the total usage.
  void respond_batch(std::vector<Value> results) {
    int64_t in = 0, out = 0;
    Value list = Value::array();
    for (size_t i = 0; i < results.size(); ++i) {
      if (const Value* u = results[i].find("usage")) {
        if (const Value* t = u->find("input_tokens")) in += t->as_int64().value_or(0);
        if (const Value* t = u->find("output_tokens")) out += t->as_int64().value_or(0);
      }
      const Value* routing =
          i < routings_.size() && !routings_[i].is_null() ? &routings_[i] : nullptr;
      list.push(serve_result(std::move(results[i]), routing, srv_.cfg.jev_strict));
    }
    Value total = Value::object();
    total.set("input_tokens", Value::integer(in));
    total.set("output_tokens", Value::integer(out));
    Value v = Value::object();
    v.set("results", std::move(list));
    v.set("total_usage", std::move(total));
    respond_json(200, response_text(v));
  }

  // ---- tournament mode (LAYA_TOURNAMENT_GROUP; tournament.h) ----

  // After the body's checks: the tournament of each state, or false to answer in one pass.
  // Answers (refuses) and returns true when the request cannot go on.
  bool start_tournament(const Value& body, bool* refused) {
    *refused = false;
    const int g = srv_.cfg.tournament_group;
    const Value* qs = body.find("questions");
    if (g == 0 || qs == nullptr) return false;
    // serve._check_request_limits with the tournament's cap, before the plan.
    const Value* states = route_ == Route::kBatch ? body.find("states") : nullptr;
    std::vector<Value> each;
    if (states != nullptr) {
      each = states->items();
    } else {
      const Value* st = body.find("state");
      each.push_back(st != nullptr ? *st : Value());
    }
    for (const Value& st : each) {
      const Status lim =
          decision::check_server_limits(st, qs, decision::kMaxTournamentChoiceOptions);
      if (!lim.is_ok()) {
        *refused = true;
        respond_detail(lim.code() == StatusCode::kRequestInvalid    ? 400
                       : lim.code() == StatusCode::kRequestTooLarge ? 413
                                                                    : 422,
                       lim.message());
        return true;
      }
    }
    Result<std::optional<decision::Tournament>> plan = decision::Tournament::plan(*qs, g);
    if (!plan.is_ok()) {
      *refused = true;
      respond_detail(plan.status().code() == StatusCode::kRequestUnprocessable ? 422 : 500,
                     plan.status().code() == StatusCode::kRequestUnprocessable
                         ? std::string_view(plan.status().message())
                         : kInferenceFailed);
      return true;
    }
    if (!plan->has_value()) return false;
    tour_template_ = std::move(**plan);
    tour_base_ = body;
    for (const char* k : {"states", "batch_size", "sort_by_length"}) {
      auto& mem = tour_base_.members();
      mem.erase(
          std::remove_if(mem.begin(), mem.end(), [k](const json::Member& m) { return m.key == k; }),
          mem.end());
    }
    tour_states_ = std::move(each);
    tour_state_ = 0;
    tour_results_.clear();
    tour_infer_ms_ = tour_queue_ms_ = 0;
    tour_.emplace(*tour_template_);
    return true;
  }

  // The body of the tournament's next call for the current state.
  std::string tournament_body() {
    Value b = tour_base_;
    b.set("state", tour_states_[tour_state_]);
    b.set("questions", tour_->next_questions());
    return json::dump(b);
  }

  // A tournament call came back: the next round, the next state, or the answer.
  void tournament_step() {
    Call& c = calls_[0];
    if (c.status != LAYA_OK) return finish_inference();
    Result<Value> r = json::parse(c.text);
    const Status st = r.is_ok() ? tour_->answer(*r) : r.status();
    if (!st.is_ok()) {
      log_line("laya-serve: tournament failed: %s%s", st.message());
      return respond_detail(500, kInferenceFailed);
    }
    if (tour_->done()) {
      tour_results_.push_back(tour_->result());
      if (++tour_state_ == tour_states_.size()) return finish_inference();
      tour_.emplace(*tour_template_);
      if (route_ == Route::kBatch && tour_state_ < tour_models_.size())
        c.model = tour_models_[tour_state_];
    }
    tour_infer_ms_ += c.infer_ms;
    tour_queue_ms_ += c.queue_ms;
    c.infer_ms = c.queue_ms = 0;
    c.body = tournament_body();
    submit(0);
  }

  void reload(const std::string& raw) {
    std::string name, path;
    if (!strip(raw).empty()) {
      Result<Value> v = json::parse(raw);
      if (!v.is_ok() || !v->is_object()) return respond_detail(400, kBadJson);
      if (const Value* m = v->find("model"); m != nullptr && m->is_string()) name = m->as_string();
      if (const Value* p = v->find("path"); p != nullptr && p->is_string()) path = p->as_string();
    }
    // Loading takes a while: on the reload thread, answered on this connection's strand.
    srv_.queue_reload({name, path, [self = shared_from_this()](bool ok, std::string out) {
                         net::post(self->stream_.get_executor(), [self, ok, out] {
                           if (ok) return self->respond_json(200, out);
                           self->respond_detail(422, out);
                         });
                       }});
  }

  // ---- server-sent events (POST /v1/decide with "stream": true) ----

  void start_sse() {
    sse_ = true;
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::ok, 11);
    res->set(http::field::content_type, "text/event-stream");
    res->set(http::field::cache_control, "no-cache");
    res->set("x-typesafe-request-id", request_id_);
    res->keep_alive(false);
    res->chunked(true);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    sse_writing_ = true;
    http::async_write_header(stream_, *sr,
                             [self = shared_from_this(), res, sr](beast::error_code ec, size_t) {
                               self->sse_writing_ = false;
                               if (ec) {
                                 self->stream_open_->store(false);
                                 return;
                               }
                               self->sse_flush();
                             });
  }

  void sse_event(const char* event, const std::string& data) {
    sse_queue_.push_back(std::string("event: ") + event + "\ndata: " + data + "\n\n");
    sse_flush();
  }

  void sse_end(const char* event, const std::string& data) {
    sse_event(event, data);
    sse_done_ = true;
    sse_flush();
  }

  void sse_flush() {
    if (sse_writing_) return;
    if (!sse_queue_.empty()) {
      sse_writing_ = true;
      auto chunk = std::make_shared<std::string>(std::move(sse_queue_.front()));
      sse_queue_.pop_front();
      net::async_write(stream_, http::make_chunk(net::buffer(*chunk)),
                       [self = shared_from_this(), chunk](beast::error_code ec, size_t) {
                         self->sse_writing_ = false;
                         if (ec) {
                           self->stream_open_->store(false);
                           self->sse_queue_.clear();
                           if (self->sse_done_) self->finish_response(200, true);
                           return;
                         }
                         self->sse_flush();
                       });
      return;
    }
    if (sse_done_ && !sse_last_sent_) {
      sse_last_sent_ = true;
      sse_writing_ = true;
      net::async_write(stream_, http::make_chunk_last(),
                       [self = shared_from_this()](beast::error_code, size_t) {
                         self->sse_writing_ = false;
                         self->finish_response(200, true);
                       });
    }
  }

  // ---- responses ----

  void respond_detail(int status, std::string_view detail) {
    respond_json(status, detail_body(detail));
  }
  void respond_json(int status, std::string body) {
    respond_raw(status, std::move(body), "application/json");
  }
  void respond_text(int status, std::string body, const char* type) {
    respond_raw(status, std::move(body), type);
  }

  void respond_raw(int status, std::string body, const char* type) {
    res_ = {};
    res_.version(11);
    res_.result(static_cast<unsigned>(status));
    res_.set(http::field::server, "laya-serve");
    for (const auto& [k, v] : extra_) res_.set(k, v);
    extra_.clear();
    res_.set("x-typesafe-request-id", request_id_);
    if (*type) res_.set(http::field::content_type, type);
    res_.body() = std::move(body);
    const bool close = close_after_ || !keep_alive_ || srv_.draining.load();
    res_.keep_alive(!close);
    res_.prepare_payload();
    status_ = status;
    stream_.expires_after(std::chrono::seconds(30));
    http::async_write(stream_, res_,
                      [self = shared_from_this(), close](beast::error_code ec, size_t) {
                        self->stream_.expires_never();
                        self->finish_response(self->status_, close || ec);
                      });
  }

  void finish_response(int status, bool close) {
    srv_.metrics.request(route_name_, status, seconds_since(t0_));
    if (arriving_) {
      arriving_ = false;
      srv_.arrived();
    }
    if (job_ != nullptr) {
      srv_.release(job_);
      job_ = nullptr;
    }
    calls_.clear();
    routings_.clear();
    state_models_.clear();
    tour_models_.clear();
    tour_.reset();
    tour_template_.reset();
    tour_results_.clear();
    body_.reset();
    header_.reset();
    close_after_ = false;
    sse_ = sse_done_ = sse_last_sent_ = false;
    if (close) return this->close();
    read_header();
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.close();
  }

  beast::tcp_stream stream_;
  Server::Impl& srv_;
  net::steady_timer body_timer_;
  bool body_timed_out_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_;
  std::optional<http::request_parser<http::string_body>> body_;
  http::response<http::string_body> res_;
  std::vector<std::pair<std::string, std::string>> extra_;
  Route route_ = Route::kNone;
  const char* route_name_ = "other";
  Clock::time_point t0_;
  bool keep_alive_ = true;
  bool close_after_ = false;
  int status_ = 0;
  std::string request_id_;
  std::string sequence_;
  Job* job_ = nullptr;
  bool arriving_ = false;  // counted in srv_.arriving
  std::vector<Call> calls_;
  std::vector<Value> routings_;
  size_t next_call_ = 0;
  // tournament mode
  std::optional<decision::Tournament> tour_, tour_template_;
  Value tour_base_;
  std::vector<Value> tour_states_, tour_results_;
  std::vector<std::shared_ptr<ServedModel>> tour_models_, state_models_;
  size_t tour_state_ = 0;
  double tour_infer_ms_ = 0, tour_queue_ms_ = 0;
  bool stream_requested_ = false;
  bool sse_ = false, sse_writing_ = false, sse_done_ = false, sse_last_sent_ = false;
  std::deque<std::string> sse_queue_;
  std::shared_ptr<std::atomic<bool>> stream_open_ = std::make_shared<std::atomic<bool>>(false);
};

// ---- Impl -----------------------------------------------------------------------------------

void Server::Impl::accept() {
  acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket s) {
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
    } else {
      beast::error_code e;
      s.set_option(tcp::no_delay(true), e);
      std::make_shared<Session>(std::move(s), *this)->start();
    }
    accept();
  });
}

void Server::Impl::arm_completions() {
  cq_fd->async_read_some(net::buffer(&cq_value, sizeof cq_value),
                         [this](beast::error_code ec, size_t) {
                           if (ec == net::error::operation_aborted) return;
                           for (;;) {
                             const size_t n = cq->drain(cq_jobs.data(), cq_jobs.size());
                             for (size_t i = 0; i < n; ++i) {
                               Job* j = cq_jobs[i];
                               auto done = j->done;  // the job's slot may be reused after
                               if (done) done();
                             }
                             if (n < cq_jobs.size()) break;
                           }
                           arm_completions();
                         });
}

bool Server::Impl::reload(const std::string& name, const std::string& path, std::string* out) {
  std::lock_guard<std::mutex> lk(reload_mu);
  Value done = Value::array();
  bool any = false;
  for (ModelSpec& spec : specs) {
    if (!name.empty() && spec.name != name) continue;
    any = true;
    ModelSpec next = spec;
    if (!path.empty()) next.path = path;
    std::string err;
    const Clock::time_point t0 = Clock::now();
    std::shared_ptr<ServedModel> m = load(next, &err);
    if (m == nullptr) {
      metrics.model_event(spec.name, "reload", false);
      *out = "reload of " + py::repr(spec.name) + " from " + py::repr(next.path) +
             " failed: " + err + "; the old model keeps serving";
      log_line("laya-serve: %s%s", *out);
      return false;
    }
    models.replace(m);
    spec = next;
    metrics.model_event(spec.name, "reload", true);
    Value e = Value::object();
    e.set("model", Value::string(spec.name));
    e.set("path", Value::string(spec.path));
    e.set("load_ms", Value::number(py::round(seconds_since(t0) * 1000.0, 1)));
    done.push(std::move(e));
    log_line("laya-serve: reloaded %s from %s", spec.name, spec.path);
  }
  if (!any) {
    *out = "no served model is named " + py::repr(name);
    return false;
  }
  Value v = Value::object();
  v.set("reloaded", std::move(done));
  *out = response_text(v);
  return true;
}

void Server::Impl::drain_and_stop() {
  if (draining.exchange(true)) return;
  log_line("laya-serve: %s%s", "draining", "");
  beast::error_code ec;
  acceptor->close(ec);
  drain_until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(cfg.drain_timeout_s));
  drain_timer.emplace(ioc);
  drain_poll();
}

void Server::Impl::drain_poll() {
  if (in_flight.load() == 0 || Clock::now() >= drain_until) {
    ioc.stop();
    return;
  }
  drain_timer->expires_after(std::chrono::milliseconds(20));
  drain_timer->async_wait([this](beast::error_code) { drain_poll(); });
}

// ---- Server ---------------------------------------------------------------------------------

Server::Server(Config cfg) : impl_(std::make_unique<Impl>(std::move(cfg))) {}
Server::~Server() = default;

bool Server::load_models(std::string* err) {
  Impl& s = *impl_;
  s.id_seed = std::random_device{}();
  s.id_seed = (s.id_seed << 32) ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  const size_t slots = static_cast<size_t>(s.cfg.max_concurrent);
  s.cq = std::make_unique<CompletionQueue>(slots + 1);
  s.cq_jobs.resize(slots + 1);
  for (size_t i = 0; i < slots; ++i) {
    auto j = std::make_unique<Job>();
    j->body.reserve(64 << 10);
    j->text.reserve(64 << 10);
    s.free_jobs.push_back(j.get());
    s.jobs.push_back(std::move(j));
  }
  s.batch_opts.arriving = &s.arriving;
  s.batch_opts.window_ms = s.cfg.batch_window_ms;
  s.batch_opts.max_batch = s.cfg.max_batch;
  s.batch_opts.workers = s.cfg.workers;
  s.batch_opts.threads = s.cfg.threads;
  s.batch_opts.max_request_bytes = kMaxBodyBytes;
  decision::RouterOptions ro;
  ro.auto_task_detection = s.cfg.auto_task;
  for (ModelSpec spec : s.cfg.models) {
    if (!spec.name.empty() && !router_name(spec.name)) {
      *err = "model name " + py::repr(spec.name) +
             " must be lowercase letters, digits, '.', '_' or '-' (and not 'auto')";
      return false;
    }
    std::string e;
    std::shared_ptr<ServedModel> m = s.load(spec, &e);
    if (m == nullptr) {
      *err = "cannot serve " + spec.path + ": " + e;
      s.metrics.model_event(spec.name.empty() ? spec.path : spec.name, "load", false);
      return false;
    }
    spec.name = m->name();
    if (s.models.get(spec.name) != nullptr) {
      *err = "two models are named " + py::repr(spec.name) + ": name them (--model NAME=PATH)";
      return false;
    }
    s.models.add(m);
    s.specs.push_back(spec);
    s.metrics.model_event(spec.name, "load", true);
    ro.models.emplace_back(spec.name, spec.path);
    std::fprintf(stderr, "laya-serve: %s: %s (%s), loaded in %.0f ms\n", spec.name.c_str(),
                 spec.path.c_str(), m->is_decoder() ? "decoder" : "encoder", m->load_ms());
  }
  s.default_model = s.cfg.default_model.empty() ? s.specs[0].name : s.cfg.default_model;
  if (s.models.get(s.default_model) == nullptr) {
    *err = "invalid LAYA_DEFAULT_MODEL " + py::repr(s.default_model) + ": not a served model";
    return false;
  }
  ro.default_model = s.default_model;
  Result<decision::Router> r = decision::Router::create(ro);
  if (!r.is_ok()) {
    *err = r.status().message();
    return false;
  }
  s.router.emplace(std::move(r).value());
  if (s.cfg.max_token_budget != 8192)
    std::fprintf(stderr,
                 "laya-serve: LAYA_MAX_TOKEN_BUDGET=%lld: this build checks max_len and "
                 "head_max_len against 8192\n",
                 static_cast<long long>(s.cfg.max_token_budget));
  return true;
}

bool Server::listen(std::string* err) {
  Impl& s = *impl_;
  beast::error_code ec;
  const net::ip::address addr = net::ip::make_address(s.cfg.host, ec);
  if (ec) {
    *err = "invalid host " + s.cfg.host + ": " + ec.message();
    return false;
  }
  const tcp::endpoint ep(addr, static_cast<unsigned short>(s.cfg.port));
  s.acceptor.emplace(s.ioc);
  s.acceptor->open(ep.protocol(), ec);
  if (!ec) s.acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor->bind(ep, ec);
  if (!ec) s.acceptor->listen(4096, ec);  // bursts of connections queue, not SYN retries
  if (ec) {
    *err =
        "cannot listen on " + s.cfg.host + ":" + std::to_string(s.cfg.port) + ": " + ec.message();
    return false;
  }
  const auto bound = s.acceptor->local_endpoint();
  std::printf("laya-serve: listening on http://%s:%u\n", s.cfg.host.c_str(), bound.port());
  std::fflush(stdout);
  return true;
}

int Server::port() const {
  beast::error_code ec;
  return impl_->acceptor ? impl_->acceptor->local_endpoint(ec).port() : 0;
}

int Server::run() {
  Impl& s = *impl_;
  s.cq_fd = std::make_unique<net::posix::stream_descriptor>(s.ioc, dup(s.cq->fd()));
  s.arm_completions();
  s.signals.add(SIGTERM);
  s.signals.add(SIGINT);
  s.signals.add(SIGHUP);
  std::function<void(beast::error_code, int)> on_signal = [&s, &on_signal](beast::error_code ec,
                                                                           int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      s.queue_reload({"", "", nullptr});
      s.signals.async_wait(on_signal);
      return;
    }
    s.drain_and_stop();
  };
  s.signals.async_wait(on_signal);
  s.reloader = std::thread([&s] { s.reload_loop(); });
  s.accept();
  // Thread names: tests/serve/alloc_preload.c counts the heap calls of every thread but these.
  pthread_setname_np(pthread_self(), "laya-io");
  std::vector<std::thread> threads;
  for (int i = 1; i < s.cfg.io_threads; ++i)
    threads.emplace_back([&s] {
      pthread_setname_np(pthread_self(), "laya-io");
      s.ioc.run();
    });
  s.ioc.run();
  for (auto& t : threads) t.join();
  {
    std::lock_guard<std::mutex> lk(s.reload_q_mu);
    s.reload_stop = true;
    s.reload_q.clear();
  }
  s.reload_cv.notify_one();
  s.reloader.join();
  std::fprintf(stderr, "laya-serve: stopped\n");
  return 0;
}

}  // namespace laya::serve
