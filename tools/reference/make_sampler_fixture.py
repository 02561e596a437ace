#!/usr/bin/env python3
"""The distributions runtime/sampler.h specifies, computed with numpy (float64), for
tests/runtime/test_sampler.cpp.

  make_sampler_fixture.py --out tests/fixtures/decoder/sampler_cases.json

Each case: float32 logits (some -inf / NaN), an optional allowed-id list, temperature, top_k, top_p,
and `p`, the probability of every id:
  z = float32(logit) / float32(temperature) (float32 division, as the sampler divides), candidates the
  allowed ids with a finite logit; top_k keeps the k largest z (ties: lower id first, a stable sort);
  p = softmax(z) in float64 over the kept ones; top_p < 1 keeps the shortest prefix, in decreasing z
  (ties: lower id first), whose cumulative p reaches top_p; p is renormalized over what is kept.
Cases whose top-p cut lies within 1e-9 of a cumulative sum are redrawn (the cut would depend on
rounding). Deterministic (numpy's PCG64 with fixed seeds): reruns write the same bytes.
"""
import argparse
import json

import numpy as np


def distribution(logits, allowed, t, k, top_p):
    n = len(logits)
    z = (logits / np.float32(t)).astype(np.float32)
    ids = np.array([i for i in range(n) if allowed[i] and np.isfinite(logits[i])], dtype=np.int64)
    order = ids[np.argsort(-z[ids].astype(np.float64), kind="stable")]
    if k > 0 and k < len(order):
        order = order[:k]
    zk = z[order].astype(np.float64)
    e = np.exp(zk - zk.max())
    p = e / e.sum()
    if top_p < 1.0:
        c = np.cumsum(p)
        keep = int(np.searchsorted(c, np.float64(np.float32(top_p)), side="left")) + 1
        keep = min(keep, len(order))
        near = np.abs(c - np.float64(np.float32(top_p)))
        if near.min() < 1e-9:
            return None
        order = order[:keep]
        p = p[:keep] / p[:keep].sum()
    out = np.zeros(n)
    out[order] = p
    return out


def f32_list(a):
    return [float(x) if np.isfinite(x) else ("nan" if np.isnan(x) else ("inf" if x > 0 else "-inf"))
            for x in a]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rng = np.random.default_rng(20261130)
    configs = [
        # n, temperature, top_k, top_p, masked, scale
        (24, 1.0, 0, 1.0, False, 2.0),
        (24, 0.5, 0, 1.0, False, 2.0),
        (24, 2.0, 5, 1.0, False, 2.0),
        (24, 1.0, 0, 0.8, False, 2.0),
        (24, 0.8, 8, 0.9, False, 2.0),
        (24, 1.0, 0, 1.0, True, 2.0),
        (24, 1.5, 3, 0.7, True, 2.0),
        (40, 0.7, 0, 0.95, True, 3.0),
        (130, 1.0, 20, 1.0, True, 1.0),
        (130, 1.3, 0, 0.6, False, 1.0),
        # top-p over a flat distribution: the kept prefix is longer than 64 (the sampler's first
        # sorted block), so its growth is exercised.
        (600, 1.0, 0, 0.5, False, 0.05),
        (600, 0.9, 300, 0.9, True, 0.05),
    ]
    cases = []
    for n, t, k, top_p, masked, scale in configs:
        while True:
            logits = (rng.standard_normal(n) * scale).astype(np.float32)
            # A few non-finite logits: never candidates.
            logits[rng.integers(0, n)] = -np.inf
            logits[rng.integers(0, n)] = np.nan
            # Exact ties, to pin the tie rule.
            logits[rng.integers(0, n)] = logits[rng.integers(0, n)]
            allowed = np.ones(n, dtype=bool)
            if masked:
                allowed = rng.random(n) < 0.5
            p = distribution(logits, allowed, t, k, top_p)
            if p is not None:
                break
        case = {"temperature": t, "top_k": k, "top_p": top_p, "logits": f32_list(logits), "p": [float(x) for x in p]}
        if masked:
            case["allowed"] = [int(i) for i in np.nonzero(allowed)[0]]
        cases.append(case)
    with open(args.out, "w") as f:
        json.dump({"what": "runtime/sampler.h distributions, numpy float64", "numpy": np.__version__,
                   "cases": cases}, f, separators=(",", ":"))
        f.write("\n")
    print("%d cases -> %s" % (len(cases), args.out))


if __name__ == "__main__":
    main()
