#!/usr/bin/env python3
"""Validity of decoder decisions: schema-constrained (laya-run decide) against the same prompts
generated without the grammar (laya-run generate, greedy, first JSON object of the reply).

usage: bench/decoder_validity.py --laya-run build/tools/laya-run --model SmolLM2.gguf
           [--decisions 1000] [--constrained N] [--unconstrained N] [--unconstrained-tokens 128]
           [--batch 50] [--seed 1] [--threads 1] [--json results.json]

States: a seeded generator per scenario (examples/smart-home-hub.json,
edge-quality-inspection.json, industrial-alarm.json: each example's state with its values drawn
again), decision i uses scenario i % 3. Constrained: the example's body (system, schema,
fallback, max_tokens) with `states` in batches of --batch states per laya-run process (one model
load per batch; the prefix cache keeps the system + schema block). Unconstrained: the same
states (the first --unconstrained, default all --decisions), the same prompt text rendered as
runtime/decisions/decoder_decide.h renders it (SmolLM2's ChatML), greedy, through laya-run generate
--prompts-file (--batch prompts of one scenario per process, the prefix cache keeping the shared
block) --stop-after-json, at most --unconstrained-tokens new tokens; the reply's first JSON
object (the text from its first '{' read with json.JSONDecoder.raw_decode) must parse and
validate. Each unconstrained reply is one of: valid; schema violation (the object parses, does
not validate); invalid JSON (the turn ended, or the object closed, without a parseable object);
truncated (the token cap came first: no object had closed).
--constrained N runs the first N constrained decisions only (default all; 0: none), so the
unconstrained run can be made alone (the states are the same: one seeded generator).

Validation is this script's own (the schema subset the examples use: object / properties /
required / enum / boolean / integer / number bounds / string maxLength), independent of the C++
validator. Standard library only.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIOS = ["smart-home-hub", "edge-quality-inspection", "industrial-alarm"]
INSTRUCTION = ("Decide from the device state below. Answer with one JSON object that follows this "
               "JSON schema:\n")


def dumps(v):
    return json.dumps(v, ensure_ascii=False)


def state_smart_home(r):
    rooms = ["living_room", "bedroom", "kitchen"]
    return {
        "time": "%02d:%02d" % (r.randrange(24), r.randrange(60)),
        "occupancy": {k: r.random() < 0.5 for k in rooms},
        "indoor_temp_c": round(r.uniform(14, 29), 1),
        "outdoor_temp_c": round(r.uniform(-10, 35), 1),
        "target_temp_c": float(r.choice([19, 20, 21, 22])),
        "heating": r.choice(["on", "off", "eco"]),
        "windows_open": sorted(r.sample(rooms, r.randrange(3))),
        "lights_on": sorted(r.sample(rooms, r.randrange(4))),
        "smoke_detected": r.random() < 0.1,
        "battery_pct": r.randrange(5, 101),
        "grid_price": r.choice(["low", "normal", "peak"]),
    }


def state_inspection(r):
    nominal = 42.0
    return {
        "line": "L%d" % r.randrange(1, 6),
        "part_id": "BRK-%05d" % r.randrange(100000),
        "camera": {"scratch_count": r.randrange(6), "max_scratch_mm": round(r.uniform(0, 3), 1),
                   "color_delta_e": round(r.uniform(0, 3), 1)},
        "caliper": {"diameter_mm": round(nominal + r.uniform(-0.12, 0.12), 2),
                    "nominal_mm": nominal, "tolerance_mm": 0.05},
        "weight_g": round(310 + r.uniform(-4, 4), 1),
        "weight_nominal_g": 310.0,
        "previous_rejects_last_hour": r.randrange(10),
    }


def state_alarm(r):
    alarms = []
    if r.random() < 0.8:
        alarms.append({"sensor": "pump_%d_bearing_temp" % r.randrange(1, 4),
                       "value": round(r.uniform(70, 110), 1), "limit": 90.0, "unit": "C"})
    if r.random() < 0.6:
        alarms.append({"sensor": "pump_%d_vibration" % r.randrange(1, 4),
                       "value": round(r.uniform(3, 12), 1), "limit": 7.1, "unit": "mm/s"})
    return {
        "station": "PS-%d" % r.randrange(1, 20),
        "alarms": alarms,
        "pumps": {"pump_%d" % i: r.choice(["running", "standby", "fault"]) for i in (1, 2, 3)},
        "tank_level_pct": r.randrange(101),
        "operator_on_site": r.random() < 0.3,
    }


GENERATORS = [state_smart_home, state_inspection, state_alarm]


def valid(schema, v):
    """The subset of JSON Schema the examples use."""
    if "enum" in schema:
        return any(v == e and type(v) == type(e) for e in schema["enum"])
    t = schema.get("type")
    if t == "object":
        if not isinstance(v, dict):
            return False
        props = schema.get("properties", {})
        if any(k not in v for k in schema.get("required", [])):
            return False
        if schema.get("additionalProperties") is False and any(k not in props for k in v):
            return False
        return all(valid(props[k], x) for k, x in v.items() if k in props)
    if t == "boolean":
        return isinstance(v, bool)
    if t in ("integer", "number"):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return False
        if t == "integer" and not (isinstance(v, int) or float(v).is_integer()):
            return False
        return schema.get("minimum", v) <= v <= schema.get("maximum", v)
    if t == "string":
        return isinstance(v, str) and len(v) <= schema.get("maxLength", len(v))
    raise ValueError("schema keyword not covered: %r" % schema)


def first_json_object(text):
    at = text.find("{")
    if at < 0:
        return None
    try:
        v, _ = json.JSONDecoder().raw_decode(text[at:])
        return v
    except ValueError:
        return None


def chatml_prompt(example, state):
    return ("<|im_start|>system\n" + example["system"] + "<|im_end|>\n<|im_start|>user\n" +
            INSTRUCTION + dumps(example["schema"]) + "\n\nState:\n" + dumps(state) +
            "<|im_end|>\n<|im_start|>assistant\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--laya-run", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--decisions", type=int, default=1000)
    ap.add_argument("--constrained", type=int)
    ap.add_argument("--unconstrained", type=int)
    ap.add_argument("--unconstrained-tokens", type=int, default=128)
    ap.add_argument("--unconstrained-from", type=int, default=0,
                    help="skip each scenario's first K unconstrained states (to finish a run cut "
                         "short: its batches ran the scenarios' states in order)")
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    examples = [json.load(open(os.path.join(ROOT, "examples", n + ".json"))) for n in SCENARIOS]
    rng = random.Random(a.seed)
    states = [(i % 3, GENERATORS[i % 3](rng)) for i in range(a.decisions)]

    n_con = a.decisions if a.constrained is None else min(a.constrained, a.decisions)
    n_unc = a.decisions if a.unconstrained is None else min(a.unconstrained, a.decisions)
    per = {n: {"decisions": 0, "valid": 0, "fallback": 0, "u_runs": 0, "u_parsed": 0, "u_valid": 0,
               "u_schema_violation": 0, "u_invalid_json": 0, "u_truncated": 0}
           for n in SCENARIOS}
    t0 = time.time()
    tps, ttft = [], []
    for s in range(3):
        mine = [st for k, st in states[:n_con] if k == s]
        for at in range(0, len(mine), a.batch):
            body = {k: v for k, v in examples[s].items() if k != "state"}
            body["states"] = mine[at:at + a.batch]
            p = subprocess.run([a.laya_run, "decide", "--model", a.model, "--request", "-",
                                "--threads", str(a.threads)], input=dumps(body).encode(),
                               capture_output=True, check=False)
            if p.returncode != 0:
                sys.exit("laya-run decide failed: " + p.stderr.decode())
            results = json.loads(p.stdout)
            for r in results:
                c = per[SCENARIOS[s]]
                c["decisions"] += 1
                c["valid"] += valid(examples[s]["schema"], r["decision"])
                c["fallback"] += r["fallback"]
                tps.append(r["timings"]["decode_tokens_per_s"])
                ttft.append(r["timings"]["ttft_ms"])
            print("constrained %s: %d / %d (%.0f s)" % (SCENARIOS[s], at + len(body["states"]),
                                                        len(mine), time.time() - t0),
                  file=sys.stderr)
    t1 = time.time()
    # Batches of one scenario's prompts, the scenarios taking turns (a partial run stays even).
    todo = [[(i, st) for i, (k, st) in enumerate(states[:n_unc]) if k == s][a.unconstrained_from:]
            for s in range(3)]
    batches = []
    for at in range(0, max(len(t) for t in todo), a.batch):
        batches += [(s, todo[s][at:at + a.batch]) for s in range(3) if todo[s][at:at + a.batch]]
    done = 0
    replies = []
    for s, items in batches:
        ex = examples[s]
        prompts = {"prompts": [chatml_prompt(ex, st) for _, st in items]}
        p = subprocess.run([a.laya_run, "generate", "--model", a.model, "--prompts-file", "-",
                            "--max-tokens", str(a.unconstrained_tokens), "--stop-after-json",
                            "--prefix-block", "16", "--threads", str(a.threads), "--json"],
                           input=dumps(prompts).encode(), capture_output=True, check=False)
        if p.returncode != 0:
            sys.exit("laya-run generate failed: " + p.stderr.decode())
        for (i, _), line in zip(items, p.stdout.decode().splitlines()):
            r = json.loads(line)
            v = first_json_object(r["text"])
            c = per[SCENARIOS[s]]
            c["u_runs"] += 1
            c["u_parsed"] += v is not None
            ok = v is not None and valid(ex["schema"], v)
            c["u_valid"] += ok
            if v is not None:
                c["u_schema_violation"] += not ok
                kind = "valid" if ok else "schema_violation"
            elif r["finish_reason"] == "length":
                c["u_truncated"] += 1
                kind = "truncated"
            else:
                c["u_invalid_json"] += 1
                kind = "invalid_json"
            replies.append({"i": i, "scenario": SCENARIOS[s], "kind": kind,
                            "finish_reason": r["finish_reason"], "tokens": len(r["ids"]),
                            "text": r["text"]})
        done += len(items)
        if a.json:  # what has run so far, for a run cut short
            json.dump({"unconstrained_replies": replies}, open(a.json + ".partial", "w"))
        print("unconstrained: %d / %d (%.0f s)" % (done, n_unc, time.time() - t1),
              file=sys.stderr)
    t2 = time.time()
    tot = {k: sum(c[k] for c in per.values()) for k in next(iter(per.values()))}
    tps.sort()
    ttft.sort()
    out = {"per_scenario": per, "total": tot, "unconstrained_tokens": a.unconstrained_tokens,
           "constrained_s": round(t1 - t0, 1),
           "unconstrained_s": round(t2 - t1, 1),
           "median_decode_tokens_per_s": tps[len(tps) // 2] if tps else 0,
           "median_ttft_ms": ttft[len(ttft) // 2] if ttft else 0}
    print("| scenario | constrained: valid / decisions (fallbacks) | unconstrained: valid / runs "
          "| schema violation | invalid JSON | truncated |")
    print("|---|---|---|---|---|---|")
    for n, c in list(per.items()) + [("all", tot)]:
        print("| %s | %d / %d (%d) | %d / %d | %d | %d | %d |" % (
            n, c["valid"], c["decisions"], c["fallback"], c["u_valid"], c["u_runs"],
            c["u_schema_violation"], c["u_invalid_json"], c["u_truncated"]))
    print(json.dumps(out))
    if a.json:
        out["unconstrained_replies"] = replies
        json.dump(out, open(a.json, "w"), indent=1)
    return 0 if tot["valid"] == tot["decisions"] else 1


if __name__ == "__main__":
    sys.exit(main())
