#!/usr/bin/env python3
"""laya-run bench from the command line: the report's shape and consistency, not its speed.

    test_laya_bench.py LAYA_RUN ENCODER.laya DECODER.gguf REQUEST.json

Speed is a benchmark's business (docs/benchmarks.md); this checks that the command measures what
it says: rows of the lengths asked for (within a few tokens), percentiles in order, the batch sizes
asked for, decoders' token counts and rates, every region's touched bytes within its size and the
activations' nonzero, the arena's high-water mark within the arena, no arena overflow, the header
naming the CPU and the thread count; bad arguments exit 2, a bad model 1.
"""
import json
import subprocess
import sys
import tempfile

LAYA_RUN, ENCODER, DECODER, REQUEST = sys.argv[1:5]
failures = []


def run(args):
    p = subprocess.run([LAYA_RUN, "bench"] + args, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def check(cond, what):
    if not cond:
        failures.append(what)


def ordered(s):
    return s["min"] <= s["p50"] <= s["p95"] <= s["p99"]


def check_memory(rep, what):
    mem = rep["memory"]
    regions = {r["region"]: r for r in mem["regions"]}
    check(sorted(regions) == ["activations", "kv", "scratch", "weights", "work"], what + ": regions")
    for name, r in regions.items():
        check(0 <= r["touched_bytes"] <= r["bytes"], "%s: %s touched %d of %d" % (what, name, r["touched_bytes"], r["bytes"]))
    check(regions["activations"]["touched_bytes"] > 0, what + ": activations untouched")
    check(0 < mem["arena_high_water"] <= mem["arena_bytes"], what + ": arena high water %r" % mem)
    check(mem["arena_overflows"] == 0, what + ": arena overflows")
    check(mem["peak_rss_bytes"] > 0, what + ": peak RSS")
    return regions


# An encoder: two lengths under the tiny model's max_len (96), one past it, three batch sizes.
rc, out, err = run(["--model", ENCODER, "--lengths", "8,40,80,200", "--runs", "3", "--warmup", "1",
                    "--batch", "1,2,5", "--json"])
check(rc == 0, "encoder bench exit %d: %s" % (rc, err))
if rc == 0:
    rep = json.loads(out)
    check(rep["model"]["kind"] == "encoder" and rep["model"]["parameters"] > 0, "encoder model block")
    check(rep["machine"]["threads"] >= 1 and rep["machine"]["cpu"], "machine block")
    lat = rep["latency"]
    check([r["target_tokens"] for r in lat] == [8, 40, 80], "encoder lengths: %r" % lat)
    # 8 tokens: shorter than the question itself (its row is longer, and a note says so).
    check(lat and lat[0]["tokens"] > 12 and any(n.startswith("length 8: the nearest row is") for n in rep["notes"]),
          "a length below the question's own: %r" % rep["notes"])
    for r in lat[1:]:
        check(abs(r["tokens"] - r["target_tokens"]) <= 4, "row of %d tokens for %d" % (r["tokens"], r["target_tokens"]))
        check(r["runs"] == 3 and ordered(r["ms"]) and r["ms"]["min"] > 0, "encoder percentiles: %r" % r)
    check(any("200" in n and "max_len" in n for n in rep["notes"]), "the skipped length is noted: %r" % rep["notes"])
    check([b["batch"] for b in rep["batch"]] == [1, 2, 5], "batch sizes: %r" % rep["batch"])
    for b in rep["batch"]:
        check(b["rows_per_s"] > 0 and ordered(b["ms"]), "batch row: %r" % b)
        check(abs(b["rows_per_s"] - b["batch"] * 1000.0 / b["ms"]["p50"]) < 1e-6 * b["rows_per_s"], "rows/s from p50")
        check(b["singly_ms"] > 0, "the bodies one at a time: %r" % b)
    check_memory(rep, "encoder")

# The same in the table form: the header names the CPU, the kernels and the threads.
rc, out, err = run(["--model", ENCODER, "--lengths", "32", "--runs", "2", "--batch", "0"])
check(rc == 0 and out.splitlines()[1].startswith("CPU: ") and "threads: " in out and "kernels: " in out,
      "table header: %r %s" % (out[:400], err))
check("p50 ms" in out and "touched MiB" in out and "rows/s" not in out, "table body: %r" % out)

# A decoder: two prompt lengths, 4 new tokens, and a request body timed.
rc, out, err = run(["--model", DECODER, "--lengths", "8,24", "--gen", "4", "--runs", "3",
                    "--request", REQUEST, "--json"])
check(rc == 0, "decoder bench exit %d: %s" % (rc, err))
if rc == 0:
    rep = json.loads(out)
    check(rep["model"]["kind"] == "decoder", "decoder model block")
    lat = rep["latency"]
    check([r["prompt_tokens"] for r in lat] == [8, 24], "prompt lengths: %r" % lat)
    for r in lat:
        check(1 <= r["generated_tokens"] <= 4, "generated tokens: %r" % r)
        check(ordered(r["ttft_ms"]) and ordered(r["total_ms"]) and r["ttft_ms"]["p50"] <= r["total_ms"]["p50"],
              "decoder percentiles: %r" % r)
        check(r["prefill_tokens_per_s"]["p50"] > 0 and r["decode_tokens_per_s"]["p50"] > 0, "rates: %r" % r)
    check(rep["batch"] == [], "no batch table for a decoder")
    check(rep["request"]["runs"] == 3 and ordered(rep["request"]["ms"]), "request timing: %r" % rep.get("request"))
    regions = check_memory(rep, "decoder")
    check(regions["kv"]["touched_bytes"] > 0, "decoder: the KV cache untouched")

# Bad arguments exit 2 with a message; a bad model exits 1.
for args in (["--lengths", "32"], ["--model", ENCODER, "--runs", "0"], ["--model", ENCODER, "--lengths", "0"],
             ["--model", ENCODER, "--lengths", "32,32"], ["--model", ENCODER, "--batch", "65"],
             ["--model", ENCODER, "--gen", "x"], ["--model", ENCODER, "extra"]):
    rc, out, err = run(args)
    check(rc == 2 and out == "" and err.startswith("laya-run: "), "bad arguments %r: %d %r" % (args, rc, err[:200]))
with tempfile.NamedTemporaryFile(suffix=".laya") as bad:
    bad.write(b"not a model at all" * 10)
    bad.flush()
    rc, out, err = run(["--model", bad.name])
    check(rc == 1 and out == "" and err.startswith("laya-run: "), "bad model: %d %r" % (rc, err[:200]))

for f in failures:
    print("FAIL:", f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
