// Helpers shared by the kernel tests: a std::thread pool behind the ThreadPool interface, ulp
// distances, and error norms.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/kernels.h"

namespace laya::test {

// A real pool for the kernel tests: n - 1 std::threads, started once, plus the caller pull
// `grain`-long chunks of each call from a counter (tests only; the runtime's pool is
// hal/cpu/thread_pool.h). Threads persist across calls: a thread per call costs milliseconds under
// user-mode QEMU (the aarch64 suite), thousands of times over.
class TestPool {
 public:
  explicit TestPool(int n) {
    pool.n_threads = n;
    pool.impl = this;
    pool.run = [](void* impl, int64_t count, int64_t grain, kernels::RangeFn fn, void* ctx) {
      static_cast<TestPool*>(impl)->run(count, grain, fn, ctx);
    };
    for (int i = 1; i < n; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~TestPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  TestPool(const TestPool&) = delete;
  TestPool& operator=(const TestPool&) = delete;

  kernels::ThreadPool pool;

 private:
  void chunks() {
    for (;;) {
      const int64_t b = next_.fetch_add(grain_);
      if (b >= n_) return;
      fn_(ctx_, b, std::min(n_, b + grain_));
    }
  }
  void run(int64_t n, int64_t grain, kernels::RangeFn fn, void* ctx) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      n_ = n;
      grain_ = std::max<int64_t>(grain, 1);
      fn_ = fn;
      ctx_ = ctx;
      next_ = 0;
      busy_ = static_cast<int>(threads_.size());
      ++gen_;
    }
    wake_.notify_all();
    chunks();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return busy_ == 0; });
  }
  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stop_ || gen_ != seen; });
        if (stop_) return;
        seen = gen_;
      }
      chunks();
      std::lock_guard<std::mutex> lock(mu_);
      if (--busy_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable wake_, done_;
  uint64_t gen_ = 0;
  bool stop_ = false;
  int busy_ = 0;
  int64_t n_ = 0, grain_ = 1;
  kernels::RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<int64_t> next_{0};
};

// Distance in representable floats (0: identical; +0 and -0 are 0 apart). NaN vs NaN: 0.
inline int64_t ulp_diff(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : INT64_MAX;
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : static_cast<int64_t>(i);
  };
  const int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

// The spacing of floats at |x| (the smallest normal spacing below FLT_MIN).
inline double ulp_of(double x) {
  const double ax = std::max(std::fabs(x), static_cast<double>(std::numeric_limits<float>::min()));
  int e;
  std::frexp(ax, &e);
  return std::ldexp(1.0, e - 24);
}

// Normalized mean squared error: sum (a - r)^2 / sum r^2.
inline double nmse(const float* a, const float* r, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (double{a[i]} - r[i]) * (double{a[i]} - r[i]);
    den += double{r[i]} * r[i];
  }
  return den == 0 ? num : num / den;
}

}  // namespace laya::test
