#include "kernels/ref/ref.h"

namespace laya::kernels {

namespace {
KernelTable make_ref_table() {
  KernelTable t;
  t.isa = "ref";
  for (int i = 0; i < kWTypeCount; ++i) t.matmul[i] = ref::matmul_kernel(static_cast<WType>(i));
  t.attention = ref::attention;
  t.attention_scratch_bytes = ref::attention_scratch_bytes;
  t.embedding = ref::embedding;
  t.layernorm = ref::layernorm;
  t.rmsnorm = ref::rmsnorm;
  t.rope = ref::rope;
  t.unary = ref::unary;
  t.glu = ref::glu;
  t.softmax = ref::softmax;
  t.binary = ref::binary;
  t.f32_to_f16 = ref::f32_to_f16;
  t.argmax = ref::argmax;
  t.topk = ref::topk;
  t.segment_mean = ref::segment_mean;
  t.masked_fill = ref::masked_fill;
  t.act_features = ref::act_features;
  return t;
}
}  // namespace

const KernelTable& kernel_table_ref() {
  static const KernelTable table = make_ref_table();
  return table;
}

const char* wtype_name(WType t) {
  switch (t) {
#define MATMUL_WTYPE(name, Name, family, peak) \
  case WType::k##Name:                         \
    return #name;
#include "kernels/matmul.inc"
#undef MATMUL_WTYPE
    case WType::kCount:
      break;
  }
  return "?";
}

}  // namespace laya::kernels
