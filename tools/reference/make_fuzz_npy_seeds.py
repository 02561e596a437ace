#!/usr/bin/env python3
"""Writes the committed seed corpus of the .npy fuzz target (tests/fuzz/seeds/npy/) with NumPy
itself, so the seeds are real .npy files: the dtypes laya-run reads (<f4, <i4) in every header
version and a few shapes, and the kinds it refuses (big-endian, float64, Fortran order).

    /work/refvenv/bin/python tools/reference/make_fuzz_npy_seeds.py tests/fuzz/seeds/npy
"""
import pathlib
import sys

import numpy as np
from numpy.lib import format as npformat


def save(path, array, version=None):
    with open(path, "wb") as f:
        npformat.write_array(f, array, version=version, allow_pickle=False)


def main(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    save(out / "ids_1x5_v1.npy", np.arange(1, 6, dtype="<i4").reshape(1, 5), (1, 0))
    save(out / "f4_2x3x4_v1.npy", rng.standard_normal((2, 3, 4)).astype("<f4"), (1, 0))
    save(out / "f4_scalar.npy", np.array(1.5, dtype="<f4"), (1, 0))
    save(out / "i4_empty.npy", np.zeros((0, 3), dtype="<i4"), (1, 0))
    save(out / "f4_3_v2.npy", np.array([1, 2, 3], dtype="<f4"), (2, 0))
    save(out / "i4_2x2_v3.npy", np.array([[1, 2], [3, 4]], dtype="<i4"), (3, 0))
    save(out / "f4_big_endian.npy", np.array([1, 2], dtype=">f4"), (1, 0))
    save(out / "f8.npy", np.array([1, 2], dtype="<f8"), (1, 0))
    save(out / "f4_fortran.npy", np.asfortranarray(np.ones((2, 3), dtype="<f4")), (1, 0))


if __name__ == "__main__":
    main(sys.argv[1])
