/*
 * Counts heap calls (malloc, calloc, realloc, free, aligned allocators) between
 * heap_check_begin() and heap_check_end(), by replacing glibc's malloc family in the program
 * (operator new reaches malloc). Linux / glibc only; a firmware image would wire its allocator's
 * own counters instead.
 */
#include <errno.h>
#include <stddef.h>

void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

static volatile int counting;
static volatile long calls;

void heap_check_begin(void) {
  calls = 0;
  counting = 1;
}
long heap_check_end(void) {
  counting = 0;
  return calls;
}

#define NOTE()             \
  do {                     \
    if (counting) ++calls; \
  } while (0)

void* malloc(size_t n) {
  NOTE();
  return __libc_malloc(n);
}
void* calloc(size_t a, size_t b) {
  NOTE();
  return __libc_calloc(a, b);
}
void* realloc(void* p, size_t n) {
  NOTE();
  return __libc_realloc(p, n);
}
void free(void* p) {
  if (p) NOTE();
  __libc_free(p);
}
void* memalign(size_t align, size_t n) {
  NOTE();
  return __libc_memalign(align, n);
}
void* aligned_alloc(size_t align, size_t n) {
  NOTE();
  return __libc_memalign(align, n);
}
int posix_memalign(void** out, size_t align, size_t n) {
  void* p;
  if (align < sizeof(void*) || (align & (align - 1)) != 0) return EINVAL;
  NOTE();
  p = __libc_memalign(align, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
