#!/bin/sh
# Writes OUT, a script that runs the cross-built program EXE under EMULATOR... (cross builds:
# tests/meson.build hands these to the test scripts, which start the tools themselves).
# usage: emulated.sh OUT EXE EMULATOR...
set -eu
out=$1
exe=$2
shift 2
{
  echo '#!/bin/sh'
  printf 'exec'
  for a in "$@" "$exe"; do printf " '%s'" "$a"; done
  echo ' "$@"'
} >"$out"
chmod +x "$out"
