"""Bessel functions of the first and second kind (scipy's ``j0, j1, y0, y1, jn, yn``),
the modified Bessel functions of the first kind (``i0, i1`` and their scaled forms
``i0e, i1e``; ``iv`` of real order and its scaled form ``ive``) and of the second kind
(``k0, k1, k0e, k1e``), numpy only, in the manner of erf_gamma.py (float64 kernels,
chunk by chunk).

The methods:

- J_n, Y_0, Y_1 for 0 < x <= 25 (and J_n for any x when n > 1): Miller's backward
  recurrence j_(k-1) = (2k / x) j_k - j_(k+1) from an order N well above x and n,
  normalized by J_0 + 2 sum J_2k = 1 (rescaled on the way so that it never overflows).
  The same sequence gives Neumann's series
  Y_0 = 2/pi (log(x/2) + gamma) J_0 - 4/pi sum (-1)^k J_2k / k and its derivative
  Y_1 = -Y_0'. The error is absolute (about 1e-16 of max |J|), so near a zero of a
  function its relative error grows, as in every method but those that expand around
  the zeros.
- x > 25 (orders 0 and 1): Hankel's asymptotic expansions P cos chi - Q sin chi and
  P sin chi + Q cos chi; the smallest term at 25 is below 1e-19.
- Y_n for n > 1: the upward recurrence from Y_0 and Y_1 (stable for Y).
- I_v(x), real v: the power series (x/2)^v sum (x^2/4)^k / (k! Gamma(k + v + 1)) for
  x <= max(25, v^2), and Hankel's e^x / sqrt(2 pi x) sum (-1)^k a_k(v) / x^k above.
  Tested for |v| <= 10.
- ``i0, i1`` (and ``i0e, i1e``): the power series sum (x^2/4)^k / (k! (k + nu)!) (times
  (x/2)^nu) for |x| <= 20, whose terms are all positive; above, Hankel's asymptotic
  series e^|x| / sqrt(2 pi |x|) sum_k (-1)^k a_k(nu) / |x|^k, whose smallest term at
  |x| = 20 is below 1e-17.
- K_0, K_1 (and e^x K): the integral int_0^inf exp(-x cosh t) cosh(nu t) dt by the
  trapezoidal rule, in t for x < 1 and in u = sqrt(2x) sinh(t/2) from 1.

>>> import numpy as np
>>> from pullback.ops.kernels import bessel as B
>>> B.j0(np.array([0.0, 1.0, 30.0]))
array([ 1.        ,  0.76519769, -0.08636798])
>>> B.i0(np.array([0.0, 1.0, 30.0]))
array([1.00000000e+00, 1.26606588e+00, 7.81672298e+11])
"""

from __future__ import annotations

import math

import numpy as np

from .erf_gamma import _elementwise, lgamma

_GAMMA = 0.5772156649015329  # Euler's constant
_MILLER_LIMIT = 25.0
_HANKEL_TERMS = 30


