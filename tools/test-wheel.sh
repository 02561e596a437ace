#!/bin/sh
# The laya_runtime wheel as a user gets it: `pip wheel .` (meson-python builds liblaya and
# laya-convert into the package; ccache makes it quick after a release build), retagged
# py3-none-<platform> (ctypes: one wheel for every CPython 3.9+), installed into a fresh venv, then
# tests/python/test_laya_runtime.py and test_mcp_server.py (with `mcp`, the laya-mcp-server
# console script) against the installed package alone (no PYTHONPATH, no LAYA_LIBRARY, no build
# tree's library or tools).
#
#   tools/test-wheel.sh [RELEASE_BUILD]   (default build/: the test's tiny models and laya-run)
#
# Everything lands in build-wheel/: meson's build, dist/, the two venvs.
# The meson build dir sits one level under the source, as build/ does, so the compile commands
# match build/'s and ccache serves them.
set -eu
cd "$(dirname "$0")/.."
release=${1:-build}
out=build-wheel
rm -rf "$out/dist" "$out/buildenv" "$out/userenv"
mkdir -p "$out"
python3 -m venv "$out/buildenv"
"$out/buildenv/bin/pip" install -q wheel
"$out/buildenv/bin/pip" wheel . --no-deps -w "$out/dist" --config-settings=build-dir="$out" >"$out/build.log" 2>&1 ||
  { tail -n 40 "$out/build.log" >&2; exit 1; }
"$out/buildenv/bin/python" -m wheel tags --remove --python-tag py3 --abi-tag none "$out"/dist/*.whl >/dev/null
whl=$(ls "$out"/dist/*.whl)
echo "test-wheel: $(basename "$whl"), $(du -k "$whl" | cut -f1) KiB"
python3 -m venv "$out/userenv"
"$out/userenv/bin/pip" install -q "$whl" mcp==2.3.0
cd "$out"
"userenv/bin/python" ../tests/python/test_laya_runtime.py - - - ../tests/fixtures \
  "../$release/tests/tiny-llama-chat.gguf" "../$release/tools/laya-run" ../examples
# laya-mcp-server as installed (the console script) against upstream's recorded server.
env -u LAYA_TEST_PYTHON userenv/bin/python ../tests/python/test_mcp_server.py - - - ../tests/fixtures
