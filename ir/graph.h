// The graph IR: values (tensors) addressed by id, nodes (op + attributes) in topological order,
// graph inputs and outputs, weights, symbols and model metadata.
//
// Invariants (checked by graph_verify, which the loader and GraphBuilder::finish run):
//  - every node input is a graph input, a weight, or an output of an EARLIER node ("defined before
//    use"); hence `nodes` is a topological order and the graph is acyclic; absent optional inputs
//    are omitted at the end and kNoValue before a present input (see Node::inputs);
//  - each activation has exactly one producer; each value's shape and dtype are what shape
//    inference derives from its producer;
//  - quantization parameters fit the dtype; weight byte sizes match shape x dtype;
//  - every state value is listed once in `states`, has no data, and is read only by kv_write (its
//    cache input, at most one kv_write per state); a kv_write output is not a graph output.
//
// Ownership: a Graph owns everything it points to. Weight bytes (`Value::data`) live either in the
// memory-mapped model file or in buffers made by GraphBuilder; `keepalive` holds those owners, so
// a Graph (and copies of it) stays valid on its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/attr_enums.h"
#include "ir/status.h"
#include "ir/types.h"

namespace laya::ir {

using ValueId = uint32_t;
using NodeId = uint32_t;
inline constexpr ValueId kNoValue = UINT32_MAX;
inline constexpr NodeId kNoNode = UINT32_MAX;

// ---- ops -------------------------------------------------------------------------------------

enum class Op : uint16_t {
#define OP(name, Name, min_in, max_in, n_out) k##Name,
#include "ir/ops.inc"
#undef OP
  kCount
};

struct OpInfo {
  const char* name;
  int min_inputs;
  int max_inputs;
  int n_outputs;  // -1: variable
};
// Precondition: op < kCount.
const OpInfo& op_info(Op op);
inline const char* op_name(Op op) {
  return op_info(op).name;
}
bool op_is_valid(uint32_t raw);

// All node attributes; each op reads the ones ir/ops.inc lists and ignores the rest.
struct Attrs {
#define ATTR(type, name, def, lo, hi) type name = def;
#include "ir/attrs.inc"
#undef ATTR
  std::vector<int64_t> sizes;  // split: output sizes along the last axis

  bool operator==(const Attrs& o) const;
};

// The inclusive limits of every scalar attribute (ir/attrs.inc), e.g. AttrLimits::scale_max.
// infer_node (so the builder and the verifier) rejects a node with a value outside them, or NaN.
struct AttrLimits {
#define ATTR(type, name, def, lo, hi) static constexpr type name##_min = lo, name##_max = hi;
#include "ir/attrs.inc"
#undef ATTR
};

// ---- values and nodes ------------------------------------------------------------------------

enum class ValueKind : uint8_t {
  kInput,       // graph input, bound by the caller at execute
  kWeight,      // constant; bytes in `Value::data`
  kActivation,  // produced by a node (graph outputs are activations listed in Graph::outputs)
  kState,       // caller-owned tensor that persists across executes (a KV cache); listed in
                // Graph::states, read only by kv_write, whose output aliases its memory
};
const char* value_kind_name(ValueKind k);

// What a graph input carries, so tools and runners can fill it (laya-run generates inputs by role).
enum class InputRole : uint8_t {
  kNone,           // generic data (random floats when generated)
  kTokenIds,       // i32 token ids in [0, vocab)
  kPositions,      // i32 positions (0, 1, 2, ... per row when generated)
  kKeyMask,        // i32 1 = real token, 0 = padding
  kSeqIds,         // i32 sequence id of each token (attention q_seq)
  kCacheCells,     // i32 KV cache cell of each token (kv_write cells)
  kCellPositions,  // i32 position of each KV cache cell (attention k_pos)
  kCellSeqIds,     // i32 sequence id of each KV cache cell, -1 = empty (attention k_seq)
  kLogitRows,      // i32 rows of the step (indices into its [batch * seq] tokens) whose logits a
                   // decoder computes (gather before the lm head)
};
const char* input_role_name(InputRole r);

// The bytes of a deferred weight (Value::fill), made only when the graph is written to a file: an
// importer converting a memory-mapped checkpoint (f16 -> int8, say) hands one of these per tensor,
// and model_write streams the converted bytes through a small buffer, so no converted tensor is
// ever held whole in memory. Implementations must be callable from any thread, any number of times.
class WeightFill {
 public:
  virtual ~WeightFill() = default;
  // Writes bytes [offset, offset + n) of the weight's stored form (its dtype, row-major) to `dst`.
  // `offset` and `n` are multiples of the dtype's block size in bytes, within the weight's nbytes.
  virtual Status fill(uint64_t offset, uint8_t* dst, uint64_t n) const = 0;
};

struct Value {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  Quant quant;
  ValueKind kind = ValueKind::kActivation;
  InputRole role = InputRole::kNone;  // kInput only
  // kWeight only: `nbytes` bytes, read-only, aligned to the dtype's element size (64-byte aligned
  // in a loaded .laya file and in GraphBuilder::weight's copies). Null for a deferred weight.
  const uint8_t* data = nullptr;
  uint64_t nbytes = 0;
  // kWeight only: a deferred weight (data == nullptr, nbytes > 0): its bytes exist only once
  // model_write has streamed them into a file. Sessions refuse graphs with deferred weights.
  std::shared_ptr<const WeightFill> fill;
  NodeId producer = kNoNode;  // kActivation only
};

struct Node {
  Op op = Op::kAdd;
  std::string name;
  // One entry per input slot of ir/ops.inc. Slots below the op's min_inputs are always present.
  // Absent optional inputs at the end are omitted; an absent optional input followed by a present
  // one is kNoValue (a "hole"), so every input keeps its slot. The last entry is never kNoValue.
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  Attrs attrs;

