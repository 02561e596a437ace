// GGUF reader: the header, every metadata key / value, the tensor table and the tensor bytes of a
// GGUF v2 or v3 file (llama.cpp's format, docs/gguf.md upstream), over a read-only memory map.
// Tensor data is never copied: a TensorInfo points into the mapping, which the File owns.
//
// File layout (little endian; v1 used u32 counts and is rejected; a big-endian v3 file reads as a
// huge version and is rejected as such):
//   "GGUF" u32 version, u64 tensor_count, u64 kv_count
//   kv_count x { string key, u32 value_type, value }      string = u64 length + bytes (no NUL)
//   tensor_count x { string name, u32 n_dims, u64 ne[n_dims], u32 ggml_type, u64 offset }
//   padding to `general.alignment` (u32 key; default 32), then the data section: tensor i's bytes
//   at data_offset + offset_i (offset_i a multiple of the alignment).
//   value = one of ValueType below; an array is u32 element type, u64 count, count elements
//   (arrays of arrays nest).
//
// Every count, length and offset is checked against the bytes left in the file before anything is
// allocated, and against fixed limits (kMax* below), so a malformed or hostile file (truncated at
// any byte, a 10^12-element array, overlapping or misaligned tensors, unknown types) gives a
// Status naming the problem and the key or tensor, never a crash or a huge allocation. Errors are
// kFileEmpty, kFileBadIdentifier ("not a GGUF file"), kFileUnsupportedVersion, kFileTruncated,
// kFileCorrupt (bad type codes, limits, duplicates, invalid alignment), kFileOffsetOutOfBounds,
// kFileMisaligned, kFileSizeOverflow, kUnsupported (a tensor type the runtime has no dtype for,
// naming the tensor and the GGML type), kIoError (open / mmap), kNotFound / kInvalidArgument from
// the typed accessors (missing key / wrong value type).
//
// Shapes: GGUF stores ne[] fastest-varying first (ggml's order): a weight of PyTorch shape
// [n_out, n_in] (row-major, n_in contiguous) is stored with ne = {n_in, n_out}. TensorInfo::shape
// is the reversed, row-major form ([n_out, n_in]), the IR's convention; TensorInfo::ne keeps the
// file's order. A matmul weight `blk.N.attn_q.weight` is therefore [n_embd_q, n_embd] row-major,
// exactly what kernels' matmul (x . W^T, W [N, K]) consumes as is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attr_enums.h"
#include "ir/status.h"
#include "ir/types.h"

namespace laya::frontends::gguf {

// Limits (beyond "fits in the file") that bound the reader's work on hostile input.
inline constexpr uint64_t kMaxTensors = uint64_t{1} << 20;
inline constexpr uint64_t kMaxKeys = uint64_t{1} << 20;
inline constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;
inline constexpr int kMaxArrayDepth = 8;  // arrays of arrays of ...
inline constexpr uint32_t kMaxDims = 4;   // GGML_MAX_DIMS

enum class ValueType : uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};
// "u8", ..., "array"; "?" outside the list.
const char* value_type_name(ValueType t);
// Bytes of one scalar element as stored (1, 2, 4 or 8); 0 for string / array and outside the list.
uint64_t value_type_size(ValueType t);

// One metadata value. Scalars keep their bits; strings and scalar arrays point into the mapping.
struct Value {
  ValueType type = ValueType::kU8;
  uint64_t bits = 0;     // scalar: the stored bytes, zero-extended (read with the as_* below)
  std::string_view str;  // kString

  // kArray: element type and count. Scalar elements stay in the file (`elems`, unaligned, count *
  // size bytes); string elements are views into the file; nested arrays are Values.
  ValueType elem_type = ValueType::kU8;
  uint64_t count = 0;
  const uint8_t* elems = nullptr;
  std::vector<std::string_view> strings;
  std::vector<Value> arrays;

  bool is_integer() const;  // any of the 8 integer types (not bool)
  bool is_float() const;    // f32 / f64
  // Integer value (u64 above INT64_MAX is kOutOfRange); kInvalidArgument for other types.
  Result<int64_t> as_int() const;
  // f32 / f64 (integers too, converted); kInvalidArgument for strings, bools, arrays.
  Result<double> as_float() const;
  Result<bool> as_bool() const;
  Result<std::string_view> as_string() const;
  // Element i of a scalar array (precondition: type == kArray, i < count, scalar elem_type).
  int64_t int_at(uint64_t i) const;
  double float_at(uint64_t i) const;
};

struct KeyValue {
  std::string_view key;
  Value value;
};

