// Test doubles for the decision path, fed by data the upstream SDK recorded:
//  - TableEncoder: the ids HF tokenizers gave for each text the SDK tokenized (a text it never
//    tokenized is an error, so the builder cannot ask for anything upstream did not);
//  - ReplayNetwork: checks every row it is given against the rows the SDK fed its network, in order,
//    and answers with the logits recorded for them; embeddings by text.
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "runtime/text/json.h"
#include "runtime/decisions/decision.h"

namespace laya::test {

// run_decision's JSON (the SDK's result object).
inline Result<json::Value> decision_json(const decision::DecisionRequest& req,
                                         const decision::TextEncoder& tok,
                                         const decision::SpecialTokens& sp,
                                         const decision::DecisionSettings& settings,
                                         decision::Network& net) {
  decision::DecisionOutput out;
  LAYA_RETURN_IF_ERROR(decision::run_decision(req, tok, sp, settings, net, &out));
  return std::move(out.json);
}

class TableEncoder : public decision::TextEncoder {
 public:
  explicit TableEncoder(const json::Value* encodings) {
    if (!encodings) return;
    for (const auto& m : encodings->members()) {
      std::vector<int32_t> ids;
      for (const json::Value& v : m.value.items())
        ids.push_back(static_cast<int32_t>(*v.as_int64()));
      table_[m.key] = std::move(ids);
    }
  }
  Status encode(std::string_view text, std::vector<int32_t>* ids) const override {
    auto it = table_.find(std::string(text));
    if (it == table_.end())
      return Status(StatusCode::kNotFound,
                    "the SDK never tokenized this text: " + std::string(text.substr(0, 200)));
    ids->insert(ids->end(), it->second.begin(), it->second.end());
    return Status::ok();
  }

 private:
  std::map<std::string, std::vector<int32_t>> table_;
};

class ReplayNetwork : public decision::Network {
 public:
  explicit ReplayNetwork(const json::Value& c)
      : rows_(c.find("rows")),
        logits_(c.find("logits")),
        act_(c.find("act_logits")),
        emb_(c.find("embeddings")) {}

  Status forward(std::span<const decision::Row> rows, int K, float* logits, float* act) override {
    for (size_t r = 0; r < rows.size(); ++r, ++next_) {
      if (!rows_ || next_ >= rows_->items().size())
        return Status(StatusCode::kOutOfRange, "more rows than the SDK fed its network");
      const json::Value& want = rows_->items()[next_];
      std::vector<int32_t> ids, markers;
      for (const auto& v : want.find("input_ids")->items())
        ids.push_back(static_cast<int32_t>(*v.as_int64()));
      for (const auto& v : want.find("markers")->items())
        markers.push_back(static_cast<int32_t>(*v.as_int64()));
      CHECK_MESSAGE(rows[r].ids == ids, "row " << next_ << " input_ids differ");
      CHECK_MESSAGE(rows[r].markers == markers, "row " << next_ << " markers differ");
      rows_exact_ += rows[r].ids == ids && rows[r].markers == markers;
      const auto& lg = logits_->items()[next_].items();
      for (size_t i = 0; i < lg.size() && static_cast<int>(i) < K; ++i)
        logits[r * static_cast<size_t>(K) + i] = static_cast<float>(lg[i].as_double());
      const auto& a = act_->items()[next_].items();
      act[2 * r] = static_cast<float>(a[0].as_double());
      act[2 * r + 1] = static_cast<float>(a[1].as_double());
    }
    return Status::ok();
  }
  Status embed(const std::vector<std::string>& texts,
               std::vector<std::vector<float>>* out) override {
    out->clear();
    for (const std::string& t : texts) {
      const json::Value* v = emb_ ? emb_->find(t) : nullptr;
      if (!v)
        return Status(StatusCode::kNotFound, "no recorded embedding for: " + t.substr(0, 200));
      std::vector<float> row;
      for (const auto& x : v->items()) row.push_back(static_cast<float>(x.as_double()));
      out->push_back(std::move(row));
    }
    return Status::ok();
  }

  size_t rows_seen() const { return next_; }
  size_t rows_recorded() const { return rows_ ? rows_->items().size() : 0; }
  size_t rows_exact() const { return rows_exact_; }

 private:
  const json::Value* rows_;
  const json::Value* logits_;
  const json::Value* act_;
  const json::Value* emb_;
  size_t next_ = 0;
  size_t rows_exact_ = 0;
};

inline decision::DecisionSettings settings_from(const json::Value& s) {
  decision::DecisionSettings out;
  out.max_len = static_cast<int>(*s.find("max_len")->as_int64());
  out.head_max_len = static_cast<int>(*s.find("head_max_len")->as_int64());
  const auto& t = s.find("temperature")->items();
  for (int i = 0; i < 3; ++i)
    out.temperatures.temperature[i] = t[static_cast<size_t>(i)].as_double();
  for (const auto& m : s.find("temperature_by_options")->members())
    out.temperatures.by_options.emplace_back(m.key, m.value.as_double());
  return out;
}

inline decision::SpecialTokens modernbert_specials() {
  decision::SpecialTokens sp;
  sp.cls = 50281;
  sp.sep = 50282;
  sp.pad = 50283;
  sp.mask = 50284;
  sp.mask_text = "[MASK]";
  return sp;
}

}  // namespace laya::test
