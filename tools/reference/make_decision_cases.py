#!/usr/bin/env python3
"""Record the upstream SDK's decision path around the network: tests/fixtures/laya-decisions/cases.json.

    /work/refvenv/bin/python tools/reference/make_decision_cases.py tests/fixtures/laya-decisions/cases.json

Every case is a `/v1/systemone` request body run through the upstream SDK (laya 0.4.15) exactly as
its server runs it -- laya.serve's request checks, then `Agent.system_one` / `Agent.predict_batch`
(or `laya.structured.decide`, `laya.shortlist.predict_shortlist`) -- with one thing replaced: the
network. The agent's forward pass returns seeded random logits (float32, masked slots -1e4, as the
model returns them), which are recorded with the rows the network would have read. The real
ModernBERT tokenizer (tests/fixtures/modernbert, through transformers as the SDK loads it) does the
tokenizing; every text the SDK tokenized is recorded with its ids, so the C++ sequence builder can
be checked against these rows with or without our own tokenizer. Shortlist cases use a seeded fake
embedder whose vectors are recorded too.

Recorded per case: the request, the checkpoint settings (max_len, head_max_len, temperatures), the
texts the SDK tokenized and their ids, the rows (question, input_ids, markers) in the order the
network read them, the logits and act logits of each row, and the SDK's result -- or, for a refused
request, the HTTP status and detail upstream's server answers.

laya.serve imports fastapi only for its HTTPException; a stand-in class with the same two fields is
installed so the server's own check functions run unchanged without the web stack.
"""
import dataclasses
import hashlib
import json
import os
import sys
import types
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class HTTPException(Exception):
    def __init__(self, status_code, detail=None, headers=None):
        super().__init__(detail)
        self.status_code = status_code
        self.detail = detail


if "fastapi" not in sys.modules:
    stub = types.ModuleType("fastapi")
    stub.HTTPException = HTTPException
    sys.modules["fastapi"] = stub

import laya  # noqa: E402
import laya.agent as A  # noqa: E402
import laya.common as C  # noqa: E402
import laya.serve as S  # noqa: E402
from laya.agent import Agent  # noqa: E402
from laya.shortlist import predict_shortlist  # noqa: E402
from laya.structured import decide  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

TOKENIZER_DIR = os.path.join(ROOT, "tests", "fixtures", "modernbert")

TYPED = {"max_len": 1024, "head_max_len": 256,
         "temperature": [1.0148024559020996, 1.0374259948730469, 1.0575125217437744],
         "temperature_by_options": {"choice:3-5": 1.7601518630981445, "choice:6-10": 1.0000158548355103,
                                    "score:3-5": 1.2514300346374512, "noul:2": 1.983399510383606,
                                    "choice:11+": 0.10058280825614929, "choice:2": 1.9063563346862793}}
SMALL = {"max_len": 96, "head_max_len": 48, "temperature": [1.3, 0.8, 2.2],
         "temperature_by_options": {"choice:2": 1.7, "choice:3-5": 0.9, "choice:6-10": 3.1,
                                    "choice:11+": 0.1, "score:3-5": 1.25, "noul:2": 7.0}}

LONG = ("The customer wrote again about the invoice that was charged twice. " * 40).strip()
TICKET = ("Subject: Double charged on invoice 88213\n\nHi, I was billed twice this month for the Pro "
          "plan and the second charge has not been refunded. If it is not fixed today I am cancelling.")
TRIAGE = {
    "department": {"type": "choice", "instructions": "Which department should handle this?",
                   "criteria": {"billing": "invoices, payments, double charges, refunds",
                                "technical": "bugs, outages, integration errors",
                                "account": "logins, seats, plan changes"}},
    "urgency": {"type": "score", "instructions": "How urgent is this request?",
                "criteria": ["not urgent", "this week", "today", "drop everything"]},
    "churn_risk": {"type": "noul", "instructions": "The customer threatens to cancel the account."},
}


def many(n, words=2):
    return {"intent_%02d" % i: " ".join(["option number %d" % i] + ["detail"] * words) for i in range(n)}


