// Reference attention: for each (batch, head, query) a full pass over the keys in double.
#include <cmath>
#include <vector>

#include "kernels/quant.h"
#include "kernels/ref/ref.h"

namespace laya::kernels::ref {

namespace {

// Element `i` of a K / V buffer of kv_type `t`, as f32.
double kv_at(const void* base, KvType t, int64_t i) {
  if (t == KvType::kF16) return double{f16_to_f32(static_cast<const uint16_t*>(base)[i])};
  return double{static_cast<const float*>(base)[i]};
}

}  // namespace

uint64_t attention_scratch_bytes(const AttentionArgs& a, int) {
  return static_cast<uint64_t>(a.kv_len) * sizeof(double) + 64;
}

void attention(const AttentionArgs& a, int32_t head_begin, int32_t head_end, void* scratch,
               const ThreadPool*) {
  double* p = static_cast<double*>(scratch);  // [kv_len] scores, then weights
  const int32_t group = a.n_heads / a.n_kv_heads;
  const int64_t hd = a.head_dim;
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int32_t h = head_begin; h < head_end; ++h) {
      const int32_t g = h / group;
      for (int64_t i = 0; i < a.q_len; ++i) {
        const float* q = a.q + b * a.q_batch_stride + i * a.q_row_stride + h * hd;
        float* out = a.out + b * a.out_batch_stride + i * a.out_row_stride + h * hd;
        const int64_t pos =
            a.q_pos ? a.q_pos[b * a.q_pos_batch_stride + i] : a.kv_len - a.q_len + i;
        double max = -INFINITY;
        for (int64_t j = 0; j < a.kv_len; ++j) {
          const int64_t kpos = a.k_pos ? a.k_pos[b * a.k_pos_batch_stride + j] : j;
          bool visible = a.key_mask == nullptr || a.key_mask[b * a.mask_batch_stride + j] != 0;
          if (a.causal && kpos > pos) visible = false;
          if (a.window >= 0 && (pos - kpos > a.window || kpos - pos > a.window)) visible = false;
          if (a.k_seq != nullptr) {
            const int32_t ks = a.k_seq[b * a.k_seq_batch_stride + j];
            if (ks < 0 || ks != a.q_seq[b * a.q_seq_batch_stride + i]) visible = false;
          }
          if (!visible) {
            p[j] = -INFINITY;
            continue;
          }
          const int64_t k0 = b * a.k_batch_stride + j * a.k_row_stride + g * hd;
          double s = 0;
          for (int64_t d = 0; d < hd; ++d) s += double{q[d]} * kv_at(a.k, a.kv_type, k0 + d);
          p[j] = s * a.scale;
          if (p[j] > max) max = p[j];
        }
        for (int64_t d = 0; d < hd; ++d) out[d] = 0.0f;
        if (max == -INFINITY) continue;  // no visible key: zeros
        double sum = 0;
        for (int64_t j = 0; j < a.kv_len; ++j) {
          p[j] = p[j] == -INFINITY ? 0.0 : std::exp(p[j] - max);
          sum += p[j];
        }
        for (int64_t d = 0; d < hd; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < a.kv_len; ++j) {
            if (p[j] == 0.0) continue;
            acc += p[j] *
                   kv_at(a.v, a.kv_type, b * a.v_batch_stride + j * a.v_row_stride + g * hd + d);
          }
          out[d] = static_cast<float>(acc / sum);
        }
      }
    }
  }
}

}  // namespace laya::kernels::ref
