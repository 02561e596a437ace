// Internals of Tokenizer (runtime/text/tokenizer/tokenizer.h): lookup tables, the compiled pipeline
// steps and the per-thread work state. Not a public header.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"
#include "runtime/text/tokenizer/regex.h"
#include "runtime/text/tokenizer/spec.h"
#include "runtime/text/tokenizer/tokenizer.h"

namespace laya::tok {

uint64_t hash_bytes(const char* p, size_t n);

// string -> int32 (open addressing; keys copied into one buffer). Built once, then read-only.
class StringIdMap {
 public:
  void reserve(size_t n);
  // False when the key is already present (the stored id is kept).
  bool insert(std::string_view key, int32_t id);
  int32_t find(std::string_view key) const;  // -1 when absent
  size_t size() const { return count_; }

 private:
  struct Slot {
    uint64_t hash = 0;
    uint32_t off = 0;
    uint32_t len = 0;
    int32_t id = -1;
  };
  void grow();
  std::vector<Slot> slots_;
  std::string keys_;
  size_t count_ = 0;
};

// (left id, right id) -> (rank, merged id) for BPE merges. Read-only after build.
class PairMap {
 public:
  void reserve(size_t n);
  // Later inserts of the same pair overwrite (HF builds its merge map with the same rule).
  void insert(int32_t a, int32_t b, int32_t rank, int32_t merged);
  bool find(int32_t a, int32_t b, int32_t* rank, int32_t* merged) const {
    if (slots_.empty() || a < 0 || b < 0) return false;  // -1: a placeholder symbol
    const uint64_t key = pack(a, b);
    size_t i = mix(key) & mask_;
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == key) {
        *rank = s.rank;
        *merged = s.merged;
        return true;
      }
      if (s.key == kEmpty) return false;
      i = (i + 1) & mask_;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t mix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
  }
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t merged = 0;
  };
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

// Bump allocator whose blocks never move (pieces keep string_views into it); reset per call.
class Arena {
 public:
  char* alloc(size_t n);
  std::string_view copy(std::string_view s) {
    char* p = alloc(s.size());
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    return {p, s.size()};
  }
  void reset();

 private:
  std::vector<std::pair<std::unique_ptr<char[]>, size_t>> blocks_;
  size_t block_ = 0;
  size_t used_ = 0;
};

// A piece of text on its way through the pipeline.
struct Piece {
  std::string_view text;
  // How many leading bytes of `text` come from the input's first character (HF: have original
  // offset 0); 0 when the piece does not start there. Metaspace prepend_scheme "first" uses it.
  uint32_t origin = 0;
  bool raw_bytes = false;  // ByteLevel applied, mapping deferred: `text` holds the raw bytes
};

// A text segment after added-token extraction: text (token < 0) or an added token id.
struct Segment {
  size_t start = 0;
  size_t end = 0;
  int32_t id = -1;
};

// Cache of encoded words, one per thread and tokenizer (bounded; cleared when full).
class WordCache {
 public:
  // Appends the cached ids of `key` to *out; false when absent.
  bool get(std::string_view key, std::vector<int32_t>* out) const;
  // Keys must be 1..65535 bytes and give at most 65535 ids.
  void put(std::string_view key, const int32_t* ids, size_t n);
  void clear();

 private:
  struct Slot {
    uint32_t hash = 0;
    uint32_t key_off = 0;
    uint32_t ids_off = 0;
    uint16_t key_len = 0;  // 0: empty slot
    uint16_t ids_len = 0;
  };
  // The table starts small (the words of one request fit in L1) and doubles up to kMaxSlots;
  // a full table is cleared.
  static constexpr size_t kMinSlots = 1 << 10;
  static constexpr size_t kMaxSlots = 1 << 15;
  void rehash(size_t slots);
  std::vector<Slot> slots_;
  std::string keys_;
  std::vector<int32_t> ids_;
  size_t count_ = 0;
};

// Work state of one thread: regex match data (borrowed: it outlives the buffers), buffers, word
// caches.
struct ThreadState {
  explicit ThreadState(RegexScratch& r) : regex(r) {}
  RegexScratch& regex;
  Arena arena;
  std::vector<Piece> pieces_a, pieces_b, bert_words;
  struct Event {
    size_t start, end;
    bool is_match;
  };
  std::vector<Event> events, merged;
  std::string norm, tmp, tmp2, first, bert_a, bert_b;
  // BPE work.
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    uint32_t len;  // bytes (0 = merged away)
    uint32_t off;  // byte offset in the word (score BPE)
  };
  std::vector<Symbol> symbols;
  struct Merge {
    int32_t rank;  // BPE rank (lower first)
    float score;   // score BPE (higher first)
    int32_t pos;
    int32_t merged;  // BPE: merged id; score BPE: byte length of the pair
    int32_t right;   // score BPE: right symbol
  };
  std::vector<Merge> heap;
  std::vector<int32_t> word_ids;
  std::vector<Segment> segs_raw, segs_norm;
  std::vector<int32_t> ids_b;
  struct CacheSlot {
    uint64_t owner = 0;
    WordCache cache;
  };
  std::array<CacheSlot, 4> caches;
  uint32_t next_cache = 0;
  WordCache& cache_for(uint64_t owner);
  WordCache* cache = nullptr;  // the current tokenizer's, set by encode
  Status error;                // why a model step returned false
};
// The bound Workspace's state (tokenizer.h WorkspaceScope), else this thread's own.
ThreadState& thread_state();

