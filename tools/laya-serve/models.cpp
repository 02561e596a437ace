#include "tools/laya-serve/models.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace laya::serve {

using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// A decision every model can answer (a noul question: encoders read it at the marker, decoders
// at the option label tokens): the warm-up and the reload check.
constexpr char kWarmBody[] =
    "{\"state\": \"laya-serve warm-up\", \"questions\": {\"ready\": {\"type\": \"noul\", "
    "\"instructions\": \"Is the server ready?\"}}}";

}  // namespace

std::string served_name(const std::string& model_name) {
  std::string o;
  for (char c : model_name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c == ' ' || c == '/') c = '-';
    if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')
      o += c;
  }
  return o.empty() || o == "auto" ? "model" : o;
}

// ---- CompletionQueue ------------------------------------------------------------------------

CompletionQueue::CompletionQueue(size_t capacity) : ring_(capacity) {
  fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

CompletionQueue::~CompletionQueue() {
  if (fd_ >= 0) close(fd_);
}

void CompletionQueue::push(Job* j) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    // Capacity is the number of jobs that exist (one per admission slot): never full.
    ring_[(head_ + count_) % ring_.size()] = j;
    ++count_;
  }
  const uint64_t one = 1;
  ssize_t r;
  do {
    r = write(fd_, &one, sizeof one);
  } while (r < 0 && errno == EINTR);
}

size_t CompletionQueue::drain(Job** out, size_t max) {
  std::lock_guard<std::mutex> lk(mu_);
  size_t n = 0;
  while (count_ > 0 && n < max) {
    out[n++] = ring_[head_];
    head_ = (head_ + 1) % ring_.size();
    --count_;
  }
  return n;
}

// ---- ServedModel ----------------------------------------------------------------------------

std::atomic<uint64_t> ServedModel::next_batch_{1};

struct ServedModel::Worker {
  laya_context* ctx = nullptr;
  std::vector<std::unique_ptr<void, FreeDeleter>> regions;
  std::vector<laya_batch_item> items;
  std::vector<char> out;
  std::vector<Job*> batch;
  std::thread thread;
};

std::shared_ptr<ServedModel> ServedModel::load(const std::string& name, const std::string& path,
                                               const BatchOptions& opts, CompletionQueue* done,
                                               std::function<void(const BatchReport&)> on_batch,
                                               std::string* err) {
  const Clock::time_point t0 = Clock::now();
  std::shared_ptr<ServedModel> m(new ServedModel());
  m->path_ = path;
  m->opts_ = opts;
  m->done_ = done;
  m->on_batch_ = std::move(on_batch);
  laya_model_params mp = laya_model_default_params();
  mp.n_threads = opts.threads;
  laya_error e;
  if (laya_model_open_file(path.c_str(), &mp, &m->model_, &e) != LAYA_OK) {
    *err = e.message;
    return nullptr;
  }
  m->info_ = laya_model_info_init();
  laya_model_info_get(m->model_, &m->info_);
  m->name_ = name.empty() ? served_name(m->info_.name) : name;
  laya_context_limits lim = laya_context_default_limits();
  lim.max_request_bytes = opts.max_request_bytes;
  lim.max_batch = opts.max_batch;
  lim.n_threads = opts.threads;
  laya_memory_requirements req = laya_memory_requirements_init();
  if (laya_context_requirements(m->model_, &lim, &req, &e) != LAYA_OK) {
    *err = e.message;
    return nullptr;
  }
  for (int w = 0; w < opts.workers; ++w) {
    auto wk = std::make_unique<Worker>();
    laya_region regions[LAYA_REGION_COUNT];
    for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
      regions[r] = {nullptr, 0};
      if (req.size[r] == 0) continue;
      const uint64_t a = req.alignment[r];
      void* p = std::aligned_alloc(a, (req.size[r] + a - 1) / a * a);
      if (p == nullptr) {
        *err = "out of memory for a context of " + m->name_;
        return nullptr;
      }
      wk->regions.emplace_back(p);
      regions[r] = {p, req.size[r]};
    }
    if (laya_context_create(m->model_, &lim, regions, &wk->ctx, &e) != LAYA_OK) {
      *err = e.message;
      return nullptr;
    }
    wk->items.resize(static_cast<size_t>(opts.max_batch));
    wk->out.resize(static_cast<size_t>(opts.max_batch) * (64u << 10));
    wk->batch.reserve(static_cast<size_t>(opts.max_batch));
    // Warm-up: the first decision pays for first-touch pages and the kernels' first runs; the
    // reload check is the same call (a model that cannot answer it is refused).
    size_t n = 0;
    laya_status s =
        laya_decide(wk->ctx, kWarmBody, sizeof kWarmBody - 1, wk->out.data(), wk->out.size(), &n);
    if (s != LAYA_OK) {
      *err = std::string("the warm-up decision failed: ") + laya_status_string(s) + ": " +
             laya_context_error(wk->ctx);
      laya_context_destroy(wk->ctx);
      wk->ctx = nullptr;
      return nullptr;
    }
    m->workers_.push_back(std::move(wk));
  }
  m->in_flight_.reserve(static_cast<size_t>(opts.workers * opts.max_batch));
  for (auto& w : m->workers_) w->thread = std::thread([p = m.get(), w = w.get()] { p->work(w); });
  m->loaded_at_ = std::chrono::system_clock::now();
  m->load_ms_ = ms_since(t0);
  return m;
}

