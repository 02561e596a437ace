// The per-call memory of a decision: a caller-owned byte range from which every container the
// decision path makes is served, so that a decision touches no heap once its context exists.
//
//   mem::Arena arena(region, bytes);      // the caller's memory (a context's work region)
//   {
//     mem::Scope scope(&arena);           // this thread's mem:: containers now come from it
//     mem::vector<int32_t> ids;           // ... parse, tokenize, build rows, answer, write JSON
//     ...                                 // every such container is destroyed before reset()
//   }
//   arena.reset();                        // the next call starts from the front again
//
// Hand-out: a stack of blocks, front to back, each behind a 32-byte header. Blocks may be freed
// in any order: freeing the top block gives back its bytes and those of every freed block right
// below it; freeing another only marks it (its bytes return when the blocks above it are gone, or
// at reset()). So temporaries made and dropped in turn reuse their bytes, and a call needs about
// what it holds at its peak plus what long-lived blocks pin above freed ones. A block that does
// not fit goes to the heap and is counted (overflows()); a context is sized so that requests
// within its limits never overflow (tests/runtime/test_capi_alloc.cpp counts zero heap calls).
//
// Which arena: a container takes the arena of the thread's innermost Scope when it is made (its
// allocator keeps it: moving the container keeps it too, copying it takes the copier's), or the
// heap when no Scope is active. A Scope is set by the library's entry points (runtime/capi) for
// the duration of one call and restored when it ends: the only per-thread state of the library.
// Objects that outlive a call (a model's caches) are made under Scope(nullptr), i.e. on the heap.
//
// Under AddressSanitizer the bytes not handed out are poisoned, so a container used after its
// arena was reset is reported as a use-after-poison.
//
// Thread safety: an arena belongs to one thread at a time (its context's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

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
  // `n` bytes aligned to `align` (a power of two): from the region, else from the heap (counted).
  void* allocate(size_t n, size_t align) noexcept;
  // Returns a block from allocate(n, align) with the same n and align.
  void deallocate(void* p, size_t n, size_t align) noexcept;
  // Hands the whole region out again. Precondition: nothing allocated from it is used any more.
  void reset() noexcept;

  bool owns(const void* p) const { return p >= base_ && p < base_ + size_; }
  size_t capacity() const { return size_; }
  size_t used() const { return top_; }
  // The largest `used()` since init (over every call).
  size_t high_water() const { return high_; }
  // Allocations that did not fit and went to the heap, since init.
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

// Heap blocks when no arena is given (the same alignment rule both ways).
void* heap_allocate(size_t n, size_t align) noexcept;
void heap_deallocate(void* p, size_t n, size_t align) noexcept;

// A standard allocator over an Arena (or the heap): see the top of this file for which one.
template <class T>
class Allocator {
 public:
  using value_type = T;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;
  using propagate_on_container_copy_assignment = std::false_type;
  using is_always_equal = std::false_type;

  Allocator() noexcept : arena_(current()) {}
  explicit Allocator(Arena* a) noexcept : arena_(a) {}
  template <class U>
  Allocator(const Allocator<U>& o) noexcept : arena_(o.arena()) {}  // NOLINT: rebinding

  // n <= max_size() (the containers check it first), so n * sizeof(T) does not overflow.
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p =
        arena_ != nullptr ? arena_->allocate(bytes, alignof(T)) : heap_allocate(bytes, alignof(T));
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (arena_ != nullptr)
      arena_->deallocate(p, n * sizeof(T), alignof(T));
    else
      heap_deallocate(p, n * sizeof(T), alignof(T));
  }
  // A copy of a container takes the arena of the code that copies it.
  Allocator select_on_container_copy_construction() const noexcept { return Allocator(); }
  Arena* arena() const noexcept { return arena_; }

  template <class U>
  bool operator==(const Allocator<U>& o) const noexcept {
    return arena_ == o.arena();
  }
  template <class U>
  bool operator!=(const Allocator<U>& o) const noexcept {
    return arena_ != o.arena();
  }

 private:
  Arena* arena_;
};

template <class T>
using vector = std::vector<T, Allocator<T>>;
using string = std::basic_string<char, std::char_traits<char>, Allocator<char>>;

// std::string_view of a mem::string (and the reverse) without a temporary std::string.
inline std::string_view view(const string& s) {
  return {s.data(), s.size()};
}
inline string make_string(std::string_view s) {
  return string(s.data(), s.size());
}

}  // namespace laya::mem
