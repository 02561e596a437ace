"""The MCP tools' work, without the `mcp` package: argument checks, then laya_runtime's calls.

Each `laya_*` function takes the tool's arguments plus the server's `Router` and returns the dict
the tool answers with (upstream laya-mcp-server's shape), or raises `ToolError` with upstream's
code and message. The decisions are laya_runtime's (`Router.route` / `route_batch` / `predict` /
`predict_batch`, `predict_shortlist`, `predict_tournament`); what is here is the tool layer's own:
which arguments a client may send, and how an answer is reported.
"""
from __future__ import annotations

import math
import time
from typing import Any, Dict, List, Optional

AUTO = "auto"
QUESTION_TYPES = ("choice", "noul", "score")
BATCH_ITEM_OVERRIDES = ("model", "task", "lang", "lang_guess", "max_len", "head_max_len")
PINNED = "%s routes between checkpoints; with a pinned model there is nothing to route"


class ToolError(Exception):
    """A refusal the client reads: `code` (e.g. "invalid_questions") and a message."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def batch_item_key_doc(omit: tuple = ()) -> str:
    """A batch item's keys as one phrase: `{state, questions, model?, ...} objects`."""
    keys = ["%s?" % k for k in BATCH_ITEM_OVERRIDES if k not in omit]
    return "{state, questions, %s} objects" % ", ".join(keys)


# ---- argument checks ----------------------------------------------------------------------------

def check_state(state: Any) -> dict:
    if not isinstance(state, dict) or not state:
        raise ToolError("invalid_state", "state must be a non-empty JSON object")
    return dict(state)


def _is_index(i: Any) -> bool:
    return isinstance(i, int) and not isinstance(i, bool)


def _check_question(name: str, spec: Any) -> dict:
    bad = lambda what: ToolError("invalid_questions", "questions[%s]%s" % (name, what))  # noqa: E731
    if not isinstance(spec, dict):
        raise bad(" must be an object")
    qtype = spec.get("type")
    if qtype not in QUESTION_TYPES:
        raise bad(".type must be one of %s, got %r" % (list(QUESTION_TYPES), qtype))
    instructions = spec.get("instructions")
    if not isinstance(instructions, str) or not instructions.strip():
        raise bad(".instructions must be a non-empty string")
    out: Dict[str, Any] = {"type": qtype, "instructions": instructions}
    criteria = spec.get("criteria")
    if qtype == "choice":
        if not isinstance(criteria, dict) or not criteria:
            raise bad(".criteria must be a non-empty object of label -> description")
        out["criteria"] = {str(k): v for k, v in criteria.items()}
    elif qtype == "score":
        if not isinstance(criteria, list) or not criteria:
            raise bad(".criteria must be a non-empty list of rubric levels")
        if None in criteria:
            raise bad(".criteria has a null level at index %d; give every level a description"
                      % criteria.index(None))
        out["criteria"] = list(criteria)
    elif criteria is not None:
        if not isinstance(criteria, dict):
            raise bad(".criteria must be an object when present (noul)")
        keys = sorted({str(k).lower() for k in criteria})
        if not set(keys) <= {"true", "false"}:
            raise bad(".criteria must be keyed only 'true'/'false' (either or both, omitting it "
                      "is fine), got %s. To word the answer differently set 'labels' instead."
                      % keys)
        out["criteria"] = {str(k): v for k, v in criteria.items()}
    if "labels" in spec:
        labels = spec["labels"]
        if qtype != "noul":
            raise bad(".labels is only supported for noul questions")
        if not isinstance(labels, dict) or set(labels) != {"false", "true"}:
            raise bad(".labels must map exactly 'false' and 'true' to distinct non-empty strings")
        pair = [labels["false"], labels["true"]]
        if not all(isinstance(v, str) for v in pair):
            raise bad(".labels must give 'false' and 'true' string values, got %s"
                      % [type(v).__name__ for v in pair])
        f, t = (v.strip() for v in pair)
        if not f or not t or f == t:
            raise bad(".labels must give 'false' and 'true' distinct non-empty strings")
        out["labels"] = labels
    if "option_order" in spec:
        order = spec["option_order"]
        n = 2 if qtype == "noul" else len(out["criteria"])
        if (not isinstance(order, list) or len(order) != n or not all(map(_is_index, order))
                or sorted(order) != list(range(n))):
            raise bad(".option_order must be a permutation of range(%d) -- one slot per option, "
                      "each option once -- got %r" % (n, order))
        out["option_order"] = list(order)
    return out


def check_questions(questions: Any) -> dict:
    if not isinstance(questions, dict) or not questions:
        raise ToolError("invalid_questions",
                        "questions must be a non-empty JSON object keyed by question name")
    out = {}
    for name, spec in questions.items():
        if not isinstance(name, str) or not name:
            raise ToolError("invalid_questions",
                            "question name must be a non-empty string: %r" % (name,))
        out[name] = _check_question(name, spec)
    return out


