// runtime/sampler: greedy, temperature / top-k / top-p distributions against numpy's (seeded, many
// draws), masks, reproducibility, the standard's engine, no allocation, bad configs.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/sampler.h"
#include "tests/alloc_hook.h"
#include "tests/runtime/fixture_util.h"

namespace laya {
namespace {

Sampler make(const SamplerConfig& c, int32_t n) {
  Result<Sampler> s = Sampler::create(c, n);
  REQUIRE_MESSAGE(s.is_ok(), s.status().to_string());
  return std::move(s).value();
}

std::vector<uint64_t> mask_of(const std::vector<int32_t>& ids, int32_t n) {
  std::vector<uint64_t> m(static_cast<size_t>((n + 63) / 64), 0);
  for (int32_t id : ids) m[static_cast<size_t>(id / 64)] |= uint64_t{1} << (id % 64);
  return m;
}

// Draws `draws` samples; every id's count lies within 5 standard deviations of p * draws, and an
// id of probability 0 is never drawn.
void check_distribution(Sampler& s, const std::vector<float>& logits, const uint64_t* mask,
                        const std::vector<double>& p, int draws) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < draws; ++i) {
    const int32_t id = s.sample(logits.data(), mask);
    REQUIRE(id >= 0);
    REQUIRE(static_cast<size_t>(id) < logits.size());
    ++counts[static_cast<size_t>(id)];
  }
  int off = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    const double mean = p[i] * draws;
    const double sd = std::sqrt(draws * p[i] * (1 - p[i]));
    const bool ok = p[i] == 0.0 ? counts[i] == 0 : std::abs(counts[i] - mean) <= 5 * sd + 1;
    CHECK_MESSAGE(ok, "id " << i << ": p " << p[i] << ", drawn " << counts[i] << " of " << draws);
    off += !ok;
  }
  CHECK(off == 0);
}

