// The CPU backend's workers: a oneTBB task_arena whose threads serve kernels::ThreadPool jobs
// without allocating.
//
// Why not tbb::parallel_for per job: oneTBB allocates its task objects from per-thread
// small-object pools that grow whenever a thread needs more live tasks than it ever had (and an
// object freed by another thread returns to its owner lazily), so parallel_for keeps allocating
// now and then in steady state. Measured on this machine (oneTBB 2021.8, 2 threads, with
// scalable_malloc forwarded to a counting malloc): after 20000 warm-up calls, 100000 further
// parallel_for calls still allocated 1 (static_partitioner), 1 (auto), 2 (affinity), 0 (simple);
// with 100 warm-up calls, 20000 calls allocated 24-224 times. Note libtbb sends those allocations
// to libtbbmalloc when it is installed, so a plain malloc hook never sees them.
//
// So the arena only provides the threads: at construction `n_threads - 1` long-lived loops are
// enqueued into it (that allocates once, at prepare). Each loop takes jobs from one job slot
// (atomics: a generation counter, a ticket = generation << 32 | next chunk, a done count), spins
// briefly after a job and then parks on the generation (a futex, via std::atomic::wait). The
// calling thread posts a job, takes chunks itself, and waits for the chunks the workers took.
// No call allocates; a worker that is late never blocks progress (the caller takes every chunk
// nobody claimed).
//
// Arenas outlive pools: tearing a task_arena down makes oneTBB free its internals (and, when it
// was the last arena, stop its worker threads) later, on the worker thread, which shows up as
// allocator calls during some other session's execute (measured: 18 frees). So a pool's arena and
// job slot come from a process-wide list of idle arenas (one is made when none of that size is
// idle) and go back to it, loops stopped, when the pool is destroyed; they are never freed.
//
// Costs: while a pool lives its n_threads - 1 workers stay in its arena (parked on the futex when
// idle). oneTBB starts n_cores - 1 workers per process; a second pool created while a first one
// holds them gets its loops started only when they free up, and runs serially meanwhile (measured
// before the shared pool: a second session got 0 workers and waited 500 ms in warm_up). So every
// CPU backend takes its threads from one process pool, ArenaPool::shared(), through a PoolLease of
// the thread count it was asked for.
//
// One job at a time: run() called from inside a job (nested), or concurrently from a second
// thread, runs the range serially on the calling thread. So sessions sharing the pool never wait
// for each other: whoever posts a job while the workers are idle gets them all (up to its lease),
// a job posted while they serve another runs on its caller's thread alone.
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/kernels.h"

namespace laya::hal::cpu {

class ArenaPool {
 public:
  // n_threads: total threads including the caller; 0 = oneTBB's default concurrency (all cores
  // this process may use). Takes an idle arena of that size (or makes one) and enqueues
  // n_threads - 1 worker loops into it (prepare phase: allocates).
  explicit ArenaPool(int n_threads);
  // Stops the loops, waits for the running ones to return, and puts the arena back on the idle
  // list.
  ~ArenaPool();
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  int n_threads() const;
  // The kernels' view of this pool; valid while the pool lives.
  const kernels::ThreadPool* view() const { return &view_; }

  // Waits (up to `timeout_ms`) until every worker loop runs, so no thread start happens later
  // during an execute. Returns the number of loops running.
  int warm_up(int timeout_ms);

  // kernels::ThreadPool::run: fn(ctx, b, e) over disjoint ranges covering [0, n), each a multiple
  // of `grain` long except possibly the last. Allocates nothing.
  static void run(void* impl, int64_t n, int64_t grain, kernels::RangeFn fn, void* ctx);
  // The same, split for `threads` (<= n_threads()) with at most threads - 1 workers helping.
  void run_limited(int threads, int64_t n, int64_t grain, kernels::RangeFn fn, void* ctx);

  // The threads this process may use (oneTBB's default concurrency: the cores in its affinity
  // mask), at least 1.
  static int max_threads();
  // The process pool of max_threads() threads: made on first use, shared by every holder, and
  // stopped (its arena kept idle, see above) when the last holder drops it. Thread-safe.
  static std::shared_ptr<ArenaPool> shared();

  struct Arena;  // a task_arena and its job slot; lives until the process exits

 private:
  Arena* arena_ = nullptr;  // null for one thread
  kernels::ThreadPool view_;
};

// A share of a pool: jobs split for n_threads (capped at the pool's) and at most n_threads - 1 of
// its workers. Keeps the pool alive.
class PoolLease {
 public:
  PoolLease(std::shared_ptr<ArenaPool> pool, int n_threads);
  PoolLease(const PoolLease&) = delete;
  PoolLease& operator=(const PoolLease&) = delete;

  int n_threads() const { return view_.n_threads; }
  const kernels::ThreadPool* view() const { return &view_; }
  int warm_up(int timeout_ms) { return pool_->warm_up(timeout_ms); }
  const ArenaPool& pool() const { return *pool_; }

 private:
  static void run(void* impl, int64_t n, int64_t grain, kernels::RangeFn fn, void* ctx);

  std::shared_ptr<ArenaPool> pool_;
  kernels::ThreadPool view_;
};

}  // namespace laya::hal::cpu
