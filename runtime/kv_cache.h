// The KV cache of a decoder graph: the caller-owned memory behind the graph's state values (a K
// and a V state per layer), organized in cells, plus the per-cell positions and sequence ids that
// attention reads (docs/architecture.md, "States" and "Prefill and decode").
//
// Layout. Every state of the graph is [1, C, W] (C cells of W elements, ir/ops.inc kv_write);
// cell c is row c of every state. A cell is empty (sequence id -1) or holds the token at one
// position of one sequence. Two i32 arrays of C entries carry the cells' positions and sequence
// ids; they are the graph inputs with roles kCellPositions / kCellSeqIds (k_pos / k_seq of
// attention), read in place (no copy). Sequence s holds positions 0 .. seq_length(s) - 1, each in
// exactly one cell; cells of one sequence are contiguous when the free space allows.
//
// One decode step (or prefill chunk) of sequence s with n tokens:
//   cache.alloc(s, n, cells, positions);        // the token inputs kCacheCells / kPositions
//   session.reshape({..., n, cache.capacity()}); // seq = n, cells = C
//   session.execute(...);                        // kv_write stores the rows, attention reads them
// A failed execute leaves the new cells holding whatever kv_write wrote: remove(s, first position)
// frees them.
//
// Memory: one caller-owned region (region_bytes(); 64-byte aligned, 2 MiB aligned and huge pages
// recommended when large) holds the states and the two arrays; create() zero-fills it (attention
// reads K / V rows of hidden cells that share a tile with visible ones, so they must be finite:
// kernels/kernels.h). The object itself is allocated once by create(); no call after create()
// allocates (alloc, remove, copy_seq, clear run per token or per request).
//
// Sharing a prefix: copy_seq copies cells (one sequence id per cell: attention compares ids for
// equality) rather than marking them shared; see docs/design-notes.md. A backend may keep the
// states resident in device memory (hal/hal.h "States", the AX8850 card): bind(session) binds a
// session's states to the cache and has copy_seq tell it which rows it wrote.
//
// Thread safety: none; one thread at a time (the runner that owns the cache).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/session.h"

namespace laya::runtime {

// One state of the graph, as the cache lays it out.
struct KvStateInfo {
  ir::ValueId value = ir::kNoValue;
  std::string name;
  ir::DType dtype = ir::DType::kF32;
  int64_t width = 0;            // W: elements per cell
  uint64_t bytes_per_cell = 0;  // W elements of dtype
};

// What the cache needs from a graph: its states and the bounds of the cell count C.
struct KvCacheLayout {
  std::vector<KvStateInfo> states;  // in Graph::states order
  uint64_t bytes_per_cell = 0;      // sum over the states (all layers' K and V rows)
  int cells_symbol = -1;            // the symbol C is (-1: C is a fixed size)
  int64_t min_cells = 0, max_cells = 0;
};

// The layout of `g`'s states: kInvalidArgument when the graph has no state, or a state is not
// [1, C, W] with one C (a symbol, or a fixed size) shared by every state and a fixed W.
Result<KvCacheLayout> kv_cache_layout(const ir::Graph& g);

class KvCache {
 public:
  // Bytes of the region for `cells` cells: every state's [cells, W] rows, then the positions and
  // sequence ids (i32 [cells] each), each part 64-byte aligned.
  static uint64_t region_bytes(const KvCacheLayout& layout, int64_t cells);
  // The most cells whose region fits `budget_bytes`, capped at layout.max_cells. kResourceExhausted
  // when fewer than layout.min_cells (at least 1) fit.
  static Result<int64_t> cells_for_budget(const KvCacheLayout& layout, uint64_t budget_bytes);

