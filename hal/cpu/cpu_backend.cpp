// The CPU backend: every op of ir/ops.inc on the kernel table (kernels/kernels.h), threads from a
// oneTBB arena (thread_pool.h). See README.md for the phases and the memory layout.
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "hal/cpu/thread_pool.h"
#include "hal/hal.h"
#include "hal/kv_write.h"
#include "ir/shape_infer.h"
#include "kernels/kernels.h"

namespace laya::hal {
namespace cpu {
namespace {

// Norm weights up to this size are copied (Step::norm_offset): 4 bytes per channel, so every
// model's; a larger one stays where the graph has it.
constexpr uint64_t kNormCopyMaxBytes = 64 * 1024;

uint64_t round_up(uint64_t v, uint64_t a) {
  return (v + a - 1) / a * a;
}

// The kernel weight type of a matmul / embedding weight, or false with the reason (the rules are
// ir::weight_format_check's; the kernel weight types carry the dtypes' names, kernels/matmul.inc,
// but for i8w, which has no dtype: i8 weights run it through the int8_activations setting).
bool weight_type(const ir::Value& w, kernels::WType* t, std::string* why) {
  if (Status s = ir::weight_format_check(w.dtype, w.quant); !s.is_ok()) {
    *why = s.message();
    return false;
  }
  switch (w.dtype) {
#define LAYA_CPU_WTYPE(Name)      \
  case ir::DType::k##Name:        \
    *t = kernels::WType::k##Name; \
    return true;
    LAYA_CPU_WTYPE(F32)
    LAYA_CPU_WTYPE(F16)
    LAYA_CPU_WTYPE(BF16)
    LAYA_CPU_WTYPE(I8)
    LAYA_CPU_WTYPE(Q8_0)
    LAYA_CPU_WTYPE(Q4_0)
    LAYA_CPU_WTYPE(Q4_1)
    LAYA_CPU_WTYPE(Q4_K)
    LAYA_CPU_WTYPE(Q5_K)
    LAYA_CPU_WTYPE(Q6_K)
    LAYA_CPU_WTYPE(Q5_0)
    LAYA_CPU_WTYPE(Q5_1)
#undef LAYA_CPU_WTYPE
    default:
      *why = std::string(ir::dtype_name(w.dtype)) + " weights: no kernel";
      return false;
  }
}

// One node, ready to run: kernel choices and weight locations from prepare, argument values from
// the last reshape.
struct Step {
  ir::Op op = ir::Op::kAdd;
  ir::NodeId id = 0;
  ir::ValueId in[8] = {ir::kNoValue, ir::kNoValue, ir::kNoValue, ir::kNoValue,
                       ir::kNoValue, ir::kNoValue, ir::kNoValue, ir::kNoValue};  // absent: kNoValue
  ir::ValueId out = ir::kNoValue;
  std::vector<ir::ValueId> outs;  // split
  std::vector<ir::ValueId> ins;   // concat
  ir::Attrs attrs;

  // matmul / embedding weights
  kernels::WType wtype = kernels::WType::kF32;
  kernels::MatmulKernel mm;
  int64_t n = 0, k = 0;
  int packed = -1;           // matmul: index into CpuExecutable::packed
  uint64_t part_offset = 0;  // matmul in a stack: its weight's bytes inside the stack
  int64_t part_row = 0;      // ... and its first row there
  int stack = 0;  // matmul leading a stack: the steps a GEMV (m == 1) runs as one, itself first
  uint64_t scales_offset = 0;         // embedding i8 per-tensor: expanded scales in persistent
  const float* row_scales = nullptr;  // embedding i8 per-row: the graph's scales
  const void* table = nullptr;        // embedding: the graph's weight bytes (never copied)

  // from reshape
  int64_t rows = 0, dim = 0, count = 0, count_b = 0;
  kernels::AttentionArgs att;  // shapes, strides and flags; pointers bound at execute
  // rmsnorm / layernorm: their constant weights (inputs 1 and 2), copied into persistent at load
  // (offset, bytes; bytes 0: read from the graph) (README.md, "Norm weights").
  uint64_t norm_offset[2] = {0, 0}, norm_bytes[2] = {0, 0};
  // attention: k / v's dtype; kv_write: the state's (f16: rows are rounded on write)
  kernels::KvType kv_type = kernels::KvType::kF32;
};

// A weight packed by load(): into the persistent region at `offset`, or taken from the device's
// WeightCache (`cached`). A stack (README.md, "Stacked GEMVs") is the weights of consecutive
// matmuls that share x, packed end to end (MatmulKernel::stack_rows): `parts` lists them, `n` is
// their rows together, and their biases, if any, are stacked at `bias_offset` in persistent.
struct Packed {
  ir::ValueId value = ir::kNoValue;  // one weight (kNoValue for a stack)
  kernels::WType type = kernels::WType::kF32;
  kernels::MatmulKernel mm;
  int64_t n = 0, k = 0;
  uint64_t offset = 0, bytes = 0;
  struct Part {
    ir::ValueId weight, bias;  // bias: kNoValue or a constant f32 [n]
    int64_t n;
  };
  std::vector<Part> parts;
  bool stacked_bias = false;
  uint64_t bias_offset = 0;
  bool expand_scales = false;     // i8 per-tensor: one scale repeated per row
  const uint8_t* data = nullptr;  // set by load()
  bool cached = false;            // `data` is a WeightCache reference this executable holds
};

class CpuExecutable final : public Executable {
 public:
  ~CpuExecutable() override { release(); }
  // Drops the cache references of the last load().
  void release() {
    for (Packed& p : packed) {
      if (p.cached && p.data != nullptr) cache->release(p.data);
      p.data = nullptr;
    }
  }
  MemoryNeeds needs() const override { return needs_; }
  uint64_t reshaped_scratch_bytes() const override { return reshaped_scratch_; }

