#include "runtime/session.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "ir/shape_infer.h"

namespace laya::runtime {

namespace {

constexpr size_t kMaxBuckets = 4096;
// The inputs and activations of one bucket together (256 TiB): no machine has more memory, and
// below it no size derived from a tensor's extents (plans, kernel scratch) can overflow.
constexpr uint64_t kMaxBucketBytes = uint64_t{1} << 48;

uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

unsigned long long ull(uint64_t v) {
  return static_cast<unsigned long long>(v);
}

// Sorted, unique bucket upper bounds for `sym`: the caller's (checked) or the default.
Result<std::vector<int64_t>> symbol_bounds(const ir::Symbol& sym, const SessionOptions& opts) {
  std::vector<int64_t> b;
  bool given = false;
  for (const auto& [name, list] : opts.bucket_bounds) {
    if (name != sym.name) continue;
    given = true;
    for (int64_t v : list) {
      if (v < sym.min || v > sym.max)
        return status_error(StatusCode::kInvalidArgument,
                            "bucket bound %lld for symbol '%s' is outside [%lld, %lld]",
                            static_cast<long long>(v), sym.name.c_str(),
                            static_cast<long long>(sym.min), static_cast<long long>(sym.max));
      b.push_back(v);
    }
  }
  if (!given)
    for (int64_t v = 16; v < sym.max; v *= 2) {
      if (v >= sym.min) b.push_back(v);
      if (v > INT64_MAX / 2) break;  // doubling again would overflow
    }
  b.push_back(sym.max);
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

}  // namespace

Session::~Session() = default;

const hal::Backend* Session::backend(const std::string& name) const {
  for (const auto& [n, b] : backends_)
    if (n == name) return b.get();
  return nullptr;
}

Result<std::unique_ptr<Session>> Session::prepare(const ir::Graph& graph,
                                                  const SessionOptions& opts) {
  LAYA_RETURN_IF_ERROR(ir::graph_verify(graph));
  for (const ir::Value& v : graph.values)
    if (v.kind == ir::ValueKind::kWeight && v.fill != nullptr)
      return status_error(StatusCode::kFailedPrecondition,
                          "weight '%s' is deferred: its bytes exist only once the graph is written "
                          "to a file (model_write); load that file instead",
                          v.name.c_str());
  std::unique_ptr<Session> s(new Session());
  s->device_ = opts.device != nullptr ? opts.device : Device::process_default();
  s->graph_ = graph;
  const ir::Graph& g = s->graph_;
  const hal::Registry& reg = hal::builtin_registry();

  // Backends, in preference order, then the cpu (the fallback) when not listed.
  if (opts.backends.empty())
    return status_error(StatusCode::kInvalidArgument, "no backend listed in SessionOptions");
  std::vector<std::string> names;
  for (const std::string& name : opts.backends)
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  if (std::find(names.begin(), names.end(), "cpu") == names.end()) names.push_back("cpu");
  std::vector<ScheduleBackend> sched;
  size_t fallback = 0;
  for (const std::string& name : names) {
    hal::BackendOptions bo = opts.backend;
    for (const auto& [n, o] : opts.backend_options)
      if (n == name) bo = o;
    bo.shared = s->device_->shared();
    LAYA_ASSIGN_OR_RETURN(std::unique_ptr<hal::Backend> b, reg.create(name, bo));
    const hal::Capabilities& caps = b->capabilities();
    ir::DType act = caps.default_activations;
    for (const auto& [n, d] : opts.activations)
      if (n == name) act = d;
    if (((caps.activation_dtypes >> static_cast<int>(act)) & 1u) == 0)
      return status_error(StatusCode::kInvalidArgument,
                          "backend '%s' does not keep activations in %s", name.c_str(),
                          ir::dtype_name(act));
    if (name == "cpu") fallback = sched.size();
    sched.push_back({name, b.get(), act});
    s->backends_.emplace_back(name, std::move(b));
  }

  // The session's symbol bounds (symbol_max), then buckets: the cross product of each symbol's
  // bounds.
  s->symbols_ = g.symbols;
  for (const auto& [name, max] : opts.symbol_max) {
    const int k = g.find_symbol(name);
    if (k < 0)
      return status_error(StatusCode::kInvalidArgument, "symbol_max names '%s', not a symbol",
                          name.c_str());
    ir::Symbol& sym = s->symbols_[static_cast<size_t>(k)];
    if (max < sym.min || max > sym.max)
      return status_error(StatusCode::kInvalidArgument,
                          "symbol_max %lld for symbol '%s' is outside [%lld, %lld]",
                          static_cast<long long>(max), name.c_str(),
                          static_cast<long long>(sym.min), static_cast<long long>(sym.max));
    sym.max = max;
  }
  size_t n_buckets = 1;
  for (const ir::Symbol& sym : s->symbols_) {
    LAYA_ASSIGN_OR_RETURN(std::vector<int64_t> b, symbol_bounds(sym, opts));
    n_buckets *= b.size();
    if (n_buckets > kMaxBuckets)
      return status_error(StatusCode::kInvalidArgument,
                          "more than %zu shape buckets; give fewer bucket_bounds", kMaxBuckets);
    s->bounds_.push_back(std::move(b));
  }
  // Largest extents of every value (symbols at their bounds), for placement and scratch sizes.
  const size_t nv = g.values.size();
  std::vector<ir::Extents> max_ext(nv);
  for (size_t v = 0; v < nv; ++v) {
    const ir::Shape& sh = g.values[v].shape;
    max_ext[v].rank = sh.rank;
    for (int i = 0; i < sh.rank; ++i) max_ext[v].d[i] = ir::dim_max(sh.dims[i], s->symbols_);
  }

  LAYA_ASSIGN_OR_RETURN(Schedule plan, schedule(g, sched, fallback, max_ext.data(), opts.schedule));
  s->placement_.resize(g.nodes.size());
  for (size_t id = 0; id < g.nodes.size(); ++id) {
    s->placement_[id].backend = sched[plan.backend_of[id]].name;
    s->placement_[id].fallback_reason = plan.reason[id];
    s->placement_[id].parts = plan.parts[id];
  }
  // The nodes as they will run: activation lifetimes follow this order, not the graph's (the
  // scheduler moves independent work into a backend's call ahead of a fallback node).
  std::vector<ir::NodeId> run_order;
  std::vector<uint8_t> runs(g.nodes.size(), 0);
  for (const Schedule::Exe& pe : plan.executables)
    for (ir::NodeId id : pe.sg.nodes) {
      run_order.push_back(id);
      runs[id] = 1;
    }
  for (size_t id = 0; id < g.nodes.size(); ++id)
    if (!runs[id])
      return status_error(StatusCode::kInternal, "the schedule leaves node %zu '%s' out", id,
                          g.nodes[id].name.c_str());

  std::vector<uint64_t> bytes(nv);
  std::vector<ir::Symbol> range = s->symbols_;  // the bucket's symbol ranges
  std::vector<std::vector<ir::Extents>> bucket_ext(n_buckets, std::vector<ir::Extents>(nv));
  for (size_t bi = 0; bi < n_buckets; ++bi) {
    Bucket bucket;
    size_t rest = bi;
    for (size_t k = g.symbols.size(); k-- > 0;) {  // mixed radix, last symbol fastest
      const std::vector<int64_t>& b = s->bounds_[k];
      const size_t j = rest % b.size();
      rest /= b.size();
      range[k].min = j == 0 ? s->symbols_[k].min : b[j - 1] + 1;
      range[k].max = b[j];
    }
    for (const ir::Symbol& r : range) {
      bucket.lo.push_back(r.min);
      bucket.hi.push_back(r.max);
    }
    uint64_t total = 0;  // every input and activation at once
    for (size_t v = 0; v < nv; ++v) {
      const ir::Value& val = g.values[v];
      const ir::Shape& sh = val.shape;
      bucket_ext[bi][v].rank = sh.rank;
      for (int i = 0; i < sh.rank; ++i) bucket_ext[bi][v].d[i] = ir::dim_max(sh.dims[i], range);
      bytes[v] = 0;
      if (val.kind == ir::ValueKind::kWeight) continue;
      LAYA_ASSIGN_OR_RETURN(int64_t count, ir::shape_max_count(val.shape, range));
      LAYA_ASSIGN_OR_RETURN(const uint64_t b, ir::dtype_bytes(val.dtype, count));
      if (__builtin_add_overflow(total, round_up(b, kRegionAlign), &total) ||
          total > kMaxBucketBytes)
        return status_error(StatusCode::kOutOfRange,
                            "the inputs and activations of shape bucket %zu need more than %llu "
                            "bytes",
                            bi, ull(kMaxBucketBytes));
      if (val.kind == ir::ValueKind::kActivation) bytes[v] = b;
    }
    bucket.plan = ir::memory_plan(g, bytes, kRegionAlign, run_order);
    s->req_.activation_bytes = std::max(s->req_.activation_bytes, bucket.plan.arena_bytes);
    s->buckets_.push_back(std::move(bucket));
  }

  // Executables, in run order.
  uint64_t persistent = 0;
  for (Schedule::Exe& pe : plan.executables) {
    const ScheduleBackend& sb = sched[pe.backend];
    std::vector<ir::PrecompiledExecutable> pre;
    for (const ir::PrecompiledExecutable& x : g.meta.executables)
      if (x.backend == sb.name) pre.push_back(x);
    hal::PrepareOptions popts;
    popts.max_extents = max_ext.data();
    popts.buckets = bucket_ext;
    popts.precompiled = pre;
    popts.activations = sb.activations;
    LAYA_ASSIGN_OR_RETURN(std::unique_ptr<hal::Executable> exe, sb.backend->prepare(pe.sg, popts));
    ExecutableInfo info;
    info.backend = sb.name;
    info.nodes = pe.sg.nodes;
    info.parts = pe.sg.parts;
    if (info.parts.empty()) info.parts.resize(info.nodes.size());
    info.activations = sb.activations;
    info.needs = exe->needs();
    persistent = round_up(persistent, hal::persistent_alignment(info.needs.persistent_bytes));
    info.persistent_offset = persistent;
    persistent += round_up(info.needs.persistent_bytes, kRegionAlign);
    s->req_.scratch_bytes =
        std::max(s->req_.scratch_bytes, round_up(info.needs.scratch_bytes, kRegionAlign));
    s->req_.device_bytes += info.needs.device_bytes;
    s->req_.shared_bytes += info.needs.shared_bytes;
    for (ir::NodeId n : pe.sg.nodes)
      s->placement_[n].executable = static_cast<int>(s->exe_info_.size());
    s->exe_info_.push_back(std::move(info));
    s->exes_.push_back({sb.backend, std::move(exe), std::move(pe.sg)});
  }
  s->req_.persistent_bytes = persistent;

  // Bindings: weights point at their bytes now; activations at reshape; inputs / outputs at
  // execute.
  s->bindings_.resize(nv);
  s->staged_.resize(nv);
  s->states_.resize(g.states.size());
  for (size_t v = 0; v < nv; ++v) {
    const ir::Value& val = g.values[v];
    if (val.kind != ir::ValueKind::kWeight) continue;
    s->bindings_[v].data = const_cast<uint8_t*>(val.data);
    s->bindings_[v].extents = max_ext[v];
  }
  return s;
}

Result<std::vector<ModelledExecutable>> Session::model(std::span<const int64_t> values) const {
  const ir::Graph& g = graph_;
  if (values.size() != g.symbols.size())
    return status_error(StatusCode::kInvalidArgument, "model: %zu symbol values for %zu symbols",
                        values.size(), g.symbols.size());
  std::array<int64_t, ir::kMaxSymbols> vals{};
  for (size_t k = 0; k < g.symbols.size(); ++k) {
    const ir::Symbol& sym = symbols_[k];
    if (values[k] < sym.min || values[k] > sym.max)
      return status_error(StatusCode::kOutOfRange, "symbol '%s' = %lld is outside [%lld, %lld]",
                          sym.name.c_str(), static_cast<long long>(values[k]),
                          static_cast<long long>(sym.min), static_cast<long long>(sym.max));
    vals[k] = values[k];
  }
  std::vector<ir::Extents> ext(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v)
    LAYA_RETURN_IF_ERROR(ir::shape_eval(g.values[v].shape, vals.data(), &ext[v]));
  std::vector<ModelledExecutable> out;
  double t = 0;
  for (size_t i = 0; i < exes_.size(); ++i) {
    const Exe& e = exes_[i];
    LAYA_ASSIGN_OR_RETURN(hal::Estimate est,
                          e.backend->estimate(e.sg, ext.data(), exe_info_[i].activations));
    out.push_back({static_cast<int>(i), t, est});
    t += est.total_ms;
  }
  return out;
}

Status Session::bind_memory(MemoryRegion persistent, MemoryRegion activations,
                            MemoryRegion scratch) {
  const struct {
    const char* name;
    const MemoryRegion& r;
    uint64_t need;
  } regions[] = {{"persistent", persistent, req_.persistent_bytes},
                 {"activations", activations, req_.activation_bytes},
                 {"scratch", scratch, req_.scratch_bytes}};
  for (const auto& [name, r, need] : regions) {
    if (need == 0) continue;
    if (r.data == nullptr || r.bytes < need)
      return status_error(StatusCode::kResourceExhausted,
                          "%s region: %llu bytes given, %llu needed", name, ull(r.bytes),
                          ull(need));
    const uint64_t align = &r == &persistent ? hal::persistent_alignment(need) : kRegionAlign;
    if (reinterpret_cast<uintptr_t>(r.data) % align != 0)
      return status_error(StatusCode::kInvalidArgument, "%s region at %p is not %llu-byte aligned",
                          name, r.data, ull(align));
  }
  bound_ = false;
  hw_.persistent_bytes = 0;
  for (size_t i = 0; i < exes_.size(); ++i) {
    const ExecutableInfo& info = exe_info_[i];
    uint8_t* base = static_cast<uint8_t*>(persistent.data) + info.persistent_offset;
    LAYA_RETURN_IF_ERROR(exes_[i].backend->load(
        *exes_[i].exe, info.needs.persistent_bytes ? base : nullptr, info.needs.persistent_bytes));
    hw_.persistent_bytes = info.persistent_offset + info.needs.persistent_bytes;
  }
  persistent_ = persistent;
  activations_ = activations;
  scratch_ = scratch;
  bound_ = true;
  return reshaped_ ? reshape_backends() : Status::ok();
}

// Whether `regions` (per state) hold the states at the staged extents (else the current ones).
Status Session::check_states(std::span<const MemoryRegion> regions, bool staged) const {
  for (size_t i = 0; i < regions.size(); ++i) {
    const ir::ValueId id = graph_.states[i];
    const ir::Value& v = graph_.values[id];
    const ir::Extents& e = staged ? staged_[id] : bindings_[id].extents;
    LAYA_ASSIGN_OR_RETURN(const uint64_t need, ir::dtype_bytes(v.dtype, e.count()));
    if (regions[i].bytes < need)
      return status_error(StatusCode::kResourceExhausted,
                          "state '%s' needs %llu bytes at these shapes, its region has %llu",
                          v.name.c_str(), ull(need), ull(regions[i].bytes));
  }
  return Status::ok();
}

Status Session::bind_states(std::span<const MemoryRegion> states) {
  const ir::Graph& g = graph_;
  if (states.size() != g.states.size())
    return status_error(StatusCode::kInvalidArgument, "bind_states: %zu regions for %zu states",
                        states.size(), g.states.size());
  for (size_t i = 0; i < states.size(); ++i)
    if (states[i].data == nullptr || reinterpret_cast<uintptr_t>(states[i].data) % kRegionAlign)
      return status_error(StatusCode::kInvalidArgument,
                          "bind_states: the region of state '%s' at %p is null or not %llu-byte "
                          "aligned",
                          g.values[g.states[i]].name.c_str(), states[i].data, ull(kRegionAlign));
  if (reshaped_) LAYA_RETURN_IF_ERROR(check_states(states, false));
  std::copy(states.begin(), states.end(), states_.begin());
  states_bound_ = true;
  // Every value that is a state's memory: the state and the kv_write outputs aliasing it.
  for (size_t v = 0; v < g.values.size(); ++v) {
    const ir::ValueId st = ir::aliased_state(g, static_cast<ir::ValueId>(v));
    if (st == ir::kNoValue) continue;
    const size_t i =
        static_cast<size_t>(std::find(g.states.begin(), g.states.end(), st) - g.states.begin());
    bindings_[v].data = states_[i].data;
  }
  // Backends learn new state memory at reshape (hal.h): reshape them again.
  return reshaped_ ? reshape_backends() : Status::ok();
}

Status Session::state_written(int64_t first_row, int64_t n_rows) {
  if (!reshaped_ || !states_bound_) return Status::ok();
  for (ir::ValueId st : graph_.states) {
    const ir::Extents& e = bindings_[st].extents;
    if (first_row < 0 || n_rows < 0 || e.rank != 3 || first_row + n_rows > e.d[1])
      return status_error(
          StatusCode::kInvalidArgument,
          "state_written: rows [%lld, %lld) of state '%s' with %lld rows",
          static_cast<long long>(first_row), static_cast<long long>(first_row + n_rows),
          graph_.values[st].name.c_str(), static_cast<long long>(e.rank == 3 ? e.d[1] : 0));
    for (Exe& x : exes_)
      LAYA_RETURN_IF_ERROR(
          x.backend->state_written(*x.exe, bindings_.data(), st, first_row, n_rows));
  }
  return Status::ok();
}

Status Session::reshape(std::span<const int64_t> values) {
  if (!bound_) return status_error(StatusCode::kFailedPrecondition, "reshape before bind_memory");
  const ir::Graph& g = graph_;
  if (values.size() != g.symbols.size())
    return status_error(StatusCode::kInvalidArgument, "reshape: %zu symbol values for %zu symbols",
                        values.size(), g.symbols.size());
  std::array<int64_t, ir::kMaxSymbols> vals{};
  size_t bucket = 0;
  bool same = reshaped_;
  for (size_t k = 0; k < g.symbols.size(); ++k) {
    const ir::Symbol& sym = symbols_[k];
    if (values[k] < sym.min || values[k] > sym.max)
      return status_error(StatusCode::kOutOfRange, "symbol '%s' = %lld is outside [%lld, %lld]",
                          sym.name.c_str(), static_cast<long long>(values[k]),
                          static_cast<long long>(sym.min), static_cast<long long>(sym.max));
    vals[k] = values[k];
    same = same && values[k] == symbol_values_[k];
    const std::vector<int64_t>& b = bounds_[k];
    const size_t j =
        static_cast<size_t>(std::lower_bound(b.begin(), b.end(), values[k]) - b.begin());
    bucket = bucket * b.size() + j;
  }
  // The same values as the last reshape (every decode step of a decoder): extents, bucket,
  // activation pointers and the backends' arguments are all as they were.
  if (same) return Status::ok();
  for (size_t v = 0; v < g.values.size(); ++v) {
    if (g.values[v].kind == ir::ValueKind::kWeight) continue;
    LAYA_RETURN_IF_ERROR(ir::shape_eval(g.values[v].shape, vals.data(), &staged_[v]));
  }
  if (states_bound_) LAYA_RETURN_IF_ERROR(check_states(states_, true));
  const std::array<int64_t, ir::kMaxSymbols> prev = symbol_values_;
  const int prev_bucket = bucket_;
  const bool was_reshaped = reshaped_;
  for (size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].kind != ir::ValueKind::kWeight) bindings_[v].extents = staged_[v];
  symbol_values_ = vals;
  bucket_ = static_cast<int>(bucket);
  reshaped_ = true;
  const Status st = reshape_backends();
  if (!st.is_ok() && was_reshaped) {
    // A backend refused the new shapes: back to the last ones (extents, bucket, pointers and the
    // backends' decisions), which it took before.
    for (size_t v = 0; v < g.values.size(); ++v)
      if (g.values[v].kind != ir::ValueKind::kWeight)
        (void)ir::shape_eval(g.values[v].shape, prev.data(), &bindings_[v].extents);
    symbol_values_ = prev;
    bucket_ = prev_bucket;
    reshaped_ = true;
    if (!reshape_backends().is_ok()) reshaped_ = false;
  }
  return st;
}

// Activation pointers for the current bucket, then each backend's reshape. A failure leaves the
// session unreshaped; reshape() then restores the last shapes.
Status Session::reshape_backends() {
  const ir::MemoryPlan& plan = buckets_[static_cast<size_t>(bucket_)].plan;
  uint8_t* base = static_cast<uint8_t*>(activations_.data);
  for (size_t v = 0; v < graph_.values.size(); ++v)
    if (plan.offset[v] != ir::kNotPlanned) bindings_[v].data = base + plan.offset[v];
  cur_scratch_ = 0;
  for (Exe& e : exes_) {
    if (Status st = e.backend->reshape(*e.exe, bindings_.data(), bucket_); !st.is_ok()) {
      reshaped_ = false;
      return st;
    }
    cur_scratch_ = std::max(cur_scratch_, e.exe->reshaped_scratch_bytes());
  }
  return Status::ok();
}

Status Session::execute(std::span<const void* const> inputs, std::span<void* const> outputs,
                        const hal::ProfileSink* profile) {
  if (!bound_ || !reshaped_ || (!states_bound_ && !graph_.states.empty()))
    return status_error(StatusCode::kFailedPrecondition, "execute before %s",
                        !bound_      ? "bind_memory"
                        : !reshaped_ ? "reshape"
                                     : "bind_states");
  const ir::Graph& g = graph_;
  if (inputs.size() != g.inputs.size() || outputs.size() != g.outputs.size())
    return status_error(StatusCode::kInvalidArgument,
                        "execute: %zu inputs and %zu outputs given, the graph has %zu and %zu",
                        inputs.size(), outputs.size(), g.inputs.size(), g.outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    bindings_[g.inputs[i]].data = const_cast<void*>(inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) bindings_[g.outputs[i]].data = outputs[i];
  hal::ExecContext ctx;
  ctx.values = bindings_.data();
  ctx.scratch = scratch_.data;
  ctx.profile = profile;
  hw_.activation_bytes =
      std::max(hw_.activation_bytes, buckets_[static_cast<size_t>(bucket_)].plan.arena_bytes);
  hw_.scratch_bytes = std::max(hw_.scratch_bytes, cur_scratch_);
  for (Exe& e : exes_) LAYA_RETURN_IF_ERROR(e.backend->execute(*e.exe, ctx));
  return Status::ok();
}

// ---- RegionBuffer ----------------------------------------------------------------------------

RegionBuffer::~RegionBuffer() {
  std::free(data_);
}

RegionBuffer::RegionBuffer(RegionBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
  o.data_ = nullptr;
  o.bytes_ = 0;
}

RegionBuffer& RegionBuffer::operator=(RegionBuffer&& o) noexcept {
  if (this != &o) {
    std::free(data_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

Result<RegionBuffer> RegionBuffer::alloc(uint64_t bytes, uint64_t align, bool huge) {
  RegionBuffer r;
  if (bytes == 0) return r;
  if (align < kRegionAlign || (align & (align - 1)) != 0)
    return status_error(StatusCode::kInvalidArgument, "alignment %llu is not a power of two >= 64",
                        ull(align));
  const uint64_t size = round_up(bytes, align);
  r.data_ = std::aligned_alloc(align, size);
  if (r.data_ == nullptr)
    return status_error(StatusCode::kResourceExhausted, "cannot allocate %llu bytes", ull(size));
  r.bytes_ = size;
  if (huge && size >= hal::kHugePageBytes) (void)madvise(r.data_, size, MADV_HUGEPAGE);
  return r;
}

Result<SessionBuffers> session_buffers_alloc(const Session& s) {
  const MemoryRequirements& q = s.requirements();
  SessionBuffers b;
  LAYA_ASSIGN_OR_RETURN(
      b.persistent,
      RegionBuffer::alloc(q.persistent_bytes, hal::persistent_alignment(q.persistent_bytes), true));
  LAYA_ASSIGN_OR_RETURN(b.activations,
                        RegionBuffer::alloc(q.activation_bytes, kRegionAlign, false));
  LAYA_ASSIGN_OR_RETURN(b.scratch, RegionBuffer::alloc(q.scratch_bytes, kRegionAlign, false));
  return b;
}

}  // namespace laya::runtime
