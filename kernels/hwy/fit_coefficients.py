#!/usr/bin/env python3
"""Derives the polynomial coefficients used by the Highway kernels (needs mpmath).

  erfc  (eltwise-inl.h, GeluErf): erfc(a) = t * exp(P(u) - a^2), t = 1 / (1 + a/2),
        u = (2t - tlo - 1) / (1 - tlo) in [-1, 1] for a in [0, 10.5]; P of degree 10 fitted to
        ln(erfc(a) / t) + a^2 by least squares on Chebyshev nodes. The error of P is the relative
        error of erfc.
  exp2  (attention-inl.h Exp2, eltwise-inl.h ExpNeg): 2^f = 1 + f * Q(f) on [-1/2, 1/2], Q of
        degree 5 (polynomial degree 6), relative least squares on Chebyshev nodes.

Usage: python3 kernels/hwy/fit_coefficients.py  (prints the coefficients, constant term first,
and the largest error on a dense grid).
"""
import mpmath as mp

mp.mp.dps = 40


def chebyshev_nodes(lo, hi, m):
    return [(lo + hi) / 2 + (hi - lo) / 2 * mp.cos(mp.pi * (k + mp.mpf(1) / 2) / m)
            for k in range(m)]


def least_squares(rows, ys):
    a = mp.matrix(rows)
    y = mp.matrix(ys)
    return mp.lu_solve(a.T * a, a.T * y)


def fit_erfc(deg=10, p=mp.mpf('0.5'), amax=mp.mpf('10.5')):
    tlo, thi = 1 / (1 + p * amax), mp.mpf(1)

    def target(t):
        a = (1 / t - 1) / p
        return mp.log(mp.erfc(a) / t) + a * a

    def u_of(t):
        return (2 * t - tlo - thi) / (thi - tlo)

    nodes = chebyshev_nodes(tlo, thi, 300)
    c = least_squares([[u_of(t) ** j for j in range(deg + 1)] for t in nodes],
                      [target(t) for t in nodes])
    err = 0
    for k in range(2000):
        t = 1 / (1 + p * amax * k / 1999)
        u = u_of(t)
        v = 0
        for j in range(deg, -1, -1):
            v = v * u + c[j]
        err = max(err, abs(v - target(t)))
    return c, err, tlo


def fit_exp2(deg=6):
    nodes = chebyshev_nodes(mp.mpf(-0.5), mp.mpf(0.5), 200)
    rows, ys = [], []
    for f in nodes:
        w = 1 / mp.power(2, f)  # relative error weights
        rows.append([f ** (j + 1) * w for j in range(deg)])
        ys.append((mp.power(2, f) - 1) * w)
    c = least_squares(rows, ys)
    err = 0
    for k in range(4001):
        f = mp.mpf(-0.5) + mp.mpf(k) / 4000
        v = 0
        for j in range(deg - 1, -1, -1):
            v = (v + c[j]) * f
        err = max(err, abs((v + 1) / mp.power(2, f) - 1))
    return c, err


if __name__ == '__main__':
    c, err, tlo = fit_erfc()
    print('erfc: tlo', mp.nstr(tlo, 17), 'max |error of P|', mp.nstr(err, 5))
    print('  ', [mp.nstr(x, 17) for x in c])
    c, err = fit_exp2()
    print('exp2: max relative error', mp.nstr(err, 5))
    print('   1,', [mp.nstr(x, 17) for x in c])
