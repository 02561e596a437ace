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
// equality and attribute ranges; the error names the node and what is wrong. `out` is resized to
// the node's output count.
Status infer_node(const Graph& g, const Node& n, std::vector<InferredOutput>* out);

// Whether `dtype` (with `quant`) can be a matmul / embedding weight, i.e. what the kernels accept:
// f32, f16, bf16, i8 symmetric per-tensor or per-row (axis 0), q8_0, q4_0, q4_1, q4_K, q5_K,
// q6_K.
bool weight_dtype_ok(DType dtype, const Quant& quant);

}  // namespace laya::ir
