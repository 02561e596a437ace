#include "runtime/decisions/context.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "runtime/decisions/encoder.h"
#include "runtime/decisions/tournament.h"
#include "runtime/decisions/request.h"
#include "runtime/text/json.h"

namespace laya::decision {

namespace {

using json::Value;

constexpr uint64_t kDefaultRequestBytes = kMaxBodyBytes;
constexpr int64_t kDefaultBatch = 16;
constexpr int64_t kDefaultPassTokens = 4096;
constexpr int64_t kDefaultCells = 2048;
constexpr int64_t kDefaultChunk = 128;
constexpr int64_t kDefaultSlots = 4;
constexpr int64_t kDefaultPrefixBlock = 16;
constexpr uint64_t kAlign = runtime::kRegionAlign;

uint64_t round_up(uint64_t n, uint64_t a) {
  return (n + a - 1) / a * a;
}

Status limit_error(const char* what, int64_t got, const char* name) {
  return status_error(StatusCode::kInvalidArgument, "limits: %s %lld is out of range (%s)", what,
                      static_cast<long long>(got), name);
}

// The limits with every default filled in, checked against the model.
Result<ContextLimits> resolve(const Model& m, ContextLimits l) {
  if (l.max_tokens < 0 || l.max_rows < 0 || l.max_options < 0 || l.max_batch < 0 ||
      l.kv_cells < 0 || l.prefix_slots < 0 || l.prefix_block < 0 || l.chunk < 0 || l.n_threads < 0)
    return Status(StatusCode::kInvalidArgument, "limits: a negative value");
  if (l.max_request_bytes == 0) l.max_request_bytes = kDefaultRequestBytes;
  if (l.max_batch == 0) l.max_batch = kDefaultBatch;
  if (m.kind() == ModelKind::kEncoder) {
    LAYA_ASSIGN_OR_RETURN(EncoderContract c, encoder_graph_contract(m.graph()));
    if (l.max_tokens == 0) l.max_tokens = std::min(c.max_tokens, kDefaultPassTokens);
    if (l.max_rows == 0) l.max_rows = c.max_rows;
    if (l.max_options == 0) l.max_options = c.max_options;
    if (l.max_tokens > c.max_tokens)
      return limit_error("max_tokens", l.max_tokens, "above the model's pass bound");
    if (l.max_rows > c.max_rows)
      return limit_error("max_rows", l.max_rows, "above the model's row bound");
    if (l.max_options > c.max_options || l.max_options < 2)
      return limit_error("max_options", l.max_options, "2 .. the model's option bound");
  } else {
    const ir::Graph& g = m.graph();
    const ir::Symbol& cells = g.symbols[static_cast<size_t>(g.find_symbol("cells"))];
    const ir::Symbol& seq = g.symbols[static_cast<size_t>(g.find_symbol("seq"))];
    if (l.prefix_slots == 0) l.prefix_slots = kDefaultSlots;
    if (l.prefix_block == 0) l.prefix_block = kDefaultPrefixBlock;
    if (l.prefix_block > 4096) return limit_error("prefix_block", l.prefix_block, "1 .. 4096");
    // By default two thirds of the cells work and one third keeps prefixes, 3072 in all at most.
    if (l.kv_cells == 0)
      l.kv_cells = l.prefix_cache_bytes > 0 ? std::min(cells.max, kDefaultCells)
                                            : std::min(cells.max, kDefaultCells * 3 / 2) * 2 / 3;
    // The prefill chunk: at most the model's bound (a .laya decoder fixes it at conversion) and
    // the working cells.
    if (l.chunk == 0) l.chunk = kDefaultChunk;
    l.chunk = std::min({l.chunk, seq.max, l.kv_cells});
  }
  return l;
}

}  // namespace

const char* region_name(Region r) {
  switch (r) {
    case Region::kWeights:
      return "weights";
    case Region::kActivations:
      return "activations";
    case Region::kScratch:
      return "scratch";
    case Region::kKv:
      return "kv";
    case Region::kWork:
      return "work";
  }
  return "?";
}

// Everything a call makes and the accessors read: made in the arena at the call's start,
// destroyed at the next call's start (or at destroy), under the arena's Scope.
struct Context::Call {
  std::string json;
  std::vector<std::string> batch_json;
  std::vector<Status> batch_status;
  DecisionOutput out;
  runtime::DecoderOutput dec_out;
  GenerateOutput gen;
  std::vector<std::vector<std::string>> labels;
  std::vector<std::string> decision_texts;
  std::vector<std::vector<std::vector<const char*>>> field_options;
  std::vector<int32_t> tokens;
  std::string text;
};

// A public call's scope: the arena and the tokenizer workspace bound to this thread, the last
// call's results dropped.
class Context::CallScope {
 public:
  explicit CallScope(Context* c) : mem_(&c->arena_), ws_(c->ws_.get()) { c->begin(); }

