// The network of an encoder decision model: its graph's contract, and the Network
// (runtime/decisions/decision.h) that feeds packed question rows to a session whose memory, and
// whose input / output buffers, are the caller's (a context's regions).
//
// Contract (frontends/import.h): inputs ids / pos / seq / qtype [1, T], row_start [R], markers /
// marker_valid [R, K]; outputs logits [R, K], act_logits [R, 2] and, for shortlists, embeddings
// [R, D]; symbols `tokens`, `rows`, `options`. The rows of a request are concatenated into one
// sequence (no padding is computed); rows beyond what one pass holds (T tokens, R rows) run in
// as few passes as fit them (rows never interact, so the answers do not depend on how rows are
// grouped).
//
// Errors: kInvalidArgument naming what the graph lacks (an input, an output, a symbol) or a row
// longer than the pass; kLimit-class kInvalidArgument for a question with more options than K.
// One thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/decisions/decision.h"
#include "runtime/session.h"

namespace laya::decision {

// Where the contract's inputs, outputs and symbols are in a graph.
struct EncoderContract {
  int in_ids = -1, in_pos = -1, in_seq = -1, in_qtype = -1, in_row_start = -1, in_markers = -1,
      in_marker_valid = -1;                         // positions in Graph::inputs
  int out_logits = -1, out_act = -1, out_emb = -1;  // positions in Graph::outputs (-1: none)
  int sym_tokens = -1, sym_rows = -1, sym_options = -1;
  int64_t max_tokens = 0, max_rows = 0, max_options = 0;  // the symbols' bounds
  int64_t dim = 0;  // embeddings width (0: no embeddings output)
};
Result<EncoderContract> encoder_graph_contract(const ir::Graph& g);

class EncoderNetwork final : public Network {
 public:
  // Bytes of the packed inputs and outputs for passes of `tokens` tokens, `rows` rows and
  // `options` options (64-byte multiple).
  static uint64_t io_bytes(const EncoderContract& c, int64_t tokens, int64_t rows, int64_t options);
  // `session` prepared for at most those (its symbols' bounds), bound to its memory; `io` at
  // least io_bytes, 64-byte aligned; the tokenizer and its special tokens (for embed). All
  // borrowed.
  EncoderNetwork(runtime::Session& session, const EncoderContract& c, int64_t tokens, int64_t rows,
                 int64_t options, void* io, const TextEncoder& tok, const SpecialTokens& sp);

  Status forward(std::span<const Row> rows, int K, float* logits, float* act_logits) override;
  Status embed(const std::vector<std::string>& texts,
               std::vector<std::vector<float>>* out) override;

 private:
  // Runs `n` rows as one pass (they fit the bounds): ids(r) / markers(r) / qtype(r) give row r.
  template <class Ids, class Markers, class QTypes>
  Status run_pass(size_t n, Ids&& ids, Markers&& markers, QTypes&& qtypes, int K);

  runtime::Session& session_;
  EncoderContract c_;
  const TextEncoder& tok_;
  const SpecialTokens& sp_;
  int64_t max_tokens_, max_rows_, max_options_;
  int32_t *ids_, *pos_, *seq_, *qtype_, *row_start_, *markers_, *marker_valid_;
  float *logits_, *act_, *emb_;
  int64_t symbol_values_[ir::kMaxSymbols] = {};
  size_t n_symbols_ = 0;
};

}  // namespace laya::decision
