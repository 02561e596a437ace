// The per-call memory of a decision: a caller-owned byte range from which every allocation the
// library makes during a call is served, so that a decision touches no heap once its context
// exists.
//
//   mem::Arena arena(region, bytes);      // the caller's memory (a context's work region)
//   {
//     mem::Scope scope(&arena);           // this thread's library allocations now come from it
//     ... parse, tokenize, build rows, answer, write JSON ...
//   }                                     // everything made in the call is destroyed by then,
//   arena.reset();                        // or at the start of the next call, under its Scope
//
// Hand-out: a stack of blocks, front to back, each behind a 32-byte header. Blocks may be freed
// in any order: freeing the top block gives back its bytes and those of every freed block right
// below it; freeing another only marks it (its bytes return when the blocks above it are gone, or
// at reset()). So temporaries made and dropped in turn reuse their bytes, and a call needs about
// what it holds at its peak plus what long-lived blocks pin above freed ones. A block that does
// not fit goes to the heap and is counted (overflows()); a context is sized so that requests
// within its limits never overflow (tests/runtime/test_capi_alloc.cpp counts zero heap calls).
//
// How allocations get here: the installed library (liblaya.so / liblaya.a, runtime/capi) is linked
// with its own references to operator new / delete wrapped (ld --wrap: runtime/capi/heap.cpp): a
// call to operator new from the library's code takes the thread's innermost Scope's arena, or the
// heap when no Scope is active; operator delete gives a block back to the arena that owns it, else
// to the heap. The application's own operator new is never wrapped. A Scope is set by
// decision::Context for the duration of each call: the only per-thread state of the library.
// Rules that follow: nothing made during a call may outlive it (results live until the next call
// on the context and are destroyed under its Scope); objects that outlive calls but are made
// during one (a model's compiled schema grammars) are made under Scope(nullptr), i.e. on the heap.
// The in-tree tools and tests that link the internal static libraries are not wrapped: there a
// Scope changes nothing.
//
// Under AddressSanitizer the bytes not handed out are poisoned, so a container used after its
// arena was reset is reported as a use-after-poison.
//
// Thread safety: an arena belongs to one thread at a time (its context's).
#pragma once

#include <cstddef>
#include <cstdint>

namespace laya::mem {

class Arena {
 public:
  Arena() = default;
  // [data, data + bytes) is the caller's for the arena's lifetime; data may be null with bytes 0
  // (then every allocation goes to the heap and counts as an overflow).
  Arena(void* data, size_t bytes) noexcept { init(data, bytes); }
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  void init(void* data, size_t bytes) noexcept;
  // `n` bytes aligned to `align` (a power of two) from the region, or null (counted in
  // overflows()) when they do not fit: the caller takes them from the heap instead.
  void* allocate(size_t n, size_t align) noexcept;
  // Gives back a block allocate() returned (owns(p)).
  void deallocate(void* p) noexcept;
  // Hands the whole region out again. Precondition: nothing allocated from it is used any more.
  void reset() noexcept;

  bool owns(const void* p) const { return p >= base_ && p < base_ + size_; }
  size_t capacity() const { return size_; }
  size_t used() const { return top_; }
  // The largest `used()` since init (over every call).
  size_t high_water() const { return high_; }
  // Allocations that did not fit (and went to the heap), since init.
  uint64_t overflows() const { return overflows_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  struct Header;
  Header* header(size_t data_off) const;
  size_t top_ = 0;            // bytes handed out from the front
  size_t last_ = ~size_t{0};  // data offset of the top block (~0: none)
  size_t high_ = 0;
  uint64_t overflows_ = 0;
};

// The arena of this thread's innermost Scope (nullptr: the heap).
Arena* current() noexcept;

// Sets this thread's arena until destroyed (nests; nullptr selects the heap).
class Scope {
 public:
  explicit Scope(Arena* a) noexcept;
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  Arena* prev_;
};

}  // namespace laya::mem
