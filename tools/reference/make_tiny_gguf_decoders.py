"""Writes two tiny random decoders as GGUF files and records llama.cpp's logits on them.

tests/fixtures/gguf/tiny-llama.gguf   arch "llama": d 64, 4 heads of 16, 2 kv heads, 2 layers, FFN 96,
                                      vocab 300, RoPE base 10000, lm head tied to token_embd
tests/fixtures/gguf/tiny-qwen2.gguf   arch "qwen2": the same shapes with Q/K/V biases, an untied
                                      output.weight, RoPE base 1e6
Weights are F32 drawn from a seeded generator (so no activation quantization happens on either
side) and written with gguf-py in GGUF row order (no Q/K permutation is involved: llama.cpp reads
the rows as they are, with its NORM RoPE for llama and NEOX for qwen2). The vocabulary is a
byte-level BPE of the 256 byte tokens, 40 merges and 4 specials (llama.cpp needs one to load).

tests/fixtures/gguf/tiny-decoders-llamacpp.bin: llama-cpp-python 0.3.36 (logits_all, F32 K/V cache,
1 thread, one prefill batch per prompt) on 2 prompts of random ids per model. Layout (little endian):
  "LGTD", u32 version (1), u32 n_models (2), u32 vocab
  n_models x { u32 name_len, name (the file name), u32 n_prompts,
               n_prompts x { u32 n, i32 ids[n], f32 logits[n][vocab] } }

Usage: /work/refvenv/bin/python tools/reference/make_tiny_gguf_decoders.py [OUT_DIR]
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402

D, HEADS, KV_HEADS, LAYERS, FF, N_MERGES = 64, 4, 2, 2, 96, 40
HD = D // HEADS


def write_model(path, arch, seed):
    import gguf

    rng = np.random.default_rng(seed)
    tokens = reftools.byte_tokens()
    merges = []
    letters = "etaoinshrdlucmfw"
    pairs = [(a, b) for a in letters for b in letters if a != b]
    for a, b in pairs[:N_MERGES]:
        merges.append(f"{a} {b}")
        tokens.append(a + b)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"]
    tokens += specials
    vocab = len(tokens)
    types = [1] * (vocab - len(specials)) + [3] * len(specials)

    w = gguf.GGUFWriter(path, arch)
    w.add_context_length(256)
    w.add_embedding_length(D)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(10000.0 if arch == "llama" else 1000000.0)
    w.add_layer_norm_rms_eps(1e-6 if arch == "qwen2" else 1e-5)
    w.add_rope_dimension_count(HD)
    w.add_vocab_size(vocab)
    w.add_file_type(0)  # all F32
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(vocab - 3)
    w.add_eos_token_id(vocab - 2)
    w.add_add_bos_token(False)

    def mat(n, k, gain=1.0):  # [n, k] row-major, unit output variance for unit input
        return (rng.standard_normal((n, k)) * gain / np.sqrt(k)).astype(np.float32)

    def norm():
        return rng.uniform(0.6, 1.4, D).astype(np.float32)

    w.add_tensor("token_embd.weight", rng.standard_normal((vocab, D)).astype(np.float32))
    for l in range(LAYERS):
        p = f"blk.{l}."
        w.add_tensor(p + "attn_norm.weight", norm())
        w.add_tensor(p + "attn_q.weight", mat(D, D, 2.0))
        w.add_tensor(p + "attn_k.weight", mat(KV_HEADS * HD, D, 2.0))
        w.add_tensor(p + "attn_v.weight", mat(KV_HEADS * HD, D))
        if arch == "qwen2":
            w.add_tensor(p + "attn_q.bias", (0.3 * rng.standard_normal(D)).astype(np.float32))
            w.add_tensor(p + "attn_k.bias",
                         (0.3 * rng.standard_normal(KV_HEADS * HD)).astype(np.float32))
            w.add_tensor(p + "attn_v.bias",
                         (0.3 * rng.standard_normal(KV_HEADS * HD)).astype(np.float32))
        w.add_tensor(p + "attn_output.weight", mat(D, D))
        w.add_tensor(p + "ffn_norm.weight", norm())
        w.add_tensor(p + "ffn_gate.weight", mat(FF, D))
        w.add_tensor(p + "ffn_up.weight", mat(FF, D))
        w.add_tensor(p + "ffn_down.weight", mat(D, FF))
    w.add_tensor("output_norm.weight", norm())
    if arch == "qwen2":
        w.add_tensor("output.weight", mat(vocab, D, 3.0))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return vocab


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/gguf"
    import llama_cpp

    data = b""
    vocab = 0
    models = [("tiny-llama.gguf", "llama", 11), ("tiny-qwen2.gguf", "qwen2", 12)]
    for name, arch, seed in models:
        path = os.path.join(out, name)
        vocab = write_model(path, arch, seed)
        llm = reftools.llama_cpp_model(path, n_ctx=64, type_k=0, type_v=0)  # F32 K/V cache
        rng = np.random.default_rng(seed + 100)
        prompts = [rng.integers(0, vocab, 7).tolist(), rng.integers(0, vocab, 33).tolist()]
        data += struct.pack("<I", len(name)) + name.encode() + struct.pack("<I", len(prompts))
        for ids in prompts:
            llm.reset()
            llm.eval(ids)
            logits = np.array(llm.scores[: len(ids), :], dtype=np.float32)
            data += struct.pack("<I", len(ids)) + np.asarray(ids, np.int32).tobytes()
            data += logits.tobytes()
            print(f"{name}: {len(ids)} ids, logits std {logits.std():.3f}", file=sys.stderr)
        del llm
    with open(os.path.join(out, "tiny-decoders-llamacpp.bin"), "wb") as f:
        f.write(b"LGTD" + struct.pack("<III", 1, len(models), vocab) + data)
    print(f"wrote {out}/tiny-*.gguf and tiny-decoders-llamacpp.bin (llama-cpp-python "
          f"{llama_cpp.__version__})", file=sys.stderr)


if __name__ == "__main__":
    main()
