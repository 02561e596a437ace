#!/usr/bin/env bash
# laya-run calibrate (runtime/decisions/calibration.h) from the command line on the tiny random llama
# GGUF with a ChatML template: the report's shape, exit codes and messages (nothing on stdout on an
# error), the written config is what laya-convert --decision-config takes, and decide on the
# converted model applies it: the NLL of the labels recomputed from the probabilities decide prints
# equals the report's, before (the GGUF, T = 1) and after (the .laya with the fitted temperatures).
# usage: test_laya_calibrate.sh LAYA_RUN TINY_CHAT_GGUF TINY_GGUF SOURCE_ROOT LAYA_CONVERT
set -u
run=$1 gguf=$2 plain=$3 root=$4 conv=$5
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# expect_streams (tests/tools/expect.sh): exit code, stdout and stderr patterns; the streams
# stay in $tmp/out and $tmp/err.
source "$root/tests/tools/expect.sh"
expect_bin=$run expect_name=laya-run expect_tmp=$tmp

# The first 12 lines of the committed labelled set (52 questions, every question type).
head -12 "$root/examples/calibration/decoder-labelled.jsonl" >"$tmp/data.jsonl"
expect_streams 0 'laya-run calibrate --model' '' -- calibrate --help
metrics='\{"nll": [0-9.e+-]+, "accuracy": [0-9.e+-]+, "ece": [0-9.e+-]+\}'
expect_streams 0 "^\{\"model\": \".*\", \"temperature\": \[[0-9.e+-]+, [0-9.e+-]+, [0-9.e+-]+\], \"temperature_by_options\": \{.*\}, \"fits\": \{\"choice\": \{\"questions\": 16, \"fitted\": [0-9.e+-]+, \"applied\": [0-9.e+-]+\}, .*\"train_questions\": \{.*\}, \"unlabelled_questions\": 0, \"train\": \{\"lines\": 12, \"questions\": 52, \"before\": $metrics, \"after\": $metrics, \"types\": \{\"choice\": \{\"questions\": 16, \"before\": $metrics, \"after\": $metrics\}, \"score\": .*, \"noul\": \{\"questions\": 24, .*\}\}\}, \"holdout\": \{\"lines\": 0, \"questions\": 0, \"before\": \{\"nll\": null, \"accuracy\": null, \"ece\": null\}, \"after\": .*, \"types\": \{\}\}\}$" '' \
  -- calibrate --model "$gguf" --data "$tmp/data.jsonl" -o "$tmp/cfg.json" --holdout 0 --min-bucket 5 --threads 1
cp "$tmp/out" "$tmp/report.json"
if python3 - "$tmp/cfg.json" "$tmp/report.json" <<'PY'
import json, sys
cfg, rep = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert set(cfg) == {"temperature", "temperature_by_options"}, cfg
assert cfg["temperature"] == rep["temperature"] and cfg["temperature_by_options"] == rep["temperature_by_options"]
# Buckets with >= 5 questions have their own fit; choice:2 (4 questions) has none.
assert "choice:2" not in cfg["temperature_by_options"] and "choice:3-5" in cfg["temperature_by_options"]
PY
then echo "ok:   the config is the report's temperatures, buckets by --min-bucket"
else echo "FAIL: config $(cat "$tmp/cfg.json")"; fails=$((fails + 1)); fi

# The held-out split: 3 of the 12 lines (holdout 0.25), the fit on the other 9.
expect_streams 0 '"train": \{"lines": 9, .*"holdout": \{"lines": 3, "questions": 1[0-9]' '' \
  -- calibrate --model "$gguf" --data "$tmp/data.jsonl" --threads 1

# The config goes through laya-convert, and decide on the .laya applies it: accuracy, ECE (10
# bins) and NLL recomputed from the probabilities decide prints (4 decimals) equal the report's, at
# T = 1 (the GGUF) and at the fitted temperatures (the .laya). The NLL is compared where every
# label's probability is >= 1e-3 (rounding bounded; T = 1 on random weights gives ~1e-6).
"$conv" "$gguf" -o "$tmp/cal.laya" --decision-config "$tmp/cfg.json" >/dev/null 2>&1 ||
  { echo "FAIL: laya-convert --decision-config $(cat "$tmp/cfg.json")"; fails=$((fails + 1)); }
if python3 - "$run" "$gguf" "$tmp/cal.laya" "$tmp/data.jsonl" "$tmp/report.json" <<'PY'
import json, math, subprocess, sys
run, gguf, laya, data, report = sys.argv[1:]
rep = json.load(open(report))
lines = [json.loads(l) for l in open(data) if l.strip()]

