// Runs Laya decision graphs (frontends/import.h contract) on token rows, e.g. rows recorded from
// the upstream SDK: packs the rows, binds the inputs, returns the outputs. Shared by the frontends
// tests, laya-parity and laya-bench-model; the decision path proper (tokenizing requests, answers)
// lives in runtime/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/text/json.h"
#include "runtime/session.h"

namespace laya::tools {

struct LayaRow {
  int32_t qtype = 0;
  std::vector<int32_t> ids;
  std::vector<int32_t> markers;  // positions within the row
};

struct LayaOut {
  int64_t rows = 0, k = 0, n_act = 0, d = 0;
  std::vector<float> logits;      // [rows, k]
  std::vector<float> act_logits;  // [rows, n_act]
  std::vector<float> embeddings;  // [rows, d]
};

// The inputs of one packed request.
struct LayaInputs {
  int64_t tokens = 0, rows = 0, k = 0;
  std::vector<int32_t> ids, pos, seq, qtype, row_start, markers, valid;
};

inline LayaInputs pack_rows(const std::vector<LayaRow>& rows) {
  LayaInputs in;
  in.rows = static_cast<int64_t>(rows.size());
  for (const LayaRow& r : rows)
    in.k = std::max<int64_t>(in.k, static_cast<int64_t>(r.markers.size()));
  in.k = std::max<int64_t>(in.k, 1);
  for (size_t r = 0; r < rows.size(); ++r) {
    const int32_t start = static_cast<int32_t>(in.ids.size());
    in.row_start.push_back(start);
    for (size_t i = 0; i < rows[r].ids.size(); ++i) {
      in.ids.push_back(rows[r].ids[i]);
      in.pos.push_back(static_cast<int32_t>(i));
      in.seq.push_back(static_cast<int32_t>(r));
      in.qtype.push_back(rows[r].qtype);
    }
    for (int64_t j = 0; j < in.k; ++j) {
      const bool real = j < static_cast<int64_t>(rows[r].markers.size());
      in.markers.push_back(real ? start + rows[r].markers[static_cast<size_t>(j)] : start);
      in.valid.push_back(real ? 1 : 0);
    }
  }
  in.tokens = static_cast<int64_t>(in.ids.size());
  return in;
}

// Executes one request on a prepared, bound Laya session.
inline Status run_laya(runtime::Session& s, const std::vector<LayaRow>& rows, LayaOut* out) {
  const LayaInputs in = pack_rows(rows);
  const ir::Graph& g = s.graph();
  std::vector<int64_t> sym;
  for (const ir::Symbol& y : g.symbols)
    sym.push_back(y.name == "tokens" ? in.tokens : y.name == "rows" ? in.rows : in.k);
  LAYA_RETURN_IF_ERROR(s.reshape(sym));
  std::vector<const void*> inputs;
  for (ir::ValueId v : g.inputs) {
    const std::string& n = g.values[v].name;
    inputs.push_back(n == "ids"         ? in.ids.data()
                     : n == "pos"       ? in.pos.data()
                     : n == "seq"       ? in.seq.data()
                     : n == "qtype"     ? in.qtype.data()
                     : n == "row_start" ? in.row_start.data()
                     : n == "markers"   ? in.markers.data()
                                        : in.valid.data());
  }
  out->rows = in.rows;
  out->k = in.k;
  std::vector<void*> outputs;
  for (ir::ValueId v : g.outputs) {
    const std::string& n = g.values[v].name;
    const ir::Extents& e = s.extents(v);
    std::vector<float>* dst = n == "logits"       ? &out->logits
                              : n == "act_logits" ? &out->act_logits
                                                  : &out->embeddings;
    dst->assign(static_cast<size_t>(e.count()), 0.0f);
    if (n == "act_logits") out->n_act = e.back();
    if (n == "embeddings") out->d = e.back();
    outputs.push_back(dst->data());
  }
  return s.execute(inputs, outputs);
}

// softmax(x[0..k)) in double.
inline std::vector<double> softmax_d(const float* x, int64_t k, double temperature = 1.0) {
  double m = x[0];
  for (int64_t i = 1; i < k; ++i) m = std::max<double>(m, x[i]);
  std::vector<double> p(static_cast<size_t>(k));
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) sum += p[i] = std::exp((x[i] - m) / temperature);
  for (double& v : p) v /= sum;
  return p;
}

