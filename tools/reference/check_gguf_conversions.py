"""Conversions checked (issue 8, Validation): other GGUF types made from one file, each converted
with laya-convert and checked against llama.cpp and transformers. Numbers for the report; not run
in CI (it needs llama-cpp-python, transformers and the real weights).

1. From GGUF (SmolLM2-135M-Instruct Q4_1) llama.cpp's quantizer (llama-cpp-python's
   `llama_model_quantize`, `allow_requantize` since the source is already quantized) writes the
   TYPES files (default Q8_0, F16, Q4_K_M, Q6_K) into WORK. Each file's tensor types are listed:
   llama.cpp falls back from K-quants for rows that are not multiples of 256 (SmolLM2's d_model is
   576), so "Q4_K_M" and "Q6_K" files are mixtures.
2. Each file (the source too) goes through `laya-convert FILE -o FILE.laya`; a type the kernels
   lack must fail there with its name, which is reported as such.
3. Teacher forced against llama.cpp (validate_teacher_forced.validate: 10 prompts x STEPS of
   llama.cpp's greedy tokens; laya-run score runs the .laya): our top-1 = llama.cpp's at >= 95%
   of steps, within its top 3 at >= 99.5%.
4. For the HF_TYPES (default Q4_1 and Q8_0): our fp32-activation path against transformers on the
   same dequantized weights. transformers loads the GGUF and dequantizes it (gguf-py); we run an
   F32 GGUF holding gguf-py's dequantization of every tensor (rows in GGUF order, metadata byte
   for byte, so the graph is the one the quantized file gets, with f32 weights and activations),
   converted to .laya with an f32 KV cache, `laya-run score --last --top VOCAB`: every last-position logit of the 10
   prompts (ids as our tokenizer gives them). Bar: max |diff| <= 1e-2.

Usage: /work/refvenv/bin/python tools/reference/check_gguf_conversions.py LAYA_RUN LAYA_CONVERT
           GGUF --work DIR [--types q8_0,f16,q4_k_m,q6_k] [--hf-types q4_1,q8_0] [--steps 64]
           [--threads 1] [--skip-source]
"""
import argparse
import collections
import ctypes
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402
import validate_teacher_forced  # noqa: E402

FTYPES = {"q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0", "f16": "LLAMA_FTYPE_MOSTLY_F16",
          "q4_k_m": "LLAMA_FTYPE_MOSTLY_Q4_K_M", "q6_k": "LLAMA_FTYPE_MOSTLY_Q6_K",
          "q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0", "q5_0": "LLAMA_FTYPE_MOSTLY_Q5_0",
          "q5_1": "LLAMA_FTYPE_MOSTLY_Q5_1", "bf16": "LLAMA_FTYPE_MOSTLY_BF16"}


def quantize(src, dst, name, threads):
    import llama_cpp

    p = llama_cpp.llama_model_quantize_default_params()
    p.ftype = getattr(llama_cpp, FTYPES[name])
    p.allow_requantize = True
    p.nthread = threads
    rc = llama_cpp.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(p))
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({name}) returned {rc}")


def tensor_types(path):
    import gguf

    r = gguf.GGUFReader(path)
    return dict(collections.Counter(t.tensor_type.name for t in r.tensors))


def write_f32_gguf(src, dst):
    """`src` with every tensor dequantized to F32 by gguf-py; header and metadata copied as bytes."""
    import gguf

    r = gguf.GGUFReader(src)
    raw = np.memmap(src, dtype=np.uint8, mode="r")
    n_kv = struct.unpack_from("<Q", raw, 16)[0]
    kv = bytes(raw[24:r.tensors[0].field.offset])  # every key / value as stored
    align = 32
    if "general.alignment" in r.fields:
        align = int(r.fields["general.alignment"].parts[-1][0])
    infos, blobs, off = bytearray(), [], 0
    for t in r.tensors:
        a = np.ascontiguousarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        ne = [int(x) for x in t.shape]  # ggml order: ne[0] fastest
        assert a.size == int(np.prod(ne)), t.name
        name = t.name.encode()
        infos += struct.pack("<Q", len(name)) + name + struct.pack("<I", len(ne))
        infos += b"".join(struct.pack("<Q", n) for n in ne) + struct.pack("<IQ", 0, off)
        blobs.append((off, a.tobytes()))
        off = (off + a.nbytes + align - 1) // align * align
    with open(dst, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(r.tensors), n_kv) + kv + infos)
        f.write(b"\0" * (-f.tell() % align))
        start = f.tell()
        for o, b in blobs:
            f.write(b"\0" * (start + o - f.tell()))
            f.write(b)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def convert(laya_convert, path, kv_type="f16"):
    out = path + ".laya"
    p = run([laya_convert, path, "-o", out, "--quiet", "--kv-type", kv_type])
    return (out, None) if p.returncode == 0 else (None, p.stderr.strip())


