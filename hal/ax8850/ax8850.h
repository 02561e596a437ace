// The simulated AX8850 backend ("ax8850"): what tools and tests reach beyond hal/hal.h.
//
// Functional semantics (PrepareOptions::activations; bit-exact, tests/hal compare exactly):
//  - bf16 (the default, Pulsar2's LLM default w8a16): every value on the device is bf16. Float
//    inputs are rounded to bf16 when they enter an executable; every op reads bf16 values,
//    computes as the reference kernel does (f32 statistics, softmax in f32), and its output is
//    rounded to bf16 (round to nearest even). A matmul with s8 weights computes
//    y = f32(sum_k bf16(x_k) * w_k) * scale_n + bias_n (the sum exact as the reference bf16 kernel
//    forms it, from the s8 values, which bf16 holds exactly), then rounds y.
//  - f32 (the reference mode): exactly the CPU reference kernels (kernels/ref) as the CPU backend
//    runs them by default: s8 weights multiply f32 x (kernels' i8w: w8a32), bf16 / f16 weights
//    multiply f32 x, every other op in f32. The cost model charges the same
//    device (bf16 storage; s8 matmuls at the int8 rate).
// Splitting a node across groups (heads, output columns) changes no bit of its result.
//
// Memory: on the chip the NPU shares DRAM with the host (hal::MemoryKind::kHost): executables
// read and write the session's buffers. On a PCIe card (setting host=pcie) the device has its own
// memory (kDevice only): the backend allocates it at load, copies an executable's inputs from the
// host and its outputs back, and keeps values passed between its own executables on the device.
// KV caches (state values, hal.h "States") written by its kv_write stay on the device too: taken
// in once when the session binds them, written through to the host's copy row by row, told of
// the owner's own writes by state_written; a call moves only the rows it writes.
// The simulator stores device values widened to f32 / i32; the counters below (and the cost
// model) count 2 bytes per activation element, as the device stores them.
//
// Settings (hal::BackendOptions::settings): vnpu, host, chip, and any field of params.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hal/ax8850/params.h"
#include "hal/hal.h"

namespace laya::hal::ax8850 {

// What an ax8850 backend has done since it was created.
struct DeviceCounters {
  uint64_t calls = 0;      // executes (NPU calls)
  uint64_t h2d_bytes = 0;  // host -> device over the link (PCIe card only)
  uint64_t d2h_bytes = 0;  // device -> host (and the KV cache rows kv_write writes through)
  // KV cache rows taken into device memory outside calls (PCIe card): whole caches at reshape
  // when the session binds new state memory, and the rows its owner writes (state_written).
  uint64_t state_h2d_bytes = 0;
  uint64_t precompiled = 0;  // executables loaded from the model's precompiled table
  double modelled_ms = 0;    // sum of the calls' modelled times
};
// kInvalidArgument when `b` is not an ax8850 backend.
Result<DeviceCounters> device_counters(const Backend& b);
// The backend's parameters (kInvalidArgument for another backend).
Result<Params> backend_params(const Backend& b);

// The key of a subgraph in the model file's precompiled-executables table, and the simulator's
// compiled form of it (what `laya-convert --target ax8850` will embed; the driver half will embed
// Pulsar2's .axmodel instead). prepare() uses a matching entry and refuses a stale one.
std::string subgraph_key(const Subgraph& sg);
std::vector<uint8_t> compile_blob(const Subgraph& sg);

}  // namespace laya::hal::ax8850