// GGML tensor types as stored (ggml.h's enum ggml_type; values are fixed by the format).
// "q4_K", "iq2_xxs", ...; "type <n>" for an unknown value (static buffer per call site: the
// returned pointer is valid until the next call with an unknown value).
const char* ggml_type_name(uint32_t ggml_type);
// The IR dtype a GGML type maps to: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_K, q5_K,
// q6_K, i8, i32. kUnsupported (naming the type) for every other one (q2_K, q3_K, iq*, ...).
Result<ir::DType> dtype_of_ggml_type(uint32_t ggml_type);

struct TensorInfo {
  std::string_view name;
  uint32_t ggml_type = 0;
  ir::DType dtype = ir::DType::kF32;
  uint32_t n_dims = 0;
  int64_t ne[kMaxDims] = {1, 1, 1, 1};     // the file's order: ne[0] varies fastest
  int64_t shape[kMaxDims] = {1, 1, 1, 1};  // row-major: shape[i] = ne[n_dims - 1 - i]
  int64_t n_elems = 0;
  uint64_t offset = 0;  // from the start of the data section (a multiple of the alignment)
  uint64_t bytes = 0;   // dtype_bytes(dtype, n_elems)
  const uint8_t* data = nullptr;  // into the File's mapping; valid while the File lives
};

// An opened GGUF file. Move-only; owns the mapping (or borrows caller memory, see parse()).
class File {
 public:
  // Maps `path` read-only (MAP_PRIVATE) and parses it.
  static Result<File> open(const std::string& path);
  // Parses `size` bytes at `data` (caller-owned; must outlive the File and every view from it).
  // For tests and the fuzzer; no copy.
  static Result<File> parse(const uint8_t* data, uint64_t size);

  File(File&&) noexcept;
  File& operator=(File&&) noexcept;
  ~File();

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section in the file
  uint64_t file_size() const { return size_; }
  // The whole file's bytes (the mapping, or parse()'s caller memory): file_size() bytes.
  const uint8_t* bytes() const { return base_; }
  // Drops the resident pages wholly inside [p, p + n) of a mapped file (madvise DONTNEED; they are
  // read from the file again if touched), so streaming every tensor once needs no more memory than
  // one chunk. A no-op for parse()'d memory or a range outside the file.
  void release(const uint8_t* p, uint64_t n) const;

  const std::vector<KeyValue>& metadata() const { return kv_; }        // in file order
  const Value* find(std::string_view key) const;                       // null when absent
  const std::vector<TensorInfo>& tensors() const { return tensors_; }  // in file order
  const TensorInfo* tensor(std::string_view name) const;               // null when absent

  // Typed metadata: kNotFound (naming the key) when absent, kInvalidArgument when the stored type
  // does not convert (integers: any integer type; floats: f32 / f64 / integers).
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;
  // An array of strings (kInvalidArgument for other element types).
  Result<std::vector<std::string_view>> get_strings(std::string_view key) const;

 private:
  File() = default;
  Status parse_all();

  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;  // munmap(base_, size_) in the destructor
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kv_;
  std::vector<TensorInfo> tensors_;
};

// ---- decoder metadata ------------------------------------------------------------------------

// Hyperparameters of a llama-family decoder, from `general.architecture` = A and the A.* keys.
struct DecoderParams {
  std::string arch;                  // general.architecture ("llama", "qwen2", ...)
  int64_t context_length = 0;        // A.context_length
  int64_t embedding_length = 0;      // A.embedding_length (d_model)
  int64_t block_count = 0;           // A.block_count (layers)
  int64_t feed_forward_length = 0;   // A.feed_forward_length (0 when absent)
  int64_t head_count = 0;            // A.attention.head_count
  int64_t head_count_kv = 0;         // A.attention.head_count_kv (default: head_count)
  int64_t rope_dimension_count = 0;  // A.rope.dimension_count (default: d_model / head_count)
  double rope_freq_base = 10000.0;   // A.rope.freq_base (default 10000, as llama.cpp)
  double rms_norm_eps = 0;           // A.attention.layer_norm_rms_epsilon
  int64_t vocab_size = 0;            // A.vocab_size, else the token list's length (0: neither)
};
// Required keys: architecture, context_length, embedding_length, block_count, head_count,
// layer_norm_rms_epsilon. Checks head_count > 0, head_count_kv divides head_count and d_model /
// head_count is even.
Result<DecoderParams> decoder_params(const File& f);

