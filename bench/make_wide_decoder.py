"""Writes a random decoder with a 7B-class model's layer shapes as GGUF files, for decoder_bench.py.

No 7B-class weights are reachable from our machines, yet the matrices of such a model (4096 x 4096,
4096 x 14336, ...) are what a decode step streams on bigger parts, and they behave differently from
SmolLM2-135M's (576 x 1536 at most, whose GEMVs each start a short stream). This script writes a
llama-architecture model with Llama-3-8B's layer shapes (d 4096, 32 heads of 128, 8 KV heads, FFN
14336, RoPE base 500000) but only --layers of its 32 layers, and SmolLM2-135M-Instruct's vocabulary,
tokenizer and chat template (copied from its GGUF, so decoder_bench.py's prompt tokenizes), with the
LM head tied to token_embd as in SmolLM2. Weights are drawn from a seeded generator (unit output
variance for unit input), written as F16 by gguf-py, then quantized by llama.cpp's own quantizer
(`llama_model_quantize`) to each --types entry. The text it generates is noise; the shapes, bytes
per token and kernels are a real 7B-class model's.

Usage (needs the venv of tools/reference/setup-venv.sh with WITH_LLAMA_CPP=1):
  VENV/bin/python bench/make_wide_decoder.py --vocab-from SmolLM2-135M-Instruct.Q4_1.gguf \\
      --out DIR [--layers 4] [--types q4_k_m,q4_0,q8_0] [--threads 2]
writes DIR/wide-L<layers>.f16.gguf and DIR/wide-L<layers>.<TYPE>.gguf (Q4_K_M at 4 layers: ~0.6 GB;
the F16 source 2.1 GB; about 70 s on 2 cores).
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "reference"))
from check_gguf_conversions import FTYPES, quantize  # noqa: E402  (llama.cpp's quantizer)

D, HEADS, KV_HEADS, FF, ROPE_BASE = 4096, 32, 8, 14336, 500000.0
HD = D // HEADS


def field(r, name):
    f = r.fields[name]
    return [f.parts[i] for i in f.data]


def write_f16(path, vocab_src, layers, seed):
    import gguf

    r = gguf.GGUFReader(vocab_src)
    tokens = [bytes(p).decode("utf-8") for p in field(r, "tokenizer.ggml.tokens")]
    merges = [bytes(p).decode("utf-8") for p in field(r, "tokenizer.ggml.merges")]
    types = [int(p[0]) for p in field(r, "tokenizer.ggml.token_type")]
    scalar = lambda name: int(r.fields[name].parts[-1][0])  # noqa: E731
    text = lambda name: bytes(r.fields[name].parts[-1]).decode("utf-8")  # noqa: E731
    vocab = len(tokens)

    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(path, "llama")
    w.add_name(f"wide-L{layers} (random, Llama-3-8B layer shapes)")
    w.add_context_length(4096)
    w.add_embedding_length(D)
    w.add_block_count(layers)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(HD)
    w.add_vocab_size(vocab)
    w.add_file_type(1)  # mostly F16
    w.add_tokenizer_model(text("tokenizer.ggml.model"))
    w.add_tokenizer_pre(text("tokenizer.ggml.pre"))
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(scalar("tokenizer.ggml.bos_token_id"))
    w.add_eos_token_id(scalar("tokenizer.ggml.eos_token_id"))
    w.add_add_bos_token(False)
    if "tokenizer.chat_template" in r.fields:
        w.add_chat_template(text("tokenizer.chat_template"))

    def mat(n, k, gain=1.0):  # [n, k] row-major, unit output variance for unit input
        out = np.empty((n, k), np.float16)
        for i in range(0, n, 1024):  # in slices: a whole f32 draw of 4096 x 14336 is 235 MB
            m = min(1024, n - i)
            out[i:i + m] = rng.standard_normal((m, k), np.float32) * np.float32(gain / np.sqrt(k))
        return out

    def norm(n):
        return rng.uniform(0.6, 1.4, n).astype(np.float32)

    w.add_tensor("token_embd.weight", mat(vocab, D, np.sqrt(D)))
    for layer in range(layers):
        p = f"blk.{layer}."
        w.add_tensor(p + "attn_norm.weight", norm(D))
        w.add_tensor(p + "attn_q.weight", mat(D, D, 2.0))
        w.add_tensor(p + "attn_k.weight", mat(KV_HEADS * HD, D, 2.0))
        w.add_tensor(p + "attn_v.weight", mat(KV_HEADS * HD, D))
        w.add_tensor(p + "attn_output.weight", mat(D, D))
        w.add_tensor(p + "ffn_norm.weight", norm(D))
        w.add_tensor(p + "ffn_gate.weight", mat(FF, D))
        w.add_tensor(p + "ffn_up.weight", mat(FF, D))
        w.add_tensor(p + "ffn_down.weight", mat(D, FF))
    w.add_tensor("output_norm.weight", norm(D))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--vocab-from", required=True, help="SmolLM2-135M-Instruct's GGUF")
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--types", default="q4_k_m,q4_0,q8_0", help=f"of {', '.join(FTYPES)}")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=8)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    src = os.path.join(a.out, f"wide-L{a.layers}.f16.gguf")
    if not os.path.exists(src):
        write_f16(src, a.vocab_from, a.layers, a.seed)
        print(f"wrote {src}", file=sys.stderr)
    for t in a.types.split(","):
        dst = os.path.join(a.out, f"wide-L{a.layers}.{t.upper()}.gguf")
        quantize(src, dst, t, a.threads)
        print(f"wrote {dst} ({os.path.getsize(dst) / 1e6:.0f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
