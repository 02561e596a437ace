#!/usr/bin/env bash
# laya-convert as a user meets it: help, exit code 2 on bad arguments, 1 on bad input with nothing
# left behind, a converted model laya-run can inspect, the output replaced atomically.
# A GGUF decoder (TINY_GGUF) converts with its vocabulary, chat template and decision config, and
# laya-run generate / score give the same output on the .laya as on the GGUF.
# usage: test_laya_convert.sh LAYA_CONVERT LAYA_RUN FIXTURE_CHECKPOINT_DIR [TINY_GGUF]
set -u
conv=$1 run=$2 src=$3 gguf=${4:-}
here=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

# shellcheck source=tests/tools/expect.sh
source "$(dirname "$0")/expect.sh"
expect_bin=$conv expect_name=laya-convert

# nothing_left FILE: neither FILE nor FILE.tmp exists.
nothing_left() {
  if [[ -e $1 || -e $1.tmp ]]; then
    echo "FAIL: $1 or $1.tmp was left behind"
    fails=$((fails + 1))
  fi
}

expect 0 "usage: laya-convert" -- --help
expect 2 "no source directory" --
expect 2 "no output file" -- "$src"
expect 2 "--dtype must be f32, f16, bf16 or int8" -- "$src" -o "$tmp/x.laya" --dtype q4
expect 2 "unknown option --frobnicate" -- "$src" -o "$tmp/x.laya" --frobnicate
expect 2 "--max-rows must be an integer in \[1, " -- "$src" -o "$tmp/x.laya" --max-rows 0
expect 2 "--dtype is given twice" -- "$src" -o "$tmp/x.laya" --dtype f16 --dtype f32
expect 2 "one source directory only" -- "$src" "$src" -o "$tmp/x.laya"
nothing_left "$tmp/x.laya"

# Bad input: exit 1, a message naming the problem, no output file.
expect 1 "kIoError.*not a directory" -- "$tmp/missing" -o "$tmp/a.laya"
nothing_left "$tmp/a.laya"
cp -r "$src" "$tmp/ck"
head -c 5000 "$src/model.safetensors" >"$tmp/ck/model.safetensors"
expect 1 "model.safetensors" -- "$tmp/ck" -o "$tmp/b.laya"
nothing_left "$tmp/b.laya"
rm -rf "$tmp/ck" && cp -r "$src" "$tmp/ck"
sed -i 's/"head_layers": *2/"head_layers": 3/' "$tmp/ck/rl_agent_config.json"
expect 1 "head.layers.2.norm1.weight.*is missing" -- "$tmp/ck" -o "$tmp/c.laya"
nothing_left "$tmp/c.laya"
rm -rf "$tmp/ck" && cp -r "$src" "$tmp/ck"
sed -i 's/"head_layers"/"option_layout": "parallel", "head_layers"/' "$tmp/ck/rl_agent_config.json"
expect 1 "option_layout.*parallel" -- "$tmp/ck" -o "$tmp/d.laya"
nothing_left "$tmp/d.laya"
# An output directory that does not exist: the write fails, nothing is created.
expect 1 "kIoError" -- "$src" -o "$tmp/no/such/dir/e.laya" --quiet
nothing_left "$tmp/no/such/dir/e.laya"

# Success, every dtype; laya-run reads the result, which carries everything needed to answer.
for dt in f32 f16 bf16 int8; do
  expect 0 "wrote $tmp/m.$dt.laya: laya" -- "$src" -o "$tmp/m.$dt.laya" --dtype "$dt"
  nothing_left "$tmp/m.$dt.laya.tmp"
  out=$("$run" inspect "$tmp/m.$dt.laya" 2>&1)
  for want in "tokenizer.mask_id" "laya.option_layout = sequential" "laya-convert" \
      "model.safetensors" "tokenizer/tokenizer.json"; do
    if ! grep -qF -- "$want" <<<"$out"; then
      echo "FAIL: laya-run inspect m.$dt.laya lacks '$want'"
      fails=$((fails + 1))
    fi
  done
done
# An existing output is replaced whole.
echo "old" >"$tmp/r.laya"
expect 0 "wrote" -- "$src" -o "$tmp/r.laya" --dtype bf16 --no-hash
if ! "$run" inspect "$tmp/r.laya" >/dev/null 2>&1; then
  echo "FAIL: the replaced output does not load"
  fails=$((fails + 1))
fi

