#!/usr/bin/env python3
"""scripts/fit-vmath.py — the polynomial coefficients of backends/cpu/vmath_kernels_impl.h.

Least-squares fits in Chebyshev polynomials on Chebyshev nodes, against mpmath at 40 digits,
converted to monomial coefficients (what the kernels evaluate), with the largest absolute error
on a fine grid:

  erfc  erfc(y) = t exp(-y^2 + P(t)), t = 1 / (1 + y/2), y >= 0:  P of degree 12 on t in [0, 1]
        (gelu's erf form, evaluated in f64 for f32 inputs)
  tanh  tanh(x) = x + x^3 Q(x^2), |x| < 0.625:  Q of degree 5 on x^2 in [0, 0.390625]
        (tanh in f32)

Run with a Python that has numpy and mpmath (the bench venv: scripts/make-bench-venv.sh):
  build/bench-venv/bin/python scripts/fit-vmath.py
"""
import mpmath as mp
import numpy as np

mp.mp.dps = 40


def fit(f, a, b, degree, nodes=4000):
    k = np.arange(nodes)
    u = np.cos(np.pi * (k + 0.5) / nodes)
    t = (a + b) / 2 + (b - a) / 2 * u
    y = np.array([float(f(mp.mpf(float(v)))) for v in t])
    cheb = np.polynomial.Chebyshev(np.polynomial.chebyshev.chebfit(u, y, degree), domain=[a, b])
    mono = cheb.convert(kind=np.polynomial.Polynomial)
    grid = np.linspace(a, b, 2001)
    err = max(abs(mono(v) - float(f(mp.mpf(float(v))))) for v in grid)
    return mono.coef, err


def erfc_exponent(t):
    if t == 0:
        return mp.log(1 / (2 * mp.sqrt(mp.pi)))
    y = 2 / t - 2
    return mp.log(mp.erfc(y) * mp.exp(y * y) / t)


def tanh_odd(z):
    if z == 0:
        return mp.mpf(-1) / 3
    x = mp.sqrt(z)
    return (mp.tanh(x) / x - 1) / z


for name, f, a, b, degree in (("erfc P", erfc_exponent, 0.0, 1.0, 12),
                              ("tanh Q", tanh_odd, 0.0, 0.625 ** 2, 5)):
    coef, err = fit(f, a, b, degree)
    print(f"{name}: degree {degree}, max |error| {err:.2e}")
    print("  " + ", ".join(repr(float(c)) for c in coef))
