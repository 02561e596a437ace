// The simulated AX8850 backend: supports() from the op table, estimate() from the cost model,
// functional execution on the reference kernels with the semantics of ax8850.h.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hal/ax8850/ax8850.h"
#include "hal/ax8850/cost_model.h"
#include "hal/ax8850/op_support.h"
#include "kernels/kernels.h"
#include "hal/kv_write.h"
#include "kernels/quant.h"

namespace laya::hal {
namespace ax8850 {
namespace {

constexpr char kMagic[] = "laya-ax8850-sim";
constexpr uint32_t kBlobVersion = 1;

uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

bool is_float(const ir::Value& v) {
  return v.dtype == ir::DType::kF32;
}

// Bytes per element of a value the simulator keeps: f16 (an f16 KV cache) 2; f32 and i32 4.
uint64_t elem_bytes(const ir::Value& v) {
  return v.dtype == ir::DType::kF16 ? 2 : 4;
}

// The bytes of a step list: node ids and parts (blob body and key hash).
std::vector<uint8_t> step_bytes(const Subgraph& sg) {
  std::vector<uint8_t> out;
  auto put = [&](const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  };
  for (size_t i = 0; i < sg.nodes.size(); ++i) {
    const NodePart part = i < sg.parts.size() ? sg.parts[i] : NodePart{};
    put(&sg.nodes[i], sizeof(ir::NodeId));
    put(&part.begin, sizeof part.begin);
    put(&part.end, sizeof part.end);
    put(&part.group, sizeof part.group);
  }
  return out;
}

uint64_t fnv1a(const std::vector<uint8_t>& b) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t c : b) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Where a value lives during an execute.
enum class Loc : uint8_t { kHost, kDevice, kScratch };

struct Place {
  Loc loc = Loc::kHost;
  uint64_t offset = 0;
};

// One step: a node or one part of it, with everything execute needs.
struct ExeStep {
  ir::NodeId id = 0;
  ir::Op op = ir::Op::kAdd;
  NodePart part;
  bool last_part = true;        // the node's outputs are complete after this step
  std::vector<ir::ValueId> in;  // input slots (kNoValue for holes)
  std::vector<ir::ValueId> outs;
  ir::Attrs attrs;
  // matmul: the part's packed weights
  kernels::MatmulKernel mm;
  int64_t n0 = 0, np = 0, n_total = 0, k = 0;
  uint64_t packed_offset = 0;
  bool scale_after = false;    // w8a16: y = acc * scale + bias after an unscaled bf16 product
  uint64_t scales_offset = 0;  // f32 [np] in persistent
  // embedding
  kernels::WType etype = kernels::WType::kF32;
  const void* table = nullptr;
  const float* row_scales = nullptr;
  uint64_t expanded_scales = 0;  // per-tensor i8: scales repeated per row in persistent
  bool expand = false;
  int64_t vocab = 0, dim = 0;
  // attention: k / v's element type; kv_write: the cache's (dim: its row width W)
  kernels::KvType kv_type = kernels::KvType::kF32;
  // from reshape (kv_write: rows written, count = the cache's cells C)
  int64_t rows = 0, count = 0, count_b = 0;
  kernels::AttentionArgs att;
};

struct Pack {  // weights written by load()
  ir::ValueId w = ir::kNoValue;
  kernels::WType type = kernels::WType::kF32;
  kernels::MatmulKernel mm;
  int64_t n0 = 0, np = 0, k = 0;
  uint64_t offset = 0;
  bool to_bf16 = false;        // s8 rows converted to bf16 (w8a16)
  uint64_t scales_offset = 0;  // w8a16: the rows' scales
  bool expand_scales = false;  // i8 per tensor in the reference mode: one scale per row
};

struct Boundary {
  ir::ValueId v = ir::kNoValue;
  bool round = false;  // float input in bf16 mode: rounded on the way in
  uint64_t elem = 4;   // bytes per element (elem_bytes)
};

class Ax8850Executable final : public Executable {
 public:
  MemoryNeeds needs() const override { return needs_; }
  uint64_t reshaped_scratch_bytes() const override { return reshaped_scratch_; }

