#include "runtime/decisions/answers.h"

#include <algorithm>
#include <cmath>

#include "runtime/text/pystr.h"

namespace laya::decision {

namespace {

using json::Value;

// numpy's pairwise summation (add.reduce over a contiguous row): blocks of 8 partial sums up to
// 128 elements, halves above that.
template <class T>
T pairwise_sum(const T* a, size_t n) {
  if (n < 8) {
    T r = T(-0.0);
    for (size_t i = 0; i < n; ++i) r += a[i];
    return r;
  }
  if (n <= 128) {
    T r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

float expf_exact(float x) {
  return static_cast<float>(std::exp(static_cast<double>(x)));
}
float logf_exact(float x) {
  return static_cast<float>(std::log(static_cast<double>(x)));
}

Value num(double v) {
  return Value::number(py::round(v, 4));
}

}  // namespace

std::string label_key(const Value& label) {
  if (label.is_string()) return label.as_string();
  if (label.is_bool()) return label.as_bool() ? "true" : "false";
  if (label.is_null()) return "null";
  if (label.is_number() && !label.is_integer()) return json::python_float_repr(label.as_double());
  return label.as_string();
}

namespace {

// confidence_from_probs(p, k): normalized entropy, float32 as numpy computes it.
double entropy_confidence(const std::vector<float>& p) {
  const size_t k = p.size();
  if (k < 2) return 1.0;
  std::vector<float> t(k);
  for (size_t i = 0; i < k; ++i) t[i] = p[i] * logf_exact(std::clamp(p[i], 1e-12f, 1.0f));
  const double ent = -static_cast<double>(pairwise_sum(t.data(), k));
  const double score = 1.0 - ent / std::log(static_cast<double>(k));
  return score < 0.0 ? 0.0 : (score > 1.0 ? 1.0 : score);
}

// The temperature bucket of k options (REFERENCE-laya.md §5).
const char* size_bucket(size_t k) {
  return k <= 2 ? "2" : k <= 5 ? "3-5" : k <= 10 ? "6-10" : "11+";
}

}  // namespace

std::string temp_bucket(QType t, int k) {
  return std::string(qtype_name(t)) + ":" + size_bucket(k < 0 ? 0 : static_cast<size_t>(k));
}

double clamp_temperature(double t) {
  if (!std::isfinite(t)) return 1.0;
  return std::min(5.0, std::max(0.5, t));
}

float Temperatures::get(QType t, int k) const {
  const std::string bucket = temp_bucket(t, k);
  double v = temperature[static_cast<int>(t)];
  for (const auto& [name, value] : by_options)
    if (name == bucket) v = value;
  return static_cast<float>(clamp_temperature(v));
}

Temperatures model_temperatures(const ir::Metadata& meta) {
  Temperatures t;
  if (!meta.decision.present) return t;
  for (int i = 0; i < 3; ++i) t.temperature[i] = meta.decision.temperature[i];
  for (const auto& [k, v] : meta.decision.temperature_by_options) t.by_options.emplace_back(k, v);
  return t;
}

const char* abstention_name(Abstention a) {
  switch (a) {
    case Abstention::kPassed:
      return "passed";
    case Abstention::kAbstained:
      return "abstained";
    case Abstention::kUnevaluated:
      return "unevaluated";
    case Abstention::kNone:
      break;
  }
  return "";
}

Answer compute_answer(const Question& q, size_t k, const float* row, const float* act_logits,
                      const Temperatures& temps) {
  Answer a;
  a.type = q.type;
  const float T = temps.get(q.type, static_cast<int>(k));
  std::vector<float> z(k);
  a.p.resize(k);
  std::vector<float>& p = a.p;
  float m = -INFINITY;
  for (size_t i = 0; i < k; ++i) {
    z[i] = row[i] / T;
    m = std::max(m, z[i]);
  }
  for (size_t i = 0; i < k; ++i) p[i] = expf_exact(z[i] - m);
  const float s = pairwise_sum(p.data(), k);
  for (size_t i = 0; i < k; ++i) p[i] /= s;
  if (!q.option_order.empty() && q.option_order.size() == k) {
    // z is free now: the slots' probabilities back in label order
    for (size_t slot = 0; slot < k; ++slot) z[static_cast<size_t>(q.option_order[slot])] = p[slot];
    std::copy(z.begin(), z.end(), p.begin());
  }
  size_t arg = 0;
  for (size_t i = 1; i < k; ++i)
    if (p[i] > p[arg]) arg = i;
  a.arg = static_cast<int32_t>(arg);
  a.answer_confidence = k ? std::clamp(static_cast<double>(p[arg]), 0.0, 1.0) : 1.0;
  if (act_logits != nullptr) {
    const float am = std::max(act_logits[0], act_logits[1]);
    const float e0 = expf_exact(act_logits[0] - am), e1 = expf_exact(act_logits[1] - am);
    a.has_action = true;
    a.act_probability = e0 / (e0 + e1);
  }
  if (q.type == QType::kNoul) {
    const double p1 = static_cast<double>(p[1]);
    a.confidence = std::max(p1, 1.0 - p1);
  } else {
    a.confidence = entropy_confidence(p);
  }
  if (q.type == QType::kScore) {
    std::vector<double> terms(k);
    for (size_t i = 0; i < k; ++i) terms[i] = static_cast<double>(i) * static_cast<double>(p[i]);
    a.score = pairwise_sum(terms.data(), k);
  }
  return a;
}

void gate_answer(const MinConfidence& mc, Answer* a) {
  if (!mc.present) return;
  double threshold = mc.value;
  if (mc.is_map) {
    // confidence._option_bucket of the answer: its type and the number of its probabilities
    // (noul: 2)
    const std::string bucket = temp_bucket(a->type, static_cast<int>(a->p.size()));
    threshold = 0.0;
    bool found = false;
    for (const auto& [key, v] : mc.buckets)
      if (key == bucket) {
        threshold = v;
        found = true;
      }
    if (!found)
      for (const auto& [key, v] : mc.buckets)
        if (key == "default") threshold = v;
  }
  // The gate reads the answer's answer_confidence (else its confidence) as written: rounded.
  const double ac = py::round(a->answer_confidence, 4), c = py::round(a->confidence, 4);
  const double* conf = std::isfinite(ac) ? &ac : std::isfinite(c) ? &c : nullptr;
  a->threshold = threshold;
  a->abstention = !conf               ? Abstention::kUnevaluated
                  : *conf < threshold ? Abstention::kAbstained
                                      : Abstention::kPassed;
}

Value answer_json(const Question& q, const Answer& a) {
  const size_t k = a.p.size();
  const std::vector<float>& p = a.p;
  Value o = Value::object();
  o.set("type", Value::string(qtype_name(q.type)));
  if (q.type == QType::kChoice) {
    o.set("choice", q.labels[static_cast<size_t>(a.arg)]);
    Value probs = Value::object();
    for (size_t i = 0; i < k; ++i)
      probs.members().push_back({label_key(q.labels[i]), num(static_cast<double>(p[i]))});
    o.set("probabilities", std::move(probs));
    o.set("confidence", num(a.confidence));
  } else if (q.type == QType::kScore) {
    o.set("score", num(a.score));
    Value legend = Value::object();
    for (size_t i = 0; i < q.legend.size(); ++i)
      legend.set(std::to_string(i), Value::string(q.legend[i]));
    o.set("legend", std::move(legend));
    Value probs = Value::object();
    for (size_t i = 0; i < k; ++i) probs.set(std::to_string(i), num(static_cast<double>(p[i])));
    o.set("probabilities", std::move(probs));
    o.set("confidence", num(a.confidence));
  } else {
    o.set("noul", num(static_cast<double>(p[1])));
    o.set("confidence", num(a.confidence));
  }
  o.set("answer_confidence", num(a.answer_confidence));
  if (a.has_action) {
    Value action = Value::object();
    action.set("act_probability", num(static_cast<double>(a.act_probability)));
    o.set("action", std::move(action));
  }
  if (a.abstention != Abstention::kNone) {
    if (a.abstention == Abstention::kAbstained) o.set("low_confidence", Value::boolean(true));
    o.set("abstention", Value::string(abstention_name(a.abstention)));
    o.set("abstention_threshold", Value::number(a.threshold));
  }
  return o;
}

Value usage_block(const std::vector<Question>& questions, const std::vector<Row>& rows) {
  int64_t input = 0, dropped = 0;
  Value truncated_q = Value::array();
  Value collapsed = Value::object();
  for (size_t j = 0; j < rows.size(); ++j) {
    const Row& r = rows[j];
    input += static_cast<int64_t>(r.ids.size());
    dropped = std::max(dropped, r.state_tokens - r.state_tokens_used);
    if (r.truncated()) truncated_q.push(Value::string(questions[j].id));
    if (r.options_distinct < r.options) {
      Value o = Value::object();
      o.set("total", Value::integer(r.options));
      o.set("distinct", Value::integer(r.options_distinct));
      o.set("tokens_per_option",
            r.tokens_per_option ? Value::integer(*r.tokens_per_option) : Value());
      collapsed.members().push_back({questions[j].id, std::move(o)});
    }
  }
  Value u = Value::object();
  u.set("input_tokens", Value::integer(input));
  u.set("output_tokens", Value::integer(0));
  u.set("state_tokens", Value::integer(rows.empty() ? 0 : rows[0].state_tokens));
  u.set("state_tokens_dropped", Value::integer(dropped));
  u.set("truncated", Value::boolean(dropped > 0));
  u.set("truncated_questions", std::move(truncated_q));
  if (!collapsed.members().empty()) u.set("options", std::move(collapsed));
  return u;
}

namespace {

Value result_object(Value answers, Value usage) {
  Value r = Value::object();
  r.set("model", Value::string("laya-rl-agent"));
  r.set("answers", std::move(answers));
  r.set("usage", std::move(usage));
  return r;
}

}  // namespace

Value make_result(const std::vector<Question>& questions, const std::vector<Answer>& answers,
                  Value usage) {
  Value a = Value::object();
  for (size_t j = 0; j < answers.size(); ++j)
    a.members().push_back({questions[j].id, answer_json(questions[j], answers[j])});
  return result_object(std::move(a), std::move(usage));
}

Value empty_result() {
  Value u = Value::object();
  u.set("input_tokens", Value::integer(0));
  u.set("output_tokens", Value::integer(0));
  return result_object(Value::object(), std::move(u));
}

}  // namespace laya::decision
