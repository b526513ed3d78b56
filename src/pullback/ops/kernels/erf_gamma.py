"""Special functions numpy lacks (erf, erfc, erfinv, lgamma, digamma, polygamma),
vectorized and accurate to float64, with numpy only (scipy is not a dependency).

Each takes and returns an ndarray (float32 and float16 are computed in float64 and
rounded once). The methods, chosen so that no step loses relative accuracy:

- ``erf``, ``erfc``: W. J. Cody's rational approximations (as in CALERF), with
  e^(-a^2) split as e^(-h^2) e^(-(a-h)(a+h)) (h: a rounded to 1/16, so h^2 is exact);
  erf = 1 - erfc beyond |a| = 0.46875, erfc(-a) = 2 - erfc(a).
- ``erfinv``: an initial guess (Giles' single-precision polynomial), then Halley
  steps on erf(x) = y, or Newton steps on log erfc(x) = log(1 - y) when |y| > 1/2
  (1 - y is exact there, so the tails keep their relative accuracy).
- ``lgamma``: Stirling's series for x >= 12; below, the recurrence into [1.5, 2.5) and
  there lgamma(2 + z) = (1 - gamma) z + sum_k (-1)^k (zeta(k) - 1) z^k / k, which is
  exact at the roots 1 and 2; the reflection formula for x < 0.
- ``digamma``: torch's algorithm (cephes' psi: the reflection formula for x < 0, the
  recurrence up to x >= 10, the asymptotic series), so values agree with torch's.
- ``polygamma(n, x)``, n >= 1: the recurrence up to x >= 20 + n, then the asymptotic
  series; the reflection formula below -40, with the n-th derivative of cot.

Poles follow torch: lgamma is inf at 0, the negative integers and -inf; digamma is
-inf/+inf at +0/-0 and NaN at the negative integers; polygamma(n) is
(-1)^(n+1) inf at every pole (torch's trigamma gives 6.6e32 at -1, a rounding
artefact of sin(-pi)).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

_SQRT_PI = math.sqrt(math.pi)
_EULER = 0.57721566490153286061
# B_2, B_4, ..., B_20
_BERNOULLI = [Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
              Fraction(43867, 798), Fraction(-174611, 330)]


def _as_float(x: np.ndarray) -> tuple[np.ndarray, np.dtype]:
    """``x`` as float64 (its own dtype, or float64 for integers, to round back to)."""
    x = np.asarray(x)
    out = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    return x.astype(np.float64), out


#: elements per chunk: the dozens of passes over a chunk stay in the cache
CHUNK = 8192


def _elementwise(kernel):
    """A function of an array from ``kernel`` (float64 in, float64 out, any shape),
    run chunk by chunk over large arrays, rounded back to the input's float dtype."""

    def run(x, *args):
        x, dtype = _as_float(x)
        flat = x.reshape(-1)
        with np.errstate(all="ignore"):  # (poles and overflow give inf, as in torch)
            if flat.size <= CHUNK:
                out = kernel(flat, *args)
            else:
                out = np.empty_like(flat)
                for i in range(0, flat.size, CHUNK):
                    out[i:i + CHUNK] = kernel(flat[i:i + CHUNK], *args)
            return out.reshape(x.shape).astype(dtype, copy=False)

    run.__name__ = kernel.__name__.lstrip("_")
    run.__doc__ = kernel.__doc__
    return run


def _exp_minus_square(a: np.ndarray) -> np.ndarray:
    """e^(-a^2) without the rounding error of a^2 (relative to a few ulp)."""
    h = np.trunc(a * 16)
    h /= 16
    d = a - h
    d *= a + h
    np.negative(d, out=d)
    np.exp(d, out=d)
    h *= h
    np.negative(h, out=h)
    np.exp(h, out=h)
    h *= d
    return h


def _ratio(x: np.ndarray, lead: float, num: tuple, den: tuple) -> np.ndarray:
    """Cody's form: (((lead x + num[0]) x + num[1]) x ... + num[-1]) /
    (((x + den[0]) x + den[1]) x ... + den[-1]), in place."""
    n = x * lead
    d = x.copy()
    for a, b in zip(num[:-1], den[:-1]):
        n += a
        n *= x
        d += b
        d *= x
    n += num[-1]
    d += den[-1]
    n /= d
    return n


