// Tournament mode (LAYA_TOURNAMENT_GROUP): upstream's serve._tournament_plan and
// shortlist.predict_tournament (laya 0.4.15) as a state machine over decision calls. A choice with
// more than `group` labels is cut, in criteria order, into contiguous groups of near-equal size;
// one call answers every group of every such question (as questions "0", "1", ...), each group's
// choice goes through to the next round; when no choice is over `group`, a final call answers the
// request's questions with each narrowed choice cut to its finalists. The result is rebuilt as
// serve._predict_with_tournament returns it: probabilities over every original label (0.0 for an
// eliminated one), x_tournament {finalists, rounds[, option_order_dropped]}, input_tokens summed
// over every call.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/text/json.h"

namespace laya::serve {

class Tournament {
 public:
  // nullopt: answer in one pass (no choice over `group`, or, with none over 100 options, one whose
  // labels are not all strings or that has an option_order). kRequestUnprocessable (422) with
  // upstream's message for a choice over 100 options with a non-string label, or duplicated labels.
  static Result<std::optional<Tournament>> plan(const json::Value& questions, int group);

  // The questions of the next call: a round's groups, or the final call's questions.
  const json::Value& next_questions() const { return next_; }
  bool final_call() const { return final_; }
  // The answer of that call (its result object). Errors: a reply without a group's choice.
  Status answer(const json::Value& result);
  bool done() const { return done_; }
  // After done(): the request's result.
  json::Value result() const;

 private:
  struct Entry {
    std::string qid;
    std::vector<json::Value> labels;  // current labels, in criteria order
    int rounds = 0;
  };
  void prepare_next();
  json::Value cut(const std::string& qid, const std::vector<json::Value>& labels) const;

  json::Value questions_;
  int group_ = 0;
  std::vector<std::string> large_;  // the plan's choices (reported in the result)
  std::vector<std::vector<json::Value>> large_labels_;
  std::vector<Entry> meta_;                                          // every choice question
  std::vector<std::pair<size_t, std::vector<json::Value>>> groups_;  // (meta index, labels)
  json::Value next_;
  bool final_ = false, done_ = false;
  int64_t input_tokens_ = 0;
  json::Value final_result_;
};

}  // namespace laya::serve
