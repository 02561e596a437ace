"""Records tests/fixtures/gguf/smollm2-hf-rows.bin: what transformers makes of the real SmolLM2 GGUF.

transformers loads a llama GGUF (load_gguf_checkpoint) by dequantizing every tensor with gguf-py
and passing it through TENSOR_PROCESSORS[arch].process, whose LlamaTensorProcessor undoes the Q/K
row permutation llama.cpp's converter applied, giving Hugging Face's row order. This script runs
exactly those two steps (from_pretrained additionally needs `accelerate`, which the reference venv
does not have, for nothing this fixture uses). The runtime reads the same file with frontends/gguf and its own dequantizers and claims
(frontends/gguf.h) that GGUF row h*hd + 2i + s of attn_q / attn_k is HF row h*hd + s*hd/2 + i. The
test compares the two on layer 0; a wrong claim about the permutation (or the RoPE mode that goes
with it) fails there.

File layout (little endian):
  "LGQK", u32 version (1), u32 head_dim, u32 n_q_rows, u32 n_k_rows, u32 n_cols, u32 n_ids, u32 d
  f32 q[n_q_rows][n_cols]    layer 0 q_proj.weight[:n_q_rows, :n_cols] in HF row order
  f32 k[n_k_rows][n_cols]    layer 0 k_proj.weight[:n_k_rows, :n_cols] in HF row order
  i32 ids[n_ids]
  f32 emb[n_ids][d]          embed_tokens.weight[ids] (token_embd, not permuted)

Usage: /work/refvenv/bin/python tools/reference/make_gguf_llama_fixture.py GGUF [OUT]
"""
import os
import struct
import sys

import numpy as np


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures/gguf/smollm2-hf-rows.bin"
    from gguf import GGUFReader, dequantize
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS

    reader = GGUFReader(path)
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()

    def field(key):
        return int(reader.fields[key].parts[-1][0])

    config = {"num_attention_heads": field(f"{arch}.attention.head_count"),
              "num_key_value_heads": field(f"{arch}.attention.head_count_kv")}
    hidden = field(f"{arch}.embedding_length")
    processor = TENSOR_PROCESSORS[arch](config=config)
    tensors = {t.name: t for t in reader.tensors}

    def hf(name):
        t = tensors[name]
        return processor.process(dequantize(t.data, t.tensor_type), name).weights

    hd = hidden // config["num_attention_heads"]
    n_q, n_k, n_cols = 2 * hd, hd, 64  # heads 0-1 of q, head 0 of k, the first 64 inputs
    q = np.ascontiguousarray(hf("blk.0.attn_q.weight")[:n_q, :n_cols], dtype=np.float32)
    k = np.ascontiguousarray(hf("blk.0.attn_k.weight")[:n_k, :n_cols], dtype=np.float32)
    ids = np.array([0, 1, 2, 100, 49151], dtype=np.int32)
    emb = np.ascontiguousarray(hf("token_embd.weight")[ids], dtype=np.float32)
    cfg_hidden = hidden
    data = b"LGQK" + struct.pack("<IIIIIII", 1, hd, n_q, n_k, n_cols, len(ids), cfg_hidden)
    data += q.tobytes() + k.tobytes() + ids.tobytes() + emb.tobytes()
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "wb") as f:
        f.write(data)
    print(f"wrote {out}: {len(data)} bytes (head_dim {hd})")


if __name__ == "__main__":
    main()
