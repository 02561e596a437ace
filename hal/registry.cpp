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
  const char* name = info.name != nullptr ? info.name : "";
  Status s;
  if (info.api_version != kApiVersion)
    s = status_error(StatusCode::kBackendVersionMismatch,
                     "backend '%s' was built against HAL API %u, this runtime has %u", name,
                     info.api_version, kApiVersion);
  else if (name[0] == '\0')
    s = status_error(StatusCode::kInvalidArgument, "a backend without a name");
  else if (info.create == nullptr)
    s = status_error(StatusCode::kInvalidArgument, "backend '%s' has no create function", name);
  else if (find(name) != nullptr)
    s = status_error(StatusCode::kInvalidArgument, "backend '%s' registered twice", name);
  if (!s.is_ok()) {
    refused_.push_back({name, s});
    return s;
  }
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
  for (const RefusedBackend& r : refused_)
    if (info == nullptr && r.name == name) return r.reason;
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