def metrics(model):
    nll, conf, correct, low = 0.0, [], [], 1.0
    for line in lines:
        req = {k: line[k] for k in ("system", "state", "questions")}
        out = subprocess.run([run, "decide", "--model", model, "--request", "-", "--threads", "1"],
                             input=json.dumps(req), capture_output=True, text=True, check=True)
        answers = json.loads(out.stdout)["answers"]
        for qid, label in line["labels"].items():
            a, q = answers[qid], line["questions"][qid]
            if q["type"] == "noul":
                probs = {False: 1 - a["noul"], True: a["noul"]}
            else:
                probs = {k if q["type"] == "choice" else int(k): v for k, v in a["probabilities"].items()}
            p = probs[label]
            low = min(low, p)
            nll -= math.log(max(p, 1e-12))
            conf.append(max(probs.values()))
            correct.append(float(max(probs, key=probs.get) == label))
    n = len(conf)
    ece = 0.0
    for b in range(10):
        sel = [i for i in range(n) if (conf[i] >= b / 10 if b == 0 else conf[i] > b / 10) and conf[i] <= (b + 1) / 10]
        if sel:
            ece += len(sel) / n * abs(sum(conf[i] for i in sel) / len(sel) - sum(correct[i] for i in sel) / len(sel))
    return {"nll": nll / n, "accuracy": sum(correct) / n, "ece": ece}, low

for model, key in ((gguf, "before"), (laya, "after")):
    got, low = metrics(model)
    want = rep["train"][key]
    print("    %s: decide %s, report %s" % (key, json.dumps(got), json.dumps(want)))
    assert got["accuracy"] == want["accuracy"], key
    assert abs(got["ece"] - want["ece"]) <= 1e-3, key
    if low >= 1e-3:
        assert abs(got["nll"] - want["nll"]) <= 1e-3 * want["nll"], key
    else:
        assert key == "before", "the fitted temperatures leave a label at p < 1e-3"
PY
then echo "ok:   decide on the converted model applies the fitted temperatures"
else echo "FAIL: decide's probabilities do not give the report's metrics"; fails=$((fails + 1)); fi

# Bad data: exit 1 naming the line, nothing on stdout, no config written.
bad() {  # bad NAME PYTHON_EDIT PATTERN: line 2 of the data edited by PYTHON_EDIT (on `b`)
  python3 - "$tmp/data.jsonl" "$tmp/$1.jsonl" "$2" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
b = json.loads(lines[1])
exec(sys.argv[3])
lines[1] = json.dumps(b)
open(sys.argv[2], "w").write("\n".join(lines) + "\n")
PY
  rm -f "$tmp/bad.json"
  expect_streams 1 '' "$3" -- calibrate --model "$gguf" --data "$tmp/$1.jsonl" -o "$tmp/bad.json"
  if [[ -e "$tmp/bad.json" ]]; then echo "FAIL: a config was written for $1"; fails=$((fails + 1)); fi
}
bad choice 'b["labels"]["alarm_pump"] = "pump_9"' "line 2: label 'pump_9' of question 'alarm_pump' \(choice\) is not one of its labels \['pump_1', 'pump_2', 'pump_3'\]"
bad score 'b["labels"]["tank"] = "75-100 percent"' "line 2: label '75-100 percent' of question 'tank' \(score\) is not a level index 0..3"
bad noul 'b["labels"]["operator"] = "maybe"' "line 2: label 'maybe' of question 'operator' \(noul\) is not a boolean"
bad unknown 'b["labels"]["nope"] = 1' "line 2: label for 'nope', which is no question"
bad nolabels 'del b["labels"]' "line 2: 'labels' must be an object"
bad states 'b["states"] = [b.pop("state")]' "line 2: 'states' given"
bad schema 'b.pop("questions"); b["schema"] = {"type": "object"}' "line 2: a schema request"
bad question 'b["questions"]["tank"]["type"] = "rank"' "line 2: .*rank"
printf '{"state": 1,\n' >"$tmp/notjson.jsonl"
expect_streams 1 '' 'line 1: ' -- calibrate --model "$gguf" --data "$tmp/notjson.jsonl"
printf '\n\n' >"$tmp/empty.jsonl"
expect_streams 1 '' 'has no labelled lines' -- calibrate --model "$gguf" --data "$tmp/empty.jsonl"
head -1 "$tmp/data.jsonl" >"$tmp/one.jsonl"
expect_streams 1 '' 'leaves no training line' -- calibrate --model "$gguf" --data "$tmp/one.jsonl" --holdout 0.9
expect_streams 1 '' 'no chat template' -- calibrate --model "$plain" --data "$tmp/data.jsonl"
expect_streams 1 '' 'cannot open' -- calibrate --model "$gguf" --data "$tmp/missing.jsonl"
expect_streams 2 '' '--data is required' -- calibrate --model "$gguf"
expect_streams 2 '' '--holdout' -- calibrate --model "$gguf" --data "$tmp/data.jsonl" --holdout 1

echo "$((fails == 0 ? 1 : 0)) passed, $fails failed"
exit $((fails > 0))
