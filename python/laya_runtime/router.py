"""`Router` and `predict_tournament`: upstream `laya.Router` (router.py) and
`laya.predict_tournament` (shortlist.py) over the C API.

The routing decision is `laya_route` (runtime/decisions/router.h) and the tournament's rounds are
`laya_tournament_*` (runtime/decisions/tournament.h); this module holds what is Python's own: the
arguments' types, the checkpoints a Router keeps loaded, and the calls it makes on them.

Upstream's Router downloads its checkpoints from the Hugging Face hub; this one loads local files
only: `Router(models={"english": "en.laya", "multilingual": "ml-checkpoint/"})` (a `.laya` file
or a Laya checkpoint directory, as `laya_runtime.load` takes). Routing needs no checkpoint at all.
"""
from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence as SequenceABC
from typing import Any, Dict, List, Optional

from . import _capi
from .agent import LayaRuntimeError, _check_questions, _check_state, _no_hooks, _not_here, load

DEFAULT_TOURNAMENT_GROUP = 16


def _refusal(e: _capi.CallError):
    """A refusal of laya_route / laya_tournament_*: upstream's TypeError or ValueError."""
    if e.code == _capi.E_REQUEST_INVALID:
        return TypeError(e.message)
    if e.code in (_capi.E_REQUEST_UNPROCESSABLE, _capi.E_REQUEST_TOO_LARGE,
                  _capi.E_INVALID_ARGUMENT):
        return ValueError(e.message)
    return LayaRuntimeError(e.code, e.message)


def _dumps(v: Any) -> bytes:
    return json.dumps(v, ensure_ascii=False).encode("utf-8")


class RouteDecision(dict):
    """The routing outcome: which model, why, and what was detected (a dict, as upstream's)."""

    @property
    def model(self) -> str:
        return self["model"]

    @property
    def reason(self) -> str:
        return self["reason"]

    def __repr__(self):
        return "RouteDecision(model=%r, reason=%r)" % (self["model"], self["reason"])


