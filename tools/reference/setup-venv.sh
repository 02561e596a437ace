#!/usr/bin/env bash
# Make a Python venv with the pinned packages the scripts in tools/reference/ need.
#
#   tools/reference/setup-venv.sh VENV_DIR            # core set (a few minutes, ~6 GB: torch pulls CUDA libraries)
#   WITH_LLAMA_CPP=1 tools/reference/setup-venv.sh VENV_DIR
#                                                     # also builds llama-cpp-python from source (cmake + C++ compiler,
#                                                     # ~15 min on 2 cores); only make_tokenizer_cases.py uses it, optionally
#
# Pins are the versions of the reference venv the fixtures were made with (pip freeze of /work/refvenv,
# laya 0.4.15). PyPI's Linux torch wheel is the CUDA build (PyPI has no CPU-only variant); it runs on CPU
# here and the scripts force the CPU device. fastapi and uvicorn run upstream's laya-serve
# (record_serve.py, bench/serve_bench.py); typesafe-sdk is the official client. Needs python3 (3.10+) with the venv module.
set -euo pipefail

if [[ $# -ne 1 || "$1" == -* ]]; then
  echo "usage: $0 VENV_DIR" >&2
  exit 2
fi
venv=$1
python=${PYTHON:-python3}

"$python" -m venv "$venv"
"$venv/bin/pip" install --disable-pip-version-check \
  torch==2.15.0 \
  transformers==5.24.0 \
  tokenizers==0.23.3 \
  safetensors==0.8.0 \
  huggingface_hub==2.4.0 \
  laya==0.4.15 \
  numpy==2.4.6 \
  onnx==1.23.2 \
  onnxruntime==1.32.0 \
  gguf==0.19.0 \
  accelerate==1.15.0 \
  sentencepiece==0.2.3 \
  protobuf==7.36.2 \
  pydantic==2.14.4 \
  fastapi==0.165.0 \
  uvicorn==0.55.0 \
  'typesafe-sdk[zstd]==0.7.5' \
  prometheus_client==0.26.0

if [[ "${WITH_LLAMA_CPP:-0}" == 1 ]]; then
  "$venv/bin/pip" install --disable-pip-version-check llama-cpp-python==0.3.36
fi

"$venv/bin/python" - <<'PY'
import laya, torch, transformers, tokenizers, onnxruntime, gguf
print("laya", laya.__version__, "torch", torch.__version__, "transformers", transformers.__version__,
      "tokenizers", tokenizers.__version__, "onnxruntime", onnxruntime.__version__)
PY
