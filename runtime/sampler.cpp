#include "runtime/sampler.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "kernels/kernels.h"

namespace laya {

namespace {

// Visits the candidate ids in increasing order: set bits of `allowed`, or every id. Runs of set
// bits are walked as id ranges (inside JSON text most of a mask is set).
template <class F>
void for_each_allowed(const uint64_t* allowed, int32_t n, F&& f) {
  if (!allowed) {
    for (int32_t id = 0; id < n; ++id) f(id);
    return;
  }
  const int32_t words = (n + 63) / 64;
  for (int32_t w = 0; w < words; ++w) {
    uint64_t bits = allowed[w];
    while (bits) {
      const int b = std::countr_zero(bits);
      const int len = std::countr_one(bits >> b);
      const int32_t lo = w * 64 + b, hi = std::min(lo + len, n);
      for (int32_t id = lo; id < hi; ++id) f(id);
      bits = b + len >= 64 ? 0 : bits & (~uint64_t{0} << (b + len));
    }
  }
}

}  // namespace

Result<Sampler> Sampler::create(const SamplerConfig& config, int32_t n_vocab) {
  if (!std::isfinite(config.temperature) || config.temperature < 0.0f)
    return status_error(StatusCode::kInvalidArgument, "temperature %g: must be >= 0",
                        static_cast<double>(config.temperature));
  if (config.top_k < 0)
    return status_error(StatusCode::kInvalidArgument, "top_k %d: must be >= 0", config.top_k);
  if (!(config.top_p > 0.0f && config.top_p <= 1.0f))
    return status_error(StatusCode::kInvalidArgument, "top_p %g: must be in (0, 1]",
                        static_cast<double>(config.top_p));
  if (n_vocab < 1) return Status(StatusCode::kInvalidArgument, "empty vocabulary");
  for (int32_t id : config.stop_ids)
    if (id < 0 || id >= n_vocab)
      return status_error(StatusCode::kInvalidArgument, "stop token %d outside the vocabulary (%d)",
                          id, n_vocab);
  Sampler s;
  s.config_ = config;
  s.n_vocab_ = n_vocab;
  s.engine_.seed(config.seed);
  s.argmax_ = kernels::kernel_table_hwy().argmax;
  if (!s.greedy()) {
    s.cand_.resize(static_cast<size_t>(n_vocab));
    s.prob_.resize(static_cast<size_t>(n_vocab));
  }
  return s;
}

bool Sampler::is_stop(int32_t id) const {
  return std::find(config_.stop_ids.begin(), config_.stop_ids.end(), id) != config_.stop_ids.end();
}

void Sampler::reseed(uint64_t seed) {
  engine_.seed(seed);
}

double Sampler::uniform() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(const float* logits, const uint64_t* allowed) {
  if (greedy()) {
    // The kernel's argmax is the first index of the largest non-NaN value (0 when logits[0] is
    // NaN). When that value is finite no +inf exists and -inf never wins, so it is the first
    // index of the largest finite value: the answer below. Otherwise the scan decides.
    if (allowed == nullptr) {
      const int64_t i = argmax_(logits, n_vocab_);
      if (std::isfinite(logits[i])) return static_cast<int32_t>(i);
    }
    int32_t best = -1;
    float best_v = 0.0f;
    for_each_allowed(allowed, n_vocab_, [&](int32_t id) {
      const float v = logits[id];
      if (std::isfinite(v) && (best < 0 || v > best_v)) {
        best = id;
        best_v = v;
      }
    });
    return best;
  }

  // Larger z first, lower id among equals: a strict total order, so every selection below is
  // the same whatever the algorithm. Sums run in increasing id order or in this order.
  const auto before = [](const Candidate& a, const Candidate& b) {
    return a.z > b.z || (a.z == b.z && a.id < b.id);
  };
  const auto by_id = [](const Candidate& a, const Candidate& b) { return a.id < b.id; };
  const float t = config_.temperature;
  size_t n = 0;
  if (config_.top_k > 0) {
    // The k best in one pass: a heap whose front is the worst kept candidate.
    const size_t k = static_cast<size_t>(config_.top_k);
    const auto first = cand_.begin();
    for_each_allowed(allowed, n_vocab_, [&](int32_t id) {
      const float v = logits[id];
      if (!std::isfinite(v)) return;
      const Candidate c{v / t, id};
      if (n < k) {
        cand_[n++] = c;
        if (n == k) std::make_heap(first, first + static_cast<ptrdiff_t>(k), before);
      } else if (before(c, cand_[0])) {
        std::pop_heap(first, first + static_cast<ptrdiff_t>(k), before);
        cand_[k - 1] = c;
        std::push_heap(first, first + static_cast<ptrdiff_t>(k), before);
      }
    });
    std::sort(first, first + static_cast<ptrdiff_t>(n), by_id);
  } else {
    for_each_allowed(allowed, n_vocab_, [&](int32_t id) {
      const float v = logits[id];
      if (std::isfinite(v)) cand_[n++] = {v / t, id};
    });
  }
  if (n == 0) return -1;
  bool reordered = false;
  float zmax = cand_[0].z;
  for (size_t i = 1; i < n; ++i) zmax = std::max(zmax, cand_[i].z);
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    prob_[i] = std::exp(static_cast<double>(cand_[i].z - zmax));
    total += prob_[i];
  }

  if (config_.top_p < 1.0f) {
    // Grow a sorted prefix (64, 256, 1024, ... candidates) until it holds top_p of the mass.
    const double need = static_cast<double>(config_.top_p) * total;
    size_t m = 64, keep = n;
    for (;;) {
      const auto first = cand_.begin(), last = cand_.begin() + static_cast<ptrdiff_t>(n);
      if (m < n) {
        std::nth_element(first, first + static_cast<ptrdiff_t>(m), last, before);
        std::sort(first, first + static_cast<ptrdiff_t>(m), before);
      } else {
        std::sort(first, last, before);
        m = n;
      }
      double run = 0.0;
      size_t i = 0;
      for (; i < m && run < need; ++i) run += std::exp(static_cast<double>(cand_[i].z - zmax));
      if (run >= need || m == n) {
        keep = std::max<size_t>(i, 1);
        break;
      }
      m *= 4;
    }
    n = keep;
    reordered = true;
  }

  // The draw, over the kept candidates in increasing id order (prob_ is still in that order
  // unless top-p reordered them).
  double kept = total;
  if (reordered) {
    std::sort(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(n), by_id);
    kept = 0.0;
    for (size_t i = 0; i < n; ++i) {
      prob_[i] = std::exp(static_cast<double>(cand_[i].z - zmax));
      kept += prob_[i];
    }
  }
  const double target = uniform() * kept;
  double run = 0.0;
  for (size_t i = 0; i < n; ++i) {
    run += prob_[i];
    if (run > target) return cand_[i].id;
  }
  return cand_[n - 1].id;
}

}  // namespace laya
