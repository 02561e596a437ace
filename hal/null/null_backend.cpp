// The null backend: a compilable skeleton to copy when adding a backend (see README.md here).
// It registers, reports its capabilities, and supports no op, each with a reason, so the
// scheduler's fallback path and the registry are exercised by the tests.
#include "hal/hal.h"

namespace laya::hal {
namespace {

class NullExecutable final : public Executable {
 public:
  MemoryNeeds needs() const override { return {}; }
};

class NullBackend final : public Backend {
 public:
  const Capabilities& capabilities() const override { return caps_; }

  Status supports(const ir::Graph&, const ir::Node& n, const ir::Extents*) const override {
    return status_error(StatusCode::kUnsupported, "%s: the null backend runs no ops",
                        ir::op_name(n.op));
  }

  Result<std::unique_ptr<Executable>> prepare(const Subgraph& sg, const PrepareOptions&) override {
    for (ir::NodeId id : sg.nodes)
      LAYA_RETURN_IF_ERROR(supports(*sg.graph, sg.graph->nodes[id], nullptr));
    return std::unique_ptr<Executable>(new NullExecutable());
  }
  Status load(Executable&, void*, uint64_t) override { return Status::ok(); }
  Status reshape(Executable&, const TensorBinding*, int) override { return Status::ok(); }
  Status execute(Executable&, const ExecContext&) override {
    return status_error(StatusCode::kUnsupported, "the null backend runs no ops");
  }

 private:
  Capabilities caps_{.name = "null",
                     .description = "skeleton backend: supports no op (copy it to start one)",
                     .n_groups = 1,
                     .weight_dtypes = 0,
                     .memory_kinds = 1u << static_cast<int>(MemoryKind::kHost),
                     .modelled_time = false};
};

Result<std::unique_ptr<Backend>> create(const BackendOptions& opts) {
  if (!opts.settings.empty())
    return status_error(StatusCode::kInvalidArgument, "null: unknown setting '%s'",
                        opts.settings.front().first.c_str());
  return std::unique_ptr<Backend>(new NullBackend());
}

}  // namespace

void null_register(Registry& r) {
  BackendInfo info;
  info.name = "null";
  info.create = create;
  (void)r.add(info);  // a refusal stays in r.refused(), which laya-run backends lists
}

}  // namespace laya::hal
