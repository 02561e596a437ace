#include "runtime/prefix_cache.h"

#include <algorithm>
#include <cstring>

namespace laya::runtime {

namespace {

// splitmix64's finalizer: a 64-bit mix with full avalanche.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

int64_t PrefixCache::budget_tokens(const KvCacheLayout& layout, const PrefixCacheOptions& o) {
  if (layout.bytes_per_cell == 0 || o.block_tokens < 1) return 0;
  const int64_t cells = static_cast<int64_t>(o.budget_bytes / layout.bytes_per_cell);
  return cells / o.block_tokens * o.block_tokens;
}

Result<std::unique_ptr<PrefixCache>> PrefixCache::create(KvCache& cache,
                                                         const KvCacheLayout& layout,
                                                         const PrefixCacheOptions& o) {
  if (o.block_tokens < 1 || o.block_tokens > 4096)
    return status_error(StatusCode::kInvalidArgument,
                        "prefix cache: block of %lld tokens (1 .. 4096)",
                        static_cast<long long>(o.block_tokens));
  if (o.slots < 1 || o.first_seq < 0 || o.first_seq > cache.max_seqs() - o.slots)
    return status_error(StatusCode::kInvalidArgument,
                        "prefix cache: %d slot(s) from sequence %d do not fit the KV cache's "
                        "sequences [0, %d)",
                        o.slots, o.first_seq, cache.max_seqs());
  for (int32_t s = o.first_seq; s < o.first_seq + o.slots; ++s)
    if (cache.seq_length(s) != 0)
      return status_error(StatusCode::kInvalidArgument,
                          "prefix cache: slot sequence %d of the KV cache is not empty", s);
  const int64_t tokens = std::min(budget_tokens(layout, o), cache.capacity());
  if (tokens < o.block_tokens)
    return status_error(StatusCode::kInvalidArgument,
                        "prefix cache: a budget of %llu bytes holds no block of %lld tokens "
                        "(%llu bytes per token)",
                        static_cast<unsigned long long>(o.budget_bytes),
                        static_cast<long long>(o.block_tokens),
                        static_cast<unsigned long long>(layout.bytes_per_cell));
  std::unique_ptr<PrefixCache> p(new PrefixCache());
  p->cache_ = &cache;
  p->block_ = o.block_tokens;
  p->max_blocks_ = tokens / o.block_tokens;
  p->bytes_per_cell_ = layout.bytes_per_cell;
  p->slots_.resize(static_cast<size_t>(o.slots));
  for (int32_t i = 0; i < o.slots; ++i) p->slots_[static_cast<size_t>(i)].seq = o.first_seq + i;
  const size_t n = static_cast<size_t>(o.slots);
  p->hashes_.assign(n * static_cast<size_t>(p->max_blocks_), 0);
  p->tokens_.assign(n * static_cast<size_t>(p->max_blocks_ * p->block_), 0);
  p->query_.assign(static_cast<size_t>(p->max_blocks_), 0);
  return p;
}

void PrefixCache::hash_blocks(std::span<const int32_t> ids, int64_t blocks) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t i = b * block_; i < (b + 1) * block_; ++i)
      h = mix(h ^ static_cast<uint32_t>(ids[static_cast<size_t>(i)]));
    query_[static_cast<size_t>(b)] = h;
  }
}

int64_t PrefixCache::common_blocks(size_t s, std::span<const int32_t> ids, int64_t blocks) const {
  const int64_t n = std::min(blocks, slots_[s].blocks);
  const uint64_t* h = hashes_.data() + s * static_cast<size_t>(max_blocks_);
  int64_t m = 0;
  while (m < n && h[m] == query_[static_cast<size_t>(m)]) ++m;
  // A hash collision cannot pass: the tokens decide, block by block.
  const int32_t* t = tokens_.data() + s * static_cast<size_t>(max_blocks_ * block_);
  for (int64_t b = 0; b < m; ++b)
    if (std::memcmp(t + b * block_, ids.data() + b * block_, static_cast<size_t>(block_) * 4) != 0)
      return b;
  return m;
}

void PrefixCache::drop(size_t s) {
  Slot& slot = slots_[s];
  if (slot.blocks == 0) return;
  (void)cache_->remove(slot.seq);  // a slot's id is valid (checked by create)
  stats_.cached_tokens -= slot.blocks * block_;
  stats_.cached_bytes = static_cast<uint64_t>(stats_.cached_tokens) * bytes_per_cell_;
  slot.blocks = 0;
  slot.last_use = 0;
}

void PrefixCache::forget_stale() {
  for (size_t s = 0; s < slots_.size(); ++s)
    if (slots_[s].blocks > 0 && cache_->seq_length(slots_[s].seq) != slots_[s].blocks * block_)
      drop(s);
}