class Router:
    """Sends each request to the Laya checkpoint best suited to it: upstream `laya.Router`.

    `models` names local checkpoints (`{name: path}`: a `.laya` file or a checkpoint directory)
    for the built-in names (`english`, `multilingual`, `typed-decisions`) or names of your own;
    `route` and `route_batch` need none, `predict` loads the chosen one on first use (at most
    `max_loaded` stay loaded, least recently used evicted). A built-in checkpoint with no local
    path is refused when it would be loaded (upstream downloads it). `agent_kwargs` go to
    `laya_runtime.load` (`threads`, `contexts`, `kernels`). Hooks are not supported (refused).
    """

    def __init__(self, models: Optional[Dict[str, Any]] = None, device: Optional[str] = None,
                 token: Optional[str] = None, revision: Optional[str] = None,
                 revisions: Optional[Dict[str, Optional[str]]] = None, max_loaded: int = 2,
                 default: str = "multilingual", auto_task_detection: bool = False,
                 standalone_repos: bool = False, preload: bool = False,
                 lang_guess: Optional[Any] = None, hooks=None, on_predict_start=None,
                 on_predict_end=None, hooks_raise: bool = True, hooks_concurrent: bool = True,
                 hooks_timeout: Optional[float] = None,
                 agent_kwargs: Optional[Dict[str, Any]] = None,
                 sha256_digests: Optional[Dict[str, Any]] = None):
        _no_hooks(hooks, on_predict_start, on_predict_end)
        if device not in (None, "cpu", "auto"):
            raise ValueError("device %r is not available in laya_runtime: it runs on the CPU (and "
                             "its HAL backends); use device='cpu'" % device)
        for what, given in (("revision", revision), ("revisions", revisions),
                            ("sha256_digests", sha256_digests)):
            if given:
                raise ValueError("%s=%r pins hub downloads, which laya_runtime does not make; "
                                 "leave it unset and pass local paths in models=" % (what, given))
        self.token = token
        self.device = device
        self.max_loaded = max(1, int(max_loaded))
        self.auto_task_detection = bool(auto_task_detection)
        self.standalone_repos = bool(standalone_repos)
        self.lang_guess = lang_guess
        self.agent_kwargs: Dict[str, Any] = dict(agent_kwargs or {})
        self._models: Dict[str, Any] = {}  # as given: name -> local source
        for name, source in (models or {}).items():
            self._add(name, source)
        self._default = default
        self._lock = threading.RLock()
        self._agents: Dict[str, Any] = {}
        self._order: List[str] = []  # least recently used first
        # Checks the options now (an unknown default, a bad name), as upstream's constructor does.
        self.default = self.resolve(default)
        self._local = {self.resolve(n): s for n, s in self._models.items()}
        if preload:
            self.preload()

    # ---- registry ---------------------------------------------------------------------------

    def _add(self, name: Any, source: Any) -> None:
        if not isinstance(name, str):
            raise ValueError("invalid checkpoint name %r: use lowercase letters, digits, '.', '_' "
                             "or '-', starting with a letter or digit" % (name,))
        if source is not None and not isinstance(source, (str, tuple, list)):
            raise TypeError("checkpoint source for %r must be a repo id, a local path or a (repo, "
                            "subfolder) pair, got %s" % (name, type(source).__name__))
        if isinstance(source, (tuple, list)):
            repo, sub = (list(source) + [None])[:2]
            source = os.path.join(repo, sub) if sub else repo
        if isinstance(source, str) and source.startswith("~"):
            source = os.path.expanduser(source)
        self._models[name] = source

    def _options(self, state: Any = None, use_hint: bool = False) -> Dict[str, Any]:
        hint = self.lang_guess
        if callable(hint):
            hint = hint(state) if use_hint else None
        return {"default": self._default, "auto_task_detection": self.auto_task_detection,
                "standalone_repos": self.standalone_repos,
                "models": {n: s if s is not None else "" for n, s in self._models.items()},
                "lang_guess": hint}

    def _route(self, options: Dict[str, Any], query: Dict[str, Any]) -> Dict[str, Any]:
        try:
            return json.loads(_capi.route(_dumps(options), _dumps(query)))
        except _capi.CallError as e:
            raise _refusal(e) from None

    def resolve(self, name: Any) -> str:
        """Canonical name of a checkpoint this Router knows (built-in, alias or registered)."""
        return self._route(self._options(), {"state": None, "model": name})["model"]

    def register(self, name: str, source: Any) -> str:
        """Adds (or re-points) a checkpoint under `name`: a local path. Returns its canonical name."""
        before = dict(self._models)
        try:
            self._add(name, source)
            key = self.resolve(name)
        except BaseException:
            self._models = before
            raise
        with self._lock:
            self._local[key] = self._models[name]
            self._drop(key)
        return key

    # ---- loading ----------------------------------------------------------------------------

    def load(self, name: str):
        """The Agent for `name`, loaded on first use from its local path."""
        key = self.resolve(name)
        with self._lock:
            if key in self._agents:
                self._order.remove(key)
                self._order.append(key)
                return self._agents[key]
            source = self._local.get(key)
            if not source:
                raise ValueError(
                    "checkpoint %r has no local path: laya_runtime does not download from the hub; "
                    "pass Router(models={%r: '/path/to/model.laya' or a checkpoint directory})"
                    % (key, key))
            agent = load(source, **self.agent_kwargs)
            self._agents[key] = agent
            self._order.append(key)
            while len(self._order) > self.max_loaded:
                self._agents.pop(self._order.pop(0), None)
            return agent

    def _drop(self, key: str) -> None:
        self._agents.pop(key, None)
        if key in self._order:
            self._order.remove(key)

    def attach(self, name: str, agent: Any):
        """Serves an already loaded Agent under `name` (registered on the spot if new)."""
        with self._lock:
            try:
                key = self.resolve(name)
            except ValueError:
                self._add(name, None)
                key = self.resolve(name)
            self._drop(key)
            self._agents[key] = agent
            self._order.append(key)
            self.max_loaded = max(self.max_loaded, len(self._agents))
        return agent

    def preload(self, names: Optional[List[str]] = None):
        """Loads checkpoints up front (every one with a local path by default)."""
        keys = [self.resolve(n) for n in names] if names is not None else \
            [k for k, s in self._local.items() if s]
        with self._lock:
            self.max_loaded = max(self.max_loaded, len(set(keys) | set(self._agents)))
        for k in keys:
            self.load(k)
        return self

    def unload(self, name: Optional[str] = None) -> None:
        """Frees one checkpoint, or all of them."""
        with self._lock:
            if name is None:
                self._agents.clear()
                self._order.clear()
            else:
                self._drop(self.resolve(name))

    @property
    def loaded(self) -> List[str]:
        with self._lock:
            return list(self._order)

    # ---- routing ----------------------------------------------------------------------------

    def route(self, state: Any, questions: Optional[Dict[str, Any]] = None,
              model: Optional[str] = None, task: Optional[str] = None,
              lang: Optional[str] = None, lang_guess: Optional[Any] = None, hooks=None,
              hooks_raise: Optional[bool] = None, hooks_timeout: Optional[float] = None, *,
              explain: bool = False) -> RouteDecision:
        """Which checkpoint answers, without loading anything: upstream `Router.route`."""
        _not_here("hooks", hooks)
        if callable(lang_guess):
            lang_guess = lang_guess(state)
        query = {"state": state, "explain": bool(explain)}
        for k, v in (("questions", questions), ("model", model), ("task", task), ("lang", lang),
                     ("lang_guess", lang_guess)):
            if v is not None:
                query[k] = v
        return RouteDecision(self._route(self._options(state, use_hint=True), query))

    def route_batch(self, requests: Any, hooks_timeout: Optional[float] = None, *, hooks=None,
                    hooks_raise: Optional[bool] = None,
                    explain: bool = False) -> List[RouteDecision]:
        """Routes each request ({"state", "questions", and route's overrides}), in order."""
        if not isinstance(requests, SequenceABC) or isinstance(requests, (str, bytes)):
            raise TypeError("requests must be a sequence of request dictionaries")
        out = []
        for i, r in enumerate(requests):
            if not isinstance(r, dict):
                raise TypeError("request %d must be a dict, got %s" % (i, type(r).__name__))
            if "state" not in r:
                raise ValueError("request %d is missing required key 'state'" % i)
            if r["state"] is None:
                raise TypeError("request %d 'state' must not be None; pass a string, dict, or "
                                "list" % i)
            if "questions" not in r:
                raise ValueError("request %d is missing required key 'questions'" % i)
            if not isinstance(r["questions"], dict):
                raise TypeError("request %d 'questions' must be a dict, got %s"
                                % (i, type(r["questions"]).__name__))
            out.append(self.route(r["state"], r["questions"], model=r.get("model"),
                                  task=r.get("task"), lang=r.get("lang"),
                                  lang_guess=r.get("lang_guess"), hooks=hooks, explain=explain))
        return out

    # ---- running ----------------------------------------------------------------------------

    def predict(self, state: Any, questions: Dict[str, Any], model: Optional[str] = None,
                task: Optional[str] = None, lang: Optional[str] = None,
                lang_guess: Optional[Any] = None, hooks=None, on_predict_start=None,
                on_predict_end=None, hooks_raise: Optional[bool] = None,
                hooks_timeout: Optional[float] = None, max_len: Optional[int] = None,
                head_max_len: Optional[int] = None,
                min_confidence: Optional[float] = None) -> Dict[str, Any]:
        """Route, then answer on the chosen checkpoint: its result plus a `routing` key."""
        _no_hooks(hooks, on_predict_start, on_predict_end)
        _check_state(state)
        _check_questions(questions)
        decision = self.route(state, questions, model=model, task=task, lang=lang,
                              lang_guess=lang_guess)
        agent = self.load(decision["model"])
        if lang is None and decision.get("detection") and decision["detection"].get("language"):
            lang = decision["detection"]["language"]
        result = agent.system_one(state, questions, lang=lang, max_len=max_len,
                                  head_max_len=head_max_len, min_confidence=min_confidence)
        result["routing"] = dict(decision)
        return result

    system_one = predict

    def predict_batch(self, requests: Any, batch_size: Optional[int] = None,
                      hooks_timeout: Optional[float] = None,
                      min_confidence: Optional[float] = None, sort_by_length: bool = False, *,
                      hooks=None, on_predict_start=None, on_predict_end=None,
                      hooks_raise: Optional[bool] = None,
                      diagnostics: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
        """Routes every request, then answers each checkpoint's requests together (those sharing
        questions and budgets in shared forward passes); results in the input order."""
        _no_hooks(hooks, on_predict_start, on_predict_end)
        decisions = self.route_batch(requests)
        if not decisions:
            return []
        groups: Dict[str, List[int]] = {}
        for i, d in enumerate(decisions):
            groups.setdefault(d["model"], []).append(i)
        results: List[Any] = [None] * len(decisions)
        report = ({"groups": 0, "reordered": 0, "smallest": None, "largest": None}
                  if sort_by_length and diagnostics is not None else None)
        for name, indices in groups.items():
            agent = self.load(name)
            # One pass per question schema (order-sensitive: options are positional) and budget.
            passes: Dict[Any, List[int]] = {}
            for i in indices:
                r = requests[i]
                budget = tuple((k, r[k]) for k in ("max_len", "head_max_len")
                               if r.get(k) is not None)
                key = (json.dumps(r["questions"], sort_keys=False, ensure_ascii=False,
                                  default=str), budget)
                passes.setdefault(key, []).append(i)
            for (_, budget), items in passes.items():
                out = agent.predict_batch([requests[i]["state"] for i in items],
                                          requests[items[0]]["questions"], batch_size=batch_size,
                                          min_confidence=min_confidence, **dict(budget))
                for i, res in zip(items, out):
                    res["routing"] = dict(decisions[i])
                    results[i] = res
                if report is not None:
                    n = len(items)
                    report["groups"] += 1
                    report["reordered"] += int(bool(batch_size and 1 < batch_size < n))
                    report["smallest"] = n if report["smallest"] is None else min(report["smallest"], n)
                    report["largest"] = n if report["largest"] is None else max(report["largest"], n)
        if report is not None:
            diagnostics["sort_by_length"] = report
        return results

    predict_many = predict_batch

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.unload()
        return False

    def __repr__(self):
        return "Router(loaded=%s, max_loaded=%d, default=%r)" % (self.loaded, self.max_loaded,
                                                                 self.default)


def predict_tournament(agent: Any, state: Any, questions: Dict[str, Dict[str, Any]],
                       group_size: int = DEFAULT_TOURNAMENT_GROUP,
                       **predict_kwargs: Any) -> Dict[str, Any]:
    """Upstream `laya.predict_tournament`: each choice over `group_size` labels narrowed by
    elimination rounds, then one final call; its result plus `tournament` metadata. `agent` is an
    Agent, a Router, or anything with `predict` / `system_one`; `predict_kwargs` go to every call."""
    if not isinstance(questions, dict):
        raise TypeError("questions must be a dict of question id -> definition")
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 2:
        raise ValueError("group_size must be an integer of at least 2, got %r" % (group_size,))
    fn = getattr(agent, "predict", None) or getattr(agent, "system_one", None)
    if fn is None:
        raise TypeError("agent must provide predict or system_one")
    try:
        t = _capi.Tournament(_dumps(questions), min(group_size, 2 ** 31 - 1))
        try:
            while not t.done():
                t.answer(_dumps(fn(state, json.loads(t.next()), **predict_kwargs)))
            return json.loads(t.result())
        finally:
            t.close()
    except _capi.CallError as e:
        raise _refusal(e) from None
