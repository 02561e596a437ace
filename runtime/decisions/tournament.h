// A choice narrowed by elimination: upstream's tournament (laya 0.4.15) as a state machine over
// decision calls, in its two forms.
//
//   kSdk     shortlist.predict_tournament(agent, state, questions, group_size): every choice with
//            more than `group` labels plays; the result is the final call's reply plus
//            "tournament": {qid: {"labels": finalists, "n": labels before the first round,
//            "rounds": r}} for every choice question (probabilities over the finalists only,
//            usage the final call's).
//   kServer  laya-serve's LAYA_TOURNAMENT_GROUP (serve._tournament_plan and
//            serve._predict_with_tournament): the same rounds, but no tournament for a request
//            whose large choices have non-string labels or an option_order (unless one is over
//            100 options), and the result rebuilt: probabilities over every original label (0.0
//            for an eliminated one), x_tournament {finalists, rounds[, option_order_dropped]} on
//            each answer, input_tokens summed over every call.
//
// The rounds: a choice with more than `group` labels is cut, in criteria order, into contiguous
// groups of near-equal size; one call answers every group of every such question (as questions
// "0", "1", ...), each group's choice goes through to the next round; when no choice is over
// `group`, a final call answers the request's questions with each narrowed choice cut to its
// finalists (an option_order it carried dropped: it no longer fits).
//
//   LAYA_ASSIGN_OR_RETURN(std::optional<Tournament> t, Tournament::plan(questions, 16, kSdk));
//   while (t && !t->done()) LAYA_RETURN_IF_ERROR(t->answer(call(t->next_questions())));
//   json::Value out = t->result();
//
// Errors carry upstream's messages: kRequestUnprocessable where upstream raises ValueError (HTTP
// 422), kRequestInvalid where the SDK raises TypeError. Allocates (heap, or the arena of a Scope).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/text/json.h"

namespace laya::decision {

enum class TournamentMode { kSdk, kServer };

class Tournament {
 public:
  // kServer: nullopt when the request answers in one pass (no choice over `group`, or, with none
  // over 100 options, one whose labels are not all strings or that has an option_order);
  // kRequestUnprocessable for a choice over 100 options with a non-string label, or duplicated
  // labels. kSdk: a Tournament whenever `questions` is an object (its first call may be the final
  // one); a choice without criteria, criteria that are empty or repeat a label: upstream's
  // ValueError; criteria neither a dict nor a list: its TypeError. `group` >= 2.
  static Result<std::optional<Tournament>> plan(const json::Value& questions, int group,
                                                TournamentMode mode = TournamentMode::kServer);

  // The questions of the next call: a round's groups, or the final call's questions.
  const json::Value& next_questions() const { return next_; }
  bool final_call() const { return final_; }
  // The reply of that call (its result object). Errors: a reply that is not an object, or whose
  // answers are not (kSdk: upstream's TypeError messages), a round's reply without a group's
  // choice (kRequestUnprocessable).
  Status answer(const json::Value& result);
  bool done() const { return done_; }
  // After done(): the request's result, as the mode's upstream returns it.
  json::Value result() const;

 private:
  struct Entry {
    std::string qid;
    std::vector<json::Value> labels;  // current labels, in criteria order
    size_t n = 0;                     // labels before the first round
    int rounds = 0;
  };
  Status track_choices();
  void prepare_next();
  json::Value cut(const std::string& qid, const std::vector<json::Value>& labels) const;

  TournamentMode mode_ = TournamentMode::kServer;
  json::Value questions_;
  int group_ = 0;
  std::vector<std::string> large_;  // kServer: the plan's choices (reported in the result)
  std::vector<std::vector<json::Value>> large_labels_;
  std::vector<Entry> meta_;                                          // every choice question
  std::vector<std::pair<size_t, std::vector<json::Value>>> groups_;  // (meta index, labels)
  json::Value next_;
  bool final_ = false, done_ = false;
  int64_t input_tokens_ = 0;
  json::Value final_result_;
};

}  // namespace laya::decision
