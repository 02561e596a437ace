#!/usr/bin/env python3
"""laya-run route / decide from the command line: output shapes, exit codes, messages.

    test_laya_decide.py LAYA_RUN FIXTURES_DIR [LAYA_CONVERT]

Checks against data the upstream SDK recorded (no Python package needed here):
  - every route_probe case (laya-golden/routing) through `laya-run route`, Router options as flags;
  - every refused request of laya-decisions/cases.json through `laya-run decide`: exit 1, nothing on
    stdout, the HTTP status and upstream's message on stderr;
  - argument errors exit 2;
  - with LAYA_CONVERT: end to end on a converted checkpoint. laya-convert writes
    laya-tiny-modernbert to a .laya file and `laya-run decide` answers every request the SDK answered
    on it (laya-tiny-modernbert/cases.json: predict, predict_batch, predict_shortlist, decide, as
    request bodies): the
    same JSON, strings and structure exact, numbers within 2e-4 (our fp32 network against the SDK's
    fp32 torch forward; upstream rounds to 4 decimals, so a last digit may differ by one); and the
    README's main command on examples/*.json: the exact bytes the SDK printed
    (tools/reference/record_examples.py).
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from json_same import same  # noqa: E402

LAYA_RUN, FIXTURES = sys.argv[1], sys.argv[2]
failures = []


def run(args, stdin=None):
    p = subprocess.run([LAYA_RUN] + args, input=stdin, capture_output=True)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


def check(cond, what):
    if not cond:
        failures.append(what)


def route_probe():
    cases = json.load(open(os.path.join(FIXTURES, "laya-golden/routing/route_probe.json"), encoding="utf-8"))
    exact = 0
    for c in cases:
        flags = []
        rk = c["router_kwargs"]
        if "default" in rk:
            flags += ["--default", rk["default"]]
        if rk.get("auto_task_detection"):
            flags.append("--auto-task-detection")
        if rk.get("standalone_repos"):
            flags.append("--standalone-repos")
        for name, source in (rk.get("models") or {}).items():
            flags += ["--register", "%s=%s" % (name, source)]
        body = json.dumps(c["route_kwargs"], ensure_ascii=False).encode("utf-8")
        rc, out, err = run(["route", "--request", "-"] + flags, stdin=body)
        ok = rc == 0 and json.loads(out) == c["decision"]
        check(ok, "route %s: rc %d %s %s" % (c["label"], rc, out.strip()[:300], err.strip()[:300]))
        exact += ok
    print("route_probe through laya-run route: %d / %d" % (exact, len(cases)))


def refusals():
    doc = json.load(open(os.path.join(FIXTURES, "laya-decisions/cases.json"), encoding="utf-8"))
    n = exact = 0
    with tempfile.TemporaryDirectory() as tmp:
        for c in doc["cases"]:
            if "error" not in c or c["encodings"]:  # refused after tokenizing: needs a model
                continue
            path = os.path.join(tmp, c["name"] + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(c["request"], f, ensure_ascii=False)
            rc, out, err = run(["decide", "--model", os.path.join(tmp, "absent.laya"), "--request", path])
            want = "laya-run: request refused (HTTP %d): %s" % (c["error"]["status"], c["error"]["detail"])
            got = err.strip()
            ok = rc == 1 and out == "" and (got == want or (got.endswith("...") and want.startswith(got[:-3])))
            check(ok, "decide %s: rc %d stdout %r\n want %s\n got  %s" % (c["name"], rc, out[:80], want, got))
            n += 1
            exact += ok
    print("refused requests through laya-run decide: %d / %d" % (exact, n))


def arguments():
    rc, out, err = run(["route"])
    check(rc == 2 and "--request is required" in err, "route without --request: %d %s" % (rc, err))
    rc, out, err = run(["route", "--request", "x.json", "--nope"])
    check(rc == 2 and "unknown option --nope" in err, "route unknown option: %d %s" % (rc, err))
    rc, out, err = run(["decide", "--request", "x.json"])
    check(rc == 2 and "--model is required" in err, "decide without --model: %d %s" % (rc, err))
    rc, out, err = run(["route", "--request", "/nonexistent/req.json"])
    check(rc == 1 and out == "" and "cannot open" in err, "route missing file: %d %s" % (rc, err))
    rc, out, err = run(["route", "--request", "-"], stdin=b"{not json")
    check(rc == 1 and out == "" and "HTTP 400" in err, "route bad JSON: %d %s" % (rc, err))
    rc, out, err = run(["route", "--help"])
    check(rc == 0 and "usage: laya-run route" in out, "route --help")
    rc, out, err = run(["decide", "--help"])
    check(rc == 0 and "usage: laya-run decide" in out, "decide --help")


def end_to_end(convert):
    ckpt = os.path.join(FIXTURES, "laya-tiny-modernbert")
    doc = json.load(open(os.path.join(ckpt, "cases.json"), encoding="utf-8"))
    calls = ("predict", "predict_batch", "predict_shortlist", "decide")
    n = exact = 0
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny.laya")
        p = subprocess.run([convert, ckpt, "-o", model, "--quiet"], capture_output=True)
        check(p.returncode == 0, "laya-convert: rc %d %s" % (p.returncode, p.stderr.decode()[:300]))
        if p.returncode != 0:
            return
        for c in doc["cases"]:
            if c["call"] not in calls or "result" not in c:
                continue
            # The SDK's call as a request body: predict_shortlist(k=K) is `shortlist`: K (k
            # defaults to 20); decide(questions=...) answers with the result's `answers` alone.
            # predict_batch([]) is [] in the SDK, a refusal of the server's (HTTP 400): skipped.
            body = dict(c["args"])
            if c["call"] == "predict_batch" and not body.get("states"):
                continue
            if c["call"] == "predict_shortlist":
                body["shortlist"] = body.pop("k", 20)
            path = os.path.join(tmp, c["name"] + ".json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(body, f, ensure_ascii=False)
            rc, out, err = run(["decide", "--model", model, "--request", path])
            got = json.loads(out) if rc == 0 else None
            if c["call"] == "decide" and "questions" in body and isinstance(got, dict):
                got = got.get("answers")
            diff = "rc %d: %s" % (rc, err.strip()[:300]) if rc != 0 else same(got, c["result"], "result")
            check(not diff, "decide %s on the converted checkpoint: %s" % (c["name"], diff))
            n += 1
            exact += not diff
        readme_example(model)
    check(n > 0, "no SDK results in laya-tiny-modernbert/cases.json")
    print("SDK results through laya-convert + laya-run decide: %d / %d" % (exact, n))


def readme_example(model):
    """The README's encoder command on examples/*.json against the SDK's bytes (record_examples.py).

    With the reference kernels (double sums, the same on every CPU) the output is the SDK's bytes.
    With the CPU's own kernels (auto) a 4-decimal value may round the other way when it lies at a
    rounding boundary: examples/support-ticket.json's act probability rounds to 0.7903 as the SDK
    with the AVX2 and AVX-512 kernels and to 0.7904 with SSE4 and SCALAR (f32 sums in another
    order). So auto must print
    the same JSON with every number within one unit of the last printed digit.
    """
    examples = os.path.join(FIXTURES, "..", "..", "examples")
    n = 0
    for name in sorted(os.listdir(examples)):
        sdk = os.path.join(examples, name[: -len(".json")] + ".sdk.json")
        if not name.endswith(".json") or name.endswith(".sdk.json") or not os.path.exists(sdk):
            continue
        req = os.path.join(examples, name)
        want = open(sdk, encoding="utf-8").read()
        rc, out, err = run(["decide", "--model", model, "--request", req, "--kernels", "ref"])
        check(rc == 0 and out == want, "examples/%s (ref kernels): rc %d %s\n want %s got  %s" % (name, rc, err[:300], want, out))
        rc, out, err = run(["decide", "--model", model, "--request", req])
        diff = "rc %d: %s" % (rc, err.strip()[:300]) if rc != 0 else same(json.loads(out), json.loads(want), "result", 1.0001e-4)
        check(not diff, "examples/%s (auto kernels): %s" % (name, diff))
        n += 1
    check(n > 0, "no recorded SDK answers in examples/")
    print("examples/ answered byte for byte as the SDK (ref kernels), within the last digit (auto): %d" % n)


route_probe()
refusals()
arguments()
if len(sys.argv) > 3:
    end_to_end(sys.argv[3])
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
