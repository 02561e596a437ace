#!/usr/bin/env bash
# The README's test command and .ci/run must be the same command (CI proves the README).
set -eu
root=$1
cmd=$(tail -n 1 "$root/.ci/run")
if grep -qxF -- "$cmd" "$root/README.md"; then
  echo "ok: .ci/run runs the README's test command"
else
  echo "FAIL: the last line of .ci/run is not a line of README.md:"
  echo "  $cmd"
  exit 1
fi