  // Input slot `i`, or kNoValue when it is absent (omitted or a hole).
  ValueId input(size_t i) const { return i < inputs.size() ? inputs[i] : kNoValue; }
};

// ---- metadata --------------------------------------------------------------------------------

// A read-only byte range owned by the graph (see Graph::keepalive).
struct Blob {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

// Laya decision-head settings (REFERENCE-laya.md section 5): rl_agent_config.json, structured.
struct DecisionConfig {
  bool present = false;
  int32_t max_len = 0;
  int32_t head_max_len = 0;
  int32_t head_layers = 0;
  float temperature[3] = {1.0f, 1.0f, 1.0f};  // choice, score, noul
  // "<type>:<2|3-5|6-10|11+>" -> temperature, in file order
  std::vector<std::pair<std::string, float>> temperature_by_options;
  std::vector<float> act_costs;
};

struct SourceFile {
  std::string name;
  std::string sha256;  // lowercase hex
};

struct Provenance {
  std::string source;             // e.g. "HuggingFaceTB/SmolLM2-135M-Instruct (GGUF Q4_1)"
  std::string converter_version;  // e.g. "laya-convert 0.1.0"
  std::vector<SourceFile> files;
};

// An ahead-of-time compiled backend executable shipped inside the model (e.g. an AX8850 .axmodel
// for one subgraph). Opaque to everything but its backend; bytes live in the weight section.
struct PrecompiledExecutable {
  std::string backend;   // "ax8850"
  std::string subgraph;  // the backend's key for the node range it covers
  Blob bytes;
};

struct Metadata {
  std::string architecture;    // "modernbert", "llama", "bert", "test", ...
  std::string tokenizer_kind;  // "hf-tokenizer-json", "gguf", "" (none)
  Blob tokenizer;              // the embedded tokenizer file
  DecisionConfig decision;
  std::string chat_template;  // Jinja text, as shipped with the checkpoint
  Provenance provenance;
  std::vector<std::pair<std::string, std::string>> properties;  // free-form hyperparameters
  std::vector<PrecompiledExecutable> executables;
};

// ---- the graph -------------------------------------------------------------------------------

struct Graph {
  std::vector<Symbol> symbols;  // at most kMaxSymbols; Dim coefficients index this list
  std::vector<Value> values;
  std::vector<Node> nodes;  // topological order
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  std::vector<ValueId> states;  // kState values, bound by the caller in this order
  Metadata meta;
  std::vector<std::shared_ptr<const void>> keepalive;  // owners of weight and blob bytes

  // Linear lookups (graphs have thousands of values at most; not for hot paths).
  ValueId find_value(const std::string& name) const;
  int find_symbol(const std::string& name) const;  // -1 if absent
};

// The state whose memory value `v` is: `v` itself for a state, the cache input of the kv_write
// that produced `v`, else kNoValue. Such values are never planned: they live in the caller's
// state memory. Expects a verified graph.
ValueId aliased_state(const Graph& g, ValueId v);

// Checks every invariant listed at the top of this file. Returns the first problem found, with a
// message naming the node / value.
Status graph_verify(const Graph& g);

// Structural equality: symbols, values (incl. weight bytes; deferred weights are equal when they
// share the fill object), nodes, inputs, outputs, metadata.
// Used by the round-trip tests; `why` (optional) receives the first difference.
bool graph_equal(const Graph& a, const Graph& b, std::string* why = nullptr);

// Human-readable dump: symbols, inputs, states, weights (dtype, shape, quant), one line per node
// (outputs, op, inputs, non-default attributes, every output's type), outputs. Expects a verified
// graph.
std::string graph_print(const Graph& g);

// Number of parameters (weight elements) and bytes, in total and per dtype. Counted in checked
// arithmetic: a count that would overflow (possible only in an unverified graph) saturates at
// INT64_MAX.
struct WeightStats {
  int64_t params = 0;
  int64_t params_by_dtype[static_cast<size_t>(DType::kCount)] = {};
  uint64_t bytes_by_dtype[static_cast<size_t>(DType::kCount)] = {};
};
WeightStats graph_weight_stats(const Graph& g);

}  // namespace laya::ir
