// The models laya-serve serves, and the batcher of each: requests queue per model; each worker
// owns one context (include/laya/laya.h) on memory allocated once at load, takes the requests
// that arrive within a window (at most max_batch, never two with the same ordering key, never
// more body bytes than one request may have) and answers them with one laya_decide_batch: one
// packed forward pass per batch on an encoder, every answer byte-identical to the request alone.
//
// Memory is fixed after load: the contexts' regions, a result buffer per worker, and a Job per
// admission slot (server.h) whose buffers are reserved up front. A worker's loop allocates nothing
// (tests/serve/test_serve_alloc.py counts it under load): it copies each answer into the job's
// reserved buffer and hands the job to the I/O side through a CompletionQueue (a fixed ring and
// an eventfd).
//
// Hot reload: a ServedModel is shared (std::shared_ptr); a request holds its model until its
// response is written. ModelSet::replace swaps the name to a new, loaded and warmed model; the old
// one's queue drains, and it is closed (contexts destroyed, the file unmapped) when its last
// request lets go.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "include/laya/laya.h"

namespace laya::serve {

class ServedModel;

// A model's own name (laya_model_info.name) as a served name: lowercase letters, digits, '.',
// '_' and '-' (what the router takes).
std::string served_name(const std::string& model_name);

// One admitted request's work for a worker, and its answer. Owned by an admission slot; reused.
struct Job {
  enum class Kind : uint8_t { kDecide, kStream };
  Kind kind = Kind::kDecide;
  std::string body;      // the body the library reads
  std::string sequence;  // ordering key ("": none)
  // kStream: called on the worker thread for each token (piece bytes); returns false to stop.
  std::function<bool(std::string_view piece)> on_piece;
  // results
  laya_status status = LAYA_OK;
  std::string text;  // the answer's JSON, or the failure's message
  double queue_ms = 0, infer_ms = 0;
  int batch_size = 0;
  uint64_t batch_id = 0;
  // bookkeeping
  std::chrono::steady_clock::time_point enqueued;
  std::function<void()> done;  // run on an I/O thread when the answer is in
  Job* next = nullptr;         // the queue's link
};

// Jobs done by workers, handed to the I/O side: a mutex-guarded ring of fixed capacity and an
// eventfd the I/O loop waits on.
class CompletionQueue {
 public:
  explicit CompletionQueue(size_t capacity);
  ~CompletionQueue();
  int fd() const { return fd_; }
  void push(Job* j);                    // any thread
  size_t drain(Job** out, size_t max);  // the I/O side, after the eventfd fired

 private:
  std::mutex mu_;
  std::vector<Job*> ring_;
  size_t head_ = 0, count_ = 0;
  int fd_ = -1;
};

struct BatchOptions {
  // A batch waits up to window_ms for more requests, but only while requests are arriving: admitted
  // and not yet queued (null: always the whole window). A lone request runs at once.
  const std::atomic<int>* arriving = nullptr;
  double window_ms = 10;
  int max_batch = 16;
  int workers = 1;
  int threads = 0;  // per context
  uint64_t max_request_bytes = 2u << 20;
};

// What a worker reports after each batch (metrics.h), on its thread: must not allocate.
struct BatchReport {
  int size = 0;
  double infer_ms = 0;
};

class ServedModel {
 public:
  // Opens `path`, makes `opts.workers` contexts and warms each with one decision. `name` empty:
  // served_name of the model's own. On failure returns null with the reason in `*err`.
  static std::shared_ptr<ServedModel> load(const std::string& name, const std::string& path,
                                           const BatchOptions& opts, CompletionQueue* done,
                                           std::function<void(const BatchReport&)> on_batch,
                                           std::string* err);
  ~ServedModel();  // stops the workers (after the queue drains), frees contexts, closes the model

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  const laya_model_info& info() const { return info_; }
  bool is_decoder() const { return info_.kind == LAYA_MODEL_DECODER; }
  std::chrono::system_clock::time_point loaded_at() const { return loaded_at_; }
  double load_ms() const { return load_ms_; }

  // Queues a job; its `done` runs when the answer is in. Never blocks.
  void submit(Job* j);

 private:
  ServedModel() = default;
  struct Worker;
  void work(Worker* w);
  bool eligible(const Job* j, const std::vector<Job*>& batch, uint64_t bytes) const;

  std::string name_, path_;
  laya_model* model_ = nullptr;
  laya_model_info info_ = {};
  BatchOptions opts_;
  CompletionQueue* done_ = nullptr;
  std::function<void(const BatchReport&)> on_batch_;
  std::chrono::system_clock::time_point loaded_at_;
  double load_ms_ = 0;
  std::vector<std::unique_ptr<Worker>> workers_;

  std::mutex mu_;
  std::condition_variable cv_;
  Job* head_ = nullptr;
  Job* tail_ = nullptr;
  size_t queued_ = 0;
  std::vector<const std::string*> in_flight_;  // ordering keys of jobs being answered
  bool stop_ = false;
  static std::atomic<uint64_t> next_batch_;
};

// Served models by name. Thread-safe.
class ModelSet {
 public:
  void add(std::shared_ptr<ServedModel> m);
  std::shared_ptr<ServedModel> get(const std::string& name) const;  // null when not served
  std::vector<std::shared_ptr<ServedModel>> all() const;
  // Swaps `m` in under its name; the old model is released by its last request.
  void replace(std::shared_ptr<ServedModel> m);

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<ServedModel>> models_;
};

}  // namespace laya::serve