CASES = [
    # name, settings, body
    ("triage", SMALL, {"state": TICKET, "questions": TRIAGE}),
    ("triage_typed", TYPED, {"state": TICKET, "questions": TRIAGE}),
    ("long_state_cut", SMALL, {"state": LONG, "questions": TRIAGE}),
    ("list_state_keeps_newest", SMALL,
     {"state": [{"role": "user", "content": "first turn " + LONG}, {"role": "user", "content": "NEWEST turn"}],
      "questions": {"solved": {"type": "noul", "instructions": "Is the problem solved?"}}}),
    ("dict_state_json", SMALL,
     {"state": {"order": 1234, "status": "late", "total": 149.0, "ratio": 1e-05, "big": 1e16,
                "items": ["lamp", "chair"], "paid": False, "note": None, "name": "Zoë — “quoted”"},
      "questions": {"late": {"type": "noul", "instructions": "Is the order late?"}}}),
    ("number_state", SMALL, {"state": 42, "questions": {"x": {"type": "noul", "instructions": "Is it big?"}}}),
    ("bool_state", SMALL, {"state": True, "questions": {"x": {"type": "noul", "instructions": "True?"}}}),
    ("option_over_48_tokens", TYPED,
     {"state": "hello", "questions": {"q": {"type": "choice", "instructions": "Pick one",
                                            "criteria": {"a": "word " * 80, "b": "short"}}}}),
    ("header_floor_8", {**SMALL, "max_len": 200, "head_max_len": 40},
     {"state": "state text here",
      "questions": {"q": {"type": "choice", "instructions": "A very long instruction " * 10,
                          "criteria": many(3, 3)}}}),
    ("tiny_head_max_len", {**SMALL, "head_max_len": 10},
     {"state": "state text", "questions": {"q": {"type": "choice", "instructions": "Which?", "criteria": many(5)}}}),
    ("collapsed_options", {**SMALL, "max_len": 200, "head_max_len": 60},
     {"state": "pick one", "questions": {"q": {"type": "choice", "instructions": "Which intent?",
                                               "criteria": many(14, 4)}}}),
    ("many_options_per_cut", TYPED,
     {"state": "I want to change my plan", "questions": {"wide": {"type": "choice", "instructions": "Intent?",
                                                                   "criteria": many(40, 1)}}}),
    ("markers_do_not_fit", {**SMALL, "max_len": 20, "head_max_len": 64},
     {"state": "x", "questions": {"q": {"type": "choice", "instructions": "Which?", "criteria": many(6)}}}),
    ("mask_injection", SMALL,
     {"state": "ignore [MASK] and [SEP] and [CLS] please", "questions": {
         "q": {"type": "choice", "instructions": "Pick [MASK] one", "criteria": {"a[MASK]": "x [MASK] y", "b": ""}}}}),
    ("criteria_shapes", SMALL,
     {"state": "The ticket",
      "questions": {"list_labels": {"type": "choice", "instructions": "Which?", "criteria": ["a", 2, 3.5, True]},
                    "dict_desc": {"type": "choice", "instructions": {"ask": "which", "n": 2},
                                  "criteria": {"x": {"k": [1, 2]}, "y": 0, "z": False}},
                    "score_dicts": {"type": "score", "instructions": 7, "criteria": [{"lvl": 0}, "mid", 2.5]},
                    "noul_labels": {"type": "noul", "instructions": ["is", "it"], "labels": {"false": " no ", "true": "yes"},
                                    "criteria": {"TRUE": "it holds", "false": ""}},
                    "noul_null_labels": {"type": "noul", "instructions": "x", "labels": None, "criteria": None}}}),
    ("option_order", SMALL,
     {"state": "The ticket", "questions": {
         "c": {"type": "choice", "instructions": "Which?", "criteria": {"a": "", "b": "", "c": "", "d": ""},
               "option_order": [2, 0, 3, 1]},
         "s": {"type": "score", "instructions": "How?", "criteria": ["l0", "l1", "l2"], "option_order": [2, 1, 0]},
         "n": {"type": "noul", "instructions": "True?", "option_order": [1, 0]}}}),
    ("single_option", SMALL, {"state": "x", "questions": {"only": {"type": "choice", "instructions": "One", "criteria": ["solo"]}}}),
    ("empty_questions", SMALL, {"state": "anything", "questions": {}}),
    ("non_ascii", SMALL,
     {"state": "العميل يريد استرداد المبلغ 这个请求 ✓ naïve café", "questions": {
         "部门": {"type": "choice", "instructions": "哪个部门？", "criteria": {"账单": "发票", "技术": "故障"}}}}),
    ("min_confidence_scalar", SMALL, {"state": TICKET, "questions": TRIAGE, "min_confidence": 0.6}),
    ("min_confidence_zero", SMALL, {"state": TICKET, "questions": TRIAGE, "min_confidence": 0}),
    ("min_confidence_map", SMALL,
     {"state": TICKET, "questions": TRIAGE, "min_confidence": {"choice:3-5": 0.9, "noul:2": 0.2, "default": 0.5}}),
    ("min_confidence_map_no_default", SMALL,
     {"state": TICKET, "questions": TRIAGE, "min_confidence": {"score:3-5": 1}}),
    ("budgets_per_call", SMALL, {"state": LONG, "questions": TRIAGE, "max_len": 64, "head_max_len": 40}),
    ("batch", SMALL, {"states": [TICKET, "short one", {"k": "v"}, ["a", "b"]], "questions": TRIAGE}),
    ("batch_chunked", SMALL, {"states": [TICKET, "short one", LONG], "questions": TRIAGE, "batch_size": 2,
                              "min_confidence": 0.5}),
    ("batch_empty_questions", SMALL, {"states": ["a", "b"], "questions": {}}),
    ("schema", SMALL,
     {"state": TICKET, "schema": {"type": "object", "properties": {
         "department": {"enum": ["billing", "technical", None, 3], "description": "Which department?"},
         "urgency": {"type": "integer", "minimum": 1, "maximum": 4},
         "refund": {"type": "boolean", "description": "Does the customer want a refund?"},
         "tier": {"$ref": "#/$defs/Tier"}, "opt": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
         "yes": {"enum": [True, False]}},
         "$defs": {"Tier": {"enum": ["free", "pro"], "description": "ignored"}}},
      "min_confidence": 0.55, "return_details": True}),
    ("schema_batch", SMALL,
     {"states": [TICKET, "all good, thanks"], "schema": {"properties": {
         "ok": {"type": "boolean"}, "level": {"type": ["integer", "null"], "minimum": 0, "maximum": 2}}}}),
    ("shortlist", SMALL,
     {"state": "I want to cancel my subscription", "shortlist": 5,
      "questions": {"intent": {"type": "choice", "instructions": "Which intent?", "criteria": many(12, 0),
                               "option_order": list(range(11, -1, -1))},
                    "small": {"type": "choice", "instructions": "Which?", "criteria": ["x", "y"]},
                    "n": {"type": "noul", "instructions": "Is it urgent?"}}}),
    ("shortlist_list_labels", SMALL,
     {"state": {"msg": "refund please"}, "shortlist": True,
      "questions": {"intent": {"type": "choice", "instructions": "Intent", "criteria": ["l%d" % i for i in range(25)]}}}),
    # refused requests
    ("err_no_questions_field", SMALL, {"state": "x"}),
    ("err_body_not_object", SMALL, ["state", "questions"]),
    ("err_state_missing", SMALL, {"questions": {}}),
    ("err_state_null", SMALL, {"state": None, "questions": {}}),
    ("err_questions_not_object", SMALL, {"state": "x", "questions": ["a"]}),
    ("err_too_many_questions", SMALL,
     {"state": "x", "questions": {"q%d" % i: {"type": "noul", "instructions": "x"} for i in range(65)}}),
    ("err_too_many_choice_options", SMALL,
     {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": ["o%d" % i for i in range(101)]}}}),
    ("err_too_many_score_levels", SMALL,
     {"state": "x", "questions": {"q": {"type": "score", "instructions": "x", "criteria": ["l"] * 33}}}),
    ("err_null_score_level_serve", SMALL,
     {"state": "x", "questions": {"q": {"type": "score", "instructions": "x", "criteria": ["a", None]}}}),
    ("err_too_many_total_options", SMALL,
     {"state": "x", "questions": {"q%d" % j: {"type": "choice", "instructions": "x",
                                              "criteria": ["o%d" % i for i in range(90)]} for j in range(6)}}),
    ("err_state_too_large", SMALL, {"state": "x" * 50001, "questions": {}}),
    ("err_state_too_large_dict", SMALL, {"state": {"a": "y" * 30000, "b": "z" * 30000}, "questions": {}}),
    ("err_state_too_large_serialized", SMALL, {"state": {"a": "\"" * 30000}, "questions": {}}),
    ("err_hooks", SMALL, {"state": "x", "questions": {}, "hooks_timeout": 1, "on_predict_start": "f"}),
    ("err_max_len_type", SMALL, {"state": "x", "questions": {}, "max_len": "12"}),
    ("err_max_len_bool", SMALL, {"state": "x", "questions": {}, "max_len": True}),
    ("err_max_len_zero", SMALL, {"state": "x", "questions": {}, "max_len": 0}),
    ("err_max_len_cap", SMALL, {"state": "x", "questions": {}, "head_max_len": 9000}),
    ("err_lang", SMALL, {"state": "x", "questions": {}, "lang": 5}),
    ("err_min_confidence", SMALL, {"state": "x", "questions": {}, "min_confidence": 1.5}),
    ("err_min_confidence_bool", SMALL, {"state": "x", "questions": {}, "min_confidence": True}),
    ("err_min_confidence_map_key", SMALL, {"state": "x", "questions": {}, "min_confidence": {"choice:7": 0.5}}),
    ("err_min_confidence_map_empty", SMALL, {"state": "x", "questions": {}, "min_confidence": {}}),
    ("err_model_path", SMALL, {"state": "x", "questions": {}, "model": "./my/checkpoint"}),
    ("err_unknown_task", SMALL, {"state": "x", "questions": {}, "task": "nope"}),
    ("err_unknown_type", SMALL, {"state": "x", "questions": {"q": {"type": "multi", "instructions": "x"}}}),
    ("err_definition_not_dict", SMALL, {"state": "x", "questions": {"q": "what?"}}),
    ("err_blank_id", SMALL, {"state": "x", "questions": {"  ": {"type": "noul", "instructions": "x"}}}),
    ("err_no_instructions", SMALL, {"state": "x", "questions": {"q": {"type": "noul"}}}),
    ("err_null_instructions", SMALL, {"state": "x", "questions": {"q": {"type": "noul", "instructions": None}}}),
    ("err_empty_instructions", SMALL, {"state": "x", "questions": {"q": {"type": "noul", "instructions": "  "}}}),
    ("err_empty_list_instructions", SMALL, {"state": "x", "questions": {"q": {"type": "noul", "instructions": []}}}),
    ("err_choice_no_criteria", SMALL, {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x"}}}),
    ("err_choice_empty", SMALL, {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": {}}}}),
    ("err_choice_label_list", SMALL,
     {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": ["a", ["b"]]}}}),
    ("err_choice_label_null", SMALL,
     {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": ["a", None]}}}),
    ("err_choice_label_repeat", SMALL,
     {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": [1, "1", 1.0]}}}),
    ("err_choice_label_true_one", SMALL,
     {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": [True, 1]}}}),
    ("err_score_not_list", SMALL, {"state": "x", "questions": {"q": {"type": "score", "instructions": "x", "criteria": {"a": 1}}}}),
    ("err_score_empty", SMALL, {"state": "x", "questions": {"q": {"type": "score", "instructions": "x", "criteria": []}}}),
    ("err_noul_criteria_list", SMALL, {"state": "x", "questions": {"q": {"type": "noul", "instructions": "x", "criteria": ["a"]}}}),
    ("err_noul_criteria_keys", SMALL,
     {"state": "x", "questions": {"q": {"type": "noul", "instructions": "x", "criteria": {"yes": "a", "Maybe": "b"}}}}),
    ("err_option_order", SMALL,
     {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": ["a", "b"], "option_order": [0, 0]}}}),
    ("err_option_order_float", SMALL,
     {"state": "x", "questions": {"q": {"type": "noul", "instructions": "x", "option_order": [1.0, 0]}}}),
    ("err_labels_not_noul", SMALL,
     {"state": "x", "questions": {"q": {"type": "choice", "instructions": "x", "criteria": ["a"], "labels": {}}}}),
    ("err_noul_labels", SMALL,
     {"state": "x", "questions": {"q": {"type": "noul", "instructions": "x", "labels": {"false": "same", "true": " same"}}}}),
    ("err_batch_states_empty", SMALL, {"states": [], "questions": {}}),
    ("err_batch_too_many", SMALL, {"states": ["x"] * 65, "questions": {}}),
    ("err_batch_state_null", SMALL, {"states": ["x", None], "questions": {}}),
    ("err_batch_size", SMALL, {"states": ["x"], "questions": {}, "batch_size": 0}),
    ("err_batch_diagnostics", SMALL, {"states": ["x"], "questions": {}, "diagnostics": {}}),
    ("err_schema_string", SMALL, {"state": "x", "schema": {"properties": {"name": {"type": "string"}}}}),
    ("err_schema_range", SMALL, {"state": "x", "schema": {"properties": {"n": {"type": "integer", "minimum": 0, "maximum": 20}}}}),
    ("err_schema_union", SMALL, {"state": "x", "schema": {"properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}}}}),
    ("err_schema_ref", SMALL, {"state": "x", "schema": {"properties": {"n": {"$ref": "#/$defs/Missing"}}}}),
]


class Recorder:
    def __init__(self, tok):
        self.tok = tok
        self.encodings = {}
        self.rows = []
        self.logits = []
        self.act_logits = []
        self.embeddings = {}


_REAL_ENCODE = C.encode_text
_CURRENT = []


def _encode_spy(tok, text, **kwargs):
    out = _REAL_ENCODE(tok, text, **kwargs)
    if _CURRENT and isinstance(text, str) and kwargs.get("add_special_tokens") is False:
        _CURRENT[0].encodings[text] = list(_REAL_ENCODE(tok, text, add_special_tokens=False)["input_ids"])
    return out


C.encode_text = _encode_spy
A.encode_text = _encode_spy


def _install_encode_spy(rec):
    _CURRENT[:] = [rec]


def make_agent(tok, settings):
    a = Agent.__new__(Agent)
    a.tok = tok
    a.cfg = {"max_len": settings["max_len"], "head_max_len": settings["head_max_len"]}
    a.temperature_raw = settings["temperature"]
    a.temperature = [C.clamp_temperature(t) for t in settings["temperature"]]
    a.temperature_by_options = {k: C.clamp_temperature(v) for k, v in settings["temperature_by_options"].items()}
    a.lang_temperatures = {}
    a.binning_map = None
    return a


def fake_forward(rec, seed):
    rng = np.random.RandomState(seed)

    def forward(b):
        ids, att, mpos, mmask = b["input_ids"], b["attention_mask"], b["marker_pos"], b["marker_mask"]
        n, kmax = mmask.shape
        logits = (rng.standard_normal((n, kmax)) * 3.0).astype(np.float32)
        logits[~mmask.numpy()] = -1e4
        act = (rng.standard_normal((n, 2)) * 2.0).astype(np.float32)
        for r in range(n):
            k = int(mmask[r].sum())
            L = int(att[r].sum())
            rec.rows.append({"question": b["meta"][r].get("qid"), "input_ids": ids[r, :L].tolist(),
                             "markers": mpos[r, :k].tolist()})
            rec.logits.append([float(x) for x in logits[r, :k]])
            rec.act_logits.append([float(x) for x in act[r]])
        return logits, torch.softmax(torch.from_numpy(act), -1).numpy()

    return forward


def fake_embed(rec):
    def embed(texts):
        out = []
        for t in texts:
            h = int.from_bytes(hashlib.sha256(t.encode("utf-8")).digest()[:8], "little")
            v = np.random.RandomState(h % (2 ** 32)).standard_normal(16).astype(np.float32)
            rec.embeddings[t] = [float(x) for x in v]
            out.append(v)
        return np.stack(out)

    return embed


def serve_checks(body, shortlist):
    """laya.serve's checks for /v1/systemone or /v1/systemone/batch, in its order."""
    batch = isinstance(body, dict) and "states" in body
    questions_key = "questions" if not (isinstance(body, dict) and "schema" in body) else "schema"
    if batch:
        if not isinstance(body, dict) or questions_key not in body or "states" not in body:
            raise HTTPException(400, "request body must be an object with 'states' and 'questions' fields")
    elif not isinstance(body, dict) or questions_key not in body:
        raise HTTPException(400, "request body must be an object with a 'questions' field")
    if questions_key == "questions":
        cap = 512 if shortlist else S.MAX_CHOICE_OPTIONS
        if batch:
            S._check_batch_limits(body["states"], body["questions"], cap)
        else:
            S._check_request_limits(body.get("state"), body["questions"], cap)
    S._refuse_body_refusals(body)
    if batch:
        S._refuse_out_parameters(body)
    S._resolve_model(body.get("model"))
    S._validate_budget_param(body, "max_len", 8192)
    S._validate_budget_param(body, "head_max_len", 8192)
    for key in ("lang", "lang_guess"):
        S._validate_language_param(body, key)
    S._validate_min_confidence(body)
    if batch:
        S._validate_batch_size_param(body)
        S._validate_sort_by_length_param(body)
    if body.get("task") is not None and not body.get("model"):
        from laya.router import Router
        Router().route(body.get("state"), None, task=body["task"])


def run_case(tok, name, settings, body, seed):
    rec = Recorder(tok)
    _install_encode_spy(rec)
    agent = make_agent(tok, settings)
    agent._forward = fake_forward(rec, seed)
    # Rows carry their question id through collate_items' meta, for the record.
    real_encode_state = agent._encode_state

    def encode_state(state, ids, internal, **kw):
        items = real_encode_state(state, ids, internal, **kw)
        for qid, it in zip(ids, items):
            it["qid"] = qid
        return items

    agent._encode_state = encode_state
    out = {"name": name, "settings": settings, "request": body}
    shortlist = body.get("shortlist") if isinstance(body, dict) else None
    try:
        serve_checks(body, shortlist)
        kwargs = {k: body[k] for k in ("max_len", "head_max_len", "min_confidence") if body.get(k) is not None}
        if "schema" in body:
            details = bool(body.get("return_details"))
            if "states" in body:
                from laya.structured import decide_batch
                res = decide_batch(agent, body["states"], body["schema"], return_details=details, **kwargs)
                res = [dataclasses.asdict(d) if details else d for d in res]
            else:
                res = decide(agent, body["state"], body["schema"], return_details=details, **kwargs)
                res = dataclasses.asdict(res) if details else res
        elif shortlist:
            k = 20 if shortlist is True else shortlist
            res = predict_shortlist(agent, body["state"], body["questions"], fake_embed(rec), k=k, **kwargs)
        elif "states" in body:
            if body.get("batch_size") is not None:
                kwargs["batch_size"] = body["batch_size"]
            res = agent.predict_batch(body["states"], body["questions"], **kwargs)
        else:
            res = agent.system_one(body["state"], body["questions"], **kwargs)
        out["result"] = res
    except HTTPException as e:
        out["error"] = {"status": e.status_code, "detail": e.detail}
    except ValueError as e:
        out["error"] = {"status": 422, "detail": str(e)}
    out["encodings"] = rec.encodings
    out["rows"] = rec.rows
    out["logits"] = rec.logits
    out["act_logits"] = rec.act_logits
    if rec.embeddings:
        out["embeddings"] = rec.embeddings
    return out


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: make_decision_cases.py OUT.json")
    warnings.simplefilter("ignore")
    tok = AutoTokenizer.from_pretrained(TOKENIZER_DIR)
    cases = []
    for i, (name, settings, body) in enumerate(CASES):
        print(name, file=sys.stderr, flush=True)
        cases.append(run_case(tok, name, settings, body, 1000 + i))
    doc = {"generator": "tools/reference/make_decision_cases.py", "laya_version": laya.__version__,
           "numpy": np.__version__, "torch": torch.__version__, "tokenizer": "tests/fixtures/modernbert",
           "cases": cases}
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    n_err = sum(1 for c in cases if "error" in c)
    print("%d cases (%d refused), %d rows" % (len(cases), n_err, sum(len(c["rows"]) for c in cases)))


if __name__ == "__main__":
    main()
