// The enum-valued node attributes (ir/attrs.inc: act, rope_mode, mask), defined once here and used
// by the IR, the kernels and every backend. This header depends on nothing, so kernels/ (which
// depends on no other IR header) includes it too; the values are stored in .laya files as int32.
#pragma once

#include <cstdint>

namespace laya::ir {

// Elementwise activations, from the manifest ir/act.inc (append only: values are stored).
enum class ActKind : int32_t {
#define ACT(Name, name) k##Name,
#include "ir/act.inc"
#undef ACT
  kCount
};
inline constexpr int kActCount = static_cast<int>(ActKind::kCount);
// "gelu_erf", ...; "?" for a value outside the list.
inline const char* act_name(ActKind a) {
  switch (a) {
#define ACT(Name, name)  \
  case ActKind::k##Name: \
    return #name;
#include "ir/act.inc"
#undef ACT
    case ActKind::kCount:
      break;
  }
  return "?";
}

// RoPE pairing: kNeox rotates dims (j, j + r/2) (rotate_half); kGptj pairs (2j, 2j + 1).
enum class RopeMode : int32_t { kNeox = 0, kGptj = 1, kCount };
inline const char* rope_mode_name(RopeMode m) {
  return m == RopeMode::kNeox ? "neox" : m == RopeMode::kGptj ? "gptj" : "?";
}

// Attention visibility: kNone (bidirectional) or kCausal.
enum class MaskKind : int32_t { kNone = 0, kCausal = 1, kCount };
inline const char* mask_kind_name(MaskKind m) {
  return m == MaskKind::kNone ? "none" : m == MaskKind::kCausal ? "causal" : "?";
}

// The last enumerator (the upper limit ir/attrs.inc gives an enum attribute).
template <class E>
constexpr E enum_last() {
  return static_cast<E>(static_cast<int32_t>(E::kCount) - 1);
}

}  // namespace laya::ir
