#include "tools/laya-serve/metrics.h"

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <tuple>

#include "runtime/text/json.h"

namespace laya::serve {
namespace {

const std::vector<double> kLatencyBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                            0.1,    0.25,  0.5,    1,     2.5,  5,     10};
const std::vector<double> kBatchBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};

std::string num(double v) {
  return json::python_float_repr(v);
}

// A label value escaped as the text format asks (backslash, quote, newline).
std::string label(const std::string& v) {
  std::string o;
  for (char c : v) {
    if (c == '\\' || c == '"') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o;
}

void header(std::string* out, const char* name, const char* type, const char* help) {
  *out += "# HELP ";
  *out += name;
  *out += ' ';
  *out += help;
  *out += "\n# TYPE ";
  *out += name;
  *out += ' ';
  *out += type;
  *out += '\n';
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)),
      counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1)) {
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::observe(double v) {
  size_t i = 0;
  while (i < bounds_.size() && v > bounds_[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  double cur = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

void Histogram::write(std::string* out, const std::string& name, const std::string& labels) const {
  uint64_t cum = 0;
  const std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cum += counts_[i].load(std::memory_order_relaxed);
    const std::string le = i < bounds_.size() ? num(bounds_[i]) : "+Inf";
    *out += name + "_bucket{" + labels + sep + "le=\"" + le + "\"} " + std::to_string(cum) + "\n";
  }
  const std::string l = labels.empty() ? "" : "{" + labels + "}";
  *out += name + "_sum" + l + " " + num(sum_.load()) + "\n";
  *out += name + "_count" + l + " " + std::to_string(count_.load()) + "\n";
}

Metrics::Metrics()
    : batch_size_(kBatchBounds), infer_seconds_(kLatencyBounds), queue_seconds_(kLatencyBounds) {}

void Metrics::request(const std::string& route, int status, double seconds) {
  std::lock_guard<std::mutex> lk(mu_);
  ++requests_[{route, status}];
  auto it = latency_.find(route);
  if (it == latency_.end()) it = latency_.try_emplace(route, kLatencyBounds).first;
  it->second.observe(seconds);
}

void Metrics::batch(int size, double infer_seconds) {
  batches_.fetch_add(1, std::memory_order_relaxed);
  batch_size_.observe(size);
  infer_seconds_.observe(infer_seconds);
}

void Metrics::queue_wait(double seconds) {
  queue_seconds_.observe(seconds);
}

void Metrics::model_event(const std::string& model, const std::string& event, bool ok) {
  std::lock_guard<std::mutex> lk(mu_);
  ++model_events_[{model, event, ok ? "ok" : "error"}];
}

std::string Metrics::text(const std::vector<ModelRow>& models) const {
  std::string out;
  std::lock_guard<std::mutex> lk(mu_);
  header(&out, "laya_serve_requests_total", "counter",
         "HTTP requests answered, by route and status.");
  for (const auto& [k, n] : requests_)
    out += "laya_serve_requests_total{route=\"" + label(k.first) + "\",status=\"" +
           std::to_string(k.second) + "\"} " + std::to_string(n) + "\n";
  header(&out, "laya_serve_request_duration_seconds", "histogram",
         "Time from a request's headers to its response, by route.");
  for (const auto& [route, h] : latency_)
    h.write(&out, "laya_serve_request_duration_seconds", "route=\"" + label(route) + "\"");
  header(&out, "laya_serve_batch_size", "histogram", "Requests per batch a worker answered.");
  batch_size_.write(&out, "laya_serve_batch_size", "");
  header(&out, "laya_serve_inference_seconds", "histogram",
         "One batch's laya_decide_batch call (every request of the batch waits for it).");
  infer_seconds_.write(&out, "laya_serve_inference_seconds", "");
  header(&out, "laya_serve_queue_wait_seconds", "histogram",
         "Time a request waited in its model's queue before its batch started.");
  queue_seconds_.write(&out, "laya_serve_queue_wait_seconds", "");
  header(&out, "laya_serve_admission_rejections_total", "counter",
         "Requests refused with 503 because every admission slot was taken.");
  out += "laya_serve_admission_rejections_total " + std::to_string(rejected_.load()) + "\n";
  header(&out, "laya_serve_in_flight_requests", "gauge", "Requests holding an admission slot.");
  out += "laya_serve_in_flight_requests " + std::to_string(in_flight_.load()) + "\n";
  header(&out, "laya_serve_open_connections", "gauge", "Open client connections.");
  out += "laya_serve_open_connections " + std::to_string(connections_.load()) + "\n";
  header(&out, "laya_serve_model_events_total", "counter",
         "Model loads and reloads, by model, event and result.");
  for (const auto& [k, n] : model_events_)
    out += "laya_serve_model_events_total{model=\"" + label(std::get<0>(k)) + "\",event=\"" +
           std::get<1>(k) + "\",result=\"" + std::get<2>(k) + "\"} " + std::to_string(n) + "\n";
  header(&out, "laya_serve_model_loaded_timestamp_seconds", "gauge",
         "When each served model was loaded (Unix time).");
  for (const ModelRow& m : models)
    out += "laya_serve_model_loaded_timestamp_seconds{model=\"" + label(m.name) + "\",path=\"" +
           label(m.path) + "\",kind=\"" + m.kind + "\"} " + num(m.loaded_unix) + "\n";
  return out;
}

}  // namespace laya::serve
