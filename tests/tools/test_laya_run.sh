#!/usr/bin/env bash
# laya-run as a user meets it: help everywhere, exit code 2 with a message on bad arguments, 1 with a
# message on a bad model, inspect / run output, .npy inputs and outputs, determinism.
# usage: test_laya_run.sh LAYA_RUN ENCODER.laya DECODER.laya
set -u
run=$1 enc=$2 dec=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# expect CODE PATTERN -- ARGS...: exit code CODE and PATTERN (grep -E) somewhere in stdout+stderr.
expect() {
  local code=$1 pattern=$2
  shift 3
  local out rc
  out=$("$run" "$@" 2>&1)
  rc=$?
  if [[ $rc -ne $code ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: laya-run $* -> exit $rc (want $code), pattern '$pattern'"
    echo "$out" | head -20 | sed 's/^/    /'
    fails=$((fails + 1))
  else
    echo "ok:   laya-run $*"
  fi
}

# A .npy file of int32 values: npy_i4 FILE "d0,d1" v1 v2 ...
npy_i4() {
  local file=$1 shape=$2
  shift 2
  local header="{'descr': '<i4', 'fortran_order': False, 'shape': (${shape}), }"
  while (( (10 + ${#header} + 1) % 64 != 0 )); do header+=" "; done
  header+=$'\n'
  local len=${#header}
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
    printf '%s' "$header"
    for v in "$@"; do
      printf "\\x$(printf %02x $((v & 255)))\\x$(printf %02x $(((v >> 8) & 255)))\\x00\\x00"
    done
  } >"$file"
}

expect 2 "missing command" -- 
expect 0 "usage" -- --help
expect 2 "unknown command" -- frobnicate
expect 0 "usage: laya-run inspect" -- inspect --help
expect 0 "usage: laya-run run" -- run --help
expect 0 "usage: laya-run backends" -- backends --help
expect 2 "inspect takes one MODEL" -- inspect
expect 2 "unknown option --bogus" -- run "$enc" --bogus 1
expect 2 "--repeat must be" -- run "$enc" --repeat 0
expect 2 "--threads must be" -- inspect "$enc" --threads x
expect 2 "no symbol 'nope'" -- run "$enc" --dim nope=3
expect 2 "no input 'nope'" -- run "$enc" --input nope=x.npy
expect 1 "kOutOfRange.*seq" -- run "$enc" --dim seq=100000
expect 1 "kIoError.*missing.laya" -- run "$tmp/missing.laya"
expect 1 "kIoError" -- inspect "$tmp"
printf 'GGUF\x03\x00\x00\x00 not a laya file at all' >"$tmp/junk.laya"
expect 1 "kFileBadIdentifier" -- inspect "$tmp/junk.laya"
: >"$tmp/empty.laya"
expect 1 "kFileEmpty" -- run "$tmp/empty.laya"
head -c 5000 "$enc" >"$tmp/trunc.laya"
expect 1 "kFileTruncated" -- run "$tmp/trunc.laya"
expect 1 "kNotFound.*no backend 'npu9'" -- run "$enc" --backends npu9
expect 2 "--kernels nosuchisa is not one of: auto, ref" -- run "$enc" --kernels nosuchisa
expect 0 "^cpu .*thread" -- backends
expect 0 "^null .*supports no op" -- backends

expect 0 "ops \(54 nodes\)" -- inspect "$enc"
expect 0 "matmul +16" -- inspect "$enc"
expect 0 "parameters: 4,720,896" -- inspect "$enc"
expect 0 "ids +i32 +\[batch, seq\] +token_ids" -- inspect "$enc"
expect 0 "activations .*per bucket" -- inspect "$enc"
expect 0 "batch<=4 seq<=512" -- inspect "$enc"
expect 0 "fell back to cpu: .*null backend runs no ops" -- inspect "$enc" --backends null,cpu
expect 0 "q8_0" -- inspect "$dec"
expect 0 "#0 .* = embedding" -- inspect "$dec" --graph

expect 0 "hidden f32 \[1, 16, 256\]" -- run "$enc" --repeat 2
expect 0 "execute: median" -- run "$enc" --repeat 2 --dim seq=40 --dim batch=2
expect 0 "logits f32 \[1, 16, 8192\]" -- run "$dec" --repeat 1
expect 0 "profile \(measured" -- run "$dec" --repeat 1 --profile
expect 0 "kernels: ref" -- run "$dec" --repeat 1 --kernels ref

# Inputs from .npy: the file's shape sets seq; an id outside the vocabulary is an execute error.
npy_i4 "$tmp/ids.npy" "1, 5" 1 2 3 4 5
expect 0 "seq=5" -- run "$enc" --input ids="$tmp/ids.npy" --repeat 1
npy_i4 "$tmp/bad_ids.npy" "1, 3" 1 9000 3
expect 1 "kIndexOutOfRange.*9000" -- run "$enc" --input ids="$tmp/bad_ids.npy" --repeat 1
npy_i4 "$tmp/ids3.npy" "5," 1 2 3 4 5
expect 2 "rank 2, the file has 1" -- run "$enc" --input ids="$tmp/ids3.npy"

# Outputs to .npy, deterministic for a seed, different for another seed.
mkdir -p "$tmp/a" "$tmp/b" "$tmp/c"
expect 0 "hidden" -- run "$enc" --repeat 1 --seed 7 --save "$tmp/a"
expect 0 "hidden" -- run "$enc" --repeat 1 --seed 7 --save "$tmp/b"
expect 0 "hidden" -- run "$enc" --repeat 1 --seed 8 --save "$tmp/c"
if cmp -s "$tmp/a/hidden.npy" "$tmp/b/hidden.npy" && ! cmp -s "$tmp/a/hidden.npy" "$tmp/c/hidden.npy" &&
   [[ $(stat -c %s "$tmp/a/hidden.npy") -eq $((128 + 16 * 256 * 4)) ]]; then
  echo "ok:   saved outputs are deterministic per seed"
else
  echo "FAIL: saved outputs"; fails=$((fails + 1))
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