  const ir::Graph* graph = nullptr;
  std::vector<Step> steps;
  std::vector<Packed> packed;
  struct ScaleTable {
    ir::ValueId value;
    uint64_t offset;
    int64_t rows;
  };
  std::vector<ScaleTable> scale_tables;  // embedding i8 per-tensor
  MemoryNeeds needs_;
  uint64_t reshaped_scratch_ = 0;
  uint8_t* persistent = nullptr;  // set by load()
  WeightCache* cache = nullptr;   // borrowed from the backend's SharedResources
};

class CpuBackend final : public Backend {
 public:
  // The roofline the cpu's estimate() uses (settings model_gflops, model_gbps, model_op_us).
  struct CostModel {
    double gflops = 50.0;  // f32 GFLOP/s the kernels reach with all threads
    double gbps = 15.0;    // GB/s of memory traffic
    double op_us = 2.0;    // fixed cost per node
  };

  CpuBackend(const kernels::KernelTable& table, int n_threads, WeightCache* cache,
             const CostModel& cost)
      : table_(table), pool_(ArenaPool::shared(), n_threads), cache_(cache), cost_(cost) {
    description_ = std::string("CPU: ") + table_.isa + " kernels, " +
                   std::to_string(pool_.n_threads()) + " of " +
                   std::to_string(pool_.pool().n_threads()) +
                   " thread(s) in the process's oneTBB arena" +
                   (cache_ != nullptr ? ", packed weights shared" : "");
    caps_.name = "cpu";
    caps_.description = description_.c_str();
    caps_.n_groups = static_cast<uint32_t>(pool_.n_threads());
    for (ir::DType d : {ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16, ir::DType::kI8,
                        ir::DType::kQ8_0, ir::DType::kQ4_0, ir::DType::kQ4_1, ir::DType::kQ5_0,
                        ir::DType::kQ5_1, ir::DType::kQ4_K, ir::DType::kQ5_K, ir::DType::kQ6_K})
      caps_.weight_dtypes |= uint64_t{1} << static_cast<int>(d);
    caps_.memory_kinds = 1u << static_cast<int>(MemoryKind::kHost);
    caps_.modelled_time = false;
  }

  const Capabilities& capabilities() const override { return caps_; }
  Status supports(const ir::Graph& g, const ir::Node& n, const ir::Extents*) const override;
  Result<Estimate> estimate(const Subgraph& sg, const ir::Extents* extents,
                            ir::DType activations) const override;
  Result<std::unique_ptr<Executable>> prepare(const Subgraph& sg,
                                              const PrepareOptions& opts) override;
  Status load(Executable& exe, void* persistent, uint64_t bytes) override;
  Status reshape(Executable& exe, const TensorBinding* values, int bucket) override;
  Status execute(Executable& exe, const ExecContext& ctx) override;

 private:
  uint64_t step_scratch(const Step& s, const ir::Extents* ext) const;
  void set_args(Step& s, const TensorBinding* v) const;
  Status run_step(const CpuExecutable& e, const Step& s, const ExecContext& ctx) const;
  uint64_t stack_scratch(const Packed& p) const;
  void run_stack(const CpuExecutable& e, size_t first, const ExecContext& ctx) const;

