// GraphBuilder: the one way code constructs graphs (importers, tests, the tiny-model generator).
//
//   GraphBuilder b;
//   int seq = b.symbol("seq", 1, 512);
//   ValueId ids = b.input("ids", DType::kI32, Shape::of({Dim::fixed(1), Dim::sym(seq)}),
//                         InputRole::kTokenIds);
//   ValueId emb = b.weight("tok_emb", DType::kF32, Shape::fixed({vocab, d}), data, bytes);
//   ValueId x = b.embedding(emb, ids);
//   ...
//   b.output(x, "hidden");
//   Result<Graph> g = std::move(b).finish();
//
// Each node's output dtype and shape come from shape inference. Errors are sticky: after the first
// failure every call returns kNoValue and finish() returns that first error, so building code can
// chain calls without checking each one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace laya::ir {

class GraphBuilder {
 public:
  // A symbolic dimension with inclusive bounds; returns its index (for Dim::sym).
  int symbol(const std::string& name, int64_t min, int64_t max);

  ValueId input(const std::string& name, DType dtype, const Shape& shape,
                InputRole role = InputRole::kNone);

  // A state: a caller-owned tensor that persists across executes (a KV cache of [1, C, W]), listed
  // in Graph::states; read it only through kv_write.
  ValueId state(const std::string& name, DType dtype, const Shape& shape);

  // A constant. Copies `nbytes` from `data` into graph-owned 64-byte-aligned storage; `nbytes`
  // must equal the shape's element count in `dtype` (checked).
  ValueId weight(const std::string& name, DType dtype, const Shape& shape, const void* data,
                 uint64_t nbytes, Quant quant = {});
  // A constant whose bytes are NOT copied: `data` (aligned to the dtype's element size, else
  // kInvalidArgument) is referenced as it is and must stay valid and unchanged while the graph or
  // any copy of it lives, which `owner` guarantees (kept once in Graph::keepalive; nullable when
  // `data` outlives the graph by other means). Same size checks as weight(). For weights made in
  // place (random-weight presets), shared (one zero mapping behind a shape-only graph) or in a
  // memory-mapped checkpoint (frontends/: the safetensors file's mapping is the owner).
  ValueId weight_ref(const std::string& name, DType dtype, const Shape& shape, const void* data,
                     uint64_t nbytes, std::shared_ptr<const void> owner, Quant quant = {});
  // A deferred constant (see ir::WeightFill): no bytes now; `fill` makes them while model_write
  // writes the graph. Its size is the shape's element count in `dtype`.
  ValueId weight_deferred(const std::string& name, DType dtype, const Shape& shape,
                          std::shared_ptr<const WeightFill> fill, Quant quant = {});

  // A node with the given inputs and attributes; returns its outputs (named `name`, or
  // "<op>_<node>" / "<name>.<i>" for several). An absent optional input is kNoValue: trailing ones
  // are dropped, one before a present input stays a hole (Node::inputs); a required input
  // (slot < the op's min_inputs) that is kNoValue is kInvalidArgument.
  std::vector<ValueId> node(Op op, const std::vector<ValueId>& inputs, const Attrs& attrs = {},
                            const std::string& name = "");
  // A single-output node; kInvalidArgument when `op` (with `attrs.sizes`) has another output count.
  ValueId node1(Op op, const std::vector<ValueId>& inputs, const Attrs& attrs = {},
                const std::string& name = "");

  // Convenience wrappers (see ir/ops.inc for the semantics). Optional inputs: kNoValue.
  ValueId embedding(ValueId table, ValueId ids, const std::string& name = "");
  ValueId matmul(ValueId x, ValueId w, ValueId bias = kNoValue, const std::string& name = "");
  ValueId add(ValueId a, ValueId b, const std::string& name = "");
  ValueId mul(ValueId a, ValueId b, const std::string& name = "");
  ValueId layernorm(ValueId x, ValueId gamma, ValueId beta, float eps,
                    const std::string& name = "");
  ValueId rmsnorm(ValueId x, ValueId gamma, float eps, const std::string& name = "");
  ValueId rope(ValueId x, ValueId positions, int32_t head_dim, float theta,
               RopeMode mode = RopeMode::kNeox, int32_t rotary_dim = 0,
               const std::string& name = "");
  // attrs: n_heads, n_kv_heads, head_dim, scale, mask, window.
  ValueId attention(ValueId q, ValueId k, ValueId v, ValueId key_mask, const Attrs& attrs,
                    const std::string& name = "");
  // Attention with per-token positions and / or sequence ids (ir/ops.inc; each pair all kNoValue
  // or all present); key_mask may be kNoValue.
  struct AttentionIds {
    ValueId q_pos = kNoValue, k_pos = kNoValue;  // i32 [B, S], [Bk, T]
    ValueId q_seq = kNoValue, k_seq = kNoValue;  // i32 [B, S], [Bk, T]
  };
  ValueId attention(ValueId q, ValueId k, ValueId v, ValueId key_mask, const AttentionIds& ids,
                    const Attrs& attrs, const std::string& name = "");
  ValueId gelu(ValueId x, ActKind act = ActKind::kGeluErf, const std::string& name = "");
  ValueId silu(ValueId x, const std::string& name = "");
  ValueId relu(ValueId x, const std::string& name = "");
  ValueId softmax(ValueId x, const std::string& name = "");
  ValueId glu(ValueId x, ActKind act, const std::string& name = "");
  std::vector<ValueId> split(ValueId x, const std::vector<int64_t>& sizes,
                             const std::string& name = "");
  // Writes rows [B, S, W] into cells i32 [B, S] of `cache` (a state) and returns the cache.
  ValueId kv_write(ValueId cache, ValueId rows, ValueId cells, const std::string& name = "");
  ValueId gather(ValueId x, ValueId idx, const std::string& name = "");
  ValueId concat(const std::vector<ValueId>& xs, const std::string& name = "");
  // sizes: > 0 fixed, < 0 copies x's dim (-s - 1) (ir/ops.inc).
  ValueId reshape(ValueId x, const std::vector<int64_t>& sizes, const std::string& name = "");
  ValueId masked_fill(ValueId x, ValueId mask, float value, const std::string& name = "");
  ValueId segment_mean(ValueId x, ValueId starts, const std::string& name = "");
  ValueId act_features(ValueId logits, ValueId valid, const std::string& name = "");

  // Marks `v` (a node output) as a graph output, renaming it when `name` is given.
  void output(ValueId v, const std::string& name = "");

  Metadata& meta() { return graph_.meta; }
  // The first error so far (ok if none).
  const Status& status() const { return status_; }

  // Verifies (graph_verify) and returns the graph.
  Result<Graph> finish() &&;

 private:
  bool ok() const { return status_.is_ok(); }
  // The checks weight(), weight_ref() and weight_deferred() share; false after recording the error.
  bool check_weight(const std::string& name, DType dtype, const Shape& shape, const void* data,
                    uint64_t nbytes);
  ValueId add_weight(const std::string& name, DType dtype, const Shape& shape, const uint8_t* data,
                     uint64_t nbytes, Quant quant);
  void fail(Status s) {
    if (status_.is_ok()) status_ = std::move(s);
  }

  Graph graph_;
  Status status_;
};

}  // namespace laya::ir
