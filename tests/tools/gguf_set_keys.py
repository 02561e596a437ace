#!/usr/bin/env python3
"""Copy a GGUF file with string / u32 metadata keys set (added or replaced); tensors unchanged.

usage: gguf_set_keys.py IN.gguf OUT.gguf KEY=s:TEXT|KEY=u32:N ...

Standard library only (the tests run it in CI without gguf-py): the layout is the GGUF v3 spec's
(header, key/values, tensor infos, padding to general.alignment, tensor data).
"""
import struct
import sys

SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def main():
    src, dst, *assignments = sys.argv[1:]
    data = open(src, "rb").read()
    at = 0

    def take(n):
        nonlocal at
        at += n
        return data[at - n:at]

    def string():
        (n,) = struct.unpack("<Q", take(8))
        return take(n)

    def skip_value(t):
        if t == 8:
            string()
        elif t == 9:
            (item, n) = struct.unpack("<IQ", take(12))
            for _ in range(n):
                skip_value(item)
        else:
            take(SIZES[t])

    magic, version, n_tensors, n_kv = struct.unpack("<4sIQQ", take(24))
    assert magic == b"GGUF" and version == 3, "not a GGUF v3 file"
    kvs = []  # (key, raw type + value)
    alignment = 32
    for _ in range(n_kv):
        key = string()
        start = at
        (t,) = struct.unpack("<I", take(4))
        skip_value(t)
        kvs.append((key, data[start:at]))
        if key == b"general.alignment":
            alignment = struct.unpack("<I", data[start + 4:at])[0]
    infos_start = at
    for _ in range(n_tensors):
        string()
        (dims,) = struct.unpack("<I", take(4))
        take(8 * dims + 4 + 8)
    infos = data[infos_start:at]
    tensors = data[(at + alignment - 1) // alignment * alignment:]

    for a in assignments:
        key, value = a.split("=", 1)
        kind, text = value.split(":", 1)
        if kind == "s":
            raw = struct.pack("<IQ", 8, len(text.encode())) + text.encode()
        else:
            raw = struct.pack("<II", 4, int(text))
        kvs = [kv for kv in kvs if kv[0] != key.encode()] + [(key.encode(), raw)]

    out = bytearray(struct.pack("<4sIQQ", b"GGUF", 3, n_tensors, len(kvs)))
    for key, raw in kvs:
        out += struct.pack("<Q", len(key)) + key + raw
    out += infos
    out += b"\0" * (-len(out) % alignment)
    out += tensors
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main()