  kernels::KernelTable table_;
  PoolLease pool_;
  WeightCache* cache_ = nullptr;  // borrowed (BackendOptions::shared); null: pack into persistent
  CostModel cost_;
  std::string description_;
  Capabilities caps_;
};

Status unsupported(const ir::Node& n, const std::string& why) {
  return status_error(StatusCode::kUnsupported, "%s '%s': %s", ir::op_name(n.op), n.name.c_str(),
                      why.c_str());
}

Status CpuBackend::supports(const ir::Graph& g, const ir::Node& n,
                            const ir::Extents* max_extents) const {
  if (static_cast<uint32_t>(n.op) >= static_cast<uint32_t>(ir::Op::kCount))
    return status_error(StatusCode::kUnsupported, "unknown op %u", static_cast<unsigned>(n.op));
  const ir::OpInfo& info = ir::op_info(n.op);
  const int n_in = static_cast<int>(n.inputs.size());
  if (n_in < info.min_inputs || n_in > info.max_inputs) return unsupported(n, "bad input count");
  for (ir::ValueId v : n.inputs)
    if (v != ir::kNoValue && v >= g.values.size())
      return unsupported(n, "input value out of range");
  auto dtype_is = [&](int i, ir::DType d) { return g.values[n.inputs[i]].dtype == d; };
  // Every op reads f32 data except the index inputs listed here.
  auto want_f32 = [&](int first) -> Status {
    for (int i = first; i < n_in; ++i) {
      if (n.inputs[i] == ir::kNoValue) continue;
      const bool index = (n.op == ir::Op::kRope && i == 1) ||
                         (n.op == ir::Op::kAttention && i >= 3) ||
                         (n.op == ir::Op::kKvWrite && i == 2) ||
                         (i == 1 && (n.op == ir::Op::kGather || n.op == ir::Op::kMaskedFill ||
                                     n.op == ir::Op::kSegmentMean || n.op == ir::Op::kActFeatures));
      const ir::DType want = index ? ir::DType::kI32 : ir::DType::kF32;
      // An f16 KV cache: kv_write's state, attention's k and v (both; the verifier checked).
      const bool kv_f16 =
          dtype_is(i, ir::DType::kF16) && ((n.op == ir::Op::kKvWrite && i == 0) ||
                                           (n.op == ir::Op::kAttention && (i == 1 || i == 2)));
      if (!kv_f16 && !dtype_is(i, want))
        return unsupported(n, std::string("input ") + std::to_string(i) + " is " +
                                  ir::dtype_name(g.values[n.inputs[i]].dtype) + ", expected " +
                                  ir::dtype_name(want));
    }
    return Status::ok();
  };
  switch (n.op) {
    case ir::Op::kEmbedding: {
      const ir::Value& table = g.values[n.inputs[0]];
      if (table.kind != ir::ValueKind::kWeight || table.shape.rank != 2)
        return unsupported(n, "the table must be a constant [V, D] weight");
      kernels::WType t;
      std::string why;
      if (!weight_type(table, &t, &why)) return unsupported(n, why);
      if (!dtype_is(1, ir::DType::kI32)) return unsupported(n, "ids must be i32");
      return Status::ok();
    }
    case ir::Op::kMatMul: {
      const ir::Value& w = g.values[n.inputs[1]];
      if (w.kind != ir::ValueKind::kWeight || w.shape.rank != 2)
        return unsupported(n, "the weight must be a constant [N, K] (it is packed at load)");
      kernels::WType t;
      std::string why;
      if (!weight_type(w, &t, &why)) return unsupported(n, why);
      const int64_t rows = w.shape.dims[0].c, k = w.shape.dims[1].c;
      const kernels::MatmulKernel& mm = table_.matmul[static_cast<int>(t)];
      if (mm.run == nullptr || mm.packed_bytes(rows, k) == 0)
        return unsupported(n, std::string(kernels::wtype_name(t)) + " weights [" +
                                  std::to_string(rows) + ", " + std::to_string(k) +
                                  "]: no kernel for this layout (block types need K % 32 == 0, "
                                  "K-quants K % 256 == 0)");
      if (!dtype_is(0, ir::DType::kF32)) return unsupported(n, "x must be f32");
      if (n_in == 3 && !dtype_is(2, ir::DType::kF32)) return unsupported(n, "bias must be f32");
      return Status::ok();
    }
    case ir::Op::kAttention:
    case ir::Op::kGelu:
    case ir::Op::kGlu:
      return want_f32(0);  // attribute values were checked by the verifier
    case ir::Op::kKvWrite:
      if (g.values[n.inputs[0]].kind != ir::ValueKind::kState)
        return unsupported(n, "the cache must be a state value");
      // Cells are i32 indices, so a larger cache has cells no kv_write can name.
      if (max_extents != nullptr && max_extents[n.inputs[0]].d[1] > INT32_MAX)
        return unsupported(n, std::to_string(max_extents[n.inputs[0]].d[1]) +
                                  " cache cells: i32 cell indices reach 2^31 - 1");
      return want_f32(0);
    case ir::Op::kAdd:
    case ir::Op::kMul:
    case ir::Op::kLayerNorm:
    case ir::Op::kRmsNorm:
    case ir::Op::kRope:
    case ir::Op::kSilu:
    case ir::Op::kRelu:
    case ir::Op::kSoftmax:
    case ir::Op::kGather:
    case ir::Op::kReshape:
      // They move 4-byte elements: f32 data, or i32 positions / sequence ids.
      return dtype_is(0, ir::DType::kI32) ? want_f32(1) : want_f32(0);
    case ir::Op::kSplit:
    case ir::Op::kConcat:
    case ir::Op::kMaskedFill:
    case ir::Op::kSegmentMean:
    case ir::Op::kActFeatures:
      return want_f32(0);
    case ir::Op::kCount:
      break;
  }
  return unsupported(n, "unknown op");
}

Result<std::unique_ptr<Executable>> CpuBackend::prepare(const Subgraph& sg,
                                                        const PrepareOptions& opts) {
  if (sg.graph == nullptr || opts.max_extents == nullptr)
    return status_error(StatusCode::kInvalidArgument, "cpu prepare: no graph or max extents");
  for (const NodePart& p : sg.parts)
    if (p.begin != 0 || p.end != 0)
      return status_error(StatusCode::kInvalidArgument, "cpu prepare: the cpu runs whole nodes");
  if (opts.activations != ir::DType::kF32)
    return status_error(StatusCode::kInvalidArgument, "cpu prepare: activations are f32, not %s",
                        ir::dtype_name(opts.activations));
  const ir::Graph& g = *sg.graph;
  auto e = std::make_unique<CpuExecutable>();
  e->graph = &g;
  e->cache = cache_;
  uint64_t persistent = 0, scratch = 0, shared = 0;
  auto reserve = [&](uint64_t bytes) {
    persistent = round_up(persistent, persistent_alignment(bytes));
    const uint64_t at = persistent;
    persistent += round_up(bytes, 64);
    return at;
  };
  for (ir::NodeId id : sg.nodes) {
    if (id >= g.nodes.size())
      return status_error(StatusCode::kInvalidArgument, "cpu prepare: node %u out of range", id);
    const ir::Node& n = g.nodes[id];
    LAYA_RETURN_IF_ERROR(supports(g, n, nullptr));
    Step s;
    s.op = n.op;
    s.id = id;
    for (size_t i = 0; i < n.inputs.size() && i < 8; ++i) s.in[i] = n.inputs[i];
    s.out = n.outputs.empty() ? ir::kNoValue : n.outputs[0];
    if (n.op == ir::Op::kSplit) s.outs = n.outputs;
    if (n.op == ir::Op::kConcat) s.ins = n.inputs;
    s.attrs = n.attrs;
    if ((n.op == ir::Op::kAttention && g.values[n.inputs[1]].dtype == ir::DType::kF16) ||
        (n.op == ir::Op::kKvWrite && g.values[n.inputs[0]].dtype == ir::DType::kF16))
      s.kv_type = kernels::KvType::kF16;
    s.att.kv_type = s.kv_type;
    if (n.op == ir::Op::kMatMul || n.op == ir::Op::kEmbedding) {
      const ir::ValueId wid = n.inputs[n.op == ir::Op::kMatMul ? 1 : 0];
      const ir::Value& w = g.values[wid];
      std::string why;
      (void)weight_type(w, &s.wtype, &why);
      s.n = w.shape.dims[0].c;
      s.k = w.shape.dims[1].c;
      if (n.op == ir::Op::kMatMul) {
        s.mm = table_.matmul[static_cast<int>(s.wtype)];  // packed below
      } else {
        s.table = w.data;
        if (s.wtype == kernels::WType::kI8) {
          if (w.quant.kind == ir::QuantKind::kPerTensor) {
            s.scales_offset = reserve(static_cast<uint64_t>(s.n) * sizeof(float));
            e->scale_tables.push_back({wid, s.scales_offset, s.n});
          } else {
            s.row_scales = w.quant.scales.data();
          }
        }
      }
    }
    if (n.op == ir::Op::kRmsNorm || n.op == ir::Op::kLayerNorm) {
      for (size_t j = 0; j < 2 && j + 1 < n.inputs.size(); ++j) {
        if (n.inputs[j + 1] == ir::kNoValue) continue;
        const ir::Value& w = g.values[n.inputs[j + 1]];
        if (w.kind != ir::ValueKind::kWeight || w.data == nullptr || w.nbytes > kNormCopyMaxBytes)
          continue;
        s.norm_offset[j] = reserve(w.nbytes);
        s.norm_bytes[j] = w.nbytes;
      }
    }
    scratch = std::max(scratch, step_scratch(s, opts.max_extents));
    e->steps.push_back(std::move(s));
  }
  // Matmul weights: stacks of consecutive matmuls sharing x (same type and k, every weight but
  // the last a multiple of stack_rows rows, biases absent or constant), else one packing per
  // weight (a weight shared by two matmuls outside stacks is packed once).
  auto stackable = [&](const Step& a, const Step& b) {
    const auto const_bias = [&](const Step& t) {
      if (t.in[2] == ir::kNoValue) return true;
      const ir::Value& bv = g.values[t.in[2]];
      return bv.kind == ir::ValueKind::kWeight && bv.dtype == ir::DType::kF32 &&
             bv.shape.rank == 1 && bv.shape.dims[0].c == t.n && bv.data != nullptr;
    };
    return b.op == ir::Op::kMatMul && b.in[0] == a.in[0] && b.wtype == a.wtype && b.k == a.k &&
           a.mm.stack_rows > 0 && const_bias(a) && const_bias(b);
  };
  for (size_t i = 0; i < e->steps.size(); ++i) {
    Step& s = e->steps[i];
    if (s.op != ir::Op::kMatMul) continue;
    size_t j = i + 1;
    while (j < e->steps.size() && stackable(s, e->steps[j]) &&
           e->steps[j - 1].n % s.mm.stack_rows == 0)
      ++j;
    Packed p;
    p.type = s.wtype;
    p.mm = s.mm;
    p.k = s.k;
    if (j - i > 1) {
      for (size_t t = i; t < j; ++t) {
        Step& m = e->steps[t];
        m.packed = static_cast<int>(e->packed.size());
        m.part_offset = s.mm.packed_bytes(p.n, s.k);  // 0 for the first
        m.part_row = p.n;
        p.parts.push_back({m.in[1], m.in[2], m.n});
        p.n += m.n;
        p.stacked_bias = p.stacked_bias || m.in[2] != ir::kNoValue;
      }
      s.stack = static_cast<int>(j - i);
    } else {
      const ir::ValueId wid = s.in[1];
      auto it = std::find_if(e->packed.begin(), e->packed.end(),
                             [&](const Packed& q) { return q.value == wid; });
      if (it != e->packed.end()) {
        s.packed = static_cast<int>(it - e->packed.begin());
        continue;
      }
      s.packed = static_cast<int>(e->packed.size());
      p.value = wid;
      p.n = s.n;
      p.expand_scales = g.values[wid].quant.kind == ir::QuantKind::kPerTensor;
    }
    p.bytes = s.mm.packed_bytes(p.n, p.k);
    if (cache_ != nullptr)
      shared += p.bytes;
    else
      p.offset = reserve(p.bytes);
    if (p.stacked_bias) p.bias_offset = reserve(static_cast<uint64_t>(p.n) * sizeof(float));
    if (s.stack > 1) scratch = std::max(scratch, stack_scratch(p));
    e->packed.push_back(std::move(p));
    i = j - 1;
  }
  e->needs_.persistent_bytes = persistent;
  e->needs_.shared_bytes = shared;
  e->needs_.scratch_bytes = round_up(scratch, 64);
  e->reshaped_scratch_ = 0;
  return std::unique_ptr<Executable>(std::move(e));
}

// A stack's GEMV: its output rows (the stack's n), then the kernel's scratch.
uint64_t CpuBackend::stack_scratch(const Packed& p) const {
  return round_up(static_cast<uint64_t>(p.n) * sizeof(float), 64) +
         p.mm.scratch_bytes(1, p.n, p.k, pool_.n_threads());
}

uint64_t CpuBackend::step_scratch(const Step& s, const ir::Extents* ext) const {
  const int threads = pool_.n_threads();
  if (s.op == ir::Op::kMatMul) {
    const int64_t m = ext[s.in[0]].rows();
    return m > 0 ? s.mm.scratch_bytes(m, s.n, s.k, threads) : 0;
  }
  if (s.op == ir::Op::kAttention) {
    kernels::AttentionArgs a;
    const ir::Extents &q = ext[s.in[0]], &k = ext[s.in[1]];
    a.batch = q.d[0];
    a.q_len = q.d[1];
    a.kv_len = k.d[1];
    a.n_heads = s.attrs.n_heads;
    a.n_kv_heads = s.attrs.n_kv_heads;
    a.head_dim = s.attrs.head_dim;
    a.causal = s.attrs.mask == ir::MaskKind::kCausal;
    a.window = s.attrs.window;
    a.kv_type = s.kv_type;
    return table_.attention_scratch_bytes(a, threads);
  }
  return 0;
}

Status CpuBackend::load(Executable& exe, void* persistent, uint64_t bytes) {
  auto& e = static_cast<CpuExecutable&>(exe);
  if (bytes < e.needs_.persistent_bytes)
    return status_error(StatusCode::kResourceExhausted,
                        "cpu load: persistent region has %llu bytes, %llu needed",
                        static_cast<unsigned long long>(bytes),
                        static_cast<unsigned long long>(e.needs_.persistent_bytes));
  if (e.needs_.persistent_bytes > 0 && reinterpret_cast<uintptr_t>(persistent) % 64 != 0)
    return status_error(StatusCode::kInvalidArgument,
                        "cpu load: persistent region %p is not 64-byte aligned", persistent);
  uint8_t* base = static_cast<uint8_t*>(persistent);
  if (e.needs_.persistent_bytes >= kHugePageBytes) {
    // Huge pages for the packed weights (a hint: THP may be off, then this fails harmlessly).
    const uintptr_t lo = round_up(reinterpret_cast<uintptr_t>(base), kHugePageBytes);
    const uintptr_t hi =
        (reinterpret_cast<uintptr_t>(base) + bytes) / kHugePageBytes * kHugePageBytes;
    if (hi > lo) (void)madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
  }
  const ir::Graph& g = *e.graph;
  // A second load (the session rebinds) takes its references again before it drops the old ones,
  // so an entry only this executable holds is not freed and packed again.
  std::vector<const void*> old;
  for (Packed& p : e.packed) {
    if (p.cached && p.data != nullptr) old.push_back(p.data);
    p.data = nullptr;
    p.cached = false;
  }
  for (const Step& s : e.steps)
    for (int j = 0; j < 2; ++j)
      if (s.norm_bytes[j] > 0)
        std::memcpy(base + s.norm_offset[j], g.values[s.in[j + 1]].data, s.norm_bytes[j]);
  std::vector<float> scales;
  for (Packed& p : e.packed) {
    if (p.stacked_bias) {
      float* b = reinterpret_cast<float*>(base + p.bias_offset);
      for (const Packed::Part& part : p.parts) {
        if (part.bias == ir::kNoValue)
          std::fill(b, b + part.n, 0.0f);
        else
          std::memcpy(b, g.values[part.bias].data, static_cast<size_t>(part.n) * sizeof(float));
        b += part.n;
      }
    }
    // What pack writes: one weight (with i8 scales), or each part of a stack at its offset.
    struct Job {
      const ir::Graph* g;
      const Packed* p;
      const float* scales;
      void run(void* dst) const {
        if (p->parts.empty()) {
          p->mm.pack(g->values[p->value].data, scales, p->n, p->k, dst);
          return;
        }
        int64_t row = 0;
        for (const Packed::Part& part : p->parts) {
          p->mm.pack(g->values[part.weight].data, nullptr, part.n, p->k,
                     static_cast<uint8_t*>(dst) + p->mm.packed_bytes(row, p->k));
          row += part.n;
        }
      }
    } job{&g, &p, nullptr};
    const ir::Value& w = g.values[p.parts.empty() ? p.value : p.parts[0].weight];
    if (p.type == kernels::WType::kI8) {  // never stacked (stack_rows 0)
      if (p.expand_scales) {
        scales.assign(static_cast<size_t>(p.n), w.quant.scales[0]);
        job.scales = scales.data();
      } else {
        job.scales = w.quant.scales.data();
      }
    }
    if (cache_ == nullptr) {
      job.run(base + p.offset);
      p.data = base + p.offset;
      continue;
    }
    // The packed bytes depend on the source bytes, the pack routine (kernel target and weight
    // type), the shape and the scales: all of it is in the key (a stack: every part's address
    // and rows).
    PackedWeightKey key;
    key.source = w.data;
    key.source_bytes = w.nbytes;
    char pack_id[64];
    std::snprintf(pack_id, sizeof pack_id, " pack@%p", reinterpret_cast<void*>(p.mm.pack));
    key.packing = std::string("cpu ") + table_.isa + " " + kernels::wtype_name(p.type) + " [" +
                  std::to_string(p.n) + ", " + std::to_string(p.k) + "]" + pack_id;
    for (const Packed::Part& part : p.parts) {
      char one[64];
      std::snprintf(one, sizeof one, " %lld@%p", static_cast<long long>(part.n),
                    static_cast<const void*>(g.values[part.weight].data));
      key.packing += one;
    }
    if (job.scales != nullptr) {
      const auto* sb = reinterpret_cast<const uint8_t*>(job.scales);
      key.side.assign(sb, sb + static_cast<size_t>(p.n) * sizeof(float));
    }
    Result<const void*> got = cache_->acquire(
        key, p.bytes, [](void* ctx, void* dst) { static_cast<const Job*>(ctx)->run(dst); }, &job);
    if (!got.is_ok()) {
      e.release();
      for (const void* o : old) cache_->release(o);
      return got.status();
    }
    p.data = static_cast<const uint8_t*>(*got);
    p.cached = true;
  }
  for (const void* o : old) cache_->release(o);
  for (const CpuExecutable::ScaleTable& t : e.scale_tables) {
    float* dst = reinterpret_cast<float*>(base + t.offset);
    std::fill(dst, dst + t.rows, g.values[t.value].quant.scales[0]);
  }
  e.persistent = base;
  pool_.warm_up(500);  // worker threads start now, not during an execute
  return Status::ok();
}

void CpuBackend::set_args(Step& s, const TensorBinding* v) const {
  const ir::Extents& x = v[s.in[0]].extents;
  s.rows = x.rank > 0 ? x.rows() : 1;
  s.dim = x.rank > 0 ? x.back() : 1;
  s.count = x.count();
  switch (s.op) {
    case ir::Op::kEmbedding:
      s.count = v[s.in[1]].extents.count();  // number of ids
      break;
    case ir::Op::kAdd:
    case ir::Op::kMul:
      s.count_b = v[s.in[1]].extents.count();
      break;
    case ir::Op::kRope:
      s.rows = x.d[0] * x.d[1];  // tokens
      break;
    case ir::Op::kKvWrite:
      s.rows = v[s.in[1]].extents.rows();  // tokens written
      s.count = x.d[1];                    // cells
      break;
    case ir::Op::kGather:
    case ir::Op::kSegmentMean:
      s.count = v[s.in[1]].extents.count();  // indices / segments
      break;
    case ir::Op::kAttention: {
      const ir::Extents &q = x, &k = v[s.in[1]].extents;
      kernels::AttentionArgs& a = s.att;
      const int64_t qw = q.d[2], kw = k.d[2];
      // Keys shared by every batch row (k batch 1) are read with a batch stride of 0.
      const int64_t kb = k.d[0] == q.d[0] ? 1 : 0;
      a.batch = q.d[0];
      a.q_len = q.d[1];
      a.kv_len = k.d[1];
      a.q_row_stride = qw;
      a.q_batch_stride = q.d[1] * qw;
      a.k_row_stride = a.v_row_stride = kw;
      a.k_batch_stride = a.v_batch_stride = kb * k.d[1] * kw;
      a.mask_batch_stride = a.k_pos_batch_stride = a.k_seq_batch_stride = kb * k.d[1];
      a.q_pos_batch_stride = a.q_seq_batch_stride = q.d[1];
      a.out_row_stride = qw;
      a.out_batch_stride = q.d[1] * qw;
      a.n_heads = s.attrs.n_heads;
      a.n_kv_heads = s.attrs.n_kv_heads;
      a.head_dim = s.attrs.head_dim;
      a.scale = s.attrs.scale != 0.0f ? s.attrs.scale
                                      : 1.0f / std::sqrt(static_cast<float>(s.attrs.head_dim));
      a.causal = s.attrs.mask == ir::MaskKind::kCausal;
      a.window = s.attrs.window;
      break;
    }
    default:
      break;
  }
}

Status CpuBackend::reshape(Executable& exe, const TensorBinding* values, int) {
  auto& e = static_cast<CpuExecutable&>(exe);
  uint64_t scratch = 0;
  for (Step& s : e.steps) {
    set_args(s, values);
    // Scratch at the current shapes (reported as the scratch high-water mark).
    if (s.op == ir::Op::kMatMul) {
      const int64_t m = values[s.in[0]].extents.rows();
      if (m > 0) scratch = std::max(scratch, s.mm.scratch_bytes(m, s.n, s.k, pool_.n_threads()));
      if (m == 1 && s.stack > 1)
        scratch = std::max(scratch, stack_scratch(e.packed[static_cast<size_t>(s.packed)]));
    } else if (s.op == ir::Op::kAttention) {
      scratch = std::max(scratch, table_.attention_scratch_bytes(s.att, pool_.n_threads()));
    }
  }
  e.reshaped_scratch_ = round_up(scratch, 64);
  pool_.warm_up(0);  // no waiting here: load() already waited
  return Status::ok();
}

// A roofline: FLOPs / gflops + bytes / gbps + op_us per node, in sequence (the threads work on
// one node at a time). Bytes are every input (weights at their stored size) and output.
Result<Estimate> CpuBackend::estimate(const Subgraph& sg, const ir::Extents* ext, ir::DType) const {
  const ir::Graph& g = *sg.graph;
  Estimate e;
  double t = 0;
  for (ir::NodeId id : sg.nodes) {
    const ir::Node& n = g.nodes[id];
    double bytes = 0, flops = 0, out = 0;
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue) continue;
      const ir::Value& val = g.values[v];
      const double elem = val.dtype == ir::DType::kF16 ? 2.0 : 4.0;  // f16: a KV cache
      bytes += val.kind == ir::ValueKind::kWeight ? static_cast<double>(val.nbytes)
                                                  : elem * static_cast<double>(ext[v].count());
    }
    for (ir::ValueId o : n.outputs) out += static_cast<double>(ext[o].count());
    bytes += 4 * out;
    NodeEstimate ne;
    if (n.op == ir::Op::kMatMul) {
      const ir::Value& w = g.values[n.inputs[1]];
      const double m = static_cast<double>(ext[n.inputs[0]].rows());
      flops =
          2 * m * static_cast<double>(w.shape.dims[0].c) * static_cast<double>(w.shape.dims[1].c);
      ne.macs = static_cast<uint64_t>(flops / 2);
    } else if (n.op == ir::Op::kAttention) {
      const ir::Extents &q = ext[n.inputs[0]], &k = ext[n.inputs[1]];
      flops =
          4.0 * static_cast<double>(q.d[0] * q.d[1] * k.d[1]) * n.attrs.n_heads * n.attrs.head_dim;
      ne.macs = static_cast<uint64_t>(flops / 2);
    } else if (n.op == ir::Op::kEmbedding) {
      bytes = 8 * out;  // the gathered rows and the output, not the whole table
    } else if (n.op == ir::Op::kKvWrite) {
      // The rows read and written and their cell ids; the rest of the cache is not touched.
      const ir::Extents& cells = ext[n.inputs[2]];
      const double elem = g.values[n.inputs[0]].dtype == ir::DType::kF16 ? 2 : 4;
      bytes = (4 + elem) * static_cast<double>(ext[n.inputs[1]].count()) +
              4 * static_cast<double>(cells.count());
    } else {
      flops = 5 * out;
    }
    ne.dram_bytes = static_cast<uint64_t>(bytes);
    ne.start_ms = t;
    ne.ms =
        flops / (cost_.gflops * 1e9) * 1e3 + bytes / (cost_.gbps * 1e9) * 1e3 + cost_.op_us / 1e3;
    t += ne.ms;
    e.nodes.push_back(ne);
  }
  e.total_ms = t;
  return e;
}

Status CpuBackend::run_step(const CpuExecutable& e, const Step& s, const ExecContext& ctx) const {
  const TensorBinding* v = ctx.values;
  const kernels::ThreadPool* pool = pool_.view();
  auto f32 = [&](ir::ValueId id) { return static_cast<float*>(v[id].data); };
  auto i32 = [&](ir::ValueId id) { return static_cast<int32_t*>(v[id].data); };
  auto opt = [&](ir::ValueId id) { return id == ir::kNoValue ? nullptr : f32(id); };
  auto opt_i32 = [&](ir::ValueId id) { return id == ir::kNoValue ? nullptr : i32(id); };
  auto norm = [&](int i) {  // a norm's input i (1 or 2): its copy in persistent, if it has one
    return s.norm_bytes[i - 1] > 0
               ? reinterpret_cast<const float*>(e.persistent + s.norm_offset[i - 1])
               : f32(s.in[i]);
  };
  switch (s.op) {
    case ir::Op::kEmbedding: {
      const float* scales =
          s.row_scales != nullptr
              ? s.row_scales
              : (s.wtype == kernels::WType::kI8
                     ? reinterpret_cast<const float*>(e.persistent + s.scales_offset)
                     : nullptr);
      const int32_t* ids = i32(s.in[1]);
      const int64_t bad =
          table_.embedding(s.wtype, s.table, scales, s.n, s.k, ids, s.count, f32(s.out), pool);
      if (bad >= 0)
        return status_error(StatusCode::kIndexOutOfRange,
                            "embedding '%s' (node %u): id %d at position %lld is outside [0, %lld)",
                            e.graph->nodes[s.id].name.c_str(), s.id, ids[bad],
                            static_cast<long long>(bad), static_cast<long long>(s.n));
      return Status::ok();
    }
    case ir::Op::kMatMul:  // alone, or (m > 1) on its part of a stack
      s.mm.run(e.packed[static_cast<size_t>(s.packed)].data + s.part_offset, f32(s.in[0]), s.k,
               f32(s.out), s.n, opt(s.in[2]), s.rows, s.n, s.k, ctx.scratch, pool);
      return Status::ok();
    case ir::Op::kAdd:
    case ir::Op::kMul:
      table_.binary(s.op == ir::Op::kAdd ? kernels::Binary::kAdd : kernels::Binary::kMul,
                    f32(s.in[0]), f32(s.in[1]), f32(s.out), s.count, s.count_b, pool);
      return Status::ok();
    case ir::Op::kLayerNorm:
      table_.layernorm(f32(s.in[0]), norm(1), s.in[2] == ir::kNoValue ? nullptr : norm(2),
                       f32(s.out), s.rows, s.dim, s.attrs.eps, pool);
      return Status::ok();
    case ir::Op::kRmsNorm:
      table_.rmsnorm(f32(s.in[0]), norm(1), f32(s.out), s.rows, s.dim, s.attrs.eps, pool);
      return Status::ok();
    case ir::Op::kRope: {
      const int32_t hd = s.attrs.head_dim;
      table_.rope(f32(s.in[0]), f32(s.out), i32(s.in[1]), s.rows, static_cast<int32_t>(s.dim / hd),
                  hd, s.attrs.rotary_dim == 0 ? hd : s.attrs.rotary_dim, s.attrs.rope_theta,
                  s.attrs.rope_mode, pool);
      return Status::ok();
    }
    case ir::Op::kAttention: {
      kernels::AttentionArgs a = s.att;
      a.q = f32(s.in[0]);
      a.k = v[s.in[1]].data;  // f32 or f16 (a.kv_type)
      a.v = v[s.in[2]].data;
      a.key_mask = opt_i32(s.in[3]);
      a.q_pos = opt_i32(s.in[4]);
      a.k_pos = opt_i32(s.in[5]);
      a.q_seq = opt_i32(s.in[6]);
      a.k_seq = opt_i32(s.in[7]);
      a.out = f32(s.out);
      table_.attention(a, 0, a.n_heads, ctx.scratch, pool);
      return Status::ok();
    }
    case ir::Op::kGelu:
      table_.unary(s.attrs.act, f32(s.in[0]), f32(s.out), s.count, pool);
      return Status::ok();
    case ir::Op::kSilu:
      table_.unary(ir::ActKind::kSilu, f32(s.in[0]), f32(s.out), s.count, pool);
      return Status::ok();
    case ir::Op::kRelu:
      table_.unary(ir::ActKind::kRelu, f32(s.in[0]), f32(s.out), s.count, pool);
      return Status::ok();
    case ir::Op::kSoftmax:
      table_.softmax(f32(s.in[0]), f32(s.out), s.rows, s.dim, pool);
      return Status::ok();
    case ir::Op::kGlu:
      table_.glu(s.attrs.act, f32(s.in[0]), f32(s.out), s.rows, s.dim / 2, pool);
      return Status::ok();
    case ir::Op::kSplit: {
      // Rows split over the workers (each row's parts copied by one of them).
      const float* x = f32(s.in[0]);
      const int threads = pool != nullptr ? std::max(pool->n_threads, 1) : 1;
      kernels::parallel_for(
          pool, s.rows, (s.rows + threads - 1) / threads, [&](int64_t r0, int64_t r1) {
            int64_t col = 0;
            for (size_t i = 0; i < s.outs.size(); ++i) {
              const int64_t w = s.attrs.sizes[i];
              float* y = f32(s.outs[i]);
              for (int64_t r = r0; r < r1; ++r)
                std::memcpy(y + r * w, x + r * s.dim + col, static_cast<size_t>(w) * sizeof(float));
              col += w;
            }
          });
      return Status::ok();
    }
    case ir::Op::kKvWrite: {
      // The output is the cache (the state's memory); every cell index is checked first, so a bad
      // one writes nothing.
      const int32_t* cells = i32(s.in[2]);
      LAYA_RETURN_IF_ERROR(kv_write_check(*e.graph, s.id, cells, s.rows, s.count));
      kv_write_rows(table_, s.kv_type, f32(s.in[1]), s.rows, s.dim, cells, v[s.out].data);
      return Status::ok();
    }
    case ir::Op::kGather: {
      const int32_t* idx = i32(s.in[1]);
      // f32 or i32 rows (the shape rules allow both): the same 4-byte copies.
      const int64_t bad =
          table_.embedding(kernels::WType::kF32, v[s.in[0]].data, nullptr, s.rows, s.dim, idx,
                           s.count, static_cast<float*>(v[s.out].data), pool);
      if (bad >= 0)
        return status_error(StatusCode::kIndexOutOfRange,
                            "gather '%s' (node %u): index %d at position %lld is outside [0, %lld)",
                            e.graph->nodes[s.id].name.c_str(), s.id, idx[bad],
                            static_cast<long long>(bad), static_cast<long long>(s.rows));
      return Status::ok();
    }
    case ir::Op::kConcat: {
      float* y = f32(s.out);
      const int64_t width = v[s.out].extents.back();
      int64_t col = 0;
      for (ir::ValueId in : s.ins) {
        const int64_t w = v[in].extents.back();
        const float* x = f32(in);
        for (int64_t r = 0; r < s.rows; ++r)
          std::memcpy(y + r * width + col, x + r * w, static_cast<size_t>(w) * sizeof(float));
        col += w;
      }
      return Status::ok();
    }
    case ir::Op::kReshape:  // f32 or i32: 4-byte elements either way
      std::memcpy(v[s.out].data, v[s.in[0]].data, static_cast<size_t>(s.count) * sizeof(float));
      return Status::ok();
    case ir::Op::kMaskedFill:
      table_.masked_fill(f32(s.in[0]), i32(s.in[1]), s.attrs.value, f32(s.out), s.count, pool);
      return Status::ok();
    case ir::Op::kSegmentMean: {
      const int32_t* starts = i32(s.in[1]);
      const int64_t bad =
          table_.segment_mean(f32(s.in[0]), s.rows, s.dim, starts, s.count, f32(s.out), pool);
      if (bad >= 0)
        return status_error(StatusCode::kIndexOutOfRange,
                            "segment_mean '%s' (node %u): segment %lld starts at %d; starts must "
                            "be non-decreasing within [0, %lld]",
                            e.graph->nodes[s.id].name.c_str(), s.id, static_cast<long long>(bad),
                            starts[bad], static_cast<long long>(s.rows));
      return Status::ok();
    }
    case ir::Op::kActFeatures:
      table_.act_features(f32(s.in[0]), i32(s.in[1]), s.rows, s.dim, f32(s.out));
      return Status::ok();
    case ir::Op::kCount:
      break;
  }
  return status_error(StatusCode::kInternal, "cpu execute: unknown op");
}

// The GEMV (m == 1) of the stack led by steps[first]: one run over the stacked weights into
// scratch, then each step's rows to its output.
void CpuBackend::run_stack(const CpuExecutable& e, size_t first, const ExecContext& ctx) const {
  const Step& s = e.steps[first];
  const Packed& p = e.packed[static_cast<size_t>(s.packed)];
  float* y = static_cast<float*>(ctx.scratch);
  void* kscratch =
      static_cast<uint8_t*>(ctx.scratch) + round_up(static_cast<uint64_t>(p.n) * sizeof(float), 64);
  const float* bias =
      p.stacked_bias ? reinterpret_cast<const float*>(e.persistent + p.bias_offset) : nullptr;
  p.mm.run(p.data, static_cast<const float*>(ctx.values[s.in[0]].data), p.k, y, p.n, bias, 1, p.n,
           p.k, kscratch, pool_.view());
  for (int i = 0; i < s.stack; ++i) {
    const Step& m = e.steps[first + static_cast<size_t>(i)];
    std::memcpy(ctx.values[m.out].data, y + m.part_row, static_cast<size_t>(m.n) * sizeof(float));
  }
}

Status CpuBackend::execute(Executable& exe, const ExecContext& ctx) {
  const auto& e = static_cast<const CpuExecutable&>(exe);
  const bool profile = ctx.profile != nullptr && ctx.profile->on_node != nullptr;
  for (size_t i = 0; i < e.steps.size();) {
    const Step& s = e.steps[i];
    const bool stacked = s.stack > 1 && s.rows == 1;
    const auto t0 =
        profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (stacked) {
      run_stack(e, i, ctx);
    } else {
      LAYA_RETURN_IF_ERROR(run_step(e, s, ctx));
    }
    if (!profile) {
      i += stacked ? static_cast<size_t>(s.stack) : 1;
      continue;
    }
    const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
    if (!stacked) {
      ctx.profile->on_node(ctx.profile->user, s.id, ms.count(), false);
      ++i;
      continue;
    }
    // One measured time for the stack, split over its nodes by their packed weight bytes.
    const Packed& p = e.packed[static_cast<size_t>(s.packed)];
    for (int j = 0; j < s.stack; ++j, ++i) {
      const Step& m = e.steps[i];
      const double share =
          static_cast<double>(m.mm.packed_bytes(m.n, m.k)) / static_cast<double>(p.bytes);
      ctx.profile->on_node(ctx.profile->user, m.id, ms.count() * share, false);
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<Backend>> create(const BackendOptions& opts) {
  if (opts.n_threads < 0)
    return status_error(StatusCode::kInvalidArgument, "cpu: n_threads %d < 0", opts.n_threads);
  CpuBackend::CostModel cost;
  for (const auto& [key, value] : opts.settings) {
    if (key == "kernels" || key == "int8_activations") continue;
    double* field = key == "model_gflops"  ? &cost.gflops
                    : key == "model_gbps"  ? &cost.gbps
                    : key == "model_op_us" ? &cost.op_us
                                           : nullptr;
    if (field == nullptr)
      return status_error(StatusCode::kInvalidArgument,
                          "cpu: unknown setting '%s' (have: kernels, int8_activations, "
                          "model_gflops, model_gbps, model_op_us)",
                          key.c_str());
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(v > 0) || !std::isfinite(v))
      return status_error(StatusCode::kInvalidArgument, "cpu: %s=%s is not a positive number",
                          key.c_str(), value.c_str());
    *field = v;
  }
  const std::string kernels_name = opts.get("kernels", "auto");
  kernels::KernelTable table;
  if (!kernels::kernel_table_by_name(kernels_name, &table)) {
    std::string have;
    for (const std::string& k : kernels::kernel_table_names())
      have += (have.empty() ? "" : ", ") + k;
    return status_error(StatusCode::kInvalidArgument, "cpu: unknown kernels '%s' (have: %s)",
                        kernels_name.c_str(), have.c_str());
  }
  // i8 weights multiply f32 activations (the i8w kernels: weight-only int8) unless asked for the
  // int8-activation kernels (a8w8: VNNI speed, but per-token rounding of activations flips
  // near-tied decisions; docs/precision.md).
  const std::string int8_act = opts.get("int8_activations", "f32");
  if (int8_act == "f32") {
    table.matmul[static_cast<int>(kernels::WType::kI8)] =
        table.matmul[static_cast<int>(kernels::WType::kI8W)];
  } else if (int8_act != "i8") {
    return status_error(StatusCode::kInvalidArgument, "cpu: int8_activations=%s (have: f32, i8)",
                        int8_act.c_str());
  }
  // Threads: the caller's count (0: every core), capped at the cores and the device's cap.
  int threads = opts.n_threads == 0 ? ArenaPool::max_threads() : opts.n_threads;
  threads = std::min(threads, ArenaPool::max_threads());
  if (opts.shared != nullptr && opts.shared->max_threads > 0)
    threads = std::min(threads, opts.shared->max_threads);
  WeightCache* cache = opts.shared != nullptr ? opts.shared->weights : nullptr;
  return std::unique_ptr<Backend>(new CpuBackend(table, threads, cache, cost));
}

}  // namespace
}  // namespace cpu

namespace cpu {
namespace {

// The process pool as hal::Workers (a device holds it; runtime/device.h).
class PoolWorkers final : public Workers {
 public:
  explicit PoolWorkers(std::shared_ptr<ArenaPool> pool) : pool_(std::move(pool)) {}
  int n_threads() const override { return ArenaPool::max_threads(); }
  int warm_up(int timeout_ms) override { return pool_->warm_up(timeout_ms); }

 private:
  std::shared_ptr<ArenaPool> pool_;
};

std::shared_ptr<Workers> workers() {
  return std::make_shared<PoolWorkers>(ArenaPool::shared());
}

}  // namespace
}  // namespace cpu

void cpu_register(Registry& r) {
  BackendInfo info;
  info.name = "cpu";
  info.create = cpu::create;
  info.workers = cpu::workers;
  (void)r.add(info);  // a refusal stays in r.refused(), which laya-run backends lists
}

}  // namespace laya::hal
