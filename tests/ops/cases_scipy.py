"""Op cases of scipy's functions that torch does not differentiate (ops/bessel.py,
ops/sylvester.py): scipy's own values are the reference (a test-only import); both
sides of x = 25, where the Bessel kernels switch from Miller's recurrence (and the power
series for iv) to Hankel's expansions."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.special

from .case_types import A, _c


def _f64(fn):
    """scipy.linalg's ``fn`` on float64 inputs, rounded to the inputs' dtype (pullback
    computes float32 in double too)."""
    return lambda *xs: np.real(fn(*(np.float64(x) for x in xs))).astype(xs[-1].dtype)


def _sp(name: str, *order: float):
    """scipy.special's ``name`` (with its order first) in float64, in the inputs' dtype."""
    return lambda x: getattr(scipy.special, name)(*order, np.float64(x)).astype(x.dtype)


_X = A(values=[0.3, 1.7, 4.0, 9.5, 24.0, 26.5, 40.0])
_SMALL = A(values=[0.3, 1.7, 4.0, 6.5])
_XNEG = A(values=[-3.0, -0.6, 0.8, 2.5, 7.0, 26.0])

SCIPY_CASES = [
    _c("special_bessel_j0", _XNEG, reference=_sp("j0")),
    _c("special_bessel_j1", _XNEG, reference=_sp("j1")),
    _c("special_bessel_y0", _X, reference=_sp("y0")),
    _c("special_bessel_y1", _X, reference=_sp("y1")),
    # J_1'(0) = 1/2; Y at 0 is -inf, NaN below
    _c("special_bessel_j1", A(values=[0.0]), reference=_sp("j1"), tag="zero", fd=False),
    _c("special_bessel_y0", A(values=[0.0, -1.0]), reference=_sp("y0"), tag="edges", fd=False),
    # K: the integral in t below 1, in u = sqrt(2x) sinh(t/2) from 1
    _c("special_modified_bessel_k0", A(values=[0.05, 0.7, 1.0, 3.0, 12.0]), reference=_sp("k0")),
    _c("special_modified_bessel_k1", A(values=[0.05, 0.7, 1.0, 3.0, 12.0]), reference=_sp("k1")),
    _c("special_scaled_modified_bessel_k0", _X, reference=_sp("k0e")),
    _c("special_scaled_modified_bessel_k1", _X, reference=_sp("k1e")),
    _c("special_modified_bessel_k0", A(values=[0.0, -1.0]), reference=_sp("k0"), tag="edges",
       fd=False),
    _c("scipy_jn", _XNEG, p={"n": 3}, reference=_sp("jn", 3)),
    _c("scipy_jn", _X, p={"n": -2}, reference=_sp("jn", -2), tag="negative"),
    _c("scipy_yn", _X, p={"n": 2}, reference=_sp("yn", 2)),
    # (iv grows as e^x: finite differences of a sum need moderate x; ive covers x > 25)
    _c("scipy_iv", _SMALL, p={"v": 1.5}, reference=_sp("iv", 1.5)),
    _c("scipy_iv", A(values=[-3.0, -0.6, 0.8, 2.5, 5.0]), p={"v": 2.0},
       reference=_sp("iv", 2.0), tag="integer"),
    _c("scipy_iv", _SMALL, p={"v": -0.5}, reference=_sp("iv", -0.5), tag="negative"),
    _c("scipy_iv", A(values=[24.0, 26.5, 40.0]), p={"v": 1.5}, reference=_sp("iv", 1.5),
       tag="large", fd=False),
    _c("scipy_ive", _XNEG, p={"v": 1.0}, reference=_sp("ive", 1.0)),
    _c("scipy_ive", _X, p={"v": 0.25}, reference=_sp("ive", 0.25), tag="real"),
    _c("scipy_sqrtm", A((3, 3), "spd"),
       reference=_f64(scipy.linalg.sqrtm)),
    _c("scipy_sqrtm", A(values=[[2.0, 1.0], [0.3, 3.0]]),
       reference=_f64(scipy.linalg.sqrtm), tag="general"),
    _c("scipy_solve_sylvester", A((3, 3), "spd"), A((2, 2), "spd"), A((3, 2)),
       reference=_f64(scipy.linalg.solve_sylvester)),
]
