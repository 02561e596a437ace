#!/usr/bin/env python3
"""Make a random-weight Laya checkpoint with upstream's own classes and writer.

    make_laya_checkpoint.py --preset tiny-modernbert --out tests/fixtures/laya-tiny-modernbert
    make_laya_checkpoint.py --preset tiny-mmbert     --out tests/fixtures/laya-tiny-mmbert
    make_laya_checkpoint.py --preset modernbert-large --out /tmp/real/modernbert-large \
        --tokenizer-dir /work/shared/data/modernbert
    make_laya_checkpoint.py --preset mmbert-base     --out /tmp/real/mmbert-base

The network is `laya.common.build_model` (transformers' ModernBertModel + upstream's DecisionModel),
written by `laya.train.save_checkpoint` (all tensors F16, `encoder/config.json` from transformers 5,
`tokenizer/`, `rl_agent_config.json`), so `laya.load(dir)` reads it like a shipped checkpoint.

Weights: a seeded generator draws every parameter (fan-in scaled normals for linears, N(0,1) token
embeddings and type embeddings, norm weights U(0.5,1.5), every bias N(0, 0.2)); all values are rounded
to fp16 first so the F16 file is exact. Then the last scorer linear and the last act-head linear are
rescaled (a linear map, so exactly) until the logits over a calibration set of requests have a
standard deviation of ~3 within a row and the act logits ~2: decisive, varied answers, not ~uniform
probabilities. Same seed, same versions -> same bytes.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402

# One entry per preset. `encoder` holds ModernBertConfig arguments; `agent` is rl_agent_config.json.
PRESETS = {
    "tiny-modernbert": {
        "tokenizer": ("bytelevel", 960),
        "encoder": dict(hidden_size=48, num_hidden_layers=4, num_attention_heads=2, intermediate_size=48,
                        local_attention=16, global_attn_every_n_layers=3,
                        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                        max_position_embeddings=8192),
        "agent": {
            "encoder": "answerdotai/ModernBERT-large",
            "head_layers": 2,
            "max_len": 96,
            "head_max_len": 48,
            "act_costs": {"escalate": 0.5},
            "amp_dtype": "bf16",
            "model_name": "laya-tiny-modernbert (random weights, reference fixture)",
            # temperature[qtype] unless a bucket matches; 0.1 and 7.0 are outside [0.5, 5] and clamp.
            "temperature": [1.3, 0.8, 2.2],
            "temperature_by_options": {"choice:2": 1.7, "choice:3-5": 0.9, "choice:6-10": 3.1,
                                       "choice:11+": 0.1, "score:3-5": 1.25, "noul:2": 7.0},
        },
        "seed": 20240601,
        "attn_gain": 2.5,
        "resid_gain": 3.0,
        "logit_std": 3.0,
        "act_std": 2.0,
    },
    "tiny-mmbert": {
        "tokenizer": ("metaspace", 1024),
        "encoder": dict(hidden_size=48, num_hidden_layers=5, num_attention_heads=1, intermediate_size=64,
                        local_attention=16, global_attn_every_n_layers=3,
                        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                                         "sliding_attention": {"rope_type": "default", "rope_theta": 160000.0}},
                        max_position_embeddings=8192),
        "agent": {
            "encoder": "jhu-clsp/mmBERT-base",
            "head_layers": 2,
            "max_len": 128,
            "head_max_len": 64,
            "act_costs": {"escalate": 0.5},
            "amp_dtype": "bf16",
            "model_name": "laya-tiny-mmbert (random weights, reference fixture)",
            "temperature": [0.7, 1.6, 1.0],
            "temperature_by_options": {"score:6-10": 2.5, "noul:2": 0.6, "choice:2": 1.1},
        },
        "seed": 20240602,
        "attn_gain": 2.5,
        "resid_gain": 3.0,
        "logit_std": 1.5,   # its choice temperature 0.7 sharpens; keep probabilities off 0 / 1
        "act_std": 2.0,
    },
    # Real shapes (REFERENCE-laya.md section 1); random weights, not committed.
    "modernbert-large": {
        "tokenizer": ("dir", None),
        "encoder": dict(hidden_size=1024, num_hidden_layers=28, num_attention_heads=16, intermediate_size=2624,
                        local_attention=128, global_attn_every_n_layers=3, vocab_size=50368,
                        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                                         "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                        max_position_embeddings=8192),
        "agent": {
            "encoder": "answerdotai/ModernBERT-large",
            "head_layers": 2, "max_len": 512, "head_max_len": 192, "act_costs": {"escalate": 0.5},
            "amp_dtype": "bf16", "model_name": "laya-modernbert-large-random (reference, random weights)",
            "temperature": [1.0148024559020996, 1.0374259948730469, 1.0575125217437744],
            "temperature_by_options": {"choice:3-5": 1.7601518630981445, "choice:6-10": 1.0000158548355103,
                                       "score:3-5": 1.2514300346374512, "noul:2": 1.983399510383606,
                                       "choice:11+": 0.10058280825614929, "choice:2": 1.9063563346862793},
        },
        "seed": 20240603,
        "logit_std": 3.0,
        "act_std": 2.0,
    },
    "mmbert-base": {
        "tokenizer": ("metaspace", 8000),
        "encoder": dict(hidden_size=768, num_hidden_layers=22, num_attention_heads=12, intermediate_size=1152,
                        local_attention=128, global_attn_every_n_layers=3, vocab_size=256000,
                        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                                         "sliding_attention": {"rope_type": "default", "rope_theta": 160000.0}},
                        max_position_embeddings=8192),
        "agent": {
            "encoder": "jhu-clsp/mmBERT-base",
            "head_layers": 2, "max_len": 1024, "head_max_len": 256, "act_costs": {"escalate": 0.5},
            "amp_dtype": "bf16", "model_name": "laya-mmbert-base-random (reference, random weights)",
            "temperature": [1.0, 1.0, 1.0], "temperature_by_options": {},
        },
        "seed": 20240604,
        "logit_std": 3.0,
        "act_std": 2.0,
    },
}

# Requests used only to measure the logit spread for the rescale (not recorded anywhere).
_CALIBRATION = [
    ("The customer was charged twice for the same invoice and wants a refund today.",
     {"dept": {"type": "choice", "instructions": "Which team handles this?",
               "criteria": {"billing": "payments and invoices", "support": "technical problems",
                            "sales": "new purchases", "legal": "contracts"}},
      "urg": {"type": "score", "instructions": "How urgent is it?",
              "criteria": ["not urgent", "a little urgent", "urgent", "very urgent"]},
      "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}),
    ({"order": 1234, "status": "late", "items": ["lamp", "chair"], "total": 149.0},
     {"late": {"type": "noul", "instructions": "Is the order late?"},
      "mood": {"type": "choice", "instructions": "What is the mood?",
               "criteria": ["happy", "angry", "neutral", "confused", "sad", "excited"]}}),
    ([{"role": "user", "content": "My login fails after the update."},
      {"role": "assistant", "content": "Did you try resetting the password?"},
      {"role": "user", "content": "Yes, it still fails."}],
     {"solved": {"type": "noul", "instructions": "Is the problem solved?"},
      "sev": {"type": "score", "instructions": "Severity", "criteria": ["none", "low", "high"]}}),
]


def encoder_config(preset, vocab_rows, ids):
    from transformers import ModernBertConfig
    kw = dict(preset["encoder"])
    kw.setdefault("vocab_size", vocab_rows)
    kw.update(pad_token_id=ids["pad"], bos_token_id=ids["cls"], eos_token_id=ids["sep"], cls_token_id=ids["cls"],
              sep_token_id=ids["sep"])
    if preset["tokenizer"][0] == "metaspace":
        # mmBERT's own config says cls_token_id 1 (its <eos>): wrong, and ignored by laya, which takes
        # ids from the tokenizer. Kept wrong here too so a reader that trusts the config shows.
        kw["cls_token_id"] = ids["sep"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ModernBertConfig(**kw)


def make_tokenizer(preset, tokenizer_dir):
    kind, size = preset["tokenizer"]
    if kind == "dir":
        from transformers import AutoTokenizer
        if not tokenizer_dir:
            raise SystemExit("--tokenizer-dir is required for this preset (e.g. /work/shared/data/modernbert)")
        tok = AutoTokenizer.from_pretrained(tokenizer_dir)
        return tok, len(tok)
    if kind == "bytelevel":
        raw, names = reftools.train_bytelevel_bpe(size)
    else:
        raw, names = reftools.train_metaspace_bpe(size)
    tok = reftools.hf_fast_tokenizer(raw, names)
    rows = -(-raw.get_vocab_size() // 64) * 64
    return tok, rows


def fill_weights(model, seed, attn_gain=1.0, resid_gain=1.0):
    """Draw every parameter from a seeded generator (see module docstring); fp16-exact.

    `attn_gain` multiplies the query and key projections (encoder Wqkv, head in_proj): sharper,
    content-dependent attention, so option markers end up with distinct representations.
    `resid_gain` multiplies the projections that write into the residual stream (attention and MLP
    outputs), so context outweighs the token's own embedding."""
    import torch
    g = torch.Generator().manual_seed(seed)

    def normal(shape, std):
        return torch.randn(shape, generator=g) * std

    for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
        shape = tuple(p.shape)
        if name.endswith("tok_embeddings.weight") or name == "type_emb.weight":
            v = normal(shape, 1.0)
        elif "norm" in name or name.startswith("scorer.0."):
            # every LayerNorm (encoder norms have no bias; head norms and scorer.0 do)
            v = (torch.rand(shape, generator=g) + 0.5) if name.endswith("weight") else normal(shape, 0.2)
        elif name.endswith("bias"):
            v = normal(shape, 0.2)
        elif len(shape) == 2:
            v = normal(shape, 1.0 / shape[1] ** 0.5)
            if name.endswith("Wqkv.weight") or name.endswith("in_proj_weight"):
                d = shape[0] // 3
                v[:2 * d] *= attn_gain
            if name.endswith(("attn.Wo.weight", "mlp.Wo.weight", "out_proj.weight", "linear2.weight")):
                v *= resid_gain
        else:
            raise RuntimeError("no rule for parameter %s %s" % (name, shape))
        with torch.no_grad():
            p.copy_(v.half().float())
    with torch.no_grad():
        model.temperature.copy_(torch.ones(3))


