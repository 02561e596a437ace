#!/usr/bin/env python3
"""laya_runtime (python/) against what the upstream SDK recorded: no PyTorch, no upstream package.

    test_laya_runtime.py PYTHON_DIR LIBLAYA LAYA_CONVERT FIXTURES_DIR TINY_CHAT_GGUF LAYA_RUN EXAMPLES
    (PYTHON_DIR, LIBLAYA, LAYA_CONVERT "-": the installed wheel's; tools/test-wheel.sh)

  - every SDK call recorded in laya-tiny-modernbert/cases.json (predict, predict_batch,
    predict_shortlist, decide, decide_batch; tools/reference/run_laya_cases.py) through
    laya_runtime.load(<the checkpoint directory>): results dict-equal (keys in order, floats
    within 2e-4), refusals with upstream's exception class and message;
  - 8 threads at once answer as one thread does;
  - load: the directory converted once and cached by its files' sha256; upstream options with no
    meaning here refused by name; a decoder refused; a missing path FileNotFoundError;
  - ece_score against upstream's on recorded inputs (tests/fixtures/python/ece_cases.json);
  - Router (route, route_batch, predict, predict_batch) and predict_tournament against upstream's
    recorded calls (tests/fixtures/python/router_cases.json): results dict-equal, refusals with
    upstream's class and message; a checkpoint without a local path refused naming models=;
  - Decoder: decide and generate print what `laya-run decide` / `generate` print (the same C
    calls: the bindings lose and add nothing); closing generate early stops it.
"""
import json
import os
import sys
import tempfile
import threading

PYTHON_DIR, LIBLAYA, CONVERT, FIXTURES, TINY_GGUF, LAYA_RUN, EXAMPLES = sys.argv[1:8]
# "-" for PYTHON_DIR, LIBLAYA and LAYA_CONVERT: the installed wheel's package, library and tool.
if LIBLAYA != "-":
    os.environ["LAYA_LIBRARY"] = LIBLAYA
if CONVERT != "-":
    os.environ["LAYA_CONVERT"] = CONVERT
cache = tempfile.TemporaryDirectory()
os.environ["LAYA_RUNTIME_CACHE"] = cache.name
if PYTHON_DIR != "-":
    sys.path.insert(0, PYTHON_DIR)

import laya_runtime as laya  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from json_same import same  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def call(agent, case):
    args = dict(case["args"])
    c = case["call"]
    if c == "predict":
        return agent.predict(**args)
    if c == "predict_batch":
        return agent.predict_batch(**args)
    if c == "predict_shortlist":
        return laya.predict_shortlist(agent, **args)
    if c == "decide":
        return agent.decide(**args)
    if c == "decide_batch":
        return agent.decide_batch(**args)
    raise AssertionError(c)


ckpt = os.path.join(FIXTURES, "laya-tiny-modernbert")
doc = json.load(open(os.path.join(ckpt, "cases.json"), encoding="utf-8"))
agent = laya.load(ckpt)
cases = [c for c in doc["cases"] if not c["call"].startswith("serve_")]
n = exact = 0
results = {}
for case in cases:
    n += 1
    try:
        got = call(agent, case)
        err = None
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        got, err = None, e
    if "error" in case:
        want = case["error"]
        ok = err is not None and type(err).__name__ == want["class"] and str(err) == want["message"]
        check(ok, "%s: raised %r, upstream %s(%r)" % (case["name"], err, want["class"], want["message"]))
    else:
        diff = "raised %r" % err if err is not None else same(got, case["result"], "result")
        check(not diff, "%s: %s" % (case["name"], diff))
        ok = not diff
        results[case["name"]] = got
    exact += ok
print("SDK calls through laya_runtime: %d / %d as upstream" % (exact, n))
check(n >= 90, "only %d recorded calls" % n)

# Converted once: a second load reuses the cached file.
cached = [f for f in os.listdir(cache.name) if f.endswith(".laya")]
check(len(cached) == 1, "cache after one load: %r" % cached)
again = laya.load(ckpt)
check(os.listdir(cache.name) == os.listdir(cache.name) and again.path == agent.path,
      "second load converts again: %s vs %s" % (again.path, agent.path))
again.close()

# 8 threads at once, 40 calls each over the answered cases: every answer as the single thread's.
answered = [c for c in cases if "error" not in c and c["name"] in results]
mismatch = []


def worker(t):
    for i in range(40):
        case = answered[(t * 7 + i) % len(answered)]
        got = call(agent, case)
        if got != results[case["name"]]:
            mismatch.append((t, case["name"]))


threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
check(not mismatch, "threads answered differently: %r" % mismatch[:5])

# The SDK's limits, not the server's: 65 questions, 200 states, a 60,000-character state.
q = {"r": {"type": "noul", "instructions": "Urgent?"}}
check(len(agent.predict("x", {"q%d" % i: q["r"] for i in range(65)})["answers"]) == 65, "65 questions")
check(len(agent.predict_batch(["s %d" % i for i in range(200)], q)) == 200, "200 states")
check(agent.predict("x " * 30000, q)["usage"]["truncated"] is True, "a 60,000-character state")
# Options passed as None are the defaults (as upstream's keyword arguments are).
check(agent.decide("x", questions=q, lang=None, max_len=None, batch_size=None) ==
      agent.decide("x", questions=q), "decide with None options")

# Options with no meaning here are refused by name, never ignored.
for kwargs, exc, text in (({"device": "cuda"}, ValueError, "device 'cuda'"),
                          ({"backend": "tilelang"}, ValueError, "backend 'tilelang'"),
                          ({"fast": True}, ValueError, "fast=True"),
                          ({"compile": True}, ValueError, "compile=True")):
    try:
        laya.load(agent.path, **kwargs)
        check(False, "load(%r) accepted" % kwargs)
    except exc as e:
        check(text in str(e), "load(%r): %s" % (kwargs, e))
for path, exc in ((os.path.join(cache.name, "missing.laya"), FileNotFoundError), (TINY_GGUF, ValueError)):
    try:
        laya.load(path)
        check(False, "load(%s) accepted" % path)
    except exc:
        pass
    except Exception as e:  # noqa: BLE001
        check(False, "load(%s) raised %r" % (path, e))
try:
    agent.predict("x", {"q": {"type": "noul", "instructions": "a"}}, hooks=[object()])
    check(False, "hooks accepted")
except NotImplementedError:
    pass

# ece_score against upstream's numbers.
ece = json.load(open(os.path.join(FIXTURES, "python", "ece_cases.json")))
for i, c in enumerate(ece["cases"]):
    got = laya.ece_score(c["conf"], c["correct"], c["bins"])
    check(abs(got - c["ece"]) <= 1e-12, "ece case %d: %r != %r" % (i, got, c["ece"]))
check(laya.ece_score([], []) != laya.ece_score([], []), "ece of nothing is NaN, as upstream's")

# detect_language against upstream's laya.lang.analyse on its recorded probe (explain=True: the
# diagnostic too).
probe = json.load(open(os.path.join(FIXTURES, "laya-router", "analyse_probe.json"), encoding="utf-8"))
bad = [c["state"] for c in probe["analyse"] if laya.detect_language(c["state"], explain=True) != c["result"]]
check(not bad and len(probe["analyse"]) > 400, "detect_language differs on %d of %d: %r"
      % (len(bad), len(probe["analyse"]), bad[:3]))
plain = laya.detect_language("hello there my friend")
check(plain["language"] == "en" and "diagnostic" not in plain, "detect_language without explain: %r" % plain)

# Router (route, route_batch, predict, predict_batch) and predict_tournament (on the Agent and on a
# Router) against upstream's recorded calls (tests/fixtures/python/router_cases.json,
# tools/reference/record_router_sdk.py); "<ckpt>" stands for the checkpoint's path.


def subst(v, old, new):
    return json.loads(json.dumps(v, ensure_ascii=False).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))


rdoc = json.load(open(os.path.join(FIXTURES, "python", "router_cases.json"), encoding="utf-8"))
n = exact = 0
for case in rdoc["cases"]:
    n += 1
    kw = subst(case["args"], "<ckpt>", ckpt)
    try:
        if case["call"] == "predict_tournament":
            target = agent if case["router"] is None else laya.Router(**subst(case["router"], "<ckpt>", ckpt))
            got = laya.predict_tournament(target, **kw)
        else:
            got = getattr(laya.Router(**subst(case["router"], "<ckpt>", ckpt)), case["call"])(**kw)
        got, err = subst(got, ckpt, "<ckpt>"), None
    except Exception as e:  # noqa: BLE001 -- the class is what is compared
        got, err = None, e
    if "error" in case:
        want = case["error"]
        ok = err is not None and type(err).__name__ == want["class"] and str(err) == want["message"]
        check(ok, "%s: raised %r, upstream %s(%r)" % (case["name"], err, want["class"], want["message"]))
    else:
        diff = "raised %r" % err if err is not None else same(got, case["result"], "result")
        check(not diff, "%s: %s" % (case["name"], diff))
        ok = not diff
    exact += ok
