#!/usr/bin/env python3
"""Record the upstream SDK's Router and predict_tournament on the tiny checkpoint:
tests/fixtures/python/router_cases.json (checked by tests/python/test_laya_runtime.py).

    /work/refvenv/bin/python tools/reference/record_router_sdk.py \
        [--checkpoint tests/fixtures/laya-tiny-modernbert] [--out tests/fixtures/python/router_cases.json]

Each case is a call of laya 0.4.15 -- `Router(**router).route / route_batch / predict /
predict_batch(**args)`, `laya.predict_tournament(agent, **args)` with the agent `laya.load(ckpt)`
or a Router -- and its `result` (exactly what the call returned) or `error` (exception class and
message). Routers that load checkpoints are given `models={name: ckpt}` for every checkpoint they
may route to, so nothing is downloaded. The checkpoint's path is written as "<ckpt>" everywhere
(arguments and results), so the test substitutes its own. Deterministic: same package, same bytes.
"""
import argparse
import json
import os
import warnings

import laya
from laya.router import Router

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--checkpoint", default="tests/fixtures/laya-tiny-modernbert")
ap.add_argument("--out", default="tests/fixtures/python/router_cases.json")
args = ap.parse_args()
CKPT = os.path.abspath(args.checkpoint)
LOCAL = {"english": "<ckpt>", "multilingual": "<ckpt>", "typed-decisions": "<ckpt>"}


def noul(ins):
    return {"type": "noul", "instructions": ins}


def choice(ins, crit, **kw):
    return dict({"type": "choice", "instructions": ins, "criteria": crit}, **kw)


def score(ins, crit):
    return {"type": "score", "instructions": ins, "criteria": crit}


Q = {"urgent": noul("Is this urgent?"), "team": choice("Which team?", ["billing", "support", "sales"])}
WORKFLOW = {k: noul("%s?" % k) for k in ("action", "category", "churn_risk", "needs_human", "urgency")}
PRODUCTS = ["p%d" % i for i in range(13)]
DICT12 = {"t%d" % i: "topic number %d" % i for i in range(12)}
EN = "The customer was charged twice for the same invoice and wants a refund today."
DE = "Der Kunde wurde zweimal belastet und möchte eine Rückerstattung"
JA = "二重に請求されました。返金してください。"

CASES = []


def add(name, call, router=None, **kw):
    CASES.append({"name": name, "call": call, "router": router, "args": kw})


# --- route: no checkpoint is loaded
for i, (router, kw) in enumerate([
        ({}, {"state": EN}),
        ({}, {"state": DE}),
        ({}, {"state": JA, "explain": True}),
        ({}, {"state": {"subject": "Refund", "body": DE}, "questions": Q}),
        ({}, {"state": "x", "model": "ml"}),
        ({}, {"state": "x", "task": "typed_decisions"}),
        ({}, {"state": EN, "lang": "de-DE"}),
        ({}, {"state": DE, "lang_guess": "en"}),
        ({"lang_guess": "pt"}, {"state": EN}),
        ({"default": "english"}, {"state": "12345"}),
        ({"standalone_repos": True}, {"state": DE}),
        ({"auto_task_detection": True}, {"state": EN, "questions": WORKFLOW}),
        ({}, {"state": EN, "questions": WORKFLOW}),
        ({"models": {"papers": "<ckpt>", "English": "<ckpt>"}}, {"state": "x", "model": "Papers"}),
        ({"models": {"papers": "<ckpt>"}}, {"state": EN}),
        ({}, {"state": EN, "model": "nope"}),
        ({}, {"state": EN, "questions": ["a"]}),
        ({}, {"state": None}),
        ({}, {"state": [{"role": "user", "content": "Sim, ainda não funciona depois do update"}]}),
]):
    add("route_%d" % i, "route", router, **kw)
add("route_batch", "route_batch", {}, requests=[
    {"state": EN, "questions": Q}, {"state": DE, "questions": Q, "lang": "en"},
    {"state": JA, "questions": {}, "model": "english"}], explain=True)
add("route_batch_empty", "route_batch", {}, requests=[])
for name, reqs in (("not_a_list", "abc"), ("item_not_dict", [["x"]]), ("no_state", [{"questions": {}}]),
                   ("state_none", [{"state": None, "questions": {}}]), ("no_questions", [{"state": "x"}]),
                   ("questions_list", [{"state": "x", "questions": []}])):
    add("route_batch_error_" + name, "route_batch", {}, requests=reqs)
add("router_error_default", "route", {"default": "nope"}, state="x")
add("router_error_name", "route", {"models": {"a/b": "<ckpt>"}}, state="x")
add("router_error_auto", "route", {"models": {"auto": "<ckpt>"}}, state="x")

