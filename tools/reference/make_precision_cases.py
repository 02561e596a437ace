#!/usr/bin/env python3
"""Reduced-precision yardstick: >= 300 varied questions through the SDK, and the peers' own
reduced-precision forwards of the same batches.

    make_precision_cases.py --checkpoint DIR [--out DIR/precision-cases.json] [--questions 320]
                            [--seed 7] [--requests FILE] [--no-onnx]

Builds deterministic random requests (string, JSON and chat states; choice questions with 2..30
options, score questions with 3..7 levels, noul questions), or takes them from FILE (a JSON list
of {state, questions}: make_trained_checkpoint.py's held-out requests), runs them through upstream's
`Agent.predict` (fp32, CPU) and records every row and forward in the laya-cases/1 format of
run_laya_cases.py, so `laya-parity CHECKPOINT --cases FILE --dtype f32,bf16,int8` measures our
reduced-precision paths on them. Every recorded forward is then replayed through the peers:

  torch_bf16   the SDK itself with LAYA_CPU_AMP=bf16 (`Agent._infer`: torch.autocast on the CPU)
  ort_fp32     ONNX Runtime on export_laya_onnx.py's export of the same weights
  ort_int8     ONNX Runtime on its `quantize_dynamic` model (int8 weights per tensor, activations
               quantized per batch at run time: ORT's own dynamic scheme)

and two diagnoses (upstream's fp32 forward with only the matrices rounded, no activation rounding):

  w_bf16       every 2-D weight but the embedding tables rounded to bf16 (nearest even)
  w_int8       the same matrices symmetric int8 per output row (amax / 127, nearest even),
               dequantized: laya-convert --dtype int8's weights

and each forward gains `peers: {name: {logits, act_logits}}`. Printed (and stored under `summary`):
per peer, decision (argmax) agreement with the SDK's fp32 and the max |dp| over every question
row, untempered and with the checkpoint's temperatures; and the fp32 margins (top-1 minus top-2
probability) so near-ties show.
"""
import argparse
import json
import os
import random
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402
import run_laya_cases  # noqa: E402

WORDS = run_laya_cases.WORDS.split() + (
    "cancel upgrade plan server outage slow crash error screen battery warranty contract invoice "
    "meeting schedule travel hotel flight baggage insurance claim doctor appointment school grade "
    "weather storm road traffic parking fine tax form bank card fraud alert loan rent").split()
LABELS = ("billing support sales legal security finance travel health school housing weather "
          "shipping returns fraud hardware software network account privacy marketing research "
          "facilities payroll hiring training compliance audit design product operations").split()


def sentence(rng, n):
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + rng.choice([".", "!", "?"])


def make_state(rng):
    kind = rng.randrange(4)
    if kind == 0:
        return " ".join(sentence(rng, rng.randint(4, 12)) for _ in range(rng.randint(1, 6)))
    if kind == 1:
        return {"ticket": rng.randint(1, 99999), "status": rng.choice(WORDS),
                "total": round(rng.uniform(0, 500), 2), "note": sentence(rng, rng.randint(3, 9)),
                "tags": [rng.choice(WORDS) for _ in range(rng.randint(0, 4))]}
    if kind == 2:
        return [{"role": rng.choice(["user", "assistant"]), "content": sentence(rng, rng.randint(3, 10))}
                for _ in range(rng.randint(1, 4))]
    return sentence(rng, rng.randint(2, 6))


