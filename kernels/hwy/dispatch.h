// Helpers for building a KernelTable from Highway dispatch tables, for one chosen target.
// Include after "hwy/highway.h", outside HWY_NAMESPACE, in a family's .cpp (the file that has the
// HWY_EXPORT tables).
#pragma once

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

namespace laya::kernels::hwy_dispatch {

// Index into HWY_DISPATCH_TABLE(fn) for `target` (one HWY_* bit compiled into this translation
// unit). Computed with a private ChosenTarget, so the global dispatch state is never touched.
inline size_t table_index(int64_t target) {
  hwy::ChosenTarget chosen;
  chosen.Update(target);
  return chosen.GetIndex();
}

}  // namespace laya::kernels::hwy_dispatch

// The implementation of exported function `fn` for `target`: LAYA_HWY_PICK(MatmulRun, target).
#define LAYA_HWY_PICK(fn, target) \
  HWY_DISPATCH_TABLE(fn)[::laya::kernels::hwy_dispatch::table_index(target)]
