#!/usr/bin/env python3
"""Record upstream's `laya-mcp-server` (laya 0.4.15) over stdio with the MCP SDK's own client:
tests/fixtures/python/mcp_cases.json (checked by tests/python/test_mcp_server.py).

    /work/refvenv/bin/pip install mcp==2.3.0
    /work/refvenv/bin/python tools/reference/record_mcp.py \
        [--checkpoint tests/fixtures/laya-tiny-modernbert] [--out tests/fixtures/python/mcp_cases.json]

Upstream's server builds `Router(device=..., auto_task_detection=..., default=...)`, whose
checkpoints come from the hub. This script starts it with `laya.Router` wrapped to add
`models=` from `LAYA_EXTRA_MODELS` (upstream laya-serve's variable for local checkpoints), every
built-in name pointing at the tiny checkpoint: the same environment laya_runtime's server reads.
Nothing else of upstream's is changed.

Recorded: `list_tools` (name, description, inputSchema, outputSchema of each tool) and `calls`:
each tool call's arguments, `isError`, its text content (parsed when it is JSON) and whether its
structuredContent is {"result": that text} (`structuredIsText`). The
checkpoint's path is written as "<ckpt>". Timings (`latency_ms`, ...) are recorded as they came;
the test leaves them out.
"""
import argparse
import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# Upstream's server with its Router pointed at local checkpoints (LAYA_EXTRA_MODELS), then its main.
LAUNCH = """
import laya, laya.serve
from laya.router import Router as _Router
def _local_router(**kw):
    return _Router(models=laya.serve._extra_models_option(), **kw)
laya.Router = _local_router
from laya.mcp.server import main
main()
"""

EN = "The customer was charged twice for invoice 1042 and wants a refund today."
DE = "Der Kunde wurde zweimal belastet und möchte heute eine Rückerstattung."
JA = "二重に請求されました。返金してください。"
NOUL = {"type": "noul", "instructions": "Is this urgent?"}
TEAM = {"type": "choice", "instructions": "Which team should take it?",
        "criteria": {"billing": "payments and invoices", "support": "broken things",
                     "sales": "buying more"}}
LEVEL = {"type": "score", "instructions": "How angry is the customer?",
         "criteria": ["calm", "annoyed", "furious"]}
Q = {"urgent": NOUL, "team": TEAM, "anger": LEVEL}
TOPICS = {"type": "choice", "instructions": "Which topic is it about?",
          "criteria": {"t%d" % i: "topic %d: %s" % (i, w) for i, w in enumerate(
              ["refunds", "shipping", "login", "billing", "returns", "warranty", "pricing",
               "accounts", "delivery", "invoices"])}}
WORKFLOW = {k: {"type": "noul", "instructions": "%s?" % k}
            for k in ("action", "category", "churn_risk", "needs_human", "urgency")}

CALLS = []


def add(tool, **args):
    CALLS.append({"tool": tool, "args": args})


add("laya_status")
# laya_route: no forward pass
add("laya_route", state={"text": EN}, questions=Q)
add("laya_route", state={"text": DE}, questions=Q)
add("laya_route", state={"text": JA}, questions={"urgent": NOUL})
add("laya_route", state={"text": EN}, questions=Q, model="ML")
add("laya_route", state={"text": EN}, questions=Q, model="auto")
add("laya_route", state={"text": EN}, questions=Q, task="typed_decisions")
add("laya_route", state={"text": EN}, questions=Q, lang="de-DE")
add("laya_route", state={"text": DE}, questions=Q, lang_guess="en")
add("laya_route", state={"n": "12345"}, questions=Q)
add("laya_route", state={"text": EN}, questions=WORKFLOW)
add("laya_route", state={"text": EN}, questions=Q, model="nope")
add("laya_route", state={"text": EN}, questions=Q, model="en", task="typed")
add("laya_route", state={"text": EN}, questions=Q, model="en", lang_guess="de")
add("laya_route", state={"text": EN}, questions=Q, task="bogus")
add("laya_route", state={}, questions=Q)
add("laya_route", state={"text": EN}, questions={})
add("laya_route", state={"text": EN}, questions={"q": {"type": "multi", "instructions": "x"}})
add("laya_route", state="just a string", questions=Q)
add("laya_route", state={"text": EN})
# laya_predict
add("laya_predict", state={"text": EN}, questions=Q)
add("laya_predict", state={"text": DE, "plan": "pro"}, questions=Q)
add("laya_predict", state={"text": EN}, questions=Q, model="en", lang="de")
add("laya_predict", state={"text": EN}, questions=Q, max_len=48, head_max_len=24)
add("laya_predict", state={"text": EN}, questions=Q, min_confidence=0.9)
add("laya_predict", state={"text": EN}, questions=Q, task="typed_decisions")
add("laya_predict", state={"text": DE}, questions=Q, lang_guess="en")
add("laya_predict", state={"text": EN}, questions={
    "urgent": dict(NOUL, labels={"false": "can wait", "true": "needs action now"}),
    "team": dict(TEAM, option_order=[2, 0, 1]),
    "flag": {"type": "noul", "instructions": "Is it spam?", "criteria": {"true": "unsolicited"}}})
