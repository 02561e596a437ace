#include "tools/laya-run/capi.h"

namespace laya::tools {

CapiError CapiModel::open(const std::string& path, const CapiModelOptions& o) {
  laya_model_params p = laya_model_default_params();
  p.backends = o.backends.c_str();
  p.kernels = o.kernels.c_str();
  p.kv_type = o.kv_type.empty() ? nullptr : o.kv_type.c_str();
  p.n_threads = o.threads;
  laya_error err;
  if (laya_model_open_file(path.c_str(), &p, &m_, &err) != LAYA_OK) return {err.code, err.message};
  return {};
}

laya_model_info CapiModel::info() const {
  laya_model_info i = laya_model_info_init();
  (void)laya_model_info_get(m_, &i);
  return i;
}

CapiError CapiContext::create(laya_model* m, const laya_context_limits& limits) {
  laya_memory_requirements req = laya_memory_requirements_init();
  laya_error err;
  if (laya_context_requirements(m, &limits, &req, &err) != LAYA_OK) return {err.code, err.message};
  limits_ = req.limits;
  laya_region regions[LAYA_REGION_COUNT] = {};
  for (int r = 0; r < LAYA_REGION_COUNT; ++r) {
    const bool huge = req.size[r] >= (uint64_t{2} << 20);
    Result<runtime::RegionBuffer> b =
        runtime::RegionBuffer::alloc(req.size[r], std::max<uint64_t>(req.alignment[r], 64), huge);
    if (!b.is_ok()) return {LAYA_E_MEMORY, b.status().message()};
    regions_[r] = std::move(b).value();
    regions[r] = {regions_[r].data(), static_cast<size_t>(regions_[r].bytes())};
  }
  if (laya_context_create(m, &limits, regions, &ctx_, &err) != LAYA_OK)
    return {err.code, err.message};
  return {};
}

int report(const CapiError& e) {
  int http = 0;
  switch (e.code) {
    case LAYA_E_REQUEST_INVALID:
      http = 400;
      break;
    case LAYA_E_REQUEST_TOO_LARGE:
      http = 413;
      break;
    case LAYA_E_REQUEST_UNPROCESSABLE:
      http = 422;
      break;
    default:
      break;
  }
  if (http)
    std::fprintf(stderr, "laya-run: request refused (HTTP %d): %s\n", http, e.message.c_str());
  else
    std::fprintf(stderr, "laya-run: %s: %s\n", laya_status_string(e.code), e.message.c_str());
  return 1;
}

}  // namespace laya::tools