  // Prepare phase: a cache of `cells` cells (within the layout's bounds) for sequence ids in
  // [0, max_seqs), laid out in `region` (>= region_bytes(layout, cells), 64-byte aligned; it must
  // outlive the cache and every session bound to it), which is zero-filled; every cell is empty.
  // kInvalidArgument / kResourceExhausted naming the problem.
  static Result<std::unique_ptr<KvCache>> create(const KvCacheLayout& layout, int64_t cells,
                                                 int32_t max_seqs, MemoryRegion region);

  const KvCacheLayout& layout() const { return layout_; }  // the one it was created with
  int64_t capacity() const { return capacity_; }           // C
  int64_t n_free() const { return n_free_; }
  int32_t max_seqs() const { return static_cast<int32_t>(seq_len_.size()); }
  // Tokens of `seq` in the cache (its positions are 0 .. seq_length - 1); 0 for a bad id.
  int64_t seq_length(int32_t seq) const;

  // The states' memory in Graph::states order ([C, W] rows each): for Session::bind_states.
  std::span<const MemoryRegion> state_regions() const { return regions_; }

  // Binds `session`'s states to this cache (Session::bind_states) and remembers the session, so
  // that copy_seq reports the rows it writes to it (Session::state_written: a backend keeping the
  // states resident takes them in). Up to kMaxBound sessions (kResourceExhausted beyond; binding
  // one twice is a no-op). The session must be unbound before it is destroyed. Allocates nothing.
  static constexpr int kMaxBound = 4;
  Status bind(Session& session);
  void unbind(const Session& session);

  // The graph inputs k_pos / k_seq: i32 [C] (a [1, C] tensor), valid for the cache's lifetime.
  const int32_t* cell_positions() const { return pos_; }
  const int32_t* cell_seq_ids() const { return seq_; }

  // Cells for the next `n` tokens of `seq` (positions seq_length(seq) .. + n - 1), written to
  // cells_out[n] and positions_out[n] (either may be null). The cells are marked with their
  // position and sequence id at once (the next execute's kv_write fills their rows). Placement:
  // right after the sequence's last cell when free, else the first free run of n cells, else any
  // free cells. kInvalidArgument for a sequence id outside [0, max_seqs) or n < 1;
  // kResourceExhausted ("KV cache full") when fewer than n cells are free. On failure nothing
  // changes.
  Status alloc(int32_t seq, int64_t n, int32_t* cells_out, int32_t* positions_out);

  // Frees the cells of `seq` at positions >= `from` (0: the whole sequence); its length becomes
  // min(length, from). kInvalidArgument for a bad id or from < 0.
  Status remove(int32_t seq, int64_t from = 0);

  // Empties every cell (their rows keep their old, finite values).
  void clear();

  // Copies the first `n` tokens of `src` (n < 0: all of them) into new cells of `dst`, which must
  // be empty: every state's rows, positions 0 .. n - 1 (for a prefix cache), then tells the bound
  // sessions which rows it wrote. kInvalidArgument for bad ids, a non-empty dst or n >
  // seq_length(src); kResourceExhausted when they do not fit; a bound session's error (dst is then
  // empty again).
  Status copy_seq(int32_t src, int32_t dst, int64_t n = -1);

  KvCache(const KvCache&) = delete;
  KvCache& operator=(const KvCache&) = delete;

 private:
  KvCache() = default;
  bool free_run(int64_t start, int64_t n) const;

  KvCacheLayout layout_;
  int64_t capacity_ = 0, n_free_ = 0;
  int64_t hint_ = 0;  // where the next first-fit search starts
  std::vector<MemoryRegion> regions_;
  std::vector<uint8_t*> rows_;  // per state: its [C, W] rows
  int32_t* pos_ = nullptr;
  int32_t* seq_ = nullptr;
  std::vector<int64_t> seq_len_;    // per sequence id
  std::vector<int64_t> last_cell_;  // per sequence id: the cell of its last position (-1: none)
  std::vector<int32_t> index_;      // [C] scratch of copy_seq: destination cell per position
  std::array<Session*, kMaxBound> bound_{};
};

}  // namespace laya::runtime
