"""More special functions numpy lacks, numpy only: the scaled complementary error
function erfcx, the normal distribution's log_ndtr and ndtri, and the modified Bessel
functions i0, i1 with their exponentially scaled forms i0e, i1e (scipy's names).

Each takes and returns an ndarray (float32 and float16 computed in float64 and rounded
once, integers as float64), as the kernels of specfun.py. The methods:

- ``erfcx(x) = e^(x^2) erfc(x)``: Cody's rational forms for x > 0.46875 without their
  factor e^(-x^2) (so no underflow), e^(x^2) erfc(x) below, 2 e^(x^2) - erfcx(-x) for
  x < 0 (inf below about -26.6).
- ``log_ndtr(x) = log Phi(x)``: log1p(-erfc(x / sqrt 2) / 2) for x > 0, and
  log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 for x <= 0 (no underflow down to -1e154).
- ``ndtri(p)``, Phi's inverse: sqrt 2 erfinv(2p - 1) for p in [1/4, 3/4] (2p - 1 is exact
  there); in the tails an initial guess (Abramowitz and Stegun 26.2.23) and Newton steps
  on log Phi(x) = log p, so tiny p keep their relative accuracy; -ndtri(1 - p) above 3/4.
- ``i0, i1`` (and ``i0e, i1e``): the power series sum (x^2/4)^k / (k! (k + nu)!) (times
  (x/2)^nu) for |x| <= 20, whose terms are all positive; above, Hankel's asymptotic
  series e^|x| / sqrt(2 pi |x|) sum_k (-1)^k a_k(nu) / |x|^k, whose smallest term at
  |x| = 20 is below 1e-17.

>>> import numpy as np
>>> from pullback.ops import specfun_more as S
>>> S.i0(np.array([0.0, 1.0, 30.0]))
array([1.00000000e+00, 1.26606588e+00, 7.81672298e+11])
>>> float(S.ndtri(np.array(0.975)))
1.9599639845400538
"""

from __future__ import annotations

import math

import numpy as np

from .specfun import (
    _BIG,
    _C,
    _D,
    _P,
    _Q,
    _SMALL,
    _SQRT_PI,
    _elementwise,
    _ratio,
    erfc,
    erfinv,
)

_SQRT2 = math.sqrt(2.0)
_LOG_2PI = math.log(2 * math.pi)


# ------------------------------------------------------------------------ erfcx
def _erfcx_positive(y: np.ndarray) -> np.ndarray:
    """erfcx(y) for y >= 0 (or NaN)."""
    out = np.empty_like(y)
    small = y <= _SMALL
    ys = y[small]
    out[small] = np.exp(ys * ys) * erfc(ys)
    mid = ~small & (y <= _BIG)
    out[mid] = _ratio(y[mid], _C[8], _C[:8], _D)
    big = ~small & ~mid
    yb = y[big]
    z = 1 / (yb * yb)
    out[big] = (1 / _SQRT_PI - z * _ratio(z, _P[5], _P[:5], _Q)) / yb
    return out


@_elementwise
def _erfcx(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    neg = x < 0
    out[~neg] = _erfcx_positive(x[~neg])
    xn = x[neg]
    out[neg] = 2 * np.exp(xn * xn) - _erfcx_positive(-xn)
    return out


erfcx = _erfcx


# ---------------------------------------------------------------------- log_ndtr
def _log_ndtr_f64(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    pos = x > 0
    out[pos] = np.log1p(-0.5 * erfc(x[pos] / _SQRT2))
    rest = ~pos
    xr = x[rest]
    out[rest] = np.log(0.5 * _erfcx_positive(-xr / _SQRT2)) - 0.5 * xr * xr
    return out


log_ndtr = _elementwise(_log_ndtr_f64)
log_ndtr.__name__ = "log_ndtr"


# ------------------------------------------------------------------------- ndtri
def _ndtri_lower(p: np.ndarray) -> np.ndarray:
    """ndtri(p) for 0 < p < 1/4: a guess, then Newton on log Phi(x) = log p."""
    t = np.sqrt(-2 * np.log(p))
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    log_p = np.log(p)
    for _ in range(4):
        lp = _log_ndtr_f64(x)
        # d/dx log Phi = phi / Phi = exp(-x^2/2 - log Phi - log(2 pi)/2)
        x = x - (lp - log_p) / np.exp(-0.5 * x * x - lp - 0.5 * _LOG_2PI)
    return x


@_elementwise
def _ndtri(p: np.ndarray) -> np.ndarray:
    out = np.full_like(p, np.nan)
    out[p == 0] = -np.inf
    out[p == 1] = np.inf
    mid = (p >= 0.25) & (p <= 0.75)
    out[mid] = _SQRT2 * erfinv(2 * p[mid] - 1)
    low = (p > 0) & (p < 0.25)
    out[low] = _ndtri_lower(p[low])
    high = (p > 0.75) & (p < 1)
    out[high] = -_ndtri_lower(1 - p[high])
    return out


ndtri = _ndtri


# ------------------------------------------------------------------ i0, i1, i0e, i1e
_SERIES_LIMIT = 20.0
_SERIES_TERMS = 48
_HANKEL_TERMS = 40


def _bessel_series(a: np.ndarray, nu: int) -> np.ndarray:
    """sum_k (a^2/4)^k / (k! (k + nu)!) (a >= 0): I_nu(a) / (a/2)^nu."""
    q = a * a / 4
    term = np.full_like(a, 1.0 if nu == 0 else 1.0)
    total = term.copy()
    for k in range(1, _SERIES_TERMS):
        term = term * q / (k * (k + nu))
        total += term
    return total


def _bessel_hankel(a: np.ndarray, nu: int) -> np.ndarray:
    """sum_k (-1)^k a_k(nu) / a^k, a > 20: I_nu(a) e^-a sqrt(2 pi a)."""
    mu = 4 * nu * nu
    term = np.ones_like(a)
    total = term.copy()
    for k in range(1, _HANKEL_TERMS):
        term = term * -(mu - (2 * k - 1) ** 2) / (8 * k * a)
        total += term
    return total


def _bessel(x: np.ndarray, nu: int, scaled: bool) -> np.ndarray:
    a = np.abs(x)
    out = np.empty_like(a)
    small = a <= _SERIES_LIMIT  # (NaN goes to the large branch and stays NaN)
    s = a[small]
    v = _bessel_series(s, nu) * (s / 2 if nu else 1.0)
    out[small] = v * np.exp(-s) if scaled else v
    big = ~small
    b = a[big]
    v = _bessel_hankel(b, nu) / np.sqrt(2 * np.pi * b)
    if not scaled:
        with np.errstate(over="ignore"):
            half = np.exp(b / 2)  # e^b as a product, so that e^b v overflows only with it
            v = v * half * half
    out[big] = np.where(b == np.inf, 0.0 if scaled else np.inf, v)
    return np.copysign(out, x) if nu % 2 else out


i0 = _elementwise(lambda x: _bessel(x, 0, False))
i0e = _elementwise(lambda x: _bessel(x, 0, True))
i1 = _elementwise(lambda x: _bessel(x, 1, False))
i1e = _elementwise(lambda x: _bessel(x, 1, True))
for _f, _n in ((i0, "i0"), (i0e, "i0e"), (i1, "i1"), (i1e, "i1e")):
    _f.__name__ = _n
