#!/usr/bin/env bash
# laya-run and laya-make-tiny as a user meets them: help everywhere, exit code 2 with a message on
# bad arguments, 1 with a message on a bad model or file, inspect / run output, .npy inputs and
# outputs, determinism.
# usage: test_laya_run.sh LAYA_RUN ENCODER.laya DECODER.laya LAYA_MAKE_TINY [TINY.gguf]
set -u
run=$1 enc=$2 dec=$3 make_tiny=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# shellcheck source=tests/tools/expect.sh
source "$(dirname "$0")/expect.sh"
expect_bin=$run expect_name=laya-run

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
expect 2 "--dim seq must be an integer in \[1, 512\], got '100000'" -- run "$enc" --dim seq=100000
expect 2 "--dim seq must be an integer in \[1, 512\], got '-1'" -- run "$enc" --dim seq=-1
expect 2 "--dim seq must be an integer in \[1, 512\], got '0'" -- run "$enc" --dim seq=0
expect 2 "--dim seq must be an integer .*got '12x'" -- run "$enc" --dim seq=12x
expect 2 "--dim seq is given twice" -- run "$enc" --dim seq=3 --dim seq=4
expect 2 "--dim wants NAME=N" -- run "$enc" --dim =3
expect 2 "--repeat is given twice" -- run "$enc" --repeat 2 --repeat 3
expect 2 "--repeat must be an integer in \[1, 1000000\], got '99999999999999999999'" -- \
  run "$enc" --repeat 99999999999999999999
expect 2 "--seed must be an integer >= 0" -- run "$enc" --seed -5
expect 2 "--profile takes no value" -- run "$enc" --profile=1
expect 2 "--threads must be an integer in \[0, 1024\]" -- run "$enc" --threads 5000
expect 2 "--backends lists 'cpu' twice" -- run "$enc" --backends cpu,cpu
expect 2 "--backends wants a comma-separated list" -- run "$enc" --backends cpu,,null
expect 2 "--save needs a non-empty value" -- run "$enc" --save=
expect 2 "--input wants NAME=FILE.npy" -- run "$enc" --input ids=
expect 1 "kIoError.*missing.laya" -- run "$tmp/missing.laya"
expect 1 "kIoError" -- inspect "$tmp"
printf 'GGUF\x03\x00\x00\x00 not a laya file at all' >"$tmp/junk.laya"
expect 1 "kFileBadIdentifier" -- inspect "$tmp/junk.laya"
: >"$tmp/empty.laya"
expect 1 "kFileEmpty" -- run "$tmp/empty.laya"
head -c 5000 "$enc" >"$tmp/trunc.laya"
expect 1 "kFileTruncated" -- run "$tmp/trunc.laya"
expect 2 "--backends: no backend 'npu9' in this build \(have: cpu, null, ax8850\)" -- run "$enc" --backends npu9
expect 2 "--kernels nosuchisa is not one of: auto, ref" -- run "$enc" --kernels nosuchisa
expect 0 "^cpu .*thread" -- backends
expect 0 "^null .*supports no op" -- backends
expect 0 "^device: up to [0-9]+ thread\(s\) per session, .*packed weights shared" -- backends
expect 2 "backends takes no arguments" -- backends extra
expect 2 "unknown option --bogus" -- backends --bogus

# Paths that are not regular files fail at once with the path and what it is, never hang.
mkfifo "$tmp/fifo.laya" "$tmp/fifo.npy"
expect 1 "kIoError.*fifo.laya' is a FIFO, not a regular file" -- inspect "$tmp/fifo.laya"
expect 1 "kIoError.*fifo.npy' is a FIFO, not a regular file" -- run "$enc" --input ids="$tmp/fifo.npy"
expect 1 "kIoError.*cannot open '$tmp/none.npy': No such file or directory" -- \
  run "$enc" --input ids="$tmp/none.npy"
expect 1 "kIoError.*/dev/null' is a character device" -- run /dev/null

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
# The decoder's KV cache: listed by inspect; run prefills batch x seq tokens into a fresh cache.
expect 0 "states \(KV cache: 8 states, 2048 bytes per cell" -- inspect "$dec"
expect 0 "shape: batch=1 seq=40 cells=40" -- run "$dec" --repeat 1 --dim seq=40
expect 0 "cells +i32 +\[1, 40\] generated: KV cache cells" -- run "$dec" --repeat 1 --dim seq=40
expect 1 "KV cache full: 40 cells needed" -- run "$dec" --repeat 1 --dim seq=40 --dim cells=20