ServedModel::~ServedModel() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_)
    if (w->thread.joinable()) w->thread.join();
  for (auto& w : workers_) laya_context_destroy(w->ctx);
  workers_.clear();
  laya_model_close(model_);
}

void ServedModel::submit(Job* j) {
  j->next = nullptr;
  j->enqueued = Clock::now();
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (tail_ != nullptr)
      tail_->next = j;
    else
      head_ = j;
    tail_ = j;
    ++queued_;
  }
  cv_.notify_all();
}

bool ServedModel::eligible(const Job* j, const std::vector<Job*>& batch, uint64_t bytes) const {
  if (j->kind == Job::Kind::kStream || (!batch.empty() && batch[0]->kind == Job::Kind::kStream))
    return batch.empty();
  if (!batch.empty() && bytes + j->body.size() > opts_.max_request_bytes) return false;
  if (!j->sequence.empty()) {
    for (const std::string* k : in_flight_)
      if (*k == j->sequence) return false;
    for (const Job* b : batch)
      if (b->sequence == j->sequence) return false;
  }
  return true;
}

void ServedModel::work(Worker* w) {
  pthread_setname_np(pthread_self(), "laya-worker");
  std::vector<Job*>& batch = w->batch;
  const size_t max = static_cast<size_t>(opts_.max_batch);
  const auto window = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(opts_.window_ms));
  // The jobs a batch would take now, in queue order (taken when `take`).
  auto select = [&](bool take) {
    batch.clear();
    uint64_t bytes = 0;
    Job* prev = nullptr;
    for (Job* j = head_; j != nullptr && batch.size() < max;) {
      Job* next = j->next;
      if (eligible(j, batch, bytes)) {
        batch.push_back(j);
        bytes += j->body.size();
        if (take) {
          (prev != nullptr ? prev->next : head_) = next;
          if (tail_ == j) tail_ = prev;
          --queued_;
        } else {
          prev = j;
        }
      } else {
        prev = j;
      }
      j = next;
    }
  };
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    select(false);
    while (batch.empty() && !(stop_ && head_ == nullptr)) {
      cv_.wait(lk);
      select(false);
    }
    if (batch.empty()) break;  // stopping, and the queue is empty
    if (window.count() > 0 && max > 1 && batch[0]->kind != Job::Kind::kStream) {
      const Clock::time_point deadline = batch[0]->enqueued + window;
      // Requests still arriving may join; a slice of the window at a time, since an arrival
      // that ends in a refusal does not notify.
      const auto slice = std::chrono::microseconds(250);
      while (!stop_ && batch.size() < max && Clock::now() < deadline &&
             (opts_.arriving == nullptr || opts_.arriving->load() > 0)) {
        cv_.wait_until(lk, std::min(deadline, Clock::now() + slice));
        select(false);
      }
    }
    select(true);
    for (Job* j : batch)
      if (!j->sequence.empty()) in_flight_.push_back(&j->sequence);
    lk.unlock();

    const uint64_t id = next_batch_.fetch_add(1);
    const Clock::time_point t0 = Clock::now();
    const size_t n = batch.size();
    for (size_t i = 0; i < n; ++i) {
      Job* j = batch[i];
      j->queue_ms = std::chrono::duration<double, std::milli>(t0 - j->enqueued).count();
      w->items[i] = {j->body.data(), j->body.size(), LAYA_OK, 0, 0};
    }
    if (batch[0]->kind == Job::Kind::kStream) {
      laya_context_set_stream(
          w->ctx,
          [](void* user, int32_t, const char* piece, size_t len) {
            Job* j = static_cast<Job*>(user);
            return j->on_piece(std::string_view(piece, len)) ? 0 : 1;
          },
          nullptr, batch[0]);
    }
    size_t need = 0;
    laya_status s =
        laya_decide_batch(w->ctx, w->items.data(), n, w->out.data(), w->out.size(), &need);
    if (s == LAYA_E_BUFFER_TOO_SMALL) {  // a rare large answer: the buffer grows once
      w->out.resize(need + (need >> 2));
      s = laya_decide_batch(w->ctx, w->items.data(), n, w->out.data(), w->out.size(), &need);
    }
    if (batch[0]->kind == Job::Kind::kStream)
      laya_context_set_stream(w->ctx, nullptr, nullptr, nullptr);
    const double infer_ms = ms_since(t0);
    for (size_t i = 0; i < n; ++i) {
      Job* j = batch[i];
      j->infer_ms = infer_ms;
      j->batch_size = static_cast<int>(n);
      j->batch_id = id;
      if (s != LAYA_OK) {
        j->status = s;
        j->text.assign(laya_context_error(w->ctx));
      } else {
        j->status = w->items[i].status;
        j->text.assign(w->out.data() + w->items[i].json_offset, w->items[i].json_len);
      }
    }
    if (on_batch_) on_batch_(BatchReport{static_cast<int>(n), infer_ms});
    lk.lock();
    for (Job* j : batch)
      if (!j->sequence.empty())
        in_flight_.erase(std::find(in_flight_.begin(), in_flight_.end(), &j->sequence));
    lk.unlock();
    cv_.notify_all();
    for (Job* j : batch) done_->push(j);  // the job is the I/O side's from here
    lk.lock();
  }
}

// ---- ModelSet -------------------------------------------------------------------------------

void ModelSet::add(std::shared_ptr<ServedModel> m) {
  std::lock_guard<std::mutex> lk(mu_);
  models_.push_back(std::move(m));
}

std::shared_ptr<ServedModel> ModelSet::get(const std::string& name) const {
  std::lock_guard<std::mutex> lk(mu_);
  for (const auto& m : models_)
    if (m->name() == name) return m;
  return nullptr;
}

std::vector<std::shared_ptr<ServedModel>> ModelSet::all() const {
  std::lock_guard<std::mutex> lk(mu_);
  return models_;
}

void ModelSet::replace(std::shared_ptr<ServedModel> m) {
  std::shared_ptr<ServedModel> old;
  {
    std::lock_guard<std::mutex> lk(mu_);
    for (auto& cur : models_)
      if (cur->name() == m->name()) {
        old = std::move(cur);
        cur = std::move(m);
        break;
      }
    if (m) models_.push_back(std::move(m));
  }
  // `old` goes here unless requests still hold it.
}

}  // namespace laya::serve
