#!/usr/bin/env bash
# Real-configuration reference and parity (not CI): random-weight checkpoints at the shipped shapes,
# recorded requests, the ONNX Runtime peers, and the comparison of laya-convert + laya-run decide
# against the recorded answers (check_real_parity.py), from nothing.
#
#   tools/reference/make_real_reference.sh OUT_DIR [PYTHON [BUILD]]
#
# PYTHON defaults to python3 and must be a venv made by tools/reference/setup-venv.sh. BUILD (default
# build) is a meson build directory with tools/laya-convert, laya-run and laya-parity built.
# PRESETS (default "modernbert-large mmbert-base") and STEPS (default "checkpoint cases onnx parity")
# select a part of the work: e.g. STEPS=parity checks existing recordings again.
# MODERNBERT_TOKENIZER_DIR (default tests/fixtures/modernbert) holds the real ModernBERT tokenizer.json +
# tokenizer_config.json. Writes, per preset (modernbert-large, mmbert-base):
#   OUT_DIR/<preset>/                 the checkpoint in laya.load's layout (~0.85 / 0.65 GB of F16)
#   OUT_DIR/<preset>/cases.json       run_laya_cases.py --set real (26 requests)
#   OUT_DIR/<preset>/onnx/laya.onnx, laya.int8.onnx, onnx_check.json
#   OUT_DIR/<preset>.f32.laya         the conversion the parity check answers with
# and prints one "real parity <preset> ..." summary line per preset (exit 1 if one fails).
# About an hour per preset on 2 shared cores; ~12 GB of memory at the peak (the float64 reference copy).
set -euo pipefail
if [[ $# -lt 1 || "$1" == -* ]]; then
  echo "usage: $0 OUT_DIR [PYTHON [BUILD]]" >&2
  exit 2
fi
out=$1
py=${2:-python3}
build=${3:-build}
here=$(cd "$(dirname "$0")" && pwd)
tokdir=${MODERNBERT_TOKENIZER_DIR:-$here/../../tests/fixtures/modernbert}
steps=" ${STEPS:-checkpoint cases onnx parity} "
mkdir -p "$out"
summary=()
status=0
for preset in ${PRESETS:-modernbert-large mmbert-base}; do
  extra=()
  [[ $preset == modernbert-large ]] && extra=(--tokenizer-dir "$tokdir")
  if [[ $steps == *" checkpoint "* ]]; then
    "$py" "$here/make_laya_checkpoint.py" --preset "$preset" --out "$out/$preset" "${extra[@]}"
  fi
  if [[ $steps == *" cases "* ]]; then
    "$py" "$here/run_laya_cases.py" --checkpoint "$out/$preset" --set real
  fi
  if [[ $steps == *" onnx "* ]]; then
    "$py" "$here/export_laya_onnx.py" --checkpoint "$out/$preset" --cases "$out/$preset/cases.json"
  fi
  if [[ $steps == *" parity "* ]]; then
    line=$("$py" "$here/check_real_parity.py" --checkpoint "$out/$preset" --build "$build" --work "$out") || status=1
    summary+=("$line")
  fi
done
for line in "${summary[@]}"; do echo "$line"; done
exit $status
