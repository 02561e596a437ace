#include "runtime/decisions/calibration.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>

#include "runtime/text/pystr.h"

namespace laya::decision {

namespace {

using json::Value;

Status bad_label(const Question& q, const Value& label, const std::string& accepts) {
  return Status(StatusCode::kInvalidArgument, "label " + py::repr(label) + " of question '" + q.id +
                                                  "' (" + qtype_name(q.type) + ") is not " +
                                                  accepts);
}

// Python's == between two scalar JSON values (1 == 1.0 == True).
bool py_scalar_equal(const Value& a, const Value& b) {
  const bool an = a.is_number() || a.is_bool(), bn = b.is_number() || b.is_bool();
  if (an && bn) {
    const double x = a.is_bool() ? (a.as_bool() ? 1.0 : 0.0) : a.as_double();
    const double y = b.is_bool() ? (b.as_bool() ? 1.0 : 0.0) : b.as_double();
    return x == y;
  }
  if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
  return false;
}

std::string ascii_strip(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return "";
  const size_t e = s.find_last_not_of(ws);
  return std::string(s.substr(b, e - b + 1));
}

std::vector<double> one_hot(size_t k, size_t i) {
  std::vector<double> t(k, 0.0);
  t[i] = 1.0;
  return t;
}

Result<std::vector<double>> option_target(const Question& q, const Value& label) {
  const size_t k = q.options.size();
  switch (q.type) {
    case QType::kChoice: {
      for (size_t i = 0; i < q.labels.size(); ++i)
        if (py_scalar_equal(q.labels[i], label)) return one_hot(k, i);
      const std::string s = py::str(label);
      for (size_t i = 0; i < q.labels.size(); ++i)
        if (py::str(q.labels[i]) == s) return one_hot(k, i);
      std::string list;
      for (size_t i = 0; i < q.labels.size(); ++i) list += (i ? ", " : "") + py::repr(q.labels[i]);
      return bad_label(q, label, "one of its labels [" + list + "]");
    }
    case QType::kScore: {
      const std::string accepts = "a level index 0.." + std::to_string(k - 1) +
                                  " (a number, fractional between two levels, or its decimal "
                                  "string; not the level's description)";
      if (label.is_string())
        for (size_t i = 0; i < k; ++i)
          if (label.as_string() == std::to_string(i)) return one_hot(k, i);
      double v = NAN;
      if (label.is_number()) {
        v = label.as_double();
      } else if (label.is_string()) {
        const std::string s = ascii_strip(label.as_string());
        char* end = nullptr;
        errno = 0;
        const double x = s.empty() ? NAN : std::strtod(s.c_str(), &end);
        if (!s.empty() && end == s.c_str() + s.size()) v = x;
      }
      if (!(v >= 0.0 && v <= static_cast<double>(k - 1))) return bad_label(q, label, accepts);
      const double low = std::floor(v);
      const size_t lo = static_cast<size_t>(low);
      if (lo == k - 1 || v == low) return one_hot(k, lo);
      std::vector<double> t(k, 0.0);
      t[lo] = 1.0 - (v - low);
      t[lo + 1] = v - low;
      return t;
    }
    case QType::kNoul: {
      const std::string accepts = "a boolean (true / false, 1 / 0, \"yes\" / \"no\")";
      if (label.is_bool()) return one_hot(2, label.as_bool() ? 1 : 0);
      if (label.is_number()) {
        const double v = label.as_double();
        if (v == 0.0 || v == 1.0) return one_hot(2, v == 1.0 ? 1 : 0);
        return bad_label(q, label, accepts);
      }
      if (label.is_string()) {
        std::string s = ascii_strip(label.as_string());
        std::transform(s.begin(), s.end(), s.begin(),
                       [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; });
        if (s == "true" || s == "1" || s == "yes") return one_hot(2, 1);
        if (s == "false" || s == "0" || s == "no") return one_hot(2, 0);
      }
      return bad_label(q, label, accepts);
    }
  }
  return bad_label(q, label, "a label of a known question type");
}

// d NLL / d beta at beta (mean over records): increases with beta.
double nll_slope(std::span<const CalibrationRecord* const> recs, double beta) {
  double g = 0;
  for (const CalibrationRecord* r : recs) {
    const size_t k = r->logits.size();
    double m = -INFINITY;
    for (size_t i = 0; i < k; ++i) m = std::max(m, beta * r->logits[i]);
    double s = 0, sz = 0, tz = 0;
    for (size_t i = 0; i < k; ++i) {
      const double z = r->logits[i];
      const double e = std::exp(beta * z - m);
      s += e;
      sz += e * z;
      tz += r->target[i] * z;
    }
    g += sz / s - tz;
  }
  return g / static_cast<double>(recs.size());
}

}  // namespace

Result<std::vector<double>> label_target(const Question& q, const json::Value& label) {
  LAYA_ASSIGN_OR_RETURN(std::vector<double> t, option_target(q, label));
  if (q.option_order.empty()) return t;
  std::vector<double> slots(t.size());
  for (size_t s = 0; s < slots.size(); ++s) slots[s] = t[static_cast<size_t>(q.option_order[s])];
  return slots;
}

Status check_records(std::span<const CalibrationRecord> recs) {
  for (size_t j = 0; j < recs.size(); ++j) {
    const CalibrationRecord& r = recs[j];
    auto bad = [&](const char* why) {
      return status_error(StatusCode::kInvalidArgument, "calibration record %zu: %s", j, why);
    };
    if (r.logits.empty()) return bad("no options");
    if (r.target.size() != r.logits.size()) return bad("target and logits differ in length");
    double sum = 0;
    for (size_t i = 0; i < r.logits.size(); ++i) {
      if (!std::isfinite(r.logits[i])) return bad("a logit is not finite");
      if (!(r.target[i] >= 0.0) || !std::isfinite(r.target[i]))
        return bad("a target entry is negative or not finite");
      sum += r.target[i];
    }
    if (std::fabs(sum - 1.0) > 1e-6) return bad("the target does not sum to 1");
  }
  return Status::ok();
}

TemperatureFit fit_temperature(std::span<const CalibrationRecord* const> recs) {
  TemperatureFit fit;
  fit.n = static_cast<int64_t>(recs.size());
  bool varies = false;
  for (const CalibrationRecord* r : recs)
    for (float z : r->logits) varies |= z != r->logits[0];
  if (!varies) return fit;
  // h(u) = slope at beta = exp(-u): decreases with u = log T; the optimum is its root.
  double lo = std::log(0.5) - kLogTMargin, hi = std::log(5.0) + kLogTMargin;
  auto h = [&](double u) { return nll_slope(recs, std::exp(-u)); };
  double u;
  if (h(lo) <= 0) {
    u = lo;
  } else if (h(hi) >= 0) {
    u = hi;
  } else {
    while (hi - lo > 1e-13) {
      const double mid = 0.5 * (lo + hi);
      if (mid <= lo || mid >= hi) break;
      (h(mid) > 0 ? lo : hi) = mid;
    }
    u = 0.5 * (lo + hi);
  }
  fit.fitted = std::exp(u);
  fit.applied = clamp_temperature(fit.fitted);
  return fit;
}

Result<CalibrationFit> fit_calibration(std::span<const CalibrationRecord> recs,
                                       const CalibrationOptions& opts) {
  if (opts.min_type < 1 || opts.min_bucket < 1)
    return Status(StatusCode::kInvalidArgument, "min_type and min_bucket must be at least 1");
  LAYA_RETURN_IF_ERROR(check_records(recs));
  std::vector<const CalibrationRecord*> by_type[3];
  std::map<std::string, std::vector<const CalibrationRecord*>> by_bucket;
  for (const CalibrationRecord& r : recs) {
    by_type[static_cast<int>(r.type)].push_back(&r);
    by_bucket[temp_bucket(r.type, static_cast<int>(r.logits.size()))].push_back(&r);
  }
  CalibrationFit out;
  for (int t = 0; t < 3; ++t) {
    const char* name = qtype_name(static_cast<QType>(t));
    if (!by_type[t].empty()) out.counts.emplace_back(name, static_cast<int64_t>(by_type[t].size()));
    if (static_cast<int64_t>(by_type[t].size()) < opts.min_type) continue;
    const TemperatureFit f = fit_temperature(by_type[t]);
    out.temps.temperature[t] = f.applied;
    out.fits.emplace_back(name, f);
  }
  for (const auto& [name, rs] : by_bucket) {
    out.counts.emplace_back(name, static_cast<int64_t>(rs.size()));
    if (static_cast<int64_t>(rs.size()) < opts.min_bucket) continue;
    const TemperatureFit f = fit_temperature(rs);
    out.temps.by_options.emplace_back(name, f.applied);
    out.fits.emplace_back(name, f);
  }
  return out;
}

CalibrationMetrics calibration_metrics(std::span<const CalibrationRecord> recs,
                                       const Temperatures& temps, int bins) {
  CalibrationMetrics m;
  m.n = static_cast<int64_t>(recs.size());
  if (recs.empty() || bins < 1) {
    m.nll = m.accuracy = m.ece = NAN;
    return m;
  }
  std::vector<double> conf(recs.size());
  std::vector<double> correct(recs.size());
  double nll = 0;
  std::vector<double> logp;
  for (size_t j = 0; j < recs.size(); ++j) {
    const CalibrationRecord& r = recs[j];
    const size_t k = r.logits.size();
    const double T = temps.get(r.type, static_cast<int>(k));
    logp.assign(k, 0.0);
    double mx = -INFINITY;
    for (size_t i = 0; i < k; ++i) mx = std::max(mx, r.logits[i] / T);
    double s = 0;
    for (size_t i = 0; i < k; ++i) s += std::exp(r.logits[i] / T - mx);
    const double ls = std::log(s);
    size_t best = 0, label = 0;
    for (size_t i = 0; i < k; ++i) {
      logp[i] = r.logits[i] / T - mx - ls;
      if (r.target[i] > 0) nll -= r.target[i] * logp[i];
      if (logp[i] > logp[best]) best = i;
      if (r.target[i] > r.target[label]) label = i;
    }
    conf[j] = std::exp(logp[best]);
    correct[j] = best == label ? 1.0 : 0.0;
  }
  double acc = 0;
  for (double c : correct) acc += c;
  const double n = static_cast<double>(recs.size());
  m.nll = nll / n;
  m.accuracy = acc / n;
  const double step = 1.0 / bins;
  double ece = 0;
  for (int b = 0; b < bins; ++b) {
    const double lo = b * step, hi = b + 1 == bins ? 1.0 : (b + 1) * step;
    double cnt = 0, sc = 0, sa = 0;
    for (size_t j = 0; j < recs.size(); ++j) {
      if (!((b == 0 ? conf[j] >= lo : conf[j] > lo) && conf[j] <= hi)) continue;
      cnt += 1;
      sc += conf[j];
      sa += correct[j];
    }
    if (cnt > 0) ece += cnt / n * std::fabs(sc / cnt - sa / cnt);
  }
  m.ece = ece;
  return m;
}

json::Value decision_config(const Temperatures& temps) {
  Value t = Value::array();
  for (double v : temps.temperature) t.push(Value::number(v));
  Value by = Value::object();
  for (const auto& [name, v] : temps.by_options) by.set(name, Value::number(v));
  Value cfg = Value::object();
  cfg.set("temperature", std::move(t));
  cfg.set("temperature_by_options", std::move(by));
  return cfg;
}

}  // namespace laya::decision
