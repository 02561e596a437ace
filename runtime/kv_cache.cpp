#include "runtime/kv_cache.h"

#include <algorithm>
#include <cstring>

namespace laya::runtime {

namespace {

uint64_t align64(uint64_t v) {
  return (v + 63) / 64 * 64;
}

// Dim 1 of a state: its symbol (or -1) and bounds.
bool cell_dim(const ir::Graph& g, const ir::Dim& d, int* symbol, int64_t* lo, int64_t* hi) {
  if (d.is_fixed()) {
    *symbol = -1;
    *lo = *hi = d.c;
    return d.c > 0;
  }
  int found = -1;
  for (int i = 0; i < ir::kMaxSymbols; ++i) {
    if (d.coef[i] == 0) continue;
    if (d.coef[i] != 1 || found >= 0) return false;
    found = i;
  }
  if (d.c != 0 || found < 0 || static_cast<size_t>(found) >= g.symbols.size()) return false;
  *symbol = found;
  *lo = std::max<int64_t>(1, g.symbols[static_cast<size_t>(found)].min);
  *hi = g.symbols[static_cast<size_t>(found)].max;
  return *hi >= *lo;
}

}  // namespace

Result<KvCacheLayout> kv_cache_layout(const ir::Graph& g) {
  if (g.states.empty())
    return status_error(StatusCode::kInvalidArgument,
                        "the graph has no state values (no KV cache)");
  KvCacheLayout l;
  for (size_t i = 0; i < g.states.size(); ++i) {
    const ir::Value& v = g.values[g.states[i]];
    const ir::Shape& s = v.shape;
    int symbol = -1;
    int64_t lo = 0, hi = 0;
    if (s.rank != 3 || !(s.dims[0] == ir::Dim::fixed(1)) || !s.dims[2].is_fixed() ||
        s.dims[2].c <= 0 || !cell_dim(g, s.dims[1], &symbol, &lo, &hi))
      return status_error(StatusCode::kInvalidArgument,
                          "state '%s' is %s; a KV cache state is [1, C, W] (C a symbol or a "
                          "fixed size, W fixed)",
                          v.name.c_str(), ir::shape_to_string(s, g.symbols).c_str());
    if (i == 0) {
      l.cells_symbol = symbol;
      l.min_cells = lo;
      l.max_cells = hi;
    } else if (symbol != l.cells_symbol || (symbol < 0 && lo != l.max_cells)) {
      return status_error(
          StatusCode::kInvalidArgument,
          "state '%s' has %s cells, state '%s' %s: every state needs the same C", v.name.c_str(),
          ir::dim_to_string(s.dims[1], g.symbols).c_str(), l.states[0].name.c_str(),
          ir::dim_to_string(g.values[l.states[0].value].shape.dims[1], g.symbols).c_str());
    }
    KvStateInfo st;
    st.value = g.states[i];
    st.name = v.name;
    st.dtype = v.dtype;
    st.width = s.dims[2].c;
    LAYA_ASSIGN_OR_RETURN(st.bytes_per_cell, ir::dtype_bytes(v.dtype, st.width));
    l.bytes_per_cell += st.bytes_per_cell;
    l.states.push_back(std::move(st));
  }
  return l;
}

uint64_t KvCache::region_bytes(const KvCacheLayout& layout, int64_t cells) {
  const uint64_t c = static_cast<uint64_t>(std::max<int64_t>(cells, 0));
  uint64_t bytes = 0;
  for (const KvStateInfo& s : layout.states) bytes += align64(c * s.bytes_per_cell);
  return bytes + 2 * align64(c * sizeof(int32_t));
}

Result<int64_t> KvCache::cells_for_budget(const KvCacheLayout& layout, uint64_t budget_bytes) {
  const uint64_t per_cell = layout.bytes_per_cell + 2 * sizeof(int32_t);
  const uint64_t slack = 64 * (layout.states.size() + 2);  // alignment padding, at most
  const int64_t fit =
      budget_bytes > slack ? static_cast<int64_t>((budget_bytes - slack) / per_cell) : 0;
  const int64_t cells = std::min(fit, layout.max_cells);
  const int64_t need = std::max<int64_t>(1, layout.min_cells);
  if (cells < need)
    return status_error(StatusCode::kResourceExhausted,
                        "a KV cache budget of %llu bytes holds %lld cells of %llu bytes; the model "
                        "needs at least %lld",
                        static_cast<unsigned long long>(budget_bytes), static_cast<long long>(fit),
                        static_cast<unsigned long long>(per_cell), static_cast<long long>(need));
  return cells;
}

Result<std::unique_ptr<KvCache>> KvCache::create(const KvCacheLayout& layout, int64_t cells,
                                                 int32_t max_seqs, MemoryRegion region) {
  if (layout.states.empty())
    return status_error(StatusCode::kInvalidArgument, "KV cache layout without states");
  if (cells < std::max<int64_t>(1, layout.min_cells) || cells > layout.max_cells ||
      cells > INT32_MAX)
    return status_error(StatusCode::kInvalidArgument,
                        "KV cache of %lld cells; the model takes [%lld, %lld]",
                        static_cast<long long>(cells), static_cast<long long>(layout.min_cells),
                        static_cast<long long>(layout.max_cells));
  if (max_seqs < 1)
    return status_error(StatusCode::kInvalidArgument, "KV cache for %d sequences", max_seqs);
  const uint64_t need = region_bytes(layout, cells);
  if (region.data == nullptr || region.bytes < need)
    return status_error(StatusCode::kResourceExhausted,
                        "KV cache region: %llu bytes given, %llu needed for %lld cells",
                        static_cast<unsigned long long>(region.bytes),
                        static_cast<unsigned long long>(need), static_cast<long long>(cells));
  if (reinterpret_cast<uintptr_t>(region.data) % 64 != 0)
    return status_error(StatusCode::kInvalidArgument,
                        "KV cache region at %p is not 64-byte aligned", region.data);
  std::unique_ptr<KvCache> c(new KvCache());
  c->layout_ = layout;
  c->capacity_ = cells;
  uint8_t* p = static_cast<uint8_t*>(region.data);
  std::memset(p, 0, need);
  const uint64_t n = static_cast<uint64_t>(cells);
  for (const KvStateInfo& s : layout.states) {
    c->rows_.push_back(p);
    c->regions_.push_back(MemoryRegion{p, n * s.bytes_per_cell});
    p += align64(n * s.bytes_per_cell);
  }
  c->pos_ = reinterpret_cast<int32_t*>(p);
  c->seq_ = reinterpret_cast<int32_t*>(p + align64(n * sizeof(int32_t)));
  c->seq_len_.assign(static_cast<size_t>(max_seqs), 0);
  c->last_cell_.assign(static_cast<size_t>(max_seqs), -1);
  c->index_.assign(n, 0);
  c->clear();
  return c;
}

int64_t KvCache::seq_length(int32_t seq) const {
  return seq >= 0 && seq < max_seqs() ? seq_len_[static_cast<size_t>(seq)] : 0;
}

void KvCache::clear() {
  for (int64_t c = 0; c < capacity_; ++c) {
    pos_[c] = 0;
    seq_[c] = -1;
  }
  std::fill(seq_len_.begin(), seq_len_.end(), 0);
  std::fill(last_cell_.begin(), last_cell_.end(), -1);
  n_free_ = capacity_;
  hint_ = 0;
}

bool KvCache::free_run(int64_t start, int64_t n) const {
  if (start < 0 || start + n > capacity_) return false;
  for (int64_t c = start; c < start + n; ++c)
    if (seq_[c] >= 0) return false;
  return true;
}

Status KvCache::alloc(int32_t seq, int64_t n, int32_t* cells_out, int32_t* positions_out) {
  if (seq < 0 || seq >= max_seqs())
    return status_error(StatusCode::kInvalidArgument, "KV cache: sequence id %d is outside [0, %d)",
                        seq, max_seqs());
  if (n < 1)
    return status_error(StatusCode::kInvalidArgument, "KV cache: %lld tokens to allocate",
                        static_cast<long long>(n));
  if (n > n_free_)
    return status_error(StatusCode::kResourceExhausted,
                        "KV cache full: %lld cells needed for sequence %d, %lld of %lld free",
                        static_cast<long long>(n), seq, static_cast<long long>(n_free_),
                        static_cast<long long>(capacity_));
  const size_t s = static_cast<size_t>(seq);
  // A run right after the sequence's last cell, else the first free run from the hint (wrapping),
  // else the free cells in order.
  int64_t start = -1;
  if (last_cell_[s] >= 0 && free_run(last_cell_[s] + 1, n)) start = last_cell_[s] + 1;
  for (int64_t k = 0, run = 0; start < 0 && k < capacity_ + n; ++k) {
    const int64_t c = (hint_ + k) % capacity_;
    run = c == 0 ? 0 : run;  // runs do not wrap around the end
    run = seq_[c] < 0 ? run + 1 : 0;
    if (run == n) start = c - n + 1;
  }
  const int64_t pos0 = seq_len_[s];
  int64_t c = start >= 0 ? start : 0;
  for (int64_t i = 0; i < n; ++i, ++c) {
    while (seq_[c] >= 0) ++c;  // scattered: the next free cell (n <= n_free_ guarantees one)
    seq_[c] = seq;
    pos_[c] = static_cast<int32_t>(pos0 + i);
    if (cells_out) cells_out[i] = static_cast<int32_t>(c);
    if (positions_out) positions_out[i] = static_cast<int32_t>(pos0 + i);
    last_cell_[s] = c;
  }
  seq_len_[s] = pos0 + n;
  n_free_ -= n;
  hint_ = c < capacity_ ? c : 0;
  return Status::ok();
}

Status KvCache::remove(int32_t seq, int64_t from) {
  if (seq < 0 || seq >= max_seqs() || from < 0)
    return status_error(StatusCode::kInvalidArgument,
                        "KV cache: remove(sequence %d, from %lld) (sequences [0, %d))", seq,
                        static_cast<long long>(from), max_seqs());
  const size_t s = static_cast<size_t>(seq);
  if (from >= seq_len_[s]) return Status::ok();
  last_cell_[s] = -1;
  for (int64_t c = 0; c < capacity_; ++c) {
    if (seq_[c] != seq) continue;
    if (pos_[c] >= from) {
      seq_[c] = -1;
      pos_[c] = 0;
      ++n_free_;
    } else if (pos_[c] == from - 1) {
      last_cell_[s] = c;
    }
  }
  seq_len_[s] = from;
  return Status::ok();
}

Status KvCache::copy_seq(int32_t src, int32_t dst, int64_t n) {
  if (src < 0 || src >= max_seqs() || dst < 0 || dst >= max_seqs() || src == dst)
    return status_error(StatusCode::kInvalidArgument,
                        "KV cache: copy_seq(%d, %d) (sequences [0, %d), distinct)", src, dst,
                        max_seqs());
  const int64_t len = seq_len_[static_cast<size_t>(src)];
  if (n < 0) n = len;
  if (n > len || seq_len_[static_cast<size_t>(dst)] != 0)
    return status_error(StatusCode::kInvalidArgument,
                        "KV cache: copy_seq of %lld tokens from sequence %d (%lld tokens) to "
                        "sequence %d (%lld tokens; must be empty)",
                        static_cast<long long>(n), src, static_cast<long long>(len), dst,
                        static_cast<long long>(seq_len_[static_cast<size_t>(dst)]));
  if (n == 0) return Status::ok();
  // index_[p]: the new cell of position p; then one pass over the source's cells.
  LAYA_RETURN_IF_ERROR(alloc(dst, n, index_.data(), nullptr));
  for (int64_t c = 0; c < capacity_; ++c) {
    if (seq_[c] != src || pos_[c] >= n) continue;
    const int64_t to = index_[static_cast<size_t>(pos_[c])];
    for (size_t s = 0; s < rows_.size(); ++s) {
      const uint64_t row = layout_.states[s].bytes_per_cell;
      std::memcpy(rows_[s] + static_cast<uint64_t>(to) * row,
                  rows_[s] + static_cast<uint64_t>(c) * row, row);
    }
  }
  // The rows written, as one range (the new cells are contiguous when the free space allows).
  const auto [lo, hi] = std::minmax_element(index_.begin(), index_.begin() + n);
  for (Session* s : bound_) {
    if (s == nullptr) continue;
    Status st = s->state_written(*lo, int64_t{*hi} - *lo + 1);
    if (!st.is_ok()) {
      (void)remove(dst);
      return st;
    }
  }
  return Status::ok();
}

Status KvCache::bind(Session& session) {
  for (Session* s : bound_)
    if (s == &session) return Status::ok();
  Session** slot = std::find(bound_.begin(), bound_.end(), nullptr);
  if (slot == bound_.end())
    return status_error(StatusCode::kResourceExhausted,
                        "KV cache: %d sessions are bound already (unbind one first)", kMaxBound);
  LAYA_RETURN_IF_ERROR(session.bind_states(state_regions()));
  *slot = &session;
  return Status::ok();
}

void KvCache::unbind(const Session& session) {
  for (Session*& s : bound_)
    if (s == &session) s = nullptr;
}

}  // namespace laya::runtime
