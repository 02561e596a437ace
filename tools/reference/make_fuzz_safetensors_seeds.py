#!/usr/bin/env python3
"""Writes the committed seed corpus of the safetensors fuzz target (tests/fuzz/seeds/safetensors/)
with the safetensors library itself (huggingface/safetensors), so every image is a real file:

  every-dtype.safetensors    one tensor of each dtype the reader knows (F64 ... BOOL), a scalar, an
                             empty tensor, a 4-d tensor and __metadata__
  tiny-encoder.safetensors   a few tensors named as a ModernBERT checkpoint names them (F32 / BF16)
  u32.safetensors            a dtype the reader refuses (U32)
  sharded.bin                a sharded checkpoint in the target's multi-part form: the index JSON
                             (as transformers' save_pretrained writes it), then two shards, joined
                             by the separator of tests/fuzz/fuzz_safetensors.cpp

    /work/refvenv/bin/python tools/reference/make_fuzz_safetensors_seeds.py tests/fuzz/seeds/safetensors
"""
import json
import pathlib
import sys

import numpy as np
import torch
from safetensors.numpy import save as np_save
from safetensors.torch import save as torch_save

SEPARATOR = b"\n--laya-fuzz-shard--\n"  # fuzz_safetensors.cpp's kSeparator


def main(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    torch.manual_seed(7)

    every = {
        "f64": rng.standard_normal((2, 2)).astype(np.float64),
        "f32": rng.standard_normal((3, 4)).astype(np.float32),
        "f16": rng.standard_normal((5,)).astype(np.float16),
        "i64": np.arange(3, dtype=np.int64),
        "i32": np.arange(-2, 2, dtype=np.int32),
        "i16": np.array([[1, -1]], dtype=np.int16),
        "i8": np.array([-128, 127], dtype=np.int8),
        "u8": np.array([0, 255, 7], dtype=np.uint8),
        "bool": np.array([True, False, True]),
        "scalar": np.array(2.5, dtype=np.float32),
        "empty": np.zeros((0, 3), dtype=np.float32),
        "four_d": rng.standard_normal((1, 2, 1, 3)).astype(np.float32),
    }
    tensors = {k: torch.from_numpy(v) for k, v in every.items()}
    tensors["bf16"] = torch.randn(2, 3).to(torch.bfloat16)
    image = torch_save(tensors, metadata={"format": "pt", "note": "fuzz seed \u00e9"})
    (out / "every-dtype.safetensors").write_bytes(image)

    d, vocab = 8, 16
    encoder = {
        "model.embeddings.tok_embeddings.weight": torch.randn(vocab, d),
        "model.embeddings.norm.weight": torch.ones(d),
        "model.layers.0.attn.Wqkv.weight": torch.randn(3 * d, d).to(torch.bfloat16),
        "model.layers.0.attn.Wo.weight": torch.randn(d, d).to(torch.bfloat16),
        "model.layers.0.mlp_norm.weight": torch.ones(d),
        "model.final_norm.weight": torch.ones(d),
    }
    (out / "tiny-encoder.safetensors").write_bytes(torch_save(encoder, metadata={"format": "pt"}))

    u32 = np_save({"u32": np.arange(4, dtype=np.uint32)})
    (out / "u32.safetensors").write_bytes(u32)

    shards = [
        {"model.embeddings.tok_embeddings.weight": torch.randn(vocab, d),
         "model.layers.0.attn.Wqkv.weight": torch.randn(3 * d, d)},
        {"model.layers.0.attn.Wo.weight": torch.randn(d, d).to(torch.float16),
         "model.final_norm.weight": torch.ones(d)},
    ]
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    index = {"metadata": {"total_size": sum(t.numel() * t.element_size()
                                            for s in shards for t in s.values())},
             "weight_map": {k: names[i] for i, s in enumerate(shards) for k in sorted(s)}}
    parts = [json.dumps(index, indent=2, sort_keys=True).encode()]
    parts += [torch_save(s, metadata={"format": "pt"}) for s in shards]
    assert not any(SEPARATOR in p for p in parts)
    (out / "sharded.bin").write_bytes(SEPARATOR.join(parts))


if __name__ == "__main__":
    main(sys.argv[1])
