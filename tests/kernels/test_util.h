// Helpers shared by the kernel tests: a std::thread pool behind the ThreadPool interface, ulp
// distances, and error norms.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "kernels/kernels.h"

namespace laya::test {

// A real pool for the kernel tests: per call, n - 1 fresh std::threads plus the caller pull
// `grain`-long chunks from a counter (tests only: it allocates per call; the runtime's pool is
// hal/cpu/thread_pool.h).
struct TestPool {
  explicit TestPool(int n) {
    pool.n_threads = n;
    pool.impl = this;
    pool.run = [](void* impl, int64_t n, int64_t grain, kernels::RangeFn fn, void* ctx) {
      const int threads = static_cast<TestPool*>(impl)->pool.n_threads;
      const int64_t g = std::max<int64_t>(grain, 1);
      std::atomic<int64_t> next{0};
      auto worker = [&] {
        for (;;) {
          const int64_t b = next.fetch_add(g);
          if (b >= n) return;
          fn(ctx, b, std::min(n, b + g));
        }
      };
      std::vector<std::thread> threads_;
      for (int i = 1; i < threads; ++i) threads_.emplace_back(worker);
      worker();
      for (std::thread& t : threads_) t.join();
    };
  }
  kernels::ThreadPool pool;
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
