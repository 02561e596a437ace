#include "tools/laya-serve/upstream.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "runtime/text/pystr.h"

namespace laya::serve {

using json::Value;

std::optional<double> jev_confidence(const Value& answer) {
  if (!answer.is_object()) return std::nullopt;
  const Value* type = answer.find("type");
  const Value* probs = answer.find("probabilities");
  if (type == nullptr || !type->is_string() || probs == nullptr || !probs->is_object() ||
      probs->members().empty())
    return std::nullopt;
  const std::string& kind = type->as_string();
  if (kind != "choice" && kind != "score") return std::nullopt;
  std::vector<double> p;
  if (kind == "score") {
    // sorted(probabilities, key=int): every key must read as an int.
    std::vector<std::pair<long long, double>> by_level;
    for (const json::Member& m : probs->members()) {
      char* end = nullptr;
      const long long k = std::strtoll(m.key.c_str(), &end, 10);
      if (m.key.empty() || *end != '\0' || !m.value.is_number()) return std::nullopt;
      by_level.emplace_back(k, m.value.as_double());
    }
    std::stable_sort(by_level.begin(), by_level.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [k, v] : by_level) p.push_back(v);
  } else {
    for (const json::Member& m : probs->members()) {
      if (!m.value.is_number()) return std::nullopt;
      p.push_back(m.value.as_double());
    }
  }
  for (double v : p)
    if (!std::isfinite(v) || v < 0.0) return std::nullopt;
  const size_t n = p.size();
  if (n == 1) return 1.0;
  double total = 0;
  for (double v : p) total += v;
  if (total != 0) {
    for (double& v : p) v /= total;
  } else {
    for (double& v : p) v = 1.0 / static_cast<double>(n);
  }
  const double dn = static_cast<double>(n);
  if (kind == "choice") {
    const double mx = *std::max_element(p.begin(), p.end());
    return (mx - 1.0 / dn) / (1.0 - 1.0 / dn);
  }
  size_t mode = 0;
  for (size_t i = 1; i < n; ++i)
    if (p[i] > p[mode]) mode = i;
  double spread = 0;
  for (size_t i = 0; i < n; ++i)
    spread += p[i] * std::fabs(static_cast<double>(i) - static_cast<double>(mode));
  const double center = (dn - 1) / 2;
  double uniform = 0;
  for (size_t i = 0; i < n; ++i) uniform += std::fabs(static_cast<double>(i) - center);
  uniform /= dn;
  return std::max(0.0, 1.0 - spread / uniform);
}

namespace {

Value copy_key(const Value& from, const char* key) {
  const Value* v = from.find(key);
  return v != nullptr ? *v : Value();
}

Value strict_projection(const Value& result) {
  Value answers = Value::object();
  if (const Value* a = result.find("answers"); a != nullptr && a->is_object()) {
    for (const json::Member& m : a->members()) {
      const Value& ans = m.value;
      const Value* type = ans.is_object() ? ans.find("type") : nullptr;
      const std::string kind = type != nullptr && type->is_string() ? type->as_string() : "";
      Value out = Value::object();
      if (kind == "choice") {
        out.set("type", Value::string("choice"));
        out.set("choice", copy_key(ans, "choice"));
        out.set("confidence", copy_key(ans, "confidence"));
        out.set("probabilities", copy_key(ans, "probabilities"));
      } else if (kind == "score") {
        out.set("type", Value::string("score"));
        out.set("score", copy_key(ans, "score"));
        out.set("confidence", copy_key(ans, "confidence"));
        out.set("probabilities", copy_key(ans, "probabilities"));
        out.set("legend", copy_key(ans, "legend"));
      } else if (kind == "noul") {
        out.set("type", Value::string("noul"));
        out.set("noul", copy_key(ans, "noul"));
      } else {
        out = ans;
      }
      answers.set(m.key, std::move(out));
    }
  }
  Value usage = Value::object();
  const Value* u = result.find("usage");
  for (const char* k : {"input_tokens", "output_tokens"}) {
    const Value* v = u != nullptr ? u->find(k) : nullptr;
    usage.set(k, v != nullptr ? *v : Value::integer(0));
  }
  Value out = Value::object();
  out.set("model", copy_key(result, "model"));
  out.set("answers", std::move(answers));
  out.set("usage", std::move(usage));
  return out;
}

}  // namespace

Value serve_result(Value result, const Value* routing, bool strict) {
  if (routing != nullptr && result.is_object()) result.set("routing", *routing);
  if (strict) return strict_projection(result);
  if (Value* answers = result.find("answers"); answers != nullptr && answers->is_object()) {
    for (json::Member& m : answers->members()) {
      if (!m.value.is_object()) continue;
      if (std::optional<double> c = jev_confidence(m.value))
        m.value.set("x_jev_confidence", Value::number(py::round(*c, 4)));
    }
  }
  return result;
}

std::string response_text(const Value& v) {
  json::DumpOptions o;
  o.ensure_ascii = false;
  o.item_separator = ",";
  o.key_separator = ":";
  return json::dump(v, o);
}

std::string detail_body(std::string_view message) {
  Value v = Value::object();
  v.set("detail", Value::string(std::string(message)));
  return response_text(v);
}

}  // namespace laya::serve
