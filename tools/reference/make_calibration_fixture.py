#!/usr/bin/env python3
"""Expected temperature fits, metrics and label targets for runtime/decisions/calibration.h, computed by
an independent minimiser (numpy, float64) and by the upstream SDK's label reader, for
tests/runtime/test_calibration.cpp.

  make_calibration_fixture.py --out tests/fixtures/laya-decisions/calibration.json

- `records`: synthetic labelled questions (float32 option logits, targets) over the three question
  types and several option counts: a ground-truth scale per bucket draws each label from
  softmax(z / T_true), so buckets want different temperatures; some score targets are soft (a
  fractional level). `fits` has, for every type with >= `min_type` records and every bucket with
  >= `min_bucket`, the T minimising the mean soft cross-entropy, found WITHOUT the C++ method
  (bisection on the slope): an exhaustive grid over log T on the search band [ln 0.5 - 10,
  ln 5 + 10] (4001 points), then ten zooms (401 points over +-2 steps around the best). `metrics`:
  mean NLL, accuracy and 10-bin ECE (upstream laya.common.ece_score, called here) at T = 1 and with
  the fitted temperatures clamped to [0.5, 5] and rounded to float32, as the runtime applies them.
- `edge`: record sets whose optimum is the band's end (labels always the top logit: T -> 0;
  always the bottom one: T -> inf) or undefined (constant rows: T = 1).
- `labels`: (question, label) pairs and the target laya.train.target_from_expected (laya 0.4.15)
  returns for them, or `null` where it raises.
Deterministic (numpy PCG64, fixed seed): reruns write the same bytes.
"""
import argparse
import json

import numpy as np
from laya.common import ece_score
from laya.train import target_from_expected, to_internal

TYPES = ["choice", "score", "noul"]
LO = float(np.log(0.5)) - 10.0
HI = float(np.log(5.0)) + 10.0


def bucket(t, k):
    size = "2" if k <= 2 else "3-5" if k <= 5 else "6-10" if k <= 10 else "11+"
    return "%s:%s" % (t, size)


def nll(recs, u):
    """Mean soft cross-entropy of records at T = exp(u), float64."""
    total = 0.0
    for r in recs:
        z = np.asarray(r["logits"], dtype=np.float64) / np.exp(u)
        m = z.max()
        lse = m + np.log(np.exp(z - m).sum())
        total += float(-(np.asarray(r["target"]) * (z - lse)).sum())
    return total / len(recs)


def grid_fit(recs):
    if all(max(r["logits"]) == min(r["logits"]) for r in recs):
        return 1.0
    lo, hi = LO, HI
    grid = np.linspace(lo, hi, 4001)
    for _ in range(11):
        vals = np.array([nll(recs, u) for u in grid])
        i = int(np.argmin(vals))
        step = grid[1] - grid[0]
        lo, hi = max(LO, grid[i] - 2 * step), min(HI, grid[i] + 2 * step)
        grid = np.linspace(lo, hi, 401)
    return float(np.exp(grid[int(np.argmin([nll(recs, u) for u in grid]))]))


def clamp(t):
    return min(5.0, max(0.5, t))


def metrics(recs, temps):
    """NLL, accuracy, ECE (10 bins) with temps(type, k) -> T."""
    conf, correct, total = [], [], 0.0
    for r in recs:
        z = np.asarray(r["logits"], dtype=np.float64)
        t = np.asarray(r["target"])
        T = temps(r["type"], len(z))
        s = z / T
        lp = s - (s.max() + np.log(np.exp(s - s.max()).sum()))
        total += float(-(t * lp).sum())
        conf.append(float(np.exp(lp.max())))
        correct.append(float(int(np.argmax(lp)) == int(np.argmax(t))))
    return {"nll": total / len(recs), "accuracy": float(np.mean(correct)),
            "ece": ece_score(np.asarray(conf), np.asarray(correct), bins=10)}