# --------------------------------------------------------------------------- erf
# W. J. Cody's rational Chebyshev approximations (CALERF, Math. Comp. 1969): erf on
# |x| <= 0.46875, erfc on 0.46875 < |x| <= 4 and on |x| > 4
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346725e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)
_SMALL, _BIG = 0.46875, 4.0


def _erf_small(y: np.ndarray) -> np.ndarray:
    """erf(y) / y for |y| <= 0.46875."""
    return _ratio(y * y, _A[4], _A[:4], _B)


def _erfc_big(y: np.ndarray) -> np.ndarray:
    """erfc(y) for y > 0.46875 (or NaN)."""
    out = np.empty_like(y)
    mid = y <= _BIG
    ym = y[mid]
    out[mid] = _exp_minus_square(ym) * _ratio(ym, _C[8], _C[:8], _D)
    big = ~mid
    yb = y[big]
    with np.errstate(all="ignore"):
        z = 1 / (yb * yb)
        r = (1 / _SQRT_PI - z * _ratio(z, _P[5], _P[:5], _Q)) / yb
        out[big] = np.where(yb == np.inf, 0.0, _exp_minus_square(yb) * r)
    return out


def _erf_pieces(x: np.ndarray) -> tuple:
    """(|x| <= 0.46875, erf(x) there, erfc(|x|) elsewhere)."""
    y = np.abs(x)
    small = y <= _SMALL
    return small, x[small] * _erf_small(x[small]), _erfc_big(y[~small])


@_elementwise
def _erf(x: np.ndarray) -> np.ndarray:
    small, e, c = _erf_pieces(x)
    out = np.empty_like(x)
    out[small] = e
    out[~small] = np.copysign(1 - c, x[~small])  # (NaN stays NaN)
    return out


@_elementwise
def _erfc(x: np.ndarray) -> np.ndarray:
    small, e, c = _erf_pieces(x)
    out = np.empty_like(x)
    out[small] = 1 - e
    out[~small] = np.where(x[~small] < 0, 2 - c, c)
    return out


erf, erfc = _erf, _erfc


# ------------------------------------------------------------------------ erfinv
_GILES_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                  0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_GILES_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _horner(coefs: tuple, w: np.ndarray) -> np.ndarray:
    p = np.full_like(w, coefs[0])
    for c in coefs[1:]:
        p = p * w + c
    return p


@_elementwise
def _erfinv(y: np.ndarray) -> np.ndarray:
    a = np.abs(y)
    inside = a < 1  # also False for NaN
    a = np.where(inside, a, 0.5)
    out = np.empty_like(a)
    # inside: Giles' guess, then Halley on erf(x) = a
    c = a <= 0.5
    ac = a[c]
    x = _horner(_GILES_CENTRAL, -np.log((1 - ac) * (1 + ac)) - 2.5) * ac
    for _ in range(2):
        step = (_erf(x) - ac) / ((2 / _SQRT_PI) * _exp_minus_square(x))
        x -= step / (1 + x * step)
    out[c] = x
    # tails: Newton on log erfc(x) = log(1 - a) (1 - a is exact here, and log erfc is
    # nearly linear); Giles' guess within float32's range, else erfc's asymptotic form
    t = ~c
    at = a[t]
    rest = 1 - at
    log_rest = np.log(rest)
    w = -np.log(rest * (1 + at))
    x = np.sqrt(-log_rest)
    for _ in range(2):
        x = np.sqrt(-np.log(rest * _SQRT_PI * x))
    giles = np.where(w < 5, _horner(_GILES_CENTRAL, w - 2.5),
                     _horner(_GILES_TAIL, np.sqrt(np.maximum(w, 5)) - 3)) * at
    x = np.where(w < 16, giles, x)
    for _ in range(3):
        e = _erfc(x)
        x -= (log_rest - np.log(e)) * e / ((2 / _SQRT_PI) * _exp_minus_square(x))
    out[t] = x
    out = np.where(inside, out, np.where(np.abs(y) == 1, np.inf, np.nan))
    return np.copysign(out, y)


erfinv = _erfinv