add("laya_predict", state={"text": EN}, questions={"team": dict(TEAM, criteria=["billing", "support"])})
add("laya_predict", state={"text": EN}, questions={"anger": dict(LEVEL, criteria=["calm", None])})
add("laya_predict", state={"text": EN}, questions={"team": dict(TEAM, labels={"false": "a", "true": "b"})})
add("laya_predict", state={"text": EN}, questions={"urgent": dict(NOUL, labels={"false": "a", "true": "a"})})
add("laya_predict", state={"text": EN}, questions={"urgent": dict(NOUL, labels={"false": 1, "true": "b"})})
add("laya_predict", state={"text": EN}, questions={"urgent": dict(NOUL, criteria={"maybe": "x"})})
add("laya_predict", state={"text": EN}, questions={"team": dict(TEAM, option_order=[0, 0, 1])})
add("laya_predict", state={"text": EN}, questions={"urgent": dict(NOUL, instructions="  ")})
add("laya_predict", state={"text": EN}, questions=Q, max_len=0)
add("laya_predict", state={"text": EN}, questions=Q, head_max_len=-3)
add("laya_predict", state={"text": EN}, questions=Q, min_confidence=1.5)
add("laya_predict", state={"text": EN}, questions=Q, model="en", task="typed_decisions")
add("laya_predict", state={"text": EN}, questions=Q, model="multi", lang_guess="en")
add("laya_predict", state={"text": EN}, questions=Q, model="englsh")
add("laya_predict", state={"text": EN}, questions={"team": dict(TEAM, criteria={"a": 5, "b": "x"})})
add("laya_predict", state={"text": EN},
    questions={"q%d" % i: {"type": "noul", "instructions": "question %d?" % i} for i in range(70)})
add("laya_predict", state={"text": EN}, questions=Q, max_len="64")
# past the tool's checks, refused by the model's own (internal_error), or answered
add("laya_predict", state={"text": EN}, questions={"anger": dict(LEVEL, criteria=["only"])})
add("laya_predict", state={"text": EN}, questions={"team": dict(TEAM, criteria={"a": "x"})})
add("laya_predict", state={"text": EN}, questions={"anger": dict(LEVEL, criteria=[{"x": 1}, "b"])})
add("laya_predict", state={"text": EN}, questions={"team": dict(TEAM, criteria={"a": None, "b": "y"})})
# laya_predict_batch
BATCH = [{"state": {"text": EN}, "questions": Q},
         {"state": {"text": DE}, "questions": Q},
         {"state": {"text": "I want to buy ten more seats."}, "questions": Q, "model": "en"},
         {"state": {"text": EN}, "questions": {"urgent": NOUL}, "max_len": 40}]
add("laya_predict_batch", requests=BATCH)
add("laya_predict_batch", requests=BATCH, batch_size=2, min_confidence=0.6, sort_by_length=True)
add("laya_predict_batch", requests=[{"state": {"text": EN}, "questions": Q, "task": "typed_decisions"},
                                    {"state": {"text": DE}, "questions": Q, "lang": "en"}])
add("laya_predict_batch", requests=[])
add("laya_predict_batch", requests=["x"])
add("laya_predict_batch", requests=[{"state": {"text": EN}}])
add("laya_predict_batch", requests=[{"state": {"text": EN}, "questions": Q, "model": "nope"}])
add("laya_predict_batch", requests=[{"state": {"text": EN}, "questions": Q, "max_len": 0}])
add("laya_predict_batch", requests=[{"state": {"text": EN}, "questions": Q, "task": ""}])
add("laya_predict_batch", requests=[{"state": {"text": EN}, "questions": Q, "lang_guess": 3}])
add("laya_predict_batch", requests=BATCH[:1], batch_size=-1)
add("laya_predict_batch", requests=BATCH[:1], hooks_timeout=-2)
add("laya_predict_batch", requests=BATCH[:1], min_confidence=-0.5)
# laya_route_batch
add("laya_route_batch", requests=BATCH)
add("laya_route_batch", requests=[{"state": {"text": JA}, "questions": Q},
                                  {"state": {"text": EN}, "questions": WORKFLOW, "task": "typed"},
                                  {"state": {"text": EN}, "questions": Q, "lang": "pt"},
                                  {"state": {"text": DE}, "questions": Q, "lang_guess": "en"}])
