"""`laya-mcp-server`: upstream laya's MCP stdio server (its tools laya_status, laya_route,
laya_predict, laya_predict_batch, laya_route_batch, laya_shortlist, laya_tournament: names,
arguments and answers) on laya_runtime. Needs the `mcp` package (`pip install mcp`).

    laya-mcp-server                          # or: python -m laya_runtime.mcp.server

Environment (upstream's names and meanings, where this runtime has them):
  LAYA_EXTRA_MODELS  JSON {name: path}: the local checkpoints (.laya file or checkpoint
                     directory), e.g. {"english": "/m/en.laya", "multilingual": "/m/ml/"}.
                     Upstream downloads the built-in ones from the hub; here a checkpoint
                     without a path is a tool error naming it (routing needs none).
  LAYA_PRELOAD       "0" loads checkpoints on first use instead of at startup (default on)
  LAYA_MODELS        comma list to preload; default: english and multilingual, those that
                     have a path
  LAYA_THREADS       CPU threads per call (default: all)
  LAYA_AUTO_TASK     "1" lets a request's question ids route to typed-decisions
  LAYA_DEFAULT_MODEL the checkpoint a state with no language evidence goes to
  LAYA_DEVICE        "cpu" (or unset); any other device is a tool error
  LAYA_BASE_URL      remote mode is not available: a tool error says so
"""
from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError as McpToolError
except ImportError as e:  # the optional dependency
    raise ImportError("laya-mcp-server needs the MCP Python SDK (mcp>=2.2): pip install mcp") from e

from .. import __version__
from ..router import Router
from . import tools
from .tools import ToolError

server = MCPServer("laya", version=__version__)

_DEFAULT_PRELOAD = ("english", "multilingual")
_router: Any = None
_router_lock = threading.Lock()


def _env_bool(name: str, default: bool) -> bool:
    v = os.environ.get(name)
    if v is None or not v.strip():
        return default
    return v.strip().lower() in ("1", "true", "yes", "on")


def _env_device():
    return os.environ.get("LAYA_DEVICE", "").strip().lower() or None


def _local_models() -> dict:
    raw = os.environ.get("LAYA_EXTRA_MODELS", "").strip()
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError as e:
        raise ValueError("invalid LAYA_EXTRA_MODELS: not a JSON object (%s)" % e) from None
    if not isinstance(data, dict):
        raise ValueError("invalid LAYA_EXTRA_MODELS: a JSON object {name: path}, got %s"
                         % type(data).__name__)
    return {n: tuple(s) if isinstance(s, list) else s for n, s in data.items()}


class _ServerRouter(Router):
    """The Router, with a missing local checkpoint refused naming the server's variable."""

    def load(self, name: str):
        key = self.resolve(name)
        if key not in self._agents and not self._local.get(key):
            raise ValueError("checkpoint %r has no local path: laya_runtime does not download from "
                             "the hub; set LAYA_EXTRA_MODELS='{\"%s\": \"/path/to/model.laya or a "
                             "checkpoint directory\"}'" % (key, key))
        return super().load(name)


def _build_router() -> Router:
    if os.environ.get("LAYA_BASE_URL", "").strip():
        raise ValueError("LAYA_BASE_URL (answering from a remote laya-serve) is not available in "
                         "laya_runtime's MCP server; unset it to answer in this process")
    options: dict = {"models": _local_models(), "device": _env_device(),
                     "auto_task_detection": _env_bool("LAYA_AUTO_TASK", False)}
    default = os.environ.get("LAYA_DEFAULT_MODEL", "").strip()
    if default:
        options["default"] = default
    threads = os.environ.get("LAYA_THREADS", "").strip()
    if threads.isdigit() and int(threads) > 0:
        options["agent_kwargs"] = {"threads": int(threads)}
    try:
        router = _ServerRouter(**options)
    except ValueError as e:
        if default and "unknown model" in str(e):
            raise ValueError("invalid LAYA_DEFAULT_MODEL %r: %s" % (default, e)) from None
        raise
    if _env_bool("LAYA_PRELOAD", True):
        names = [m.strip() for m in os.environ.get("LAYA_MODELS", "").split(",") if m.strip()]
        if not names:
            local = {router.resolve(n) for n, s in options["models"].items() if s}
            names = [n for n in _DEFAULT_PRELOAD if n in local]
        router.preload(names)
    return router