 private:
  mem::Scope mem_;
  tok::WorkspaceScope ws_;
};

namespace {

// Everything a context of these limits prepares, without the memory: the session options and the
// parts' sizes. `prefix_tokens`: the prefix cache's cells (decoders).
struct Plan {
  runtime::SessionOptions so;
  uint64_t io_bytes = 0;      // encoders: packed inputs and outputs; decoders: logits rows
  int64_t total_cells = 0;    // decoders: working sequence + prefix cache
  int64_t prefix_tokens = 0;  // decoders
  runtime::KvCacheLayout kv;
};

Result<Plan> plan(const Model& m, const ContextLimits& l) {
  Plan p;
  runtime::SessionOptions base = m.session_options(l.n_threads);
  if (m.kind() == ModelKind::kEncoder) {
    LAYA_ASSIGN_OR_RETURN(EncoderContract c, encoder_graph_contract(m.graph()));
    p.so = base;
    p.so.symbol_max = {{"tokens", l.max_tokens}, {"rows", l.max_rows}, {"options", l.max_options}};
    p.io_bytes = EncoderNetwork::io_bytes(c, l.max_tokens, l.max_rows, l.max_options);
    return p;
  }
  LAYA_ASSIGN_OR_RETURN(p.kv, runtime::kv_cache_layout(m.graph()));
  runtime::PrefixCacheOptions po;
  po.block_tokens = l.prefix_block;
  po.slots = static_cast<int32_t>(l.prefix_slots);
  po.budget_bytes =
      l.prefix_cache_bytes > 0
          ? l.prefix_cache_bytes
          : static_cast<uint64_t>(std::min(l.kv_cells / 2, p.kv.max_cells - l.kv_cells)) *
                p.kv.bytes_per_cell;
  p.prefix_tokens = runtime::PrefixCache::budget_tokens(p.kv, po);
  p.total_cells = l.kv_cells + p.prefix_tokens;
  if (p.total_cells > p.kv.max_cells)
    return status_error(StatusCode::kInvalidArgument,
                        "limits: kv_cells %lld plus the prefix cache's %lld cells exceed the "
                        "model's %lld",
                        static_cast<long long>(l.kv_cells), static_cast<long long>(p.prefix_tokens),
                        static_cast<long long>(p.kv.max_cells));
  LAYA_ASSIGN_OR_RETURN(p.so,
                        runtime::decoder_session_options(base, m.graph(), l.chunk, p.total_cells));
  LAYA_ASSIGN_OR_RETURN(p.io_bytes, runtime::DecoderRunner::logits_bytes(m.graph(), l.chunk));
  return p;
}

// The request arena: the parsed bodies, every tokenized text and row, the answers and the JSON
// written. Measured (tests/capi/test_capi_alloc.cpp prints the high-water mark): a typical request
// holds a few hundred KiB at its peak, 8 states of 600 words with 40 questions 3 MiB. The default
// is 32 bytes per request byte (at least 1 MiB); a body whose parsed form could need more than
// half of it is refused before it is parsed (kArenaShare, Context::admit).
uint64_t default_arena_bytes(const Model& m, const ContextLimits& l) {
  uint64_t extra = 0;
  if (m.kind() == ModelKind::kDecoder)  // prompts, their ids, a schema walk's per-token state
    extra = static_cast<uint64_t>(l.kv_cells) * 512;
  return round_up(std::max<uint64_t>(uint64_t{1} << 20, 32 * l.max_request_bytes) + extra, kAlign);
}

// The share of the arena a request's parsed JSON may take (the rest holds its rows and answers).
constexpr uint64_t kArenaShare = 2;

}  // namespace

Result<ContextLayout> Context::layout(const Model& m, const ContextLimits& limits) {
  ContextLayout lay;
  LAYA_ASSIGN_OR_RETURN(lay.limits, resolve(m, limits));
  LAYA_ASSIGN_OR_RETURN(Plan p, plan(m, lay.limits));
  LAYA_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Session> s,
                        runtime::Session::prepare(m.graph(), p.so));
  const runtime::MemoryRequirements& req = s->requirements();
  lay.bytes[static_cast<int>(Region::kWeights)] = req.persistent_bytes;
  lay.bytes[static_cast<int>(Region::kActivations)] = req.activation_bytes;
  lay.bytes[static_cast<int>(Region::kScratch)] = req.scratch_bytes;
  lay.shared_bytes = req.shared_bytes;
  if (m.kind() == ModelKind::kDecoder)
    lay.bytes[static_cast<int>(Region::kKv)] = runtime::KvCache::region_bytes(p.kv, p.total_cells);
  if (lay.limits.arena_bytes == 0) lay.limits.arena_bytes = default_arena_bytes(m, lay.limits);
  lay.bytes[static_cast<int>(Region::kWork)] =
      round_up(sizeof(Context), kAlign) + round_up(p.io_bytes, kAlign) + lay.limits.arena_bytes;
  for (int r = 0; r < kRegionCount; ++r) lay.align[r] = kAlign;
  lay.align[static_cast<int>(Region::kWeights)] = hal::persistent_alignment(req.persistent_bytes);
  return lay;
}