def rescale(agent, target_logit_std, target_act_std):
    """Scale the last scorer / act-head linear so the calibration requests reach the target spreads."""
    import numpy as np
    import torch
    rows, acts = [], []
    orig = agent._infer

    def spy(b):
        logits, act = orig(b)
        for r in range(logits.shape[0]):
            k = int(b["marker_mask"][r].sum())
            if k >= 2:
                rows.append(logits[r, :k].float().numpy())
        acts.append(act.float().numpy())
        return logits, act

    agent._infer = spy
    try:
        for state, questions in _CALIBRATION:
            agent.predict(state, questions)
    finally:
        agent._infer = orig
    logit_std = float(np.mean([r.std() for r in rows]))
    act_all = np.concatenate(acts, 0)
    act_std = float(act_all.std())
    s_logit = target_logit_std / max(logit_std, 1e-6)
    s_act = target_act_std / max(act_std, 1e-6)
    m = agent.model
    with torch.no_grad():
        for lin, s in ((m.scorer[3], s_logit), (m.act_head[2], s_act)):
            lin.weight.mul_(s)
            lin.bias.mul_(s)
            lin.weight.copy_(lin.weight.half().float())
            lin.bias.copy_(lin.bias.half().float())
    return {"measured_logit_std": logit_std, "measured_act_std": act_std, "scorer_scale": s_logit,
            "act_scale": s_act}