# Inputs from .npy: the file's shape sets seq; an id outside the vocabulary is an execute error.
npy_i4 "$tmp/ids.npy" "1, 5" 1 2 3 4 5
expect 0 "seq=5" -- run "$enc" --input ids="$tmp/ids.npy" --repeat 1
npy_i4 "$tmp/bad_ids.npy" "1, 3" 1 9000 3
expect 1 "kIndexOutOfRange.*9000" -- run "$enc" --input ids="$tmp/bad_ids.npy" --repeat 1
npy_i4 "$tmp/ids3.npy" "5," 1 2 3 4 5
expect 2 "rank 2, the file has 1" -- run "$enc" --input ids="$tmp/ids3.npy"
npy_i4 "$tmp/long.npy" "1, 600" $(seq 600)
expect 2 "input 'ids' sets seq = 600 \(its dimension 1\), outside \[1, 512\]" -- \
  run "$enc" --input ids="$tmp/long.npy"
npy_i4 "$tmp/wrap.npy" "4611686018427387904, 4"  # 2^64 elements: once wrapped to 0, matching no data
expect 1 "shape's element count overflows" -- run "$enc" --input ids="$tmp/wrap.npy"
expect 2 "--input ids is given twice" -- run "$enc" --input ids="$tmp/ids.npy" --input ids="$tmp/ids.npy"
printf 'not numpy at all' >"$tmp/junk.npy"
expect 1 "kInvalidArgument.*junk.npy': not a .npy file" -- run "$enc" --input ids="$tmp/junk.npy"

# Outputs to .npy, deterministic for a seed, different for another seed; --save makes its
# directory (and its parents), and names the path and the OS reason when it cannot.
mkdir -p "$tmp/a" "$tmp/b"
expect 0 "hidden" -- run "$enc" --repeat 1 --seed 7 --save "$tmp/a"
expect 0 "hidden" -- run "$enc" --repeat 1 --seed 7 --save "$tmp/b"
expect 0 "hidden" -- run "$enc" --repeat 1 --seed 8 --save "$tmp/c/d/"
mv "$tmp/c/d/hidden.npy" "$tmp/c/hidden.npy"
: >"$tmp/file"
expect 1 "kIoError.*--save: cannot create directory '$tmp/file/out'" -- run "$enc" --save "$tmp/file/out"
expect 1 "kIoError.*cannot create directory '$tmp/file'" -- run "$enc" --save "$tmp/file"
if cmp -s "$tmp/a/hidden.npy" "$tmp/b/hidden.npy" && ! cmp -s "$tmp/a/hidden.npy" "$tmp/c/hidden.npy" &&
   [[ $(stat -c %s "$tmp/a/hidden.npy") -eq $((128 + 16 * 256 * 4)) ]]; then
  echo "ok:   saved outputs are deterministic per seed"
else
  echo "FAIL: saved outputs"; fails=$((fails + 1))
fi

# laya-make-tiny: every option checked against its range; a configuration that cannot make a model
# is a bad argument too.
make_tiny_expect() {
  local expect_bin=$make_tiny expect_name=laya-make-tiny
  expect "$@"
}
make_tiny_expect 0 "usage: laya-make-tiny" -- --help
make_tiny_expect 2 "one output path" --
make_tiny_expect 2 "--layers must be an integer in \[1, 1024\], got '99999999999'" -- \
  "$tmp/t.laya" --layers 99999999999
make_tiny_expect 2 "--heads must be an integer in \[1, 4096\], got '0'" -- "$tmp/t.laya" --heads 0
make_tiny_expect 2 "--kind x is not one of: encoder, decoder" -- "$tmp/t.laya" --kind x
make_tiny_expect 2 "--dtype i32 is not one of" -- "$tmp/t.laya" --dtype i32
make_tiny_expect 2 "--seed is given twice" -- "$tmp/t.laya" --seed 1 --seed 2
make_tiny_expect 2 "d_model 60 is not an even head_dim times 4 heads" -- \
  "$tmp/t.laya" --d-model 60 --heads 4
make_tiny_expect 2 "q4_0 needs d_model and d_ff multiples of 32" -- "$tmp/t.laya" --dtype q4_0 \
  --d-model 48 --heads 4 --d-ff 64
make_tiny_expect 2 "parameters; a tiny model has at most" -- "$tmp/t.laya" --vocab 2000000000 \
  --d-model 65536 --heads 64
make_tiny_expect 1 "kIoError.*cannot create '$tmp/no/dir/t.laya.tmp'" -- "$tmp/no/dir/t.laya"
make_tiny_expect 0 "" -- "$tmp/small.laya" --vocab 10 --d-model 16 --d-ff 8 --layers 1 --heads 2
expect 0 "ops \(" -- inspect "$tmp/small.laya"