# --- predict / predict_batch: every checkpoint the router may load is the tiny one
R = {"models": LOCAL}
add("predict_en", "predict", R, state=EN, questions=Q)
add("predict_de", "predict", R, state=DE, questions=Q)
add("predict_model", "predict", R, state=EN, questions=Q, model="typed")
add("predict_min_confidence", "predict", R, state=EN, questions=Q, min_confidence=0.9)
add("predict_budget", "predict", R, state=EN * 8, questions=Q, max_len=96, head_max_len=48)
add("predict_error_state_none", "predict", R, state=None, questions=Q)
add("predict_error_questions", "predict", R, state=EN, questions=["urgent"])
add("predict_error_unknown_model", "predict", R, state=EN, questions=Q, model="nope")
add("predict_error_question", "predict", R, state=EN, questions={"q": {"type": "multi", "instructions": "x"}})
add("predict_batch", "predict_batch", R, requests=[
    {"state": EN, "questions": Q}, {"state": DE, "questions": Q},
    {"state": "Order 4411 never arrived", "questions": {"late": noul("Is it late?")}, "model": "english"},
    {"state": JA, "questions": Q, "max_len": 128}, {"state": "Refund please", "questions": Q}],
    batch_size=2)
add("predict_batch_min_confidence", "predict_batch", R, requests=[
    {"state": EN, "questions": Q}, {"state": DE, "questions": Q}], min_confidence=0.6)
add("predict_batch_empty", "predict_batch", R, requests=[])
add("predict_batch_error", "predict_batch", R, requests=[{"state": EN}])

# --- predict_tournament on an Agent, then on a Router (every call routed)
add("tournament_list", "predict_tournament", None, state="I need product p7", group_size=4,
    questions={"p": choice("Which product?", PRODUCTS), "u": noul("Urgent?")})
add("tournament_dict", "predict_tournament", None, state="route me to topic 5", group_size=5,
    questions={"t": choice("Which topic?", DICT12), "s": score("How bad?", ["low", "mid", "high"])})
add("tournament_two_rounds", "predict_tournament", None, state="p11", group_size=3,
    questions={"p": choice("Which product?", PRODUCTS)})
add("tournament_no_round", "predict_tournament", None, state="x",
    questions={"team": choice("Which team?", ["a", "b", "c"]), "u": noul("Urgent?")})
add("tournament_ints", "predict_tournament", None, state="number 9 please", group_size=4,
    questions={"n": choice("Which number?", list(range(10)))})
add("tournament_order", "predict_tournament", None, state="p3", group_size=4,
    questions={"p": choice("Which product?", PRODUCTS[:8], option_order=[7, 6, 5, 4, 3, 2, 1, 0])})
add("tournament_options", "predict_tournament", None, state="I need product p7 " * 20, group_size=6,
    questions={"p": choice("Which product?", PRODUCTS)}, max_len=128, head_max_len=64, min_confidence=0.5)
add("tournament_router", "predict_tournament", R, state=DE, group_size=4,
    questions={"p": choice("Which product?", PRODUCTS), "u": noul("Urgent?")})
add("tournament_router_model", "predict_tournament", R, state=EN, group_size=4, model="multilingual",
    questions={"p": choice("Which product?", PRODUCTS)})
for name, kw in (("group_one", {"group_size": 1}), ("group_bool", {"group_size": True}),
                 ("group_float", {"group_size": 4.0}),
                 ("questions_list", {"questions": []}),
                 ("criteria_string", {"questions": {"c": choice("x", "abc")}}),
                 ("no_criteria", {"questions": {"c": {"type": "choice", "instructions": "x"}}}),
                 ("empty_criteria", {"questions": {"c": choice("x", [])}}),
                 ("duplicate", {"questions": {"c": choice("x", [1, "a", 1.0])}}),
                 ("question", {"questions": {"c": choice("x", ["a", None])}})):
    kw = dict({"state": "x", "questions": {"c": choice("x", PRODUCTS)}}, **kw)
    add("tournament_error_" + name, "predict_tournament", None, **kw)


def subst(v, old, new):
    return json.loads(json.dumps(v, ensure_ascii=False).replace(json.dumps(old)[1:-1], json.dumps(new)[1:-1]))


def run(case, agent):
    kw = subst(case["args"], "<ckpt>", CKPT)
    if case["call"] == "predict_tournament":
        target = agent if case["router"] is None else Router(**subst(case["router"], "<ckpt>", CKPT))
        return laya.predict_tournament(target, **kw)
    router = Router(**subst(case["router"], "<ckpt>", CKPT))
    return getattr(router, case["call"])(**kw)


def main():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the random checkpoint's clamped temperatures
        agent = laya.load(CKPT)
        for case in CASES:
            try:
                case["result"] = subst(run(case, agent), CKPT, "<ckpt>")
            except Exception as e:  # noqa: BLE001 -- the class is what is recorded
                case["error"] = {"class": type(e).__name__, "message": str(e)}
    doc = {"generator": "tools/reference/record_router_sdk.py", "laya_version": laya.__version__,
           "checkpoint": "tests/fixtures/laya-tiny-modernbert", "cases": CASES}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("%d cases (%d errors) -> %s" % (len(CASES), sum("error" in c for c in CASES), args.out))


if __name__ == "__main__":
    main()