# ------------------------------------------------------------------------ lgamma
def _zeta_minus_one(k: int) -> float:
    """zeta(k) - 1 = sum_{n >= 2} n^-k, by Euler-Maclaurin from n = 20 on."""
    n0 = 20
    head = math.fsum(n ** -k for n in range(2, n0))
    tail = n0 ** (1 - k) / (k - 1) + 0.5 * n0 ** -k
    rising = k  # k (k+1) ... (k + 2j - 2)
    for j, b in enumerate(_BERNOULLI[:6], start=1):
        tail += float(b) / math.factorial(2 * j) * rising * n0 ** (-k - 2 * j + 1)
        rising *= (k + 2 * j - 1) * (k + 2 * j)
    return head + tail


# lgamma(2 + z) = (1 - gamma) z + sum_{k >= 2} (-1)^k (zeta(k) - 1) z^k / k, |z| <= 1/2
_LG2 = [0.0, 1 - _EULER] + [(-1) ** k * _zeta_minus_one(k) / k for k in range(2, 31)]
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_STIRLING = [float(b / (2 * j * (2 * j - 1))) for j, b in enumerate(_BERNOULLI[:8], start=1)]


def _lgamma_near_two(z: np.ndarray) -> np.ndarray:
    """lgamma(2 + z) for z in [-1/2, 1/2)."""
    p = np.full_like(z, _LG2[-1])
    for c in reversed(_LG2[1:-1]):
        p = p * z + c
    return p * z


def _lgamma_stirling(x: np.ndarray) -> np.ndarray:
    """lgamma(x) for x >= 12."""
    r = 1 / x
    r2 = r * r
    s = np.full_like(x, _STIRLING[-1])
    for c in reversed(_STIRLING[:-1]):
        s = s * r2 + c
    return (x - 0.5) * np.log(x) - x + _HALF_LOG_2PI + s * r


def _lgamma_positive(x: np.ndarray) -> np.ndarray:
    """lgamma for x > 0 (finite)."""
    out = np.empty_like(x)
    big = x >= 12
    out[big] = _lgamma_stirling(x[big])
    s = x[~big]
    # k steps of the recurrence into [1.5, 2.5): u = x - k, where z = u - 2 = x - (2 + k)
    # is exact (Sterbenz), so lgamma keeps its relative accuracy at its roots 1 and 2
    k = np.floor(s - 1.5)
    z = s - (2 + k)
    down = np.where(k == -1, s, np.where(k == -2, s * (s + 1), 1.0))
    up = np.ones_like(s)
    for j in range(1, 11):
        up *= np.where(j <= k, s - j, 1.0)
    out[~big] = _lgamma_near_two(z) + np.log(up) - np.log(down)
    return out


@_elementwise
def _lgamma(x: np.ndarray) -> np.ndarray:
    out = np.full_like(x, np.inf)  # poles, and both infinities
    pos = (x > 0) & (x < np.inf)
    out[pos] = _lgamma_positive(x[pos])
    r = np.round(x)
    neg = (x < 0) & (x != r) & (x > -np.inf)
    xn = x[neg]
    # lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)
    s = np.abs(np.sin(np.pi * (xn - r[neg])))
    out[neg] = np.log(np.pi / s) - _lgamma_positive(1 - xn)
    out[np.isnan(x)] = np.nan
    return out


lgamma = _lgamma


# ----------------------------------------------------------------------- digamma
_PSI_10 = 2.25175258906672110764
_PSI_ASYMPTOTIC = (8.33333333333333333333E-2, -2.10927960927960927961E-2,
                   7.57575757575757575758E-3, -4.16666666666666666667E-3,
                   3.96825396825396825397E-3, -8.33333333333333333333E-3,
                   8.33333333333333333333E-2)


def _digamma_positive(x: np.ndarray) -> np.ndarray:
    """torch's calc_digamma for x > 0: push x up to >= 10, then the asymptotic series."""
    k = np.maximum(np.ceil(10 - x), 0)  # torch's steps of `result -= 1 / x; x += 1`
    result = np.zeros_like(x)
    for j in range(10):
        result -= np.where(j < k, 1 / (x + j), 0.0)
    x = x + k
    z = 1 / (x * x)
    y = np.where(x < 1e17, z * _horner(_PSI_ASYMPTOTIC, z), 0.0)
    return np.where(x == 10, result + _PSI_10, result + np.log(x) - 0.5 / x - y)


