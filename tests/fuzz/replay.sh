#!/usr/bin/env bash
# Replays a fuzz target's seeds and regression inputs (tests/fuzz/README.md).
# usage: replay.sh REPLAY_EXE SEED_GENERATOR|- DIR...
set -eu
exe=$1 gen=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $gen != - ]]; then "$gen" "$tmp"; fi
dirs=()
for d in "$@"; do [[ -d $d ]] && dirs+=("$d"); done
"$exe" "$tmp" "${dirs[@]}"
