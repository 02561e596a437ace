// Counts heap allocations made anywhere in the process (every thread) while counting is on.
// Without AddressSanitizer the test binary interposes malloc / calloc / realloc / free / the
// aligned allocators and operator new / delete, forwarding to glibc's __libc_* functions; under
// AddressSanitizer (which owns malloc) it installs the sanitizer's malloc / free hooks instead.
// oneTBB sends its internal allocations to libtbbmalloc when that library loads; the test binary
// links a stand-in libtbbmalloc.so.2 (tbbmalloc_shim.cpp) that forwards to malloc, so those are
// counted too.
#pragma once

namespace laya::test::alloc_hook {

void start();  // reset the count and start counting
long stop();   // stop counting; the number of allocation and free calls seen
bool tbbmalloc_shim_loaded();
// Linux thread id of the first counted call since start() (0 if none), for failure messages.
long first_thread();

}  // namespace laya::test::alloc_hook