Result<int64_t> PrefixCache::restore(std::span<const int32_t> ids, int32_t seq) {
  if (seq < 0 || seq >= cache_->max_seqs() || cache_->seq_length(seq) != 0)
    return status_error(StatusCode::kInvalidArgument,
                        "prefix cache: restore into sequence %d, which must be an empty sequence "
                        "of the KV cache's [0, %d)",
                        seq, cache_->max_seqs());
  for (const Slot& slot : slots_)
    if (slot.seq == seq)
      return status_error(StatusCode::kInvalidArgument,
                          "prefix cache: sequence %d is a slot of the prefix cache", seq);
  forget_stale();
  ++stats_.lookups;
  const int64_t n = static_cast<int64_t>(ids.size());
  const int64_t whole = std::min(n / block_, max_blocks_);
  hash_blocks(ids, whole);
  int64_t best = 0;
  size_t best_slot = 0;
  for (size_t s = 0; s < slots_.size(); ++s) {
    const int64_t m = common_blocks(s, ids, whole);
    if (m > best || (m == best && m > 0 && slots_[s].last_use > slots_[best_slot].last_use)) {
      best = m;
      best_slot = s;
    }
  }
  // One token is left to run (its logits pick the next token): a prompt that is a cached prefix
  // reuses all but its last token.
  const int64_t hit = std::min(best * block_, n - 1);
  if (hit <= 0) {
    ++stats_.misses;
    return int64_t{0};
  }
  LAYA_RETURN_IF_ERROR(cache_->copy_seq(slots_[best_slot].seq, seq, hit));
  slots_[best_slot].last_use = ++tick_;
  ++stats_.hits;
  stats_.hit_tokens += hit;
  return hit;
}

Status PrefixCache::store(std::span<const int32_t> ids, int32_t seq) {
  if (seq < 0 || seq >= cache_->max_seqs())
    return status_error(StatusCode::kInvalidArgument,
                        "prefix cache: store from sequence %d outside the KV cache's [0, %d)", seq,
                        cache_->max_seqs());
  for (const Slot& slot : slots_)
    if (slot.seq == seq)
      return status_error(StatusCode::kInvalidArgument,
                          "prefix cache: sequence %d is a slot of the prefix cache", seq);
  const int64_t blocks = std::min(static_cast<int64_t>(ids.size()) / block_, max_blocks_);
  if (blocks == 0) return Status::ok();
  if (cache_->seq_length(seq) < blocks * block_)
    return status_error(StatusCode::kInvalidArgument,
                        "prefix cache: sequence %d holds %lld tokens; the prefix to store has %lld",
                        seq, static_cast<long long>(cache_->seq_length(seq)),
                        static_cast<long long>(blocks * block_));
  forget_stale();
  hash_blocks(ids, blocks);
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (slots_[s].blocks == 0) continue;
    const int64_t m = common_blocks(s, ids, blocks);
    if (m == blocks) {  // already cached (as this prefix or a longer one)
      slots_[s].last_use = ++tick_;
      return Status::ok();
    }
    if (m == slots_[s].blocks) drop(s);  // the new prefix extends this one: replace it
  }
  const int64_t need = blocks * block_;
  const int64_t budget = max_blocks_ * block_;
  for (;;) {
    size_t free_slot = slots_.size(), lru = slots_.size();
    for (size_t s = 0; s < slots_.size(); ++s) {
      if (slots_[s].blocks == 0) {
        if (free_slot == slots_.size()) free_slot = s;
      } else if (lru == slots_.size() || slots_[s].last_use < slots_[lru].last_use) {
        lru = s;
      }
    }
    if (free_slot < slots_.size() && stats_.cached_tokens + need <= budget &&
        cache_->n_free() >= need) {
      Slot& slot = slots_[free_slot];
      LAYA_RETURN_IF_ERROR(cache_->copy_seq(seq, slot.seq, need));
      slot.blocks = blocks;
      slot.last_use = ++tick_;
      std::copy_n(query_.begin(), blocks,
                  hashes_.begin() + static_cast<std::ptrdiff_t>(free_slot) * max_blocks_);
      std::copy_n(ids.begin(), need,
                  tokens_.begin() + static_cast<std::ptrdiff_t>(free_slot) * max_blocks_ * block_);
      stats_.cached_tokens += need;
      stats_.cached_bytes = static_cast<uint64_t>(stats_.cached_tokens) * bytes_per_cell_;
      ++stats_.stores;
      return Status::ok();
    }
    if (lru == slots_.size()) return Status::ok();  // every slot empty, still no cells: skip
    drop(lru);
    ++stats_.evictions;
  }
}

}  // namespace laya::runtime