def draw_records(rng):
    # (type, k, count, T_true, logit scale)
    plan = [("choice", 2, 40, 2.0, 3.0), ("choice", 4, 60, 0.7, 2.0), ("choice", 8, 35, 1.6, 2.5),
            ("choice", 12, 12, 1.0, 2.0), ("score", 3, 45, 2.5, 3.0), ("score", 5, 20, 1.3, 2.0),
            ("noul", 2, 50, 0.8, 2.5)]
    recs = []
    for t, k, count, t_true, scale in plan:
        for _ in range(count):
            z = (rng.standard_normal(k) * scale).astype(np.float32)
            p = np.exp(z / t_true - (z / t_true).max())
            p /= p.sum()
            y = int(rng.choice(k, p=p))
            target = [0.0] * k
            if t == "score" and y + 1 < k and rng.random() < 0.3:
                frac = float(rng.choice([0.25, 0.5, 0.75]))
                target[y], target[y + 1] = 1.0 - frac, frac
            else:
                target[y] = 1.0
            recs.append({"type": t, "logits": [float(v) for v in z], "target": target})
    order = rng.permutation(len(recs))
    return [recs[int(i)] for i in order]


def edge_cases(rng):
    right, wrong = [], []
    for _ in range(12):
        z = (rng.standard_normal(4) * 2).astype(np.float32)
        right.append({"type": "choice", "logits": [float(v) for v in z],
                      "target": [1.0 if i == int(np.argmax(z)) else 0.0 for i in range(4)]})
        wrong.append({"type": "choice", "logits": [float(v) for v in z],
                      "target": [1.0 if i == int(np.argmin(z)) else 0.0 for i in range(4)]})
    flat = [{"type": "noul", "logits": [0.5, 0.5], "target": [0.0, 1.0]} for _ in range(12)]
    return [{"name": n, "records": r, "fitted": grid_fit(r)}
            for n, r in (("always_top", right), ("always_bottom", wrong), ("constant", flat))]


def label_cases():
    qs = {
        "c_dict": {"type": "choice", "instructions": "Which?",
                   "criteria": {"on": "turn it on", "off": "keep it off", "1": "numeric key"}},
        "c_list": {"type": "choice", "instructions": "Which?", "criteria": [1, 2.5, False, "x"]},
        "s": {"type": "score", "instructions": "How much?", "criteria": ["none", "some", "a lot", "all"]},
        "n": {"type": "noul", "instructions": "Is it?"},
    }
    labels = {
        "c_dict": ["on", "off", "1", 1, 1.0, "ON", "turn it on", None, True],
        "c_list": [1, 1.0, "1", 2.5, "2.5", True, False, 0, "False", "false", "x", "y", 3],
        "s": [0, 1, 2, 3, "0", "2", 1.25, 2.5, "1.5", " 2 ", 3.0, 4, -1, "some", True, None, "a"],
        "n": [True, False, 1, 0, 1.0, "true", "FALSE", " yes ", "no", "1", "0", 2, "maybe", None],
    }
    out = []
    for qid, qdef in qs.items():
        q = to_internal(qid, qdef)
        for label in labels[qid]:
            try:
                target = [float(v) for v in target_from_expected(q, label)]
            except ValueError:
                target = None
            out.append({"question": {qid: qdef}, "label": label, "target": target})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(20261130)
    recs = draw_records(rng)
    min_type, min_bucket = 10, 30
    by_type, by_bucket = {}, {}
    for r in recs:
        by_type.setdefault(r["type"], []).append(r)
        by_bucket.setdefault(bucket(r["type"], len(r["logits"])), []).append(r)
    fits = {}
    for t in TYPES:
        if len(by_type.get(t, [])) >= min_type:
            fits[t] = grid_fit(by_type[t])
    for name in sorted(by_bucket):
        if len(by_bucket[name]) >= min_bucket:
            fits[name] = grid_fit(by_bucket[name])

    def fitted(t, k):
        v = fits.get(bucket(t, k), fits.get(t, 1.0))
        return float(np.float32(clamp(v)))

    out = {
        "min_type": min_type,
        "min_bucket": min_bucket,
        "records": recs,
        "counts": {**{t: len(v) for t, v in by_type.items()},
                   **{b: len(v) for b, v in by_bucket.items()}},
        "fits": fits,
        "metrics": {"before": metrics(recs, lambda t, k: 1.0), "after": metrics(recs, fitted)},
        "edge": edge_cases(rng),
        "labels": label_cases(),
    }
    with open(args.out, "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
