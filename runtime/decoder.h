// The decoder runner: prefill a prompt in chunks and decode token by token through a KV cache,
// with one session of a KV-cached decoder graph (frontends/gguf_decoder.h
// build_cached_decoder_graph, tools/tiny_models.h make_tiny_decoder).
//
//   SessionOptions so = decoder_session_options(base, graph, /*chunk=*/128, cells);
//   auto s = Session::prepare(graph, so);   // decode and prefill: two buckets (a plan each)
//   ... bind_memory(...) ...                // one set of packed weights for both
//   auto kv = KvCache::create(*kv_cache_layout(graph), cells, 1, kv_region);
//   auto r = DecoderRunner::create(*s, **kv, logits_region, 128);   // binds the cache's states
//   r->generate({.prompt = ids, .max_tokens = 16}, &out, &stats);
//
// DecoderInstance::create (below) does all of that with host allocations and owns the parts.
//
// With a prefix cache (runtime/prefix_cache.h) over the same KV cache, set
// GenerateRequest::prefix_cache: a prompt's longest cached prefix is copied in and only the rest is
// prefilled (DecoderStats::prefix_hit_tokens).
//
// A step of n tokens (1 <= n <= chunk) of sequence `seq`: cells come from the cache (alloc), the
// session is reshaped to (batch 1, seq n, cells = the cache's capacity) and executed; the logits of
// the n tokens (LogitRows::kAll), or of the last one only (kLast), are in logits(). Prefill runs
// ceil(n / chunk) steps, each computing its last token's logits only; decode is a step of 1.
//
// Graph contract (checked by create): inputs with roles kTokenIds, kPositions, kSeqIds,
// kCacheCells (i32 [batch, seq]), kCellPositions, kCellSeqIds (i32 [1, cells]), optionally
// kLogitRows (i32 [batch, rows]), and nothing else; symbols "batch", "seq", "cells" (and "rows"
// with kLogitRows); one output logits f32 [batch, seq | rows, vocab] (vocab fixed). A graph
// without kLogitRows (a .laya decoder converted before format 1.5) computes every row's logits
// whatever a step asks; logits() then holds all n rows.
//
// Ownership: the runner borrows the session, the cache and the logits region (all must outlive
// it); it owns only its per-step token arrays (chunk entries each, allocated by create). Nothing
// after create allocates per token: step and prefill run with the session's plans and the
// caller's regions; generate allocates only the output ids and Stats entries it reserves up front.
// Thread safety: none; one thread at a time (the runner drives the session and the cache).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "hal/hal.h"
#include "ir/status.h"
#include "runtime/kv_cache.h"
#include "runtime/prefix_cache.h"
#include "runtime/session.h"

