#!/usr/bin/env bash
# Real-configuration reference (not CI): random-weight checkpoints at the shipped shapes, recorded
# requests, and the ONNX Runtime peers, for the C++ comparison and the encoder benchmark.
#
#   tools/reference/make_real_reference.sh OUT_DIR [PYTHON]
#
# PYTHON defaults to python3 and must be a venv made by tools/reference/setup-venv.sh.
# MODERNBERT_TOKENIZER_DIR (default tests/fixtures/modernbert) holds the real ModernBERT tokenizer.json +
# tokenizer_config.json. Writes, per preset (modernbert-large, mmbert-base):
#   OUT_DIR/<preset>/                 the checkpoint in laya.load's layout (~0.85 / 0.65 GB of F16)
#   OUT_DIR/<preset>/cases.json       run_laya_cases.py --set real (26 requests)
#   OUT_DIR/<preset>/onnx/laya.onnx, laya.int8.onnx, onnx_check.json
# About an hour on 2 shared cores; ~12 GB of memory at the peak (the float64 reference copy).
set -euo pipefail
if [[ $# -lt 1 || "$1" == -* ]]; then
  echo "usage: $0 OUT_DIR [PYTHON]" >&2
  exit 2
fi
out=$1
py=${2:-python3}
here=$(cd "$(dirname "$0")" && pwd)
tokdir=${MODERNBERT_TOKENIZER_DIR:-$here/../../tests/fixtures/modernbert}
mkdir -p "$out"
for preset in modernbert-large mmbert-base; do
  extra=()
  [[ $preset == modernbert-large ]] && extra=(--tokenizer-dir "$tokdir")
  "$py" "$here/make_laya_checkpoint.py" --preset "$preset" --out "$out/$preset" "${extra[@]}"
  "$py" "$here/run_laya_cases.py" --checkpoint "$out/$preset" --set real
  "$py" "$here/export_laya_onnx.py" --checkpoint "$out/$preset" --cases "$out/$preset/cases.json"
done
