#!/usr/bin/env bash
# Replays a fuzz target's seeds and regression inputs (tests/fuzz/README.md).
# usage: replay.sh REPLAY_EXE SEED_GENERATOR|- DIR...
# LAYA_EMULATOR (cross builds, e.g. "qemu-aarch64-static -cpu max") prefixes both programs.
set -eu
read -r -a emu <<<"${LAYA_EMULATOR:-}"
exe=$1 gen=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $gen != - ]]; then "${emu[@]}" "$gen" "$tmp"; fi
dirs=()
for d in "$@"; do [[ -d $d ]] && dirs+=("$d"); done
"${emu[@]}" "$exe" "$tmp" "${dirs[@]}"
