#!/usr/bin/env python3
"""The layer rule of docs/architecture.md, checked on every #include "..." of the library.

Each layer may include its own headers and those of the layers listed for it; nothing else. A
backend folder (hal/<name>/) may include hal/ and its own folder only, never another backend's;
the engine (the files directly in runtime/) reaches backends only through hal/hal.h. The public
C header include/laya/laya.h includes nothing of the project. tools/, tests/ and bench/ sit on top
and may include anything. Exits 1 naming every include that breaks the rule (and 1 when a library
file belongs to no layer, so a new folder must be given a place here)."""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")

# layer -> (path prefixes that belong to it, layers it may include)
LAYERS = {
    "ir": (["ir/"], []),
    "kernels": (["kernels/"], ["ir"]),
    "hal": (["hal/"], ["kernels", "ir"]),
    "engine": (["runtime/"], ["hal-interface", "kernels", "ir"]),
    "text": (["runtime/text/"], ["ir"]),
    "frontends": (["frontends/"], ["text", "kernels", "ir"]),
    "decisions": (["runtime/decisions/"],
                  ["frontends", "text", "engine", "hal-interface", "kernels", "ir"]),
    "capi": (["runtime/capi/"],
             ["public", "decisions", "frontends", "text", "engine", "hal-interface", "kernels",
              "ir"]),
    "public": (["include/"], []),
}
# The part of hal/ the layers above it see: the interface, not a backend.
HAL_INTERFACE = ["hal/hal.h", "hal/kv_write.h"]


def layer_of(path):
    best, best_len = None, -1
    for name, (prefixes, _) in LAYERS.items():
        for p in prefixes:
            if path.startswith(p) and len(p) > best_len:
                best, best_len = name, len(p)
    return best


def allowed(src, inc):
    own = layer_of(src)
    if own == "public":
        return False
    target = layer_of(inc)
    if inc in HAL_INTERFACE:
        target = "hal-interface"
    if own == "hal":
        # hal/<backend>/ may include hal/ (the interface, the shared headers) and its own folder.
        parts, iparts = src.split("/"), inc.split("/")
        if target == "hal-interface" or (target == "hal" and len(iparts) == 2):
            return True
        if target == "hal":
            return len(parts) > 2 and iparts[1] == parts[1]
    if target == "hal-interface" and own in ("hal",):
        return True
    if target == own:
        return True
    deps = LAYERS[own][1]
    if target == "hal-interface":
        return "hal-interface" in deps or own == "hal"
    return target in deps


def main():
    bad, unplaced, checked = [], [], 0
    for top in ["ir", "kernels", "hal", "runtime", "frontends", "include"]:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if not f.endswith((".h", ".cpp", ".inc", ".in")):
                    continue
                path = os.path.relpath(os.path.join(dirpath, f), ROOT).replace(os.sep, "/")
                if layer_of(path) is None:
                    unplaced.append(path)
                    continue
                with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
                    for n, line in enumerate(fh, 1):
                        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                        if not m:
                            continue
                        inc = m.group(1)
                        checked += 1
                        if inc.startswith("hwy/") and layer_of(path) == "kernels":
                            continue  # Highway (a package), inside the kernels only
                        if layer_of(inc) is None:
                            # a generated header beside its source (ir/laya_generated.h) or a
                            # relative include of the same folder
                            if os.path.dirname(inc) == "" or inc.startswith(("ir/laya_generated",)):
                                continue
                            bad.append("%s:%d includes %s (no layer)" % (path, n, inc))
                        elif not allowed(path, inc):
                            bad.append("%s:%d: %s (%s) includes %s (%s)" %
                                       (path, n, path, layer_of(path), inc, layer_of(inc)))
    for u in unplaced:
        print("no layer for %s: give its folder a place in tests/test_layers.py" % u)
    for b in bad:
        print("layer rule broken: " + b)
    print("%d includes checked, %d break the rule, %d files without a layer" %
          (checked, len(bad), len(unplaced)))
    return 1 if bad or unplaced or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
