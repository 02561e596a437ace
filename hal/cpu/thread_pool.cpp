#include "hal/cpu/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include <oneapi/tbb/info.h>
#include <oneapi/tbb/task_arena.h>

namespace laya::hal::cpu {

namespace {

// Set while a thread runs chunks of a job: a nested run() goes serial.
thread_local bool tls_in_job = false;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield" ::: "memory");
#endif
}

constexpr int kWorkerSpins = 4000;         // ~0.1 ms of pause before parking on the futex
constexpr int kCallerSpins = 2000;         // then sched_yield while workers finish their chunks
constexpr uint64_t kClosed = 0xffffffffu;  // ticket index of a generation that takes no claims

// The job slot of one arena, shared by its caller and its worker loops.
struct JobSlot {
  // Fields are atomics because a late worker may read them while the next job is
  // being posted; it then fails to claim a chunk (the ticket's generation moved on) and drops them.
  std::atomic<kernels::RangeFn> fn{nullptr};
  std::atomic<void*> ctx{nullptr};
  std::atomic<int64_t> n{0}, chunk{1}, n_chunks{0};
  std::atomic<uint64_t> ticket{0};  // generation << 32 | next chunk index
  std::atomic<int64_t> done{0};     // chunks finished in the current job
  std::atomic<uint32_t> gen{0};     // bumped per job; workers park on it
  std::atomic<bool> stop{false};
  std::atomic<bool> busy{false};    // a caller owns the slot
  std::atomic<int> helpers{0};      // workers that joined the current job
  std::atomic<int> max_helpers{0};  // how many the current job takes (its threads - 1)
  std::atomic<int> running{0};      // worker loops currently inside the arena

  // Claims and runs chunks of job `g` until none is left (or the slot moved to another job).
  //
  // Posting a job first closes the previous generation's ticket (index kClosed), then writes the
  // parameters, then opens the new ticket, all seq_cst. A late worker still in work(old) that
  // reads a parameter of the new job therefore also reads a closed or newer ticket and claims
  // nothing: it can never run a chunk with mixed parameters or count towards the new job's done.
  void work(uint32_t g) {
    const kernels::RangeFn f = fn.load(std::memory_order_seq_cst);
    void* const c = ctx.load(std::memory_order_seq_cst);
    const int64_t total = n.load(std::memory_order_seq_cst);
    const int64_t len = chunk.load(std::memory_order_seq_cst);
    const uint64_t count = static_cast<uint64_t>(n_chunks.load(std::memory_order_seq_cst));
    tls_in_job = true;
    uint64_t t = ticket.load(std::memory_order_seq_cst);
    while ((t >> 32) == g && (t & 0xffffffffu) < count) {
      if (!ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                        std::memory_order_acquire))
        continue;
      // A successful claim proves job g was still open, so f, c, total and len were its values.
      const int64_t i = static_cast<int64_t>(t & 0xffffffffu);
      f(c, i * len, std::min(total, (i + 1) * len));
      done.fetch_add(1, std::memory_order_release);
      t = ticket.load(std::memory_order_acquire);
    }
    tls_in_job = false;
  }

  void loop() {
    running.fetch_add(1, std::memory_order_seq_cst);
    uint32_t seen = gen.load(std::memory_order_acquire);
    while (!stop.load(std::memory_order_seq_cst)) {
      uint32_t g = gen.load(std::memory_order_acquire);
      for (int i = 0; g == seen && i < kWorkerSpins; ++i) {
        cpu_relax();
        g = gen.load(std::memory_order_acquire);
      }
      if (g == seen) {
        gen.wait(seen, std::memory_order_acquire);
        continue;
      }
      seen = g;
      if (stop.load(std::memory_order_seq_cst)) break;
      // A job limited to fewer threads (PoolLease) takes only that many helpers. A late worker of
      // an older job may count towards this one: the caller then takes its chunks.
      if (helpers.fetch_add(1, std::memory_order_seq_cst) >=
          max_helpers.load(std::memory_order_seq_cst))
        continue;
      work(g);
    }
    running.fetch_sub(1, std::memory_order_seq_cst);
    running.notify_all();
  }
};

}  // namespace

struct ArenaPool::Arena {
  explicit Arena(int n) : n_threads(n), arena(n) { arena.initialize(); }
  const int n_threads;
  tbb::task_arena arena;
  JobSlot slot;
};

namespace {

// Idle arenas, by size. Never freed (see thread_pool.h); reachable, so not a leak to LSan.
std::mutex& idle_mutex() {
  static std::mutex* m = new std::mutex();
  return *m;
}
std::vector<ArenaPool::Arena*>& idle_arenas() {
  static auto* v = new std::vector<ArenaPool::Arena*>();
  return *v;
}

}  // namespace

