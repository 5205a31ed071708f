#!/usr/bin/python3
"""Fits the piecewise polynomials of the AVX-512 GELU kernels (gelu_tab_* in
src/backend/cpu/simd/fast_ew.c): for y = |x| in [0, 31.5/8), the lower tail
q(y) = Phi(-y) (erf form) or 1 / (1 + e^(2u(y))), u = sqrt(2/pi) (y + 0.044715 y^3)
(tanh form), on 32 pieces centred at k/8, q ~ sum_j c[j][k] s^j, s = y - k/8 in
[-1/16, 1/16]. Per piece: least squares on Chebyshev nodes weighted by 1/q
(relative error), reweighted towards minimax (Lawson). Prints the C tables and the
maximum relative error with float coefficients evaluated in float with FMAs.
Usage: /usr/bin/python3 tools/fit_gelu_tables.py [degree]   (needs numpy)"""
import math
import sys

import numpy as np

DEG = int(sys.argv[1]) if len(sys.argv) > 1 else 5
K, W = 32, 1.0 / 8


def q_erf(y):
    return 0.5 * np.array([math.erfc(v / math.sqrt(2.0)) for v in np.atleast_1d(y)])


def q_tanh(y):
    y = np.atleast_1d(y).astype(np.float64)
    u = math.sqrt(2.0 / math.pi) * (y + 0.044715 * y ** 3)
    return 1.0 / (1.0 + np.exp(2.0 * u))


def fit_piece(f, c):
    h = W / 2 * 1.02  # a little past the piece so rounding of s at the edges stays covered
    m = 200
    s = h * np.cos((np.arange(m) + 0.5) * math.pi / m)
    fy = f(c + s)
    A = np.vander(s, DEG + 1, increasing=True) / fy[:, None]
    b = np.ones_like(s)
    wt = np.ones_like(s)
    for _ in range(60):  # Lawson: weights grow where the error is largest
        sw = np.sqrt(wt)
        coef, *_ = np.linalg.lstsq(A * sw[:, None], b * sw, rcond=None)
        err = np.abs(A @ coef - b)
        wt = wt * err
        wt = wt / wt.sum()
    return coef


def f32(v):
    return np.float32(v)


def eval_f32(coef, s):
    # Horner with one rounding per step (FMA), float coefficients
    r = np.full_like(s, coef[DEG], dtype=np.float32)
    for j in range(DEG - 1, -1, -1):
        r = (r.astype(np.float64) * s.astype(np.float64) + np.float64(coef[j])).astype(np.float32)
    return r


def run(name, f):
    tab = np.zeros((DEG + 1, K), dtype=np.float32)
    worst = 0
    for k in range(K):
        c = k * W
        coef = fit_piece(f, c)
        tab[:, k] = coef.astype(np.float32)
        lo = max(0.0, c - W / 2)
        y = np.linspace(lo, c + W / 2, 4001).astype(np.float32)
        y = y[(y >= 0) & (y < 31.5 / 8)]
        s = (y.astype(np.float64) - c).astype(np.float32)  # exact in the kernel
        got = eval_f32(tab[:, k], s).astype(np.float64)
        ref = f(y.astype(np.float64))
        worst = max(worst, float(np.max(np.abs(got - ref) / ref)))
    print("/* %s: degree %d, max relative error %.3g (float coefficients, float FMA Horner) */" % (name, DEG, worst))
    print("static const float gelu_tab_%s[%d][32] __attribute__((aligned(64))) = {" % (name, DEG + 1))
    for j in range(DEG + 1):
        vals = ["%.9g" % v for v in tab[j]]
        lines = [", ".join(vals[i:i + 8]) for i in range(0, 32, 8)]
        print("    {" + ",\n     ".join(lines) + "},")
    print("};")
    return worst


run("erf", q_erf)
run("tanh", q_tanh)