# profile: the modelled timeline on the simulated AX8850 (a small model of the Laya structure).
expect 0 "usage: laya-run profile" -- profile --help
expect 2 "profile needs a MODEL" -- profile --json
expect 2 "--calls is fused or per-layer" -- profile "$enc" --calls some
expect 1 "kInvalidArgument.*vnpu 'quad'" -- profile "$enc" --vnpu quad
expect 0 "^ax8850 .*simulated AX8850 NPU.*modelled" -- backends
if "$make_tiny" --preset laya-english --layers 2 --d-model 128 --heads 2 --d-ff 96 --vocab 300 \
     --max-seq 64 -o "$tmp/laya.laya" >/dev/null; then
  laya=$tmp/laya.laya
  expect 0 '^\{"modelled": true, "total_modelled_ms": [0-9.]+, "npu_calls": 1, "placement": \[\{"node": "embed", "op": "embedding", "backend": "ax8850", "group": 0, "reason": ""\}' -- profile --model "$laya" --backend ax8850 --dim seq=32 --json
  expect 0 '"ops": \[\{"node": "embed", "op": "embedding", "backend": "ax8850", "executable": 0, "group": 0, "start_modelled_ms": [0-9.]+, "modelled_ms": [0-9.]+' -- profile "$laya" --dim seq=32 --json
  expect 0 '"group": \[0, 1\], "parts": \[\{"group": 0, "heads": \[0, 1\]\}' -- profile "$laya" --vnpu std --param mac_efficiency=0.001 --cost-placement off --dim seq=32 --json
  expect 0 "total: [0-9.]+ modelled_ms, 1 NPU call" -- profile "$laya" --dim seq=32 --host pcie
  expect 0 "total: [0-9.]+ modelled_ms, 3 NPU call" -- profile "$laya" --dim seq=32 --calls per-layer
  # A tiny OCM makes attention fall back from 64 keys on: the sweep flags it.
  expect 0 "placement change: l0.attn \(attention\): ax8850 at tokens=32 -> cpu at 64: .*64 keys.*OCM" -- profile "$laya" --param ocm_kib=16 --sweep seq=16,32,64
  expect 0 "no node changes placement" -- profile "$laya" --sweep seq=16,32,64
  expect 0 '"placement_changes": \[\{"node": "l0.attn"' -- profile "$laya" --param ocm_kib=16 --sweep seq=32,64 --json
  expect 0 "total" -- profile "$laya" --vnpu std --dim seq=32 --trace "$tmp/trace.json"
  if grep -q '"traceEvents"' "$tmp/trace.json" && grep -q '"NPU group 2"' "$tmp/trace.json" &&
     grep -q '"CPU (host)"' "$tmp/trace.json" && grep -q '"ph": "X"' "$tmp/trace.json"; then
    echo "ok:   the Chrome trace has a track per NPU group and one for the CPU"
  else
    echo "FAIL: trace"; fails=$((fails + 1))
  fi
  # The f32-weight tiny encoder: the NPU refuses its matmuls, with the reason.
  expect 0 "on cpu .*matmul '.*': f32 weights" -- profile "$enc" --dim seq=16
  # Functional execution on the simulator; per-op times labelled modelled, never mixed with measured.
  expect 0 "profile \(modelled by the backend's cost model" -- run "$laya" --backends ax8850 --repeat 1 --profile --dim tokens=20
else
  echo "FAIL: laya-make-tiny --preset"; fails=$((fails + 1))
fi