def check_model(router: Any, model: Any) -> str:
    """`auto` (or None) for "route it", else the checkpoint's canonical name (the Router's)."""
    if model is None or (isinstance(model, str) and model.strip().lower() == AUTO):
        return AUTO
    try:
        return router.resolve(model)
    except ValueError as e:
        raise ToolError("invalid_model", "%s, or %r" % (e, AUTO)) from None


def check_task(router: Any, task: Any) -> Optional[str]:
    """The caller's task as given (checked to name a checkpoint), or None."""
    if task is None:
        return None
    name = "typed-decisions" if str(task).lower().replace("-", "_") == "typed_decisions" else task
    try:
        router.resolve(name)
    except ValueError as e:
        raise ToolError("invalid_task", "%s, or %r" % (e, "typed_decisions")) from None
    return task


def check_lang(lang: Any) -> Optional[str]:
    if lang is not None and not isinstance(lang, str):
        raise ToolError("invalid_lang",
                        "lang must be a language code like 'en' or 'de', got %r" % (lang,))
    return lang


def check_lang_guess(hint: Any) -> Optional[str]:
    if hint is not None and not isinstance(hint, str):
        raise ToolError("invalid_lang_guess",
                        "lang_guess must be a language code like 'en' or 'de', got %r" % (hint,))
    return hint


def check_budget(value: Any, name: str) -> Optional[int]:
    if value is not None and (not _is_index(value) or value < 1):
        raise ToolError("invalid_%s" % name,
                        "%s must be a positive integer, got %r" % (name, value))
    return value


def check_min_confidence(value: Any) -> Optional[float]:
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
            or not 0.0 <= value <= 1.0):
        raise ToolError("invalid_min_confidence",
                        "min_confidence must be a float in [0.0, 1.0], got %r" % (value,))
    return float(value)


