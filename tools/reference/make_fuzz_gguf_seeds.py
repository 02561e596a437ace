#!/usr/bin/env python3
"""Writes the committed seed corpus of the GGUF fuzz target (tests/fuzz/seeds/gguf/) with gguf-py
(llama.cpp's own GGUF writer), so the seeds are real GGUF files, each under 64 KiB:

  llama-gpt2-f32.gguf    a 1-layer llama decoder (every tensor check_decoder_tensors wants) with a
                         byte-level BPE ("gpt2") vocabulary: 256 byte tokens, merges, specials
  llama-spm-q8_0.gguf    the same with a SentencePiece ("llama") vocabulary (scores, token types,
                         <0xXX> byte tokens) and Q8_0 / F16 tensors
  qwen2-q4.gguf          a 2-layer qwen2 decoder with Q/K/V biases, Q4_0 weights and a Q4_1
                         output.weight
  every-type.gguf        every metadata value type, arrays of every element type, nested arrays,
                         general.alignment = 64, and tensors of every other dtype the reader maps
                         (bf16, i8, i32, q4_K, q5_K, q6_K; 3-d and 4-d shapes)
  unsupported-q5_0.gguf  a tensor type the reader refuses (q5_0)

    /work/refvenv/bin/python tools/reference/make_fuzz_gguf_seeds.py tests/fuzz/seeds/gguf
"""
import os
import pathlib
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V
from gguf import GGUFWriter, quantize
from gguf.constants import GGML_QUANT_SIZES

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reftools  # noqa: E402


def llama_hparams(w, arch, d, layers, heads, kv_heads, ff, ctx=256):
    w.add_string("general.name", f"fuzz seed {arch}")
    w.add_uint32(f"{arch}.context_length", ctx)
    w.add_uint32(f"{arch}.embedding_length", d)
    w.add_uint32(f"{arch}.block_count", layers)
    w.add_uint32(f"{arch}.feed_forward_length", ff)
    w.add_uint32(f"{arch}.attention.head_count", heads)
    w.add_uint32(f"{arch}.attention.head_count_kv", kv_heads)
    w.add_uint32(f"{arch}.rope.dimension_count", d // heads)
    w.add_float32(f"{arch}.rope.freq_base", 10000.0)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)


def tensor(w, rng, name, shape, qtype):
    """A weight of PyTorch shape `shape` ([rows, cols]), stored as `qtype`."""
    x = (rng.standard_normal(shape) * 0.1).astype(np.float32)
    if qtype == Q.F32:
        w.add_tensor(name, x)
    elif qtype == Q.F16:
        w.add_tensor(name, x.astype(np.float16))
    else:
        w.add_tensor(name, quantize(x, qtype), raw_shape=None, raw_dtype=qtype)


def decoder_tensors(w, rng, d, layers, heads, kv_heads, ff, vocab, wtype, biases=False,
                    output=False):
    hd = d // heads
    tensor(w, rng, "token_embd.weight", (vocab, d), wtype)
    tensor(w, rng, "output_norm.weight", (d,), Q.F32)
    if output:
        tensor(w, rng, "output.weight", (vocab, d), wtype)
    for i in range(layers):
        b = f"blk.{i}."
        tensor(w, rng, b + "attn_norm.weight", (d,), Q.F32)
        tensor(w, rng, b + "attn_q.weight", (heads * hd, d), wtype)
        tensor(w, rng, b + "attn_k.weight", (kv_heads * hd, d), wtype)
        tensor(w, rng, b + "attn_v.weight", (kv_heads * hd, d), wtype)
        if biases:
            tensor(w, rng, b + "attn_q.bias", (heads * hd,), Q.F32)
            tensor(w, rng, b + "attn_k.bias", (kv_heads * hd,), Q.F32)
            tensor(w, rng, b + "attn_v.bias", (kv_heads * hd,), Q.F32)
        tensor(w, rng, b + "attn_output.weight", (d, heads * hd), wtype)
        tensor(w, rng, b + "ffn_norm.weight", (d,), Q.F32)
        tensor(w, rng, b + "ffn_gate.weight", (ff, d), wtype)
        tensor(w, rng, b + "ffn_up.weight", (ff, d), wtype)
        tensor(w, rng, b + "ffn_down.weight", (d, ff), wtype)


def gpt2_vocab(w, pre):
    tokens = reftools.byte_tokens()
    merges = ["Ġ t", "h e", "Ġt he", "i n", "Ġ a", "e r", "o n", "Ġ s", "a n", "Ġ w"]
    for m in merges:
        tokens.append(m.replace(" ", ""))
    tokens += ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    types = [1] * (len(tokens) - 3) + [3, 3, 3]
    w.add_string("tokenizer.ggml.model", "gpt2")
    w.add_string("tokenizer.ggml.pre", pre)
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_array("tokenizer.ggml.merges", merges)
    w.add_uint32("tokenizer.ggml.bos_token_id", len(tokens) - 2)
    w.add_uint32("tokenizer.ggml.eos_token_id", len(tokens) - 1)
    w.add_uint32("tokenizer.ggml.padding_token_id", len(tokens) - 3)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_string("tokenizer.chat_template",
                 "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                 "<|im_end|>\n{% endfor %}")
    return len(tokens)


def spm_vocab(w):
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    words = ["▁", "e", "t", "a", "o", "n", "▁t", "he", "▁the", "▁a", "in", "er", "▁s", "on", "▁w",
             "is", "▁is", "ll", "▁he", "llo", "▁hello", "r", "l", "d", "▁wor", "ld", "▁world"]
    tokens += words
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-float(i) for i in range(len(words))]
    types = [2, 3, 3] + [6] * 256 + [1] * len(words)
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", tokens)
    w.add_array("tokenizer.ggml.scores", scores)
    w.add_array("tokenizer.ggml.token_type", types)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 0)
    w.add_uint32("tokenizer.ggml.bos_token_id", 1)
    w.add_uint32("tokenizer.ggml.eos_token_id", 2)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", True)
    return len(tokens)