@_elementwise
def _digamma(x: np.ndarray) -> np.ndarray:
    out = np.full_like(x, np.nan)  # negative integers, -inf, NaN
    zero = x == 0
    out[zero] = np.copysign(np.inf, -x[zero])
    pos = x > 0
    out[pos] = _digamma_positive(x[pos])
    neg = (x < 0) & (x != np.trunc(x)) & (x > -np.inf)
    xn = x[neg]
    out[neg] = _digamma_positive(1 - xn) - np.pi / np.tan(np.pi * np.fmod(xn, 1))
    return out


digamma = _digamma


# --------------------------------------------------------------------- polygamma
def _cot_derivative_poly(n: int) -> np.polynomial.Polynomial:
    """P_n with d^n/dx^n cot(pi x) = pi^n P_n(cot(pi x)): P_0 = c,
    P_{k+1} = -(1 + c^2) P_k'."""
    p = np.polynomial.Polynomial([0.0, 1.0])
    one_plus_c2 = np.polynomial.Polynomial([1.0, 0.0, 1.0])
    for _ in range(n):
        p = -one_plus_c2 * p.deriv()
    return p


def _inverse_power(x: np.ndarray, s: int) -> np.ndarray:
    """x ** -s for a positive integer s, by squaring (np.power is slow)."""
    base = 1 / x
    out = None
    while s:
        if s & 1:
            out = base.copy() if out is None else out * base
        s >>= 1
        if s:
            base = base * base
    return out


_REFLECT = 40  # polygamma below -40: the reflection formula, not 60 terms of the sum


def _polygamma_positive(n: int, x: np.ndarray) -> np.ndarray:
    """psi^(n)(x) for finite x > -40 off the poles, n >= 1: sum_k (x + k)^-(n+1) up to
    x + k >= 20 + n, then the asymptotic series of the Hurwitz zeta function."""
    s = n + 1
    limit = 20 + n
    k = np.maximum(np.ceil(limit - x), 0)
    total = np.zeros_like(x)
    for j in range(int(k.max(initial=0))):
        total += np.where(j < k, _inverse_power(x + j, s), 0.0)
    x = x + k
    # zeta(s, q) ~ q^(1-s)/(s-1) + q^-s/2 + sum_j B_2j/(2j)! s(s+1)...(s+2j-2) q^(-s-2j+1)
    r2 = 1 / (x * x)
    tail = np.zeros_like(x)
    rising = s
    terms = []
    for j, b in enumerate(_BERNOULLI, start=1):
        terms.append(float(b) / math.factorial(2 * j) * rising)
        rising *= (s + 2 * j - 1) * (s + 2 * j)
    for c in reversed(terms):
        tail = (tail + c) * r2
    q = _inverse_power(x, s - 1)  # x^(1-s)
    zeta = total + q * (1 / (s - 1) + 0.5 / x + tail)
    return (-1) ** (n + 1) * math.factorial(n) * zeta


@_elementwise
def _polygamma(x: np.ndarray, n: int) -> np.ndarray:
    out = np.full_like(x, np.nan)  # -inf, NaN
    r = np.round(x)
    pole = (x <= 0) & (x == r)
    out[pole] = (-1) ** (n + 1) * np.inf
    out[x == np.inf] = 0.0
    near = (x > -_REFLECT) & ~pole
    out[near] = _polygamma_positive(n, x[near])  # (the sum from x up: no cancellation)
    neg = (x <= -_REFLECT) & (x > -np.inf)
    xn = x[neg]
    # psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi d^n/dx^n cot(pi x)
    c = 1 / np.tan(np.pi * (xn - r[neg]))
    cot_n = np.pi ** n * _cot_derivative_poly(n)(c)
    out[neg] = (-1) ** n * _polygamma_positive(n, 1 - xn) - np.pi * cot_n
    return out


def polygamma(n: int, x: np.ndarray) -> np.ndarray:
    """psi^(n)(x), the n-th derivative of digamma (n = 0: digamma itself)."""
    return digamma(x) if n == 0 else _polygamma(x, n)
