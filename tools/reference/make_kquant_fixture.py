"""Records tests/fixtures/gguf/kquants-ggml.bin: ggml's own K-quant code run on fixed inputs.

The runtime's K-quant formats (kernels/quant.h) must be bit-compatible with ggml's. This script
calls the C functions of the ggml libraries that llama-cpp-python builds (libggml-base.so,
libggml-cpu.so; exported symbols, through ctypes) on deterministic weights and activations and
stores what they return, and cross-checks ggml's dequantization against gguf-py's independent numpy
implementation. tests/kernels/test_quant.cpp reads the file:

  header   "LKQF", u32 version (1), u32 n_rows, u32 k, u32 n_x          (little endian)
  f32 w[n_rows][k]        the weight rows (gaussian, outliers, all positive, constant, zeros, tiny)
  f32 x[n_x][k]           activation rows
  per type in (q4_K, q5_K, q6_K):
    u8  blocks[n_rows * k / 256 * block_bytes]   quantize_row_<type>_ref(w)
    f32 deq[n_rows][k]                            dequantize_row_<type>(blocks)
    f32 dot[n_x][n_rows]                          ggml_vec_dot_<type>_q8_K(blocks row, q8_K(x row))
  u8  q8k[n_x * k / 256 * 292]                    quantize_row_q8_K(x) (the CPU backend's quantizer)

Usage: /work/refvenv/bin/python tools/reference/make_kquant_fixture.py [--lib-dir DIR] [OUT]
  DIR holds libggml-base.so and libggml-cpu.so (default: the llama_cpp package's lib/ folder, or
  $LAYA_GGML_LIB_DIR).
"""
import argparse
import ctypes
import os
import struct
import sys

import numpy as np

TYPES = [("q4_K", 12, 144), ("q5_K", 13, 176), ("q6_K", 14, 210)]
Q8K_BYTES = 292
N_ROWS, K, N_X = 8, 512, 3


def find_lib_dir(arg):
    if arg:
        return arg
    if os.environ.get("LAYA_GGML_LIB_DIR"):
        return os.environ["LAYA_GGML_LIB_DIR"]
    import llama_cpp  # noqa: F401  (only to locate its bundled libraries)

    return os.path.join(os.path.dirname(llama_cpp.__file__), "lib")


def weights(rng, n_rows=N_ROWS, k=K, zero_block=256):
    """Weight rows that exercise a quantizer: gaussian, outliers, all positive (mins clamp to 0),
    constant, an all-zero block of `zero_block` values, tiny values, skewed."""
    w = rng.normal(0.0, 1.0, size=(n_rows, k)).astype(np.float32)
    w[1, ::37] *= 20.0  # outliers
    w[2] = np.abs(w[2]) + 0.5  # all positive: mins clamp to 0
    w[3] = 0.25  # constant
    w[4, :zero_block] = 0.0  # an all-zero (super-)block
    w[5] *= 1e-6  # tiny values
    w[6] = rng.uniform(-3.0, 1.0, size=k).astype(np.float32)  # skewed
    return w


def load_ggml(lib_dir):
    """ggml's base and CPU libraries through ctypes, the CPU backend initialized (it fills the
    f16 -> f32 table the CPU kernels read scales through)."""
    base = ctypes.CDLL(os.path.join(lib_dir, "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
    cpu = ctypes.CDLL(os.path.join(lib_dir, "libggml-cpu.so"))
    cpu.ggml_cpu_init()
    return base, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib-dir")
    ap.add_argument("out", nargs="?", default="tests/fixtures/gguf/kquants-ggml.bin")
    args = ap.parse_args()
    lib_dir = find_lib_dir(args.lib_dir)
    base, cpu = load_ggml(lib_dir)
    fp = ctypes.POINTER(ctypes.c_float)

    rng = np.random.default_rng(20261130)
    w = weights(rng)
    x = rng.normal(0.0, 2.0, size=(N_X, K)).astype(np.float32)
    x[2, 256:] = 0.0  # an all-zero activation super-block

    out = bytearray(b"LKQF" + struct.pack("<IIII", 1, N_ROWS, K, N_X))
    out += w.tobytes() + x.tobytes()

    q8k = np.zeros(N_X * K // 256 * Q8K_BYTES, dtype=np.uint8)
    cpu.quantize_row_q8_K.argtypes = [fp, ctypes.c_void_p, ctypes.c_int64]
    for r in range(N_X):
        row = np.ascontiguousarray(x[r])
        dst = q8k[r * (K // 256) * Q8K_BYTES :]
        cpu.quantize_row_q8_K(row.ctypes.data_as(fp), dst.ctypes.data, K)

    from gguf import GGMLQuantizationType, quants

    for name, type_id, bs in TYPES:
        qfn = getattr(base, f"quantize_row_{name}_ref")
        qfn.argtypes = [fp, ctypes.c_void_p, ctypes.c_int64]
        dfn = getattr(base, f"dequantize_row_{name}")
        dfn.argtypes = [ctypes.c_void_p, fp, ctypes.c_int64]
        vfn = getattr(cpu, f"ggml_vec_dot_{name}_q8_K")
        vfn.argtypes = [ctypes.c_int, fp, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                        ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        row_bytes = K // 256 * bs
        blocks = np.zeros(N_ROWS * row_bytes, dtype=np.uint8)
        deq = np.zeros((N_ROWS, K), dtype=np.float32)
        for r in range(N_ROWS):
            row = np.ascontiguousarray(w[r])
            qfn(row.ctypes.data_as(fp), blocks[r * row_bytes :].ctypes.data, K)
            dfn(blocks[r * row_bytes :].ctypes.data, deq[r].ctypes.data_as(fp), K)
        # gguf-py's numpy dequantizer (written independently of the C code) must agree exactly.
        qt = getattr(GGMLQuantizationType, name.upper())
        ref = quants.dequantize(blocks.reshape(N_ROWS, row_bytes), qt).astype(np.float32)
        if not np.array_equal(ref.view(np.uint32), deq.view(np.uint32)):
            sys.exit(f"{name}: ggml and gguf-py dequantize differently")
        dots = np.zeros((N_X, N_ROWS), dtype=np.float32)
        res = ctypes.c_float()
        for i in range(N_X):
            for r in range(N_ROWS):
                vfn(K, ctypes.byref(res), 0, blocks[r * row_bytes :].ctypes.data, 0,
                    q8k[i * (K // 256) * Q8K_BYTES :].ctypes.data, 0, 1)
                dots[i, r] = res.value
        out += blocks.tobytes() + deq.tobytes() + dots.tobytes()
    out += q8k.tobytes()

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "wb") as f:
        f.write(out)
    print(f"wrote {args.out}: {len(out)} bytes")


if __name__ == "__main__":
    main()
