#!/usr/bin/env bash
# laya-run decide on a decoder (runtime/decisions/decoder_decide.h) from the command line: result shapes,
# exit codes, messages, nothing on stdout on an error.
# usage: test_laya_decide_decoder.sh LAYA_RUN TINY_CHAT_GGUF TINY_GGUF SOURCE_ROOT LAYA_CONVERT
# TINY_CHAT_GGUF: the tiny random llama with a ChatML template and a 4096-token context;
# TINY_GGUF: the same without a template.
set -u
run=$1 gguf=$2 plain=$3 root=$4 conv=$5
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_streams (tests/tools/expect.sh): exit code, stdout and stderr patterns; the streams
# stay in $tmp/out and $tmp/err.
source "$root/tests/tools/expect.sh"
expect_bin=$run expect_name=laya-run expect_tmp=$tmp

ex=$root/examples
expect_streams 0 'laya-run decide --model M.gguf' '' -- decide --help
# questions: the encoder path's result shape without `action`.
expect_streams 0 '^\{"model": "laya-rl-agent", "answers": \{"heating": \{"type": "choice", "choice": "(on|off|eco)", "probabilities": \{"on": [0-9.e-]+, "off": [0-9.e-]+, "eco": [0-9.e-]+\}, "confidence": [0-9.e-]+, "answer_confidence": [0-9.e-]+, "abstention": "(passed|abstained)", "abstention_threshold": 0.2\}, "comfort": \{"type": "score".*"usage": \{"input_tokens": [0-9]+, "prefill_tokens": [0-9]+, "prefix_hit_tokens": 0, "output_tokens": 0\}\}$' '' \
  -- decide --model "$gguf" --request "$ex/decoder-questions.json"
if grep -q '"action"' "$tmp/out"; then echo "FAIL: a decoder answer has an action"; fails=$((fails + 1)); fi
# schema: the three scenarios.
for f in smart-home-hub edge-quality-inspection industrial-alarm; do
  expect_streams 0 '^\{"decision": \{.*\}, "fields": \{.*\}, "fallback": (true|false), "usage": \{"input_tokens": [0-9]+, "prefix_hit_tokens": 0, "output_tokens": [0-9]+\}, "timings": \{"load_ms": [0-9.e+-]+, "ttft_ms": [0-9.e+-]+, "prefill_ms": [0-9.e+-]+, "decode_tokens_per_s": [0-9.e+-]+, "prefix_cache": \{"hits": 0, "misses": 1, "hit_tokens": 0\}\}\}$' '' \
    -- decide --model "$gguf" --request "$ex/$f.json" --threads 1
done
# states: a list; the second state reuses the system block from the prefix cache.
python3 - "$ex/industrial-alarm.json" "$tmp/states.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
s = b.pop("state")
b["states"] = [s, dict(s, tank_level_pct=12)]
b["max_tokens"] = 400
json.dump(b, open(sys.argv[2], "w"))
PY
expect_streams 0 '^\[\{"decision": .*"fallback": false.*\}, \{"decision": .*"fallback": false.*"prefix_cache": \{"hits": 1, "misses": 0, "hit_tokens": [1-9][0-9]*\}\}\}\]$' '' \
  -- decide --model "$gguf" --request "$tmp/states.json" --temperature 0.7 --seed 3
# A budget overrun: the fallback, flagged; without one (nor a default), exit 1 naming it.
sed 's/"max_tokens": 64/"max_tokens": 1/' "$ex/industrial-alarm.json" >"$tmp/budget.json"
expect_streams 0 '^\{"decision": \{"response": "switch_to_standby", "target": "pump_2", "load_pct": 0, "page_operator": true, "priority": "high"\}, "fields": \{\}, "fallback": true' '' \
  -- decide --model "$gguf" --request "$tmp/budget.json"
