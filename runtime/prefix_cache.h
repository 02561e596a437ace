// The prefix cache of a decoder (docs/architecture.md, "Prefill and decode"): the KV cells of
// prompt prefixes kept in the KV cache so that a later prompt with the same prefix prefills only
// its suffix.
//
// Blocks and hashes. A prompt is cut into blocks of B tokens (block_tokens); block i's hash chains
// the hash of blocks 0 .. i - 1 with its own tokens, so equal hashes at block i mean (up to a
// collision, which a token comparison rules out) equal prompts up to the end of block i. Only whole
// blocks are cached: the prefix of a prompt of n tokens that is stored is its first
// floor(n / B) * B tokens.
//
// Slots. Each of `slots` slots owns one sequence id of the KV cache (first_seq .. first_seq +
// slots - 1) and holds the cells of one cached prefix there. restore() finds the slot sharing the
// most leading blocks with a prompt (the longest common prefix wins; on a tie the most recently
// used), copies those cells into the caller's (empty) sequence with KvCache::copy_seq and returns
// the token count: the caller prefills only the rest. At least one prompt token is always left
// for the caller to run, since its logits pick the next token. store() keeps the prompt's whole
// blocks, already in the caller's sequence, in a slot: a slot whose prefix the new one extends is
// replaced, a slot that already covers it is only marked used; otherwise the least recently used
// slots are evicted until a slot is free, the budget holds the new prefix and the cache has the
// cells for it.
//
// Budget. budget_bytes bounds the KV bytes of all cached prefixes together (tokens x the layout's
// bytes per cell); a prefix longer than the budget is stored cut to the whole blocks that fit. The
// cells live in the KV cache's region (the caller's memory): size the cache for the working
// sequences plus budget_tokens() cells, or store() evicts and then skips prefixes that find no
// free cells (it never takes cells a working sequence needs later, as long as the cache is sized
// so).
//
// Memory: create() allocates the slots' hashes and tokens (slots x budget_tokens() each) and a
// scratch array; restore and store allocate nothing (per request, not per token).
// Ownership: the prefix cache borrows the KV cache, which must outlive it. A KvCache::clear() or
// remove() of a slot's sequence behind its back is noticed (the slot is dropped at the next call).
// Thread safety: none; the thread that drives the KV cache.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ir/status.h"
#include "runtime/kv_cache.h"

namespace laya::runtime {

struct PrefixCacheOptions {
  int64_t block_tokens = 32;  // B, 1 .. 4096
  int32_t first_seq = 1;      // slot i holds its prefix in KV sequence first_seq + i
  int32_t slots = 4;          // >= 1; sequences first_seq .. first_seq + slots - 1 must exist
  uint64_t budget_bytes = 0;  // KV bytes of every cached prefix together (>= one block)
};

struct PrefixCacheStats {
  int64_t lookups = 0;        // restore() calls
  int64_t hits = 0;           // lookups that reused at least one token
  int64_t misses = 0;         // lookups that reused none
  int64_t hit_tokens = 0;     // tokens reused over all hits
  int64_t stores = 0;         // prefixes stored (new or replacing a shorter one of theirs)
  int64_t evictions = 0;      // slots evicted for room (LRU)
  int64_t cached_tokens = 0;  // now in the slots
  uint64_t cached_bytes = 0;  // cached_tokens x bytes per cell (<= budget_bytes)
};

class PrefixCache {
 public:
  // Tokens of KV the budget holds: floor(budget_bytes / bytes_per_cell / B) * B.
  static int64_t budget_tokens(const KvCacheLayout& layout, const PrefixCacheOptions& o);

  // A prefix cache over `cache` (its layout `layout`, the one the cache was created with).
  // kInvalidArgument when B is outside [1, 4096], there is no slot, the slots' sequence ids are
  // outside the cache's or not empty, or the budget holds no block.
  static Result<std::unique_ptr<PrefixCache>> create(KvCache& cache, const KvCacheLayout& layout,
                                                     const PrefixCacheOptions& o);

  // Copies the longest cached prefix of `ids` (whole blocks, at most ids.size() - 1 tokens) into
  // sequence `seq` of the cache, which must be empty and not a slot's, and returns its length
  // (0: a miss, nothing copied). kInvalidArgument for a bad or non-empty `seq`; the cache's
  // kResourceExhausted when the copy finds too few free cells (nothing copied).
  Result<int64_t> restore(std::span<const int32_t> ids, int32_t seq);

  // Keeps the whole blocks of `ids` (the tokens at positions 0 .. of sequence `seq`, which holds
  // at least them) in a slot, evicting least recently used slots as needed. kInvalidArgument for a
  // bad `seq` or one shorter than the blocks; a prefix that finds no free cells after every
  // eviction is not stored (not an error).
  Status store(std::span<const int32_t> ids, int32_t seq);

  const PrefixCacheStats& stats() const { return stats_; }
  int64_t block_tokens() const { return block_; }
  const KvCache& kv_cache() const { return *cache_; }

  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

 private:
  struct Slot {
    int32_t seq = -1;
    int64_t blocks = 0;  // 0: free
    uint64_t last_use = 0;
  };

  PrefixCache() = default;
  // Chained hashes of the first `blocks` blocks of ids into query_.
  void hash_blocks(std::span<const int32_t> ids, int64_t blocks);
  // Leading blocks slot `s` shares with ids (query_ holds their hashes, `blocks` of them).
  int64_t common_blocks(size_t s, std::span<const int32_t> ids, int64_t blocks) const;
  void drop(size_t s);  // frees a slot and its cells
  void forget_stale();  // drops slots whose sequence the cache no longer holds

  KvCache* cache_ = nullptr;
  int64_t block_ = 0, max_blocks_ = 0;
  uint64_t bytes_per_cell_ = 0;
  uint64_t tick_ = 0;
  std::vector<Slot> slots_;
  std::vector<uint64_t> hashes_;  // [slots, max_blocks]
  std::vector<int32_t> tokens_;   // [slots, max_blocks * B]
  std::vector<uint64_t> query_;   // [max_blocks]
  PrefixCacheStats stats_;
};

}  // namespace laya::runtime