namespace laya::runtime {

using SteadyClock = std::chrono::steady_clock;

// Timings of a generation, in ms on the steady clock. load_ms is the caller's (model load, import,
// prepare, pack: DecoderRunner::create takes its start); the rest count from generate's start.
struct DecoderStats {
  double load_ms = 0;
  double prefill_end_ms = 0;     // the prompt is in the cache (its last logits computed)
  double first_token_ms = 0;     // the first new token is picked
  std::vector<double> token_ms;  // when each new token was picked (token_ms[0] = first_token_ms)
  int64_t prompt_tokens = 0;
  int64_t prefix_hit_tokens = 0;  // prompt tokens reused from the prefix cache (not prefilled)
  int64_t prefill_steps = 0;      // chunks
  int64_t decode_steps = 0;       // one-token steps
  // Where decoding spends its time, summed over the decode steps (ms): the steps (cache cells,
  // reshape and execute), the part of them inside Session::execute, and the picker's calls after
  // them (the first token's pick is not counted: it follows the prefill).
  double decode_step_ms = 0;
  double decode_execute_ms = 0;
  double decode_pick_ms = 0;
  // The part of the prefill (prefill_end_ms) inside Session::execute, summed over its chunks.
  double prefill_execute_ms = 0;
  // New tokens after the first per second of decoding: (n - 1) / (token_ms[n-1] - token_ms[0]);
  // 0 with fewer than 2 tokens.
  double decode_tokens_per_s() const;
};

// Picks the next token from the last position's logits (f32 [vocab]): the seam for a sampler
// (runtime/sampler, chat templates and constrained decoding plug in here). `ctx` is the caller's.
using PickToken = int32_t (*)(std::span<const float> logits, void* ctx);
// Greedy: the largest logit, the lowest id among equal ones (llama.cpp's greedy sampler).
int32_t greedy_token(std::span<const float> logits, void* ctx);

struct GenerateRequest {
  int32_t seq = 0;                  // the cache's sequence id; the prompt continues its tokens
  std::span<const int32_t> prompt;  // at least one token
  int64_t max_tokens = 16;          // >= 1
  std::span<const int32_t> stop;    // ids that end generation (included in the output)
  PickToken pick = greedy_token;
  void* pick_ctx = nullptr;
  // Optional: called after each picked token with the new tokens so far (the last one included);
  // true ends generation there, as a stop id does. `done_ctx` is the caller's.
  bool (*done)(std::span<const int32_t> out, void* ctx) = nullptr;
  void* done_ctx = nullptr;
  // Optional (borrowed), over the runner's KV cache: when `seq` is empty, the prompt's longest
  // cached prefix is copied in and only the rest is prefilled; once the first token is picked the
  // prompt's whole blocks are stored. Outputs are the same as without it.
  PrefixCache* prefix_cache = nullptr;
  // Optional (borrowed): receive per-node times of every decode step's execute, and of the
  // prefill chunks' executes (after a prefix-cache hit, the rest's); `laya-run generate
  // --profile` sums them per op. One sink may serve both.
  const hal::ProfileSink* decode_profile = nullptr;
  const hal::ProfileSink* prefill_profile = nullptr;
};

// Which rows of a step's tokens get logits: every token's (teacher forcing, scoring), or the last
// token's (prefill, decode: all a picker reads).
enum class LogitRows { kAll, kLast };

// `base` (backends, threads, kernels) with the bucket bounds of a runner: "seq" planned at 1
// (decode) and `chunk` (prefill), "rows" (when the graph has it) likewise, "cells" fixed at
// `cells` (the cache this session binds), and "batch" at 1. kInvalidArgument when the graph lacks a symbol or a value is outside its bounds.
Result<SessionOptions> decoder_session_options(const SessionOptions& base, const ir::Graph& g,
                                               int64_t chunk, int64_t cells);

class DecoderRunner {
 public:
  // Bytes of the logits region for `chunk` tokens: chunk x vocab f32 (64-byte multiple).
  static Result<uint64_t> logits_bytes(const ir::Graph& g, int64_t chunk);

  // Prepare phase, after session.bind_memory: checks the graph contract, binds the cache's states
  // to the session (KvCache::bind, undone when the runner is destroyed), takes `logits` (>=
  // logits_bytes(chunk), 64-byte aligned) and the prefill chunk (1 .. the session's "seq" max).
  // `load_start` is when the caller began loading the model: Stats::load_ms is measured from it to
  // the end of create. kInvalidArgument naming what does not fit.
  static Result<std::unique_ptr<DecoderRunner>> create(Session& session, KvCache& cache,
                                                       MemoryRegion logits, int64_t chunk,
                                                       SteadyClock::time_point load_start = {});

  int64_t vocab() const { return vocab_; }
  int64_t chunk() const { return chunk_; }
  double load_ms() const { return load_ms_; }

