#!/bin/sh
# Builds and tests Laya Runtime in the two configurations that matter, warnings as errors:
#   build-release  the optimized build users run (benchmarks and tools compiled too)
#   build-asan     -O2 with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the whole meson test suite in each. Exits non-zero on the first failure.
set -eu
cd "$(dirname "$0")/.."
jobs=${LAYA_JOBS:-$(nproc)}
[ -d build-release ] || meson setup build-release --buildtype=release
ninja -C build-release -j "$jobs"
meson test -C build-release --print-errorlogs --num-processes "$jobs"
[ -d build-asan ] || meson setup build-asan --buildtype=debugoptimized \
  -Db_sanitize=address,undefined -Dbenchmarks=false
ninja -C build-asan -j "$jobs"
meson test -C build-asan --print-errorlogs --num-processes "$jobs"