def build(preset_name, out, tokenizer_dir=None, seed=None, quiet=False, attn_gain=None, resid_gain=None):
    import torch
    import laya
    from laya.agent import _fix_tokenizer_config
    from laya.common import build_model
    from laya.train import save_checkpoint

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    preset = dict(PRESETS[preset_name])
    if attn_gain is not None:
        preset["attn_gain"] = attn_gain
    if resid_gain is not None:
        preset["resid_gain"] = resid_gain
    seed = preset["seed"] if seed is None else seed
    tok, rows = make_tokenizer(preset, tokenizer_dir)
    ids = {"pad": tok.pad_token_id, "cls": tok.cls_token_id, "sep": tok.sep_token_id, "mask": tok.mask_token_id}
    ecfg = encoder_config(preset, rows, ids)
    cfg = dict(preset["agent"])

    with tempfile.TemporaryDirectory() as tmp:
        ecfg.save_pretrained(tmp)
        model = build_model(cfg, encoder_dir=tmp, pretrained=False)
    model.eval()
    fill_weights(model, seed, preset.get("attn_gain", 1.0), preset.get("resid_gain", 1.0))
    if os.path.exists(out):
        shutil.rmtree(out)
    save_checkpoint(model, tok, cfg, out)
    _fix_tokenizer_config(out)   # what laya.load would patch on first load; done once here

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # the clamped temperatures are deliberate
        agent = laya.load(out, device="cpu")
    stats = rescale(agent, preset["logit_std"], preset["act_std"])
    save_checkpoint(agent.model, tok, cfg, out)
    _fix_tokenizer_config(out)
    if not quiet:
        n = sum(p.numel() for p in agent.model.parameters())
        print("%s: %s params, seed %d, rescale %s" % (out, f"{n:,}", seed, json.dumps(stats)))
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", required=True, choices=sorted(PRESETS))
    ap.add_argument("--out", required=True, help="checkpoint directory to (re)create")
    ap.add_argument("--tokenizer-dir", help="tokenizer files for presets that use a real tokenizer")
    ap.add_argument("--seed", type=int, help="override the preset's seed")
    ap.add_argument("--attn-gain", type=float, help="override the preset's query/key gain")
    ap.add_argument("--resid-gain", type=float, help="override the preset's residual-writing gain")
    args = ap.parse_args()
    build(args.preset, args.out, args.tokenizer_dir, args.seed, attn_gain=args.attn_gain,
          resid_gain=args.resid_gain)


if __name__ == "__main__":
    main()