# A GGUF decoder (the tiny random llama of the fixtures): the .laya carries the vocabulary, the
# chat template and the decision temperatures; laya-run answers on it exactly as on the GGUF.
if [[ -n "$gguf" ]]; then
  expect 2 "--dtype does not apply to a GGUF file" -- "$gguf" -o "$tmp/g.laya" --dtype f16
  expect 2 "--decision-config applies to a GGUF file only" -- "$src" -o "$tmp/g.laya" --decision-config x.json
  expect 2 "--max-chunk must be an integer in \[1, " -- "$gguf" -o "$tmp/g.laya" --max-chunk 0
  nothing_left "$tmp/g.laya"
  # Bad input: exit 1, the problem named, no output.
  head -c 3000 "$gguf" >"$tmp/trunc.gguf"
  expect 1 "kFileTruncated: .*trunc.gguf: GGUF: " -- "$tmp/trunc.gguf" -o "$tmp/g.laya"
  nothing_left "$tmp/g.laya"
  printf 'GGUF\x01\x00\x00\x00' >"$tmp/v1.gguf"
  expect 1 "kFileUnsupportedVersion: .*v1.gguf: GGUF v1 is not supported" -- "$tmp/v1.gguf" -o "$tmp/g.laya"
  nothing_left "$tmp/g.laya"
  # A tensor type the kernels lack (output_norm.weight's type set to iq4_nl, 20): named.
  python3 - "$gguf" "$tmp/iq4.gguf" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
name = b"output_norm.weight"
at = b.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
(n_dims,) = struct.unpack_from("<I", b, at)
struct.pack_into("<I", b, at + 4 + 8 * n_dims, 20)
open(sys.argv[2], "wb").write(b)
PY
  expect 1 "kUnsupported: .*tensor 'output_norm.weight' has type iq4_nl" -- "$tmp/iq4.gguf" -o "$tmp/g.laya"
  nothing_left "$tmp/g.laya"
  # An architecture the decoder graph does not implement.
  python3 "$here/gguf_set_keys.py" "$gguf" "$tmp/arch.gguf" general.architecture=s:gpt2 \
    gpt2.context_length=u32:256 gpt2.embedding_length=u32:64 gpt2.block_count=u32:2 \
    gpt2.attention.head_count=u32:4 gpt2.attention.layer_norm_rms_epsilon=u32:0
  expect 1 "kUnsupported.*gpt2" -- "$tmp/arch.gguf" -o "$tmp/g.laya"
  nothing_left "$tmp/g.laya"
  printf '{"temperature": [0.5, 1]}' >"$tmp/bad-dc.json"
  expect 1 "bad-dc.json: \"temperature\" must be a list of 3" -- "$gguf" -o "$tmp/g.laya" --decision-config "$tmp/bad-dc.json"
  nothing_left "$tmp/g.laya"

  # A copy with a ChatML template (tests/tools/gguf_set_keys.py), converted with temperatures.
  tmpl="{% for m in messages %}{{'<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
  python3 "$here/gguf_set_keys.py" "$gguf" "$tmp/chat.gguf" "tokenizer.chat_template=s:$tmpl"
  printf '{"temperature": [0.75, 1.5, 2], "temperature_by_options": {"choice:3-5": 0.625}}' >"$tmp/dc.json"
  expect 0 "wrote $tmp/g.laya: llama, 80960 parameters, weights .* \(f32 " -- "$tmp/chat.gguf" -o "$tmp/g.laya" --decision-config "$tmp/dc.json" --max-chunk 64
  nothing_left "$tmp/g.laya.tmp"
  out=$("$run" inspect "$tmp/g.laya" 2>&1)
  sha=$(sha256sum "$tmp/chat.gguf" | cut -d' ' -f1)
  for want in "tokenizer: gguf" "source file chat.gguf sha256 $sha" "laya-convert" \
      "temperature [0.75, 1.5, 2], choice:3-5 0.625" "chat template: ${#tmpl} bytes" \
      "seq in [1, 64] cells in [1, 256]"; do
    if ! grep -qF -- "$want" <<<"$out"; then
      echo "FAIL: laya-run inspect g.laya lacks '$want'"
      fails=$((fails + 1))
    fi
  done
  # generate --prompt / --chat / score: the same output from the .laya as from the GGUF (the
  # timings aside); score prints every logit as Python's repr, so equal text is equal bits.
  same() {
    local what=$1 a b
    shift
    a=$("$run" "$@" --model "$tmp/chat.gguf" 2>&1 | sed 's/"timings".*//')
    b=$("$run" "$@" --model "$tmp/g.laya" 2>&1 | sed 's/"timings".*//')
    if [[ -n "$a" && "$a" == "$b" && "$a" != *rror* ]]; then
      echo "ok:   $what: the same on the GGUF and the .laya"
    else
      echo "FAIL: $what differs: GGUF '$a' / .laya '$b'"
      fails=$((fails + 1))
    fi
  }
  printf '{"ids": [297, 104, 105, 32, 119, 111, 114, 108, 100, 298, 10, 5, 6, 7]}' >"$tmp/ids.json"
  same "generate --prompt" generate --prompt "hello world" --max-tokens 12 --json
  same "generate --chat" generate --chat "hi there" --max-tokens 12 --json
  same "generate sampled" generate --prompt "ab" --max-tokens 12 --temperature 0.8 --seed 3 --json
  same "score" score --ids-file "$tmp/ids.json" --top 5
  same "score --kernels ref" score --ids-file "$tmp/ids.json" --top 3 --kernels ref
  # An f16 KV cache: fixed in the .laya by --kv-type; the same output as the GGUF built with it at
  # load; the other type on the .laya, or a bad name, fails.
  expect 2 "--kv-type bf16 is not one of: f32, f16" -- "$tmp/chat.gguf" -o "$tmp/h.laya" --kv-type bf16
  expect 0 "wrote $tmp/h.laya" -- "$tmp/chat.gguf" -o "$tmp/h.laya" --kv-type f16 --max-chunk 64
  out=$("$run" inspect "$tmp/h.laya" 2>&1)
  grep -qF "4 states, 256 bytes per cell" <<<"$out" || { echo "FAIL: inspect h.laya: not 256 bytes per cell (f16; 512 in f32)"; fails=$((fails + 1)); }
  a=$("$run" generate --model "$tmp/chat.gguf" --kv-type f16 --prompt "hello world" --max-tokens 12 --json 2>&1 | sed 's/"timings".*//')
  b=$("$run" generate --model "$tmp/h.laya" --prompt "hello world" --max-tokens 12 --json 2>&1 | sed 's/"timings".*//')
  if [[ "$a" == '{"prompt_ids": ['* && "$a" == "$b" ]]; then
    echo "ok:   generate --kv-type f16: the same on the GGUF and the f16 .laya"
  else
    echo "FAIL: generate --kv-type f16: GGUF '$a' / .laya '$b'"; fails=$((fails + 1))
  fi
  expect_bin=$run expect_name=laya-run expect 1 "h.laya: the model stores a f16 KV cache \(fixed by laya-convert --kv-type\); kv_type f32 needs a file converted with it" -- generate --model "$tmp/h.laya" --kv-type f32 --ids 1,2
  expect_bin=$run expect_name=laya-run expect 2 "--kv-type q8_0 is not one of: f32, f16" -- generate --model "$tmp/h.laya" --kv-type q8_0 --ids 1,2
