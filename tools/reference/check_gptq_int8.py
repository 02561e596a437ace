#!/usr/bin/env python3
"""GPTQ-style calibrated rounding into the runtime's int8 format (fixed per-row scale amax/127),
a diagnosis for docs/precision.md: does calibration data bring `--dtype int8` to issue 7's bars?

Eval: the 326 recorded rows / forwards of the trained checkpoint's precision-cases.json (fp32
reference logits recorded there), replayed exactly like make_precision_cases.py's w_int8 diagnosis
(upstream's fp32 forward with the matrices' values replaced). Calibration:
make_trained_checkpoint.request() with a fresh seed (disjoint from requests.json, checked), or
make_precision_cases.make_case (CAL_GEN=random). Variants: RTN per row (the converter's), GPTQ
(H = X^T X from the fp32 model or sequentially from the quantized one; dampening 0.01 / 0.1; with
and without act-order), and a per-row scale search minimizing the activation-weighted error.

    OMP_NUM_THREADS=1 CAL_N=200 CAL_SEED=424242 /work/refvenv/bin/python \
        tools/reference/check_gptq_int8.py [CHECKPOINT] [OUT.json]

About 5.5 minutes on one core (30 s with ONLY=fp32-H, the variants with H from the fp32 model).
Prints one line per variant; OUT.json (default: none) gets the table.
"""
import copy
import json
import os
import random
import sys
import time
import warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)
import make_precision_cases as mpc  # noqa: E402
import make_trained_checkpoint as mtc  # noqa: E402
import run_laya_cases  # noqa: E402

CKPT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "fixtures", "laya-trained-modernbert")
OUT = sys.argv[2] if len(sys.argv) > 2 else None
CAL_SEED = int(os.environ.get("CAL_SEED", "424242"))
CAL_N = int(os.environ.get("CAL_N", "200"))
CAL_GEN = os.environ.get("CAL_GEN", "task")  # task: make_trained_checkpoint.request; random: mpc.make_case
KEYS = ("input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype")
T0 = time.time()


def log(*a):
    print("[%6.1fs]" % (time.time() - T0), *a, flush=True)