Result<Context*> Context::create(std::shared_ptr<const Model> m, const ContextLimits& limits,
                                 std::span<const runtime::MemoryRegion> regions) {
  if (m == nullptr) return Status(StatusCode::kInvalidArgument, "no model");
  if (regions.size() != static_cast<size_t>(kRegionCount))
    return status_error(StatusCode::kInvalidArgument, "%zu regions given, a context takes %d",
                        regions.size(), kRegionCount);
  LAYA_ASSIGN_OR_RETURN(ContextLayout lay, layout(*m, limits));
  for (int r = 0; r < kRegionCount; ++r) {
    const runtime::MemoryRegion& g = regions[static_cast<size_t>(r)];
    if (lay.bytes[r] == 0) continue;
    if (g.data == nullptr || g.bytes < lay.bytes[r])
      return status_error(StatusCode::kResourceExhausted,
                          "the %s region has %llu bytes; this context needs %llu",
                          region_name(static_cast<Region>(r)),
                          static_cast<unsigned long long>(g.data ? g.bytes : 0),
                          static_cast<unsigned long long>(lay.bytes[r]));
    if (reinterpret_cast<uintptr_t>(g.data) % lay.align[r] != 0)
      return status_error(StatusCode::kInvalidArgument,
                          "the %s region at %p is not %llu-byte aligned",
                          region_name(static_cast<Region>(r)), g.data,
                          static_cast<unsigned long long>(lay.align[r]));
  }
  void* at = regions[static_cast<int>(Region::kWork)].data;
  Context* c = new (at) Context();
  c->model_ = std::move(m);
  c->layout_ = lay;
  const Status st = c->init(lay.limits, regions);
  if (!st.is_ok()) {
    destroy(c);
    return st;
  }
  return c;
}

void Context::destroy(Context* c) {
  if (c != nullptr) c->~Context();
}

Context::~Context() {
  {
    // The last call's results and the tokenizer's buffers live in the arena.
    mem::Scope scope(&arena_);
    delete call_;
    call_ = nullptr;
    if (ws_) ws_->release();
  }
  // The borrowers first: the decider and the prefix cache use the KV cache and the runner, the
  // runner the session and the cache.
  decider_.reset();
  prefix_.reset();
  runner_.reset();
  kv_.reset();
  net_.reset();
  session_.reset();
}

Status Context::init(const ContextLimits& l, std::span<const runtime::MemoryRegion> regions) {
  const Model& m = *model_;
  // Timings count the model's open and the context's creation as its load (DecoderStats::load_ms).
  const auto load_start = runtime::SteadyClock::now() -
                          std::chrono::duration_cast<runtime::SteadyClock::duration>(
                              std::chrono::duration<double, std::milli>(m.info().open_ms));
  LAYA_ASSIGN_OR_RETURN(Plan p, plan(m, l));
  LAYA_ASSIGN_OR_RETURN(session_, runtime::Session::prepare(m.graph(), p.so));
  auto region = [&](Region r) { return regions[static_cast<size_t>(r)]; };
  LAYA_RETURN_IF_ERROR(session_->bind_memory(region(Region::kWeights), region(Region::kActivations),
                                             region(Region::kScratch)));
  auto* work = static_cast<uint8_t*>(region(Region::kWork).data);
  uint8_t* io = work + round_up(sizeof(Context), kAlign);
  uint8_t* arena = io + round_up(p.io_bytes, kAlign);
  arena_.init(arena, l.arena_bytes);
  ws_ = std::make_unique<tok::Workspace>();
  {
    mem::Scope scope(&arena_);
    ws_->release();  // the buffers are made in each call's arena
    call_ = new Call();
  }
  if (m.kind() == ModelKind::kEncoder) {
    LAYA_ASSIGN_OR_RETURN(EncoderContract c, encoder_graph_contract(m.graph()));
    net_ = std::make_unique<EncoderNetwork>(*session_, c, l.max_tokens, l.max_rows, l.max_options,
                                            io, m.encoder(), m.specials());
    return Status::ok();
  }
  LAYA_ASSIGN_OR_RETURN(
      kv_, runtime::KvCache::create(p.kv, p.total_cells, static_cast<int32_t>(1 + l.prefix_slots),
                                    region(Region::kKv)));
  LAYA_ASSIGN_OR_RETURN(runner_, runtime::DecoderRunner::create(*session_, *kv_, {io, p.io_bytes},
                                                                l.chunk, load_start));
  runtime::PrefixCacheOptions po;
  po.block_tokens = l.prefix_block;
  po.first_seq = 1;
  po.slots = static_cast<int32_t>(l.prefix_slots);
  po.budget_bytes = static_cast<uint64_t>(p.prefix_tokens) * p.kv.bytes_per_cell;
  if (p.prefix_tokens > 0) {
    LAYA_ASSIGN_OR_RETURN(prefix_, runtime::PrefixCache::create(*kv_, p.kv, po));
  }
  Status why;
  const runtime::DecoderText* text = m.decoder_text_or(&why);
  if (text == nullptr) return Status::ok();  // no decisions: generation and scoring only
  LAYA_ASSIGN_OR_RETURN(decider_,
                        runtime::DecoderDecider::create(*runner_, *kv_, prefix_.get(), *text,
                                                        m.temperatures(), m.automata()));
  return Status::ok();
}

