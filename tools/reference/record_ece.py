#!/usr/bin/env python3
"""Records upstream laya.ece_score on seeded inputs: tests/fixtures/python/ece_cases.json.

    /work/refvenv/bin/python tools/reference/record_ece.py tests/fixtures/python/ece_cases.json

Inputs include confidences on the bin edges (0, k/15, 1), where the bins' open / closed ends
matter.
"""
import json
import random
import sys

import numpy as np
from laya import __version__
from laya.common import ece_score

rng = random.Random(20261207)
cases = []
for i in range(60):
    n = rng.randint(1, 40)
    bins = rng.choice([1, 2, 5, 10, 15, 15, 15, 20])
    conf = [rng.choice([rng.random(), 0.0, 1.0, rng.randint(0, bins) / bins]) for _ in range(n)]
    correct = [rng.randint(0, 1) for _ in range(n)]
    cases.append({"conf": conf, "correct": correct, "bins": bins,
                  "ece": ece_score(np.array(conf), np.array(correct), bins)})
with open(sys.argv[1], "w") as f:
    json.dump({"generator": "tools/reference/record_ece.py", "laya": __version__, "cases": cases}, f)
    f.write("\n")
