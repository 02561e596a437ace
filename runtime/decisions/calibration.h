// Fitting decision temperatures on labelled data (issue 8 item 5; laya 0.4.15's calibrate.py
// fit_temperature_map and train.py target_from_expected are the reference semantics).
//
// A record is one labelled question: its raw option logits at T = 1 (what decode_answers divides
// by the temperature: the label logits of a decoder, the marker logits of an encoder) in slot
// order, and the label as a target distribution over the same slots. The fit minimises the mean
// soft cross-entropy (the negative log-likelihood of the labels)
//   NLL(T) = mean_r [ logsumexp(z_r / T) - sum_i t_ri z_ri / T ]
// over one T per question type (`temperature` [choice, score, noul]) and one per option-count
// bucket (`temperature_by_options`, "<type>:<2|3-5|6-10|11+>", temp_bucket) that has at least
// `min_bucket` records; a smaller bucket is left out and the type's T covers it, as the runtime
// looks it up. A type with fewer than `min_type` records keeps T = 1.
//
// The minimiser: NLL is convex in beta = 1/T, so its derivative in beta,
//   g(beta) = mean_r [ E_{softmax(beta z_r)}[z_r] - sum_i t_ri z_ri ],
// increases with beta, and the optimum is its root. It is found by bisection on log T over
// [ln 0.5 - 10, ln 5 + 10] (upstream's search band: kLogTMargin e-folds outside the clamp band)
// to 1e-13 in log T, in double precision: no step size, no starting point, no divergence. When g
// keeps one sign over the band the optimum is the band's end (labels the model always ranks
// first: T -> 0; always last: T -> inf). `fitted` is that optimum, `applied` its
// clamp_temperature ([0.5, 5]), the value the runtime would use anyway; a record set whose rows
// are all constant (NLL does not depend on T) fits T = 1.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "runtime/text/json.h"
#include "runtime/decisions/answers.h"
#include "runtime/decisions/request.h"

namespace laya::decision {

// The search band of the minimiser, in e-folds outside [0.5, 5] on log T (upstream LOG_T_MARGIN).
inline constexpr double kLogTMargin = 10.0;
// Upstream's floor for a type's T (MIN_TYPE_N); the bucket floor is the caller's (default 30).
inline constexpr int64_t kMinTypeRecords = 10;
inline constexpr int64_t kMinBucketRecords = 30;

// One labelled question.
struct CalibrationRecord {
  QType type = QType::kChoice;
  std::vector<float> logits;   // f32 [k]: raw option logits (T = 1), slot order; k >= 1
  std::vector<double> target;  // [k]: the label's distribution, slot order; >= 0, sums to 1
};

// The label of question `q` as a target distribution over its slots (option_order applied), as
// upstream's target_from_expected reads an expected answer:
//   choice  the label itself (a JSON value equal to a label: "on", 1, true; 1 == 1.0 == true as
//           in Python), else a label whose str() is the label's str() ("1" for 1): one-hot;
//   score   a level index: an integer 0 .. K-1, or its decimal string "2": one-hot; a
//           fractional number v in [0, K-1] splits between the two levels around it
//           (1.25 -> 0.75 on level 1, 0.25 on level 2);
//   noul    true / false, 1 / 0, or a string "true" / "1" / "yes", "false" / "0" / "no"
//           (case and surrounding spaces ignored).
// Anything else is kInvalidArgument naming the question, the label and what it accepts (a score
// label is the level's index, not its description).
Result<std::vector<double>> label_target(const Question& q, const json::Value& label);

// One fitted temperature.
struct TemperatureFit {
  double fitted = 1.0;   // the NLL optimum on the search band (unclamped)
  double applied = 1.0;  // clamp_temperature(fitted): what the runtime uses
  int64_t n = 0;         // records it was fitted on
};

// The T minimising the mean NLL of `recs` (see the header comment). The records must be valid
// (check_records); with none the fit is T = 1.
TemperatureFit fit_temperature(std::span<const CalibrationRecord* const> recs);

// kInvalidArgument naming the first record with an empty row, a target of another length, a
// non-finite logit, or a target that is negative, non-finite or does not sum to 1 (1e-6).
Status check_records(std::span<const CalibrationRecord> recs);

struct CalibrationOptions {
  int64_t min_type = kMinTypeRecords;      // records a type needs for its own T
  int64_t min_bucket = kMinBucketRecords;  // records a bucket needs for its own T
};

struct CalibrationFit {
  Temperatures temps;  // applied (clamped) values: `temperature`, fitted buckets in name order
  // Every fit made: "choice", "score", "noul" (types with >= min_type records), then the buckets
  // with >= min_bucket records, by name.
  std::vector<std::pair<std::string, TemperatureFit>> fits;
  // Records per type name and per bucket name (all of them, fitted or not), by name.
  std::vector<std::pair<std::string, int64_t>> counts;
};

// Fits the temperatures of `recs` (check_records first; min_type / min_bucket >= 1, else
// kInvalidArgument).
Result<CalibrationFit> fit_calibration(std::span<const CalibrationRecord> recs,
                                       const CalibrationOptions& opts = {});

// How well `temps` (looked up and clamped as the runtime does: Temperatures::get) fit `recs`:
// mean NLL (soft cross-entropy, natural log), accuracy (the argmax option is the target's argmax;
// ties: the first) and the expected calibration error over `bins` equal-width confidence bins
// (confidence max p; bin 0 is [0, 1/bins], bin i (i/bins, (i+1)/bins]: upstream ece_score). With
// no records every mean is NaN. The softmax is in double.
struct CalibrationMetrics {
  int64_t n = 0;
  double nll = 0, accuracy = 0, ece = 0;
};
CalibrationMetrics calibration_metrics(std::span<const CalibrationRecord> recs,
                                       const Temperatures& temps, int bins = 10);

// The decision config laya-convert --decision-config reads: {"temperature": [c, s, n],
// "temperature_by_options": {bucket: T}}.
json::Value decision_config(const Temperatures& temps);

}  // namespace laya::decision
