#!/usr/bin/env python3
"""bf16 activations on top of bf16 weights: which matmul inputs can be rounded to bf16 and still meet
issue 7's agreement bar (>= 99.5% decisions, max tempered |dp| <= 0.01)? A diagnosis for
docs/precision.md: a single-pass bf16 kernel (AMX `tdpbf16ps`, `vdpbf16ps`) rounds the activations
to bf16; the runtime's bf16 path feeds them as two bf16 halves (about 16 significant bits) instead.

Eval: the recorded rows / forwards of the checkpoint's precision-cases.json (fp32 reference logits
recorded there), replayed like make_precision_cases.py's diagnoses: upstream's fp32 forward with
every matrix rounded to bf16 (the converter's `--dtype bf16`), and the input of each matrix in the
chosen group rounded to bf16 right before its product (torch.nn.functional.linear is wrapped, so the
head's nn.MultiheadAttention projections are reached too). Groups: none (weights only),
attn.Wqkv / attn.Wo / mlp.Wi / mlp.Wo of every encoder layer, mlp (both), encoder (all four),
all (every matrix the converter rounds: encoder, head, scorer, act head).

    /work/refvenv/bin/python tools/reference/check_bf16_activations.py [CHECKPOINT]

CHECKPOINT defaults to tests/fixtures/laya-trained-modernbert. Under a minute on one core. Prints one
line per group: agreement with the recorded fp32 argmax and the max tempered |dp|.
"""
import json
import os
import sys
import warnings

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import make_precision_cases as mpc  # noqa: E402
import run_laya_cases  # noqa: E402

torch.set_num_threads(1)
KEYS = ("input_ids", "attention_mask", "marker_pos", "marker_mask", "qtype")
ENCODER_PARTS = ("attn.Wqkv", "attn.Wo", "mlp.Wi", "mlp.Wo")


def group_names(model, group):
    names = mpc.rounded_matrix_names(model)
    if group == "none":
        return []
    if group == "all":
        return names
    parts = {"mlp": ("mlp.Wi", "mlp.Wo"), "encoder": ENCODER_PARTS}.get(group, (group,))
    ends = tuple(p + ".weight" for p in parts)
    picked = [n for n in names if n.startswith("encoder.layers.") and n.endswith(ends)]
    if not picked:
        raise SystemExit("group %r matches no matrix" % group)
    return picked


class RoundInputs:
    """Within the context, F.linear rounds its input to bf16 when its weight is one of `weights`."""

    def __init__(self, weights):
        self.ptrs = {w.data_ptr() for w in weights}

    def __enter__(self):
        self.orig = F.linear
        orig, ptrs = self.orig, self.ptrs

        def linear(x, w, b=None):
            if w.data_ptr() in ptrs:
                x = x.to(torch.bfloat16).float()
            return orig(x, w, b)

        F.linear = linear
        return self

    def __exit__(self, *exc):
        F.linear = self.orig


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ckpt = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "..", "tests", "fixtures",
                                                              "laya-trained-modernbert")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import laya
        agent = laya.load(ckpt, device="cpu")
    tok = agent.tok
    doc = json.load(open(os.path.join(ckpt, "precision-cases.json")))
    batches = []
    for rows, fw in mpc.recorded_forwards(doc["cases"]):
        b = mpc.batch_arrays(rows, fw, tok.pad_token_id)
        batches.append((rows, fw, {k: torch.from_numpy(b[k]) for k in KEYS}))

    model = mpc.rounded_weights(agent.model.eval(), "bf16")
    params = dict(model.named_parameters())
    # the fused fast path of nn.MultiheadAttention would bypass F.linear
    torch.backends.mha.set_fastpath_enabled(False)
    print("checkpoint %s: %d forwards, %d question rows; weights bf16 in every group"
          % (ckpt, len(batches), sum(len(b[0]) for b in batches)))
    for group in ("none",) + ENCODER_PARTS + ("mlp", "encoder", "all"):
        names = group_names(model, group)
        agree = n = 0
        worst = 0.0
        with RoundInputs([params[k] for k in names]):
            for rows, fw, b in batches:
                with torch.no_grad():
                    logits, _ = model(*(b[k] for k in KEYS))
                for i, r in enumerate(rows):
                    k = len(r["markers"])
                    got = [run_laya_cases.f32(v) for v in logits[i, :k].float()]
                    a, d = mpc.compare_tempered(agent, r, got, fw["logits"][i][:k])
                    n += 1
                    agree += a
                    worst = max(worst, d)
        ok = agree / n >= 0.995 and worst <= 0.01
        print("x in bf16 before %-10s (%3d matrices): %d/%d agree (%.2f%%), max tempered |dp| %.4f%s"
              % (group, len(names), agree, n, 100.0 * agree / n, worst, "  meets both bars" if ok else ""))


if __name__ == "__main__":
    main()