python3 -c 'import json,sys; b=json.load(open(sys.argv[1])); b.pop("fallback"); json.dump(b, open(sys.argv[2], "w"))' "$tmp/budget.json" "$tmp/nofb.json"
expect_streams 1 '' 'max_tokens 1 tokens, and the request has no fallback' -- decide --model "$gguf" --request "$tmp/nofb.json"
# Refused requests: exit 1, the HTTP class, nothing on stdout.
sed 's/"load_pct": 0/"load_pct": 150/' "$ex/industrial-alarm.json" >"$tmp/badfb.json"
expect_streams 1 '' "request refused \(HTTP 422\): 'fallback' does not validate against the schema" -- decide --model "$gguf" --request "$tmp/badfb.json"
echo '{"state": 1, "schema": {"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}}' >"$tmp/badschema.json"
expect_streams 1 '' "request refused \(HTTP 422\): schema: .*pattern" -- decide --model "$gguf" --request "$tmp/badschema.json"
echo '{"state": 1, "schema": ' >"$tmp/notjson.json"
expect_streams 1 '' 'request refused \(HTTP 400\): request body must be valid JSON' -- decide --model "$gguf" --request "$tmp/notjson.json"
python3 -c 'import json; print(json.dumps({"state": "s", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": ["o%d" % i for i in range(27)]}}}))' >"$tmp/many.json"
expect_streams 1 '' 'request refused \(HTTP 422\): .*at most 26' -- decide --model "$gguf" --request "$tmp/many.json"
expect_streams 1 '' 'no chat template' -- decide --model "$plain" --request "$ex/decoder-questions.json"
expect_streams 2 '' '--explain is for encoder models' -- decide --model "$gguf" --request "$ex/decoder-questions.json" --explain

# The .laya laya-convert makes of the GGUF answers the same (its embedded vocabulary and chat
# template), and its stored temperatures are the ones applied.
"$conv" "$gguf" -o "$tmp/chat.laya" >/dev/null 2>&1 || { echo "FAIL: laya-convert $gguf"; fails=$((fails + 1)); }
for req in decoder-questions industrial-alarm; do
  a=$("$run" decide --model "$gguf" --request "$ex/$req.json" 2>&1 | sed 's/"timings": .*//')
  b=$("$run" decide --model "$tmp/chat.laya" --request "$ex/$req.json" 2>&1 | sed 's/"timings": .*//')
  if [[ -n "$a" && "$a" == "$b" ]]; then echo "ok:   decide on the .laya = on the GGUF ($req)"
  else echo "FAIL: decide on the .laya differs from the GGUF ($req)"; echo "    $a" | head -c 400; echo; echo "    $b" | head -c 400; echo; fails=$((fails + 1)); fi
done
echo '{"temperature": [4.0, 4.0, 4.0]}' >"$tmp/temps.json"
"$conv" "$gguf" -o "$tmp/hot.laya" --decision-config "$tmp/temps.json" >/dev/null 2>&1 || { echo "FAIL: laya-convert --decision-config"; fails=$((fails + 1)); }
c1=$("$run" decide --model "$tmp/chat.laya" --request "$ex/decoder-questions.json" | python3 -c 'import json,sys; a=json.load(sys.stdin)["answers"]["heating"]["probabilities"]; print(max(a.values()))')
c4=$("$run" decide --model "$tmp/hot.laya" --request "$ex/decoder-questions.json" | python3 -c 'import json,sys; a=json.load(sys.stdin)["answers"]["heating"]["probabilities"]; print(max(a.values()))')
if python3 -c "import sys; sys.exit(not (float('$c4') < float('$c1')))" 2>/dev/null; then echo "ok:   a stored temperature of 4 flattens the options ($c1 -> $c4)"
else echo "FAIL: stored temperatures not applied ($c1 -> $c4)"; fails=$((fails + 1)); fi

echo "$((fails == 0 ? 1 : 0)) passed, $fails failed"
exit $((fails > 0))