std::vector<float> test_logits(int n, uint64_t seed) {
  std::mt19937_64 r(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> l(static_cast<size_t>(n));
  for (float& x : l) x = d(r);
  return l;
}

float logit_of(const json::Value& v) {
  if (v.is_string()) {
    const std::string& t = v.as_string();
    if (t == "nan") return std::numeric_limits<float>::quiet_NaN();
    return t == "inf" ? std::numeric_limits<float>::infinity()
                      : -std::numeric_limits<float>::infinity();
  }
  return static_cast<float>(v.as_double());
}

TEST_CASE("greedy: the largest allowed finite logit, lowest id among equals") {
  Sampler s = make({}, 130);
  std::vector<float> l(130, 0.0f);
  l[5] = 3.0f;
  l[70] = 3.0f;
  l[100] = std::numeric_limits<float>::infinity();
  l[101] = std::numeric_limits<float>::quiet_NaN();
  CHECK(s.sample(l.data(), nullptr) == 5);
  auto m = mask_of({70, 100, 101, 129}, 130);
  CHECK(s.sample(l.data(), m.data()) == 70);
  m = mask_of({100, 101}, 130);
  CHECK(s.sample(l.data(), m.data()) == -1);
  m = mask_of({}, 130);
  CHECK(s.sample(l.data(), m.data()) == -1);
  // top_k 1 is greedy too, whatever the temperature.
  Sampler k1 = make({.temperature = 2.0f, .top_k = 1}, 130);
  CHECK(k1.greedy());
  CHECK(k1.sample(l.data(), nullptr) == 5);
  // Sampling with nothing allowed gives -1 as well.
  Sampler t = make({.temperature = 1.0f}, 130);
  CHECK(t.sample(l.data(), m.data()) == -1);
}

// The rule of greedy without a mask, as sampler.h states it (a plain scan in id order).
int32_t greedy_rule(const std::vector<float>& l) {
  int32_t best = -1;
  for (size_t i = 0; i < l.size(); ++i)
    if (std::isfinite(l[i]) && (best < 0 || l[i] > l[static_cast<size_t>(best)]))
      best = static_cast<int32_t>(i);
  return best;
}

TEST_CASE("greedy without a mask (the SIMD argmax) keeps the rule on a real vocabulary size") {
  constexpr int32_t kVocab = 49152 + 13;  // SmolLM2's, plus a tail shorter than any vector
  Sampler s = make({}, kVocab);
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::mt19937_64 r(7);
  for (int trial = 0; trial < 40; ++trial) {
    std::vector<float> l = test_logits(kVocab, 100 + static_cast<uint64_t>(trial));
    std::uniform_int_distribution<int32_t> at(0, kVocab - 1);
    // Ties at the maximum (several, anywhere, the tail included), then non-finite values.
    const float top = 20.0f + static_cast<float>(trial % 3);
    const int ties = 1 + trial % 4;
    for (int t = 0; t < ties; ++t)
      l[static_cast<size_t>(t == 0 && trial % 5 == 0 ? kVocab - 1 : at(r))] = top;
    if (trial % 2 == 1) l[static_cast<size_t>(at(r))] = -inf;
    if (trial % 7 == 3) l[static_cast<size_t>(at(r))] = nan;
    if (trial % 8 == 5) l[0] = nan;
    if (trial % 9 == 4) l[static_cast<size_t>(at(r))] = inf;
    CHECK_MESSAGE(s.sample(l.data(), nullptr) == greedy_rule(l), "trial " << trial);
  }
  std::vector<float> none(kVocab, -inf);
  none[3] = nan;
  CHECK(s.sample(none.data(), nullptr) == -1);
  std::vector<float> flat(kVocab, 1.5f);
  CHECK(s.sample(flat.data(), nullptr) == 0);
}

TEST_CASE("temperature, top-k, top-p and masks give numpy's distributions") {
  // tests/fixtures/decoder/sampler_cases.json: tools/reference/make_sampler_fixture.py.
  const json::Value fx = test::fixture_json("decoder/sampler_cases.json");
  int cases = 0;
  for (const json::Value& c : fx.find("cases")->items()) {
    std::vector<float> logits;
    for (const json::Value& v : c.find("logits")->items()) logits.push_back(logit_of(v));
    std::vector<double> p;
    for (const json::Value& v : c.find("p")->items()) p.push_back(v.as_double());
    REQUIRE(p.size() == logits.size());
    const int32_t n = static_cast<int32_t>(logits.size());
    std::vector<uint64_t> mask;
    if (const json::Value* a = c.find("allowed")) {
      std::vector<int32_t> ids;
      for (const json::Value& v : a->items()) ids.push_back(static_cast<int32_t>(*v.as_int64()));
      mask = mask_of(ids, n);
    }
    SamplerConfig cfg;
    cfg.temperature = static_cast<float>(c.find("temperature")->as_double());
    cfg.top_k = static_cast<int32_t>(*c.find("top_k")->as_int64());
    cfg.top_p = static_cast<float>(c.find("top_p")->as_double());
    cfg.seed = 11 + static_cast<uint64_t>(cases);
    CAPTURE(cases);
    CAPTURE(cfg.temperature);
    CAPTURE(cfg.top_k);
    CAPTURE(cfg.top_p);
    Sampler s = make(cfg, n);
    check_distribution(s, logits, mask.empty() ? nullptr : mask.data(), p, n > 200 ? 40000 : 30000);
    ++cases;
  }
  CHECK(cases == 12);
}

TEST_CASE("a seed fixes the sequence; reseed restarts it") {
  const std::vector<float> l = test_logits(500, 9);
  auto run = [&](Sampler& s) {
    std::vector<int32_t> ids;
    for (int i = 0; i < 200; ++i) ids.push_back(s.sample(l.data(), nullptr));
    return ids;
  };
  Sampler a = make({.temperature = 1.0f, .top_p = 0.95f, .seed = 1234}, 500);
  Sampler b = make({.temperature = 1.0f, .top_p = 0.95f, .seed = 1234}, 500);
  Sampler c = make({.temperature = 1.0f, .top_p = 0.95f, .seed = 1235}, 500);
  const std::vector<int32_t> ra = run(a);
  CHECK(ra == run(b));
  CHECK(ra != run(c));
  a.reseed(1234);
  CHECK(run(a) == ra);
  // The draw is the top 53 bits of one std::mt19937_64 output...
  Sampler u = make({.temperature = 1.0f, .seed = 77}, 2);
  std::mt19937_64 e(77);
  CHECK(u.uniform() == static_cast<double>(e() >> 11) * 0x1.0p-53);
  // ... and the engine is the standard's: [rand.predef] fixes its 10000th output from the
  // default seed 5489 at 9981545732273789042.
  Sampler d = make({.temperature = 1.0f, .seed = 5489}, 2);
  double last = 0.0;
  for (int i = 0; i < 10000; ++i) last = d.uniform();
  CHECK(last == static_cast<double>(uint64_t{9981545732273789042u} >> 11) * 0x1.0p-53);
}

TEST_CASE("sampling allocates nothing after create") {
  const int32_t n = 49152;
  const std::vector<float> l = test_logits(n, 21);
  std::vector<int32_t> ids;
  for (int32_t i = 0; i < n; i += 3) ids.push_back(i);
  const std::vector<uint64_t> m = mask_of(ids, n);
  for (const SamplerConfig& c :
       {SamplerConfig{}, SamplerConfig{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f},
        SamplerConfig{.temperature = 1.0f, .top_p = 0.5f}, SamplerConfig{.temperature = 1.0f}}) {
    Sampler s = make(c, n);
    int32_t got[4];
    test::alloc_hook::start();
    for (int i = 0; i < 4; ++i) got[i] = s.sample(l.data(), i % 2 ? m.data() : nullptr);
    const long calls = test::alloc_hook::stop();
    CHECK(calls == 0);
    // The draws are real ones: in the vocabulary, and allowed by the mask when one is given.
    for (int i = 0; i < 4; ++i) {
      CHECK(got[i] >= 0);
      CHECK(got[i] < n);
      if (i % 2) CHECK(got[i] % 3 == 0);
    }
  }
}

TEST_CASE("bad configurations are refused") {
  CHECK_FALSE(Sampler::create({.temperature = -1.0f}, 10).is_ok());
  CHECK_FALSE(Sampler::create({.temperature = std::numeric_limits<float>::infinity()}, 10).is_ok());
  CHECK_FALSE(Sampler::create({.top_k = -2}, 10).is_ok());
  CHECK_FALSE(Sampler::create({.top_p = 0.0f}, 10).is_ok());
  CHECK_FALSE(Sampler::create({.top_p = 1.5f}, 10).is_ok());
  CHECK_FALSE(Sampler::create({.stop_ids = {10}}, 10).is_ok());
  CHECK_FALSE(Sampler::create({}, 0).is_ok());
  Sampler s = make({.stop_ids = {2, 7}}, 10);
  CHECK(s.is_stop(7));
  CHECK_FALSE(s.is_stop(3));
}

}  // namespace
}  // namespace laya
