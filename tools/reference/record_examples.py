#!/usr/bin/env python3
"""Record what the upstream SDK answers for each request in examples/ on the README's model.

    record_examples.py [--checkpoint tests/fixtures/laya-tiny-modernbert] [--examples examples]

For every `examples/NAME.json` holding `state` and `questions`, writes `examples/NAME.sdk.json`: the
JSON `laya.load(checkpoint).predict(state=..., questions=...)` returns (laya 0.4.15), as the SDK
serializes it (`json.dumps`, one line). tests/tools/test_laya_decide.py checks that `laya-run decide`
prints exactly these bytes for the README's main command.
"""
import argparse
import glob
import json
import os
import warnings

import laya

ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
ap.add_argument("--checkpoint", default="tests/fixtures/laya-tiny-modernbert")
ap.add_argument("--examples", default="examples")
args = ap.parse_args()

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the random checkpoint's clamped temperatures
    agent = laya.load(args.checkpoint)
for path in sorted(glob.glob(os.path.join(args.examples, "*.json"))):
    if path.endswith(".sdk.json"):
        continue
    req = json.load(open(path, encoding="utf-8"))
    if "questions" not in req or "state" not in req:
        continue
    out = agent.predict(state=req["state"], questions=req["questions"])
    dst = path[: -len(".json")] + ".sdk.json"
    with open(dst, "w", encoding="utf-8") as f:
        f.write(json.dumps(out) + "\n")
    print("wrote", dst)