ArenaPool::ArenaPool(int n_threads) {
  if (n_threads <= 0) n_threads = std::max(1, tbb::info::default_concurrency());
  view_.run = &ArenaPool::run;
  view_.impl = this;
  view_.n_threads = n_threads;
  if (n_threads <= 1) return;
  {
    std::lock_guard<std::mutex> lock(idle_mutex());
    std::vector<Arena*>& idle = idle_arenas();
    auto it = std::find_if(idle.begin(), idle.end(),
                           [&](const Arena* a) { return a->n_threads == n_threads; });
    if (it != idle.end()) {
      arena_ = *it;
      idle.erase(it);
    }
  }
  if (arena_ == nullptr) arena_ = new Arena(n_threads);
  JobSlot* slot = &arena_->slot;
  slot->stop.store(false, std::memory_order_seq_cst);
  for (int i = 1; i < n_threads; ++i) arena_->arena.enqueue([slot] { slot->loop(); });
}

ArenaPool::~ArenaPool() {
  if (arena_ == nullptr) return;
  JobSlot& s = arena_->slot;
  s.stop.store(true, std::memory_order_seq_cst);
  s.gen.fetch_add(1, std::memory_order_seq_cst);
  s.gen.notify_all();
  for (int r = s.running.load(std::memory_order_seq_cst); r != 0;
       r = s.running.load(std::memory_order_seq_cst))
    s.running.wait(r, std::memory_order_seq_cst);
  // A loop that starts after this (it was still queued) sees `stop` and returns, or, if the arena
  // was reused meanwhile, serves the new pool: either way it only touches the arena's own slot.
  std::lock_guard<std::mutex> lock(idle_mutex());
  idle_arenas().push_back(arena_);
}

int ArenaPool::n_threads() const {
  return view_.n_threads;
}

int ArenaPool::warm_up(int timeout_ms) {
  if (arena_ == nullptr) return 0;
  const int want = view_.n_threads - 1;
  std::atomic<int>& running = arena_->slot.running;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (running.load(std::memory_order_acquire) < want &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  return running.load(std::memory_order_acquire);
}

int ArenaPool::max_threads() {
  return std::max(1, tbb::info::default_concurrency());
}

std::shared_ptr<ArenaPool> ArenaPool::shared() {
  static std::mutex* m = new std::mutex();
  static auto* weak = new std::weak_ptr<ArenaPool>();
  std::lock_guard<std::mutex> lock(*m);
  std::shared_ptr<ArenaPool> p = weak->lock();
  if (p == nullptr) {
    p = std::make_shared<ArenaPool>(max_threads());
    *weak = p;
  }
  return p;
}

void ArenaPool::run(void* impl, int64_t n, int64_t grain, kernels::RangeFn fn, void* ctx) {
  ArenaPool& self = *static_cast<ArenaPool*>(impl);
  self.run_limited(self.view_.n_threads, n, grain, fn, ctx);
}

PoolLease::PoolLease(std::shared_ptr<ArenaPool> pool, int n_threads) : pool_(std::move(pool)) {
  view_.run = &PoolLease::run;
  view_.impl = this;
  view_.n_threads = std::clamp(n_threads, 1, pool_->n_threads());
}

void PoolLease::run(void* impl, int64_t n, int64_t grain, kernels::RangeFn fn, void* ctx) {
  PoolLease& self = *static_cast<PoolLease*>(impl);
  self.pool_->run_limited(self.view_.n_threads, n, grain, fn, ctx);
}

void ArenaPool::run_limited(int n_threads, int64_t n, int64_t grain, kernels::RangeFn fn,
                            void* ctx) {
  if (n <= 0) return;
  ArenaPool& self = *this;
  grain = std::max<int64_t>(grain, 1);
  const int64_t threads = std::min(n_threads, self.view_.n_threads);
  // Chunks of a multiple of `grain`, about 4 per thread so a slow thread does not hold the rest.
  const int64_t per = std::max<int64_t>(1, (n + grain * threads * 4 - 1) / (grain * threads * 4));
  const int64_t len = per * grain;
  const int64_t count = (n + len - 1) / len;
  if (threads <= 1 || count <= 1 || count >= static_cast<int64_t>(kClosed) || tls_in_job ||
      self.arena_->slot.busy.exchange(true, std::memory_order_acquire)) {
    fn(ctx, 0, n);
    return;
  }
  JobSlot& s = self.arena_->slot;
  const uint32_t g = s.gen.load(std::memory_order_relaxed) + 1;
  s.ticket.store((uint64_t{g - 1} << 32) | kClosed, std::memory_order_seq_cst);  // see work()
  s.fn.store(fn, std::memory_order_seq_cst);
  s.ctx.store(ctx, std::memory_order_seq_cst);
  s.n.store(n, std::memory_order_seq_cst);
  s.chunk.store(len, std::memory_order_seq_cst);
  s.n_chunks.store(count, std::memory_order_seq_cst);
  s.done.store(0, std::memory_order_seq_cst);
  s.helpers.store(0, std::memory_order_seq_cst);
  s.max_helpers.store(static_cast<int>(threads) - 1, std::memory_order_seq_cst);
  s.ticket.store(uint64_t{g} << 32, std::memory_order_seq_cst);
  s.gen.store(g, std::memory_order_release);
  s.gen.notify_all();  // a futex wake only when a worker is parked
  s.work(g);
  for (int i = 0; s.done.load(std::memory_order_acquire) != count; ++i) {
    if (i < kCallerSpins)
      cpu_relax();
    else
      sched_yield();
  }
  s.busy.store(false, std::memory_order_release);
}

}  // namespace laya::hal::cpu