# generate / score over the KV cache (runtime/decoder.h): the tiny .laya decoder and a tiny GGUF.
expect 0 "usage: laya-run generate" -- generate --help
expect 0 "usage: laya-run score" -- score --help
expect 2 "generate needs --model" -- generate --ids 1,2
expect 2 "generate needs one of --prompt TEXT, --chat TEXT, --messages F, --ids ID,ID,... or --prompts-file F" -- generate --model "$dec"
expect 2 "generate needs one of --prompt TEXT, --chat TEXT, --messages F, --ids ID,ID,... or --prompts-file F" -- generate --model "$dec" --ids 1 --prompt x
expect 2 "generate needs one of --prompt TEXT, --chat TEXT, --messages F, --ids ID,ID,... or --prompts-file F" -- generate --model "$dec" --chat x --prompt x
expect 2 "generate needs one of --prompt TEXT, --chat TEXT, --messages F, --ids ID,ID,... or --prompts-file F" -- generate --model "$dec" --chat x --ids 1
expect 2 "--ids item must be an integer in \[0, 2147483647\], got 'x'" -- generate --model "$dec" --ids 1,x
expect 2 "--ids item must be an integer in \[0, 2147483647\], got ''" -- generate --model "$dec" --ids 1,,2
expect 2 "--max-tokens must be an integer in \[1, 1000000\], got '0'" -- generate --model "$dec" --ids 1 --max-tokens 0
expect 2 "--chunk must be an integer in \[1, 4096\], got '0'" -- generate --model "$dec" --ids 1 --chunk 0
expect 2 "--model is given twice" -- generate --model "$dec" --model "$dec" --ids 1
expect 2 "unexpected argument" -- generate "$dec" --ids 1
expect 1 "nor a decoder over a KV cache" -- generate --model "$enc" --ids 1,2
expect 1 "carries no vocabulary this build reads.*generates from token ids only" -- generate --model "$dec" --prompt "hello"
expect 1 "carries no vocabulary this build reads.*generates from token ids only" -- generate --model "$dec" --chat "hello"
# Sampling options: ranges checked by the parser (exit 2, the option, its range and the text).
expect 2 "--temperature must be a number in \[0, 100\], got '-0.5'" -- generate --model "$dec" --ids 1 --temperature=-0.5
expect 2 "--temperature must be a number in \[0, 100\], got '101'" -- generate --model "$dec" --ids 1 --temperature 101
expect 2 "--temperature must be a number in \[0, 100\], got 'nan'" -- generate --model "$dec" --ids 1 --temperature nan
expect 2 "--temperature must be a number in \[0, 100\], got 'inf'" -- generate --model "$dec" --ids 1 --temperature inf
expect 2 "--temperature must be a number in \[0, 100\], got '0.7x'" -- generate --model "$dec" --ids 1 --temperature 0.7x
expect 2 "--temperature must be a number in \[0, 100\], got ''" -- generate --model "$dec" --ids 1 --temperature=
expect 2 "--top-p must be a number in \(0, 1\], got '0'" -- generate --model "$dec" --ids 1 --top-p 0
expect 2 "--top-p must be a number in \(0, 1\], got '1.5'" -- generate --model "$dec" --ids 1 --top-p 1.5
expect 2 "--top-k must be an integer in \[0, 1000000\], got '-1'" -- generate --model "$dec" --ids 1 --top-k=-1
expect 2 "--top-k must be an integer in \[0, 1000000\], got '2.5'" -- generate --model "$dec" --ids 1 --top-k 2.5
expect 2 "--seed must be an integer >= 0, got '-3'" -- generate --model "$dec" --ids 1 --seed=-3
expect 2 "--seed is given twice" -- generate --model "$dec" --ids 1 --seed 1 --seed 2
expect 1 "id 9000 at position 1 is outside" -- generate --model "$dec" --ids 1,9000
expect 1 "i/o error: cannot open" -- generate --model "$tmp/missing.gguf" --ids 1
expect 1 "1 prompt tokens and 5000 new ones exceed this context.s 4096 KV cells" -- generate --model "$dec" --ids 1 --max-tokens 5000
expect 0 "generated ids \(3, greedy\): [0-9]+, [0-9]+, [0-9]+$" -- generate --model "$dec" --ids 5,6,7 --max-tokens 3
expect 0 '^\{"prompt_ids": \[5, 6, 7\], "ids": \[[0-9]+, [0-9]+\], "text": "", "finish_reason": "length", "timings": \{"load_ms": [0-9.e-]+, "prefill_ms": [0-9.e-]+, "first_token_ms": [0-9.e-]+, "total_ms": [0-9.e-]+, "prompt_tokens": 3, "tokens": 2, "prefill_chunks": 1, "decode_tokens_per_s": [0-9.e-]+\}\}$' -- generate --model "$dec" --ids 5,6,7 --max-tokens 2 --json
expect 0 '"prefill_chunks": 3' -- generate --model "$dec" --ids 5,6,7,8,9 --chunk 2 --max-tokens 2 --json
ids_of() { sed 's/.*"ids": \[\([^]]*\)\].*/\1/'; }
g6=$("$run" generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --json | ids_of)
g2=$("$run" generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 2 --json | ids_of)
g6c=$("$run" generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --chunk 2 --json | ids_of)
if [[ -n "$g2" && "$g6" == "$g2, "* && "$g6c" == "$g6" ]]; then
  echo "ok:   generate: 2 greedy tokens start the 6; prefill chunks of 2 give the same 6"
