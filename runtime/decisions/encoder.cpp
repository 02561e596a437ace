#include "runtime/decisions/encoder.h"

#include <algorithm>
#include <cstring>

namespace laya::decision {

namespace {

int find_io(const ir::Graph& g, const std::vector<ir::ValueId>& list, const char* name) {
  for (size_t i = 0; i < list.size(); ++i)
    if (g.values[list[i]].name == name) return static_cast<int>(i);
  return -1;
}

uint64_t round64(uint64_t n) {
  return (n + 63) / 64 * 64;
}

}  // namespace

Result<EncoderContract> encoder_graph_contract(const ir::Graph& g) {
  EncoderContract c;
  c.in_ids = find_io(g, g.inputs, "ids");
  c.in_pos = find_io(g, g.inputs, "pos");
  c.in_seq = find_io(g, g.inputs, "seq");
  c.in_qtype = find_io(g, g.inputs, "qtype");
  c.in_row_start = find_io(g, g.inputs, "row_start");
  c.in_markers = find_io(g, g.inputs, "markers");
  c.in_marker_valid = find_io(g, g.inputs, "marker_valid");
  for (auto [idx, name] : {std::pair{c.in_ids, "ids"},
                           {c.in_pos, "pos"},
                           {c.in_seq, "seq"},
                           {c.in_qtype, "qtype"},
                           {c.in_row_start, "row_start"},
                           {c.in_markers, "markers"},
                           {c.in_marker_valid, "marker_valid"}})
    if (idx < 0)
      return status_error(StatusCode::kInvalidArgument, "the decision graph has no input '%s'",
                          name);
  if (g.inputs.size() != 7)
    return status_error(StatusCode::kInvalidArgument,
                        "the decision graph has %zu inputs; the contract has 7 (ids, pos, seq, "
                        "qtype, row_start, markers, marker_valid)",
                        g.inputs.size());
  c.out_logits = find_io(g, g.outputs, "logits");
  c.out_act = find_io(g, g.outputs, "act_logits");
  c.out_emb = find_io(g, g.outputs, "embeddings");
  if (c.out_logits < 0 || c.out_act < 0)
    return Status(StatusCode::kInvalidArgument,
                  "the decision graph lacks the 'logits' or 'act_logits' output");
  for (size_t i = 0; i < g.outputs.size(); ++i)
    if (static_cast<int>(i) != c.out_logits && static_cast<int>(i) != c.out_act &&
        static_cast<int>(i) != c.out_emb)
      return status_error(StatusCode::kInvalidArgument,
                          "the decision graph has an unknown output '%s'",
                          g.values[g.outputs[i]].name.c_str());
  c.sym_tokens = g.find_symbol("tokens");
  c.sym_rows = g.find_symbol("rows");
  c.sym_options = g.find_symbol("options");
  if (c.sym_tokens < 0 || c.sym_rows < 0 || c.sym_options < 0)
    return Status(StatusCode::kInvalidArgument,
                  "the decision graph lacks one of the symbols tokens / rows / options");
  c.max_tokens = g.symbols[static_cast<size_t>(c.sym_tokens)].max;
  c.max_rows = g.symbols[static_cast<size_t>(c.sym_rows)].max;
  c.max_options = g.symbols[static_cast<size_t>(c.sym_options)].max;
  if (c.out_emb >= 0) {
    const ir::Value& e = g.values[g.outputs[static_cast<size_t>(c.out_emb)]];
    if (e.shape.rank != 2 || !e.shape.dims[1].is_fixed())
      return Status(StatusCode::kInvalidArgument, "the 'embeddings' output is not [rows, D]");
    c.dim = e.shape.dims[1].c;
  }
  return c;
}

uint64_t EncoderNetwork::io_bytes(const EncoderContract& c, int64_t tokens, int64_t rows,
                                  int64_t options) {
  const uint64_t T = static_cast<uint64_t>(tokens), R = static_cast<uint64_t>(rows),
                 K = static_cast<uint64_t>(options),
                 D = static_cast<uint64_t>(std::max<int64_t>(c.dim, 1));
  return 4 * round64(T * 4) + round64(R * 4) + 2 * round64(R * K * 4) + round64(R * K * 4) +
         round64(R * 2 * 4) + round64(R * D * 4);
}

EncoderNetwork::EncoderNetwork(runtime::Session& session, const EncoderContract& c, int64_t tokens,
                               int64_t rows, int64_t options, void* io, const TextEncoder& tok,
                               const SpecialTokens& sp)
    : session_(session),
      c_(c),
      tok_(tok),
      sp_(sp),
      max_tokens_(tokens),
      max_rows_(rows),
      max_options_(options) {
  const uint64_t T = static_cast<uint64_t>(tokens), R = static_cast<uint64_t>(rows),
                 K = static_cast<uint64_t>(options);
  auto* p = static_cast<uint8_t*>(io);
  auto take = [&](uint64_t bytes) {
    void* at = p;
    p += round64(bytes);
    return at;
  };
  ids_ = static_cast<int32_t*>(take(T * 4));
  pos_ = static_cast<int32_t*>(take(T * 4));
  seq_ = static_cast<int32_t*>(take(T * 4));
  qtype_ = static_cast<int32_t*>(take(T * 4));
  row_start_ = static_cast<int32_t*>(take(R * 4));
  markers_ = static_cast<int32_t*>(take(R * K * 4));
  marker_valid_ = static_cast<int32_t*>(take(R * K * 4));
  logits_ = static_cast<float*>(take(R * K * 4));
  act_ = static_cast<float*>(take(R * 2 * 4));
  emb_ = static_cast<float*>(take(R * static_cast<uint64_t>(std::max<int64_t>(c.dim, 1)) * 4));
  const std::vector<ir::Symbol>& sym = session.symbols();
  n_symbols_ = sym.size();
  for (size_t i = 0; i < n_symbols_; ++i) symbol_values_[i] = sym[i].min;
}

template <class Ids, class Markers, class QTypes>
Status EncoderNetwork::run_pass(size_t R, Ids&& ids, Markers&& markers, QTypes&& qtypes, int K) {
  size_t t = 0;
  for (size_t r = 0; r < R; ++r) {
    row_start_[r] = static_cast<int32_t>(t);
    const int32_t q = static_cast<int32_t>(qtypes(r));
    const auto row = ids(r);
    for (size_t i = 0; i < row.size(); ++i, ++t) {
      ids_[t] = row[i];
      pos_[t] = static_cast<int32_t>(i);
      seq_[t] = static_cast<int32_t>(r);
      qtype_[t] = q;
    }
    const auto m = markers(r);
    for (int s = 0; s < K; ++s) {
      const size_t at = r * static_cast<size_t>(K) + static_cast<size_t>(s);
      const bool valid = static_cast<size_t>(s) < m.size();
      markers_[at] = row_start_[r] + (valid ? m[static_cast<size_t>(s)] : 0);
      marker_valid_[at] = valid ? 1 : 0;
    }
  }
  symbol_values_[c_.sym_tokens] = static_cast<int64_t>(t);
  symbol_values_[c_.sym_rows] = static_cast<int64_t>(R);
  symbol_values_[c_.sym_options] = K;
  LAYA_RETURN_IF_ERROR(session_.reshape(std::span<const int64_t>(symbol_values_, n_symbols_)));
  const void* in[7] = {};
  in[c_.in_ids] = ids_;
  in[c_.in_pos] = pos_;
  in[c_.in_seq] = seq_;
  in[c_.in_qtype] = qtype_;
  in[c_.in_row_start] = row_start_;
  in[c_.in_markers] = markers_;
  in[c_.in_marker_valid] = marker_valid_;
  void* out[3] = {};
  out[c_.out_logits] = logits_;
  out[c_.out_act] = act_;
  if (c_.out_emb >= 0) out[c_.out_emb] = emb_;
  const size_t n_out = c_.out_emb >= 0 ? 3 : 2;
  return session_.execute(std::span<const void* const>(in, 7), std::span<void* const>(out, n_out));
}

Status EncoderNetwork::forward(std::span<const Row> rows, int K, float* logits, float* act_logits) {
  if (K > max_options_)
    return status_error(StatusCode::kLimitExceeded,
                        "a question has %d options; this context takes at most %lld (its "
                        "max_options)",
                        K, static_cast<long long>(max_options_));
  size_t done = 0;
  while (done < rows.size()) {
    int64_t tokens = 0;
    size_t n = 0;
    while (done + n < rows.size() && static_cast<int64_t>(n) < max_rows_) {
      const Row& r = rows[done + n];
      if (tokens + static_cast<int64_t>(r.ids.size()) > max_tokens_) break;
      tokens += static_cast<int64_t>(r.ids.size());
      ++n;
    }
    if (n == 0)
      return status_error(StatusCode::kLimitExceeded,
                          "a row of %zu tokens is longer than this context's pass of %lld tokens",
                          rows[done].ids.size(), static_cast<long long>(max_tokens_));
    const Row* first = rows.data() + done;
    LAYA_RETURN_IF_ERROR(run_pass(
        n, [&](size_t r) { return std::span<const int32_t>(first[r].ids); },
        [&](size_t r) { return std::span<const int32_t>(first[r].markers); },
        [&](size_t r) { return first[r].qtype; }, K));
    std::memcpy(logits + done * static_cast<size_t>(K), logits_,
                n * static_cast<size_t>(K) * sizeof(float));
    std::memcpy(act_logits + done * 2, act_, n * 2 * sizeof(float));
    done += n;
  }
  return Status::ok();
}

Status EncoderNetwork::embed(const std::vector<std::string>& texts,
                             std::vector<std::vector<float>>* out) {
  if (c_.out_emb < 0)
    return Status(StatusCode::kUnsupported,
                  "this model has no 'embeddings' output, which a shortlist needs");
  out->clear();
  constexpr size_t kMaxLength = 512;  // embed_fn_from_agent's max_length
  std::vector<std::vector<int32_t>> rows;
  for (const std::string& t : texts) {
    std::vector<int32_t> ids = {sp_.cls};
    LAYA_RETURN_IF_ERROR(tok_.encode(t, &ids));
    if (ids.size() > kMaxLength - 1) ids.resize(kMaxLength - 1);
    ids.push_back(sp_.sep);
    rows.push_back(std::move(ids));
  }
  const size_t dim = static_cast<size_t>(c_.dim);
  size_t done = 0;
  while (done < rows.size()) {
    int64_t tokens = 0;
    size_t n = 0;
    while (done + n < rows.size() && static_cast<int64_t>(n) < max_rows_ &&
           tokens + static_cast<int64_t>(rows[done + n].size()) <= max_tokens_)
      tokens += static_cast<int64_t>(rows[done + n++].size());
    if (n == 0)
      return Status(StatusCode::kLimitExceeded, "a text is longer than the context's pass");
    const std::vector<int32_t>* first = rows.data() + done;
    LAYA_RETURN_IF_ERROR(run_pass(
        n, [&](size_t r) { return std::span<const int32_t>(first[r]); },
        [](size_t) { return std::span<const int32_t>(); }, [](size_t) { return QType::kChoice; },
        2));
    for (size_t r = 0; r < n; ++r) out->emplace_back(emb_ + r * dim, emb_ + (r + 1) * dim);
    done += n;
  }
  return Status::ok();
}

}  // namespace laya::decision