def make_question(rng):
    t = rng.choice(["choice", "choice", "score", "noul"])
    ins = sentence(rng, rng.randint(3, 8))
    if t == "noul":
        return {"type": "noul", "instructions": ins}
    if t == "score":
        n = rng.randint(3, 7)
        return {"type": "score", "instructions": ins,
                "criteria": [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3))) for _ in range(n)]}
    n = rng.choice([2, 2, 3, 4, 5, 6, 8, 11, 16])
    labels = rng.sample(LABELS, min(n, len(LABELS)))
    if rng.random() < 0.5:
        return {"type": "choice", "instructions": ins, "criteria": labels}
    return {"type": "choice", "instructions": ins,
            "criteria": {lab: " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for lab in labels}}


def make_case(seed):
    """One request (1..6 questions), a function of `seed` alone."""
    rng = random.Random(seed)
    qs = {"q%d" % i: make_question(rng) for i in range(rng.randint(1, 6))}
    return {"call": "predict", "args": {"state": make_state(rng), "questions": qs}}


def recorded_forwards(cases):
    """(rows, forward) for every recorded forward pass of the cases, its rows in order."""
    for case in cases:
        r0 = 0
        for fw in case["forwards"]:
            yield case["rows"][r0:r0 + fw["rows"]], fw
            r0 += fw["rows"]


def batch_arrays(rows, fw, pad_id, min_markers=1):
    import numpy as np
    L, K = fw["seq_len"], max(min_markers, fw["marker_width"])
    n = len(rows)
    ids = np.full((n, L), pad_id, dtype=np.int64)
    att = np.zeros((n, L), dtype=np.int64)
    mpos = np.zeros((n, K), dtype=np.int64)
    mmask = np.zeros((n, K), dtype=bool)
    for i, r in enumerate(rows):
        ids[i, :len(r["input_ids"])] = r["input_ids"]
        att[i, :len(r["input_ids"])] = 1
        mpos[i, :len(r["markers"])] = r["markers"]
        mmask[i, :len(r["markers"])] = True
    qtype = np.array([r["qtype"] for r in rows], dtype=np.int64)
    return {"input_ids": ids, "attention_mask": att, "marker_pos": mpos, "marker_mask": mmask, "qtype": qtype}


def rounded_matrix_names(model):
    """The parameters `--dtype bf16 | int8` rounds: the 2-D weights but the embedding tables."""
    return [name for name, p in model.named_parameters()
            if p.dim() == 2 and "tok_embeddings" not in name and not name.startswith("type_emb")]


def rounded_weights(model, how):
    """A copy of `model` whose matrices (rounded_matrix_names) are rounded."""
    import copy
    import torch
    m = copy.deepcopy(model).eval()
    names = set(rounded_matrix_names(m))
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name not in names:
                continue
            if how == "bf16":
                p.copy_(p.bfloat16().float())
            else:
                scale = p.abs().amax(dim=1, keepdim=True) / 127
                scale[scale == 0] = 1
                p.copy_(torch.round(p / scale).clamp(-127, 127) * scale)
    return m


def temperature(agent, qtype, k):
    from laya.common import QTYPES
    name = {v: kk for kk, v in QTYPES.items()}[qtype]
    size = "2" if k <= 2 else "3-5" if k <= 5 else "6-10" if k <= 10 else "11+"
    return agent.temperature_by_options.get("%s:%s" % (name, size), agent.temperature[qtype])


def compare_tempered(agent, row, got, ref):
    """(1 if the argmax of the option logits `got` is that of `ref`, else 0; max |dp| between their
    softmaxes at the row's temperature) for one recorded question row."""
    import numpy as np
    t = temperature(agent, row["qtype"], len(row["markers"]))
    return int(np.argmax(got) == np.argmax(ref)), float(np.abs(softmax(got, t) - softmax(ref, t)).max())


def softmax(x, t=1.0):
    import numpy as np
    z = np.asarray(x, dtype=np.float64) / t
    e = np.exp(z - z.max())
    return e / e.sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out")
    ap.add_argument("--questions", type=int, default=320)
    ap.add_argument("--seed", type=int, default=7, help="first request's seed (request i: seed + i)")
    ap.add_argument("--requests", help="JSON list of {state, questions} to run instead of random ones")
    ap.add_argument("--no-onnx", action="store_true", help="skip the ONNX Runtime peers")
    args = ap.parse_args()

    import numpy as np
    import torch
    import laya

    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = laya.load(args.checkpoint, device="cpu")
        os.environ["LAYA_CPU_AMP"] = "bf16"
        agent_bf16 = laya.load(args.checkpoint, device="cpu")
        del os.environ["LAYA_CPU_AMP"]
    if not agent_bf16.amp_enabled or agent_bf16.dtype != torch.bfloat16:
        raise SystemExit("LAYA_CPU_AMP=bf16 did not enable bf16 autocast")
    tok = agent.tok

    rec = run_laya_cases.Recorder(agent, fp64=False)
    given = None
    if args.requests:
        with open(args.requests, encoding="utf-8") as f:
            given = [{"call": "predict", "args": {"state": r["state"], "questions": r["questions"]}}
                     for r in json.load(f)]
    recorded, n_rows, seed = [], 0, args.seed
    while (n_rows < args.questions) if given is None else given:
        # requests the checkpoint's budget refuses are skipped
        case = dict(name="precision_%03d" % len(recorded), **(make_case(seed) if given is None else given.pop(0)))
        seed += 1
        rec.reset()
        try:
            with rec:
                res = agent.predict(case["args"]["state"], case["args"]["questions"])
        except ValueError:
            continue
        n_rows += len(rec.rows)
        if rec.n_checked != len(rec.rows):
            raise SystemExit("%s: %d rows built, %d ran" % (case["name"], len(rec.rows), rec.n_checked))
        recorded.append(dict(case, rows=rec.rows, forwards=rec.forwards,
                             result=run_laya_cases.jsonable(res)))

    peers = {"torch_bf16": None, "w_bf16": None, "w_int8": None}
    rounded = {"w_bf16": rounded_weights(agent.model, "bf16"), "w_int8": rounded_weights(agent.model, "int8")}
    sessions = {}
    if not args.no_onnx:
        import onnxruntime as ort
        import export_laya_onnx
        tmp = tempfile.mkdtemp(prefix="laya_precision_onnx_")
        f32_path, i8_path = os.path.join(tmp, "laya.onnx"), os.path.join(tmp, "laya.int8.onnx")
        export_laya_onnx.export(agent, f32_path)
        export_laya_onnx.quantize(f32_path, i8_path)
        so = ort.SessionOptions()
        so.intra_op_num_threads = max(1, min(2, os.cpu_count() or 1))
        for name, p in (("ort_fp32", f32_path), ("ort_int8", i8_path)):
            sessions[name] = ort.InferenceSession(p, sess_options=so, providers=["CPUExecutionProvider"])
            peers[name] = None

    stats = {name: {"agree": 0, "rows": 0, "dp": 0.0, "dpt": 0.0, "dact": 0.0} for name in peers}
    margins = []
    for rows, fw in recorded_forwards(recorded):
        fw["peers"] = {}
        b = batch_arrays(rows, fw, tok.pad_token_id)
        with torch.no_grad():
            lg, act = agent_bf16._infer({k: torch.from_numpy(v) for k, v in b.items()})
        fw["peers"]["torch_bf16"] = {"logits": [[reftools.f32(v) for v in r] for r in lg.float()],
                                     "act_logits": [[reftools.f32(v) for v in r] for r in act.float()]}
        for name, m in rounded.items():
            with torch.no_grad():
                lg, act = m(*(torch.from_numpy(b[k]) for k in
                              ("input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype")))
            fw["peers"][name] = {"logits": [[reftools.f32(v) for v in r] for r in lg.float()],
                                 "act_logits": [[reftools.f32(v) for v in r] for r in act.float()]}
        for name, sess in sessions.items():
            bo = batch_arrays(rows, fw, tok.pad_token_id, min_markers=2)  # the export takes top two
            lg, act = sess.run(["logits", "act_logits"], bo)
            fw["peers"][name] = {"logits": [[reftools.f32(v) for v in r[:fw["marker_width"]]] for r in lg],
                                 "act_logits": [[reftools.f32(v) for v in r] for r in act]}
        for i, r in enumerate(rows):
            k = len(r["markers"])
            ref = fw["logits"][i][:k]
            t = temperature(agent, r["qtype"], k)
            p, pt = softmax(ref), softmax(ref, t)
            srt = np.sort(pt)[::-1]
            margins.append(float(srt[0] - srt[1]) if k > 1 else 1.0)
            pa = softmax(fw["act_logits"][i])
            for name, peer in fw["peers"].items():
                s = stats[name]
                q = peer["logits"][i][:k]
                s["rows"] += 1
                s["agree"] += int(np.argmax(q) == np.argmax(ref))
                s["dp"] = max(s["dp"], float(np.abs(softmax(q) - p).max()))
                s["dpt"] = max(s["dpt"], float(np.abs(softmax(q, t) - pt).max()))
                s["dact"] = max(s["dact"], float(abs(softmax(peer["act_logits"][i])[0] - pa[0])))
    m = np.array(margins)
    summary = {
        "questions": len(margins),
        "peers": {name: {"agreement": s["agree"] / s["rows"], "agree": s["agree"], "rows": s["rows"],
                         "max_dp": s["dp"], "max_dp_tempered": s["dpt"], "max_d_act_p": s["dact"]}
                  for name, s in stats.items()},
        "fp32_tempered_margin": {"median": float(np.median(m)), "below_0.01": int((m < 0.01).sum()),
                                 "below_0.05": int((m < 0.05).sum()), "below_0.1": int((m < 0.1).sum())},
    }
    for name, s in summary["peers"].items():
        print("%-10s vs SDK fp32: decision agreement %d/%d (%.2f%%), max |dp| %.3g (tempered %.3g), "
              "max |d act_p| %.3g" % (name, s["agree"], s["rows"], 100 * s["agreement"], s["max_dp"],
                                       s["max_dp_tempered"], s["max_d_act_p"]))
    fm = summary["fp32_tempered_margin"]
    print("fp32 top-1 minus top-2 (tempered): median %.3f; %d / %d / %d of %d rows below 0.01 / 0.05 / 0.1"
          % (fm["median"], fm["below_0.01"], fm["below_0.05"], fm["below_0.1"], len(margins)))

    cfg = agent.cfg
    doc = {
        "format": run_laya_cases.FORMAT,
        "generator": "tools/reference/make_precision_cases.py " + (
            "--requests %s" % os.path.basename(args.requests) if args.requests else
            "--questions %d --seed %d" % (args.questions, args.seed)),
        "versions": reftools.versions(),
        "checkpoint": {
            "model_safetensors_sha256": run_laya_cases.sha256(os.path.join(args.checkpoint, "model.safetensors")),
            "tokenizer_json_sha256": run_laya_cases.sha256(os.path.join(args.checkpoint, "tokenizer", "tokenizer.json")),
        },
        "config": {"max_len": cfg.get("max_len", 512), "head_max_len": cfg.get("head_max_len", 192),
                   "temperature": agent.temperature, "temperature_by_options": agent.temperature_by_options},
        "summary": summary,
        "cases": recorded,
    }
    out = args.out or os.path.join(args.checkpoint, "precision-cases.json")
    reftools.dump_json(doc, out)
    print("%s: %d requests, %d questions" % (out, len(recorded), len(margins)), file=sys.stderr)


if __name__ == "__main__":
    main()
