#!/bin/sh
# The whole aarch64 suite under user-mode QEMU, the minutes-long tests included (CI's
# tools/test-all.sh leaves the suite `slow-emulated` out for time), and laya-run decide against the
# x86-64 build. Needs tools/setup-debian.sh and a release build in build-release (tools/test-all.sh
# makes one). Figures: docs/portability.md.
#   tools/test-arm64.sh
set -eu
cd "$(dirname "$0")/.."
jobs=${LAYA_JOBS:-$(nproc)}
LAYA_SMOLLM2_GGUF=$(tools/fetch-models.sh | sed -n 2p)
export LAYA_SMOLLM2_GGUF
[ -d build-arm64 ] || meson setup build-arm64 --cross-file tools/cross/aarch64-linux-gnu.ini \
  --buildtype=release -Dbenchmarks=false
ninja -C build-arm64 -j "$jobs"
meson test -C build-arm64 --print-errorlogs --num-processes "$jobs" --timeout-multiplier 3
tests/tools/test_arm_parity.py build-release/tools/laya-run build-arm64/tools/laya-run \
  build-release/tests/laya-tiny.laya examples/support-ticket.json \
  "$LAYA_SMOLLM2_GGUF" examples/industrial-alarm.json
