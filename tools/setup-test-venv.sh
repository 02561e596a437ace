#!/bin/sh
# The Python packages the laya-serve tests drive it with: the official client (typesafe-sdk, with
# zstd so it compresses bodies as it does in the field) and prometheus_client's parser for
# /metrics; the MCP Python SDK, whose client drives laya-mcp-server (tests/python/test_mcp_server.py);
# Ray Serve for laya_runtime.serve's test. No PyTorch; tools/test-all.sh makes it in build-venv and
# passes its python to meson as LAYA_TEST_PYTHON.
#   tools/setup-test-venv.sh VENV_DIR
set -eu
venv=${1:?usage: tools/setup-test-venv.sh VENV_DIR}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --disable-pip-version-check -q \
  'typesafe-sdk[zstd]==0.7.5' prometheus_client==0.26.0 mcp==2.3.0 'ray[serve]==2.60.0'
