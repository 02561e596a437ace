// laya-serve's metrics in the Prometheus text format (version 0.0.4), served at GET /metrics.
// Histograms and counters are atomics (a worker records a batch without a lock or an
// allocation); labelled request counters sit behind a mutex on the I/O side.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <tuple>
#include <mutex>
#include <string>
#include <vector>

namespace laya::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double v);  // lock-free
  // Appends `name_bucket{labels,le="..."}` lines, _sum and _count.
  void write(std::string* out, const std::string& name, const std::string& labels) const;

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // per bucket (not cumulative) and +Inf
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

class Metrics {
 public:
  Metrics();
  void request(const std::string& route, int status, double seconds);
  void batch(int size, double infer_seconds);  // worker threads: no allocation
  void queue_wait(double seconds);
  void admission_rejected() { rejected_.fetch_add(1); }
  void in_flight(int delta) { in_flight_.fetch_add(delta); }
  void connection(int delta) { connections_.fetch_add(delta); }
  void model_event(const std::string& model, const std::string& event, bool ok);
  // Models currently served: name, path, kind ("encoder" / "decoder"), load time (Unix s).
  struct ModelRow {
    std::string name, path, kind;
    double loaded_unix = 0;
  };
  std::string text(const std::vector<ModelRow>& models) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  std::map<std::string, Histogram> latency_;  // by route
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> model_events_;
  Histogram batch_size_;
  Histogram infer_seconds_;
  Histogram queue_seconds_;
  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<int64_t> connections_{0};
};

}  // namespace laya::serve