def _ensure_router() -> Router:
    """The server's Router, built on first need; a failed build is retried on the next call."""
    global _router
    with _router_lock:
        if _router is None:
            try:
                _router = _build_router()
            except Exception as e:
                raise ToolError("internal_error", "router construction failed: %s" % e) from e
        return _router


def _dump(payload: Any) -> str:
    return json.dumps(payload, ensure_ascii=False, indent=2)


def _run(fn, **kwargs) -> str:
    """The tool's answer as JSON text; a refusal as an MCP tool error (isError) carrying
    {"error": code, "message": ...}."""
    try:
        return _dump(fn(_ensure_router(), **kwargs))
    except ToolError as e:
        raise McpToolError(_dump({"error": e.code, "message": e.message})) from e
    except Exception as e:
        raise McpToolError(_dump({"error": "internal_error",
                                  "message": "%s: %s" % (type(e).__name__, e)})) from e


_SCOPE = ("Structured decisions only: choice (a finite set of labels), score (an ordinal rubric), "
          "noul (a calibrated P(true)); one forward pass on this machine's CPU, no text generated. "
          "Not for open questions, summaries, rewriting or code. A choice of more than 20 options "
          "is better narrowed first (laya_shortlist or laya_tournament).")
_MODEL = (" model: null, omitted or 'auto' routes; any other value names a checkpoint (aliases and "
          "any casing accepted; routing.model reports the canonical name).")
_CONTROLS = (" task: route by the kind of work ('typed_decisions' or a checkpoint name); refused with "
             "a pinned model. lang: a language code ('de', 'en-US'): routes non-English text to "
             "the multilingual checkpoint and selects its per-language calibration. lang_guess: a "
             "soft language code that only routes (after lang, before detection); refused with a "
             "pinned model. max_len / head_max_len: positive token budgets for this call "
             "(head_max_len is the options-and-instructions budget). min_confidence: in [0, 1]; an "
             "answer below it is flagged low confidence. Unset keeps the checkpoint's defaults.")
_QUESTIONS = (" questions: {name: {type: 'choice'|'score'|'noul', instructions: str, criteria?: "
              "object (choice: label -> description) | array (score levels) | object (noul: "
              "'true'/'false' descriptions)}}; noul may set labels {false, true} (the option "
              "texts); any type may set option_order, a permutation of the option indices "
              "(answers stay keyed by the caller's labels).")


@server.tool(name="laya_status")
def laya_status_tool() -> str:
    """The checkpoints loaded and the device each runs on (the CPU: laya_runtime), whether the router is ready, and package versions."""
    try:
        return _dump(tools.laya_status(_router, _env_bool("LAYA_PRELOAD", True), __version__,
                                       _env_device()))
    except Exception as e:
        raise McpToolError(_dump({"error": "internal_error",
                                  "message": "%s: %s" % (type(e).__name__, e)})) from e


@server.tool(name="laya_route", description=(
    "Which checkpoint would answer (english, multilingual or typed-decisions) and why, without a "
    "forward pass or loading anything. With a laya_predict call's model/task/lang/lang_guess it "
    "gives the routing that call reports. Returns {model, repo, reason}. "
    + _SCOPE + _MODEL + _CONTROLS))
def laya_route_tool(state: dict, questions: dict, model: str | None = None,
                    task: str | None = None, lang: str | None = None,
                    lang_guess: str | None = None) -> str:
    return _run(tools.laya_route, state=state, questions=questions, model=model, task=task,
                lang=lang, lang_guess=lang_guess)


@server.tool(name="laya_predict", description=(
    "Answer typed questions about one state in one forward pass. Returns answers (with "
    "confidence), routing, latency_ms and the answering checkpoint's device. "
    + _QUESTIONS + " " + _SCOPE + _MODEL + _CONTROLS))
def laya_predict_tool(state: dict, questions: dict, model: str | None = None,
                      task: str | None = None, lang: str | None = None,
                      lang_guess: str | None = None, max_len: int | None = None,
                      head_max_len: int | None = None,
                      min_confidence: float | None = None) -> str:
    return _run(tools.laya_predict, state=state, questions=questions, model=model, task=task,
                lang=lang, lang_guess=lang_guess, max_len=max_len, head_max_len=head_max_len,
                min_confidence=min_confidence)


