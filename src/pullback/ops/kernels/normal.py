"""The normal distribution's functions numpy lacks, numpy only: the scaled complementary
error function erfcx, log_ndtr and ndtri (scipy's names).

Each takes and returns an ndarray (float32 and float16 computed in float64 and rounded
once, integers as float64), as the kernels of erf_gamma.py. The methods:

- ``erfcx(x) = e^(x^2) erfc(x)``: Cody's rational forms for x > 0.46875 without their
  factor e^(-x^2) (so no underflow), e^(x^2) erfc(x) below, 2 e^(x^2) - erfcx(-x) for
  x < 0 (inf below about -26.6).
- ``log_ndtr(x) = log Phi(x)``: log1p(-erfc(x / sqrt 2) / 2) for x > 0, and
  log(erfcx(-x / sqrt 2) / 2) - x^2 / 2 for x <= 0 (no underflow down to -1e154).
- ``ndtri(p)``, Phi's inverse: sqrt 2 erfinv(2p - 1) for p in [1/4, 3/4] (2p - 1 is exact
  there); in the tails an initial guess (Abramowitz and Stegun 26.2.23) and Newton steps
  on log Phi(x) = log p, so tiny p keep their relative accuracy; -ndtri(1 - p) above 3/4.

>>> import numpy as np
>>> from pullback.ops.kernels import normal as S
>>> float(S.ndtri(np.array(0.975)))
1.9599639845400538
"""

from __future__ import annotations

import math

import numpy as np

from .erf_gamma import (
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
