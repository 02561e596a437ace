// The kernel table: every compute kernel the CPU backend calls, as plain function pointers over raw
// row-major buffers. kernels/ depends on Highway only: no IR types, no TBB, no allocation.
//
// Two implementations fill the same table:
//  - kernel_table_ref(): scalar reference kernels (kernels/ref/, one op per file, obviously correct,
//    slow). They define the semantics; every optimized kernel is tested against them.
//  - kernel_table_hwy(target): Highway kernels (kernels/hwy/*-inl.h) for one compiled target.
//    The target is chosen once, when the table is built; nothing dispatches inside a loop.
//
// Conventions for every entry:
//  - f32 activations in and out; weights in the types of kernels/matmul.inc.
//  - Row strides are in elements. Pointers are caller-owned and only read/written during the call.
//  - `scratch` is caller-owned memory of at least the matching *_scratch_bytes(...) bytes, 64-byte
//    aligned, used only during the call (it may be reused by the next kernel).
//  - `pool` may be null (run serially). Kernels split work through parallel_for below and never
//    know what runs the chunks (the CPU HAL passes oneTBB in).
//  - Weights are packed once at prepare (`MatmulKernel::pack`) into caller-owned persistent memory;
//    execute-time entries never pack, allocate, or validate (except token ids, see `embedding`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/attr_enums.h"

namespace laya::kernels {

using ir::ActKind;
using ir::RopeMode;

// ---- threading -------------------------------------------------------------------------------

using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end);

// A parallel-for handed in by the HAL. `run(impl, n, grain, fn, ctx)` calls fn(ctx, b, e) on
// disjoint ranges covering [0, n) (each at least `grain` long except possibly the last), possibly
// concurrently, and returns when all are done. It must not allocate per call.
struct ThreadPool {
  void (*run)(void* impl, int64_t n, int64_t grain, RangeFn fn, void* ctx) = nullptr;
  void* impl = nullptr;
  int n_threads = 1;
};

// parallel_for(pool, n, grain, [&](int64_t b, int64_t e) { ... }); serial when pool is null.
template <class F>
void parallel_for(const ThreadPool* pool, int64_t n, int64_t grain, F&& f) {
  if (n <= 0) return;
  if (pool == nullptr || pool->run == nullptr || pool->n_threads <= 1 || n <= grain) {
    f(int64_t{0}, n);
    return;
  }
  using Fn = std::remove_reference_t<F>;
  pool->run(
      pool->impl, n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<Fn*>(ctx))(b, e); },
      &f);
}

// ---- weight types ----------------------------------------------------------------------------

enum class WType : uint8_t {
#define MATMUL_WTYPE(name, Name, family, peak) k##Name,
#include "kernels/matmul.inc"
#undef MATMUL_WTYPE
  kCount
};
inline constexpr int kWTypeCount = static_cast<int>(WType::kCount);
const char* wtype_name(WType t);

// ---- matrix products -------------------------------------------------------------------------

// y[m, n] = x[m, k] . W[n, k]^T (+ bias[n]) for one weight type. m == 1 is the decode GEMV path;
// m > 1 the prefill / encoder GEMM path. Integer and block paths quantize x on the fly (int8 per
// token; q8 blocks of 32 for q8_0 / q4_0 / q4_1 / q5_0 / q5_1; q8_K super-blocks of 256 for the K-quants, as
// GGUF / ggml do) into scratch and accumulate exactly in int32, then scale in f32.
struct MatmulKernel {
  // Bytes of persistent memory `pack` writes for an [n, k] weight (0: layout not supported, e.g. a
  // block type with k % 32 != 0, a K-quant with k % 256 != 0).
  uint64_t (*packed_bytes)(int64_t n, int64_t k) = nullptr;
  // Packs `w` (the file layout: row-major [n, k] of this type; i8 comes with f32 `scales[n]`, one
  // per output row; other types pass null) into `dst` (64-byte aligned, packed_bytes(n, k) long).
  void (*pack)(const void* w, const float* scales, int64_t n, int64_t k, void* dst) = nullptr;
  // Scratch bytes `run` needs for m rows with up to `n_threads` workers.
  uint64_t (*scratch_bytes)(int64_t m, int64_t n, int64_t k, int n_threads) = nullptr;
  void (*run)(const void* packed, const float* x, int64_t ldx, float* y, int64_t ldy,
              const float* bias, int64_t m, int64_t n, int64_t k, void* scratch,
              const ThreadPool* pool) = nullptr;
  // Rows at which packs stack (0: they do not): for weights [n1, k] and [n2, k] of this type with
  // n1 % stack_rows == 0, pack(W1) followed directly by pack(W2) (at packed_bytes(n1, k), a
  // multiple of 64) is pack of the stacked [n1 + n2, k], and packed_bytes adds up. So one run
  // over the stack computes several matrices that share x, and each one still runs alone on its
  // part of the stack (the CPU backend's stacked GEMVs, hal/cpu/README.md).
  int64_t stack_rows = 0;
};

