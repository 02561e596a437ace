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

// json.dumps' key for a label: str as is, int digits, float repr, true / false.
std::string key_of(const Value& label) {
  if (label.is_string()) return label.as_string();
  if (label.is_bool()) return label.as_bool() ? "true" : "false";
  if (label.is_null()) return "null";
  if (label.is_number() && !label.is_integer()) return json::python_float_repr(label.as_double());
  return label.as_string();
}

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

// The bucket of an answer, as confidence._option_bucket reads it off the answer.
std::string answer_bucket(const Value& a) {
  const Value* type = a.find("type");
  if (!type || !type->is_string()) return "";
  const std::string& t = type->as_string();
  if (t != "choice" && t != "score" && t != "noul") return "";
  size_t k = 0;
  const Value* probs = a.find("probabilities");
  if (probs && probs->is_object() && !probs->members().empty())
    k = probs->members().size();
  else if (t == "noul")
    k = 2;
  else
    return "";
  return t + ":" + size_bucket(k);
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

Value decode_answers(const std::vector<Question>& questions, const std::vector<Row>& rows,
                     const float* logits, int K, const float* act_logits,
                     const Temperatures& temps) {
  Value answers = Value::object();
  for (size_t j = 0; j < rows.size(); ++j) {
    const Question& q = questions[j];
    const size_t k = rows[j].markers.size();
    const float T = temps.get(q.type, static_cast<int>(k));
    const float* row = logits + j * static_cast<size_t>(K);
    std::vector<float> z(k), p(k);
    float m = -INFINITY;
    for (size_t i = 0; i < k; ++i) {
      z[i] = row[i] / T;
      m = std::max(m, z[i]);
    }
    for (size_t i = 0; i < k; ++i) p[i] = expf_exact(z[i] - m);
    const float s = pairwise_sum(p.data(), k);
    for (size_t i = 0; i < k; ++i) p[i] /= s;
    if (!q.option_order.empty() && q.option_order.size() == k) {
      std::vector<float> canonical(k);
      for (size_t slot = 0; slot < k; ++slot)
        canonical[static_cast<size_t>(q.option_order[slot])] = p[slot];
      p = std::move(canonical);
    }
    size_t arg = 0;
    for (size_t i = 1; i < k; ++i)
      if (p[i] > p[arg]) arg = i;
    const double top = k ? std::clamp(static_cast<double>(p[arg]), 0.0, 1.0) : 1.0;
    Value action;
    if (act_logits != nullptr) {
      const float* act = act_logits + 2 * j;
      const float am = std::max(act[0], act[1]);
      const float e0 = expf_exact(act[0] - am), e1 = expf_exact(act[1] - am);
      action = Value::object();
      action.set("act_probability", num(static_cast<double>(e0 / (e0 + e1))));
    }

    Value a = Value::object();
    a.set("type", Value::string(qtype_name(q.type)));
    if (q.type == QType::kChoice) {
      a.set("choice", q.labels[arg]);
      Value probs = Value::object();
      for (size_t i = 0; i < k; ++i)
        probs.members().push_back({key_of(q.labels[i]), num(static_cast<double>(p[i]))});
      a.set("probabilities", std::move(probs));
      a.set("confidence", num(entropy_confidence(p)));
    } else if (q.type == QType::kScore) {
      std::vector<double> terms(k);
      for (size_t i = 0; i < k; ++i) terms[i] = static_cast<double>(i) * static_cast<double>(p[i]);
      a.set("score", num(pairwise_sum(terms.data(), k)));
      Value legend = Value::object();
      for (size_t i = 0; i < q.legend.size(); ++i)
        legend.set(std::to_string(i), Value::string(q.legend[i]));
      a.set("legend", std::move(legend));
      Value probs = Value::object();
      for (size_t i = 0; i < k; ++i) probs.set(std::to_string(i), num(static_cast<double>(p[i])));
      a.set("probabilities", std::move(probs));
      a.set("confidence", num(entropy_confidence(p)));
    } else {
      const double p1 = static_cast<double>(p[1]);
      a.set("noul", num(p1));
      a.set("confidence", num(std::max(p1, 1.0 - p1)));
    }
    a.set("answer_confidence", num(top));
    if (act_logits != nullptr) a.set("action", std::move(action));
    answers.members().push_back({q.id, std::move(a)});
  }
  return answers;
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

Value make_result(Value answers, Value usage) {
  Value r = Value::object();
  r.set("model", Value::string("laya-rl-agent"));
  r.set("answers", std::move(answers));
  r.set("usage", std::move(usage));
  return r;
}

Value empty_result() {
  Value u = Value::object();
  u.set("input_tokens", Value::integer(0));
  u.set("output_tokens", Value::integer(0));
  return make_result(Value::object(), std::move(u));
}

void apply_confidence_gate(Value& result, const MinConfidence& mc) {
  if (!mc.present) return;
  Value* answers = result.find("answers");
  if (!answers || !answers->is_object()) return;
  for (auto& m : answers->members()) {
    Value& a = m.value;
    if (!a.is_object()) continue;
    double threshold = mc.value;
    if (mc.is_map) {
      const std::string bucket = answer_bucket(a);
      threshold = 0.0;
      bool found = false;
      for (const auto& [key, v] : mc.buckets)
        if (!bucket.empty() && key == bucket) {
          threshold = v;
          found = true;
        }
      if (!found)
        for (const auto& [key, v] : mc.buckets)
          if (key == "default") threshold = v;
    }
    const Value* ac = a.find("answer_confidence");
    const Value* c = a.find("confidence");
    const Value* conf = ac && ac->is_number() && std::isfinite(ac->as_double()) ? ac
                        : c && c->is_number() && std::isfinite(c->as_double())  ? c
                                                                                : nullptr;
    auto& mem = a.members();
    auto erase = [&](const char* key) {
      mem.erase(std::remove_if(mem.begin(), mem.end(),
                               [&](const json::Member& x) { return x.key == key; }),
                mem.end());
    };
    const char* state = "unevaluated";
    if (!conf) {
      erase("low_confidence");
    } else if (conf->as_double() < threshold) {
      a.set("low_confidence", Value::boolean(true));
      state = "abstained";
    } else {
      erase("low_confidence");
      state = "passed";
    }
    a.set("abstention", Value::string(state));
    a.set("abstention_threshold", Value::number(threshold));
  }
}

}  // namespace laya::decision