print("Router / predict_tournament calls: %d / %d as upstream" % (exact, n))
calls = {c["call"] for c in rdoc["cases"] if "result" in c}
check(n >= 50 and calls == {"route", "route_batch", "predict", "predict_batch", "predict_tournament"},
      "recorded Router calls: %d, %r" % (n, calls))
# What this Router adds: decisions are RouteDecision; a checkpoint without a local path is refused
# when it would load (upstream downloads it), naming what to pass; hooks are refused.
router = laya.Router(models={"english": ckpt})
d = router.route("Please refund the duplicate charge on invoice 4411 today.")
check(isinstance(d, laya.RouteDecision) and d.model == "english" and d.reason == "English Latin text",
      "route: %r" % (d,))
check(router.loaded == [], "route loaded a checkpoint: %r" % router.loaded)
try:
    router.predict("Der Kunde wurde zweimal belastet", q)
    check(False, "a hub checkpoint loaded")
except ValueError as e:
    check("models={'multilingual':" in str(e), "the hub refusal: %s" % e)
check(router.predict("I was charged twice", q, model="en")["routing"]["repo"] == ckpt and
      router.loaded == ["english"], "predict on the local checkpoint")
for bad in ({"hooks": [object()]}, {"revision": "abc"}):
    try:
        laya.Router(**bad)
        check(False, "Router(%r) accepted" % bad)
    except (NotImplementedError, ValueError):
        pass
agent.close()

# Decoder: the same answers as laya-run (timings aside), generation piece by piece.
import subprocess  # noqa: E402


def without_timings(v):
    """The answer without timings, and without the prompt cells the prefix cache saved (this
    context's earlier calls warmed it; laya-run's process starts cold)."""
    if not isinstance(v, dict):
        return v
    v = {k: x for k, x in v.items() if k != "timings"}
    if isinstance(v.get("usage"), dict):
        v["usage"] = {k: x for k, x in v["usage"].items() if k not in ("prefill_tokens", "prefix_hit_tokens")}
    return v


dec = laya.Decoder(TINY_GGUF)
check(dec.info["chat_format"] == "chatml" and dec.info["layers"] == 2, "decoder info: %r" % dec.info)
for name in ("industrial-alarm.json", "smart-home-hub.json", "decoder-questions.json"):
    path = os.path.join(EXAMPLES, name)
    body = json.load(open(path))
    p = subprocess.run([LAYA_RUN, "decide", "--model", TINY_GGUF, "--request", path], capture_output=True, text=True)
    want = json.loads(p.stdout) if p.returncode == 0 else None
    kw = {k: body[k] for k in ("max_tokens", "min_confidence") if k in body}
    if "schema" in body:
        got = dec.decide(body.get("system"), body["state"], body["schema"], body.get("fallback"), **kw)
    else:
        got = dec.decide(body.get("system"), body["state"], questions=body["questions"], **kw)
    check(want is not None and without_timings(got) == without_timings(want),
          "Decoder.decide %s: %r != %r" % (name, without_timings(got), without_timings(want)))
for args, kw in ((["--prompt", "The capital of France is", "--max-tokens", "8"],
                  {"prompt": "The capital of France is", "max_tokens": 8}),
                 (["--chat", "Hello!", "--system", "Answer in French.", "--max-tokens", "6"],
                  {"prompt": "Hello!", "system": "Answer in French.", "max_tokens": 6}),
                 (["--prompt", "abc", "--temperature", "0.8", "--seed", "3", "--max-tokens", "12"],
                  {"prompt": "abc", "temperature": 0.8, "seed": 3, "max_tokens": 12})):
    p = subprocess.run([LAYA_RUN, "generate", "--model", TINY_GGUF, "--json"] + args, capture_output=True, text=True)
    want = json.loads(p.stdout)["text"] if p.returncode == 0 else None
    pieces = list(dec.generate(**kw))
    check(want is not None and "".join(pieces) == want and len(pieces) >= 1,
          "Decoder.generate %r: %r != %r (%s)" % (kw, "".join(pieces), want, p.stderr[:200]))
g = dec.generate("abc", max_tokens=200)
first = next(g)
g.close()
check(isinstance(first, str), "generate yields text")
try:
    dec.decide("s", "x", {"type": "object", "properties": {"a": {"type": "array"}}})
    check(False, "an array schema accepted")
except ValueError:
    pass
dec.close()

for f in failures:
    print("FAIL:", f)
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
