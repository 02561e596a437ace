#include "ir/arena.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define LAYA_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define LAYA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define LAYA_POISON(p, n) ((void)(p), (void)(n))
#define LAYA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace laya::mem {

namespace {
thread_local Arena* t_current = nullptr;
}  // namespace

Arena* current() noexcept {
  return t_current;
}

Scope::Scope(Arena* a) noexcept : prev_(t_current) {
  t_current = a;
}

Scope::~Scope() {
  t_current = prev_;
}

Arena::~Arena() {
  if (base_ != nullptr) LAYA_UNPOISON(base_, size_);  // the memory goes back to its owner
}

// Every block is preceded by its header: where the block began (for the give-back) and the block
// before it, so the arena is a stack whose blocks may be freed in any order: freeing the top block
// gives back its bytes and those of the freed blocks right below it; freeing another only marks it.
struct Arena::Header {
  size_t start;  // offset where the block's header (and alignment padding) begins
  size_t prev;   // data offset of the block below (kNone: none)
  size_t freed;  // 1 once deallocated (given back when it reaches the top)
  size_t size;   // the block's bytes
};

namespace {
constexpr size_t kNone = ~size_t{0};
constexpr size_t kHeader = 32;
}  // namespace

Arena::Header* Arena::header(size_t data_off) const {
  return reinterpret_cast<Header*>(base_ + data_off - kHeader);
}

void Arena::init(void* data, size_t bytes) noexcept {
  static_assert(sizeof(Header) == kHeader);
  if (base_ != nullptr) LAYA_UNPOISON(base_, size_);
  base_ = static_cast<char*>(data);
  size_ = data != nullptr ? bytes : 0;
  top_ = high_ = 0;
  last_ = kNone;
  overflows_ = 0;
  if (base_ != nullptr) LAYA_POISON(base_, size_);
}

void* Arena::allocate(size_t n, size_t align) noexcept {
  if (align < alignof(Header)) align = alignof(Header);
  if (base_ != nullptr && n <= size_ && top_ + kHeader + align <= size_ - n) {
    const uintptr_t b = reinterpret_cast<uintptr_t>(base_);
    const uintptr_t at = b + top_ + kHeader;
    const size_t data = static_cast<size_t>((at + align - 1) / align * align - b);
    LAYA_UNPOISON(base_ + data - kHeader, kHeader + n);
    Header* h = header(data);
    h->start = top_;
    h->prev = last_;
    h->freed = 0;
    h->size = n;
    last_ = data;
    top_ = data + n;
    if (top_ > high_) high_ = top_;
    return base_ + data;
  }
  ++overflows_;
  return nullptr;
}

void Arena::deallocate(void* p) noexcept {
  if (p == nullptr || !owns(p)) return;
  const size_t off = static_cast<size_t>(static_cast<char*>(p) - base_);
  Header* h = header(off);
  LAYA_POISON(static_cast<char*>(p), h->size);
  h->freed = 1;
  // Give back the top block and every freed block right below it.
  while (last_ != kNone && header(last_)->freed) {
    const Header* h = header(last_);
    top_ = h->start;
    last_ = h->prev;
    LAYA_POISON(base_ + top_, size_ - top_);
  }
}

void Arena::reset() noexcept {
  if (base_ != nullptr) LAYA_POISON(base_, size_);
  top_ = 0;
  last_ = kNone;
}

}  // namespace laya::mem
