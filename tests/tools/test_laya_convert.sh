#!/usr/bin/env bash
# laya-convert as a user meets it: help, exit code 2 on bad arguments, 1 on bad input with nothing
# left behind, a converted model laya-run can inspect, the output replaced atomically.
# usage: test_laya_convert.sh LAYA_CONVERT LAYA_RUN FIXTURE_CHECKPOINT_DIR
set -u
conv=$1 run=$2 src=$3
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

if [[ $fails -ne 0 ]]; then
  echo "$fails failure(s)"
  exit 1
fi
echo "all passed"
