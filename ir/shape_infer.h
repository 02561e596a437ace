// Shape and dtype inference, one rule per op (the rules are documented in ir/ops.inc).
#pragma once

#include <vector>

#include "ir/graph.h"

namespace laya::ir {

struct InferredOutput {
  DType dtype = DType::kF32;
  Shape shape;
};

// Derives the dtype and shape of every output of `n` from its inputs (looked up in `g.values`)
// and attributes. Checks arity, input dtypes and quantization kinds, ranks, symbolic dimension
// equality, every scalar attribute against its ir/attrs.inc limits (whatever the op), and the
// op's own attribute rules; the error names the node and what is wrong. `out` is resized to
// the node's output count.
Status infer_node(const Graph& g, const Node& n, std::vector<InferredOutput>* out);

// Whether `dtype` with `quant` can be a matmul / embedding weight, i.e. what the kernels take:
// f32, f16, bf16 unquantized; i8 symmetric (zero points 0) with one per-tensor scale or per-row
// scales (per-channel, axis 0); q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K, q6_K with block quantization. The
// one statement of these rules: shape inference and the CPU backend's supports() both ask it.
// kGraphQuantMismatch naming what does not fit. (Scale counts and values are the verifier's check_quant.)
Status weight_format_check(DType dtype, const Quant& quant);

}  // namespace laya::ir
