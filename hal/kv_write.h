// kv_write (ir/ops.inc) on host-addressable memory, for the backends that run it there (cpu, the
// AX8850 simulator): every cell is checked before anything is written, then row i of the rows
// goes into cell cells[i] of the cache, f32 as it is or f16 rounded to nearest even.
#pragma once

#include <cstdint>
#include <cstring>

#include "ir/graph.h"
#include "ir/status.h"
#include "kernels/kernels.h"

namespace laya::hal {

// kIndexOutOfRange naming node `id` of `g`, the position and the cell when one of the `n` cells
// is outside [0, cache_cells).
inline Status kv_write_check(const ir::Graph& g, ir::NodeId id, const int32_t* cells, int64_t n,
                             int64_t cache_cells) {
  for (int64_t i = 0; i < n; ++i)
    if (cells[i] < 0 || cells[i] >= cache_cells)
      return status_error(StatusCode::kIndexOutOfRange,
                          "kv_write '%s' (node %u): cell %d at position %lld is outside [0, %lld)",
                          g.nodes[id].name.c_str(), id, cells[i], static_cast<long long>(i),
                          static_cast<long long>(cache_cells));
  return Status::ok();
}

// Rows [n, dim] into the cache's cells (checked by kv_write_check); `t` converts to f16.
inline void kv_write_rows(const kernels::KernelTable& t, kernels::KvType type, const float* rows,
                          int64_t n, int64_t dim, const int32_t* cells, void* cache) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = int64_t{cells[i]} * dim;
    if (type == kernels::KvType::kF16)
      t.f32_to_f16(rows + i * dim, static_cast<uint16_t*>(cache) + at, dim);
    else
      std::memcpy(static_cast<float*>(cache) + at, rows + i * dim,
                  static_cast<size_t>(dim) * sizeof(float));
  }
}

}  // namespace laya::hal
