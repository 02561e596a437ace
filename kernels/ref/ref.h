// Scalar reference kernels: one op per file, written to be obviously correct, not fast. They are
// the semantics every optimized kernel is tested against (signatures: kernels/kernels.h). Float
// sums accumulate in double; the quantized matmuls reproduce the integer computation exactly.
#pragma once

#include "kernels/kernels.h"

namespace laya::kernels::ref {

// matmul.cpp: one MatmulKernel per weight type. Packing is the file layout as is (plus, for i8,
// the per-row scales after the rows).
MatmulKernel matmul_kernel(WType type);

// attention.cpp
void attention(const AttentionArgs& a, int32_t head_begin, int32_t head_end, void* scratch,
               const ThreadPool* pool);
uint64_t attention_scratch_bytes(const AttentionArgs& a, int n_threads);

// embedding.cpp; also dequantizes one row of any weight type (used by tests and other refs).
int64_t embedding(WType type, const void* table, const float* scales, int64_t vocab, int64_t dim,
                  const int32_t* ids, int64_t n, float* out, const ThreadPool* pool);
void dequantize_row(WType type, const void* rows, const float* scales, int64_t row, int64_t dim,
                    float* out);

void layernorm(const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
               int64_t dim, float eps, const ThreadPool* pool);
void rmsnorm(const float* x, const float* gamma, float* y, int64_t rows, int64_t dim, float eps,
             const ThreadPool* pool);
// rope.cpp: angles follow Hugging Face's f32 computation (inv_freq = 1 / theta^(2i/r) in f32,
// angle = f32(pos) * inv_freq in f32, cos/sin of that f32 angle), so parity with transformers holds
// at long positions.
void rope(const float* x, float* y, const int32_t* pos, int64_t tokens, int32_t n_heads,
          int32_t head_dim, int32_t rotary_dim, float theta, RopeMode mode, const ThreadPool* pool);
// unary.cpp
float act(ActKind a, float x);
void unary(ActKind a, const float* x, float* y, int64_t n, const ThreadPool* pool);
void glu(ActKind a, const float* x, float* y, int64_t rows, int64_t f, const ThreadPool* pool);
void softmax(const float* x, float* y, int64_t rows, int64_t dim, const ThreadPool* pool);
void binary(Binary op, const float* a, const float* b, float* y, int64_t n, int64_t nb,
            const ThreadPool* pool);
// f32_to_f16.cpp (kv_write into an f16 state)
void f32_to_f16(const float* src, uint16_t* dst, int64_t n);
int64_t argmax(const float* x, int64_t n);
void topk(const float* x, int64_t n, int32_t k, int32_t* idx, float* val);
int64_t segment_mean(const float* x, int64_t n, int64_t dim, const int32_t* starts,
                     int64_t segments, float* out, const ThreadPool* pool);
void masked_fill(const float* x, const int32_t* mask, float value, float* y, int64_t n,
                 const ThreadPool* pool);
void act_features(const float* logits, const int32_t* valid, int64_t rows, int64_t k, float* out);

}  // namespace laya::kernels::ref
