// Next-token sampling from one row of logits, optionally restricted by an allowed-token bitset
// (runtime/decisions/grammar/token_automaton.h).
//
//   LAYA_ASSIGN_OR_RETURN(Sampler s, Sampler::create({.temperature = 0.7f, .top_p = 0.9f,
//                                                     .seed = 42}, n_vocab));
//   int32_t id = s.sample(logits, grammar_mask);   // -1: no token is allowed
//
// The procedure, exactly (two runs with the same config, seed and logits give the same ids on
// every machine):
//  1. Candidates: ids whose `allowed` bit is set (all ids without a mask) and whose logit is
//     finite. None: the result is -1.
//  2. Greedy (temperature 0, the default, or top_k 1): the candidate with the largest logit, the
//     lowest id among equals. No random number is drawn.
//  3. Otherwise z = logit / temperature (float). top_k > 0 keeps the k candidates with the
//     largest z (ties: lower ids first). p = softmax(z) over the kept ones, in double (sums in
//     increasing id order). top_p < 1 then keeps the fewest candidates, taken in order of
//     decreasing z (ties: lower ids first), whose p sum to at least top_p (at least one).
//  4. One uniform draw u in [0, 1) (the top 53 bits of one std::mt19937_64 output, times 2^-53;
//     the engine is seeded with `seed` as the C++ standard specifies, so its sequence is fixed);
//     the kept candidates are walked in increasing id order and the first whose running sum of
//     p exceeds u * (sum of kept p) is the result.
// Temperature, top-k and top-p never reorder or revive masked ids. Nothing here allocates after
// create(): scratch buffers are sized for the vocabulary once. Greedy without a mask runs the
// kernels' SIMD argmax (kernels/kernels.h; the same id: see sample()).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "ir/status.h"

namespace laya {

struct SamplerConfig {
  float temperature = 0.0f;  // 0: greedy; otherwise > 0
  int32_t top_k = 0;         // 0: off
  float top_p = 1.0f;        // in (0, 1]; 1: off
  uint64_t seed = 0;
  // Tokens that end generation (EOS, end of turn). The sampler may return them; callers stop
  // when is_stop() says so.
  std::vector<int32_t> stop_ids;
};

class Sampler {
 public:
  // kInvalidArgument for a negative / non-finite temperature, a negative top_k, top_p outside
  // (0, 1], n_vocab < 1, or a stop id outside the vocabulary.
  static Result<Sampler> create(const SamplerConfig& config, int32_t n_vocab);

  // `logits` f32 [n_vocab]; `allowed`: (n_vocab + 63) / 64 words, bit (id % 64) of word id / 64,
  // or nullptr. Both are read only during the call. Returns the id, or -1 when nothing is allowed.
  int32_t sample(const float* logits, const uint64_t* allowed);

  bool is_stop(int32_t id) const;
  bool greedy() const { return config_.temperature == 0.0f || config_.top_k == 1; }
  const SamplerConfig& config() const { return config_; }
  int32_t n_vocab() const { return n_vocab_; }
  // Restarts the random sequence (as if created with this seed).
  void reseed(uint64_t seed);
  // The next uniform number in [0, 1), from the same engine sample() draws from.
  double uniform();

 private:
  struct Candidate {
    float z;
    int32_t id;
  };
  SamplerConfig config_;
  int32_t n_vocab_ = 0;
  int64_t (*argmax_)(const float* x, int64_t n) = nullptr;  // the best kernel table's
  std::mt19937_64 engine_;
  std::vector<Candidate> cand_;  // [n_vocab] scratch
  std::vector<double> prob_;     // [n_vocab] scratch
};

}  // namespace laya
