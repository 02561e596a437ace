// The manifests (kernels/matmul.inc, ir/act.inc) and the kernel tables agree: every Highway
// target provides every listed matmul weight type and every other table entry itself (not the
// reference fallback), and every manifest entry has a distinct name. A type or activation added to
// a manifest without a Highway implementation fails here; the family tests then check its numbers.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "kernels/kernels.h"

using namespace laya::kernels;

namespace {
// Function pointers compared as bools (doctest cannot print function pointers).
template <class F>
bool set_and_own(F mine, F reference) {
  return mine != nullptr && mine != reference;
}
}  // namespace

TEST_CASE("every Highway target implements every matmul type and every table entry") {
  const KernelTable& ref = kernel_table_ref();
  REQUIRE(!kernel_hwy_targets().empty());
  for (int64_t target : kernel_hwy_targets()) {
    const KernelTable t = kernel_table_hwy(target);
    CAPTURE(t.isa);
    CHECK(std::string(t.isa) == kernel_target_name(target));
    for (int w = 0; w < kWTypeCount; ++w) {
      CAPTURE(wtype_name(static_cast<WType>(w)));
      const MatmulKernel& k = t.matmul[w];
      const bool packed_bytes_set = k.packed_bytes != nullptr;
      const bool scratch_bytes_set = k.scratch_bytes != nullptr;
      CHECK(packed_bytes_set);
      CHECK(scratch_bytes_set);
      CHECK(set_and_own(k.run, ref.matmul[w].run));
      CHECK(set_and_own(k.pack, ref.matmul[w].pack));
    }
#define LAYA_CHECK_ENTRY(name)                          \
  CHECK_MESSAGE(set_and_own(t.name, ref.name), #name    \
                " is missing or the reference on this " \
                "target");
    LAYA_CHECK_ENTRY(attention)
    LAYA_CHECK_ENTRY(attention_scratch_bytes)
    LAYA_CHECK_ENTRY(embedding)
    LAYA_CHECK_ENTRY(layernorm)
    LAYA_CHECK_ENTRY(rmsnorm)
    LAYA_CHECK_ENTRY(rope)
    LAYA_CHECK_ENTRY(unary)
    LAYA_CHECK_ENTRY(glu)
    LAYA_CHECK_ENTRY(softmax)
    LAYA_CHECK_ENTRY(binary)
    LAYA_CHECK_ENTRY(argmax)
    LAYA_CHECK_ENTRY(topk)
#undef LAYA_CHECK_ENTRY
  }
}

TEST_CASE("manifest entries have distinct names") {
  std::set<std::string> names;
  for (int w = 0; w < kWTypeCount; ++w) names.insert(wtype_name(static_cast<WType>(w)));
  CHECK(names.size() == static_cast<size_t>(kWTypeCount));
  CHECK(names.count("?") == 0);
  names.clear();
  for (int a = 0; a < laya::ir::kActCount; ++a) names.insert(act_name(static_cast<ActKind>(a)));
  CHECK(names.size() == static_cast<size_t>(laya::ir::kActCount));
  CHECK(names.count("?") == 0);
}