void Context::begin() {
  ++calls_;
  error_[0] = '\0';
  delete call_;
  ws_->release();
  arena_.reset();
  call_ = new Call();
  ws_->reset();
}

std::string_view Context::json() const {
  return call_->json;
}
const DecisionOutput& Context::output() const {
  return call_->out;
}
const runtime::DecoderOutput& Context::decoder_output() const {
  return call_->dec_out;
}
const GenerateOutput& Context::generate_output() const {
  return call_->gen;
}
const std::vector<std::vector<std::string>>& Context::option_labels() const {
  return call_->labels;
}
const std::vector<int32_t>& Context::tokens() const {
  return call_->tokens;
}
const std::string& Context::text() const {
  return call_->text;
}

const DecisionOutput& Context::questions_output() const {
  return model_->kind() == ModelKind::kEncoder ? call_->out : call_->dec_out.questions;
}

Status Context::finish(const Status& st) {
  Call& c = *call_;
  if (!st.is_ok()) {
    c.~Call();
    new (&c) Call();
    std::snprintf(error_, sizeof error_, "%s", st.message());
    if (kv_ != nullptr) (void)kv_->remove(0);
    return st;
  }
  // The typed view's option labels of the questions answered.
  for (const Question& q : questions_output().questions) {
    std::vector<std::string> keys;
    const size_t k = q.type == QType::kChoice ? q.labels.size() : q.options.size();
    for (size_t i = 0; i < k; ++i) {
      if (q.type == QType::kChoice)
        keys.push_back(label_key(q.labels[i]));
      else if (q.type == QType::kScore)
        keys.push_back(std::to_string(i));
      else
        keys.push_back(i == 0 ? "false" : "true");
    }
    c.labels.push_back(std::move(keys));
  }
  for (const runtime::SchemaDecision& d : c.dec_out.decisions) {
    c.decision_texts.push_back(
        json::dump(d.decision, {.item_separator = ",", .key_separator = ":"}));
    std::vector<std::vector<const char*>> per_field;
    for (const runtime::FieldResult& f : d.fields) {
      std::vector<const char*> texts;
      for (const std::string& t : f.options) texts.push_back(t.c_str());
      per_field.push_back(std::move(texts));
    }
    c.field_options.push_back(std::move(per_field));
  }
  return st;
}

std::string_view Context::decision_text(size_t i) const {
  const auto& t = call_->decision_texts;
  return i < t.size() ? std::string_view(t[i]) : std::string_view();
}

const char* const* Context::field_options(size_t i, size_t f) const {
  const auto& o = call_->field_options;
  if (i >= o.size() || f >= o[i].size()) return nullptr;
  return o[i][f].data();
}

const Status& Context::status_of(size_t i) const {
  static const Status kNone(StatusCode::kInvalidArgument, "no such body in the last batch");
  const auto& b = call_->batch_status;
  return i < b.size() ? b[i] : kNone;
}

std::string_view Context::json_of(size_t i) const {
  const auto& b = call_->batch_json;
  return i < b.size() ? std::string_view(b[i]) : std::string_view();
}

Status Context::admit(std::string_view body, uint64_t* budget) const {
  if (body.size() > layout_.limits.max_request_bytes)
    return status_error(StatusCode::kRequestTooLarge,
                        "request body too large (%zu bytes; this context takes %llu)", body.size(),
                        static_cast<unsigned long long>(layout_.limits.max_request_bytes));
  const uint64_t cost = json::parse_cost(body);
  if (cost > *budget)
    return status_error(StatusCode::kRequestTooLarge,
                        "request body too large to parse in this context: its JSON needs up to "
                        "%llu KiB of the %llu KiB request arena left (raise arena_bytes)",
                        static_cast<unsigned long long>(cost >> 10),
                        static_cast<unsigned long long>(*budget >> 10));
  *budget -= cost;
  return Status::ok();
}

Status Context::decide(std::string_view body) {
  CallScope scope(this);
  uint64_t budget = arena_.capacity() / kArenaShare;
  if (Status st = admit(body, &budget); !st.is_ok()) return finish(st);
  return finish(model_->kind() == ModelKind::kEncoder ? decide_encoder(body)
                                                      : decide_decoder(body, sampler_));
}