def check_hooks_timeout(value: Any) -> Optional[float]:
    """Checked as upstream checks it; this runtime has no hooks, so a valid value changes nothing."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ToolError("invalid_hooks_timeout",
                        "hooks_timeout must be a positive number or None, got %r" % (value,))
    try:
        seconds = float(value)
    except (TypeError, ValueError) as e:
        raise ToolError("invalid_hooks_timeout", str(e)) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise ToolError("invalid_hooks_timeout",
                        "hooks_timeout must be a positive finite number or None; got %r" % (value,))
    return seconds


def _controls(router: Any, model: str, task: Any, lang: Any, lang_guess: Any, max_len: Any,
              head_max_len: Any, min_confidence: Any) -> Dict[str, Any]:
    """The per-call controls that are set, checked in upstream's order; task and lang_guess only
    route, so they are refused with a pinned model."""
    out = {"task": check_task(router, task), "lang": check_lang(lang),
           "max_len": check_budget(max_len, "max_len"),
           "head_max_len": check_budget(head_max_len, "head_max_len"),
           "lang_guess": check_lang_guess(lang_guess),
           "min_confidence": check_min_confidence(min_confidence)}
    out = {k: v for k, v in out.items() if v is not None}
    for name in ("task", "lang_guess"):
        if model != AUTO and name in out:
            raise ToolError("invalid_%s" % name, PINNED % name)
    return out


# ---- reporting ----------------------------------------------------------------------------------

def _device(router: Any, name: Any) -> Optional[str]:
    """The device of the resident checkpoint `name` (read, never loaded)."""
    agent = getattr(router, "_agents", {}).get(name) if isinstance(name, str) else None
    device = getattr(agent, "device", None)
    return device if isinstance(device, str) and device else None


def _decision(d: Any) -> dict:
    return {"model": d.get("model"), "repo": d.get("repo"), "reason": d.get("reason")}


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


def _counts(names: List[Any]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for n in names:
        key = n if isinstance(n, str) and n else "unknown"
        out[key] = out.get(key, 0) + 1
    return out


def _need(router: Any) -> None:
    if router is None:
        raise ToolError("models_not_ready", "Router is not loaded")


# ---- the tools ----------------------------------------------------------------------------------

def laya_status(router: Any, preload: bool, version: str, preference: Optional[str]) -> dict:
    """`device` is the loaded checkpoints' (the first one's), else the configured preference."""
    loaded = list(router.loaded) if router is not None else []
    devices = {n: d for n, d in ((n, _device(router, n)) for n in loaded) if d}
    actual = next(iter(devices.values()), None)
    return {"device": actual or preference or "cpu", "torch_cuda": False, "torch_version": None,
            "device_is_preference": actual is None, "checkpoint_devices": devices,
            "loaded": loaded, "router_preload": bool(preload), "router_ready": router is not None,
            "package_versions": {"laya": None, "torch": None, "transformers": None,
                                 "laya_runtime": version}}


def laya_route(router: Any, state: Any, questions: Any, model: Any = None, task: Any = None,
               lang: Any = None, lang_guess: Any = None) -> dict:
    state = check_state(state)
    questions = check_questions(questions)
    model = check_model(router, model)
    task = check_task(router, task)
    lang_guess = check_lang_guess(lang_guess)
    if model != AUTO and task is not None:
        raise ToolError("invalid_task", PINNED % "task")
    if model != AUTO and lang_guess is not None:
        raise ToolError("invalid_lang_guess", PINNED % "lang_guess")
    lang = check_lang(lang)
    _need(router)
    return _decision(router.route(state, questions, model=None if model == AUTO else model,
                                  task=task, lang=lang, lang_guess=lang_guess))


def laya_predict(router: Any, state: Any, questions: Any, model: Any = None, task: Any = None,
                 lang: Any = None, lang_guess: Any = None, max_len: Any = None,
                 head_max_len: Any = None, min_confidence: Any = None) -> dict:
    state = check_state(state)
    questions = check_questions(questions)
    model = check_model(router, model)
    controls = _controls(router, model, task, lang, lang_guess, max_len, head_max_len,
                         min_confidence)
    if router is None:
        raise ToolError("models_not_ready", "Router is not loaded (auto mode)" if model == AUTO
                        else "no agent/router loaded")
    started = time.perf_counter()
    result = router.predict(state, questions, model=None if model == AUTO else model, **controls)
    latency = _ms(started)
    routing = result.get("routing") or (
        {"model": None, "repo": None, "reason": "auto routing without router"} if model == AUTO
        else {"model": model, "repo": None, "reason": "explicit model"})
    out = {"answers": result["answers"], "routing": routing, "latency_ms": latency}
    device = _device(router, (result.get("routing") or {}).get("model"))
    if device:
        out["device"] = device
    return out


def check_batch(router: Any, requests: Any) -> List[dict]:
    """Every batch item checked before anything runs (one bad item refuses the call)."""
    if not isinstance(requests, list) or not requests:
        raise ToolError("invalid_request",
                        "requests must be a non-empty array of %s" % batch_item_key_doc())
    items = []
    for i, r in enumerate(requests):
        where = "requests[%d]" % i
        if not isinstance(r, dict):
            raise ToolError("invalid_request",
                            "%s must be an object with 'state' and 'questions'" % where)
        item = {"state": check_state(r.get("state")), "questions": check_questions(r.get("questions"))}
        if r.get("model") is not None:
            try:
                model = check_model(router, r["model"])
            except ToolError as e:
                raise ToolError("invalid_model", "%s['model']: %s" % (where, e)) from None
            if model != AUTO:
                item["model"] = model
        for key in ("task", "lang"):
            if key in r:
                v = r[key]
                if not isinstance(v, str) or not v.strip():
                    raise ToolError("invalid_request", "%s[%r] must be a non-empty string, got %r"
                                    % (where, key, v))
                item[key] = v
        if "lang_guess" in r:
            item["lang_guess"] = check_lang_guess(r["lang_guess"])
        for key in ("max_len", "head_max_len"):
            if r.get(key) is not None:
                try:
                    item[key] = check_budget(r[key], key)
                except ToolError as e:
                    raise ToolError(e.code, "%s[%r]: %s" % (where, key, e)) from None
        items.append(item)
    return items


def laya_predict_batch(router: Any, requests: Any, batch_size: Any = None,
                       hooks_timeout: Any = None, min_confidence: Any = None,
                       sort_by_length: bool = False) -> dict:
    items = check_batch(router, requests)
    if batch_size is not None and (not _is_index(batch_size) or batch_size < 1):
        raise ToolError("invalid_batch_size",
                        "batch_size must be a positive integer, got %r" % (batch_size,))
    min_confidence = check_min_confidence(min_confidence)
    check_hooks_timeout(hooks_timeout)
    _need(router)
    started = time.perf_counter()
    try:
        results = router.predict_batch(items, batch_size=batch_size, min_confidence=min_confidence,
                                       sort_by_length=bool(sort_by_length))
    except TypeError as e:
        raise ToolError("internal_error",
                        "router.predict_batch failed: %s: %s" % (type(e).__name__, e)) from e
    latency = (time.perf_counter() - started) * 1000.0
    out = []
    for r in results:
        entry = {"answers": r["answers"], "routing": r.get("routing") or {}}
        device = _device(router, entry["routing"].get("model"))
        if device:
            entry["device"] = device
        out.append(entry)
    return {"requests": out, "model_counts": _counts([e["routing"].get("model") for e in out]),
            "total_latency_ms": round(latency, 3),
            "per_request_latency_ms": round(latency / len(items), 3)}


def laya_route_batch(router: Any, requests: Any, hooks_timeout: Any = None) -> dict:
    items = check_batch(router, requests)
    check_hooks_timeout(hooks_timeout)
    _need(router)
    out = [_decision(d) for d in router.route_batch(items)]
    return {"decisions": out, "model_counts": _counts([d["model"] for d in out])}


def _route_first(router: Any, state: dict, questions: dict, controls: Dict[str, Any]):
    """Auto mode of shortlist and tournament: route once, then pin what the route chose (its
    detected language goes to the answering calls unless the caller named one)."""
    if router is None:
        raise ToolError("models_not_ready", "Router is not loaded (auto mode)")
    decision = router.route(state, questions, task=controls.pop("task", None),
                            lang=controls.get("lang"), lang_guess=controls.pop("lang_guess", None))
    routed = decision.get("model")
    if not isinstance(routed, str) or not routed:
        raise ToolError("internal_error", "router.route returned no model")
    detected = (decision.get("detection") or {}).get("language")
    if "lang" not in controls and isinstance(detected, str) and detected:
        controls["lang"] = detected
    return _decision(decision), routed


def laya_shortlist(router: Any, state: Any, questions: Any, model: Any = None, k: Any = 20,
                   task: Any = None, lang: Any = None, lang_guess: Any = None,
                   max_len: Any = None, head_max_len: Any = None,
                   min_confidence: Any = None) -> dict:
    from .. import DEFAULT_SHORTLIST_K, predict_shortlist

    state = check_state(state)
    questions = check_questions(questions)
    model = check_model(router, model)
    controls = _controls(router, model, task, lang, lang_guess, max_len, head_max_len,
                         min_confidence)
    k = DEFAULT_SHORTLIST_K if k is None else k
    if not _is_index(k) or k < 1:
        raise ToolError("invalid_k", "k must be a positive integer, got %r" % (k,))
    if model == AUTO:
        routing, name = _route_first(router, state, questions, controls)
    else:
        _need(router)
        routing, name = {"model": model, "repo": None, "reason": "explicit model"}, model
    agent = router.load(name)
    started = time.perf_counter()
    result = predict_shortlist(agent, state, questions, k=k, **controls)
    latency = _ms(started)
    meta = result.get("shortlist") or {}
    dropped = {q: {"n": len(spec["criteria"]), "kept": len(meta[q]["labels"])}
               for q, spec in questions.items()
               if spec["type"] == "choice" and "option_order" in spec and meta.get(q)
               and not meta[q].get("passthrough")}
    out = {"answers": result["answers"], "routing": routing, "shortlist": meta,
           "latency_ms": latency}
    if dropped:
        out["option_order_dropped"] = dropped
    if getattr(agent, "device", None):
        out["device"] = agent.device
    return out


def laya_tournament(router: Any, state: Any, questions: Any, model: Any = None,
                    group_size: Any = 16, task: Any = None, lang: Any = None,
                    lang_guess: Any = None, max_len: Any = None, head_max_len: Any = None,
                    min_confidence: Any = None) -> dict:
    from .. import predict_tournament

    state = check_state(state)
    questions = check_questions(questions)
    model = check_model(router, model)
    if not _is_index(group_size) or group_size < 2:
        raise ToolError("invalid_group_size",
                        "group_size must be an integer of at least 2, got %r" % (group_size,))
    controls = _controls(router, model, task, lang, lang_guess, max_len, head_max_len,
                         min_confidence)
    started = time.perf_counter()
    routing = None
    if model == AUTO and router is not None:
        routing, model = _route_first(router, state, questions, controls)

    class Rounds:
        """Each round is a laya_predict on the chosen checkpoint; a winner must be a label."""

        def predict(self, round_state, round_questions):
            result = laya_predict(router, round_state, round_questions, model=model, **controls)
            for name, spec in round_questions.items():
                answer = result["answers"].get(name)
                if spec["type"] == "choice" and (
                        not isinstance(answer, dict) or not isinstance(answer.get("choice"), str)
                        or answer["choice"] not in spec["criteria"]):
                    raise ToolError("internal_error", "tournament prediction for question %r "
                                    "must return a choice from its criteria" % name)
            return result

    out = predict_tournament(Rounds(), state, questions, group_size=group_size)
    if routing is not None:
        out["routing"] = routing
    out["latency_ms"] = _ms(started)
    dropped = {q: {"n": e["n"], "kept": len(e["labels"])} for q, e in out["tournament"].items()
               if e["rounds"] and "option_order" in questions[q]}
    if dropped:
        out["option_order_dropped"] = dropped
    return out