def ours_last_logits(laya_run, model, ids, vocab, threads):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"ids": ids}, f)
        path = f.name
    try:
        p = subprocess.run([laya_run, "score", "--model", model, "--ids-file", path, "--last",
                            "--top", str(vocab), "--threads", str(threads)],
                           check=True, capture_output=True, text=True)
    finally:
        os.unlink(path)
    pos = json.loads(p.stdout)["positions"][0]
    row = np.empty(vocab, dtype=np.float64)
    row[pos["top_ids"]] = pos["top_logits"]
    return row


def transformers_check(laya_run, laya_convert, gguf_path, work, threads, log):
    import torch
    from transformers import AutoModelForCausalLM

    f32 = os.path.join(work, os.path.basename(gguf_path) + ".dequantized-f32.gguf")
    if not os.path.exists(f32):
        write_f32_gguf(gguf_path, f32)
    laya, err = convert(laya_convert, f32, "f32")  # fp32 throughout, the KV cache too
    if err:
        raise RuntimeError(err)
    torch.set_num_threads(threads)
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(os.path.abspath(gguf_path)),
                                                 gguf_file=os.path.basename(gguf_path),
                                                 dtype=torch.float32)
    model.eval()
    worst, worst_rel = 0.0, 0.0
    for text in reftools.SMOLLM2_PROMPTS:
        gen = subprocess.run([laya_run, "generate", "--model", laya, "--prompt", text,
                              "--max-tokens", "1", "--json"], check=True, capture_output=True,
                             text=True)
        ids = json.loads(gen.stdout)["prompt_ids"]
        with torch.no_grad():
            ref = model(torch.tensor([ids])).logits[0, -1].double().numpy()
        ours = ours_last_logits(laya_run, laya, ids, ref.size, threads)
        d = float(np.max(np.abs(ours - ref)))
        worst = max(worst, d)
        worst_rel = max(worst_rel, d / float(np.max(np.abs(ref))))
        log(f"    {len(ids):3d} tokens: last-position logits max |diff| {d:.2e} "
            f"(largest |logit| {np.max(np.abs(ref)):.1f}), top-1 {'same' if ours.argmax() == ref.argmax() else 'DIFFERS'}")
    os.unlink(laya)
    return worst, worst_rel


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("laya_run")
    ap.add_argument("laya_convert")
    ap.add_argument("gguf")
    ap.add_argument("--work", required=True, help="directory for the files made")
    ap.add_argument("--types", default="q8_0,f16,q4_k_m,q6_k")
    ap.add_argument("--hf-types", default="q4_1,q8_0")
    ap.add_argument("--steps", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-source", action="store_true", help="check only the files made")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    log = lambda s: print(s, flush=True)  # noqa: E731
    base = os.path.splitext(os.path.basename(a.gguf))[0]
    files = {} if a.skip_source else {"q4_1 (source)": a.gguf}
    for t in filter(None, a.types.split(",")):
        dst = os.path.join(a.work, f"{base}.{t}.gguf")
        if not os.path.exists(dst):
            quantize(a.gguf, dst, t, a.threads)
        files[t] = dst
    results = {}
    for name, path in files.items():
        log(f"== {name}: {os.path.basename(path)}, {os.path.getsize(path) / 2**20:.1f} MiB, "
            f"tensors {tensor_types(path)}")
        laya, err = convert(a.laya_convert, path)
        if err:
            log(f"   laya-convert refused it: {err}")
            results[name] = {"error": err}
            continue
        r = validate_teacher_forced.validate(a.laya_run, path, laya, a.steps, a.threads,
                                             log=lambda s: log("    " + s))
        log(f"   teacher forced: top-1 {r['top1']}/{r['steps']} ({100 * r['top1'] / r['steps']:.1f}%), "
            f"in top 3 {r['top3']}/{r['steps']} ({100 * r['top3'] / r['steps']:.1f}%), "
            f"tokenization identical {r['tokenization']}/{r['prompts']}")
        results[name] = r
        os.unlink(laya)
        key = name.split(" ")[0]
        if key in a.hf_types.split(","):
            worst, rel = transformers_check(a.laya_run, a.laya_convert, path, a.work, a.threads,
                                            log)
            log(f"   fp32 path vs transformers: max |diff| {worst:.2e} (relative {rel:.1e}) "
                f"over 10 prompts' last-position logits")
            results[name]["transformers_max_diff"] = worst
    log(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