Status Context::decide_tournament(std::string_view body, int group_size) {
  // Outside any call's Scope: what lives from one call to the next is on the heap.
  auto fail = [this](const Status& st) {
    CallScope scope(this);
    return finish(st);
  };
  if (body.size() > layout_.limits.max_request_bytes)
    return fail(status_error(StatusCode::kRequestTooLarge,
                             "the request body has %zu bytes; this context takes %llu", body.size(),
                             static_cast<unsigned long long>(layout_.limits.max_request_bytes)));
  Result<json::Value> req = json::parse(body, json::ParseOptions{}, "request body");
  if (!req.is_ok()) return fail(Status(StatusCode::kRequestInvalid, req.status().message()));
  if (!req->is_object())
    return fail(Status(StatusCode::kRequestInvalid, "the request body must be a JSON object"));
  const json::Value* qs = req->find("questions");
  Result<std::optional<Tournament>> plan =
      Tournament::plan(qs != nullptr ? *qs : json::Value(), group_size, TournamentMode::kSdk);
  if (!plan.is_ok()) return fail(plan.status());
  Tournament& t = **plan;
  while (!t.done()) {
    req->set("questions", t.next_questions());
    LAYA_RETURN_IF_ERROR(decide(json::dump(*req)));  // a failed call has set the error
    Result<json::Value> reply = json::parse(json());
    if (!reply.is_ok()) return fail(reply.status());
    if (Status st = t.answer(*reply); !st.is_ok()) return fail(st);
  }
  const std::string out = json::dump(t.result());
  mem::Scope scope(&arena_);  // the result replaces the final call's JSON, in its arena
  call_->json = out;
  return Status::ok();
}

Status Context::decide_encoder(std::string_view body) {
  LAYA_ASSIGN_OR_RETURN(DecisionRequest req, parse_request(body, request_mode_));
  LAYA_RETURN_IF_ERROR(run_decision(req, model_->encoder(), model_->specials(), model_->settings(),
                                    *net_, &call_->out));
  call_->json = json::dump(call_->out.json);
  return Status::ok();
}

Status Context::decide_decoder(std::string_view body, const SamplerConfig& sampler) {
  LAYA_ASSIGN_OR_RETURN(runtime::DecoderRequest req, runtime::parse_decoder_request(body));
  Status why;
  const runtime::DecoderText* text = model_->decoder_text_or(&why);
  if (text == nullptr || decider_ == nullptr) return why;
  LAYA_ASSIGN_OR_RETURN(runtime::DecoderCells cells, runtime::decoder_request_cells(*text, req));
  if (cells.working > layout_.limits.kv_cells)
    return status_error(StatusCode::kLimitExceeded,
                        "the request needs %lld KV cells (prompt and answer); this context has "
                        "%lld (its kv_cells)",
                        static_cast<long long>(cells.working),
                        static_cast<long long>(layout_.limits.kv_cells));
  runtime::DecoderDecideOptions opts;
  opts.sampler = sampler;
  opts.load_ms = runner_->load_ms();
  stream_.stopped = false;
  if (stream_.on_token != nullptr) {
    opts.on_token = [](void* user, int32_t id, std::string_view piece) {
      Stream& s = *static_cast<Stream*>(user);
      if (!s.stopped && s.on_token(s.user, id, piece.data(), piece.size()) != 0) s.stopped = true;
    };
    opts.on_token_user = &stream_;
  }
  if (stream_.on_token != nullptr || stream_.abort != nullptr) {
    opts.abort = [](void* user) {
      Stream& s = *static_cast<Stream*>(user);
      return s.stopped || (s.abort != nullptr && s.abort(s.user) != 0);
    };
    opts.abort_user = &stream_;
  }
  LAYA_RETURN_IF_ERROR(decider_->decide(req, opts, &call_->dec_out));
  call_->json = json::dump(call_->dec_out.json);
  return Status::ok();
}

Status Context::decide_batch(size_t n, std::string_view (*body)(const void* items, size_t i),
                             const void* items) {
  CallScope scope(this);
  if (n > static_cast<size_t>(layout_.limits.max_batch))
    return finish(
        status_error(StatusCode::kLimitExceeded,
                     "%zu bodies; this context takes at most %lld at once (its max_batch)", n,
                     static_cast<long long>(layout_.limits.max_batch)));
  Call& c = *call_;
  c.batch_json.assign(n, std::string());
  c.batch_status.assign(n, Status());
  std::vector<Status>& statuses = c.batch_status;
  if (model_->kind() == ModelKind::kDecoder) {
    uint64_t budget = arena_.capacity() / kArenaShare;
    for (size_t i = 0; i < n; ++i) {
      statuses[i] = admit(body(items, i), &budget);
      if (statuses[i].is_ok()) statuses[i] = decide_decoder(body(items, i), sampler_);
      if (statuses[i].is_ok()) c.batch_json[i] = std::move(c.json);
      c.json.clear();
      c.dec_out = runtime::DecoderOutput();
      if (kv_ != nullptr) (void)kv_->remove(0);
    }
    return Status::ok();
  }
  // Encoders: every request parsed and its rows built, then one forward over all of them.
  std::vector<DecisionRequest> reqs(n);
  std::vector<PreparedDecision> preps(n);
  std::vector<PreparedDecision*> ready;
  uint64_t budget = arena_.capacity() / kArenaShare;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view b = body(items, i);
    statuses[i] = admit(b, &budget);
    if (!statuses[i].is_ok()) continue;
    Result<DecisionRequest> r = parse_request(b, request_mode_);
    if (!r.is_ok()) {
      statuses[i] = r.status();
      continue;
    }
    reqs[i] = std::move(r).value();
    statuses[i] = prepare_decision(reqs[i], model_->encoder(), model_->specials(),
                                   model_->settings(), *net_, &preps[i]);
    if (statuses[i].is_ok()) ready.push_back(&preps[i]);
  }
  std::vector<float> logits, act;
  int K = 2;
  const Status st = forward_decisions(ready, *net_, &logits, &act, &K);
  if (!st.is_ok()) {
    for (Status& s : statuses) s = st;
    return finish(st);
  }
  size_t row = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!statuses[i].is_ok()) continue;
    const size_t n = preps[i].rows();
    DecisionOutput out;
    finish_decision(reqs[i], std::move(preps[i]), logits.data() + row * static_cast<size_t>(K),
                    act.data() + row * 2, K, model_->settings(), &out);
    row += n;
    c.batch_json[i] = json::dump(out.json);
  }
  return Status::ok();
}