def raw_blocks(rng, qtype, rows, cols):
    """Random blocks of a k-quant (gguf-py cannot quantize to them) with small f16 scales."""
    block, size = GGML_QUANT_SIZES[qtype]
    b = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)
    # Every k-quant block starts (q4_K, q5_K) or ends (q6_K) with its f16 scale(s): keep them finite.
    scale = np.frombuffer(np.float16(0.01).tobytes(), dtype=np.uint8)
    if qtype == Q.Q6_K:
        b[:, :, -2:] = scale
    else:
        b[:, :, 0:2] = scale
        b[:, :, 2:4] = scale
    return b.reshape(rows, -1)


def write(path, w):
    w.write_header_to_file(path)
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    size = pathlib.Path(path).stat().st_size
    assert size < 64 * 1024, f"{path}: {size} bytes (seeds stay under 64 KiB)"


def main(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(6)

    w = GGUFWriter(None, "llama")
    llama_hparams(w, "llama", d=16, layers=1, heads=2, kv_heads=1, ff=32)
    vocab = gpt2_vocab(w, "smollm")
    decoder_tensors(w, rng, 16, 1, 2, 1, 32, vocab, Q.F32)
    write(out / "llama-gpt2-f32.gguf", w)

    w = GGUFWriter(None, "llama")
    llama_hparams(w, "llama", d=32, layers=1, heads=4, kv_heads=2, ff=32)
    vocab = spm_vocab(w)
    w.add_uint32("llama.vocab_size", vocab)
    decoder_tensors(w, rng, 32, 1, 4, 2, 32, vocab, Q.Q8_0)
    write(out / "llama-spm-q8_0.gguf", w)

    w = GGUFWriter(None, "qwen2")
    llama_hparams(w, "qwen2", d=32, layers=2, heads=2, kv_heads=1, ff=64)
    vocab = gpt2_vocab(w, "qwen2")
    decoder_tensors(w, rng, 32, 2, 2, 1, 64, vocab, Q.Q4_0, biases=True, output=False)
    tensor(w, rng, "output.weight", (vocab, 32), Q.Q4_1)
    write(out / "qwen2-q4.gguf", w)

    w = GGUFWriter(None, "every-type")
    w.add_custom_alignment(64)
    w.add_uint8("t.u8", 200)
    w.add_int8("t.i8", -100)
    w.add_uint16("t.u16", 60000)
    w.add_int16("t.i16", -30000)
    w.add_uint32("t.u32", 4000000000)
    w.add_int32("t.i32", -2000000000)
    w.add_float32("t.f32", 1.5)
    w.add_bool("t.bool", True)
    w.add_string("t.string", "h\u00e9llo \u4e16\u754c")
    w.add_uint64("t.u64", (1 << 63) + 5)
    w.add_int64("t.i64", -(1 << 62))
    w.add_float64("t.f64", 0.1)
    for name, vt, vals in [("u8", V.UINT8, [1, 2, 255]), ("i8", V.INT8, [-1, 2]),
                           ("u16", V.UINT16, [65535]), ("i16", V.INT16, [-32768, 7]),
                           ("u32", V.UINT32, [1, 4000000000]), ("i32", V.INT32, [-5, 6, 7]),
                           ("f32", V.FLOAT32, [0.25, -2.0]), ("bool", V.BOOL, [True, False]),
                           ("u64", V.UINT64, [1 << 40]), ("i64", V.INT64, [-3]),
                           ("f64", V.FLOAT64, [2.5, float("inf")])]:
        w.add_key_value(f"a.{name}", vals, V.ARRAY, sub_type=vt)
    w.add_array("a.string", ["a", "", "b c"])
    w.add_array("a.nested", [[1, 2], [3]])
    w.add_array("a.nested_str", [["x"], ["y", "z"]])
    w.add_tensor("w.bf16", rng.integers(0, 1 << 16, size=(2, 8), dtype=np.uint16).view(np.uint8),
                 raw_dtype=Q.BF16)
    w.add_tensor("w.i8", rng.integers(-128, 128, size=(3, 5), dtype=np.int8))
    w.add_tensor("w.i32", np.arange(7, dtype=np.int32))
    w.add_tensor("w.f16.3d", (rng.standard_normal((2, 3, 4))).astype(np.float16))
    w.add_tensor("w.f32.4d", (rng.standard_normal((2, 1, 3, 2))).astype(np.float32))
    for qtype in (Q.Q4_K, Q.Q5_K, Q.Q6_K):
        w.add_tensor(f"w.{qtype.name.lower()}", raw_blocks(rng, qtype, 2, 256), raw_dtype=qtype)
    write(out / "every-type.gguf", w)

    w = GGUFWriter(None, "llama")
    w.add_tensor("w.q5_0", quantize(rng.standard_normal((2, 32)).astype(np.float32), Q.Q5_0),
                 raw_dtype=Q.Q5_0)
    write(out / "unsupported-q5_0.gguf", w)


if __name__ == "__main__":
    main(sys.argv[1])