@server.tool(name="laya_predict_batch", description=(
    "Answer many requests in one call: requests is a non-empty array of "
    + tools.batch_item_key_doc() + " (questions as in laya_predict). Requests are routed, "
    "grouped by checkpoint, and those with the same questions and budgets share forward passes. "
    "max_len / head_max_len are per request. batch_size: rows per forward pass (0: no cap). "
    "hooks_timeout: accepted and checked; this runtime runs no hooks. Returns requests (answers, "
    "routing, device) in input order, model_counts and latencies. " + _SCOPE))
def laya_predict_batch_tool(requests: list, batch_size: int = 0,
                            hooks_timeout: float | None = 0,
                            min_confidence: float | None = None,
                            sort_by_length: bool = False) -> str:
    # 0 is "unset" (clients send defaults); a boolean is left for the check to refuse.
    if not isinstance(hooks_timeout, bool) and hooks_timeout == 0:
        hooks_timeout = None
    if not isinstance(batch_size, bool) and batch_size == 0:
        batch_size = None
    return _run(tools.laya_predict_batch, requests=requests, batch_size=batch_size,
                hooks_timeout=hooks_timeout, min_confidence=min_confidence,
                sort_by_length=sort_by_length)


@server.tool(name="laya_route_batch", description=(
    "Which checkpoint would answer each request, without a forward pass or loading anything: "
    "requests is a non-empty array of " + tools.batch_item_key_doc(omit=("max_len", "head_max_len"))
    + ". Returns decisions ({model, repo, reason} per request, in input order) and model_counts. "
    "hooks_timeout: accepted and checked; this runtime runs no hooks. " + _SCOPE))
def laya_route_batch_tool(requests: list, hooks_timeout: float = 0) -> str:
    if not isinstance(hooks_timeout, bool) and hooks_timeout == 0:
        hooks_timeout = None
    return _run(tools.laya_route_batch, requests=requests, hooks_timeout=hooks_timeout)


@server.tool(name="laya_shortlist", description=(
    "Narrow each many-option choice question to its k options most similar to the state (the "
    "answering checkpoint's own embeddings), then answer in one forward pass. Returns answers, "
    "routing, shortlist (per question: kept labels, scores, k, n, passthrough), latency_ms, "
    "device. A narrowed question's option_order is dropped and named under "
    "option_order_dropped with its n and kept counts. " + _SCOPE + _MODEL + _CONTROLS))
def laya_shortlist_tool(state: dict, questions: dict, model: str | None = None, k: int = 20,
                        task: str | None = None, lang: str | None = None,
                        lang_guess: str | None = None, max_len: int | None = None,
                        head_max_len: int | None = None,
                        min_confidence: float | None = None) -> str:
    return _run(tools.laya_shortlist, state=state, questions=questions, model=model, k=k,
                task=task, lang=lang, lang_guess=lang_guess, max_len=max_len,
                head_max_len=head_max_len, min_confidence=min_confidence)


@server.tool(name="laya_tournament", description=(
    "Answer large choice questions by elimination rounds (no embeddings): options in groups of "
    "group_size (an integer of at least 2, default 16), all groups of a round in one forward "
    "pass, winners advancing until they fit one group; then one final pass answers the whole "
    "request. Small choices and other questions pass through. Returns answers, routing, "
    "latency_ms, device and tournament (per choice: finalist labels, n, rounds); probabilities "
    "are over the finalists. A narrowed question's option_order is dropped and named under "
    "option_order_dropped. " + _SCOPE + _MODEL + _CONTROLS))
def laya_tournament_tool(state: dict, questions: dict, model: str | None = None,
                         group_size: int = 16, task: str | None = None,
                         lang: str | None = None, lang_guess: str | None = None,
                         max_len: int | None = None, head_max_len: int | None = None,
                         min_confidence: float | None = None) -> str:
    return _run(tools.laya_tournament, state=state, questions=questions, model=model,
                group_size=group_size, task=task, lang=lang, lang_guess=lang_guess,
                max_len=max_len, head_max_len=head_max_len, min_confidence=min_confidence)


def main() -> None:
    if _env_bool("LAYA_PRELOAD", True):
        try:
            _ensure_router()
        except ToolError as e:
            print("[laya-mcp] preload failed (will retry on demand): %s" % e.message,
                  file=sys.stderr)
    server.run()


if __name__ == "__main__":
    main()