Status Context::question_scores(const runtime::DecoderRequest& req,
                                std::vector<std::vector<float>>* scores) {
  CallScope scope(this);
  if (model_->kind() != ModelKind::kDecoder || req.schema || req.states.empty())
    return finish(Status(StatusCode::kInvalidArgument,
                         "question scores need a decoder and a "
                         "questions request"));
  Status why;
  const runtime::DecoderText* text = model_->decoder_text_or(&why);
  if (text == nullptr) return finish(why);
  Result<runtime::DecoderCells> cells = runtime::decoder_request_cells(*text, req);
  if (!cells.is_ok()) return finish(cells.status());
  if (cells->working > layout_.limits.kv_cells)
    return finish(status_error(
        StatusCode::kLimitExceeded, "the request needs %lld KV cells; this context has %lld",
        static_cast<long long>(cells->working), static_cast<long long>(layout_.limits.kv_cells)));
  Result<runtime::QuestionScores> s =
      decider_->score_questions(req.states[0], req.questions.questions, req.system);
  if (!s.is_ok()) return finish(s.status());
  *scores = std::move(s->scores);
  return finish(Status::ok());
}

Status Context::explain(std::string_view body) {
  CallScope scope(this);
  if (model_->kind() != ModelKind::kEncoder)
    return finish(Status(StatusCode::kUnsupported, "explain is for encoder models"));
  Result<DecisionRequest> req = parse_request(body, request_mode_);
  if (!req.is_ok()) return finish(req.status());
  Result<Value> out =
      explain_decision(*req, model_->encoder(), model_->specials(), model_->settings(), net_.get());
  if (!out.is_ok()) return finish(out.status());
  call_->json = json::dump(*out);
  return finish(Status::ok());
}

Status Context::decide_schema(const SchemaRequestParts& r) {
  CallScope scope(this);
  if (model_->kind() != ModelKind::kDecoder)
    return finish(Status(StatusCode::kUnsupported, "schema decisions need a decoder model"));
  // The parts as the body they stand for, so that they are read and checked exactly as one.
  std::string body = "{\"state\": ";
  if (r.state_is_text)
    body += json::dump(Value::string(std::string(r.state)));
  else
    body += r.state;
  body += ", \"schema\": ";
  body += r.schema;
  if (r.fallback) {
    body += ", \"fallback\": ";
    body += *r.fallback;
  }
  if (r.system) body += ", \"system\": " + json::dump(Value::string(std::string(*r.system)));
  if (r.max_tokens > 0) body += ", \"max_tokens\": " + std::to_string(r.max_tokens);
  if (r.deadline_ms > 0) body += ", \"deadline_ms\": " + std::to_string(r.deadline_ms);
  if (r.min_confidence >= 0)
    body += ", \"min_confidence\": " + json::python_float_repr(r.min_confidence);
  body += "}";
  return finish(decide_decoder(body, r.sampler));
}

}  // namespace laya::decision

