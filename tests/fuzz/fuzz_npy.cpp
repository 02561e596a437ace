// Fuzz target: a .npy image through laya-run's reader (tools/laya-run/npy.h). Any input must give
// an array whose data size matches its shape, or a Status; never a crash or a sanitizer report.
#include <cstdint>
#include <cstdlib>

#include "tools/laya-run/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  laya::Result<laya::tools::NpyArray> a = laya::tools::npy_parse(data, size);
  if (!a.is_ok()) return 0;
  uint64_t count = 1;
  for (int64_t d : a->shape) count *= static_cast<uint64_t>(d);
  if (a->data.size() != count * 4) std::abort();  // the reader promises exactly this
  return 0;
}