// ---- attention -------------------------------------------------------------------------------

// Multi-head attention over rows of packed heads, reading K/V from any buffer with row strides
// (a KV cache of kv_len = past + q_len rows, or of cache cells, works as is).
//   q[b, i, h*hd + d]   at q + b*q_batch_stride + i*q_row_stride + h*hd + d      (h < n_heads)
//   k[b, j, g*hd + d]   likewise with k_* strides, g < n_kv_heads; v the same (a batch stride of 0
//                       shares one set of keys between the batch rows)
//   key_mask[b, j]      at key_mask + b*mask_batch_stride; 0 hides key j (nullable = all keys)
//   q_pos[b, i], q_seq[b, i]   i32 at q_pos + b*q_pos_batch_stride, q_seq + b*q_seq_batch_stride
//   k_pos[b, j], k_seq[b, j]   i32 at k_pos + b*k_pos_batch_stride, k_seq + b*k_seq_batch_stride
//                       (each nullable; q_seq and k_seq are both set or both null)
//   out[b, i, h*hd + d] at out + b*out_batch_stride + i*out_row_stride + h*hd + d
// Query i sits at position p_i = q_pos[b, i] (default kv_len - q_len + i), key j at position
// k_j = k_pos[b, j] (default j). Key j is visible to query i when
//   key_mask allows it, and (causal ? k_j <= p_i : true), and (window < 0 || |p_i - k_j| <=
//   window), and (no seq ids || (k_seq[b, j] >= 0 && q_seq[b, i] == k_seq[b, j])).
// A negative k_seq marks an empty cache cell, never visible. Positions are any int32 values (no
// overflow: differences are taken in 64 bits).
// Grouped-query: head h reads kv head h / (n_heads / n_kv_heads). A row with no visible key
// outputs zeros. Softmax of scale * q.k in f32; no [q_len, kv_len] matrix is materialized.
// K / V rows j < kv_len must be finite even where hidden: an optimized kernel may give a hidden row
// a zero weight instead of skipping it (rows hidden for a whole tile are never read). A KV cache
// therefore zero-fills cells before their first write.
// K / V elements are `kv_type`: f32, or IEEE binary16 (uint16_t bits, an f16 KV cache) converted to
// f32 on load (exactly: every f16 is an f32); the math is f32 either way. Their strides count
// elements of kv_type. An f16 row stored from an f32 beyond +-65504 is +-inf, which the rule above
// forbids: kv_write rounds finite rows of that size to inf, so keep K / V in f16 range.
enum class KvType : uint8_t { kF32 = 0, kF16 = 1 };
inline size_t kv_type_bytes(KvType t) {
  return t == KvType::kF16 ? 2 : 4;
}

struct AttentionArgs {
  const float* q = nullptr;
  int64_t q_batch_stride = 0, q_row_stride = 0;
  const void* k = nullptr;  // kv_type elements
  int64_t k_batch_stride = 0, k_row_stride = 0;
  const void* v = nullptr;  // kv_type elements
  int64_t v_batch_stride = 0, v_row_stride = 0;
  KvType kv_type = KvType::kF32;
  const int32_t* key_mask = nullptr;
  int64_t mask_batch_stride = 0;
  const int32_t* q_pos = nullptr;
  int64_t q_pos_batch_stride = 0;
  const int32_t* k_pos = nullptr;
  int64_t k_pos_batch_stride = 0;
  const int32_t* q_seq = nullptr;
  int64_t q_seq_batch_stride = 0;
  const int32_t* k_seq = nullptr;
  int64_t k_seq_batch_stride = 0;
  float* out = nullptr;
  int64_t out_batch_stride = 0, out_row_stride = 0;
  int64_t batch = 1, q_len = 0, kv_len = 0;
  int32_t n_heads = 0, n_kv_heads = 0, head_dim = 0;
  float scale = 1.0f;
  bool causal = false;
  int64_t window = -1;
};

enum class Binary : int32_t { kAdd = 0, kMul = 1 };

// ---- the table -------------------------------------------------------------------------------

struct KernelTable {
  const char* isa = "ref";  // "ref", or the Highway target name ("AVX3", "AVX2", "SSE4", ...)

  MatmulKernel matmul[kWTypeCount];

  // Heads [head_begin, head_end) of every batch row; a scheduler may split heads across callers.
  void (*attention)(const AttentionArgs& a, int32_t head_begin, int32_t head_end, void* scratch,
                    const ThreadPool* pool) = nullptr;
  uint64_t (*attention_scratch_bytes)(const AttentionArgs& a, int n_threads) = nullptr;

