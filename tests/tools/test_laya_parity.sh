#!/usr/bin/env bash
# laya-parity as a developer meets it: exit 2 on bad arguments, and with --check exit 0 when the
# fixture's network meets the fp32 bars on the CPU and on the AX8850 simulator in its reference
# semantics (the same answers: a format may name the backend it runs on).
# usage: test_laya_parity.sh LAYA_PARITY FIXTURE_CHECKPOINT_DIR
set -u
bin=$1 src=$2
fails=0

# shellcheck source=tests/tools/expect.sh
source "$(dirname "$0")/expect.sh"
expect_bin=$bin expect_name=laya-parity

expect 2 "usage: laya-parity" -- --frobnicate
expect 2 "no checkpoint directory" --
expect 2 "unknown backend 'npu' \(ax8850 or ax8850-f32\)" -- "$src" --dtype f32@npu
expect 2 "f64" -- "$src" --dtype f64
expect 0 "f32@ax8850-f32 vs f32: decision agreement 116/116 \(100.00%\)" -- \
  "$src" --dtype f32,f32@ax8850-f32 --threads 1 --check
# bf16 activations on the simulator: it runs (the tiny fixture amplifies rounding; no bar).
expect 0 "f16@ax8850 vs f32: decision agreement [0-9]+/116" -- \
  "$src" --dtype f32,f16@ax8850 --threads 1

[[ $fails -eq 0 ]] || { echo "$fails failure(s)"; exit 1; }
echo "all laya-parity checks passed"
