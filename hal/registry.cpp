#include "hal/hal.h"

namespace laya::hal {

Result<Estimate> Backend::estimate(const Subgraph&, const ir::Extents*, ir::DType) const {
  return status_error(StatusCode::kUnsupported, "backend '%s' has no cost model",
                      capabilities().name);
}

std::string BackendOptions::get(const std::string& key, const std::string& def) const {
  std::string v = def;
  for (const auto& [k, value] : settings)
    if (k == key) v = value;
  return v;
}

Status Registry::add(const BackendInfo& info) {
  if (info.api_version != kApiVersion)
    return status_error(StatusCode::kBackendVersionMismatch,
                        "backend '%s' was built against HAL API %u, this runtime has %u", info.name,
                        info.api_version, kApiVersion);
  if (info.create == nullptr)
    return status_error(StatusCode::kInvalidArgument, "backend '%s' has no create function",
                        info.name);
  if (find(info.name) != nullptr)
    return status_error(StatusCode::kInvalidArgument, "backend '%s' registered twice", info.name);
  backends_.push_back(info);
  return Status::ok();
}

const BackendInfo* Registry::find(const std::string& name) const {
  for (const BackendInfo& b : backends_)
    if (name == b.name) return &b;
  return nullptr;
}

Result<std::unique_ptr<Backend>> Registry::create(const std::string& name,
                                                  const BackendOptions& opts) const {
  const BackendInfo* info = find(name);
  if (info == nullptr) {
    std::string known;
    for (const BackendInfo& b : backends_) known += std::string(known.empty() ? "" : ", ") + b.name;
    return status_error(StatusCode::kNotFound, "no backend '%s' in this build (have: %s)",
                        name.c_str(), known.c_str());
  }
  return info->create(opts);
}

const Registry& builtin_registry() {
  static const Registry registry = [] {
    Registry r;
    register_builtin_backends(r);
    return r;
  }();
  return registry;
}

}  // namespace laya::hal