namespace laya::decision {

namespace {

// GenerateRequest::pick through a Sampler (`ctx`).
int32_t sample_token(std::span<const float> logits, void* ctx) {
  return static_cast<Sampler*>(ctx)->sample(logits.data(), nullptr);
}

// Brackets of the reply's first JSON object, counted outside strings (stop_after_json).
struct JsonEnd {
  int depth = 0;
  bool started = false, in_string = false, escaped = false, closed = false;
  void feed(std::string_view piece) {
    for (const char c : piece) {
      if (closed) return;
      if (!started) {
        started = c == '{';
        depth = started ? 1 : 0;
      } else if (in_string) {
        if (escaped)
          escaped = false;
        else if (c == '\\')
          escaped = true;
        else if (c == '"')
          in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        closed = true;
      }
    }
  }
};

// What GenerateRequest::done sees: the caller's callbacks and the JSON end.
struct DoneHook {
  const GenerateParams* p = nullptr;
  const tok::Tokenizer* tok = nullptr;
  size_t seen = 0;
  JsonEnd json_end;
  bool aborted = false, stopped_by_callback = false;
  std::string piece;
  static bool done(std::span<const int32_t> out, void* ctx) {
    DoneHook& h = *static_cast<DoneHook*>(ctx);
    for (; h.seen < out.size(); ++h.seen) {
      h.piece.clear();
      if (h.tok != nullptr) (void)h.tok->token_to_piece(out[h.seen], false, &h.piece);
      if (h.p->stop_after_json) h.json_end.feed(h.piece);
      if (h.p->on_token != nullptr && h.p->on_token(h.p->on_token_user, out[h.seen], h.piece)) {
        h.stopped_by_callback = true;
        return true;
      }
    }
    if (h.p->abort != nullptr && h.p->abort(h.p->abort_user)) {
      h.aborted = true;
      return true;
    }
    return h.json_end.closed;
  }
};

}  // namespace

std::string node_kind(const ir::Graph& g, const ir::Node& n) {
  std::string key = ir::op_name(n.op);
  if ((n.op == ir::Op::kMatMul || n.op == ir::Op::kEmbedding) && !n.inputs.empty()) {
    const ir::Value& w = g.values[n.inputs[n.op == ir::Op::kMatMul ? 1 : 0]];
    if (w.kind == ir::ValueKind::kWeight && w.shape.rank == 2)
      key += std::string(" ") + ir::dtype_name(w.dtype) + " [" + std::to_string(w.shape.dims[0].c) +
             ", " + std::to_string(w.shape.dims[1].c) + "]";
  }
  return key;
}

int64_t Context::prefix_block() const {
  return prefix_ != nullptr ? prefix_->block_tokens() : 0;
}

namespace {

// Per-node times of a phase (hal::ProfileSink), summed per node.
struct NodeTimes {
  std::vector<double> ms;  // [graph nodes]
  static void on_node(void* user, ir::NodeId node, double ms, bool /*modelled*/) {
    std::vector<double>& v = static_cast<NodeTimes*>(user)->ms;
    if (node < v.size()) v[node] += ms;
  }
};

}  // namespace

void Context::set_sampler(const SamplerConfig& sc) {
  sampler_ = sc;
}

Status Context::generate(const GenerateParams& p) {
  CallScope scope(this);
  if (model_->kind() != ModelKind::kDecoder)
    return finish(Status(StatusCode::kUnsupported, "generation needs a decoder model"));
  const int forms = !p.prompt.empty() + !p.messages.empty() + !p.prompt_ids.empty();
  if (forms != 1)
    return finish(Status(StatusCode::kInvalidArgument,
                         "give exactly one of a prompt, chat messages or prompt ids"));
  if (p.max_tokens < 1)
    return finish(Status(StatusCode::kInvalidArgument, "max_tokens must be at least 1"));
  const runtime::DecoderText& text = model_->decoder_text_unchecked();
  if (text.tokenizer == nullptr && (p.prompt_ids.empty() || p.stop_after_json)) {
    Status why;
    (void)model_->decoder_text_or(&why);
    return finish(why);
  }
  SamplerConfig sc = p.sampler;
  GenerateOutput& g = call_->gen;
  Status st;
  if (!p.prompt.empty()) {
    tok::EncodeOptions eo;
    eo.add_special_tokens = true;
    st = text.tokenizer->encode(p.prompt, eo, &g.prompt_ids);
  } else if (!p.messages.empty()) {
    Status why;
    const runtime::DecoderText* chat = model_->decoder_text_or(&why);
    if (chat == nullptr) return finish(why);
    std::vector<ChatMessage> messages;
    for (const auto& [role, content] : p.messages)
      messages.push_back({std::string(role), std::string(content)});
    Result<std::string> rendered = chat->chat.render(messages, true);
    if (!rendered.is_ok()) return finish(rendered.status());
    tok::EncodeOptions eo;
    eo.add_special_tokens = chat->add_bos;
    st = text.tokenizer->encode(*rendered, eo, &g.prompt_ids);
    if (model_->vocab().end_of_turn < 0)
      return finish(Status(StatusCode::kUnsupported,
                           "the model's chat template ends a turn with no token of its own"));
    sc.stop_ids.push_back(model_->vocab().end_of_turn);
  } else {
    g.prompt_ids.assign(p.prompt_ids.begin(), p.prompt_ids.end());
  }
  if (!st.is_ok()) return finish(st);
  if (g.prompt_ids.empty())
    return finish(Status(StatusCode::kInvalidArgument, "the prompt gives no tokens"));
  if (static_cast<int64_t>(g.prompt_ids.size()) + p.max_tokens - 1 > layout_.limits.kv_cells)
    return finish(status_error(StatusCode::kLimitExceeded,
                               "%zu prompt tokens and %lld new ones exceed this context's %lld KV "
                               "cells (its kv_cells)",
                               g.prompt_ids.size(), static_cast<long long>(p.max_tokens),
                               static_cast<long long>(layout_.limits.kv_cells)));
  if (model_->vocab().eos >= 0 &&
      std::find(sc.stop_ids.begin(), sc.stop_ids.end(), model_->vocab().eos) == sc.stop_ids.end())
    sc.stop_ids.push_back(model_->vocab().eos);
  Result<Sampler> sampler = Sampler::create(sc, static_cast<int32_t>(runner_->vocab()));
  if (!sampler.is_ok()) return finish(sampler.status());
  DoneHook hook;
  hook.p = &p;
  hook.tok = text.tokenizer;
  runtime::GenerateRequest req;
  req.prompt = g.prompt_ids;
  req.max_tokens = p.max_tokens;
  req.prefix_cache = p.prefix_cache ? prefix_.get() : nullptr;
  req.stop = sampler->config().stop_ids;
  req.pick = sample_token;
  req.pick_ctx = &*sampler;
  req.done = DoneHook::done;
  req.done_ctx = &hook;
  NodeTimes prefill_times, decode_times;
  const hal::ProfileSink prefill_sink{NodeTimes::on_node, &prefill_times},
      decode_sink{NodeTimes::on_node, &decode_times};
  if (p.profile != nullptr) {
    prefill_times.ms.assign(model_->graph().nodes.size(), 0.0);
    decode_times.ms.assign(model_->graph().nodes.size(), 0.0);
    req.prefill_profile = &prefill_sink;
    req.decode_profile = &decode_sink;
  }
  st = runner_->generate(req, &g.ids, &g.stats);
  (void)kv_->remove(0);
  if (!st.is_ok()) return finish(st);
  if (prefix_ != nullptr) g.prefix = prefix_->stats();
  g.prefix_block = prefix_block();
  if (p.profile != nullptr) {
    const ir::Graph& graph = model_->graph();
    for (int phase = 0; phase < 2; ++phase) {
      const std::vector<double>& t = phase == 0 ? prefill_times.ms : decode_times.ms;
      for (size_t i = 0; i < t.size(); ++i)
        if (t[i] != 0) p.profile(p.profile_user, phase, node_kind(graph, graph.nodes[i]), t[i]);
    }
  }
  if (hook.aborted) return finish(Status(StatusCode::kAborted, "generation aborted by the caller"));
  if (text.tokenizer != nullptr) {
    st = text.tokenizer->decode(g.ids, /*skip_special=*/true, &g.text);
    if (!st.is_ok()) return finish(st);
  }
  const bool stopped =
      !g.ids.empty() && std::find(req.stop.begin(), req.stop.end(), g.ids.back()) != req.stop.end();
  g.finish_reason = stopped                    ? "stop"
                    : hook.stopped_by_callback ? "callback"
                    : hook.json_end.closed     ? "json"
                                               : "length";
  return finish(Status::ok());
}

Status Context::score(std::span<const int32_t> ids,
                      void (*fn)(void* user, size_t position, const float* logits, size_t vocab),
                      void* user) {
  CallScope scope(this);
  if (model_->kind() != ModelKind::kDecoder)
    return finish(Status(StatusCode::kUnsupported, "scoring needs a decoder model"));
  if (ids.empty()) return finish(Status(StatusCode::kInvalidArgument, "no ids to score"));
  if (static_cast<int64_t>(ids.size()) > layout_.limits.kv_cells)
    return finish(status_error(StatusCode::kLimitExceeded,
                               "%zu ids exceed this context's %lld KV cells (its kv_cells)",
                               ids.size(), static_cast<long long>(layout_.limits.kv_cells)));
  const size_t chunk = static_cast<size_t>(runner_->chunk());
  const size_t vocab = static_cast<size_t>(runner_->vocab());
  Status st;
  for (size_t at = 0; at < ids.size() && st.is_ok(); at += chunk) {
    const size_t n = std::min(chunk, ids.size() - at);
    st = runner_->step(0, ids.subspan(at, n));
    if (!st.is_ok()) break;
    for (size_t i = 0; i < n; ++i) fn(user, at + i, runner_->logits().data() + i * vocab, vocab);
  }
  (void)kv_->remove(0);
  return finish(st);
}

Status Context::tokenize(std::string_view text, bool add_special) {
  CallScope scope(this);
  std::vector<int32_t>* ids = &call_->tokens;
  const tok::Tokenizer* t = model_->kind() == ModelKind::kEncoder
                                ? &model_->encoder_tokenizer()
                                : model_->decoder_text_unchecked().tokenizer;
  if (t == nullptr) return finish(Status(StatusCode::kUnsupported, "the model has no tokenizer"));
  tok::EncodeOptions eo;
  eo.add_special_tokens = add_special;
  return finish(t->encode(text, eo, ids));
}

Status Context::detokenize(std::span<const int32_t> ids, bool skip_special) {
  CallScope scope(this);
  std::string* text = &call_->text;
  const tok::Tokenizer* t = model_->kind() == ModelKind::kEncoder
                                ? &model_->encoder_tokenizer()
                                : model_->decoder_text_unchecked().tokenizer;
  if (t == nullptr) return finish(Status(StatusCode::kUnsupported, "the model has no tokenizer"));
  return finish(t->decode(ids, skip_special, text));
}

}  // namespace laya::decision
