#include "runtime/decoder.h"

#include <algorithm>

namespace laya::runtime {

namespace {

double ms_between(SteadyClock::time_point a, SteadyClock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// The logits output's vocabulary (f32 [batch, seq, vocab], vocab fixed), or an error.
Result<int64_t> output_vocab(const ir::Graph& g) {
  if (g.outputs.size() != 1)
    return Status(StatusCode::kInvalidArgument, "decoder runner: the graph has " +
                                                    std::to_string(g.outputs.size()) +
                                                    " outputs; it wants one (logits)");
  const ir::Value& v = g.values[g.outputs[0]];
  if (v.dtype != ir::DType::kF32 || v.shape.rank != 3 || !v.shape.dims[2].is_fixed() ||
      v.shape.dims[2].c < 1)
    return Status(StatusCode::kInvalidArgument,
                  "decoder runner: output '" + v.name + "' is not logits f32 [batch, seq, vocab]");
  return v.shape.dims[2].c;
}

}  // namespace

double DecoderStats::decode_tokens_per_s() const {
  if (token_ms.size() < 2) return 0;
  const double span = token_ms.back() - token_ms.front();
  return span > 0 ? static_cast<double>(token_ms.size() - 1) * 1000.0 / span : 0;
}

int32_t greedy_token(std::span<const float> logits, void* /*ctx*/) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

Result<SessionOptions> decoder_session_options(const SessionOptions& base, const ir::Graph& g,
                                               int64_t chunk, int64_t cells) {
  SessionOptions o = base;
  const std::pair<const char*, int64_t> want[] = {{"batch", 1}, {"seq", chunk}, {"cells", cells}};
  for (const auto& [name, value] : want) {
    const int s = g.find_symbol(name);
    if (s < 0)
      return Status(StatusCode::kInvalidArgument,
                    std::string("decoder runner: the graph has no symbol '") + name + "'");
    const ir::Symbol& y = g.symbols[static_cast<size_t>(s)];
    if (value < y.min || value > y.max)
      return status_error(StatusCode::kInvalidArgument,
                          "decoder runner: %s %lld is outside the graph's [%lld, %lld]", name,
                          static_cast<long long>(value), static_cast<long long>(y.min),
                          static_cast<long long>(y.max));
  }
  o.symbol_max = {{"batch", 1}, {"seq", chunk}, {"cells", cells}};
  o.bucket_bounds = {{"batch", {1}}, {"cells", {cells}}};
  const std::vector<int64_t> steps =
      chunk > 1 ? std::vector<int64_t>{1, chunk} : std::vector<int64_t>{1};
  o.bucket_bounds.push_back({"seq", steps});
  const int rows = g.find_symbol("rows");
  if (rows >= 0) {
    if (chunk > g.symbols[static_cast<size_t>(rows)].max)
      return status_error(StatusCode::kInvalidArgument,
                          "decoder runner: rows %lld is outside the graph's [1, %lld]",
                          static_cast<long long>(chunk),
                          static_cast<long long>(g.symbols[static_cast<size_t>(rows)].max));
    o.symbol_max.push_back({"rows", chunk});
    o.bucket_bounds.push_back({"rows", steps});
  }
  return o;
}

Result<uint64_t> DecoderRunner::logits_bytes(const ir::Graph& g, int64_t chunk) {
  LAYA_ASSIGN_OR_RETURN(int64_t vocab, output_vocab(g));
  if (chunk < 1) return Status(StatusCode::kInvalidArgument, "decoder runner: chunk < 1");
  const uint64_t bytes = static_cast<uint64_t>(chunk) * static_cast<uint64_t>(vocab) * 4;
  return (bytes + kRegionAlign - 1) / kRegionAlign * kRegionAlign;
}

Result<std::unique_ptr<DecoderRunner>> DecoderRunner::create(Session& session, KvCache& cache,
                                                             MemoryRegion logits, int64_t chunk,
                                                             SteadyClock::time_point load_start) {
  const ir::Graph& g = session.graph();
  std::unique_ptr<DecoderRunner> r(new DecoderRunner());
  r->session_ = &session;
  r->cache_ = &cache;
  LAYA_ASSIGN_OR_RETURN(r->vocab_, output_vocab(g));
  r->sym_batch_ = g.find_symbol("batch");
  r->sym_seq_ = g.find_symbol("seq");
  r->sym_cells_ = g.find_symbol("cells");
  r->sym_rows_ = g.find_symbol("rows");
  if (r->sym_batch_ < 0 || r->sym_seq_ < 0 || r->sym_cells_ < 0)
    return Status(StatusCode::kInvalidArgument,
                  "decoder runner: the graph needs the symbols batch, seq and cells");
  const int64_t seq_max = session.symbols()[static_cast<size_t>(r->sym_seq_)].max;
  if (chunk < 1 || chunk > seq_max)
    return status_error(StatusCode::kInvalidArgument,
                        "decoder runner: chunk %lld is outside [1, %lld] (the session's seq)",
                        static_cast<long long>(chunk), static_cast<long long>(seq_max));
  const ir::Symbol& cells_sym = session.symbols()[static_cast<size_t>(r->sym_cells_)];
  if (cache.capacity() < cells_sym.min || cache.capacity() > cells_sym.max)
    return status_error(StatusCode::kInvalidArgument,
                        "decoder runner: the cache's %lld cells are outside the session's "
                        "cells [%lld, %lld]",
                        static_cast<long long>(cache.capacity()),
                        static_cast<long long>(cells_sym.min),
                        static_cast<long long>(cells_sym.max));
  LAYA_ASSIGN_OR_RETURN(uint64_t need, logits_bytes(g, chunk));
  if (logits.data == nullptr || logits.bytes < need ||
      reinterpret_cast<uintptr_t>(logits.data) % kRegionAlign != 0)
    return status_error(StatusCode::kInvalidArgument,
                        "decoder runner: the logits region (%llu bytes) must hold %llu bytes, "
                        "64-byte aligned",
                        static_cast<unsigned long long>(logits.bytes),
                        static_cast<unsigned long long>(need));
  r->logits_ = static_cast<float*>(logits.data);
  r->chunk_ = chunk;
  const size_t n = static_cast<size_t>(chunk);
  r->ids_.resize(n);
  r->positions_.resize(n);
  r->seq_ids_.resize(n);
  r->cells_.resize(n);
  r->logit_rows_.resize(n);
  for (ir::ValueId id : g.inputs) {
    const ir::Value& v = g.values[id];
    const void* p = nullptr;
    switch (v.role) {
      case ir::InputRole::kTokenIds:
        p = r->ids_.data();
        break;
      case ir::InputRole::kPositions:
        p = r->positions_.data();
        break;
      case ir::InputRole::kSeqIds:
        p = r->seq_ids_.data();
        break;
      case ir::InputRole::kCacheCells:
        p = r->cells_.data();
        break;
      case ir::InputRole::kCellPositions:
        p = cache.cell_positions();
        break;
      case ir::InputRole::kCellSeqIds:
        p = cache.cell_seq_ids();
        break;
      case ir::InputRole::kLogitRows:
        p = r->logit_rows_.data();
        r->has_logit_rows_ = true;
        break;
      default:
        break;
    }
    if (p == nullptr)
      return Status(StatusCode::kInvalidArgument,
                    "decoder runner: input '" + v.name + "' has role " +
                        ir::input_role_name(v.role) +
                        "; a cached decoder takes ids, positions, seq_ids, cells, "
                        "cell_positions, cell_seq_ids and logit_rows");
    r->inputs_.push_back(p);
  }
  if (r->has_logit_rows_ && r->sym_rows_ < 0)
    return Status(StatusCode::kInvalidArgument,
                  "decoder runner: the graph takes logit_rows but has no symbol rows");
  LAYA_RETURN_IF_ERROR(cache.bind(session));
  r->symbols_.assign(g.symbols.size(), 1);
  r->symbols_[static_cast<size_t>(r->sym_cells_)] = cache.capacity();
  if (load_start != SteadyClock::time_point{})
    r->load_ms_ = ms_between(load_start, SteadyClock::now());
  return r;
}

DecoderRunner::~DecoderRunner() {
  if (cache_ != nullptr && session_ != nullptr) cache_->unbind(*session_);
}

Status DecoderRunner::step(int32_t seq, std::span<const int32_t> ids, LogitRows which,
                           const hal::ProfileSink* profile, double* execute_ms) {
  const int64_t n = static_cast<int64_t>(ids.size());
  if (n < 1 || n > chunk_)
    return status_error(StatusCode::kInvalidArgument,
                        "decoder runner: a step takes 1 to %lld tokens, got %lld",
                        static_cast<long long>(chunk_), static_cast<long long>(n));
  const int64_t first = cache_->seq_length(seq);
  LAYA_RETURN_IF_ERROR(cache_->alloc(seq, n, cells_.data(), positions_.data()));
  std::copy(ids.begin(), ids.end(), ids_.begin());
  std::fill_n(seq_ids_.begin(), n, seq);
  symbols_[static_cast<size_t>(sym_seq_)] = n;
  int64_t rows = n;
  if (has_logit_rows_) {
    rows = which == LogitRows::kLast ? 1 : n;
    for (int64_t i = 0; i < rows; ++i)
      logit_rows_[static_cast<size_t>(i)] = static_cast<int32_t>(n - rows + i);
    symbols_[static_cast<size_t>(sym_rows_)] = rows;
  }
  Status st = session_->reshape(symbols_);
  if (st.is_ok()) {
    void* out[1] = {logits_};
    const SteadyClock::time_point t0 = SteadyClock::now();
    st = session_->execute(inputs_, out, profile);
    if (execute_ms != nullptr) *execute_ms = ms_between(t0, SteadyClock::now());
  }
  if (!st.is_ok()) {
    (void)cache_->remove(seq, first);  // the step's cells; seq is valid (alloc succeeded)
    return st;
  }
  rows_ = rows;
  return Status::ok();
}

Status DecoderRunner::prefill(int32_t seq, std::span<const int32_t> ids,
                              const hal::ProfileSink* profile, double* execute_ms) {
  if (ids.empty())
    return Status(StatusCode::kInvalidArgument, "decoder runner: prefill of no tokens");
  if (execute_ms != nullptr) *execute_ms = 0;
  for (size_t i = 0; i < ids.size(); i += static_cast<size_t>(chunk_)) {
    double ms = 0;
    LAYA_RETURN_IF_ERROR(step(seq,
                              ids.subspan(i, std::min(ids.size() - i, static_cast<size_t>(chunk_))),
                              LogitRows::kLast, profile, &ms));
    if (execute_ms != nullptr) *execute_ms += ms;
  }
  return Status::ok();
}

Status DecoderRunner::generate(const GenerateRequest& req, std::vector<int32_t>* out,
                               DecoderStats* stats) {
  if (req.prompt.empty())
    return Status(StatusCode::kInvalidArgument, "decoder runner: an empty prompt");
  if (req.max_tokens < 1)
    return Status(StatusCode::kInvalidArgument, "decoder runner: max_tokens < 1");
  if (req.pick == nullptr)
    return Status(StatusCode::kInvalidArgument, "decoder runner: no token picker");
  if (req.prefix_cache != nullptr && &req.prefix_cache->kv_cache() != cache_)
    return Status(StatusCode::kInvalidArgument,
                  "decoder runner: the prefix cache is over another KV cache");
  out->clear();
  out->reserve(static_cast<size_t>(req.max_tokens));
  DecoderStats local;
  DecoderStats& s = stats != nullptr ? *stats : local;
  s = DecoderStats{};
  s.load_ms = load_ms_;
  s.token_ms.reserve(static_cast<size_t>(req.max_tokens));
  s.prompt_tokens = static_cast<int64_t>(req.prompt.size());
  const SteadyClock::time_point t0 = SteadyClock::now();
  const bool use_prefix = req.prefix_cache != nullptr && cache_->seq_length(req.seq) == 0;
  if (use_prefix) {
    LAYA_ASSIGN_OR_RETURN(s.prefix_hit_tokens, req.prefix_cache->restore(req.prompt, req.seq));
  }
  const int64_t rest = s.prompt_tokens - s.prefix_hit_tokens;
  LAYA_RETURN_IF_ERROR(prefill(req.seq,
                               req.prompt.subspan(static_cast<size_t>(s.prefix_hit_tokens)),
                               req.prefill_profile, &s.prefill_execute_ms));
  s.prefill_steps = (rest + chunk_ - 1) / chunk_;
  s.prefill_end_ms = ms_between(t0, SteadyClock::now());
  for (;;) {
    const SteadyClock::time_point pick0 = SteadyClock::now();
    const int32_t next = req.pick(last_logits(), req.pick_ctx);
    const SteadyClock::time_point pick1 = SteadyClock::now();
    if (!out->empty()) s.decode_pick_ms += ms_between(pick0, pick1);
    if (next < 0 || next >= vocab_)
      return status_error(StatusCode::kInvalidArgument,
                          "decoder runner: the picker chose id %d outside [0, %lld)", next,
                          static_cast<long long>(vocab_));
    out->push_back(next);
    s.token_ms.push_back(ms_between(t0, pick1));
    if (out->size() == 1) {
      s.first_token_ms = s.token_ms.back();
      if (use_prefix) LAYA_RETURN_IF_ERROR(req.prefix_cache->store(req.prompt, req.seq));
    }
    // `done` sees every token, the last one included (a caller streaming the tokens needs it).
    const bool done = req.done != nullptr && req.done(*out, req.done_ctx);
    if (done || static_cast<int64_t>(out->size()) >= req.max_tokens ||
        std::find(req.stop.begin(), req.stop.end(), next) != req.stop.end())
      return Status::ok();
    const int32_t one[1] = {next};
    double execute_ms = 0;
    const SteadyClock::time_point step0 = SteadyClock::now();
    LAYA_RETURN_IF_ERROR(step(req.seq, one, LogitRows::kLast, req.decode_profile, &execute_ms));
    s.decode_step_ms += ms_between(step0, SteadyClock::now());
    s.decode_execute_ms += execute_ms;
    ++s.decode_steps;
  }
}

Result<DecoderInstance> DecoderInstance::create(const ir::Graph& graph, const SessionOptions& base,
                                                int64_t chunk, int64_t cells, int32_t seqs,
                                                SteadyClock::time_point load_start) {
  DecoderInstance d;
  LAYA_ASSIGN_OR_RETURN(SessionOptions so, decoder_session_options(base, graph, chunk, cells));
  LAYA_ASSIGN_OR_RETURN(d.session, Session::prepare(graph, so));
  LAYA_ASSIGN_OR_RETURN(d.buffers, session_buffers_alloc(*d.session));
  LAYA_RETURN_IF_ERROR(d.session->bind_memory(
      d.buffers.persistent.region(), d.buffers.activations.region(), d.buffers.scratch.region()));
  LAYA_ASSIGN_OR_RETURN(KvCacheLayout layout, kv_cache_layout(graph));
  LAYA_ASSIGN_OR_RETURN(d.kv_memory, RegionBuffer::alloc(KvCache::region_bytes(layout, cells),
                                                         kRegionAlign, /*huge=*/true));
  LAYA_ASSIGN_OR_RETURN(d.cache, KvCache::create(layout, cells, seqs, d.kv_memory.region()));
  LAYA_ASSIGN_OR_RETURN(uint64_t lb, DecoderRunner::logits_bytes(graph, chunk));
  LAYA_ASSIGN_OR_RETURN(d.logits_memory, RegionBuffer::alloc(lb, kRegionAlign, /*huge=*/false));
  LAYA_ASSIGN_OR_RETURN(
      d.runner,
      DecoderRunner::create(*d.session, *d.cache, d.logits_memory.region(), chunk, load_start));
  return d;
}

DecoderInstance& DecoderInstance::operator=(DecoderInstance&& o) noexcept {
  if (this == &o) return *this;
  runner.reset();  // it borrows the cache, the session and the logits region
  cache.reset();
  session = std::move(o.session);
  buffers = std::move(o.buffers);
  kv_memory = std::move(o.kv_memory);
  logits_memory = std::move(o.logits_memory);
  cache = std::move(o.cache);
  runner = std::move(o.runner);
  return *this;
}

}  // namespace laya::runtime