add("laya_route_batch", requests=BATCH[:2], hooks_timeout=5)
add("laya_route_batch", requests={"state": "x"})
add("laya_route_batch", requests=[{"questions": Q}])
add("laya_route_batch", requests=[{"state": {"text": EN}, "questions": Q}], hooks_timeout=-1)
add("laya_route_batch", requests=[{"state": {"text": EN}, "questions": {"q": {"type": "noul"}}}])
# laya_shortlist
add("laya_shortlist", state={"text": EN}, questions={"topic": TOPICS, "urgent": NOUL}, k=3)
add("laya_shortlist", state={"text": EN}, questions={"topic": TOPICS})
add("laya_shortlist", state={"text": DE}, questions={"topic": TOPICS, "team": TEAM}, k=2)
add("laya_shortlist", state={"text": EN}, questions={"topic": TOPICS}, k=4, model="en",
    max_len=64, min_confidence=0.5)
add("laya_shortlist", state={"text": EN}, questions={"topic": dict(TOPICS, option_order=list(range(9, -1, -1)))}, k=3)
add("laya_shortlist", state={"text": EN}, questions={"topic": TOPICS}, k=3, lang="de")
add("laya_shortlist", state={"text": EN}, questions={"topic": TOPICS}, k=0)
add("laya_shortlist", state={"text": EN}, questions={"topic": TOPICS}, k=3, model="en", task="typed")
add("laya_shortlist", state={"text": EN}, questions={"topic": TOPICS}, k=3, model="bad")
# laya_tournament
add("laya_tournament", state={"text": EN}, questions={"topic": TOPICS, "urgent": NOUL}, group_size=3)
add("laya_tournament", state={"text": EN}, questions={"topic": TOPICS})
add("laya_tournament", state={"text": DE}, questions={"topic": TOPICS, "team": TEAM}, group_size=2)
add("laya_tournament", state={"text": EN}, questions={"topic": TOPICS}, group_size=4, model="en",
    head_max_len=32, min_confidence=0.4)
add("laya_tournament", state={"text": EN}, questions={"topic": dict(TOPICS, option_order=list(range(9, -1, -1)))},
    group_size=5)
add("laya_tournament", state={"text": EN}, questions={"topic": TOPICS}, group_size=4, lang="pt")
add("laya_tournament", state={"text": EN}, questions={"topic": TOPICS}, group_size=1)
add("laya_tournament", state={"text": EN}, questions={"topic": TOPICS}, group_size=3, model="en",
    lang_guess="de")
add("laya_tournament", state={"text": EN}, questions={"topic": dict(TOPICS, criteria={})})
# and the state of the server after all of it
add("laya_status")


def content(result):
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    out = []
    for t in texts:
        try:
            out.append(json.loads(t))
        except ValueError:
            out.append(t)
    return out


async def record(ckpt):
    env = dict(os.environ)
    env["LAYA_EXTRA_MODELS"] = json.dumps({n: ckpt for n in ("english", "multilingual", "typed-decisions")})
    env.setdefault("LAYA_THREADS", "2")
    params = StdioServerParameters(command=sys.executable, args=["-c", LAUNCH], env=env)
    async with stdio_client(params) as streams, ClientSession(*streams) as session:
        init = await session.initialize()
        listed = await session.list_tools()
        tools = [{"name": t.name, "description": t.description, "inputSchema": t.input_schema,
                  "outputSchema": t.output_schema} for t in listed.tools]
        calls = []
        for case in CALLS:
            r = await session.call_tool(case["tool"], case["args"])
            texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
            calls.append(dict(case, isError=bool(r.is_error), content=content(r),
                              structuredIsText=r.structured_content == {"result": texts[0]}))
            print("%-20s %s %s" % (case["tool"], "error" if r.is_error else "ok   ",
                                   json.dumps(calls[-1]["content"])[:110]), file=sys.stderr)
    return {"server": {"name": init.server_info.name, "version": init.server_info.version},
            "tools": tools, "calls": calls}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default="tests/fixtures/laya-tiny-modernbert")
    ap.add_argument("--out", default="tests/fixtures/python/mcp_cases.json")
    a = ap.parse_args()
    ckpt = os.path.abspath(a.checkpoint)
    doc = asyncio.run(record(ckpt))
    from importlib.metadata import version
    doc = {"recorded_with": {"laya": version("laya"), "mcp": version("mcp")}, **doc}
    # One line per tool and per call, to keep the file small and its diffs readable.
    line = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731
    text = ('{"recorded_with": %s,\n "server": %s,\n "tools": [\n  %s],\n "calls": [\n  %s]}'
            % (line(doc["recorded_with"]), line(doc["server"]),
               ",\n  ".join(map(line, doc["tools"])), ",\n  ".join(map(line, doc["calls"]))))
    text = text.replace(json.dumps(ckpt)[1:-1], "<ckpt>")
    json.loads(text)
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(text + "\n")
    print("%s: %d tools, %d calls" % (a.out, len(doc["tools"]), len(doc["calls"])), file=sys.stderr)


if __name__ == "__main__":
    main()
