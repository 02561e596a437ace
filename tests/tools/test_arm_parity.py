#!/usr/bin/env python3
"""laya-run decide on the aarch64 build (under QEMU) against the x86-64 build, on the README's two
examples: with --kernels ref the printed results are byte-identical (the "timings" member aside:
wall-clock times), and with each build's own kernels (NEON with dotprod, or without it, against
the x86 CPU's best target) the decisions are the same: every string and boolean, the decoder's
`decision` object exactly; numbers within 1e-3 on the encoder (f32 throughout) and 0.1 on the
Q4_1 decoder, whose activations are re-quantized to int8 at every layer so that summation-order
differences move probabilities by a few points between any two kernel sets (on x86-64 itself:
"acknowledge" 0.3088 AVX3, 0.2591 AVX2, 0.3162 ref on the industrial-alarm example).

usage: test_arm_parity.py [--quick] X86_LAYA_RUN ARM_LAYA_RUN TINY.laya ENCODER_REQUEST SMOLLM2.gguf
       DECODER_REQUEST [QEMU_CPU...]
--quick (CI): the decoder on the native kernels and the first CPU only; its --kernels ref pass (the
scalar kernels on 135M parameters under QEMU: many minutes) runs in tools/test-arm64.sh.
ARM_LAYA_RUN is the cross-built binary; it runs as `qemu-aarch64-static -cpu CPU`, once per
QEMU_CPU (default: max, and cortex-a53: a CPU without dotprod).
"""
import json
import re
import subprocess
import sys
import time

TIMINGS = re.compile(r',?\s*"timings": \{[^{}]*\}')


def run(cmd, timeout=1800):
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[:2000]}")
    return p.stdout, time.monotonic() - t0


def close(a, b, tol, path="$"):
    """The same JSON shape and strings / booleans; numbers within tol."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            if k == "timings":
                continue
            bad = close(a[k], b[k], tol, f"{path}.{k}")
            if bad:
                return bad
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: lengths {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            bad = close(x, y, tol, f"{path}[{i}]")
            if bad:
                return bad
        return None
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        return None if abs(a - b) <= tol else f"{path}: {a} vs {b}"
    return None if a == b else f"{path}: {a!r} != {b!r}"


def main():
    args = sys.argv[1:]
    quick = args[:1] == ["--quick"]
    if quick:
        args = args[1:]
    x86, arm, tiny, enc_req, gguf, dec_req = args[:6]
    cpus = args[6:] or ["max", "cortex-a53"]
    cases = [("encoder", tiny, enc_req), ("decoder", gguf, dec_req)]
    failures = 0
    for name, model, req in cases:
        base = ["decide", "--model", model, "--request", req, "--threads", "2"]
        slow = quick and name == "decoder"
        ref_x86 = None if slow else run([x86] + base + ["--kernels", "ref"])[0]
        auto_x86, _ = run([x86] + base)
        for cpu in cpus[:1] if slow else cpus:
            emu = ["qemu-aarch64-static", "-cpu", cpu, arm]
            if cpu == cpus[0] and ref_x86 is not None:
                ref_arm, secs = run(emu + base + ["--kernels", "ref"])
                same = TIMINGS.sub("", ref_arm) == TIMINGS.sub("", ref_x86)
                print(f"{'ok' if same else 'FAIL'}: {name}, --kernels ref, aarch64 ({cpu}, "
                      f"{secs:.0f} s) {'byte-identical to' if same else 'differs from'} x86-64")
                if not same:
                    failures += 1
                    print("  x86:", ref_x86[:1500], "\n  arm:", ref_arm[:1500])
            auto_arm, secs = run(emu + base)
            want, got = json.loads(auto_x86), json.loads(auto_arm)
            bad = close(want, got, 1e-3 if name == "encoder" else 0.1)
            if not bad and want.get("decision") != got.get("decision"):
                bad = f"decision {got.get('decision')} != {want.get('decision')}"
            print(f"{'ok' if not bad else 'FAIL'}: {name}, native kernels, aarch64 ({cpu}, "
                  f"{secs:.0f} s) vs x86-64: {'same decisions' if not bad else bad}")
            failures += bool(bad)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
