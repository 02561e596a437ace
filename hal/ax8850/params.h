// The simulated AX8850: every number the simulator and its cost model use, in one struct.
//
// Three kinds of field, kept apart below:
//  - published facts (../shared/AX8850.md, with the public source named at each field);
//  - assumptions: architectural details Axera does not publish (OCM size, MAC-array tile, the
//    bf16 rate); each is a plain guess, stated as one, and the fit below absorbs its effect;
//  - fitted: the five efficiencies and overheads that make the modelled latency of every
//    published workload fall within +-25% of the published figure, with ONE set of values
//    (tools/ax8850-fit/ reproduces the fit; docs/ax8850.md shows the published-vs-modelled table).
// Every time derived from these is a *modelled* time (`modelled_ms`), never a measurement.
//
// Units: TOPS are 1e12 int8 operations per second (one MAC = 2 operations), GB/s are 1e9 bytes per
// second, `_us` microseconds, `_ms` milliseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/status.h"

namespace laya::hal::ax8850 {

// How the three resource groups are exposed (AX_ENGINE_NPU_MODE_T): one NPU of 3 groups
// (kDisable), three independent groups (kStd), or a group of 2 plus a group of 1 (kBigLittle),
// resp. 1 + 2 (kLittleBig). A model compiled for N groups runs on a vNPU group of >= N.
enum class VnpuMode : uint8_t { kDisable, kStd, kBigLittle, kLittleBig };
// Where the host runtime sits: on the chip's own Cortex-A55 cores (shared DRAM, no copies), or on
// a PC talking to an M.2 / PCIe card (AXCL: every call crosses the link; device memory is separate).
enum class Host : uint8_t { kChip, kPcie };

const char* vnpu_mode_name(VnpuMode m);  // "disable", "std", "big_little", "little_big"
const char* host_name(Host h);           // "chip", "pcie"

struct Params {
  std::string chip = "AX8850";

  // ---- configuration (backend options `vnpu=` and `host=`) ----
  VnpuMode vnpu = VnpuMode::kDisable;
  Host host = Host::kChip;

  // ---- published facts ----
  // One NPU core of 3 resource groups, each 2 CONV + 1 TENG + 1 SDMA (pulsar2 neutron v3 docs).
  int resource_groups = 3;
  // Peak int8 throughput of the whole NPU: AX8850 24 TOPS (axcl-docs); AX650N 18 TOPS.
  double int8_tops = 24.0;
  // 64-bit LPDDR4x-4266 (axcl-docs; M5Stack LLM-8850 card).
  double dram_peak_gbs = 34.1;
  // M.2 card link: PCIe 2.0 x2 = 2 lanes x 5 GT/s x 8b/10b = 1.0 GB/s each way; ~0.3 ms per call
  // round trip (cm3588-ax650n-pcie-tuning).
  double pcie_gbs = 1.0;
  double pcie_round_trip_us = 300.0;
  // NPU clock relative to the AX8850, from the published peaks (AX650N: 18 / 24). Scales the
  // vector rate and the per-op overhead (both NPU cycles); int8_tops carries the MAC rate itself.
  double clock_scale = 1.0;

  // ---- assumptions (not published; see docs/ax8850.md) ----
  // MAC rate with bf16 activations (w8a16, w16a16) relative to int8 x int8.
  double bf16_per_int8 = 0.5;
  // On-chip memory per resource group (local + shared OCM: size not published).
  uint64_t ocm_bytes = uint64_t{1} << 20;
  // MAC-array granularity: M (rows), N (output channels) and K are padded to these multiples.
  int tile_m = 16;
  int tile_n = 16;
  int tile_k = 16;
  // Barrier between vNPU groups when the parts of a split node merge (kStd, kBigLittle, ...).
  double group_sync_us = 5.0;
  // The host's CPU for fallback nodes (chip: 8x Cortex-A55 at 1.7 GHz, NEON; the fallback kernels
  // reach a fraction of its ~110 GFLOP/s fp32 peak and of the shared DRAM).
  double host_gflops = 20.0;
  double host_gbs = 6.0;
  double host_op_us = 10.0;

  // ---- fitted (tools/ax8850-fit) ----
  // Fraction of the peak MAC rate reached on aligned tiles.
  double mac_efficiency = 0.237;
  // Elementwise throughput of the three TENG units together, in 1e9 elements per second (one pass
  // over an op's output elements; softmax scores of attention count once).
  double vector_gelems = 21.1;
  // Fraction of the DRAM peak the SDMA units sustain.
  double dram_efficiency = 0.706;
  // Fixed cost of one op inside an NPU call (descriptor setup, pipeline fill).
  double op_overhead_us = 10.6;
  // Fixed cost of one NPU call on the chip (runtime entry, command submission, cache maintenance,
  // completion). A PCIe card adds pcie_round_trip_us and the link transfers.
  double call_overhead_us = 177.0;
  // Not a device cost: the fixed per-request time of the vendor's LLM runner (ax-llm) inside its
  // published TTFTs, charged only when modelling that runner (docs/ax8850.md explains the fit).
  double runner_ttft_ms = 43.7;

  // Derived rates.
  int groups_in_mode() const;                        // vNPU groups the mode exposes (1, 3 or 2)
  std::vector<int> group_sizes() const;              // resource groups per vNPU group
  double mac_per_s_per_group(bool bf16_acts) const;  // effective MACs/s of one resource group
  double vector_elems_per_s_per_group() const;
  double dram_bytes_per_s() const;  // sustained, the whole chip
  double op_overhead_ms() const;
  double call_overhead_ms() const;  // chip part only
};

// The AX8850 (the default) and the AX650N (the chip of ax-llm's published benchmark: 18 TOPS,
// clock_scale 0.75, everything else identical).
Params params_ax8850();
Params params_ax650n();

// Sets one field from text: "vnpu" (disable|std|big_little|little_big), "host" (chip|pcie),
// "chip" (ax8850|ax650n: resets every field to that chip's defaults, keeping vnpu and host),
// or any numeric field by its name above ("ocm_kib" sets ocm_bytes in KiB).
// kInvalidArgument naming the key or value otherwise.
Status params_set(Params* p, const std::string& key, const std::string& value);

// Every numeric field as "name value" lines (for `laya-run backends --verbose` and the docs).
std::string params_describe(const Params& p);

}  // namespace laya::hal::ax8850