def _miller(x: np.ndarray, orders: int) -> tuple:
    """J_0 .. J_orders(x) (0 < x <= limit) and the sums for Y_0, Y_1 by Miller's
    backward recurrence: (list of J_k, S0, S1) with S0 = sum (-1)^k J_2k / k and
    S1 = sum (-1)^k (J_(2k-1) - J_(2k+1)) / k."""
    xmax = float(np.max(x)) if x.size else 1.0
    n = 2 * (int(max(xmax, orders) + 40 + 2 * math.sqrt(max(xmax, orders))) // 2 + 1)
    nxt = np.zeros_like(x)      # j_(k+1)
    cur = np.full_like(x, 1e-300)  # j_k, k = n
    norm = np.zeros_like(x)
    s0 = np.zeros_like(x)
    s1 = np.zeros_like(x)
    keep = [None] * (orders + 1)
    prev_odd_hi = np.zeros_like(x)  # j_(2k+1) for the current even 2k
    for k in range(n, 0, -1):
        # here cur = j_k, nxt = j_(k+1)
        if k <= orders:
            keep[k] = cur
        if k % 2 == 0:
            m = k // 2
            norm = norm + 2 * cur
            s0 = s0 + (-1) ** m * cur / m
            prev_odd_hi = nxt
        else:
            # k odd: k = 2m - 1 with the even 2m just seen: term (j_(2m-1) - j_(2m+1)) / m
            m = (k + 1) // 2
            s1 = s1 + (-1) ** m * (cur - prev_odd_hi) / m
        cur, nxt = (2 * k / x) * cur - nxt, cur
        big = np.abs(cur) > 1e250
        if big.any():
            scale = np.where(big, 1e-250, 1.0)
            cur, nxt, norm, s0, s1, prev_odd_hi = (cur * scale, nxt * scale, norm * scale,
                                                   s0 * scale, s1 * scale,
                                                   prev_odd_hi * scale)
            keep = [v * scale if v is not None else None for v in keep]
    keep[0] = cur
    norm = norm + cur
    return [v / norm for v in keep], s0 / norm, s1 / norm


def _hankel(x: np.ndarray, nu: int) -> tuple:
    """(J_nu, Y_nu)(x) for x > 25 from Hankel's expansions (nu = 0, 1)."""
    mu = 4.0 * nu * nu
    p = np.ones_like(x)
    q = np.zeros_like(x)
    term = np.ones_like(x)
    for k in range(1, 2 * _HANKEL_TERMS):
        new = term * (mu - (2 * k - 1) ** 2) / (8 * k * x)
        term = np.where(np.abs(new) < np.abs(term), new, 0.0)  # stop at the smallest term
        if k % 2:
            q = q + (term if k % 4 == 1 else -term)
        else:
            p = p + (-term if k % 4 == 2 else term)
    chi = x - (nu / 2 + 0.25) * np.pi
    c, s = np.cos(chi), np.sin(chi)
    f = np.sqrt(2 / (np.pi * x))
    return f * (p * c - q * s), f * (p * s + q * c)


def _jy01(x: np.ndarray) -> tuple:
    """J_0, J_1, Y_0, Y_1 at |x| (Y's NaN for x < 0, -inf at 0)."""
    a = np.abs(x)
    j0, j1, y0, y1 = (np.full_like(a, np.nan) for _ in range(4))
    small = (a > 0) & (a <= _MILLER_LIMIT)
    s = a[small]
    (jj0, jj1), s0, s1 = _miller(s, 1)
    lg = np.log(s / 2) + _GAMMA
    j0[small], j1[small] = jj0, jj1
    y0[small] = 2 / np.pi * (lg * jj0 - 2 * s0)
    y1[small] = 2 / np.pi * (lg * jj1 - jj0 / s + s1)
    big = a > _MILLER_LIMIT
    b = a[big]
    j0[big], y0[big] = _hankel(b, 0)
    j1[big], y1[big] = _hankel(b, 1)
    inf = np.isinf(a)  # (scipy's: NaN)
    j0[inf] = j1[inf] = y0[inf] = y1[inf] = np.nan
    zero = a == 0
    j0[zero], j1[zero], y0[zero], y1[zero] = 1.0, 0.0, -np.inf, -np.inf
    neg = x < 0
    j1[neg] = -j1[neg]
    y0[neg] = y1[neg] = np.nan
    return j0, j1, y0, y1


j0 = _elementwise(lambda x: _jy01(x)[0])
j1 = _elementwise(lambda x: _jy01(x)[1])
y0 = _elementwise(lambda x: _jy01(x)[2])
y1 = _elementwise(lambda x: _jy01(x)[3])


def _jn(x: np.ndarray, n: int) -> np.ndarray:
    """J_n(x), integer n (J_-n = (-1)^n J_n, J_n(-x) = (-1)^n J_n(x))."""
    n = int(n)
    sign = -1.0 if n < 0 and n % 2 else 1.0
    n = abs(n)
    if n <= 1:
        out = _jy01(x)[n]
        return sign * out
    a = np.abs(x)
    out = np.zeros_like(a)
    out[np.isnan(a)] = np.nan
    out[np.isinf(a)] = np.nan
    pos = (a > 0) & np.isfinite(a)
    if pos.any():
        out[pos] = _miller(a[pos], n)[0][n]
    if n % 2:
        out = np.where(x < 0, -out, out)
    return sign * out


def _yn(x: np.ndarray, n: int) -> np.ndarray:
    """Y_n(x), integer n, by the upward recurrence (Y_-n = (-1)^n Y_n)."""
    n = int(n)
    sign = -1.0 if n < 0 and n % 2 else 1.0
    n = abs(n)
    _, _, ya, yb = _jy01(x)
    if n == 0:
        return ya
    for k in range(1, n):
        with np.errstate(invalid="ignore"):
            ya, yb = yb, np.where(x == 0, yb, (2 * k / x) * yb - ya)
    return sign * yb


jn = _elementwise(_jn)
yn = _elementwise(_yn)


# ---------------------------------------------------------------------- iv, ive
def _iv_series(x: np.ndarray, v: float, scaled: bool) -> np.ndarray:
    """I_v(x) (times e^-x when scaled), x > 0, from the power series."""
    q = x * x / 4
    kmax = int(2 * (float(np.max(x)) if x.size else 0.0) + 60)
    term = np.ones_like(x)
    total = term.copy()
    for k in range(1, kmax):
        term = term * q / (k * (k + v))
        total = total + term
    lg = float(lgamma(np.array([v + 1.0]))[0])
    sgn = 1.0 if v + 1 > 0 or math.ceil(-(v + 1)) % 2 == 0 else -1.0
    log_front = v * np.log(x / 2) - lg - (x if scaled else 0.0)
    return sgn * total * np.exp(log_front)


def _iv_hankel(x: np.ndarray, v: float, scaled: bool) -> np.ndarray:
    """I_v(x) (times e^-x when scaled) for large x."""
    mu = 4.0 * v * v
    term = np.ones_like(x)
    total = term.copy()
    for k in range(1, 4 * _HANKEL_TERMS):
        new = term * -(mu - (2 * k - 1) ** 2) / (8 * k * x)
        term = np.where(np.abs(new) < np.abs(term), new, 0.0)  # stop at the smallest term
        total = total + term
    out = total / np.sqrt(2 * np.pi * x)
    if not scaled:
        half = np.exp(x / 2)
        out = out * half * half
    return out


def _iv(x: np.ndarray, v: float, scaled: bool) -> np.ndarray:
    v = float(v)
    if v < 0 and v == math.floor(v):
        v = -v  # I_-n = I_n
    a = np.abs(x)
    out = np.full_like(a, np.nan)
    lim = max(_MILLER_LIMIT, v * v)
    small = (a > 0) & (a <= lim)
    out[small] = _iv_series(a[small], v, scaled)
    big = a > lim
    out[big] = _iv_hankel(a[big], v, scaled)
    out[np.isinf(a)] = np.nan  # (scipy's)
    zero = a == 0  # (scipy's: inf for a negative fractional order, NaN scaled)
    out[zero] = 1.0 if v == 0 else (0.0 if v > 0 else np.nan if scaled else np.inf)
    if v != math.floor(v):
        out[x < 0] = np.nan
    elif v % 2:
        out = np.where(x < 0, -out, out)
    return out


iv = _elementwise(lambda x, v: _iv(x, v, False))
ive = _elementwise(lambda x, v: _iv(x, v, True))
for _f, _n in ((j0, "j0"), (j1, "j1"), (y0, "y0"), (y1, "y1"), (iv, "iv"), (ive, "ive")):
    _f.__name__ = _n


# ------------------------------------------------------------------ k0, k1, k0e, k1e
def _k_small(a: np.ndarray, nu: int) -> np.ndarray:
    """e^x K_nu(x) for 0 < x < 1: int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt by the
    trapezoidal rule (step 1/8; the integrand is analytic in a strip and decays doubly
    exponentially, so the error is far below rounding; the sum stops where the terms
    fall below 1e-18 of it)."""
    total = np.zeros_like(a)
    t = 0.0
    while a.size:
        term = np.exp(-2 * a * np.sinh(t / 2) ** 2) * (np.cosh(nu * t) if nu else 1.0)
        total = total + (0.5 * term if t == 0 else term)
        t += 0.125
        if np.all(term <= 1e-18 * total):
            break
    return total * 0.125


def _k_large(a: np.ndarray, nu: int) -> np.ndarray:
    """e^x K_nu(x) for x >= 1, the same integral in u = sqrt(2x) sinh(t/2):
    int_0^inf e^(-u^2) cosh(nu t) 2 / sqrt(2x + u^2) du with cosh t = 1 + u^2 / x, by the
    trapezoidal rule (step 1/5: the nearest singularity is at |u| = sqrt(2x))."""
    total = np.zeros_like(a)
    for k in range(40):  # (e^(-u^2) < 1e-20 beyond u = 7.8)
        u = 0.2 * k
        term = np.exp(-u * u) * 2 / np.sqrt(2 * a + u * u)
        if nu:
            term = term * (1 + u * u / a)
        total = total + (0.5 * term if k == 0 else term)
    return total * 0.2


def _k01(x: np.ndarray, nu: int, scaled: bool) -> np.ndarray:
    """K_nu(x) (times e^x when scaled), nu = 0, 1, from the integral
    K_nu(x) = int_0^inf exp(-x cosh t) cosh(nu t) dt; NaN for x < 0, inf at 0."""
    out = np.full_like(x, np.nan)
    small = (x > 0) & (x < 1)
    large = (x >= 1) & np.isfinite(x)
    out[small] = _k_small(x[small], nu)
    out[large] = _k_large(x[large], nu)
    if not scaled:
        out = out * np.exp(-np.where(np.isfinite(x), x, 0.0))
    out[x == 0] = np.inf
    out[x == np.inf] = 0.0
    return out


k0 = _elementwise(lambda x: _k01(x, 0, False))
k1 = _elementwise(lambda x: _k01(x, 1, False))
k0e = _elementwise(lambda x: _k01(x, 0, True))
k1e = _elementwise(lambda x: _k01(x, 1, True))
for _f, _n in ((k0, "k0"), (k1, "k1"), (k0e, "k0e"), (k1e, "k1e")):
    _f.__name__ = _n


# ----------------------------------------------------- i0, i1, i0e, i1e: first kind
_I_SERIES_LIMIT = 20.0
_I_SERIES_TERMS = 48
_I_HANKEL_TERMS = 40


def _i_series(a: np.ndarray, nu: int) -> np.ndarray:
    """sum_k (a^2/4)^k / (k! (k + nu)!) (a >= 0): I_nu(a) / (a/2)^nu."""
    q = a * a / 4
    term = np.full_like(a, 1.0 if nu == 0 else 1.0)
    total = term.copy()
    for k in range(1, _I_SERIES_TERMS):
        term = term * q / (k * (k + nu))
        total += term
    return total


def _i_hankel(a: np.ndarray, nu: int) -> np.ndarray:
    """sum_k (-1)^k a_k(nu) / a^k, a > 20: I_nu(a) e^-a sqrt(2 pi a)."""
    mu = 4 * nu * nu
    term = np.ones_like(a)
    total = term.copy()
    for k in range(1, _I_HANKEL_TERMS):
        term = term * -(mu - (2 * k - 1) ** 2) / (8 * k * a)
        total += term
    return total


def _i_nu(x: np.ndarray, nu: int, scaled: bool) -> np.ndarray:
    a = np.abs(x)
    out = np.empty_like(a)
    small = a <= _I_SERIES_LIMIT  # (NaN goes to the large branch and stays NaN)
    s = a[small]
    v = _i_series(s, nu) * (s / 2 if nu else 1.0)
    out[small] = v * np.exp(-s) if scaled else v
    big = ~small
    b = a[big]
    v = _i_hankel(b, nu) / np.sqrt(2 * np.pi * b)
    if not scaled:
        with np.errstate(over="ignore"):
            half = np.exp(b / 2)  # e^b as a product, so that e^b v overflows only with it
            v = v * half * half
    out[big] = np.where(b == np.inf, 0.0 if scaled else np.inf, v)
    return np.copysign(out, x) if nu % 2 else out


i0 = _elementwise(lambda x: _i_nu(x, 0, False))
i0e = _elementwise(lambda x: _i_nu(x, 0, True))
i1 = _elementwise(lambda x: _i_nu(x, 1, False))
i1e = _elementwise(lambda x: _i_nu(x, 1, True))
for _f, _n in ((i0, "i0"), (i0e, "i0e"), (i1, "i1"), (i1e, "i1e")):
    _f.__name__ = _n
