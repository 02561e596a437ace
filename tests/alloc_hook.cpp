#include "tests/alloc_hook.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstddef>
#include <new>

#include <sys/syscall.h>
#include <unistd.h>

extern "C" int laya_tbbmalloc_shim_present();

namespace laya::test::alloc_hook {
namespace {
std::atomic<bool> g_counting{false};
// LAYA_ALLOC_TRAP=1: a counted call raises SIGTRAP (run the test under gdb to see where it is).
std::atomic<bool> g_trap{false};
std::atomic<long> g_calls{0};
std::atomic<long> g_first_tid{0};
}  // namespace

inline void note() {
  if (!g_counting.load(std::memory_order_relaxed)) return;
  if (g_calls.fetch_add(1, std::memory_order_relaxed) == 0)
    g_first_tid.store(static_cast<long>(syscall(SYS_gettid)));
  if (g_trap.load(std::memory_order_relaxed)) raise(SIGTRAP);
}

long first_thread() {
  return g_first_tid.load();
}

void start() {
  const char* trap = getenv("LAYA_ALLOC_TRAP");
  g_trap.store(trap != nullptr && trap[0] == '1');
  g_calls.store(0);
  g_first_tid.store(0);
  g_counting.store(true);
}
long stop() {
  g_counting.store(false);
  return g_calls.load();
}
bool tbbmalloc_shim_loaded() {
  return laya_tbbmalloc_shim_present() == 1;
}

}  // namespace laya::test::alloc_hook

using laya::test::alloc_hook::note;

#if defined(__SANITIZE_ADDRESS__)

// From <sanitizer/allocator_interface.h> (not installed with GCC 12 on Debian).
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*,
                                                                             size_t),
                                                         void (*free_hook)(const volatile void*));

namespace {
void on_malloc(const volatile void*, size_t) {
  note();
}
void on_free(const volatile void*) {
  note();
}
const int g_installed = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}  // namespace

#else

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  note();
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  note();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  note();
  return __libc_realloc(p, n);
}
void free(void* p) {
  if (p != nullptr) note();
  __libc_free(p);
}
void* memalign(size_t align, size_t n) {
  note();
  return __libc_memalign(align, n);
}
void* aligned_alloc(size_t align, size_t n) {
  note();
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, size_t align, size_t n) {
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  note();
  void* p = __libc_memalign(align, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"

// operator new / delete: through the counted functions above.
void* operator new(size_t n) {
  void* p = malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n) {
  return operator new(n);
}
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  return malloc(n == 0 ? 1 : n);
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept {
  return malloc(n == 0 ? 1 : n);
}
void* operator new(size_t n, std::align_val_t a) {
  const size_t al = static_cast<size_t>(a);
  void* p = aligned_alloc(al, (n + al - 1) / al * al);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](size_t n, std::align_val_t a) {
  return operator new(n, a);
}
void operator delete(void* p) noexcept {
  free(p);
}
void operator delete[](void* p) noexcept {
  free(p);
}
void operator delete(void* p, size_t) noexcept {
  free(p);
}
void operator delete[](void* p, size_t) noexcept {
  free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
  free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
  free(p);
}
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  free(p);
}

#endif
