#!/usr/bin/env python3
"""Run the upstream SDK's own tests (laya 0.4.15 sdist) against laya_runtime by the import switch.

    # once: the sdist and a venv WITHOUT torch (upstream's non-torch deps + its test runner)
    /work/refvenv/bin/pip download --no-deps --no-binary :all: laya==0.4.15 -d /tmp/laya-sdist
    python3 -m venv /tmp/sdkvenv && /tmp/sdkvenv/bin/pip install pytest pytest-timeout numpy mcp
    # then (build/ has liblaya.so and laya-convert; ~1 min)
    tools/reference/run_sdk_tests.py --sdist /tmp/laya-sdist/laya-0.4.15.tar.gz \
        --python /tmp/sdkvenv/bin/python [--build build] [--json out.json] [-v]

What it does, without changing a byte of upstream's files:
  - unpacks the sdist into a temp dir WITHOUT its `laya/` package, so nothing of upstream's code
    can be imported (and the venv is refused if it can import torch): a pass is laya_runtime's;
  - puts a `laya` switch package first on PYTHONPATH: `import laya` is `laya_runtime`, and
    `laya.X` is `laya_runtime.X` where that module exists (else ModuleNotFoundError);
  - selects the test files that call predict / predict_batch / predict_many / Router / decide /
    system_one / predict_shortlist / predict_tournament (a regex over their text), runs the
    pytest-style ones with pytest (one unit per test) and the script-style ones (upstream runs
    them as `python tests/X.py`, exit status 0 = pass) as scripts (one unit per file);
  - points the checkpoints upstream's tests take from outside at tests/fixtures/laya-tiny-modernbert
    (LAYA_TEST_MODEL; test_local_e2e.py's model root; LAYA_EXTRA_MODELS for the MCP server);
  - counts pass / fail / error / skip and gives each failure a reason (REASONS below, first match
    of the failure text; then the hand classification in BY_TEST).
Prints a table per file and the counts; exit status 0 (it reports, it does not gate).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
TINY = os.path.join(REPO, "tests", "fixtures", "laya-tiny-modernbert")

SELECT = re.compile(r"\.predict\(|predict_batch|predict_many|Router\(|\.decide\(|decide_batch|"
                    r"system_one|predict_shortlist|predict_tournament")

# `import laya` -> laya_runtime; `laya.X` -> laya_runtime.X when it exists (one module object).
SWITCH = '''"""Import switch (tools/reference/run_sdk_tests.py): `laya` is laya_runtime."""
import importlib
import importlib.abc
import importlib.util
import sys

import laya_runtime


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if not name.startswith("laya."):
            return None
        try:
            if importlib.util.find_spec("laya_runtime." + name[5:]) is None:
                return None
        except ModuleNotFoundError:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        module = importlib.import_module("laya_runtime." + spec.name[5:])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = module.__spec__.loader_state   # the import system set the alias's

    def get_code(self, name):                            # python -m laya.X runs laya_runtime.X
        spec = importlib.util.find_spec("laya_runtime." + name[5:])
        return spec.loader.get_code(spec.name)


sys.meta_path.insert(0, _Alias())
sys.modules[__name__] = laya_runtime
'''

# (regex over the failure text, reason); first match wins.
NEEDS_TORCH = "needs torch / the HF stack (builds its checkpoint or tests the torch model)"
INTERNALS = "tests upstream's internals (a private name or module laya_runtime does not have)"
LACKS = "a feature laya_runtime lacks"
NOT_IN_SDIST = "reads a repository file the sdist does not ship"
HUB = "fake Agent patched into laya.agent / the hub: upstream's built-in checkpoints"
REASONS = [
    (r"No module named '(torch|onnx|onnxruntime|tokenizers|transformers|safetensors)'", NEEDS_TORCH),
    (r"No module named 'research'|FileNotFoundError: .*No such file or directory", NOT_IN_SDIST),
    (r"No module named 'laya\.(common|revisions|onnx_agent|lang|shortlist)'|cannot import name '_|"
     r"has no attribute '_|'Dummy\w*' object has no attribute", INTERNALS),
    (r"No module named 'laya\.[\w.]+'|cannot import name '\w+' from 'laya_runtime[\w.]*'|"
     r"module 'laya_runtime' has no attribute|does not support (hooks|on_predict_\w+)", LACKS),
    (r"has no local path: laya_runtime does not download", HUB),
]
# failures the text alone does not explain, classified by reading the test
BY_TEST = {
    "test_mcp_local_e2e.py::": "MCP e2e on the tiny checkpoint: stops at laya_decide (a tool laya_runtime "
                               "lacks, as laya_preset and laya_predict_long); fails tool_names (the same) "
                               "and predict_top_prob > 0.9 (needs real weights)",
    "test_system_one_lang.py::test_lang_temperatures_result_is_what_both_backends_store": INTERNALS,
}


def reason_of(test, text):
    for prefix, why in BY_TEST.items():
        if test.startswith(prefix):
            return why
    for pattern, why in REASONS:
        if re.search(pattern, text or ""):
            return why
    return "other: " + (text or "").strip().splitlines()[-1][:160] if text and text.strip() else "other"


def unpack(sdist, into):
    with tarfile.open(sdist) as tar:
        members = []
        for m in tar.getmembers():
            parts = m.name.split("/", 1)
            if len(parts) < 2 or parts[1] == "laya" or parts[1].startswith("laya/"):
                continue                        # upstream's package: never importable here
            m.name = parts[1]
            members.append(m)
        tar.extractall(into, members=members)


def run_pytest(py, src, rel, env, tmp):
    xml = os.path.join(tmp, os.path.basename(rel) + ".xml")
    p = subprocess.run([py, "-m", "pytest", rel, "-q", "-p", "no:cacheprovider", "--timeout", "120",
                        "--junitxml", xml], cwd=src, env=env, capture_output=True, text=True)
    units = []
    if os.path.exists(xml):
        for tc in ET.parse(xml).getroot().iter("testcase"):
            name = tc.get("name")
            if tc.get("classname", "").split(".")[-1] not in ("", os.path.basename(rel)[:-3]):
                name = tc.get("classname").split(".")[-1] + "::" + name
            outcome, text = "pass", ""
            for kind in ("failure", "error", "skipped"):
                el = tc.find(kind)
                if el is not None:
                    outcome = {"failure": "fail", "skipped": "skip"}.get(kind, "error")
                    text = (el.get("message") or "") + "\n" + (el.text or "")
                    break
            if outcome == "error" and "SystemExit: 0" in text:   # upstream's own skip at import
                outcome, text = "skip", "the module skips itself at import (sys.exit(0))"
            units.append((name, outcome, text))
    if not units:   # a module that exits at import (sys.exit) leaves no report
        out = p.stdout + p.stderr
        skip = re.search(r"^SKIP:.*$", out, re.M)
        units.append(("(file)", "skip" if skip else "error", skip.group(0) if skip else out[-2000:]))
    return units


def run_script(py, src, rel, env, args):
    p = subprocess.run([py, rel] + args, cwd=src, env=env, capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    skip = re.search(r"^SKIP:.*$", out, re.M)
    checks = "%d PASS / %d FAIL lines" % (len(re.findall(r"^\s*PASS\b", out, re.M)),
                                          len(re.findall(r"^\s*FAIL\b", out, re.M)))
    if p.returncode == 0:
        return [("(script: %s)" % checks, "skip" if skip else "pass", skip.group(0) if skip else "")]
    tb = re.findall(r"^\w*(?:Error|Exception)\b.*$", out, re.M)
    fails = re.findall(r"^\s*FAIL\b.*$", out, re.M)
    return [("(script: %s)" % checks, "error" if tb else "fail",
             tb[-1] if tb else "\n".join(fails[:3]) or out[-400:])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sdist", required=True)
    ap.add_argument("--python", required=True, help="a venv's python without torch, with pytest")
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--json")
    ap.add_argument("-v", action="store_true", help="every test, not only the non-passing ones")
    a = ap.parse_args()
    lib = os.path.join(a.build, "runtime", "capi", "liblaya.so")
    convert = os.path.join(a.build, "tools", "laya-convert")
    for f in (a.sdist, lib, convert):
        if not os.path.exists(f):
            sys.exit("missing: " + f)
    if subprocess.run([a.python, "-c", "import torch"], capture_output=True).returncode == 0:
        sys.exit(a.python + " can import torch: use a venv without it (a pass must be laya_runtime's)")

    tmp = tempfile.mkdtemp(prefix="laya-sdk-tests-")
    try:
        src = os.path.join(tmp, "src")
        unpack(a.sdist, src)
        os.makedirs(os.path.join(tmp, "switch", "laya"))
        with open(os.path.join(tmp, "switch", "laya", "__init__.py"), "w") as f:
            f.write(SWITCH)
        models = os.path.join(tmp, "models")          # test_local_e2e.py's model root
        os.makedirs(models)
        for name in ("laya", "laya-multilingual", "laya-typed-decisions"):
            os.symlink(TINY, os.path.join(models, name))
        env = dict(os.environ,
                   PYTHONPATH=os.path.join(tmp, "switch") + os.pathsep + os.path.join(REPO, "python"),
                   LAYA_LIBRARY=lib, LAYA_CONVERT=convert,
                   LAYA_RUNTIME_CACHE=os.path.join(tmp, "cache"),
                   LAYA_TEST_MODEL=TINY,
                   LAYA_EXTRA_MODELS=json.dumps({"english": TINY, "multilingual": TINY,
                                                 "typed-decisions": TINY}))
        env.pop("PYTHONHOME", None)
        check = subprocess.run([a.python, "-c", "import laya, laya.router; print(laya.__name__, "
                                "laya.router.Router is laya.Router)"], cwd=src, env=env,
                               capture_output=True, text=True)
        if check.stdout.split() != ["laya_runtime", "True"]:
            sys.exit("the switch does not work:\n" + check.stdout + check.stderr)

        tests = os.path.join(src, "tests")
        selected = []
        for name in sorted(os.listdir(tests)):
            if name.startswith("test_") and name.endswith(".py"):
                text = open(os.path.join(tests, name), encoding="utf-8").read()
                if SELECT.search(text):
                    selected.append((name, bool(re.search(r"^\s*def test_", text, re.M))))
        rows = []
        for name, is_pytest in selected:
            rel = os.path.join("tests", name)
            args = [models] if name == "test_local_e2e.py" else []
            units = run_pytest(a.python, src, rel, env, tmp) if is_pytest else \
                run_script(a.python, src, rel, env, args)
            for test, outcome, text in units:
                why = "" if outcome == "pass" else \
                    ("skipped: " + text.strip().splitlines()[0][:120] if outcome == "skip" and text.strip()
                     else reason_of(name + "::" + test, text))
                rows.append({"file": name, "test": test, "outcome": outcome, "reason": why,
                             "style": "pytest" if is_pytest else "script",
                             "text": text.strip()[-600:]})
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    counts = {k: sum(r["outcome"] == k for r in rows) for k in ("pass", "fail", "error", "skip")}
    print("%d test files selected of the sdist's; %d units (pytest tests + script files)"
          % (len(selected), len(rows)))
    width = max(len(r["file"]) for r in rows)
    for name, _ in selected:
        mine = [r for r in rows if r["file"] == name]
        c = {k: sum(r["outcome"] == k for r in mine) for k in counts}
        print("%-*s  %s" % (width, name, "  ".join("%s %d" % (k, c[k]) for k in counts if c[k])))
        for r in mine:
            if a.v or r["outcome"] != "pass":
                print("    %-5s %s  [%s]" % (r["outcome"], r["test"][:70], r["reason"]))
    print("\nby reason (not passing):")
    by = {}
    for r in rows:
        if r["outcome"] != "pass":
            by.setdefault(r["reason"].split(":")[0] if r["outcome"] == "skip" else r["reason"], []).append(r)
    for why, rs in sorted(by.items(), key=lambda kv: -len(kv[1])):
        print("  %4d  %s" % (len(rs), why))
    print("\n%d of %d pass (fail %d, error %d, skip %d)"
          % (counts["pass"], len(rows), counts["fail"], counts["error"], counts["skip"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"counts": counts, "units": rows}, f, indent=1)


if __name__ == "__main__":
    main()
