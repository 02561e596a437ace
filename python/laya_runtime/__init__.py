"""laya_runtime: the upstream `laya` SDK's decision calls on Laya Runtime, without PyTorch.

    import laya_runtime as laya
    agent = laya.load("model.laya")            # or a Laya checkpoint directory (converted once)
    agent.predict("The customer was charged twice ...",
                  {"dept": {"type": "choice", "instructions": "Which team?",
                            "criteria": ["billing", "support"]}})

The results are the dicts upstream's calls return (same keys, order and values within the parity
tolerance); refusals raise upstream's exception types with its messages. See docs/python.md.
"""
from __future__ import annotations

import math
from numbers import Integral
from typing import Any, Dict, Optional, Sequence

from ._capi import CallError
from .agent import Agent, LayaRuntimeError, SchemaError, load
from .decoder import Decoder
from .router import DEFAULT_TOURNAMENT_GROUP, RouteDecision, Router, predict_tournament

__version__ = "0.4.0"

DEFAULT_SHORTLIST_K = 20


def predict_shortlist(agent: Agent, state: Any, questions: Dict[str, Dict[str, Any]],
                      embed_fn: Any = None, k: int = DEFAULT_SHORTLIST_K,
                      **predict_kwargs: Any) -> Dict[str, Any]:
    """Upstream `laya.predict_shortlist` with the model's own embeddings (`embed_fn_from_agent`):
    each choice question keeps its k options nearest the state, then one predict."""
    if embed_fn is not None and getattr(embed_fn, "__self__", None) is not agent:
        raise NotImplementedError("laya_runtime shortlists with the model's own embeddings "
                                  "(upstream's embed_fn_from_agent); pass embed_fn=None")
    if isinstance(k, bool) or not isinstance(k, Integral) or k < 1:
        raise ValueError("k must be a positive integer, got %r" % (k,))
    if state is None:
        raise TypeError("state must not be None; pass a string, dict, or list")
    body: Dict[str, Any] = {"state": state, "questions": questions, "shortlist": int(k)}
    for key in ("lang", "max_len", "head_max_len", "min_confidence"):
        if predict_kwargs.get(key) is not None:
            body[key] = predict_kwargs.pop(key)
    if predict_kwargs:
        raise TypeError("unexpected keyword arguments: %s" % ", ".join(sorted(predict_kwargs)))
    return agent._call(body)


def detect_language(state: Any, explain: bool = False) -> Dict[str, Any]:
    """The script and language of a state: upstream `laya.detect_language` (`laya.lang.analyse`),
    the same dict key for key."""
    import json
    from . import _capi
    try:
        return json.loads(_capi.detect_language(json.dumps(state, ensure_ascii=False).encode(),
                                                bool(explain)))
    except _capi.CallError as e:
        raise ValueError(e.message) from None


def ece_score(conf: Sequence[float], correct: Sequence[float], bins: int = 15) -> float:
    """Expected calibration error over `bins` equal-width confidence bins: upstream
    `laya.ece_score` (the first bin closed at 0, the others (lo, hi])."""
    if isinstance(bins, bool) or not isinstance(bins, Integral) or bins < 1:
        raise ValueError("bins must be an integer of at least 1, got %r" % (bins,))
    conf = [float(c) for c in conf]
    correct = [float(c) for c in correct]
    n = len(conf)
    if n == 0:
        return float("nan")
    step = 1.0 / bins  # numpy.linspace(0, 1, bins + 1): i * step, the last edge exactly 1
    edges = [i * step for i in range(bins)] + [1.0]
    e = 0.0
    for i in range(bins):
        lo, hi = edges[i], edges[i + 1]
        sel = [j for j in range(n) if (conf[j] >= lo if i == 0 else conf[j] > lo) and conf[j] <= hi]
        if sel:
            mc = sum(conf[j] for j in sel) / len(sel)
            ma = sum(correct[j] for j in sel) / len(sel)
            e += len(sel) / n * abs(mc - ma)
    return float(e)


__all__ = ["Agent", "CallError", "Decoder", "LayaRuntimeError", "SchemaError", "load", "predict_shortlist", "detect_language",
           "ece_score", "DEFAULT_SHORTLIST_K", "Router", "RouteDecision", "predict_tournament",
           "DEFAULT_TOURNAMENT_GROUP", "__version__"]
