#!/usr/bin/env python3
"""Show that a fixture catches the classic mistakes: replay its forwards through broken models.

    check_sensitivity.py --checkpoint tests/fixtures/laya-tiny-modernbert

Every forward pass recorded in <checkpoint>/cases.json is rebuilt from its rows and run through a
copy of the model with one thing wrong (a LayerNorm weight left at 1, a bias dropped, the other RoPE
theta, a sliding window one token wider or narrower, every layer global, tanh GELU, ...). For each
mistake the largest |logit| and |probability| change over all recorded rows is printed; a port that
makes the mistake misses the recorded logits by about that much. The unbroken model is run too: it must
reproduce the recorded logits (max |diff| printed first), which also checks the rows -> batch rule.
"""
import argparse
import copy
import json
import os
import shutil
import sys
import tempfile
import warnings


def batches(doc, pad_id):
    import torch
    for case in doc["cases"]:
        rows, r0 = case.get("rows", []), 0
        for fw in case.get("forwards", []):
            batch = rows[r0:r0 + fw["rows"]]
            r0 += fw["rows"]
            n, L, K = len(batch), fw["seq_len"], fw["marker_width"]
            ids = torch.full((n, L), pad_id, dtype=torch.long)
            att = torch.zeros((n, L), dtype=torch.long)
            mpos = torch.zeros((n, K), dtype=torch.long)
            mmask = torch.zeros((n, K), dtype=torch.bool)
            for i, r in enumerate(batch):
                ids[i, :len(r["input_ids"])] = torch.tensor(r["input_ids"])
                att[i, :len(r["input_ids"])] = 1
                mpos[i, :len(r["markers"])] = torch.tensor(r["markers"])
                mmask[i, :len(r["markers"])] = True
            qtype = torch.tensor([r["qtype"] for r in batch], dtype=torch.long)
            yield (ids, att, mpos, mmask, qtype), fw


def compare(model, doc, pad_id):
    import torch
    worst_l = worst_p = 0.0
    flips = 0
    for inputs, fw in batches(doc, pad_id):
        with torch.no_grad():
            logits, _ = model(*inputs)
        ref = torch.tensor(fw["logits"], dtype=torch.float64)
        mm = inputs[3]
        for i in range(logits.shape[0]):
            k = int(mm[i].sum())
            a, b = logits[i, :k].double(), ref[i, :k]
            worst_l = max(worst_l, float((a - b).abs().max()))
            worst_p = max(worst_p, float((torch.softmax(a, -1) - torch.softmax(b, -1)).abs().max()))
            flips += int(k > 1 and int(a.argmax()) != int(b.argmax()))
    return worst_l, worst_p, flips


