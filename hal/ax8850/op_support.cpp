#include "hal/ax8850/op_support.h"

#include <cstdint>
#include <string>

namespace laya::hal::ax8850 {
namespace {

Status refuse(const ir::Node& n, const std::string& why) {
  return status_error(StatusCode::kUnsupported, "%s '%s': %s", ir::op_name(n.op), n.name.c_str(),
                      why.c_str());
}

// s8 symmetric (per row or per tensor), bf16 or f16; the reason otherwise.
bool weight_ok(const ir::Value& w, std::string* why) {
  switch (w.dtype) {
    case ir::DType::kBF16:
    case ir::DType::kF16:
      return true;
    case ir::DType::kI8: {
      for (int32_t z : w.quant.zero_points)
        if (z != 0) {
          *why = "i8 weights with a zero point: the NPU takes symmetric s8";
          return false;
        }
      const bool per_row = w.quant.kind == ir::QuantKind::kPerChannel && w.quant.axis == 0;
      if (per_row || w.quant.kind == ir::QuantKind::kPerTensor) return true;
      *why = std::string("i8 weights with ") + ir::quant_kind_name(w.quant.kind) +
             " quantization: the NPU takes one scale per output channel or per tensor";
      return false;
    }
    case ir::DType::kF32:
      *why = "f32 weights: the NPU multiplies s8 / s4 / bf16 / f16 weights; convert them";
      return false;
    case ir::DType::kQ8_0:
    case ir::DType::kQ4_0:
    case ir::DType::kQ4_1:
    case ir::DType::kQ5_0:
    case ir::DType::kQ5_1:
      *why = std::string(ir::dtype_name(w.dtype)) +
             " (GGUF block) weights: the NPU takes per-channel s8 / s4 or bf16 / f16; requantize "
             "them at conversion";
      return false;
    default:
      *why = std::string(ir::dtype_name(w.dtype)) + " weights";
      return false;
  }
}

}  // namespace

const char* unit_name(Unit u) {
  return u == Unit::kConv ? "conv" : u == Unit::kTeng ? "teng" : "sdma";
}

const OpRule& op_rule(ir::Op op) {
  static const OpRule kConvRule{Unit::kConv,
                                "weights s8 (symmetric, per channel or tensor) / bf16 / f16"};
  static const OpRule kAttention{
      Unit::kConv, "head_dim % tile_k == 0, <= 256; one KV head + score tile must fit in OCM"};
  static const OpRule kGather{Unit::kSdma, "table s8 / bf16 / f16; ids i32"};
  static const OpRule kKvWrite{Unit::kSdma, "cache f32 / f16 (a state, in place); cells i32"};
  static const OpRule kVector{Unit::kTeng, "f32 parameters folded by the compiler"};
  switch (op) {
    case ir::Op::kMatMul:
      return kConvRule;
    case ir::Op::kAttention:
      return kAttention;
    case ir::Op::kEmbedding:
      return kGather;
    case ir::Op::kKvWrite:
      return kKvWrite;
    default:
      return kVector;
  }
}

uint64_t attention_ocm_bytes(const Params& p, int64_t keys, int32_t head_dim) {
  const uint64_t t = static_cast<uint64_t>(keys);
  return 2 * t * static_cast<uint64_t>(head_dim) * 2 + static_cast<uint64_t>(p.tile_m) * t * 4;
}

Status op_supported(const Params& p, const ir::Graph& g, const ir::Node& n,
                    const ir::Extents* max_extents) {
  std::string why;
  switch (n.op) {
    case ir::Op::kMatMul: {
      const ir::Value& w = g.values[n.inputs[1]];
      if (w.kind != ir::ValueKind::kWeight || w.shape.rank != 2)
        return refuse(n, "the weight must be a constant [N, K] (it is compiled in)");
      if (!weight_ok(w, &why)) return refuse(n, why);
      return Status::ok();
    }
    case ir::Op::kEmbedding: {
      const ir::Value& t = g.values[n.inputs[0]];
      if (t.kind != ir::ValueKind::kWeight || t.shape.rank != 2)
        return refuse(n, "the table must be a constant [V, D] weight");
      if (!weight_ok(t, &why)) return refuse(n, "table: " + why);
      return Status::ok();
    }
    case ir::Op::kAttention: {
      // k / v: f32 activations, or a KV cache (f32 or f16 state memory) read in place.
      const int32_t hd = n.attrs.head_dim;
      if (hd % p.tile_k != 0 || hd > 256)
        return refuse(n, "head_dim " + std::to_string(hd) + " is not a multiple of " +
                             std::to_string(p.tile_k) + " up to 256");
      if (max_extents != nullptr) {
        const int64_t keys = max_extents[n.inputs[1]].d[1];
        const uint64_t need = attention_ocm_bytes(p, keys, hd);
        if (need > p.ocm_bytes)
          return refuse(n, std::to_string(keys) + " keys: one KV head and a score tile need " +
                               std::to_string(need / 1024) + " KiB of OCM, a group has " +
                               std::to_string(p.ocm_bytes / 1024) + " KiB");
      }
      return Status::ok();
    }
    case ir::Op::kAdd:
    case ir::Op::kMul:
    case ir::Op::kLayerNorm:
    case ir::Op::kRmsNorm:
    case ir::Op::kRope:
    case ir::Op::kGelu:
    case ir::Op::kSilu:
    case ir::Op::kRelu:
    case ir::Op::kSoftmax:
    case ir::Op::kGlu:
    case ir::Op::kSplit:
      return Status::ok();
    case ir::Op::kKvWrite:
      // The cache stays where it is (shared DRAM; on a card, device memory): SDMA writes the rows.
      if (max_extents != nullptr && max_extents[n.inputs[0]].d[1] > INT32_MAX)
        return refuse(n, std::to_string(max_extents[n.inputs[0]].d[1]) +
                             " cache cells: cells are i32 indices");
      return Status::ok();
    case ir::Op::kGather:
    case ir::Op::kSegmentMean:
      return refuse(n,
                    "rows addressed by an index tensor: not lowered to SDMA yet, runs on the "
                    "CPU");
    case ir::Op::kConcat:
    case ir::Op::kReshape:
    case ir::Op::kMaskedFill:
    case ir::Op::kActFeatures:
      return refuse(n, "a Laya decision-head op: not lowered to the NPU yet, runs on the CPU");
    default:
      return refuse(n, "not in the AX8850 op table");
  }
}

}  // namespace laya::hal::ax8850