  // One step: appends `ids` (1 .. chunk tokens) to sequence `seq` of the cache and runs them,
  // computing the logits of the rows `which` names. Errors: kInvalidArgument for a bad count;
  // kResourceExhausted ("KV cache full") from the cache; execute errors (kIndexOutOfRange for an
  // id outside the vocabulary). On failure the step's cells are freed again (the sequence is as
  // before). Allocates nothing. `profile` (nullable, borrowed) receives the execute's per-node
  // times; `execute_ms` (nullable) gets the time spent in Session::execute.
  Status step(int32_t seq, std::span<const int32_t> ids, LogitRows which = LogitRows::kAll,
              const hal::ProfileSink* profile = nullptr, double* execute_ms = nullptr);
  // f32 [r, vocab]: the logits of the last successful step: r = n rows (row i after token i) for
  // kAll, or for a graph without kLogitRows; r = 1 (after its last token) for kLast.
  std::span<const float> logits() const { return {logits_, static_cast<size_t>(rows_ * vocab_)}; }
  // f32 [vocab]: the last token's row (empty before the first step).
  std::span<const float> last_logits() const {
    if (rows_ == 0) return {};
    return {logits_ + (rows_ - 1) * vocab_, static_cast<size_t>(vocab_)};
  }

  // Steps of at most chunk tokens over `ids` (non-empty), each with LogitRows::kLast;
  // last_logits() then holds the last token's. On failure the sequence keeps the chunks that ran.
  // `profile` and `execute_ms` as step's, over all the chunks (execute_ms: their sum).
  Status prefill(int32_t seq, std::span<const int32_t> ids,
                 const hal::ProfileSink* profile = nullptr, double* execute_ms = nullptr);

  // Prefill the prompt (its suffix after a prefix-cache hit), then pick and decode until
  // max_tokens new tokens or a stop id: `out` receives the new ids (cleared first), `stats`
  // (nullable) the timings. The last new token is not run (nothing reads its logits).
  // kInvalidArgument for an empty prompt or max_tokens < 1, a picked id outside [0, vocab), a
  // prefix cache over another KV cache; step and prefix cache errors.
  Status generate(const GenerateRequest& req, std::vector<int32_t>* out, DecoderStats* stats);

  ~DecoderRunner();
  DecoderRunner(const DecoderRunner&) = delete;
  DecoderRunner& operator=(const DecoderRunner&) = delete;

 private:
  DecoderRunner() = default;

  Session* session_ = nullptr;
  KvCache* cache_ = nullptr;
  float* logits_ = nullptr;
  int64_t vocab_ = 0, chunk_ = 0, rows_ = 0;
  double load_ms_ = 0;
  int sym_batch_ = -1, sym_seq_ = -1, sym_cells_ = -1, sym_rows_ = -1;
  bool has_logit_rows_ = false;      // the graph takes kLogitRows
  std::vector<int32_t> logit_rows_;  // its values: 0 .. n - 1, or n - 1 alone
  std::vector<int64_t> symbols_;     // per graph symbol, reused by every step
  std::vector<const void*> inputs_;  // per graph input
  std::vector<int32_t> ids_, positions_, seq_ids_, cells_;  // [chunk] each
};

// A decoder ready to generate, owning all that its runner borrows: the session of `graph` planned
// by decoder_session_options (prefill chunks of `chunk`, `cells` cells), its buffers
// (session_buffers_alloc), a KV cache of `cells` cells for `seqs` sequences and the logits
// region, all allocated here (host memory; an embedder with its own regions builds the same parts
// as the example at the top). `graph` must outlive it; the runner goes first when it is destroyed
// or assigned to.
struct DecoderInstance {
  std::unique_ptr<Session> session;
  SessionBuffers buffers;
  RegionBuffer kv_memory, logits_memory;
  std::unique_ptr<KvCache> cache;
  std::unique_ptr<DecoderRunner> runner;

  // Errors of decoder_session_options, Session::prepare, the allocations, KvCache::create and
  // DecoderRunner::create (`load_start` as its).
  static Result<DecoderInstance> create(const ir::Graph& graph, const SessionOptions& base,
                                        int64_t chunk, int64_t cells, int32_t seqs,
                                        SteadyClock::time_point load_start = {});

  DecoderInstance() = default;
  DecoderInstance(DecoderInstance&&) noexcept = default;
  DecoderInstance& operator=(DecoderInstance&& o) noexcept;
};

}  // namespace laya::runtime