# ------------------------------------------------------------------------------ setup
torch.manual_seed(0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import laya
    agent = laya.load(CKPT, device="cpu")
base = agent.model.eval()
tok = agent.tok
doc = json.load(open(os.path.join(CKPT, "precision-cases.json")))

# eval batches, as make_precision_cases.py replays them
EVAL = []
eval_ids = set()
for rows, fw in mpc.recorded_forwards(doc["cases"]):
    b = mpc.batch_arrays(rows, fw, tok.pad_token_id)
    EVAL.append((rows, fw, {k: torch.from_numpy(b[k]) for k in KEYS}))
    for r in rows:
        eval_ids.add(tuple(r["input_ids"]))
log("eval: %d forwards, %d rows" % (len(EVAL), sum(len(e[0]) for e in EVAL)))


def evaluate(model):
    agree = n = 0
    dpt = 0.0
    per = []
    for rows, fw, b in EVAL:
        with torch.no_grad():
            lg, act = model(*(b[k] for k in KEYS))
        lg = [[run_laya_cases.f32(v) for v in r] for r in lg.float()]
        for i, r in enumerate(rows):
            k = len(r["markers"])
            a, d = mpc.compare_tempered(agent, r, lg[i][:k], fw["logits"][i][:k])
            n += 1
            agree += a
            per.append(d)
            dpt = max(dpt, d)
    return agree, n, dpt, np.array(per)


# ------------------------------------------------------------------------------ calibration data
eval_reqs = {json.dumps([c["args"]["state"], c["args"]["questions"]], sort_keys=True) for c in doc["cases"]}
rec = run_laya_cases.Recorder(agent, fp64=False)
rng = random.Random(CAL_SEED)
CAL, n_req, n_skip, seed = [], 0, 0, CAL_SEED
while n_req < CAL_N:
    if CAL_GEN == "task":
        r = mtc.request(rng)
        state, qs = r["state"], r["questions"]
    else:
        c = mpc.make_case(seed)
        seed += 1
        state, qs = c["args"]["state"], c["args"]["questions"]
    if json.dumps([state, qs], sort_keys=True) in eval_reqs:
        n_skip += 1
        continue
    rec.reset()
    try:
        with rec:
            agent.predict(state, qs)
    except ValueError:
        n_skip += 1
        continue
    if any(tuple(r["input_ids"]) in eval_ids for r in rec.rows):
        n_skip += 1
        continue
    r0 = 0
    for fw in rec.forwards:
        rows = rec.rows[r0:r0 + fw["rows"]]
        r0 += fw["rows"]
        b = mpc.batch_arrays(rows, fw, tok.pad_token_id)
        CAL.append({k: torch.from_numpy(b[k]) for k in KEYS})
    n_req += 1
n_cal_rows = sum(int(b["input_ids"].shape[0]) for b in CAL)
n_cal_tok = sum(int(b["attention_mask"].sum()) for b in CAL)
log("calibration: gen=%s seed=%d, %d requests (%d skipped), %d question rows, %d encoder tokens"
    % (CAL_GEN, CAL_SEED, n_req, n_skip, n_cal_rows, n_cal_tok))


# ------------------------------------------------------------------------------ matrices
NAMES = mpc.rounded_matrix_names(base)
# forward order
ORDER = []
for l in range(len(base.encoder.layers)):
    ORDER += ["encoder.layers.%d.%s.weight" % (l, s) for s in ("attn.Wqkv", "attn.Wo", "mlp.Wi", "mlp.Wo")]
for l in range(len(base.head.layers)):
    ORDER += ["head.layers.%d.%s" % (l, s) for s in ("self_attn.in_proj_weight", "self_attn.out_proj.weight",
                                                      "linear1.weight", "linear2.weight")]
ORDER += ["scorer.1.weight", "scorer.3.weight", "act_head.0.weight", "act_head.2.weight"]
assert sorted(ORDER) == sorted(NAMES), (sorted(ORDER), sorted(NAMES))


def module_for(model, name):
    """(module whose forward input is the matrix's input, row-mask kind)."""
    mod_name = name.rsplit(".", 1)[0]
    if name.endswith("in_proj_weight"):
        mod_name = name[:-len(".in_proj_weight")]
    m = model.get_submodule(mod_name)
    kind = "tok" if name.startswith(("encoder", "head")) else "marker" if name.startswith("scorer") else "all"
    return m, kind


def collect_H(model, names):
    """H = X^T X (float64) for each named matrix, over the calibration set, real rows only."""
    H = {n: None for n in names}
    cur = {}
    hooks = []
    for n in names:
        m, kind = module_for(model, n)

        def hook(mod, args, n=n, kind=kind):
            x = args[0].detach().double()
            if kind == "tok":
                mask = cur["attention_mask"].bool()
                if x.dim() == 3 and x.shape[:2] == mask.shape:
                    x = x[mask]
                elif x.dim() == 3 and x.shape[:2] == mask.T.shape:  # (T, B, E)
                    x = x[mask.T]
                elif x.dim() == 2 and x.shape[0] == int(mask.sum()):
                    pass
                else:
                    raise RuntimeError("unexpected shape %s for %s" % (tuple(x.shape), n))
            elif kind == "marker":
                x = x[cur["marker_mask"]]
            x = x.reshape(-1, x.shape[-1])
            h = x.T @ x
            H[n] = h if H[n] is None else H[n] + h
        hooks.append(m.register_forward_pre_hook(hook))
    prev = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        for b in CAL:
            cur.update(b)
            with torch.no_grad():
                model(*(b[k] for k in KEYS))
    finally:
        torch.backends.mha.set_fastpath_enabled(prev)
        for h in hooks:
            h.remove()
    for n in names:
        if H[n] is None:
            raise RuntimeError("no input captured for " + n)
    return H


def row_scale(W):
    s = W.abs().amax(dim=1, keepdim=True) / 127
    s[s == 0] = 1
    return s


def gptq(W, H, damp, actorder):
    """Per-row fixed scale s = amax(|W_row|)/127 of the ORIGINAL W; GPTQ column sweep."""
    W0 = W.double()
    s = row_scale(W0)
    W = W0.clone()
    H = H.clone()
    dead = torch.diag(H) == 0
    H[dead, dead] = 1
    W[:, dead] = 0  # (as upstream GPTQ; none expected here)
    H += damp * torch.mean(torch.diag(H)) * torch.eye(H.shape[0], dtype=H.dtype)
    perm = torch.argsort(torch.diag(H), descending=True) if actorder else torch.arange(H.shape[0])
    W = W[:, perm]
    H = H[perm][:, perm]
    Hinv = torch.cholesky_inverse(torch.linalg.cholesky(H))
    U = torch.linalg.cholesky(Hinv, upper=True)
    Q = torch.zeros_like(W)
    for i in range(W.shape[1]):
        w = W[:, i]
        q = torch.round(w / s[:, 0]).clamp(-127, 127) * s[:, 0]
        Q[:, i] = q
        err = (w - q) / U[i, i]
        W[:, i + 1:] -= err[:, None] * U[i, i + 1:][None, :]
    inv = torch.argsort(perm)
    Q = Q[:, inv]
    if dead.any():
        Q[:, dead] = 0
    return Q, s


def scale_search(W, H, grid):
    """Per-row scale s = alpha * amax/127, alpha on grid, minimizing (w - s q)^T H (w - s q)."""
    W = W.double()
    s0 = row_scale(W)
    best = None
    best_err = None
    for a in grid:
        s = s0 * a
        Q = torch.round(W / s).clamp(-127, 127) * s
        E = W - Q
        err = ((E @ H) * E).sum(1)
        if best is None:
            best, best_err, best_s = Q, err, s.clone()
        else:
            better = err < best_err
            best[better] = Q[better]
            best_err = torch.where(better, err, best_err)
            best_s[better] = s[better]
    return best, best_s


_H_FP32 = {}


def quantized_model(method, sequential, **kw):
    """A copy of the model with every matrix of ORDER rounded by `method` ("gptq", "scale"); H from
    the fp32 model (collected once) or, `sequential`, from the copy with the earlier ones rounded."""
    m = copy.deepcopy(base).eval()
    params = dict(m.named_parameters())
    if not sequential and not _H_FP32:
        _H_FP32.update(collect_H(base, ORDER))
    with torch.no_grad():
        for name in ORDER:
            p = params[name]
            h = collect_H(m, [name])[name] if sequential else _H_FP32[name]
            if method == "gptq":
                q = gptq(p.data, h, kw["damp"], kw["actorder"])
            elif method == "scale":
                q = scale_search(p.data, h, kw["grid"])
            q, s = q
            s32 = s.float()
            ints = torch.round(q / s)
            assert (ints - q / s).abs().max() < 1e-6 and ints.abs().max() <= 127, name
            # stored format: int8 ints, one f32 scale per row; dequantized in f32
            p.copy_(ints.float() * s32)
    return m


def report(label, m, rows_out):
    a, n, dpt, per = evaluate(m)
    ok = a / n >= 0.995 and dpt <= 0.01
    rows_out.append((label, a, n, dpt, ok, float(per.mean()), int((per > 0.01).sum())))
    log("%-45s %d/%d (%.2f%%)  max tempered |dp| %.4g  [mean %.2e, rows>0.01: %d] %s"
        % (label, a, n, 100 * a / n, dpt, per.mean(), (per > 0.01).sum(), "MEETS BOTH" if ok else ""))


def main():
    out = []
    log("matrices quantized (%d): %s" % (len(ORDER), ", ".join(ORDER)))
    a, n, d, _ = evaluate(base)
    log("fp32 replay vs recorded fp32: %d/%d, max tempered |dp| %.3g" % (a, n, d))
    report("RTN per row (the converter's rounding)", mpc.rounded_weights(base, "int8"), out)
    only = os.environ.get("ONLY")
    for seq in (False, True):
        for damp in (0.01, 0.1):
            for act in (False, True):
                lab = "GPTQ %s damp=%g actorder=%s" % ("sequential" if seq else "fp32-H", damp, act)
                if only and only not in lab:
                    continue
                report(lab, quantized_model("gptq", seq, damp=damp, actorder=act), out)
    grid = [round(x, 4) for x in np.arange(0.50, 1.0001, 0.005)]
    for seq in ((False,) if os.environ.get("ONLY") else (False, True)):
        report("scale search %s alpha in [0.5,1]" % ("sequential" if seq else "fp32-H"),
               quantized_model("scale", seq, grid=grid), out)
    if OUT:
        cols = ("variant", "agree", "rows", "max_dp_tempered", "meets", "mean_row_dp_tempered",
                "rows_dp_gt_0.01")
        cal = {"gen": CAL_GEN, "seed": CAL_SEED, "requests": CAL_N, "rows": n_cal_rows,
               "tokens": n_cal_tok}
        with open(OUT, "w") as f:
            json.dump({"calibration": cal, "results": [dict(zip(cols, r)) for r in out]}, f,
                      indent=1)
    log("done")


if __name__ == "__main__":
    main()
