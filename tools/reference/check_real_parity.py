#!/usr/bin/env python3
"""Real-size parity (not CI): a Laya checkpoint converted by laya-convert and answered by
`laya-run decide`, against the upstream SDK's recorded answers on it (run_laya_cases.py's
cases.json, usually `--set real`).

    check_real_parity.py --checkpoint DIR --build BUILD [--cases F] [--work DIR] [--dtype f32]
                         [--network on|off] [--name NAME]

Per request the SDK answered (predict, predict_batch, predict_shortlist, decide; written as the
/v1/systemone body the way tests/tools/test_laya_decide.py does):
  - `laya-run decide --explain`: every row's token ids, marker positions and truncation flag equal
    to the recorded row (same order), and `usage` equal to the SDK's, exactly;
  - `laya-run decide`: the SDK's result object, strings, keys, key order and structure exact (so
    every choice, i.e. every argmax, is the SDK's), numbers within 2e-4 (the SDK rounds to 4
    decimals, so a last digit may differ by one).
A request the SDK refused must be refused (exit 1, nothing on stdout).
With --network on (default), `laya-parity CHECKPOINT --dtype f32 --check` also replays every recorded
forward (token rows as recorded): argmax identical and max |dp| <= 2e-4 on the untempered and
tempered probabilities, taken from the unrounded logits.

Prints one line per request and a summary line:
  real parity NAME: R/N requests rows+markers+usage exact, A/N answers within 2e-4 (max |d| X),
  network: ... ; PASS|FAIL
Exit 0 when everything matches. tools/reference/make_real_reference.sh runs it after recording.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

TOL = 2e-4


def diff(got, want, path, worst):
    """The first difference between two JSON values ("" when none): numbers within TOL. worst[0]
    collects the largest numeric difference seen."""
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return "" if got == want and type(got) is type(want) else "%s: %r != %r" % (path, got, want)
    if isinstance(want, (int, float)):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return "%s: %r != %r" % (path, got, want)
        worst[0] = max(worst[0], abs(got - want))
        return "" if abs(got - want) <= TOL else "%s: %r != %r" % (path, got, want)
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return "%s: %r != %r" % (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            d = diff(g, w, "%s[%d]" % (path, i), worst)
            if d:
                return d
        return ""
    if not isinstance(got, dict) or list(got) != list(want):
        return "%s: keys %r != %r" % (path, list(got) if isinstance(got, dict) else got, list(want))
    for k in want:
        d = diff(got[k], want[k], "%s.%s" % (path, k), worst)
        if d:
            return d
    return ""


def body_of(case):
    """The SDK call as a request body (None when it has none)."""
    if case["call"] not in ("predict", "predict_batch", "predict_shortlist", "decide"):
        return None
    body = dict(case["args"])
    if case["call"] == "predict_batch" and not body.get("states"):
        return None  # [] in the SDK, an HTTP 400 of the server's
    if case["call"] == "predict_shortlist":
        body["shortlist"] = body.pop("k", 20)
    return body


def rows_diff(explain, case):
    """Explain rows and usage against the recorded rows and the SDK's usage ("" when equal)."""
    got, want = explain.get("rows", []), case["rows"]
    if len(got) != len(want):
        return "%d rows, the SDK built %d" % (len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        if g["input_ids"] != w["input_ids"]:
            n = next((j for j, (a, b) in enumerate(zip(g["input_ids"], w["input_ids"])) if a != b),
                     min(len(g["input_ids"]), len(w["input_ids"])))
            return "row %d (%s): input_ids differ at %d (%d vs %d ids)" % (
                i, g.get("question"), n, len(g["input_ids"]), len(w["input_ids"]))
        if g["marker_positions"] != w["markers"]:
            return "row %d: markers %r != %r" % (i, g["marker_positions"], w["markers"])
        if g["truncated"] != w["state_stats"]["truncated"]:
            return "row %d: truncated %r != %r" % (i, g["truncated"], w["state_stats"]["truncated"])
    res = case["result"]
    usages = [r["usage"] for r in res] if isinstance(res, list) else [res.get("usage")]
    want_usage = usages[0] if len(usages) == 1 else None
    if want_usage is not None and explain.get("usage") != want_usage:
        return "usage %r != %r" % (explain.get("usage"), want_usage)
    return ""


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--build", required=True, help="a meson build directory with tools/laya-{convert,run,parity}")
    ap.add_argument("--cases", help="default: CHECKPOINT/cases.json")
    ap.add_argument("--work", help="where the .laya file goes (default: a temporary directory)")
    ap.add_argument("--dtype", default="f32")
    ap.add_argument("--network", choices=["on", "off"], default="on")
    ap.add_argument("--name", help="the summary line's name (default: the checkpoint's directory name)")
    args = ap.parse_args()
    name = args.name or os.path.basename(os.path.normpath(args.checkpoint))
    doc = json.load(open(args.cases or os.path.join(args.checkpoint, "cases.json"), encoding="utf-8"))
    tool = lambda t: os.path.join(args.build, "tools", t)  # noqa: E731

    tmp = tempfile.TemporaryDirectory()
    work = args.work or tmp.name
    os.makedirs(work, exist_ok=True)
    model = os.path.join(work, "%s.%s.laya" % (name, args.dtype))
    t0 = time.time()
    rc, _, err = run([tool("laya-convert"), args.checkpoint, "-o", model, "--dtype", args.dtype, "--quiet"])
    if rc != 0:
        sys.exit("laya-convert failed: %s" % err.strip())
    print("laya-convert %s -> %s: %.0f s" % (args.checkpoint, model, time.time() - t0), file=sys.stderr)

    n = rows_ok = answers_ok = 0
    worst = [0.0]
    failures = []
    for c in doc["cases"]:
        body = body_of(c)
        if body is None:
            continue
        n += 1
        req = os.path.join(work, "request.json")
        with open(req, "w", encoding="utf-8") as f:
            json.dump(body, f, ensure_ascii=False)
        t0 = time.time()
        rc, out, err = run([tool("laya-run"), "decide", "--model", model, "--request", req])
        if "error" in c:
            ok = rc == 1 and out == ""
            rows_ok += ok
            answers_ok += ok
            what = "refused as the SDK" if ok else "rc %d, the SDK refused (%s)" % (rc, c["error"]["message"])
            print("%-40s %s" % (c["name"], what), file=sys.stderr)
            if not ok:
                failures.append("%s: %s" % (c["name"], what))
            continue
        got = json.loads(out) if rc == 0 else None
        if c["call"] == "decide" and "questions" in body and isinstance(got, dict):
            got = got.get("answers")
        d_answer = "rc %d: %s" % (rc, err.strip()[:300]) if rc != 0 else diff(got, c["result"], "result", worst)
        rc, out, err = run([tool("laya-run"), "decide", "--explain", "--model", model, "--request", req])
        d_rows = "explain rc %d: %s" % (rc, err.strip()[:300]) if rc != 0 else rows_diff(json.loads(out), c)
        rows_ok += not d_rows
        answers_ok += not d_answer
        ntok = sum(len(r["input_ids"]) for r in c["rows"])
        print("%-40s %2d rows %5d tokens  rows %s  answer %s  %.1f s" % (
            c["name"], len(c["rows"]), ntok, d_rows or "exact", d_answer or "ok", time.time() - t0),
            file=sys.stderr)
        for d in (d_rows, d_answer):
            if d:
                failures.append("%s: %s" % (c["name"], d))

    network = "not run"
    network_ok = True
    if args.network == "on":
        cases = args.cases or os.path.join(args.checkpoint, "cases.json")
        rc, out, err = run([tool("laya-parity"), args.checkpoint, "--cases", cases, "--dtype", "f32", "--check"])
        sys.stderr.write(out)
        network_ok = rc == 0
        lines = [l.strip() for l in out.splitlines() if l.strip()]
        network = ("bars met" if network_ok else "FAILED (rc %d) %s" % (rc, err.strip()[:300]))
        if lines:
            network += " [" + lines[-1] + "]"
        if not network_ok:
            failures.append("laya-parity: " + network)

    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    ok = not failures and n > 0
    print("real parity %s (%s): %d/%d requests rows+markers+usage exact, %d/%d answers within %g "
          "(max |d| %.2g); network: %s; %s" % (name, args.dtype, rows_ok, n, answers_ok, n, TOL, worst[0],
                                                network, "PASS" if ok else "FAIL"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
