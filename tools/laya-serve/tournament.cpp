#include "tools/laya-serve/tournament.h"

#include "runtime/text/pystr.h"

namespace laya::serve {

using json::Value;

namespace {

Status unprocessable(const std::string& m) {
  return Status(StatusCode::kRequestUnprocessable, m);
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
        StatusCode::kInternal,
        std::string("choice criteria must be a dict or list, got ") + py::type_name(criteria));
  }
  if (labels.empty()) return unprocessable("choice criteria must contain at least one option");
  for (size_t i = 0; i < labels.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (labels[i] == labels[j])
        return unprocessable("choice criteria label " + py::repr(labels[i]) + " is duplicated");
  return labels;
}

bool is_choice(const Value& q) {
  const Value* t = q.is_object() ? q.find("type") : nullptr;
  return t != nullptr && t->is_string() && t->as_string() == "choice";
}

}  // namespace

Result<std::optional<Tournament>> Tournament::plan(const Value& questions, int group) {
  if (!questions.is_object()) return std::optional<Tournament>();
  Tournament t;
  t.questions_ = questions;
  t.group_ = group;
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
  // predict_tournament: every choice question tracked.
  for (const json::Member& m : questions.members()) {
    if (!is_choice(m.value)) continue;
    const Value* crit = m.value.find("criteria");
    if (crit == nullptr)
      return unprocessable("question " + py::repr(m.key) + " is a choice but has no criteria");
    LAYA_ASSIGN_OR_RETURN(std::vector<Value> labels, criteria_labels(*crit));
    t.meta_.push_back({m.key, std::move(labels), 0});
  }
  t.prepare_next();
  return std::optional<Tournament>(std::move(t));
}

Value Tournament::cut(const std::string& qid, const std::vector<Value>& labels) const {
  Value q = *questions_.find(qid);
  const Value& crit = *q.find("criteria");
  Value narrowed;
  if (crit.is_object()) {
    narrowed = Value::object();
    for (const Value& l : labels) narrowed.set(l.as_string(), *crit.find(l.as_string()));
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
  if (const Value* u = result.find("usage"))
    if (const Value* t = u->find("input_tokens")) input_tokens_ += t->as_int64().value_or(0);
  if (final_) {
    final_result_ = result;
    done_ = true;
    return Status::ok();
  }
  const Value* answers = result.find("answers");
  if (answers == nullptr || !answers->is_object())
    return Status(StatusCode::kInternal, "a tournament round's reply has no answers");
  std::vector<std::vector<Value>> winners(meta_.size());
  std::vector<bool> played(meta_.size(), false);
  for (size_t i = 0; i < groups_.size(); ++i) {
    const Value* a = answers->find(std::to_string(i));
    const Value* c = a != nullptr ? a->find("choice") : nullptr;
    if (c == nullptr)
      return Status(StatusCode::kInternal, "a tournament round lost group " + std::to_string(i));
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

}  // namespace laya::serve
