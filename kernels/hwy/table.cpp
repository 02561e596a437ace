#include "hwy/highway.h"
#include "hwy/targets.h"
#include "kernels/hwy/fill.h"

namespace laya::kernels {

std::vector<int64_t> kernel_hwy_targets() {
  std::vector<int64_t> targets = hwy::SupportedAndGeneratedTargets();  // lowest bit = best
  return targets;
}

const char* kernel_target_name(int64_t target) {
  return hwy::TargetName(target);
}

std::vector<std::string> kernel_table_names() {
  std::vector<std::string> names = {"auto", "ref"};
  for (int64_t t : kernel_hwy_targets()) names.push_back(kernel_target_name(t));
  return names;
}

bool kernel_table_by_name(const std::string& name, KernelTable* out) {
  if (name == "auto") {
    *out = kernel_table_hwy(0);
    return true;
  }
  if (name == "ref") {
    *out = kernel_table_ref();
    return true;
  }
  for (int64_t t : kernel_hwy_targets()) {
    if (name != kernel_target_name(t)) continue;
    *out = kernel_table_hwy(t);
    return true;
  }
  return false;
}

KernelTable kernel_table_hwy(int64_t target) {
  if (target == 0) target = kernel_hwy_targets().front();
  KernelTable t = kernel_table_ref();
  t.isa = kernel_target_name(target);
  // One line per family (kernels/hwy/fill.h):
  hwy_fill::matmul_float(t, target);
  hwy_fill::matmul_int(t, target);
  hwy_fill::attention(t, target);
  hwy_fill::eltwise(t, target);
  return t;
}

}  // namespace laya::kernels
