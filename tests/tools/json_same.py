"""The comparison the parity tests share: the first difference between two JSON values."""


def same(got, want, path, tol=2e-4):
    """The first difference between two JSON values ("" when none): numbers within tol."""
    if isinstance(want, bool) or want is None or isinstance(want, str):
        return "" if got == want and type(got) is type(want) else "%s: %r != %r" % (path, got, want)
    if isinstance(want, (int, float)):
        ok = isinstance(got, (int, float)) and not isinstance(got, bool) and abs(got - want) <= tol
        return "" if ok else "%s: %r != %r" % (path, got, want)
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return "%s: %r != %r" % (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            d = same(g, w, "%s[%d]" % (path, i), tol)
            if d:
                return d
        return ""
    if not isinstance(got, dict) or list(got) != list(want):
        return "%s: keys %r != %r" % (path, list(got) if isinstance(got, dict) else got, list(want))
    for k in want:
        d = same(got[k], want[k], "%s.%s" % (path, k), tol)
        if d:
            return d
    return ""
