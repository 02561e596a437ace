// A stand-in for libtbbmalloc.so.2, linked only into the allocation test: oneTBB resolves its
// scalable_* allocator from an already-loaded libtbbmalloc.so.2, so with this one its internal
// allocations go through malloc, where the test's hook counts them.
#include <cstddef>
#include <cstdlib>

extern "C" {

__attribute__((visibility("default"))) int laya_tbbmalloc_shim_present() {
  return 1;
}
__attribute__((visibility("default"))) void* scalable_malloc(size_t n) {
  return std::malloc(n);
}
__attribute__((visibility("default"))) void scalable_free(void* p) {
  std::free(p);
}
__attribute__((visibility("default"))) void* scalable_aligned_malloc(size_t n, size_t align) {
  void* p = nullptr;
  if (align < sizeof(void*)) align = sizeof(void*);
  return posix_memalign(&p, align, n) == 0 ? p : nullptr;
}
__attribute__((visibility("default"))) void scalable_aligned_free(void* p) {
  std::free(p);
}

}  // extern "C"