else
  echo "FAIL: generate prefixes / chunks: '$g2' vs '$g6' vs '$g6c'"; fails=$((fails + 1))
fi
# --prefix-cache: a warm prompt sharing 4 tokens (2 blocks of 2) is reused; the ids are the same.
# Sampled generation (runtime/sampler.h through GenerateRequest::pick): the same seed gives the
# same ids; some other seed gives other ids at a high temperature; temperature 0 and top-k 1 are
# greedy whatever the seed.
expect 0 "generated ids \(6, sampled: temperature 0.9, top-k 40, top-p 0.95, seed 7\)" -- generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --temperature 0.9 --top-k 40 --top-p 0.95 --seed 7
sampled() { "$run" generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --json --temperature 5 "$@" | ids_of; }
s7=$(sampled --seed 7) s7b=$(sampled --seed 7 --chunk 2) differs=0
for seed in 8 9 10 11; do [[ $(sampled --seed $seed) != "$s7" ]] && differs=1; done
if [[ -n "$s7" && "$s7" == "$s7b" && $differs -eq 1 && "$s7" != "$g6" ]]; then
  echo "ok:   generate --seed: seed 7 twice gives '$s7'; another seed gives other ids"
else
  echo "FAIL: generate --seed: '$s7' vs '$s7b' (differs: $differs; greedy '$g6')"; fails=$((fails + 1))
fi
gt0=$("$run" generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --json --temperature 0 --seed 3 | ids_of)
gk1=$("$run" generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --json --top-k 1 --seed 9 | ids_of)
if [[ "$gt0" == "$g6" && "$gk1" == "$g6" ]]; then
  echo "ok:   generate: --temperature 0 and --top-k 1 are greedy"
else
  echo "FAIL: generate greedy by options: '$gt0' / '$gk1' vs '$g6'"; fails=$((fails + 1))
fi
# --profile: per-op times of the prefill and of the decode steps (runtime/decoder.h
# GenerateRequest::prefill_profile, decode_profile); the same ids; the ops sum to the time inside
# execute's nodes, which is inside execute, which is inside the prefill's / the token's time.
expect 0 "prefill profile \(measured, ms over 5 prompt token\(s\) in 1 chunk\(s\)\):" -- generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --profile
expect 0 "decode profile \(measured, ms per token over 5 decode step\(s\)\):" -- generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --profile
expect 0 "^  matmul [a-z0-9_]+ \[[0-9]+, [0-9]+\] +[0-9.]+ +[0-9.]+%$" -- generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --profile
prof=$("$run" generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --json --profile)
if [ "$(echo "$prof" | ids_of)" = "$g6" ] && python3 -c '
import json, sys
p = json.loads(sys.argv[1])["timings"]["decode_profile"]
ops = p["ops"]
assert p["steps"] == 5, p
assert {"attention", "kv_write", "rmsnorm"} <= set(ops) and any(k.startswith("matmul ") for k in ops), ops
assert all(v >= 0 for v in ops.values()) and abs(sum(ops.values()) - p["nodes"]) < 1e-6, p
assert 0 < p["nodes"] <= p["execute"] + 1e-9 and p["runner"] >= 0 and p["pick"] >= 0, p
assert p["other"] > -1e-6 and abs(p["execute"] + p["runner"] + p["pick"] + p["other"] - p["token"]) < 1e-6, p
q = json.loads(sys.argv[1])["timings"]["prefill_profile"]
ops = q["ops"]
assert q["tokens"] == 5 and q["chunks"] == 1, q
assert {"attention", "kv_write", "rmsnorm"} <= set(ops) and any(k.startswith("matmul ") for k in ops), ops
assert all(v >= 0 for v in ops.values()) and abs(sum(ops.values()) - q["nodes"]) < 1e-6, q
assert 0 < q["nodes"] <= q["execute"] + 1e-9 and q["other"] >= 0, q
assert abs(q["execute"] + q["other"] - q["prefill"]) < 1e-6, q
' "$prof"; then
  echo "ok:   generate --profile --json: the same ids; ops, execute, runner, pick and the rest add up (prefill and decode)"
else
  echo "FAIL: generate --profile --json: '$prof' (greedy '$g6')"; fails=$((fails + 1))
