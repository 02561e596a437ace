#include "runtime/device.h"

#include <sys/mman.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

namespace laya::runtime {

class Device::Cache final : public hal::WeightCache {
 public:
  ~Cache() override {
    // Sessions hold their device, so every reference is gone by now.
    for (auto& [key, e] : entries_)
      if (e.slab == nullptr) std::free(e.data);
    for (Slab& s : slabs_) std::free(s.mem);
  }

  Result<const void*> acquire(const hal::PackedWeightKey& key, uint64_t bytes, hal::PackFn pack,
                              void* ctx) override {
    const Key k{key.source, key.source_bytes, key.packing, key.side};
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      auto it = entries_.find(k);
      if (it == entries_.end()) break;
      Entry& e = it->second;
      if (e.bytes != bytes)
        return status_error(StatusCode::kInvalidArgument,
                            "weight cache: '%s' is cached with %llu bytes, %llu asked",
                            key.packing.c_str(), static_cast<unsigned long long>(e.bytes),
                            static_cast<unsigned long long>(bytes));
      if (e.ready) {
        ++e.refs;
        ++hits_;
        return static_cast<const void*>(e.data);
      }
      ready_.wait(lock);  // another session packs it now; then look again
    }
    // A miss: claim the key and its memory, pack outside the lock.
    Entry& e = entries_[k];
    e.bytes = bytes;
    e.refs = 1;
    ++misses_;
    void* mem = allocate(bytes, &e.slab);
    lock.unlock();
    if (mem != nullptr) pack(ctx, mem);
    lock.lock();
    auto it = entries_.find(k);
    if (mem == nullptr) {
      entries_.erase(it);
      ready_.notify_all();
      return status_error(StatusCode::kResourceExhausted,
                          "weight cache: no memory for %llu packed bytes of '%s'",
                          static_cast<unsigned long long>(bytes), key.packing.c_str());
    }
    it->second.data = static_cast<uint8_t*>(mem);
    it->second.ready = true;
    by_data_[mem] = it;
    bytes_ += bytes;
    ready_.notify_all();
    return static_cast<const void*>(mem);
  }

  void release(const void* packed) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto d = by_data_.find(packed);
    if (d == by_data_.end()) return;  // not ours: nothing to drop
    auto it = d->second;
    if (--it->second.refs > 0) return;
    bytes_ -= it->second.bytes;
    if (Slab* slab = it->second.slab) {
      if (--slab->live == 0) {  // its last entry: the slab goes too
        std::free(slab->mem);
        slabs_.remove_if([&](const Slab& x) { return &x == slab; });
      }
    } else {
      std::free(it->second.data);
    }
    by_data_.erase(d);
    entries_.erase(it);
  }

  WeightCacheStats stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    WeightCacheStats s;
    for (const auto& [key, e] : entries_)
      if (e.ready) {
        ++s.entries;
        s.references += e.refs;
      }
    s.bytes = bytes_;
    s.hits = hits_;
    s.misses = misses_;
    return s;
  }

 private:
  // Packed weights below a huge page share 2 MiB slabs, huge-page aligned and MADV_HUGEPAGE, each
  // filled front to back (64-byte aligned entries) and freed with its last entry; larger ones
  // get their own 2 MiB-aligned block. On 4 KiB pages (each small tensor alone) the decode GEMVs
  // read 5-12% less of the DRAM bandwidth than on huge pages (docs/kernels.md), and a small model
  // is mostly small tensors (SmolLM2-135M: 350-940 KiB each).
  struct Slab {
    uint8_t* mem = nullptr;
    uint64_t used = 0;  // bytes handed out, front to back
    uint64_t live = 0;  // entries in it
  };
  using Key = std::tuple<const void*, uint64_t, std::string, std::vector<uint8_t>>;
  struct Entry {
    uint8_t* data = nullptr;
    uint64_t bytes = 0;
    uint64_t refs = 0;
    Slab* slab = nullptr;  // null: its own allocation
    bool ready = false;    // false while its first acquire packs it
  };

  // Memory for `bytes` packed bytes (under the lock): the first slab with room, or a new one, for
  // entries below a huge page; null when the system has none.
  uint8_t* allocate(uint64_t bytes, Slab** slab) {
    *slab = nullptr;
    const uint64_t need = (std::max<uint64_t>(bytes, 1) + 63) / 64 * 64;
    if (need < hal::kHugePageBytes) {
      auto s = std::find_if(slabs_.begin(), slabs_.end(),
                            [&](const Slab& x) { return x.used + need <= hal::kHugePageBytes; });
      if (s == slabs_.end()) {
        void* mem = std::aligned_alloc(hal::kHugePageBytes, hal::kHugePageBytes);
        if (mem == nullptr) return nullptr;
        (void)madvise(mem, hal::kHugePageBytes, MADV_HUGEPAGE);  // a hint
        slabs_.push_back(Slab{static_cast<uint8_t*>(mem), 0, 0});
        s = std::prev(slabs_.end());
      }
      uint8_t* p = s->mem + s->used;
      s->used += need;
      ++s->live;
      *slab = &*s;
      return p;
    }
    const uint64_t align = hal::persistent_alignment(bytes);
    const uint64_t size = (bytes + align - 1) / align * align;
    void* mem = std::aligned_alloc(align, size);
    if (mem != nullptr && align == hal::kHugePageBytes)
      (void)madvise(mem, size, MADV_HUGEPAGE);  // a hint
    return static_cast<uint8_t*>(mem);
  }

  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::map<Key, Entry> entries_;
  std::map<const void*, std::map<Key, Entry>::iterator> by_data_;
  std::list<Slab> slabs_;  // stable addresses: entries point at theirs
  uint64_t bytes_ = 0, hits_ = 0, misses_ = 0;
};

Device::~Device() = default;

Result<std::shared_ptr<Device>> Device::create(const DeviceOptions& opts) {
  if (opts.n_threads < 0)
    return status_error(StatusCode::kInvalidArgument, "device: n_threads %d < 0", opts.n_threads);
  std::shared_ptr<Device> d(new Device());
  // The workers of the first backend that keeps host threads (the CPU backend's pool); a build
  // without one runs every session on its caller's thread.
  for (const hal::BackendInfo& b : hal::builtin_registry().list())
    if (b.workers != nullptr && d->workers_ == nullptr) d->workers_ = b.workers();
  const int cores = d->workers_ != nullptr ? d->workers_->n_threads() : 1;
  d->shared_.max_threads = opts.n_threads == 0 ? cores : std::min(opts.n_threads, cores);
  // Workers start now, not at some session's first bind.
  if (d->workers_ != nullptr) (void)d->workers_->warm_up(500);
  if (opts.share_weights) {
    d->cache_ = std::make_unique<Cache>();
    d->shared_.weights = d->cache_.get();
  }
  return d;
}

std::shared_ptr<Device> Device::process_default() {
  // Dropped at exit (its workers stop then); a session still alive keeps it longer.
  static const std::shared_ptr<Device> dev = *create(DeviceOptions{});
  return dev;
}

int Device::arena_threads() const {
  return workers_ != nullptr ? workers_->n_threads() : 1;
}

int Device::arena_workers_running() const {
  return workers_ != nullptr ? workers_->warm_up(0) : 0;
}

WeightCacheStats Device::weight_stats() const {
  return cache_ != nullptr ? cache_->stats() : WeightCacheStats{};
}

}  // namespace laya::runtime
