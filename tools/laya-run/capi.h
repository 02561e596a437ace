// laya-run over the C API (include/laya/laya.h): a model, and a context on regions laya-run
// allocates at the sizes laya_context_requirements gives (huge pages for the large ones), as an
// embedder would. decide, generate and score run through these; their messages name the call.
#pragma once

#include <cstdio>
#include <string>

#include "include/laya/laya.h"
#include "runtime/session.h"

namespace laya::tools {

// A failed C API call: its code and message.
struct CapiError {
  laya_status code = LAYA_OK;
  std::string message;
  bool ok() const { return code == LAYA_OK; }
};

// The CLI's options that become laya_model_params.
struct CapiModelOptions {
  std::string backends = "cpu", kernels = "auto", kv_type;
  int threads = 0;
};

class CapiModel {
 public:
  CapiModel() = default;
  ~CapiModel() { laya_model_close(m_); }
  CapiModel(const CapiModel&) = delete;
  CapiModel& operator=(const CapiModel&) = delete;

  CapiError open(const std::string& path, const CapiModelOptions& o);
  laya_model* get() const { return m_; }
  laya_model_info info() const;

 private:
  laya_model* m_ = nullptr;
};

class CapiContext {
 public:
  CapiContext() = default;
  ~CapiContext() { laya_context_destroy(ctx_); }
  CapiContext(const CapiContext&) = delete;
  CapiContext& operator=(const CapiContext&) = delete;

  // Requirements, then the regions (allocated here), then the context.
  CapiError create(laya_model* m, const laya_context_limits& limits);
  laya_context* get() const { return ctx_; }
  // The limits the context was made with, every default filled in.
  const laya_context_limits& limits() const { return limits_; }
  // The error of the last call on the context with code `s`.
  CapiError error(laya_status s) const { return {s, laya_context_error(ctx_)}; }

 private:
  laya_context* ctx_ = nullptr;
  laya_context_limits limits_ = {};
  runtime::RegionBuffer regions_[LAYA_REGION_COUNT];
};

// Prints `e` as laya-run does (a refused request: "request refused (HTTP 4xx): ...") and returns
// exit code 1.
int report(const CapiError& e);

}  // namespace laya::tools