// The tokenizer as GGUF stores it (tokenizer.ggml.*; llama.cpp's vocabulary loader reads the same
// keys). Views point into the File. Ids are -1 when the key is absent; add_bos / add_eos are -1
// (absent), 0 or 1. token_type / scores are empty when absent, else one per token. The tokenizer
// library (runtime/text/tokenizer) builds its own spec from these fields.
struct TokenizerData {
  std::string_view
      model;  // tokenizer.ggml.model: "gpt2" (byte-level BPE), "llama" (SentencePiece)...
  std::string_view pre;  // tokenizer.ggml.pre: the pre-tokenizer name ("smollm", "llama-bpe", ...)
  std::vector<std::string_view> tokens;
  std::vector<std::string_view> merges;  // "a b" pairs (BPE)
  std::vector<int32_t> token_type;       // llama_token_type: 1 normal, 2 unknown, 3 control, ...
  std::vector<float> scores;
  int64_t bos_id = -1, eos_id = -1, pad_id = -1, unk_id = -1;
  int add_bos = -1, add_eos = -1;
  std::string_view chat_template;  // tokenizer.chat_template ("" when absent)
};
// Requires tokenizer.ggml.model and .tokens; checks that token_type / scores (when present) have
// one entry per token and that the special ids are within the vocabulary.
Result<TokenizerData> tokenizer_data(const File& f);

// ---- llama-family tensors and RoPE -----------------------------------------------------------
//
// Tensor names (llama.cpp's LLM_TENSOR_NAMES; the same for llama and qwen2), N the layer:
//   token_embd.weight            [vocab, d]           embedding table
//   blk.N.attn_norm.weight       [d]                  RMSNorm before attention
//   blk.N.attn_q.weight          [n_head * hd, d]     (qwen2: + blk.N.attn_q.bias [n_head * hd])
//   blk.N.attn_k.weight          [n_head_kv * hd, d]  (qwen2: + .bias)
//   blk.N.attn_v.weight          [n_head_kv * hd, d]  (qwen2: + .bias)
//   blk.N.attn_output.weight     [d, n_head * hd]
//   blk.N.ffn_norm.weight        [d]
//   blk.N.ffn_gate.weight        [d_ff, d]            SwiGLU: down(silu(gate x) * up x)
//   blk.N.ffn_up.weight          [d_ff, d]
//   blk.N.ffn_down.weight        [d, d_ff]
//   output_norm.weight           [d]
//   output.weight                [vocab, d]           absent when tied to token_embd (SmolLM2)
// (shapes row-major as TensorInfo::shape; hd = d / n_head.)
//
// RoPE and the Q/K row order (what llama.cpp does, read from its sources):
//  - Hugging Face Llama rotates with rotate_half: dims (i, i + hd/2) pair up (NeoX style).
//  - convert_hf_to_gguf.py's LlamaModel.permute reorders the rows of q_proj and k_proj of every
//    head when writing a llama GGUF: reshape(n_head, 2, hd/2, d).swapaxes(1, 2), i.e.
//        GGUF row h*hd + 2i + s  =  HF row h*hd + s*hd/2 + i      (s in {0, 1}, i < hd/2)
//    and llama.cpp runs llama with LLAMA_ROPE_TYPE_NORM, which rotates adjacent pairs (2i, 2i+1)
//    (our RopeMode::kGptj) with frequency theta^(-2i/hd). Rotating the permuted rows by adjacent
//    pairs is the same computation as HF's rotate_half on the original rows; q.k dot products are
//    unchanged by the common permutation, and V / attn_output are not permuted, so attention
//    outputs are identical.
//  - qwen2 GGUFs are written without the permutation, and llama.cpp runs qwen2 with
//    LLAMA_ROPE_TYPE_NEOX (pairs (i, i + hd/2), our RopeMode::kNeox), exactly like HF.
// So a graph built from GGUF tensors as stored uses rope_mode_for_arch(arch); a graph built from
// HF safetensors uses kNeox for both. tests/frontends/test_gguf.cpp checks both facts: layer 0's
// attn_q / attn_k of the real SmolLM2 GGUF against the HF-order rows transformers produces from
// the same file (fixture), and kGptj on GGUF rows == kNeox on HF rows.

// kGptj for "llama" (and the other LLAMA_ROPE_TYPE_NORM architectures this runtime knows:
// none yet), kNeox for "qwen2"; kUnsupported naming the architecture otherwise.
Result<ir::RopeMode> rope_mode_for_arch(std::string_view arch);
// Whether the converter permuted Q/K rows for this architecture (llama: true; qwen2: false).
bool arch_permutes_qk(std::string_view arch);
// HF row of GGUF row `row` of a permuted Q (or K) weight with heads of `head_dim` rows.
inline int64_t hf_row_of_gguf_row(int64_t row, int64_t head_dim) {
  const int64_t h = row / head_dim, r = row % head_dim;
  return h * head_dim + (r % 2) * (head_dim / 2) + r / 2;
}

// "blk.7.ffn_up.weight" for (7, "ffn_up", "weight").
std::string layer_tensor_name(int64_t layer, std::string_view what, std::string_view suffix);

// Checks that every tensor a llama / qwen2 decoder needs is present with the shape the params
// imply (optional: output.weight, qwen2's biases), naming the first missing / misshapen tensor.
Status check_decoder_tensors(const File& f, const DecoderParams& p);

}  // namespace laya::frontends::gguf
