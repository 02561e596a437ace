// Lookup tables and per-thread state behind Tokenizer: hash maps, the arena, the word cache, the
// added-token matcher and the GPT-2 byte map.
#include <algorithm>

#include "runtime/text/tokenizer/tokenizer_impl.h"

namespace laya::tok {

uint64_t hash_bytes(const char* p, size_t n) {
  constexpr uint64_t kMul = 0x9FB21C651E98DF25ull;
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xff51afd7ed558ccdull);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  if (n >= 4) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + n - 4, 4);
    w = static_cast<uint64_t>(hi) << 32 | lo;
  } else if (n > 0) {
    w = static_cast<uint64_t>(static_cast<unsigned char>(p[0])) << 16 |
        static_cast<uint64_t>(static_cast<unsigned char>(p[n / 2])) << 8 |
        static_cast<unsigned char>(p[n - 1]);
  }
  h = (h ^ w ^ (static_cast<uint64_t>(n) << 56)) * kMul;
  h ^= h >> 32;
  return h;
}

// --- StringIdMap -------------------------------------------------------------------------------

void StringIdMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap <= slots_.size()) return;
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(cap, Slot{});
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    size_t i = s.hash & (cap - 1);
    while (slots_[i].id >= 0) i = (i + 1) & (cap - 1);
    slots_[i] = s;
  }
}

void StringIdMap::grow() {
  reserve(std::max<size_t>(16, (count_ + 1) * 2));
}

bool StringIdMap::insert(std::string_view key, int32_t id) {
  if ((count_ + 1) * 2 > slots_.size()) grow();
  const uint64_t h = hash_bytes(key.data(), key.size());
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (slots_[i].id >= 0) {
    const Slot& s = slots_[i];
    if (s.hash == h && std::string_view(keys_.data() + s.off, s.len) == key) return false;
    i = (i + 1) & mask;
  }
  slots_[i] = {h, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(key.size()), id};
  keys_.append(key);
  ++count_;
  return true;
}

int32_t StringIdMap::find(std::string_view key) const {
  if (slots_.empty()) return -1;
  const uint64_t h = hash_bytes(key.data(), key.size());
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (true) {
    const Slot& s = slots_[i];
    if (s.id < 0) return -1;
    if (s.hash == h && s.len == key.size() &&
        std::memcmp(keys_.data() + s.off, key.data(), key.size()) == 0) {
      return s.id;
    }
    i = (i + 1) & mask;
  }
}

// --- PairMap -----------------------------------------------------------------------------------

void PairMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
}

void PairMap::insert(int32_t a, int32_t b, int32_t rank, int32_t merged) {
  const uint64_t key = pack(a, b);
  size_t i = mix(key) & mask_;
  while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
  slots_[i] = {key, rank, merged};
}

// --- Arena -------------------------------------------------------------------------------------

char* Arena::alloc(size_t n) {
  n = std::max<size_t>(n, 1);
  while (block_ < blocks_.size()) {
    if (used_ + n <= blocks_[block_].second) {
      char* p = blocks_[block_].first.get() + used_;
      used_ += n;
      return p;
    }
    ++block_;
    used_ = 0;
  }
  const size_t size = std::max<size_t>(n, 64 * 1024);
  blocks_.emplace_back(std::make_unique<char[]>(size), size);
  block_ = blocks_.size() - 1;
  used_ = n;
  return blocks_.back().first.get();
}

void Arena::reset() {
  // Keep at most the two largest blocks for the next call.
  if (blocks_.size() > 2) {
    std::sort(blocks_.begin(), blocks_.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    blocks_.resize(2);
  }
  block_ = 0;
  used_ = 0;
}

// --- WordCache ---------------------------------------------------------------------------------

bool WordCache::get(std::string_view key, std::vector<int32_t>* out) const {
  if (slots_.empty()) return false;
  const auto h = static_cast<uint32_t>(hash_bytes(key.data(), key.size()));
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.key_len == 0) return false;
    if (s.hash == h && s.key_len == key.size() &&
        std::memcmp(keys_.data() + s.key_off, key.data(), key.size()) == 0) {
      const int32_t* p = ids_.data() + s.ids_off;
      out->insert(out->end(), p, p + s.ids_len);
      return true;
    }
  }
}

void WordCache::rehash(size_t slots) {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(slots, Slot{});
  const size_t mask = slots - 1;
  for (const Slot& s : old) {
    if (s.key_len == 0) continue;
    size_t i = s.hash & mask;
    while (slots_[i].key_len != 0) i = (i + 1) & mask;
    slots_[i] = s;
  }
}

void WordCache::put(std::string_view key, const int32_t* ids, size_t n) {
  if (key.empty() || key.size() > 0xFFFF || n > 0xFFFF) return;
  if (slots_.empty()) rehash(kMinSlots);
  if ((count_ + 1) * 2 > slots_.size()) {
    if (slots_.size() < kMaxSlots) {
      rehash(slots_.size() * 2);
    } else {
      clear();
    }
  }
  const auto h = static_cast<uint32_t>(hash_bytes(key.data(), key.size()));
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  for (; slots_[i].key_len != 0; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.hash == h && s.key_len == key.size() &&
        std::memcmp(keys_.data() + s.key_off, key.data(), key.size()) == 0) {
      return;
    }
  }
  slots_[i] = {h, static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(ids_.size()),
               static_cast<uint16_t>(key.size()), static_cast<uint16_t>(n)};
  keys_.append(key);
  ids_.insert(ids_.end(), ids, ids + n);
  ++count_;
}