fi
# --prompts-file: needs --json, takes no warm prompt, wants a list of non-empty strings.
printf '{"prompts": ["ab", "abc"]}' >"$tmp/prompts.json"
printf '{"prompts": ["ab", 3]}' >"$tmp/bad_prompts.json"
expect 2 "--prompts-file needs --json" -- generate --model "$dec" --prompts-file "$tmp/prompts.json"
expect 2 "--prompts-file needs --json and takes no --warm-prompt" -- generate --model "$dec" --prompts-file "$tmp/prompts.json" --json --warm-ids 1
expect 2 "generate needs one of" -- generate --model "$dec" --prompts-file "$tmp/prompts.json" --ids 1 --json
expect 1 "every prompt must be a non-empty string" -- generate --model "$dec" --prompts-file "$tmp/bad_prompts.json" --json
expect 1 "carries no vocabulary this build reads" -- generate --model "$dec" --prompts-file "$tmp/prompts.json" --json
expect 1 "carries no vocabulary this build reads" -- generate --model "$dec" --ids 1 --stop-after-json
expect 2 "give one of --warm-prompt TEXT or --warm-ids" -- generate --model "$dec" --ids 1 --warm-ids 1 --warm-prompt x
expect 2 "--prefix-block must be an integer in \[1, 4096\], got '0'" -- generate --model "$dec" --ids 1 --prefix-cache --prefix-block 0
expect 1 "carries no vocabulary this build reads" -- generate --model "$dec" --ids 1 --warm-prompt x
expect 0 '"prefix_cache": \{"hit_tokens": 0, "block_tokens": 32, "lookups": 1, "hits": 0, "misses": 1, "evictions": 0, "cached_tokens": 0\}' -- generate --model "$dec" --ids 5,6,7 --max-tokens 2 --json --prefix-cache
expect 0 "prefix cache: 4 of 5 prompt tokens reused \(blocks of 2; 1 hit\(s\), 1 miss\(es\)" -- generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 2 --warm-ids 5,6,7,8,1 --prefix-block 2
out=$("$run" generate --model "$dec" --ids 5,6,7,8,9 --max-tokens 6 --json --warm-ids 5,6,7,8,1 --prefix-block 2)
if [ "$(echo "$out" | ids_of)" = "$g6" ] && echo "$out" | grep -q '"hit_tokens": 4,'; then
  echo "ok:   generate --warm-ids: 4 prompt tokens from the prefix cache, the same 6 ids"
else
  echo "FAIL: generate --warm-ids: '$out' vs '$g6'"; fails=$((fails + 1))