def load_variant(ckpt, edit_encoder_cfg=None):
    import laya
    tmp = tempfile.mkdtemp()
    shutil.copytree(ckpt, os.path.join(tmp, "ck"))
    path = os.path.join(tmp, "ck")
    if edit_encoder_cfg:
        p = os.path.join(path, "encoder", "config.json")
        cfg = json.load(open(p))
        edit_encoder_cfg(cfg)
        json.dump(cfg, open(p, "w"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = laya.load(path, device="cpu")
    shutil.rmtree(tmp)
    return agent.model.eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    args = ap.parse_args()
    import torch
    import laya
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    doc = json.load(open(os.path.join(args.checkpoint, "cases.json"), encoding="utf-8"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        agent = laya.load(args.checkpoint, device="cpu")
    pad = agent.tok.pad_token_id
    base = agent.model.eval()
    results = [("none (the model as written)",) + compare(base, doc, pad)]

    def weight_edit(label, fn):
        m = copy.deepcopy(base)
        with torch.no_grad():
            fn(m)
        results.append((label,) + compare(m, doc, pad))

    enc = base.encoder
    n_layers = len(enc.layers)
    weight_edit("encoder embeddings.norm weight = 1", lambda m: m.encoder.embeddings.norm.weight.fill_(1))
    weight_edit("encoder layers.1.attn_norm weight = 1", lambda m: m.encoder.layers[1].attn_norm.weight.fill_(1))
    weight_edit("encoder layers.%d.mlp_norm weight = 1" % (n_layers - 1),
                lambda m: m.encoder.layers[-1].mlp_norm.weight.fill_(1))
    weight_edit("encoder final_norm weight = 1", lambda m: m.encoder.final_norm.weight.fill_(1))
    weight_edit("type_emb dropped", lambda m: m.type_emb.weight.zero_())
    for j in range(len(base.head.layers)):
        for part in ("norm1", "norm2"):
            weight_edit("head.layers.%d.%s bias dropped" % (j, part),
                        lambda m, j=j, part=part: getattr(m.head.layers[j], part).bias.zero_())
            weight_edit("head.layers.%d.%s weight = 1" % (j, part),
                        lambda m, j=j, part=part: getattr(m.head.layers[j], part).weight.fill_(1))
    weight_edit("head.layers.0.self_attn.in_proj_bias dropped", lambda m: m.head.layers[0].self_attn.in_proj_bias.zero_())
    weight_edit("head.layers.1.self_attn.out_proj.bias dropped",
                lambda m: m.head.layers[1].self_attn.out_proj.bias.zero_())
    weight_edit("head.layers.0.linear1.bias dropped", lambda m: m.head.layers[0].linear1.bias.zero_())
    weight_edit("head.layers.1.linear2.bias dropped", lambda m: m.head.layers[1].linear2.bias.zero_())
    weight_edit("scorer.0 (LayerNorm) bias dropped", lambda m: m.scorer[0].bias.zero_())
    weight_edit("scorer.0 (LayerNorm) weight = 1", lambda m: m.scorer[0].weight.fill_(1))
    weight_edit("scorer.1 bias dropped", lambda m: m.scorer[1].bias.zero_())

    def relu_to_gelu(m):
        for layer in m.head.layers:
            layer.activation = torch.nn.functional.gelu
            layer.activation_relu_or_gelu = 2
    weight_edit("head activation GELU instead of ReLU", relu_to_gelu)
    weight_edit("head key padding mask ignored (pads attended)", lambda m: None)  # replaced below
    results.pop()

    ecfg = json.load(open(os.path.join(args.checkpoint, "encoder", "config.json")))
    rope = ecfg["rope_parameters"]
    g, l = rope["full_attention"]["rope_theta"], rope["sliding_attention"]["rope_theta"]
    other = 10000.0 if l != 10000.0 else 160000.0
    variants = [
        ("sliding-layer RoPE theta %g instead of %g" % (other, l),
         lambda c: c["rope_parameters"]["sliding_attention"].update(rope_theta=other)),
        ("global-layer RoPE theta 10000 instead of %g" % g,
         lambda c: c["rope_parameters"]["full_attention"].update(rope_theta=10000.0)),
        ("sliding window one wider (local_attention + 2)", lambda c: c.update(local_attention=c["local_attention"] + 2)),
        ("sliding window one narrower (local_attention - 2)",
         lambda c: c.update(local_attention=c["local_attention"] - 2)),
        ("every layer global (layer_types ignored)",
         lambda c: c.update(layer_types=["full_attention"] * len(c["layer_types"]))),
        ("encoder GELU tanh approximation", lambda c: c.update(hidden_activation="gelu_pytorch_tanh")),
        ("LayerNorm eps 1e-6 instead of 1e-5", lambda c: c.update(norm_eps=1e-6)),
    ]
    for label, edit in variants:
        results.append((label,) + compare(load_variant(args.checkpoint, edit), doc, pad))

    print("| mistake | max abs logit diff | max abs prob diff | argmax flips |")
    print("|---|---|---|---|")
    for label, dl, dp, flips in results:
        print("| %s | %.3g | %.3g | %d |" % (label, dl, dp, flips))


if __name__ == "__main__":
    main()