// Leftmost-longest matcher over the added tokens of one kind (raw or normalized).
class AddedMatcher {
 public:
  void add(std::string_view pattern, int32_t token_index);
  void build();
  bool empty() const { return nodes_.size() <= 1; }
  // Longest pattern starting at `pos`: its length and token index, or 0.
  size_t longest_at(std::string_view s, size_t pos, int32_t* token_index) const;
  // Cheap filter before longest_at: whether some pattern can start at s[pos] (its first byte, and
  // its second byte when it is longer than one).
  bool may_start(std::string_view s, size_t pos) const {
    const auto b0 = static_cast<unsigned char>(s[pos]);
    if (!first_[b0]) return false;
    if (single_[b0] || pos + 1 >= s.size()) return true;
    const unsigned pair = b0 << 8 | static_cast<unsigned char>(s[pos + 1]);
    return (pairs_[pair >> 6] >> (pair & 63)) & 1;
  }

 private:
  struct Node {
    uint32_t edge_begin = 0;
    uint32_t edge_count = 0;
    int32_t token = -1;
  };
  struct BuildNode {
    std::vector<std::pair<unsigned char, uint32_t>> children;
    int32_t token = -1;
  };
  std::vector<BuildNode> build_;
  std::vector<Node> nodes_;
  std::vector<unsigned char> edge_byte_;
  std::vector<uint32_t> edge_to_;
  std::array<bool, 256> first_{};   // a pattern starts with this byte
  std::array<bool, 256> single_{};  // a one-byte pattern is this byte
  std::vector<uint64_t> pairs_;     // bit (b0 << 8 | b1): a pattern starts with these two bytes
};

struct AddedToken {
  AddedTokenSpec spec;
  std::string decode_text;  // the normalized form when normalized (HF's id_to_token)
};

struct NormStep {
  NormalizerSpec spec;
  Regex regex;  // kReplace
};

struct PreStep {
  PreTokenizerSpec spec;
  Regex regex;      // kSplit, kWhitespace, kByteLevel (GPT-2 regex)
  char32_t ch = 0;  // kMetaspace replacement, kCharDelimiterSplit delimiter
};

struct DecStep {
  DecoderSpec spec;
  Regex regex;  // kReplace
  char32_t ch = 0;
};

class TokenizerImpl {
 public:
  Status build(TokenizerSpec spec);

  Status encode_one(std::string_view text, const EncodeOptions& opts,
                    std::vector<int32_t>* ids) const;
  void post_process(const std::vector<int32_t>& a, const std::vector<int32_t>* b,
                    std::vector<int32_t>* out) const;
  Status decode(std::span<const int32_t> ids, bool skip_special, std::string* text) const;
  Status token_to_piece(int32_t id, bool render_special, std::string* bytes) const;

  // Pipeline parts (normalize.cpp, pretokenize.cpp, models.cpp, decode.cpp). The models run once
  // per piece and return false with ts.error set on failure (a Status is too big to return there).
  bool bpe_encode(const Piece& piece, ThreadState& ts, std::vector<int32_t>* ids) const;
  bool bpe_scores_encode(std::string_view text, ThreadState& ts, std::vector<int32_t>* ids) const;
  bool wordpiece_encode(std::string_view text, ThreadState& ts, std::vector<int32_t>* ids) const;
  Status normalize(std::string_view in, ThreadState& ts, std::string* out) const;
  Status pre_tokenize(Piece piece, ThreadState& ts, std::vector<Piece>** pieces) const;
  bool model_encode(const Piece& piece, ThreadState& ts, std::vector<int32_t>* ids) const;
  Status decode_chain(std::vector<std::string>& tokens, bool streaming) const;

  void split_added(std::string_view s, const AddedMatcher& m, bool split_special, ThreadState& ts,
                   std::vector<Segment>* out) const;

  std::string_view token_text(int32_t id) const;

  // Model tables.
  ModelSpec model;
  StringIdMap vocab_index;  // model vocab text -> id
  PairMap merges;
  int32_t unk_id = -1;
  size_t max_token_bytes = 0;
  // Byte-level pieces (raw bytes): what each byte's GPT-2 character encodes to, for the four
  // (first?, last?) positions (continuing_subword_prefix / end_of_word_suffix differ), index
  // (first | last << 1) * 256 + byte; and raw bytes -> id for ignore_merges.
  struct UnitIds {
    enum class Kind : uint8_t { kToken, kByteFallback, kUnknown } kind = Kind::kUnknown;
    std::vector<int32_t> ids;
  };
  std::array<UnitIds, 4 * 256> byte_units;
  void lookup_unit(std::string_view unit, bool first, bool last, ThreadState& ts,
                   UnitIds* out) const;
  StringIdMap raw_vocab_index;
  std::array<int32_t, 256> byte_fallback_ids{};  // <0xXX> ids, -1 when absent
  bool all_byte_fallback = false;

  // Added tokens.
  std::vector<AddedToken> added;     // by token index
  std::vector<int32_t> added_by_id;  // id -> token index, -1 when not added
  StringIdMap added_index;           // content -> id
  StringIdMap special_contents;      // contents of special added tokens
  AddedMatcher raw_matcher, norm_matcher;
  Regex word_char;  // HF's \w, for single_word

  std::vector<NormStep> normalizers;
  std::vector<PreStep> pre_tokenizers;
  bool defer_byte_level = false;  // the last pre-tokenizer is ByteLevel and the model is BPE
  bool track_origin = false;      // a Metaspace pre-tokenizer has prepend_scheme "first"
  PostProcessorSpec post;
  std::vector<DecStep> decoders;
  SpecialTokenIds special_ids;
  int32_t vocab_size = 0;
  uint64_t owner_id = 0;  // keys the per-thread word caches
};

// GPT-2's byte -> character table (the printable bytes map to themselves).
char32_t byte_to_char(uint8_t b);
// Inverse (-1 for characters outside the 256).
int char_to_byte(char32_t c);

}  // namespace laya::tok
