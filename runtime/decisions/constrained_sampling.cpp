#include "runtime/decisions/constrained_sampling.h"

namespace laya {

Result<int32_t> sample_constrained(Sampler& sampler, grammar::GrammarMatcher& matcher,
                                   const float* logits) {
  if (matcher.complete())
    return Status(StatusCode::kFailedPrecondition, "the grammar is complete: nothing to sample");
  const int32_t n = matcher.automaton().vocab().size();
  if (sampler.n_vocab() != n)
    return status_error(StatusCode::kInvalidArgument,
                        "sampler vocabulary %d != grammar vocabulary %d", sampler.n_vocab(), n);
  const int32_t id = sampler.sample(logits, matcher.mask());
  if (id < 0)
    return status_error(StatusCode::kOutOfRange,
                        "no token the grammar allows has a finite logit (state %d)",
                        matcher.state());
  LAYA_RETURN_IF_ERROR(matcher.accept(id));
  return id;
}

}  // namespace laya