  const ir::Graph* graph = nullptr;
  std::vector<ExeStep> steps;
  std::vector<Pack> packs;
  struct ScaleTable {
    ir::ValueId value;
    uint64_t offset;
    int64_t rows;
  };
  std::vector<ScaleTable> scale_tables;
  std::vector<Place> place;          // per ValueId
  std::vector<Boundary> inputs;      // copied / rounded on the way in
  std::vector<ir::ValueId> outputs;  // copied back to the host (PCIe)
  // States this executable's kv_writes keep resident in device memory (PCIe; hal.h "States").
  std::vector<ir::ValueId> states;
  std::vector<std::vector<double>> step_ms;  // per bucket, per step: modelled
  std::vector<double> call_ms;               // per bucket
  bool bf16 = true;
  bool pcie = false;
  bool precompiled = false;
  int bucket = 0;
  uint64_t kernel_scratch = 0;  // start of the input copies in scratch
  MemoryNeeds needs_;
  uint64_t reshaped_scratch_ = 0;
  uint8_t* persistent = nullptr;
};

class Ax8850Backend final : public Backend {
 public:
  explicit Ax8850Backend(const Params& p) : p_(p), ref_(kernels::kernel_table_ref()) {
    const std::vector<int> sizes = p_.group_sizes();
    description_ = "simulated " + p_.chip + " NPU: vNPU " + vnpu_mode_name(p_.vnpu) + " (" +
                   std::to_string(sizes.size()) + " group(s)), host " + host_name(p_.host) +
                   "; functional on the reference kernels, time from the cost model";
    caps_.name = "ax8850";
    caps_.description = description_.c_str();
    caps_.n_groups = static_cast<uint32_t>(sizes.size());
    for (size_t i = 0; i < sizes.size() && i < static_cast<size_t>(kMaxGroups); ++i)
      caps_.group_weight[i] = static_cast<uint32_t>(sizes[i]);
    caps_.splits_nodes = true;
    for (ir::DType d : {ir::DType::kI8, ir::DType::kBF16, ir::DType::kF16})
      caps_.weight_dtypes |= uint64_t{1} << static_cast<int>(d);
    caps_.activation_dtypes = (uint64_t{1} << static_cast<int>(ir::DType::kBF16)) |
                              (uint64_t{1} << static_cast<int>(ir::DType::kF32));
    caps_.default_activations = ir::DType::kBF16;
    caps_.memory_kinds = p_.host == Host::kChip ? 1u << static_cast<int>(MemoryKind::kHost)
                                                : 1u << static_cast<int>(MemoryKind::kDevice);
    caps_.modelled_time = true;
  }

  const Capabilities& capabilities() const override { return caps_; }
  Status supports(const ir::Graph& g, const ir::Node& n,
                  const ir::Extents* max_extents) const override {
    return op_supported(p_, g, n, max_extents);
  }
  Result<Estimate> estimate(const Subgraph& sg, const ir::Extents* extents,
                            ir::DType activations) const override;
  Result<std::unique_ptr<Executable>> prepare(const Subgraph& sg,
                                              const PrepareOptions& opts) override;
  Status load(Executable& exe, void* persistent, uint64_t bytes) override;
  Status reshape(Executable& exe, const TensorBinding* values, int bucket) override;
  Status execute(Executable& exe, const ExecContext& ctx) override;
  Status state_written(Executable& exe, const TensorBinding* values, ir::ValueId state,
                       int64_t first_row, int64_t n_rows) override;

  const Params& params() const { return p_; }
  const DeviceCounters& counters() const { return counters_; }

 private:
  Status run_step(const Ax8850Executable& e, const ExeStep& s, const ExecContext& ctx) const;
  uint64_t device_slot(const ir::Graph& g, ir::ValueId v, uint64_t bytes);
  // Takes rows [first, first + n) of a resident state in from the caller's memory.
  void take_in(ir::ValueId st, const TensorBinding& host, int64_t first, int64_t n);
  void* ptr(const Ax8850Executable& e, const ExecContext& ctx, ir::ValueId v) const {
    const Place& p = e.place[v];
    if (p.loc == Loc::kDevice) return dev_.get() + p.offset;
    if (p.loc == Loc::kScratch) return static_cast<uint8_t*>(ctx.scratch) + p.offset;
    return ctx.values[v].data;
  }