void WordCache::clear() {
  slots_.clear();
  keys_.clear();
  ids_.clear();
  count_ = 0;
}

// --- ThreadState -------------------------------------------------------------------------------

WordCache& ThreadState::cache_for(uint64_t owner) {
  for (CacheSlot& c : caches) {
    if (c.owner == owner) return c.cache;
  }
  CacheSlot& c = caches[next_cache];
  next_cache = (next_cache + 1) % caches.size();
  c.owner = owner;
  c.cache.clear();
  return c.cache;
}

namespace {

thread_local Workspace* t_workspace = nullptr;

struct OwnState {
  RegexScratch regex;
  ThreadState state{regex};
};

}  // namespace

ThreadState& thread_state() {
  if (t_workspace != nullptr) return *t_workspace->state_;
  thread_local OwnState own;
  return own.state;
}

Workspace::Workspace() : regex_(std::make_unique<RegexScratch>()) {
  reset();
}

Workspace::~Workspace() = default;

void Workspace::reset() {
  state_.reset();
  state_ = std::make_unique<ThreadState>(*regex_);
}

void Workspace::release() {
  state_.reset();
}

WorkspaceScope::WorkspaceScope(Workspace* ws) : prev_(t_workspace) {
  t_workspace = ws;
}

WorkspaceScope::~WorkspaceScope() {
  t_workspace = prev_;
}

// --- AddedMatcher ------------------------------------------------------------------------------

void AddedMatcher::add(std::string_view pattern, int32_t token_index) {
  if (build_.empty()) build_.emplace_back();
  uint32_t node = 0;
  for (char ch : pattern) {
    const auto b = static_cast<unsigned char>(ch);
    uint32_t next = 0;
    for (const auto& [byte, child] : build_[node].children) {
      if (byte == b) next = child;
    }
    if (next == 0) {
      next = static_cast<uint32_t>(build_.size());
      build_[node].children.emplace_back(b, next);
      build_.emplace_back();
    }
    node = next;
  }
  build_[node].token = token_index;
}

void AddedMatcher::build() {
  nodes_.assign(build_.size(), Node{});
  edge_byte_.clear();
  edge_to_.clear();
  first_ = {};
  single_ = {};
  pairs_.assign(65536 / 64, 0);
  for (size_t i = 0; i < build_.size(); ++i) {
    auto& ch = build_[i].children;
    std::sort(ch.begin(), ch.end());
    nodes_[i].edge_begin = static_cast<uint32_t>(edge_byte_.size());
    nodes_[i].edge_count = static_cast<uint32_t>(ch.size());
    nodes_[i].token = build_[i].token;
    for (const auto& [b, to] : ch) {
      edge_byte_.push_back(b);
      edge_to_.push_back(to);
      if (i != 0) continue;
      first_[b] = true;
      if (build_[to].token >= 0) single_[b] = true;
      for (const auto& [b1, to1] : build_[to].children) {
        (void)to1;
        const unsigned pair = static_cast<unsigned>(b) << 8 | b1;
        pairs_[pair >> 6] |= uint64_t{1} << (pair & 63);
      }
    }
  }
  build_.clear();
}

size_t AddedMatcher::longest_at(std::string_view s, size_t pos, int32_t* token_index) const {
  size_t best = 0;
  uint32_t node = 0;
  for (size_t i = pos; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    const Node& n = nodes_[node];
    const unsigned char* e = edge_byte_.data() + n.edge_begin;
    const unsigned char* end = e + n.edge_count;
    const unsigned char* it = std::lower_bound(e, end, b);
    if (it == end || *it != b) break;
    node = edge_to_[n.edge_begin + static_cast<uint32_t>(it - e)];
    if (nodes_[node].token >= 0) {
      best = i + 1 - pos;
      *token_index = nodes_[node].token;
    }
  }
  return best;
}

// --- GPT-2 byte map ----------------------------------------------------------------------------

namespace {

// Printable Latin-1 bytes map to themselves; the other 68 map to U+0100.. in byte order.
struct ByteMap {
  char32_t to_char[256] = {};
  int16_t from_char[0x100 + 68] = {};
};

constexpr ByteMap make_byte_map() {
  ByteMap m;
  for (int c = 0; c < 0x100 + 68; ++c) m.from_char[c] = -1;
  uint32_t n = 0;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    m.to_char[b] = printable ? b : 0x100 + n++;
    m.from_char[m.to_char[b]] = static_cast<int16_t>(b);
  }
  return m;
}

constexpr ByteMap kByteMap = make_byte_map();

}  // namespace

char32_t byte_to_char(uint8_t b) {
  return kByteMap.to_char[b];
}

int char_to_byte(char32_t c) {
  return c < 0x100 + 68 ? kByteMap.from_char[c] : -1;
}

}  // namespace laya::tok
