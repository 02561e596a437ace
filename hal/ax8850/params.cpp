#include "hal/ax8850/params.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace laya::hal::ax8850 {
namespace {

struct DoubleField {
  const char* name;
  double Params::*field;
};
constexpr DoubleField kDoubles[] = {
    {"int8_tops", &Params::int8_tops},
    {"dram_peak_gbs", &Params::dram_peak_gbs},
    {"pcie_gbs", &Params::pcie_gbs},
    {"pcie_round_trip_us", &Params::pcie_round_trip_us},
    {"clock_scale", &Params::clock_scale},
    {"bf16_per_int8", &Params::bf16_per_int8},
    {"group_sync_us", &Params::group_sync_us},
    {"host_gflops", &Params::host_gflops},
    {"host_gbs", &Params::host_gbs},
    {"host_op_us", &Params::host_op_us},
    {"mac_efficiency", &Params::mac_efficiency},
    {"vector_gelems", &Params::vector_gelems},
    {"dram_efficiency", &Params::dram_efficiency},
    {"op_overhead_us", &Params::op_overhead_us},
    {"call_overhead_us", &Params::call_overhead_us},
    {"runner_ttft_ms", &Params::runner_ttft_ms},
};
struct IntField {
  const char* name;
  int Params::*field;
};
constexpr IntField kInts[] = {
    {"resource_groups", &Params::resource_groups},
    {"tile_m", &Params::tile_m},
    {"tile_n", &Params::tile_n},
    {"tile_k", &Params::tile_k},
};

bool parse_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

}  // namespace

const char* vnpu_mode_name(VnpuMode m) {
  switch (m) {
    case VnpuMode::kDisable:
      return "disable";
    case VnpuMode::kStd:
      return "std";
    case VnpuMode::kBigLittle:
      return "big_little";
    case VnpuMode::kLittleBig:
      return "little_big";
  }
  return "?";
}

const char* host_name(Host h) {
  return h == Host::kChip ? "chip" : "pcie";
}

int Params::groups_in_mode() const {
  return static_cast<int>(group_sizes().size());
}

std::vector<int> Params::group_sizes() const {
  switch (vnpu) {
    case VnpuMode::kDisable:
      return {resource_groups};
    case VnpuMode::kStd:
      return std::vector<int>(static_cast<size_t>(resource_groups), 1);
    case VnpuMode::kBigLittle:
      return {resource_groups - 1, 1};
    case VnpuMode::kLittleBig:
      return {1, resource_groups - 1};
  }
  return {resource_groups};
}

double Params::mac_per_s_per_group(bool bf16_acts) const {
  const double macs = int8_tops * 1e12 / 2.0 / resource_groups;
  return macs * (bf16_acts ? bf16_per_int8 : 1.0) * mac_efficiency;
}

double Params::vector_elems_per_s_per_group() const {
  return vector_gelems * 1e9 * clock_scale / resource_groups;
}

double Params::dram_bytes_per_s() const {
  return dram_peak_gbs * 1e9 * dram_efficiency;
}

double Params::op_overhead_ms() const {
  return op_overhead_us / clock_scale / 1000.0;
}

double Params::call_overhead_ms() const {
  return call_overhead_us / 1000.0;
}

Params params_ax8850() {
  return Params{};
}

Params params_ax650n() {
  Params p;
  p.chip = "AX650N";
  p.int8_tops = 18.0;  // ax-llm's benchmark chip; 72 TOPS int4
  p.clock_scale = 18.0 / 24.0;
  return p;
}

Status params_set(Params* p, const std::string& key, const std::string& value) {
  if (key == "vnpu") {
    for (VnpuMode m :
         {VnpuMode::kDisable, VnpuMode::kStd, VnpuMode::kBigLittle, VnpuMode::kLittleBig})
      if (value == vnpu_mode_name(m)) {
        p->vnpu = m;
        return Status::ok();
      }
    return status_error(StatusCode::kInvalidArgument,
                        "ax8850: vnpu '%s' is not one of disable, std, big_little, little_big",
                        value.c_str());
  }
  if (key == "host") {
    if (value != "chip" && value != "pcie")
      return status_error(StatusCode::kInvalidArgument, "ax8850: host '%s' is not chip or pcie",
                          value.c_str());
    p->host = value == "chip" ? Host::kChip : Host::kPcie;
    return Status::ok();
  }
  if (key == "chip") {
    if (value != "ax8850" && value != "ax650n")
      return status_error(StatusCode::kInvalidArgument, "ax8850: chip '%s' is not ax8850 or ax650n",
                          value.c_str());
    Params q = value == "ax8850" ? params_ax8850() : params_ax650n();
    q.vnpu = p->vnpu;
    q.host = p->host;
    *p = q;
    return Status::ok();
  }
  bool known = key == "ocm_kib";
  for (const IntField& f : kInts) known = known || key == f.name;
  for (const DoubleField& f : kDoubles) known = known || key == f.name;
  if (!known)
    return status_error(StatusCode::kInvalidArgument,
                        "ax8850: unknown option '%s' (have: vnpu, host, chip, ocm_kib and the "
                        "fields of hal/ax8850/params.h)",
                        key.c_str());
  double v = 0;
  if (!parse_double(value, &v))
    return status_error(StatusCode::kInvalidArgument, "ax8850: %s=%s is not a number", key.c_str(),
                        value.c_str());
  if (key == "ocm_kib") {
    if (v < 1 || v > 1 << 20)
      return status_error(StatusCode::kInvalidArgument, "ax8850: ocm_kib=%s is outside [1, 2^20]",
                          value.c_str());
    p->ocm_bytes = static_cast<uint64_t>(v * 1024);
    return Status::ok();
  }
  for (const IntField& f : kInts)
    if (key == f.name) {
      if (v < 1 || v > 4096 || v != std::floor(v))
        return status_error(StatusCode::kInvalidArgument,
                            "ax8850: %s=%s must be a whole number in [1, 4096]", key.c_str(),
                            value.c_str());
      p->*f.field = static_cast<int>(v);
      return Status::ok();
    }
  for (const DoubleField& f : kDoubles)
    if (key == f.name) {
      if (v < 0)
        return status_error(StatusCode::kInvalidArgument, "ax8850: %s=%s is negative", key.c_str(),
                            value.c_str());
      p->*f.field = v;
      return Status::ok();
    }
  return Status::ok();
}

std::string params_describe(const Params& p) {
  std::string s =
      "chip " + p.chip + "\nvnpu " + vnpu_mode_name(p.vnpu) + "\nhost " + host_name(p.host) + "\n";
  char buf[96];
  for (const IntField& f : kInts) {
    std::snprintf(buf, sizeof buf, "%s %d\n", f.name, p.*f.field);
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "ocm_kib %llu\n",
                static_cast<unsigned long long>(p.ocm_bytes / 1024));
  s += buf;
  for (const DoubleField& f : kDoubles) {
    std::snprintf(buf, sizeof buf, "%s %.6g\n", f.name, p.*f.field);
    s += buf;
  }
  return s;
}

}  // namespace laya::hal::ax8850
