#include "runtime/decisions/tournament.h"

#include "runtime/text/pystr.h"

namespace laya::decision {

using json::Value;

namespace {

Status unprocessable(const std::string& m) {
  return Status(StatusCode::kRequestUnprocessable, m);
}

// Python's == between two labels (a set's membership test): numbers and booleans by value.
bool py_equal(const Value& a, const Value& b) {
  auto numeric = [](const Value& v) { return v.is_number() || v.is_bool(); };
  auto as_num = [](const Value& v) {
    return v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_double();
  };
  if (numeric(a) && numeric(b)) return as_num(a) == as_num(b);
  return a == b;
}

// shortlist._criteria_items: the labels of a dict's keys or a list's items, none repeated.
Result<std::vector<Value>> criteria_labels(const Value& criteria) {
  std::vector<Value> labels;
  if (criteria.is_object()) {
    for (const json::Member& m : criteria.members()) labels.push_back(Value::string(m.key));
  } else if (criteria.is_array()) {
    labels = criteria.items();
  } else {
    return Status(
        StatusCode::kRequestInvalid,
        std::string("choice criteria must be a dict or list, got ") + py::type_name(criteria));
  }
  if (labels.empty()) return unprocessable("choice criteria must contain at least one option");
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (py_equal(labels[i], labels[j]))
        return unprocessable("choice criteria label " + py::repr(labels[i]) + " is duplicated");
  return labels;
}

bool is_choice(const Value& q) {
  const Value* t = q.is_object() ? q.find("type") : nullptr;
  return t != nullptr && t->is_string() && t->as_string() == "choice";
}

}  // namespace

Result<std::optional<Tournament>> Tournament::plan(const Value& questions, int group,
                                                   TournamentMode mode) {
  if (group < 2)
    return Status(StatusCode::kInvalidArgument, "a tournament's group size must be at least 2");
  Tournament t;
  t.mode_ = mode;
  t.questions_ = questions;
  t.group_ = group;
  if (mode == TournamentMode::kSdk) {
    if (!questions.is_object())
      return Status(StatusCode::kRequestInvalid,
                    "questions must be a dict of question id -> definition");
    LAYA_RETURN_IF_ERROR(t.track_choices());
    t.prepare_next();
    return std::optional<Tournament>(std::move(t));
  }
  if (!questions.is_object()) return std::optional<Tournament>();
  bool over_100 = false;
  std::string unmappable, ordered;
  for (const json::Member& m : questions.members()) {
    if (!is_choice(m.value)) continue;
    const Value* crit = m.value.find("criteria");
    if (crit == nullptr || !(crit->is_object() || crit->is_array())) continue;
    const size_t n = crit->is_object() ? crit->members().size() : crit->items().size();
    if (n <= static_cast<size_t>(group)) continue;
    LAYA_ASSIGN_OR_RETURN(std::vector<Value> labels, criteria_labels(*crit));
    bool strings = true;
    for (const Value& l : labels) strings = strings && l.is_string();
    if (!strings && unmappable.empty()) unmappable = m.key;
    const Value* order = m.value.find("option_order");
    if (order != nullptr && !order->is_null() && ordered.empty()) ordered = m.key;
    over_100 = over_100 || labels.size() > 100;
    t.large_.push_back(m.key);
    t.large_labels_.push_back(std::move(labels));
  }
  if (t.large_.empty()) return std::optional<Tournament>();
  if (over_100) {
    if (!unmappable.empty())
      return unprocessable("question " + py::repr(unmappable) +
                           ": a choice is narrowed by elimination once a request has one over 100 "
                           "options, and that needs every label to be a string");
  } else if (!unmappable.empty() || !ordered.empty()) {
    return std::optional<Tournament>();
  }
  LAYA_RETURN_IF_ERROR(t.track_choices());
  t.prepare_next();
  return std::optional<Tournament>(std::move(t));
}

// predict_tournament: every choice question tracked.
Status Tournament::track_choices() {
  for (const json::Member& m : questions_.members()) {
    if (!is_choice(m.value)) continue;
    const Value* crit = m.value.find("criteria");
    if (crit == nullptr)
      return unprocessable("question " + py::repr(m.key) + " is a choice but has no criteria");
    LAYA_ASSIGN_OR_RETURN(std::vector<Value> labels, criteria_labels(*crit));
    const size_t n = labels.size();
    meta_.push_back({m.key, std::move(labels), n, 0});
  }
  return Status::ok();
}

Value Tournament::cut(const std::string& qid, const std::vector<Value>& labels) const {
  Value q = *questions_.find(qid);
  const Value& crit = *q.find("criteria");
  Value narrowed;
  if (crit.is_object()) {
    narrowed = Value::object();
    for (const Value& l : labels) {
      const std::string key = l.is_string() ? l.as_string() : py::str(l);
      const Value* d = crit.find(key);
      narrowed.set(key, d != nullptr ? *d : Value());
    }
  } else {
    narrowed = Value::array(labels);
  }
  q.set("criteria", std::move(narrowed));
  auto& mem = q.members();
  for (size_t i = 0; i < mem.size(); ++i)
    if (mem[i].key == "option_order") {
      mem.erase(mem.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  return q;
}

void Tournament::prepare_next() {
  groups_.clear();
  for (size_t e = 0; e < meta_.size(); ++e) {
    const std::vector<Value>& labels = meta_[e].labels;
    const size_t L = labels.size();
    const size_t parts = (L + static_cast<size_t>(group_) - 1) / static_cast<size_t>(group_);
    if (parts > 1)
      for (size_t i = 0; i < parts; ++i)
        groups_.emplace_back(
            e,
            std::vector<Value>(labels.begin() + static_cast<std::ptrdiff_t>(i * L / parts),
                               labels.begin() + static_cast<std::ptrdiff_t>((i + 1) * L / parts)));
  }
  next_ = Value::object();
  if (!groups_.empty()) {
    for (size_t i = 0; i < groups_.size(); ++i)
      next_.set(std::to_string(i), cut(meta_[groups_[i].first].qid, groups_[i].second));
    return;
  }
  final_ = true;
  next_ = questions_;
  for (const Entry& e : meta_)
    if (e.rounds > 0) next_.set(e.qid, cut(e.qid, e.labels));
}

Status Tournament::answer(const Value& result) {
  if (mode_ == TournamentMode::kSdk && !result.is_object())
    return Status(
        StatusCode::kRequestInvalid,
        std::string("predict/system_one must return a dict, got ") + py::type_name(result));
  if (const Value* u = result.find("usage"))
    if (const Value* t = u->find("input_tokens")) input_tokens_ += t->as_int64().value_or(0);
  if (final_) {
    final_result_ = result;
    done_ = true;
    return Status::ok();
  }
  const Value* answers = result.find("answers");
  if (answers == nullptr || !answers->is_object())
    return mode_ == TournamentMode::kSdk
               ? Status(StatusCode::kRequestInvalid,
                        std::string("predict/system_one must return an answers dict, got ") +
                            (answers != nullptr ? py::type_name(*answers) : "NoneType"))
               : Status(StatusCode::kInternal, "a tournament round's reply has no answers");
  std::vector<std::vector<Value>> winners(meta_.size());
  std::vector<bool> played(meta_.size(), false);
  for (size_t i = 0; i < groups_.size(); ++i) {
    const Value* a = answers->find(std::to_string(i));
    const Value* c = a != nullptr ? a->find("choice") : nullptr;
    if (c == nullptr)
      return Status(
          mode_ == TournamentMode::kSdk ? StatusCode::kRequestUnprocessable : StatusCode::kInternal,
          "a tournament round's reply has no choice for group '" + std::to_string(i) + "'");
    winners[groups_[i].first].push_back(*c);
    played[groups_[i].first] = true;
  }
  for (size_t e = 0; e < meta_.size(); ++e)
    if (played[e]) {
      meta_[e].labels = std::move(winners[e]);
      ++meta_[e].rounds;
    }
  prepare_next();
  return Status::ok();
}

Value Tournament::result() const {
  Value out = final_result_;
  if (mode_ == TournamentMode::kSdk) {
    Value meta = Value::object();
    for (const Entry& e : meta_) {
      Value m = Value::object();
      m.set("labels", Value::array(e.labels));
      m.set("n", Value::integer(static_cast<int64_t>(e.n)));
      m.set("rounds", Value::integer(e.rounds));
      meta.set(e.qid, std::move(m));
    }
    out.set("tournament", std::move(meta));
    return out;
  }
  if (Value* answers = out.find("answers"); answers != nullptr && answers->is_object()) {
    for (size_t k = 0; k < large_.size(); ++k) {
      const std::string& qid = large_[k];
      Value* a = answers->find(qid);
      const Entry* meta = nullptr;
      for (const Entry& e : meta_)
        if (e.qid == qid) meta = &e;
      if (a == nullptr || !a->is_object() || meta == nullptr || meta->rounds == 0) continue;
      const Value* fin = a->find("probabilities");
      Value probs = Value::object();
      for (const Value& l : large_labels_[k]) {
        const std::string key = l.is_string() ? l.as_string() : py::str(l);
        const Value* p = fin != nullptr ? fin->find(key) : nullptr;
        probs.set(key, p != nullptr ? *p : Value::number(0.0));
      }
      a->set("probabilities", std::move(probs));
      Value report = Value::object();
      report.set("finalists", Value::array(meta->labels));
      report.set("rounds", Value::integer(meta->rounds));
      const Value* order = questions_.find(qid)->find("option_order");
      if (order != nullptr && !order->is_null())
        report.set("option_order_dropped", Value::boolean(true));
      a->set("x_tournament", std::move(report));
    }
  }
  if (Value* u = out.find("usage"); u != nullptr && u->is_object())
    u->set("input_tokens", Value::integer(input_tokens_));
  return out;
}

}  // namespace laya::decision
