// One step of generation under a schema: the grammar's allowed-token bitset (runtime/decisions/grammar/
// token_automaton.h) restricts the logits before the sampler (runtime/sampler.h) picks, and the
// pick advances the grammar.
//
//   grammar::GrammarMatcher m(automaton.get());
//   while (!m.complete()) {
//     const float* logits = ...;   // the model's next-token row, f32 [n_vocab]
//     LAYA_ASSIGN_OR_RETURN(int32_t id, sample_constrained(sampler, m, logits));
//     ids.push_back(id);           // the last one may be a stop token (m.complete() then)
//   }
// Whatever the logits, temperature, top-k or top-p, the ids taken this way spell (piece by
// piece, stop token excluded) a prefix of the canonical text of a schema-valid instance, and the
// whole text once m.complete(): the mask is applied before temperature / top-k / top-p, so they
// only ever choose among allowed tokens. Nothing allocates; the cost per token is one pass of the
// sampler over the set bits of the mask plus the matcher's walk of one piece (bench/
// bench_grammar.cpp measures it on SmolLM2's vocabulary).
#pragma once

#include <cstdint>

#include "ir/status.h"
#include "runtime/decisions/grammar/token_automaton.h"
#include "runtime/sampler.h"

namespace laya {

// `logits` f32 [n_vocab], read during the call. Returns the id taken (already accepted by
// `matcher`). Errors, leaving both objects unchanged apart from the sampler's random state:
// kFailedPrecondition when the matcher is complete; kInvalidArgument when the sampler's vocabulary
// size differs from the automaton's; kOutOfRange when no allowed token has a finite logit.
Result<int32_t> sample_constrained(Sampler& sampler, grammar::GrammarMatcher& matcher,
                                   const float* logits);

}  // namespace laya