  Params p_;
  kernels::KernelTable ref_;
  std::string description_;
  Capabilities caps_;
  DeviceCounters counters_;
  // Device memory of the PCIe card: one slot per value any executable keeps on the device, and one
  // per state kept resident (its KV cache, in the state's dtype).
  const ir::Graph* dev_graph_ = nullptr;
  std::vector<uint64_t> dev_offset_;   // per ValueId, UINT64_MAX: no slot
  std::vector<const void*> dev_host_;  // per state: the caller's memory its slot holds (null: none)
  uint64_t dev_bytes_ = 0;
  std::unique_ptr<uint8_t, AlignedFree> dev_;
  uint64_t dev_cap_ = 0;
};

Result<Estimate> Ax8850Backend::estimate(const Subgraph& sg, const ir::Extents* extents,
                                         ir::DType activations) const {
  if (sg.graph == nullptr || extents == nullptr)
    return status_error(StatusCode::kInvalidArgument, "ax8850 estimate: no graph or extents");
  std::vector<Step> steps;
  for (size_t i = 0; i < sg.nodes.size(); ++i) {
    const NodePart part = i < sg.parts.size() ? sg.parts[i] : NodePart{};
    steps.push_back({sg.nodes[i], {part.begin, part.end}, part.group});
  }
  LAYA_ASSIGN_OR_RETURN(
      CallTiming ct,
      model_call(p_, *sg.graph, steps, extents, activations == ir::DType::kBF16, sg.same_backend));
  Estimate e;
  e.overhead_ms = ct.overhead_ms;
  e.total_ms = ct.total_ms;
  for (const StepTiming& st : ct.steps) {
    NodeEstimate ne;
    ne.start_ms = st.start_ms;
    ne.ms = st.cost.modelled_ms;
    ne.group = st.group;
    ne.macs = st.cost.macs;
    ne.dram_bytes = st.cost.dram_bytes;
    e.nodes.push_back(ne);
  }
  return e;
}

uint64_t Ax8850Backend::device_slot(const ir::Graph& g, ir::ValueId v, uint64_t bytes) {
  if (dev_graph_ != &g) {  // one graph per backend instance (one session)
    dev_graph_ = &g;
    dev_offset_.assign(g.values.size(), UINT64_MAX);
    dev_host_.assign(g.values.size(), nullptr);
    dev_bytes_ = 0;
  }
  if (dev_offset_[v] == UINT64_MAX) {
    dev_offset_[v] = dev_bytes_;
    dev_bytes_ += round_up(bytes, 64);
  }
  return dev_offset_[v];
}

void Ax8850Backend::take_in(ir::ValueId st, const TensorBinding& host, int64_t first, int64_t n) {
  const uint64_t row =
      static_cast<uint64_t>(host.extents.d[2]) * elem_bytes(dev_graph_->values[st]);
  const uint64_t at = static_cast<uint64_t>(first) * row, bytes = static_cast<uint64_t>(n) * row;
  std::memcpy(dev_.get() + dev_offset_[st] + at, static_cast<const uint8_t*>(host.data) + at,
              bytes);
  dev_host_[st] = host.data;
  counters_.state_h2d_bytes += bytes;
}

Result<std::unique_ptr<Executable>> Ax8850Backend::prepare(const Subgraph& sg,
                                                           const PrepareOptions& opts) {
  if (sg.graph == nullptr || opts.max_extents == nullptr)
    return status_error(StatusCode::kInvalidArgument, "ax8850 prepare: no graph or max extents");
  if (!sg.parts.empty() && sg.parts.size() != sg.nodes.size())
    return status_error(StatusCode::kInvalidArgument, "ax8850 prepare: %zu parts for %zu nodes",
                        sg.parts.size(), sg.nodes.size());
  if (opts.activations != ir::DType::kBF16 && opts.activations != ir::DType::kF32)
    return status_error(StatusCode::kInvalidArgument,
                        "ax8850 prepare: activations in %s (the device keeps bf16, or f32 for "
                        "the reference semantics)",
                        ir::dtype_name(opts.activations));
  const ir::Graph& g = *sg.graph;
  const size_t nv = g.values.size(), nn = g.nodes.size();
  for (ir::NodeId id : sg.nodes) {
    if (id >= nn)
      return status_error(StatusCode::kInvalidArgument, "ax8850 prepare: node %u out of range", id);
    LAYA_RETURN_IF_ERROR(supports(g, g.nodes[id], opts.max_extents));
  }
  auto e = std::make_unique<Ax8850Executable>();
  e->graph = &g;
  e->bf16 = opts.activations == ir::DType::kBF16;
  e->pcie = p_.host == Host::kPcie;

  // The model's precompiled form of this subgraph, if it ships one.
  const std::string key = subgraph_key(sg);
  for (const ir::PrecompiledExecutable& pre : opts.precompiled) {
    if (pre.subgraph != key) continue;
    const std::vector<uint8_t> want = compile_blob(sg);
    if (pre.bytes.size != want.size() || std::memcmp(pre.bytes.data, want.data(), want.size()) != 0)
      return status_error(StatusCode::kInvalidArgument,
                          "ax8850: the model's precompiled executable '%s' does not match its "
                          "graph (stale or corrupt; recompile it)",
                          key.c_str());
    e->precompiled = true;
  }

  // Steps and the weights they pack.
  uint64_t persistent = 0, scratch = 0;
  auto reserve = [&](uint64_t bytes) {
    const uint64_t at = persistent;
    persistent += round_up(bytes, 64);
    return at;
  };
  std::vector<int> parts_left(nn, 0);
  for (ir::NodeId id : sg.nodes) ++parts_left[id];
  for (size_t i = 0; i < sg.nodes.size(); ++i) {
    const ir::Node& n = g.nodes[sg.nodes[i]];
    ExeStep s;
    s.id = sg.nodes[i];
    s.op = n.op;
    s.part = i < sg.parts.size() ? sg.parts[i] : NodePart{};
    s.last_part = --parts_left[s.id] == 0;
    s.in = n.inputs;
    s.outs = n.outputs;
    s.attrs = n.attrs;
    const bool whole = s.part.begin == 0 && s.part.end == 0;
    if (!whole && n.op != ir::Op::kMatMul && n.op != ir::Op::kAttention)
      return status_error(StatusCode::kInvalidArgument, "ax8850 prepare: %s '%s' cannot be split",
                          ir::op_name(n.op), n.name.c_str());
    if (n.op == ir::Op::kMatMul) {
      const ir::Value& w = g.values[n.inputs[1]];
      s.n_total = w.shape.dims[0].c;
      s.k = w.shape.dims[1].c;
      s.n0 = whole ? 0 : s.part.begin;
      s.np = (whole ? s.n_total : s.part.end) - s.n0;
      if (s.np <= 0 || s.n0 + s.np > s.n_total)
        return status_error(StatusCode::kInvalidArgument,
                            "ax8850 prepare: columns [%lld, %lld) of matmul '%s'",
                            static_cast<long long>(s.part.begin),
                            static_cast<long long>(s.part.end), n.name.c_str());
      Pack pk;
      pk.w = n.inputs[1];
      pk.n0 = s.n0;
      pk.np = s.np;
      pk.k = s.k;
      pk.type = w.dtype == ir::DType::kI8    ? kernels::WType::kI8
                : w.dtype == ir::DType::kF16 ? kernels::WType::kF16
                                             : kernels::WType::kBF16;
      if (pk.type == kernels::WType::kI8 && e->bf16) {
        pk.type = kernels::WType::kBF16;
        pk.to_bf16 = true;
        s.scale_after = true;
      } else if (pk.type == kernels::WType::kI8) {
        pk.type = kernels::WType::kI8W;  // f32 mode: f32 activations, as the CPU backend
      }
      pk.expand_scales = w.dtype == ir::DType::kI8 && w.quant.kind == ir::QuantKind::kPerTensor;
      pk.mm = ref_.matmul[static_cast<int>(pk.type)];
      pk.offset = reserve(pk.mm.packed_bytes(s.np, s.k));
      if (pk.to_bf16) pk.scales_offset = reserve(static_cast<uint64_t>(s.np) * 4);
      s.mm = pk.mm;
      s.packed_offset = pk.offset;
      s.scales_offset = pk.scales_offset;
      e->packs.push_back(pk);
      const int64_t m = opts.max_extents[n.inputs[0]].rows();
      if (m > 0) scratch = std::max(scratch, s.mm.scratch_bytes(m, s.np, s.k, 1));
    } else if (n.op == ir::Op::kEmbedding) {
      const ir::Value& t = g.values[n.inputs[0]];
      s.vocab = t.shape.dims[0].c;
      s.dim = t.shape.dims[1].c;
      s.table = t.data;
      s.etype = t.dtype == ir::DType::kI8    ? kernels::WType::kI8
                : t.dtype == ir::DType::kF16 ? kernels::WType::kF16
                                             : kernels::WType::kBF16;
      if (t.dtype == ir::DType::kI8) {
        if (t.quant.kind == ir::QuantKind::kPerTensor) {
          s.expand = true;
          s.expanded_scales = reserve(static_cast<uint64_t>(s.vocab) * 4);
          e->scale_tables.push_back({n.inputs[0], s.expanded_scales, s.vocab});
        } else {
          s.row_scales = t.quant.scales.data();
        }
      }
    } else if (n.op == ir::Op::kKvWrite) {
      const ir::Value& cache = g.values[n.inputs[0]];
      s.dim = cache.shape.dims[2].c;
      s.kv_type = cache.dtype == ir::DType::kF16 ? kernels::KvType::kF16 : kernels::KvType::kF32;
    } else if (n.op == ir::Op::kAttention) {
      if (g.values[n.inputs[1]].dtype == ir::DType::kF16) s.kv_type = kernels::KvType::kF16;
      kernels::AttentionArgs a;
      const ir::Extents &q = opts.max_extents[n.inputs[0]], &k = opts.max_extents[n.inputs[1]];
      a.batch = q.d[0];
      a.q_len = q.d[1];
      a.kv_len = k.d[1];
      a.n_heads = n.attrs.n_heads;
      a.n_kv_heads = n.attrs.n_kv_heads;
      a.head_dim = n.attrs.head_dim;
      a.causal = n.attrs.mask == ir::MaskKind::kCausal;
      a.window = n.attrs.window;
      a.kv_type = s.kv_type;
      scratch = std::max(scratch, ref_.attention_scratch_bytes(a, 1));
    }
    e->steps.push_back(std::move(s));
  }

  // Where values live: the subgraph's boundary, device slots (PCIe), bf16 input copies (chip).
  std::vector<uint8_t> produced(nv, 0), read(nv, 0);
  for (ir::NodeId id : sg.nodes) {
    for (ir::ValueId o : g.nodes[id].outputs) produced[o] = 1;
    for (ir::ValueId v : g.nodes[id].inputs)
      if (v != ir::kNoValue && g.values[v].kind != ir::ValueKind::kWeight) read[v] = 1;
  }
  auto on_this_backend = [&](ir::NodeId node) {
    return !sg.same_backend.empty() && node < sg.same_backend.size() && sg.same_backend[node];
  };
  std::vector<uint8_t> in_sub(nn, 0), to_host(nv, 0);
  for (ir::NodeId id : sg.nodes) in_sub[id] = 1;
  for (ir::NodeId id = 0; id < nn; ++id)
    if (!in_sub[id] && !on_this_backend(id))
      for (ir::ValueId v : g.nodes[id].inputs)
        if (v != ir::kNoValue && produced[v]) to_host[v] = 1;
  for (ir::ValueId v : g.outputs)
    if (produced[v]) to_host[v] = 1;
  // The kv_write of each state (at most one), and whether this backend runs it.
  std::vector<ir::NodeId> writer(nv, ir::kNoNode);
  for (ir::NodeId id = 0; id < nn; ++id)
    if (g.nodes[id].op == ir::Op::kKvWrite) writer[g.nodes[id].inputs[0]] = id;
  e->place.assign(nv, Place{});
  uint64_t copies = 0;
  e->kernel_scratch = round_up(scratch, 64);
  for (ir::ValueId v = 0; v < nv; ++v) {
    const ir::Value& val = g.values[v];
    if (!produced[v] && !read[v]) continue;
    // A KV cache written here (or by another executable of this backend) stays in place: the
    // caller's memory on the chip, the state's device slot on a card (taken in at reshape,
    // written through by kv_write).
    const ir::ValueId st = ir::aliased_state(g, v);
    if (st != ir::kNoValue && writer[st] != ir::kNoNode &&
        (in_sub[writer[st]] || on_this_backend(writer[st]))) {
      if (e->pcie) {
        const uint64_t bytes =
            static_cast<uint64_t>(opts.max_extents[st].count()) * elem_bytes(g.values[st]);
        e->place[v] = {Loc::kDevice, device_slot(g, st, bytes)};
        if (v == st) e->states.push_back(st);  // the state is read only by its kv_write
      }
      continue;
    }
    const bool input = read[v] && !produced[v];
    const bool from_host =
        input && (val.kind == ir::ValueKind::kInput ||
                  (val.producer != ir::kNoNode && !on_this_backend(val.producer)));
    const uint64_t elem = elem_bytes(val);
    if (e->pcie) {
      e->place[v] = {Loc::kDevice,
                     device_slot(g, v, static_cast<uint64_t>(opts.max_extents[v].count()) * elem)};
      if (from_host) e->inputs.push_back({v, e->bf16 && is_float(val), elem});
      if (to_host[v]) e->outputs.push_back(v);
    } else if (from_host && e->bf16 && is_float(val)) {
      e->place[v] = {Loc::kScratch, e->kernel_scratch + copies};
      copies += round_up(static_cast<uint64_t>(opts.max_extents[v].count()) * 4, 64);
      e->inputs.push_back({v, true, 4});
    }
  }
  e->needs_.persistent_bytes = persistent;
  e->needs_.scratch_bytes = e->kernel_scratch + copies;
  e->needs_.device_bytes = e->pcie ? dev_bytes_ : 0;

  // One shape group per bucket: its modelled timing.
  std::vector<Step> cost_steps;
  for (const ExeStep& s : e->steps)
    cost_steps.push_back({s.id, {s.part.begin, s.part.end}, s.part.group});
  const size_t nb = std::max<size_t>(1, opts.buckets.size());
  for (size_t b = 0; b < nb; ++b) {
    const ir::Extents* ext = opts.buckets.empty() ? opts.max_extents : opts.buckets[b].data();
    LAYA_ASSIGN_OR_RETURN(CallTiming ct,
                          model_call(p_, g, cost_steps, ext, e->bf16, sg.same_backend));
    std::vector<double> ms;
    for (const StepTiming& st : ct.steps) ms.push_back(st.cost.modelled_ms);
    e->step_ms.push_back(std::move(ms));
    e->call_ms.push_back(ct.total_ms);
  }
  return std::unique_ptr<Executable>(std::move(e));
}

Status Ax8850Backend::load(Executable& exe, void* persistent, uint64_t bytes) {
  auto& e = static_cast<Ax8850Executable&>(exe);
  if (bytes < e.needs_.persistent_bytes)
    return status_error(StatusCode::kResourceExhausted,
                        "ax8850 load: persistent region has %llu bytes, %llu needed",
                        static_cast<unsigned long long>(bytes),
                        static_cast<unsigned long long>(e.needs_.persistent_bytes));
  uint8_t* base = static_cast<uint8_t*>(persistent);
  const ir::Graph& g = *e.graph;
  std::vector<float> scales;
  std::vector<uint16_t> rows;
  for (const Pack& pk : e.packs) {
    const ir::Value& w = g.values[pk.w];
    const size_t esize = w.dtype == ir::DType::kI8 ? 1 : 2;
    const uint8_t* src = w.data + static_cast<uint64_t>(pk.n0 * pk.k) * esize;
    const float* s = nullptr;
    if (w.dtype == ir::DType::kI8) {
      scales.resize(static_cast<size_t>(pk.np));
      for (int64_t r = 0; r < pk.np; ++r)
        scales[static_cast<size_t>(r)] =
            pk.expand_scales ? w.quant.scales[0] : w.quant.scales[static_cast<size_t>(pk.n0 + r)];
      s = scales.data();
    }
    if (pk.to_bf16) {  // s8 values are exact in bf16; the scales apply after the product
      rows.resize(static_cast<size_t>(pk.np * pk.k));
      for (size_t i = 0; i < rows.size(); ++i)
        rows[i] = kernels::f32_to_bf16(static_cast<float>(static_cast<int8_t>(src[i])));
      pk.mm.pack(rows.data(), nullptr, pk.np, pk.k, base + pk.offset);
      std::memcpy(base + pk.scales_offset, scales.data(), scales.size() * 4);
    } else {
      pk.mm.pack(src, s, pk.np, pk.k, base + pk.offset);
    }
  }
  for (const Ax8850Executable::ScaleTable& t : e.scale_tables) {
    float* dst = reinterpret_cast<float*>(base + t.offset);
    std::fill(dst, dst + t.rows, g.values[t.value].quant.scales[0]);
  }
  e.persistent = base;
  if (e.pcie && dev_cap_ < dev_bytes_) {  // the card's memory, sized for every slot so far
    dev_.reset(static_cast<uint8_t*>(std::aligned_alloc(64, round_up(dev_bytes_, 64))));
    if (!dev_) {
      dev_cap_ = 0;
      return status_error(StatusCode::kResourceExhausted,
                          "ax8850 load: cannot allocate %llu bytes of device memory",
                          static_cast<unsigned long long>(dev_bytes_));
    }
    std::memset(dev_.get(), 0, dev_bytes_);
    dev_cap_ = dev_bytes_;
    std::fill(dev_host_.begin(), dev_host_.end(), nullptr);  // resident states: taken in again
  }
  if (e.precompiled) ++counters_.precompiled;
  return Status::ok();
}

Status Ax8850Backend::reshape(Executable& exe, const TensorBinding* values, int bucket) {
  auto& e = static_cast<Ax8850Executable&>(exe);
  if (bucket < 0 || static_cast<size_t>(bucket) >= e.step_ms.size())
    bucket = 0;  // a session without buckets: the prepare-time shapes
  e.bucket = bucket;
  uint64_t scratch = 0;
  for (ExeStep& s : e.steps) {
    const ir::Extents& x = values[s.in[0]].extents;
    s.rows = x.rank > 0 ? x.rows() : 1;
    s.count = x.count();
    switch (s.op) {
      case ir::Op::kKvWrite:
        s.rows = values[s.in[1]].extents.rows();
        s.count = x.d[1];
        break;
      case ir::Op::kEmbedding:
        s.count = values[s.in[1]].extents.count();
        break;
      case ir::Op::kAdd:
      case ir::Op::kMul:
        s.count_b = values[s.in[1]].extents.count();
        break;
      case ir::Op::kRope:
        s.rows = x.d[0] * x.d[1];
        break;
      case ir::Op::kMatMul:
        if (s.rows > 0) scratch = std::max(scratch, s.mm.scratch_bytes(s.rows, s.np, s.k, 1));
        break;
      case ir::Op::kAttention: {
        const ir::Extents &q = x, &k = values[s.in[1]].extents;
        kernels::AttentionArgs& a = s.att;
        const int64_t qw = q.d[2], kw = k.d[2];
        const int64_t kb = k.d[0] == q.d[0] ? 1 : 0;  // keys of batch 1 are shared by every row
        a.batch = q.d[0];
        a.q_len = q.d[1];
        a.kv_len = k.d[1];
        a.q_row_stride = a.out_row_stride = qw;
        a.q_batch_stride = a.out_batch_stride = q.d[1] * qw;
        a.k_row_stride = a.v_row_stride = kw;
        a.k_batch_stride = a.v_batch_stride = kb * k.d[1] * kw;
        a.mask_batch_stride = a.k_pos_batch_stride = a.k_seq_batch_stride = kb * k.d[1];
        a.q_pos_batch_stride = a.q_seq_batch_stride = q.d[1];
        a.n_heads = s.attrs.n_heads;
        a.n_kv_heads = s.attrs.n_kv_heads;
        a.head_dim = s.attrs.head_dim;
        a.scale = s.attrs.scale != 0.0f ? s.attrs.scale
                                        : 1.0f / std::sqrt(static_cast<float>(s.attrs.head_dim));
        a.causal = s.attrs.mask == ir::MaskKind::kCausal;
        a.window = s.attrs.window;
        a.kv_type = s.kv_type;
        scratch = std::max(scratch, ref_.attention_scratch_bytes(a, 1));
        break;
      }
      default:
        break;
    }
  }
  // Resident states in new memory (the first reshape, or the session bound other states): take
  // them in whole.
  for (ir::ValueId st : e.states)
    if (dev_host_[st] != values[st].data) take_in(st, values[st], 0, values[st].extents.d[1]);
  // The bf16 input copies sit after the largest kernel scratch: with them, all of it is in use.
  e.reshaped_scratch_ =
      e.needs_.scratch_bytes > e.kernel_scratch ? e.needs_.scratch_bytes : round_up(scratch, 64);
  return Status::ok();
}

void round_bf16(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = kernels::bf16_to_f32(kernels::f32_to_bf16(x[i]));
}

Status Ax8850Backend::run_step(const Ax8850Executable& e, const ExeStep& s,
                               const ExecContext& ctx) const {
  auto f32 = [&](ir::ValueId v) { return static_cast<float*>(ptr(e, ctx, v)); };
  auto i32 = [&](ir::ValueId v) { return static_cast<int32_t*>(ptr(e, ctx, v)); };
  auto in = [&](size_t i) { return i < s.in.size() ? s.in[i] : ir::kNoValue; };
  auto opt = [&](size_t i) { return in(i) == ir::kNoValue ? nullptr : f32(in(i)); };
  switch (s.op) {
    case ir::Op::kEmbedding: {
      const float* scales = s.expand
                                ? reinterpret_cast<const float*>(e.persistent + s.expanded_scales)
                                : s.row_scales;
      const int32_t* ids = i32(in(1));
      const int64_t bad = ref_.embedding(s.etype, s.table, scales, s.vocab, s.dim, ids, s.count,
                                         f32(s.outs[0]), nullptr);
      if (bad >= 0)
        return status_error(StatusCode::kIndexOutOfRange,
                            "embedding '%s' (node %u): id %d at position %lld is outside [0, %lld)",
                            e.graph->nodes[s.id].name.c_str(), s.id, ids[bad],
                            static_cast<long long>(bad), static_cast<long long>(s.vocab));
      return Status::ok();
    }
    case ir::Op::kMatMul: {
      float* y = f32(s.outs[0]) + s.n0;
      const float* bias = opt(2);
      if (bias != nullptr) bias += s.n0;
      s.mm.run(e.persistent + s.packed_offset, f32(in(0)), s.k, y, s.n_total,
               s.scale_after ? nullptr : bias, s.rows, s.np, s.k, ctx.scratch, nullptr);
      if (s.scale_after) {
        const float* sc = reinterpret_cast<const float*>(e.persistent + s.scales_offset);
        for (int64_t r = 0; r < s.rows; ++r)
          for (int64_t j = 0; j < s.np; ++j) {
            const float v = y[r * s.n_total + j] * sc[j];
            y[r * s.n_total + j] = bias != nullptr ? v + bias[j] : v;
          }
      }
      return Status::ok();
    }
    case ir::Op::kAdd:
    case ir::Op::kMul:
      ref_.binary(s.op == ir::Op::kAdd ? kernels::Binary::kAdd : kernels::Binary::kMul, f32(in(0)),
                  f32(in(1)), f32(s.outs[0]), s.count, s.count_b, nullptr);
      return Status::ok();
    case ir::Op::kLayerNorm:
      ref_.layernorm(f32(in(0)), f32(in(1)), opt(2), f32(s.outs[0]), s.rows, s.count / s.rows,
                     s.attrs.eps, nullptr);
      return Status::ok();
    case ir::Op::kRmsNorm:
      ref_.rmsnorm(f32(in(0)), f32(in(1)), f32(s.outs[0]), s.rows, s.count / s.rows, s.attrs.eps,
                   nullptr);
      return Status::ok();
    case ir::Op::kRope: {
      const int32_t hd = s.attrs.head_dim;
      const int64_t width = s.count / std::max<int64_t>(1, s.rows);
      ref_.rope(f32(in(0)), f32(s.outs[0]), i32(in(1)), s.rows, static_cast<int32_t>(width / hd),
                hd, s.attrs.rotary_dim == 0 ? hd : s.attrs.rotary_dim, s.attrs.rope_theta,
                s.attrs.rope_mode, nullptr);
      return Status::ok();
    }
    case ir::Op::kAttention: {
      kernels::AttentionArgs a = s.att;
      a.q = f32(in(0));
      a.k = ptr(e, ctx, in(1));  // f32 or f16 (a.kv_type)
      a.v = ptr(e, ctx, in(2));
      auto opt_i32 = [&](size_t i) { return in(i) == ir::kNoValue ? nullptr : i32(in(i)); };
      a.key_mask = opt_i32(3);
      a.q_pos = opt_i32(4);
      a.k_pos = opt_i32(5);
      a.q_seq = opt_i32(6);
      a.k_seq = opt_i32(7);
      a.out = f32(s.outs[0]);
      const bool whole = s.part.begin == 0 && s.part.end == 0;
      ref_.attention(a, whole ? 0 : static_cast<int32_t>(s.part.begin),
                     whole ? a.n_heads : static_cast<int32_t>(s.part.end), ctx.scratch, nullptr);
      return Status::ok();
    }
    case ir::Op::kKvWrite: {
      // The rows go into the cache where it lives and, on a card, through to the caller's memory
      // too (hal.h "States").
      const int32_t* cells = i32(in(2));
      LAYA_RETURN_IF_ERROR(kv_write_check(*e.graph, s.id, cells, s.rows, s.count));
      void* const cache = ptr(e, ctx, s.outs[0]);
      kv_write_rows(ref_, s.kv_type, f32(in(1)), s.rows, s.dim, cells, cache);
      if (ctx.values[s.outs[0]].data != cache)
        kv_write_rows(ref_, s.kv_type, f32(in(1)), s.rows, s.dim, cells,
                      ctx.values[s.outs[0]].data);
      return Status::ok();
    }
    case ir::Op::kGelu:
      ref_.unary(s.attrs.act, f32(in(0)), f32(s.outs[0]), s.count, nullptr);
      return Status::ok();
    case ir::Op::kSilu:
      ref_.unary(ir::ActKind::kSilu, f32(in(0)), f32(s.outs[0]), s.count, nullptr);
      return Status::ok();
    case ir::Op::kRelu:
      ref_.unary(ir::ActKind::kRelu, f32(in(0)), f32(s.outs[0]), s.count, nullptr);
      return Status::ok();
    case ir::Op::kSoftmax:
      ref_.softmax(f32(in(0)), f32(s.outs[0]), s.rows, s.count / s.rows, nullptr);
      return Status::ok();
    case ir::Op::kGlu:
      ref_.glu(s.attrs.act, f32(in(0)), f32(s.outs[0]), s.rows, s.count / s.rows / 2, nullptr);
      return Status::ok();
    case ir::Op::kSplit: {
      const float* x = f32(in(0));
      const int64_t dim = s.count / std::max<int64_t>(1, s.rows);
      int64_t col = 0;
      for (size_t i = 0; i < s.outs.size(); ++i) {
        const int64_t w = s.attrs.sizes[i];
        float* y = f32(s.outs[i]);
        for (int64_t r = 0; r < s.rows; ++r)
          std::memcpy(y + r * w, x + r * dim + col, static_cast<size_t>(w) * sizeof(float));
        col += w;
      }
      return Status::ok();
    }
    default:
      break;
  }
  return status_error(StatusCode::kInternal, "ax8850 execute: op %s", ir::op_name(s.op));
}

Status Ax8850Backend::execute(Executable& exe, const ExecContext& ctx) {
  auto& e = static_cast<Ax8850Executable&>(exe);
  const ir::Graph& g = *e.graph;
  uint64_t h2d = 0, d2h = 0;
  // Inputs onto the device (PCIe) or into bf16 copies (chip, bf16 mode).
  for (const Boundary& b : e.inputs) {
    const ir::Extents& ext = ctx.values[b.v].extents;
    const int64_t n = ext.count();
    void* dst = ptr(e, ctx, b.v);
    std::memcpy(dst, ctx.values[b.v].data, static_cast<size_t>(n) * b.elem);
    if (b.round) round_bf16(static_cast<float*>(dst), n);
    h2d += device_bytes(g, b.v, ext);
  }
  for (size_t i = 0; i < e.steps.size(); ++i) {
    const ExeStep& s = e.steps[i];
    LAYA_RETURN_IF_ERROR(run_step(e, s, ctx));
    if (s.op == ir::Op::kKvWrite) {  // the cache keeps its dtype; its new rows went through
      if (e.pcie)
        d2h += static_cast<uint64_t>(s.rows * s.dim) * (s.kv_type == kernels::KvType::kF16 ? 2 : 4);
    } else if (e.bf16 && s.last_part) {
      for (ir::ValueId o : s.outs)
        round_bf16(static_cast<float*>(ptr(e, ctx, o)), ctx.values[o].extents.count());
    }
    if (ctx.profile != nullptr && ctx.profile->on_node != nullptr)
      ctx.profile->on_node(ctx.profile->user, s.id, e.step_ms[static_cast<size_t>(e.bucket)][i],
                           true);
  }
  for (ir::ValueId v : e.outputs) {  // back to the host (PCIe)
    const ir::Extents& ext = ctx.values[v].extents;
    std::memcpy(ctx.values[v].data, ptr(e, ctx, v), static_cast<size_t>(ext.count()) * 4);
    d2h += device_bytes(g, v, ext);
  }
  ++counters_.calls;
  if (e.pcie) {
    counters_.h2d_bytes += h2d;
    counters_.d2h_bytes += d2h;
  }
  counters_.modelled_ms += e.call_ms[static_cast<size_t>(e.bucket)];
  return Status::ok();
}

Status Ax8850Backend::state_written(Executable& exe, const TensorBinding* values, ir::ValueId state,
                                    int64_t first_row, int64_t n_rows) {
  auto& e = static_cast<Ax8850Executable&>(exe);
  if (std::find(e.states.begin(), e.states.end(), state) == e.states.end())
    return Status::ok();  // not resident here: the caller's memory is the only copy
  const TensorBinding& host = values[state];
  if (first_row < 0 || n_rows < 0 || first_row + n_rows > host.extents.d[1])
    return status_error(
        StatusCode::kInvalidArgument, "ax8850: rows [%lld, %lld) of state '%s' with %lld rows",
        static_cast<long long>(first_row), static_cast<long long>(first_row + n_rows),
        e.graph->values[state].name.c_str(), static_cast<long long>(host.extents.d[1]));
  if (dev_host_[state] != host.data)
    take_in(state, host, 0, host.extents.d[1]);  // new memory: all of it
  else
    take_in(state, host, first_row, n_rows);
  return Status::ok();
}

Result<std::unique_ptr<Backend>> create(const BackendOptions& opts) {
  Params p = params_ax8850();
  for (const auto& [key, value] : opts.settings)
    if (key == "chip") LAYA_RETURN_IF_ERROR(params_set(&p, key, value));
  for (const auto& [key, value] : opts.settings)
    if (key != "chip") LAYA_RETURN_IF_ERROR(params_set(&p, key, value));
  return std::unique_ptr<Backend>(new Ax8850Backend(p));
}

bool is_ax8850(const Backend& b) {
  return std::strcmp(b.capabilities().name, "ax8850") == 0;
}

}  // namespace

Result<DeviceCounters> device_counters(const Backend& b) {
  if (!is_ax8850(b))
    return status_error(StatusCode::kInvalidArgument, "backend '%s' is not ax8850",
                        b.capabilities().name);
  return static_cast<const Ax8850Backend&>(b).counters();
}

Result<Params> backend_params(const Backend& b) {
  if (!is_ax8850(b))
    return status_error(StatusCode::kInvalidArgument, "backend '%s' is not ax8850",
                        b.capabilities().name);
  return static_cast<const Ax8850Backend&>(b).params();
}

std::string subgraph_key(const Subgraph& sg) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "nodes %u..%u x%zu #%016llx",
                sg.nodes.empty() ? 0u : sg.nodes.front(), sg.nodes.empty() ? 0u : sg.nodes.back(),
                sg.nodes.size(), static_cast<unsigned long long>(fnv1a(step_bytes(sg))));
  return buf;
}

std::vector<uint8_t> compile_blob(const Subgraph& sg) {
  const std::vector<uint8_t> body = step_bytes(sg);
  const uint32_t v = kBlobVersion;
  std::vector<uint8_t> out(sizeof kMagic + sizeof v + body.size());
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  std::memcpy(out.data() + sizeof kMagic, &v, sizeof v);
  if (!body.empty()) std::memcpy(out.data() + sizeof kMagic + sizeof v, body.data(), body.size());
  return out;
}

}  // namespace ax8850

void ax8850_register(Registry& r) {
  BackendInfo info;
  info.name = "ax8850";
  info.create = ax8850::create;
  (void)r.add(info);
}

}  // namespace laya::hal