fi
# The real SmolLM2 Q4_1 (LAYA_SMOLLM2_GGUF): Q4_1 and Q8_0 weights kept, the same greedy reply.
smol=${LAYA_SMOLLM2_GGUF:-}
if [[ -n "$smol" && ! -f "$smol" ]]; then
  echo "FAIL: LAYA_SMOLLM2_GGUF names $smol, which does not exist"
  fails=$((fails + 1))
elif [[ -n "$smol" ]]; then
  expect 0 "wrote $tmp/smol.laya: llama, 134515008 parameters, .*q8_0 28.7 MiB, q4_1 63.3 MiB" -- "$smol" -o "$tmp/smol.laya"
  a=$("$run" generate --model "$smol" --chat "Name three colours." --max-tokens 24 --json | sed 's/"timings".*//')
  b=$("$run" generate --model "$tmp/smol.laya" --chat "Name three colours." --max-tokens 24 --json | sed 's/"timings".*//')
  if [[ "$a" == '{"prompt_ids": ['* && "$a" == "$b" ]]; then
    echo "ok:   SmolLM2: generate --chat gives the same ids on the GGUF and the .laya"
  else
    echo "FAIL: SmolLM2 generate --chat: GGUF '$a' / .laya '$b'"; fails=$((fails + 1))
  fi
else
  echo "skip: SmolLM2 conversion (LAYA_SMOLLM2_GGUF is not set)"
fi

if [[ $fails -ne 0 ]]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "all passed"