// Rows of a recorded forward: `rows` entries of a laya-cases/1 case ({"qtype", "input_ids",
// "markers"} each), starting at `first`.
inline std::vector<LayaRow> rows_from_json(const json::Value& list, size_t first, size_t n) {
  std::vector<LayaRow> out;
  for (size_t i = first; i < first + n; ++i) {
    const json::Value& r = list.items()[i];
    LayaRow row;
    row.qtype = static_cast<int32_t>(*r.find("qtype")->as_int64());
    for (const json::Value& v : r.find("input_ids")->items())
      row.ids.push_back(static_cast<int32_t>(*v.as_int64()));
    for (const json::Value& v : r.find("markers")->items())
      row.markers.push_back(static_cast<int32_t>(*v.as_int64()));
    out.push_back(std::move(row));
  }
  return out;
}

// A row of a recorded forward (laya-cases/1) replayed through a session: its request row, our
// outputs for its whole forward and its index there, and the recorded forward, whose arrays
// ("logits", "logits_fp64", "act_logits") hold this row at `index`.
struct ReplayedRow {
  const LayaRow& row;
  const LayaOut& out;
  size_t index;
  const json::Value& forward;

  int64_t k() const { return static_cast<int64_t>(row.markers.size()); }  // the row's options
  const float* logits() const { return out.logits.data() + static_cast<int64_t>(index) * out.k; }
  const float* act_logits() const {
    return out.act_logits.data() + static_cast<int64_t>(index) * out.n_act;
  }
  // The first `n` entries (all: n < 0) of this row in the recorded array `key`, as floats.
  std::vector<float> recorded(const char* key, int64_t n = -1) const {
    const json::Value& r = forward.find(key)->items()[index];
    const size_t m = n < 0 ? r.items().size() : static_cast<size_t>(n);
    std::vector<float> v;
    for (size_t j = 0; j < m; ++j) v.push_back(static_cast<float>(r.items()[j].as_double()));
    return v;
  }
};

// Replays every forward of case `c` ({"rows", "forwards"}: each forward's rows packed, one execute
// each) and calls fn(const ReplayedRow&) per row, in order. The first execute's error, or
// kInvalidArgument when the forwards ask for more rows than the case has.
template <class Fn>
Status replay_forwards(runtime::Session& s, const json::Value& c, Fn&& fn) {
  const json::Value* rows = c.find("rows");
  const json::Value* fwds = c.find("forwards");
  if (rows == nullptr || fwds == nullptr) return Status::ok();
  size_t next = 0;
  for (const json::Value& f : fwds->items()) {
    const size_t n = static_cast<size_t>(*f.find("rows")->as_int64());
    if (next + n > rows->items().size())
      return Status(StatusCode::kInvalidArgument, "a forward asks for more rows than its case has");
    const std::vector<LayaRow> batch = rows_from_json(*rows, next, n);
    next += n;
    LayaOut out;
    LAYA_RETURN_IF_ERROR(run_laya(s, batch, &out));
    for (size_t r = 0; r < n; ++r) fn(ReplayedRow{batch[r], out, r, f});
  }
  return Status::ok();
}

// Replays every recorded embedding of case `c` ("embeddings": {"input_ids", "embedding"}, one text
// per row; entries without "embedding" are skipped) and calls fn(cosine of ours with it).
template <class Fn>
Status replay_embeddings(runtime::Session& s, const json::Value& c, Fn&& fn) {
  const json::Value* embs = c.find("embeddings");
  if (embs == nullptr) return Status::ok();
  for (const json::Value& e : embs->items()) {
    const json::Value* want = e.find("embedding");
    if (want == nullptr) continue;
    LayaRow row;
    for (const json::Value& v : e.find("input_ids")->items())
      row.ids.push_back(static_cast<int32_t>(*v.as_int64()));
    row.markers = {0};
    LayaOut out;
    LAYA_RETURN_IF_ERROR(run_laya(s, {row}, &out));
    if (static_cast<int64_t>(want->items().size()) != out.d)
      return Status(StatusCode::kInvalidArgument, "a recorded embedding's size is not the model's");
    double dot = 0, na = 0, nb = 0;
    for (int64_t j = 0; j < out.d; ++j) {
      const double a = out.embeddings[static_cast<size_t>(j)];
      const double b = want->items()[static_cast<size_t>(j)].as_double();
      dot += a * b;
      na += a * a;
      nb += b * b;
    }
    fn(dot / std::sqrt(na * nb));
  }
  return Status::ok();
}

}  // namespace laya::tools
