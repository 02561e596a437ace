/*
 * LD_PRELOAD'ed into laya-serve by tests/serve/test_serve_alloc.py: counts the heap calls (malloc,
 * calloc, realloc, free, the aligned allocators; operator new / delete reach malloc / free) of
 * every thread not named "laya-io" -- the batch workers and the threads of their contexts (the
 * inference path) -- between SIGUSR1 (reset, start) and SIGUSR2 (stop; the count and the first
 * counted thread's name written to $LAYA_ALLOC_REPORT). glibc only.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

static atomic_int counting;
static atomic_long count;
static char first[17];
static atomic_int have_first;

static void note(void) {
  char name[17] = {0};
  if (!atomic_load_explicit(&counting, memory_order_relaxed)) return;
  prctl(PR_GET_NAME, name, 0, 0, 0);
  if (strncmp(name, "laya-io", 7) == 0) return;
  atomic_fetch_add(&count, 1);
  if (!atomic_exchange(&have_first, 1)) memcpy(first, name, sizeof first);
}

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
  if (p) note();
  __libc_free(p);
}
void* memalign(size_t a, size_t n) {
  note();
  return __libc_memalign(a, n);
}
void* aligned_alloc(size_t a, size_t n) {
  note();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, size_t a, size_t n) {
  note();
  void* p = __libc_memalign(a, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}

static void on_start(int sig) {
  (void)sig;
  atomic_store(&count, 0);
  atomic_store(&have_first, 0);
  atomic_store(&counting, 1);
}

static void on_report(int sig) {
  (void)sig;
  atomic_store(&counting, 0);
  const char* path = getenv("LAYA_ALLOC_REPORT");
  if (!path) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  char buf[64];
  int i = 63;
  long n = atomic_load(&count);
  buf[i--] = '\n';
  do {
    buf[i--] = (char)('0' + n % 10);
    n /= 10;
  } while (n > 0 && i > 0);
  (void)!write(fd, buf + i + 1, (size_t)(63 - i));
  if (atomic_load(&have_first)) (void)!write(fd, first, strnlen(first, 16));
  close(fd);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = on_start;
  sigaction(SIGUSR1, &sa, 0);
  sa.sa_handler = on_report;
  sigaction(SIGUSR2, &sa, 0);
}