  // out[i, :] = table row ids[i], dequantized to f32. `table` is [vocab, dim] of `type` (i8 with
  // `scales[vocab]`, else scales null). Returns the index of the first id outside [0, vocab) (out
  // is then unspecified), or -1 when all ids are valid. This is the one execute-time check. kF32
  // rows are copied bytewise, so the gather op also moves i32 rows through it.
  int64_t (*embedding)(WType type, const void* table, const float* scales, int64_t vocab,
                       int64_t dim, const int32_t* ids, int64_t n, float* out,
                       const ThreadPool* pool) = nullptr;

  // y[r, :] = (x[r, :] - mean) / sqrt(var + eps) * gamma (+ beta, nullable); f32 statistics.
  void (*layernorm)(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
                    int64_t dim, float eps, const ThreadPool* pool) = nullptr;
  // y[r, :] = x[r, :] / sqrt(mean(x^2) + eps) * gamma.
  void (*rmsnorm)(const float* x, const float* gamma, float* y, int64_t rows, int64_t dim,
                  float eps, const ThreadPool* pool) = nullptr;
  // Rotates the first rotary_dim dims of every head of every token (rows of n_heads*head_dim,
  // contiguous) by angle pos[t] * theta^(-2i/rotary_dim); the remaining dims are copied. x may
  // equal y. Neox pairs dims (i, i + rotary_dim/2); Gptj pairs (2i, 2i+1).
  void (*rope)(const float* x, float* y, const int32_t* pos, int64_t tokens, int32_t n_heads,
               int32_t head_dim, int32_t rotary_dim, float theta, RopeMode mode,
               const ThreadPool* pool) = nullptr;
  // y = act(x) elementwise over n values; x may equal y.
  void (*unary)(ActKind act, const float* x, float* y, int64_t n, const ThreadPool* pool) = nullptr;
  // y[r, j] = act(x[r, j]) * x[r, f + j] for rows of 2f inputs and f outputs (GeGLU / SwiGLU).
  void (*glu)(ActKind act, const float* x, float* y, int64_t rows, int64_t f,
              const ThreadPool* pool) = nullptr;
  // y[r, :] = softmax(x[r, :]); x may equal y.
  void (*softmax)(const float* x, float* y, int64_t rows, int64_t dim,
                  const ThreadPool* pool) = nullptr;
  // y[i] = a[i] op b[i % nb] for i < n (n % nb == 0: b equal to a, or broadcast over rows).
  void (*binary)(Binary op, const float* a, const float* b, float* y, int64_t n, int64_t nb,
                 const ThreadPool* pool) = nullptr;
  // dst[i] = f16(src[i]) (IEEE binary16 bits, round to nearest even as F16C / DemoteTo do; beyond
  // +-65504 -> +-inf; NaN stays NaN) for i < n: kv_write into an f16 state.
  void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n) = nullptr;
  // Index of the largest value (the first on ties); n > 0.
  int64_t (*argmax)(const float* x, int64_t n) = nullptr;
  // The k largest values, descending (ties: lower index first) into idx[k], val[k]; k <= n.
  void (*topk)(const float* x, int64_t n, int32_t k, int32_t* idx, float* val) = nullptr;
  // out[r, :] = mean of the rows [starts[r], end_r) of x [n, dim], end_r = starts[r + 1] (n for the
  // last segment); zeros for an empty segment. Returns the first r whose bounds break
  // 0 <= starts[r] <= end_r <= n (out is then unspecified), or -1. An execute-time index check.
  int64_t (*segment_mean)(const float* x, int64_t n, int64_t dim, const int32_t* starts,
                          int64_t segments, float* out, const ThreadPool* pool) = nullptr;
  // y[i] = mask[i] != 0 ? x[i] : value for i < n; x may equal y.
  void (*masked_fill)(const float* x, const int32_t* mask, float value, float* y, int64_t n,
                      const ThreadPool* pool) = nullptr;
  // Laya's act-head features (ir/ops.inc, act_features) of `rows` rows of k logits, out[rows, 4].
  void (*act_features)(const float* logits, const int32_t* valid, int64_t rows, int64_t k,
                       float* out) = nullptr;
};

// The scalar reference table (always complete).
const KernelTable& kernel_table_ref();

// The Highway table for one compiled target (a HWY_* bit from kernel_hwy_targets()); 0 picks the
// best target this CPU supports. Entries a family does not provide fall back to the reference.
KernelTable kernel_table_hwy(int64_t target = 0);

// Highway targets compiled into this build that this CPU supports, best first.
std::vector<int64_t> kernel_hwy_targets();
const char* kernel_target_name(int64_t target);

// The names a kernel table is chosen by: "auto" (the best supported target), "ref", then the
// names of kernel_hwy_targets(). The one list the CPU backend's BackendOptions::kernels and
// laya-run's --kernels are checked against.
std::vector<std::string> kernel_table_names();
// The table `name` (one of kernel_table_names()) picks, into `*out`; false for any other name.
bool kernel_table_by_name(const std::string& name, KernelTable* out);

}  // namespace laya::kernels
