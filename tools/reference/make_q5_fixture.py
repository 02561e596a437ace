"""Records tests/fixtures/gguf/q5-ggml.bin: ggml's own q5_0 / q5_1 code run on fixed inputs.

The runtime's q5_0 / q5_1 blocks (kernels/quant.h) must be bit-compatible with ggml's. As
make_kquant_fixture.py does for the K-quants, this calls the C functions of the ggml libraries
llama-cpp-python builds (libggml-base.so, libggml-cpu.so, through ctypes) on deterministic
weights and activations, and cross-checks ggml's dequantization against gguf-py's numpy code.
tests/kernels/test_quant.cpp reads the file:

  header   "LQ5F", u32 version (1), u32 n_rows, u32 k, u32 n_x          (little endian)
  f32 w[n_rows][k]        weight rows (gaussian, outliers, all positive, constant, zeros, tiny)
  f32 x[n_x][k]           activation rows
  per type in (q5_0 with q8_0 activations, q5_1 with q8_1 activations):
    u8  blocks[n_rows * k / 32 * block_bytes]   quantize_row_<type>_ref(w)
    f32 deq[n_rows][k]                           dequantize_row_<type>(blocks)
    u8  xq[n_x * k / 32 * act_block_bytes]       the CPU backend's quantize_row_q8_0 / q8_1(x)
    f32 dot[n_x][n_rows]                         ggml_vec_dot_<type>_q8_<0|1>(blocks row, xq row)

Usage: /work/refvenv/bin/python tools/reference/make_q5_fixture.py [--lib-dir DIR] [OUT]
  DIR holds libggml-base.so and libggml-cpu.so (default: the llama_cpp package's lib/ folder, or
  $LAYA_GGML_LIB_DIR).
"""
import argparse
import ctypes
import os
import struct
import sys

import numpy as np

from make_kquant_fixture import find_lib_dir, load_ggml, weights

# name, block bytes, activation type, activation block bytes
TYPES = [("q5_0", 22, "q8_0", 34), ("q5_1", 24, "q8_1", 36)]
N_ROWS, K, N_X = 8, 256, 3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib-dir")
    ap.add_argument("out", nargs="?", default="tests/fixtures/gguf/q5-ggml.bin")
    args = ap.parse_args()
    lib_dir = find_lib_dir(args.lib_dir)
    base, cpu = load_ggml(lib_dir)
    fp = ctypes.POINTER(ctypes.c_float)

    rng = np.random.default_rng(20261130)
    w = weights(rng, N_ROWS, K, zero_block=64)
    x = rng.normal(0.0, 2.0, size=(N_X, K)).astype(np.float32)
    x[2, 64:96] = 0.0  # an all-zero activation block

    out = bytearray(b"LQ5F" + struct.pack("<IIII", 1, N_ROWS, K, N_X))
    out += w.tobytes() + x.tobytes()

    from gguf import GGMLQuantizationType, quants

    for name, bs, act, abs_ in TYPES:
        qfn = getattr(base, f"quantize_row_{name}_ref")
        qfn.argtypes = [fp, ctypes.c_void_p, ctypes.c_int64]
        dfn = getattr(base, f"dequantize_row_{name}")
        dfn.argtypes = [ctypes.c_void_p, fp, ctypes.c_int64]
        afn = getattr(cpu, f"quantize_row_{act}")
        afn.argtypes = [fp, ctypes.c_void_p, ctypes.c_int64]
        vfn = getattr(cpu, f"ggml_vec_dot_{name}_{act}")
        vfn.argtypes = [ctypes.c_int, fp, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        row_bytes = K // 32 * bs
        blocks = np.zeros(N_ROWS * row_bytes, dtype=np.uint8)
        deq = np.zeros((N_ROWS, K), dtype=np.float32)
        for r in range(N_ROWS):
            row = np.ascontiguousarray(w[r])
            qfn(row.ctypes.data_as(fp), blocks[r * row_bytes:].ctypes.data, K)
            dfn(blocks[r * row_bytes:].ctypes.data, deq[r].ctypes.data_as(fp), K)
        ref = quants.dequantize(blocks.reshape(N_ROWS, row_bytes),
                                getattr(GGMLQuantizationType, name.upper())).astype(np.float32)
        if not np.array_equal(ref.view(np.uint32), deq.view(np.uint32)):
            sys.exit(f"{name}: ggml and gguf-py dequantize differently")
        act_row = K // 32 * abs_
        xq = np.zeros(N_X * act_row, dtype=np.uint8)
        for i in range(N_X):
            afn(np.ascontiguousarray(x[i]).ctypes.data_as(fp), xq[i * act_row:].ctypes.data, K)
        dots = np.zeros((N_X, N_ROWS), dtype=np.float32)
        res = ctypes.c_float()
        for i in range(N_X):
            for r in range(N_ROWS):
                vfn(K, ctypes.byref(res), 0, blocks[r * row_bytes:].ctypes.data, 0,
                    xq[i * act_row:].ctypes.data, 0, 1)
                dots[i, r] = res.value
        out += blocks.tobytes() + deq.tobytes() + xq.tobytes() + dots.tobytes()

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "wb") as f:
        f.write(out)
    print(f"wrote {args.out}: {len(out)} bytes")


if __name__ == "__main__":
    main()