fi
# score: teacher forcing; the last position's top-1 is generate's first token, any chunk size.
printf '{"ids": [5, 6, 7, 8, 9]}' >"$tmp/ids.json"
printf '{"ids": [5, -1]}' >"$tmp/bad_ids.json"
expect 2 "score needs --ids-file" -- score --model "$dec"
expect 2 "--top must be an integer in \[1, 1000000\], got '0'" -- score --model "$dec" --ids-file "$tmp/ids.json" --top 0
expect 2 "--top above 1000 needs --last" -- score --model "$dec" --ids-file "$tmp/ids.json" --top 1001
expect 1 "ids must be integers in \[0, 2147483647\], got -1" -- score --model "$dec" --ids-file "$tmp/bad_ids.json"
expect 1 "kIoError" -- score --model "$dec" --ids-file "$tmp/missing.json"
s3=$("$run" score --model "$dec" --ids-file "$tmp/ids.json" --top 3)
s1=$("$run" score --model "$dec" --ids-file "$tmp/ids.json" --top 3 --chunk 1)
first=${g2%%,*}
if [[ "$s3" =~ ^\{\"positions\":\ \[(\{\"top_ids\":\ \[[0-9]+,\ [0-9]+,\ [0-9]+\],\ \"top_logits\":\ \[[^]]*\]\}(,\ )?){5}\]\}$ &&
      "$s3" == "$s1" && "$s3" == *"{\"top_ids\": [$first, "*"]}]}" ]]; then
  echo "ok:   score: 5 positions of top 3; chunks of 1 agree; the last top-1 is generate's first token"
else
  echo "FAIL: score: '$s3' / '$s1' (first generated: $first)"; fails=$((fails + 1))
fi
# --last: the last position only, the same as the full output's last; --top beyond 1000 with it.
sl=$("$run" score --model "$dec" --ids-file "$tmp/ids.json" --top 3 --last)
"$run" score --model "$dec" --ids-file "$tmp/ids.json" --top 100000 --last >"$tmp/all.json"
if python3 -c '
import json, sys
last, full = (json.loads(a)["positions"] for a in sys.argv[1:3])
everything = json.load(open(sys.argv[3]))["positions"]
assert last == full[-1:] and len(everything) == 1 and len(everything[0]["top_ids"]) == 8192
assert everything[0]["top_ids"][:3] == full[-1]["top_ids"]' "$sl" "$s3" "$tmp/all.json"; then
  echo "ok:   score --last: the last position only; --top 100000 --last prints all 8192 logits"
else
  echo "FAIL: score --last: '$sl' vs '$s3'"; fails=$((fails + 1))
fi
# A GGUF (tiny random llama, fixtures): --prompt tokenized by its vocabulary, text decoded.
if [[ -n "${5:-}" ]]; then
  expect 0 '^\{"prompt_ids": \[97, 98\], "ids": \[[0-9]+(, [0-9]+){2}\], "text": "[^"]*", "finish_reason": "(length|stop)", "timings"' -- generate --model "$5" --prompt ab --max-tokens 3 --json
  # --prompts-file: one line per prompt, the ids each prompt gets alone (the second reusing the
  # first's cached block).
  batch=$("$run" generate --model "$5" --prompts-file "$tmp/prompts.json" --max-tokens 4 --prefix-block 2 --json)
  alone_ab=$("$run" generate --model "$5" --prompt ab --max-tokens 4 --json | ids_of)
  alone_abc=$("$run" generate --model "$5" --prompt abc --max-tokens 4 --json | ids_of)
  if [[ $(wc -l <<<"$batch") -eq 2 && "$(head -1 <<<"$batch" | ids_of)" == "$alone_ab" &&
        "$(tail -1 <<<"$batch" | ids_of)" == "$alone_abc" && "$(tail -1 <<<"$batch")" == *'"hit_tokens": 2,'* ]]; then
    echo "ok:   generate --prompts-file: two lines, each prompt's ids as alone; the prefix reused"
  else
    echo "FAIL: generate --prompts-file: '$batch' vs '$alone_ab' / '$alone_abc'"; fails=$((fails + 1))
  fi
  # --stop-after-json: a near-uniform sampled reply that opens and closes a JSON object ends where
  # it closes (finish_reason "json"); without the flag the same seed draws the same ids and goes on.
  json_seed=""
  for seed in $(seq 1 60); do
    cut=$("$run" generate --model "$5" --prompt ab --max-tokens 200 --temperature 100 --seed "$seed" --json --stop-after-json)
    if [[ "$cut" == *'"finish_reason": "json"'* ]]; then
      full=$("$run" generate --model "$5" --prompt ab --max-tokens 200 --temperature 100 --seed "$seed" --json)
      json_seed=$seed
      break
    fi
  done
  if [[ -n "$json_seed" ]] && python3 -c '
import json, sys
cut, full = (json.loads(a) for a in sys.argv[1:3])
assert full["ids"][:len(cut["ids"])] == cut["ids"] and len(full["ids"]) > len(cut["ids"])
text = cut["text"]
depth, in_str, esc, closes = 0, False, False, []
for i, c in enumerate(text[text.index("{"):]):
    if in_str:
        esc, in_str = (False, in_str) if esc else (c == "\\", c != "\"")
    elif c == "\"":
        in_str = True
    elif c in "{[":
        depth += 1
    elif c in "}]":
        depth -= 1
        if depth == 0:
            closes.append(i)
# The object closes in the last token (a piece of a few bytes at most in this vocabulary).
assert closes and len(text[text.index("{"):]) - (closes[0] + 1) < 8, (text, closes)' "$cut" "$full"; then
    echo "ok:   generate --stop-after-json (seed $json_seed): stops where the first object closes"
  else
    echo "FAIL: generate --stop-after-json: seed '$json_seed' '${cut:-}'"; fails=$((fails + 1))
  fi
  expect 1 "5 prompt tokens and 100000 new ones exceed this context.s 256 KV cells" -- generate --model "$5" --ids 5,6,7,8,9 --max-tokens 100000
  expect 0 '^\{"positions": \[\{"top_ids": \[[0-9]+\]' -- score --model "$5" --ids-file "$tmp/ids.json" --top 1
  # The tiny GGUF has no tokenizer.chat_template: --chat is the chat_template error.
  expect 1 "the model has no chat template \(tokenizer.chat_template\); pass a raw prompt" -- generate --model "$5" --chat hi
  # A copy with a ChatML template and EOS moved to <|endoftext|> (296), so <|im_end|> (298) stops
  # only as the template's end of turn: a near-uniform sampled --chat reply ends at 298; the same
  # prompt given as --ids (no template) with the same seed draws the same ids and goes on past it.
  tmpl="{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
  python3 "$(dirname "${BASH_SOURCE[0]}")/gguf_set_keys.py" "$5" "$tmp/chat.gguf" \
    tokenizer.ggml.eos_token_id=u32:296 "tokenizer.chat_template=s:$tmpl"
  expect 0 "prompt ids \(18\): 297, 117, 115, 263, 10, 104, 105, 298, 10, 297, 291, 115, 105, 115, 272, 110, 116, 10$" -- generate --model "$tmp/chat.gguf" --chat hi --max-tokens 1
  eot_seed="" chat_ids="" raw_ids=""
  for seed in $(seq 1 30); do
    out=$("$run" generate --model "$tmp/chat.gguf" --chat hi --max-tokens 200 --temperature 100 --seed "$seed" --json)
    ids=$(ids_of <<<"$out")
    if [[ "$ids" == *", 298" ]]; then
      eot_seed=$seed chat_ids=$ids
      prompt=$(sed 's/.*"prompt_ids": \[\([^]]*\)\].*/\1/' <<<"$out" | tr -d ' ')
      raw_ids=$("$run" generate --model "$tmp/chat.gguf" --ids "$prompt" --max-tokens 200 --temperature 100 --seed "$seed" --json | ids_of)
      break
    fi
  done
  if [[ -n "$eot_seed" && "$raw_ids" == "$chat_ids, "* ]]; then
    echo "ok:   generate --chat stops at <|im_end|> (seed $eot_seed); the same ids as --ids go on past it"
  else
    echo "FAIL: generate --chat end of turn: seed '$eot_seed', chat '$chat_ids', raw '$raw_ids'"; fails=$((fails + 1))
  fi
fi
# The real SmolLM2 (LAYA_SMOLLM2_GGUF, tools/fetch-models.sh): --chat renders its template and
# tokenizes it as llama.cpp did for the recorded conversation (tests/fixtures/decoder/
# chat_templates.json, tools/reference/make_decoder_fixtures.py: the single user "Hello!" with the
# generation prompt); generation stops at <|im_end|>, and a seed reproduces its ids.
smol=${LAYA_SMOLLM2_GGUF:-}
if [[ -n "$smol" && ! -f "$smol" ]]; then
  echo "FAIL: LAYA_SMOLLM2_GGUF names $smol, which does not exist"
  fails=$((fails + 1))
elif [[ -n "$smol" ]]; then
  chat_fx="$(dirname "${BASH_SOURCE[0]}")/../fixtures/decoder/chat_templates.json"
  want=$(python3 -c '
import json, sys
fx = json.load(open(sys.argv[1]))
c = [c for c in fx["cases"] if c["template"] == "smollm2" and c["add_generation_prompt"]
     and fx["conversations"][c["conversation"]] == [{"role": "user", "content": "Hello!"}]]
print(", ".join(map(str, c[0]["ids"])))' "$chat_fx")
  c1=$("$run" generate --model "$smol" --chat "Hello!" --max-tokens 48 --temperature 0.7 --top-p 0.9 --seed 5 --json)
  c2=$("$run" generate --model "$smol" --chat "Hello!" --max-tokens 48 --temperature 0.7 --top-p 0.9 --seed 5 --json)
  if [[ -n "$want" && "$c1" == *"\"prompt_ids\": [$want], "* && "$(ids_of <<<"$c1")" == "$(ids_of <<<"$c2")" ]]; then
    echo "ok:   generate --chat on SmolLM2: prompt ids as llama.cpp's, seeded ids reproduced"
  else
    echo "FAIL: generate --chat on SmolLM2: want prompt [$want], got '$c1' / '$c2'"; fails=$((fails + 1))
  fi
  # Greedy, the reply ends with <|im_end|> (id 2, also SmolLM2's EOS) well before 64 tokens. (The
  # prompt is one whose reply has no near-tie: "Hello!" answers 32-49 ids on the ref / SSE4 / AVX2
  # kernels but on AVX-512 takes another word at the second token and runs past 128.)
  g=$("$run" generate --model "$smol" --chat "What is 2+2?" --max-tokens 64 --json | ids_of)
  n=$(tr -cd , <<<"$g" | wc -c)
  if [[ "$g" == *", 2" && $n -lt 63 ]]; then
    echo "ok:   generate --chat on SmolLM2: greedy reply stops at <|im_end|> after $((n + 1)) ids"
  else
    echo "FAIL: generate --chat on SmolLM2: greedy ids '$g' do not stop at <|im_end|>"; fails=$((fails + 1))
  fi
else
  echo "skip: generate --chat on SmolLM2 (LAYA_SMOLLM2_GGUF is not set)"
fi

echo "$fails failure(s)"
[[ $fails -eq 0 ]]
