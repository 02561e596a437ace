// The library's operator new / delete (ir/arena.h): liblaya is linked with its own references to
// the global operator new / delete wrapped (ld --wrap=<symbol>, runtime/capi/meson.build), so that
// an allocation the library makes while a mem::Scope is active comes from that scope's arena (the
// context's work region) and a block of an arena goes back to it. With no Scope, or when the
// arena is full (counted in Arena::overflows()), the real operator new runs. The application's
// own operator new / delete are never wrapped (the renaming applies to liblaya's references
// only).
#include <cstddef>
#include <new>

#include "ir/arena.h"

using laya::mem::Arena;
using laya::mem::current;

namespace {

constexpr size_t kAlign = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

// The arena that owns `p` is the one in scope: blocks of a call die in that call or at the start
// of the next call on the same context, under its Scope.
Arena* owner(void* p) {
  Arena* a = current();
  return a != nullptr && a->owns(p) ? a : nullptr;
}

}  // namespace

extern "C" {

// The real ones (libstdc++'s, or the application's replacement).
void* __real__Znwm(size_t);
void* __real__Znam(size_t);
void* __real__ZnwmRKSt9nothrow_t(size_t, const std::nothrow_t&) noexcept;
void* __real__ZnamRKSt9nothrow_t(size_t, const std::nothrow_t&) noexcept;
void* __real__ZnwmSt11align_val_t(size_t, std::align_val_t);
void* __real__ZnamSt11align_val_t(size_t, std::align_val_t);
void* __real__ZnwmSt11align_val_tRKSt9nothrow_t(size_t, std::align_val_t,
                                                const std::nothrow_t&) noexcept;
void* __real__ZnamSt11align_val_tRKSt9nothrow_t(size_t, std::align_val_t,
                                                const std::nothrow_t&) noexcept;
void __real__ZdlPv(void*) noexcept;
void __real__ZdaPv(void*) noexcept;
void __real__ZdlPvm(void*, size_t) noexcept;
void __real__ZdaPvm(void*, size_t) noexcept;
void __real__ZdlPvRKSt9nothrow_t(void*, const std::nothrow_t&) noexcept;
void __real__ZdaPvRKSt9nothrow_t(void*, const std::nothrow_t&) noexcept;
void __real__ZdlPvSt11align_val_t(void*, std::align_val_t) noexcept;
void __real__ZdaPvSt11align_val_t(void*, std::align_val_t) noexcept;
void __real__ZdlPvmSt11align_val_t(void*, size_t, std::align_val_t) noexcept;
void __real__ZdaPvmSt11align_val_t(void*, size_t, std::align_val_t) noexcept;

#define LAYA_NEW(real_call, align)                        \
  if (Arena* a = current()) {                             \
    if (void* p = a->allocate(n == 0 ? 1 : n, (align))) { \
      return p;                                           \
    }                                                     \
  }                                                       \
  return real_call

void* __wrap__Znwm(size_t n) {
  LAYA_NEW(__real__Znwm(n), kAlign);
}
void* __wrap__Znam(size_t n) {
  LAYA_NEW(__real__Znam(n), kAlign);
}
void* __wrap__ZnwmRKSt9nothrow_t(size_t n, const std::nothrow_t& t) noexcept {
  LAYA_NEW(__real__ZnwmRKSt9nothrow_t(n, t), kAlign);
}
void* __wrap__ZnamRKSt9nothrow_t(size_t n, const std::nothrow_t& t) noexcept {
  LAYA_NEW(__real__ZnamRKSt9nothrow_t(n, t), kAlign);
}
void* __wrap__ZnwmSt11align_val_t(size_t n, std::align_val_t al) {
  LAYA_NEW(__real__ZnwmSt11align_val_t(n, al), static_cast<size_t>(al));
}
void* __wrap__ZnamSt11align_val_t(size_t n, std::align_val_t al) {
  LAYA_NEW(__real__ZnamSt11align_val_t(n, al), static_cast<size_t>(al));
}
void* __wrap__ZnwmSt11align_val_tRKSt9nothrow_t(size_t n, std::align_val_t al,
                                                const std::nothrow_t& t) noexcept {
  LAYA_NEW(__real__ZnwmSt11align_val_tRKSt9nothrow_t(n, al, t), static_cast<size_t>(al));
}
void* __wrap__ZnamSt11align_val_tRKSt9nothrow_t(size_t n, std::align_val_t al,
                                                const std::nothrow_t& t) noexcept {
  LAYA_NEW(__real__ZnamSt11align_val_tRKSt9nothrow_t(n, al, t), static_cast<size_t>(al));
}

#undef LAYA_NEW

#define LAYA_DELETE(real_call) \
  if (Arena* a = owner(p)) {   \
    a->deallocate(p);          \
    return;                    \
  }                            \
  real_call

void __wrap__ZdlPv(void* p) noexcept {
  LAYA_DELETE(__real__ZdlPv(p));
}
void __wrap__ZdaPv(void* p) noexcept {
  LAYA_DELETE(__real__ZdaPv(p));
}
void __wrap__ZdlPvm(void* p, size_t n) noexcept {
  LAYA_DELETE(__real__ZdlPvm(p, n));
}
void __wrap__ZdaPvm(void* p, size_t n) noexcept {
  LAYA_DELETE(__real__ZdaPvm(p, n));
}
void __wrap__ZdlPvRKSt9nothrow_t(void* p, const std::nothrow_t& t) noexcept {
  LAYA_DELETE(__real__ZdlPvRKSt9nothrow_t(p, t));
}
void __wrap__ZdaPvRKSt9nothrow_t(void* p, const std::nothrow_t& t) noexcept {
  LAYA_DELETE(__real__ZdaPvRKSt9nothrow_t(p, t));
}
void __wrap__ZdlPvSt11align_val_t(void* p, std::align_val_t al) noexcept {
  LAYA_DELETE(__real__ZdlPvSt11align_val_t(p, al));
}
void __wrap__ZdaPvSt11align_val_t(void* p, std::align_val_t al) noexcept {
  LAYA_DELETE(__real__ZdaPvSt11align_val_t(p, al));
}
void __wrap__ZdlPvmSt11align_val_t(void* p, size_t n, std::align_val_t al) noexcept {
  LAYA_DELETE(__real__ZdlPvmSt11align_val_t(p, n, al));
}
void __wrap__ZdaPvmSt11align_val_t(void* p, size_t n, std::align_val_t al) noexcept {
  LAYA_DELETE(__real__ZdaPvmSt11align_val_t(p, n, al));
}

#undef LAYA_DELETE

}  // extern "C"
