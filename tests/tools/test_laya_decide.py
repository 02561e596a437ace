#!/usr/bin/env python3
"""laya-run route / decide from the command line: output shapes, exit codes, messages.

    test_laya_decide.py LAYA_RUN FIXTURES_DIR

Checks against data the upstream SDK recorded (no Python package needed here):
  - every route_probe case (laya-golden/routing) through `laya-run route`, Router options as flags;
  - every refused request of laya-decisions/cases.json through `laya-run decide`: exit 1, nothing on
    stdout, the HTTP status and upstream's message on stderr;
  - argument errors exit 2.
"""
import json
import os
import subprocess
import sys
import tempfile

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


route_probe()
refusals()
arguments()
for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
