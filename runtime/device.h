// The process-level device: the CPU threads and the packed-weight cache every session on it shares.
//
//   auto dev = *Device::create({.n_threads = 4});     // or Device::process_default()
//   SessionOptions so;  so.device = dev;               // null: the process default device
//   auto prefill = Session::prepare(graph, so);         // both sessions of one graph ...
//   auto decode  = Session::prepare(graph, so_decode);  // ... share one set of packed weights
//
// Threads: a device holds the host workers of the backends that keep them (hal::Workers, found
// through the registry: the CPU backend's one oneTBB arena of all cores this process may use,
// hal/cpu/thread_pool.h), so they start once and stay (no session waits for them); the device
// itself names no backend. A device caps the threads
// of its sessions at DeviceOptions::n_threads (itself capped at the cores); a session asking fewer
// (BackendOptions::n_threads) gets fewer. Policy when sessions run at once (from different
// threads): the arena serves one job at a time; a job posted while its workers are idle gets them
// (up to the session's threads), a job posted while they serve another session runs on its
// caller's thread. Nobody waits for another session's job, and a session alone gets every worker.
//
// Packed weights: a backend given the device's WeightCache (the CPU backend) takes each packed
// weight from it at bind_memory instead of packing into the caller's persistent region: the first
// session of a model packs (a miss), every further session with the same weights, backend, kernel
// target and layout reuses those bytes (a hit: no packing, no memory), and the bytes are freed when
// the last executable holding them goes (its session is destroyed or rebound). The key is the
// weight's mapped address (hal::PackedWeightKey): sessions of one loaded graph share, two loads of
// one file do not. The AX8850 simulator packs into the persistent region as before. Memory: packed
// weights below 2 MiB share 2 MiB huge-page slabs (first fit, front to back; a slab is freed with
// its last entry), larger ones get their own 2 MiB-aligned block, all MADV_HUGEPAGE: the decode
// GEMVs stream a small model's many small matrices from huge pages (measured: docs/kernels.md).
//
// Thread-safe: sessions on one device bind, execute and die on any threads at once. acquire holds
// a lock only to look up and insert; packing runs outside it (a second acquire of the same weight
// waits for that one packing, other weights proceed). Nothing here runs at execute.
//
// Lifetime: sessions hold their device (std::shared_ptr), so it outlives them.
#pragma once

#include <cstdint>
#include <memory>

#include "hal/hal.h"
#include "ir/status.h"

namespace laya::runtime {

struct DeviceOptions {
  // CPU threads a session may use, including its caller: 0 = every core this process may use;
  // capped at that. kInvalidArgument when negative.
  int n_threads = 0;
  // Share packed weights across sessions (the cache). false: each session packs into its own
  // persistent region (the behaviour before the device; benchmarks compare the two).
  bool share_weights = true;
};

// Counters of the packed-weight cache. `bytes` / `entries` are what is live now; hits and misses
// count acquires since the device was made.
struct WeightCacheStats {
  uint64_t entries = 0;     // distinct packed weights held
  uint64_t bytes = 0;       // their packed bytes (each once, however many sessions hold it)
  uint64_t references = 0;  // executables' references to them
  uint64_t hits = 0;        // acquires served by an entry already there (nothing packed)
  uint64_t misses = 0;      // acquires that packed
};

class Device {
 public:
  // kInvalidArgument for n_threads < 0.
  static Result<std::shared_ptr<Device>> create(const DeviceOptions& opts);
  // The device sessions use when SessionOptions::device is null: default options, made on first
  // use (thread-safe), alive while the process or any session holds it.
  static std::shared_ptr<Device> process_default();

  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Threads a session on this device gets at most (>= 1).
  int n_threads() const { return shared_.max_threads; }
  // Threads of the process arena and its worker loops running now (n - 1 once warm).
  int arena_threads() const;
  int arena_workers_running() const;
  bool shares_weights() const { return shared_.weights != nullptr; }
  WeightCacheStats weight_stats() const;

  // What backends created for this device's sessions borrow (valid while the device lives).
  const hal::SharedResources* shared() const { return &shared_; }

 private:
  class Cache;
  Device() = default;

  std::shared_ptr<hal::Workers> workers_;  // keeps a backend's workers running (null: none)
  std::unique_ptr<Cache> cache_;
  hal::SharedResources shared_;
};

}  // namespace laya::runtime
