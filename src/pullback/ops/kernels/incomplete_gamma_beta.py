"""The regularized incomplete gamma and beta functions and their derivatives in the
shape parameters, numpy only (scipy's names, argument order and edge values):
``gammainc(a, x)`` and ``gammaincc(a, x)`` (P and Q = 1 - P), ``betainc(a, b, x)``,
and ``gammainc_da``, ``betainc_da``, ``betainc_db``.

Each takes ndarrays (broadcast; float32 computed in float64 and rounded once, integers
as float64). The methods (docs/scipy.md section 5):

- P(a, x): the series x^a e^-x / Gamma(a) sum_n x^n / (a (a + 1) ... (a + n)) for
  x < a + 1; Legendre's continued fraction for Q above (and for a < 1 from x = 1.5),
  by Lentz's method; for a < 1/2 and x < 1.5, Q from the alternating series of
  gamma(a, x). For a >= 12 the prefix x^a e^-x / Gamma(a) goes through
  a (log1p(t) - t), t = (x - a) / a, and Stirling's series, so no large terms cancel.
- I_x(a, b): the continued fraction of DLMF 8.17.22 below x = (a + 1) / (a + b + 2),
  1 - I_(1-x)(b, a) above.
- The derivatives in a and b: the same series differentiated term by term, and the
  fractions in forward mode (the derivatives of Lentz's state carried along).

Every loop drops the elements that have converged, so that they take no more
rounding and the loop runs only as long as its slowest element.

>>> import numpy as np
>>> from pullback.ops.kernels import incomplete_gamma_beta as S
>>> S.gammainc(np.array([1.0, 2.0]), np.array([1.0, 1.0]))      # 1 - 1/e, 1 - 2/e
array([0.63212056, 0.26424112])
>>> float(S.betainc(np.array(2.0), np.array(3.0), np.array(0.5)))  # 11/16
0.6875
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .erf_gamma import _STIRLING, _lgamma_near_two, digamma, lgamma

_EPS = 3e-16  # (two units in the last place of 1: a step of 1 + 2^-52 ends the loop)
_TINY = 1e-300
_MAX_STEPS = 100000


def _broadcast_float(*args: np.ndarray) -> tuple:
    """The operands broadcast, as flat float64 copies, their shape and the dtype of the
    result (the operands' float type; float64 for integers)."""
    dtype = np.result_type(*args)
    if dtype.kind != "f":
        dtype = np.dtype(np.float64)
    arrays = np.broadcast_arrays(*(np.asarray(a, dtype=np.float64) for a in args))
    return tuple(a.reshape(-1).copy() for a in arrays), arrays[0].shape, dtype


def _until_converged(state: dict, step, result, rows: tuple = ()) -> np.ndarray:
    """Run ``step(n, state)`` for n = 1, 2, ... on the elements not yet converged (it
    updates the arrays of ``state`` and returns the mask of those that converged at
    this step), then ``result(state)`` on each one as it converges (``rows``: the shape
    of what ``result`` gives per element beyond the element itself, ``(2,)`` for a
    pair). Converged elements leave the loop, so their value takes no further rounding."""
    size = len(next(iter(state.values())))
    out = np.empty(rows + (size,))
    index = np.arange(size)
    for n in range(1, _MAX_STEPS):
        if index.size == 0:
            break
        done = step(n, state)
        if done.any():
            out[..., index[done]] = result({k: v[done] for k, v in state.items()})
            keep = ~done
            index = index[keep]
            state = {k: v[keep] for k, v in state.items()}
    if index.size:
        out[..., index] = result(state)
    return out


def _log1pmx(t: np.ndarray) -> np.ndarray:
    """log(1 + t) - t for |t| < 1/2, without cancellation: with u = t / (2 + t) (|u| <
    1/3), it is -t u + 2 (u^3 / 3 + u^5 / 5 + ...)."""
    u = t / (2 + t)
    u2 = u * u
    total = np.zeros_like(u)
    for k in range(33, 1, -2):
        total = (total + 1 / k) * u2
    return -t * u + 2 * u * total


def _gamma_prefix(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """x^a e^-x / Gamma(a), through logarithms; for a >= 12 as
    a log(x / a) - (x - a) + log(a / 2 pi) / 2 - S(a) with Stirling's series S, and
    a log(x / a) - (x - a) = a (log1p(t) - t), t = (x - a) / a, by its series where
    |t| < 1/2, so that the large terms a log x, x and lgamma(a) do not cancel."""
    out = np.exp(a * np.log(x) - x - lgamma(a))
    big = a >= 12
    ab, xb = a[big], x[big]
    r = 1 / ab
    series = np.full_like(ab, _STIRLING[-1])
    for c in reversed(_STIRLING[:-1]):
        series = series * (r * r) + c
    t = (xb - ab) / ab
    near = np.abs(t) < 0.5
    core = ab * np.log(xb / ab) - (xb - ab)
    core[near] = ab[near] * _log1pmx(t[near])
    out[big] = np.exp(core + 0.5 * np.log(ab / (2 * np.pi)) - series * r)
    return out


def _lgamma1p(a: np.ndarray) -> np.ndarray:
    """lgamma(1 + a) for |a| < 1/2, exact for small a (lgamma(2 + a) - log1p(a))."""
    return _lgamma_near_two(a) - np.log1p(a)


def _gamma_small(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) for a < 1/2, x < 1.5 from gamma(a, x)'s alternating series
    P = x^a / Gamma(a + 1) (1 + a sum_n>=1 (-x)^n / (n! (a + n))): Q = -expm1(a log x -
    lgamma(1 + a)) - x^a / Gamma(a + 1) a sum_n>=1 ..., with no cancellation where
    Q is small."""
    log_lead = a * np.log(x) - _lgamma1p(a)
    term = np.ones_like(x)
    total = np.zeros_like(x)
    for n in range(1, 40):
        term = term * (-x / n)
        total += term / (a + n)
    return -np.expm1(log_lead) - np.exp(log_lead) * a * total


def _gamma_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) = x^a e^-x / Gamma(a) sum_n x^n / (a (a + 1) ... (a + n)), for x < a + 1,
    where the terms shrink from the first on."""

    def step(n, s):
        s["term"] = s["term"] * (s["x"] / (s["a"] + n))
        s["total"] = s["total"] + s["term"]
        return np.abs(s["term"]) <= np.abs(s["total"]) * _EPS

    return _until_converged({"a": a, "x": x, "term": 1 / a, "total": 1 / a}, step,
                            lambda s: s["total"] * _gamma_prefix(s["a"], s["x"]))


def _lentz(s: dict, num: np.ndarray, den: Any) -> np.ndarray:
    """One step of Lentz's method on the fraction's state ``s`` (h, c, d): the next
    partial numerator ``num`` and denominator ``den``; returns the factor h took."""
    d = num * s["d"] + den
    d = 1 / np.where(np.abs(d) < _TINY, _TINY, d)
    c = den + num / s["c"]
    c = np.where(np.abs(c) < _TINY, _TINY, c)
    s["c"], s["d"] = c, d
    s["h"] = s["h"] * (c * d)
    return c * d


def _gamma_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) from Legendre's continued fraction
    x^a e^-x / Gamma(a) / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) / (x + 5 - a ...
    evaluated forwards by Lentz's method, for x >= a + 1 (or x >= 1.5 with a < 1)."""
    first = 1 / (x + 1 - a)

    def step(n, s):
        return np.abs(_lentz(s, -n * (n - s["a"]), s["x"] + (2 * n + 1) - s["a"]) - 1) <= _EPS

    state = {"a": a, "x": x, "h": first, "d": first, "c": np.full_like(x, 1 / _TINY)}
    return _until_converged(state, step, lambda s: s["h"] * _gamma_prefix(s["a"], s["x"]))


def _gammainc_pair(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """P(a, x) (or Q(a, x) if ``upper``) on flat float64 arrays, scipy's values at the
    edges: NaN for a < 0, x < 0 or a NaN; P(0, x) = 1 for x > 0; P(a, 0) = 0, P(a, inf) = 1."""
    p = np.full_like(x, np.nan)
    ok = (a >= 0) & (x >= 0)
    p[ok & (x == 0) & (a > 0)] = 0.0
    p[ok & (x > 0) & ((a == 0) | (x == np.inf))] = 1.0
    p[ok & (a == np.inf) & (x < np.inf)] = 0.0
    inner = ok & (x > 0) & (a > 0) & (x < np.inf) & (a < np.inf)
    # the series where it converges fast; the continued fraction where Q is the small one
    # (x >= a + 1), and for small a from x = 1.5 on, where 1 - P would cancel
    frac = inner & ((x >= a + 1) | ((a < 1) & (x >= 1.5)))
    series = inner & ~frac
    q = 1 - p
    ps = _gamma_series(a[series], x[series])
    p[series], q[series] = ps, 1 - ps
    # for small a, Q near 0 from its own series (1 - P would cancel)
    small = series & (a < 0.5) & (x < 1.5)
    qs = _gamma_small(a[small], x[small])
    p[small] = np.where(qs < 0.5, 1 - qs, p[small])
    q[small] = np.where(qs < 0.5, qs, q[small])
    qf = _gamma_fraction(a[frac], x[frac])
    p[frac], q[frac] = 1 - qf, qf
    return q if upper else p


def _ufunc_like(kernel, *args: np.ndarray) -> np.ndarray:
    flat, shape, dtype = _broadcast_float(*args)
    with np.errstate(all="ignore"):
        out = kernel(*flat)
    return out.reshape(shape).astype(dtype, copy=False)


def gammainc(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized lower incomplete gamma function P(a, x)."""
    return _ufunc_like(lambda a, x: _gammainc_pair(a, x, False), a, x)


def gammaincc(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return _ufunc_like(lambda a, x: _gammainc_pair(a, x, True), a, x)


def _beta_fraction(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """I_x(a, b) from its continued fraction (DLMF 8.17.22)
    x^a (1 - x)^b / (a B(a, b)) / (1 + d1 / (1 + d2 / (1 + ...))), with
    d_2m+1 = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)) and
    d_2m = m (b - m) x / ((a + 2m - 1)(a + 2m)), by Lentz's method, for
    x < (a + 1) / (a + b + 2), where it converges fast."""
    d = 1 - (a + b) * x / (a + 1)
    first = 1 / np.where(np.abs(d) < _TINY, _TINY, d)

    def step(m, s):
        a, b, x = s["a"], s["b"], s["x"]
        _lentz(s, m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)), 1.0)
        odd = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        return np.abs(_lentz(s, odd, 1.0) - 1) <= _EPS

    def result(s):
        a, b, x = s["a"], s["b"], s["x"]
        log_prefix = (a * np.log(x) + b * np.log1p(-x)
                      - (lgamma(a) + lgamma(b) - lgamma(a + b)))
        return np.exp(log_prefix) * s["h"] / a

    state = {"a": a, "b": b, "x": x, "h": first, "d": first, "c": np.ones_like(x)}
    return _until_converged(state, step, result)


def _betainc_flat(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """I_x(a, b) on flat float64 arrays, scipy's values at the edges: NaN outside
    a, b >= 0 (not both 0) and 0 <= x <= 1; 0 at x = 0 and for b = 0 below x = 1, 1 at
    x = 1 and for a = 0 above x = 0."""
    out = np.full_like(x, np.nan)
    ok = (a >= 0) & (b >= 0) & ((a > 0) | (b > 0)) & (x >= 0) & (x <= 1)
    ok &= (a < np.inf) & (b < np.inf)
    out[ok & ((x == 0) | ((b == 0) & (x < 1)))] = 0.0
    out[ok & ((x == 1) | ((a == 0) & (x > 0)))] = 1.0
    inner = ok & (a > 0) & (b > 0) & (x > 0) & (x < 1)
    # the fraction converges fast below the mean; above, I_x(a, b) = 1 - I_(1-x)(b, a)
    low = inner & (x * (a + b + 2) < a + 1)
    high = inner & ~low
    out[low] = _beta_fraction(a[low], b[low], x[low])
    out[high] = 1 - _beta_fraction(b[high], a[high], 1 - x[high])
    return out


def betainc(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The regularized incomplete beta function I_x(a, b)."""
    return _ufunc_like(_betainc_flat, a, b, x)


# ------------------------------------------- gammainc's derivative in a
def _log_minus_digamma(a: np.ndarray) -> np.ndarray:
    """log a - psi(a) for a >= 12: 1 / 2a + sum_k B_2k / (2k a^2k)."""
    r = 1 / a
    series = np.zeros_like(a)
    for j in range(len(_STIRLING), 0, -1):
        series = series * (r * r) + _STIRLING[j - 1] * (2 * j - 1)
    return 0.5 * r + series * (r * r)


def _log_x_minus_digamma(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log x - psi(a), the derivative of log(x^a e^-x / Gamma(a)) in a, without the
    cancellation of log x against psi(a) for large a."""
    out = np.log(x) - digamma(a)
    big = a >= 12
    out[big] = np.log(x[big] / a[big]) + _log_minus_digamma(a[big])
    return out


def _gamma_series_da(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dP/da from the series P = pre sum_n t_n (pre = x^a e^-x / Gamma(a), t_0 = 1/a,
    t_n = t_(n-1) x / (a + n)) differentiated term by term:
    dP/da = pre (S (log x - psi(a + 1)) - sum_n t_n r_n), r_n = sum_k<=n 1 / (a + k)."""

    def step(n, s):
        s["term"] = s["term"] * (s["x"] / (s["a"] + n))
        s["total"] = s["total"] + s["term"]
        s["r"] = s["r"] + 1 / (s["a"] + n)
        change = s["term"] * s["r"]
        s["dsum"] = s["dsum"] + change
        return ((np.abs(s["term"]) <= np.abs(s["total"]) * _EPS)
                & (np.abs(change) <= np.abs(s["dsum"]) * _EPS))

    def result(s):
        a, x = s["a"], s["x"]
        slope = _log_x_minus_digamma(a, x) - 1 / a  # log x - psi(a + 1)
        return _gamma_prefix(a, x) * (s["total"] * slope - s["dsum"])

    zero = np.zeros_like(a)
    return _until_converged({"a": a, "x": x, "term": 1 / a, "total": 1 / a, "r": zero,
                             "dsum": zero}, step, result)


def _lentz_da(s: dict, num: np.ndarray, dnum: Any, den: Any, dden: Any) -> tuple:
    """_lentz with the derivatives (dc, dd, dh) of its state carried along (forward mode
    through the recurrence); returns the step's factor and its derivative."""
    big_d = num * s["d"] + den
    d_big_d = dnum * s["d"] + num * s["dd"] + dden
    big_d = np.where(np.abs(big_d) < _TINY, _TINY, big_d)
    c = den + num / s["c"]
    dc = dden + dnum / s["c"] - num * s["dc"] / (s["c"] * s["c"])
    c = np.where(np.abs(c) < _TINY, _TINY, c)
    d = 1 / big_d
    dd = -d_big_d * d * d
    factor, dfactor = c * d, dc * d + c * dd
    s["dh"] = s["dh"] * factor + s["h"] * dfactor
    s["h"] = s["h"] * factor
    s["c"], s["dc"], s["d"], s["dd"] = c, dc, d, dd
    return factor, dfactor


def _gamma_fraction_da(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dQ/da from Legendre's fraction, Q = pre h: pre ((log x - psi(a)) h + dh/da), with
    dh/da carried through Lentz's recurrence."""
    first = 1 / (x + 1 - a)

    def step(n, s):
        factor, dfactor = _lentz_da(s, -n * (n - s["a"]), n, s["x"] + (2 * n + 1) - s["a"],
                                    -1.0)
        return ((np.abs(factor - 1) <= _EPS)
                & (np.abs(dfactor * s["h"]) <= _EPS * np.abs(s["dh"])))

    def result(s):
        a, x = s["a"], s["x"]
        return _gamma_prefix(a, x) * (_log_x_minus_digamma(a, x) * s["h"] + s["dh"])

    state = {"a": a, "x": x, "h": first, "dh": first * first, "d": first,
             "dd": first * first, "c": np.full_like(x, 1 / _TINY), "dc": np.zeros_like(x)}
    return _until_converged(state, step, result)


def _gamma_small_da(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dQ/da of _gamma_small's form Q = -expm1(L) - e^L a T, L = a log x - lgamma(1 + a):
    -e^L (L' (1 + a T) + T + a T'), L' = log x - psi(1 + a)."""
    lead = a * np.log(x) - _lgamma1p(a)
    slope = np.log(x) - digamma(1 + a)
    term = np.ones_like(x)
    total = np.zeros_like(x)
    dtotal = np.zeros_like(x)
    for n in range(1, 40):
        term = term * (-x / n)
        total += term / (a + n)
        dtotal -= term / ((a + n) * (a + n))
    return -np.exp(lead) * (slope * (1 + a * total) + total + a * dtotal)


def _gammainc_da_flat(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dP/da (dQ/da = -dP/da), branch by branch as _gammainc_pair: 0 at x = 0 and
    x = inf, NaN outside a > 0, x >= 0."""
    out = np.full_like(x, np.nan)
    ok = (a > 0) & (x >= 0) & (a < np.inf)
    out[ok & ((x == 0) | (x == np.inf))] = 0.0
    inner = ok & (x > 0) & (x < np.inf)
    frac = inner & ((x >= a + 1) | ((a < 1) & (x >= 1.5)))
    series = inner & ~frac
    out[series] = _gamma_series_da(a[series], x[series])
    small = series & (a < 0.5) & (x < 1.5)
    qs = _gamma_small(a[small], x[small])
    out[small] = np.where(qs < 0.5, -_gamma_small_da(a[small], x[small]), out[small])
    out[frac] = -_gamma_fraction_da(a[frac], x[frac])
    return out


def gammainc_da(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The derivative of P(a, x) in a (that of Q(a, x) is its negative)."""
    return _ufunc_like(_gammainc_da_flat, a, x)


# ------------------------------------------- betainc's derivatives in a and b
def _lentz_grad(s: dict, num: np.ndarray, dnum: tuple) -> np.ndarray:
    """One step of Lentz's method for a fraction with partial denominators 1, carrying
    the derivatives of c, d and h in each direction k (``dnum[k]``: the numerator's);
    returns the step's factor."""
    big_d = num * s["d"] + 1
    big_d = np.where(np.abs(big_d) < _TINY, _TINY, big_d)
    c = 1 + num / s["c"]
    c = np.where(np.abs(c) < _TINY, _TINY, c)
    d = 1 / big_d
    factor = c * d
    for k, dn in enumerate(dnum):
        dd = -(dn * s["d"] + num * s[f"dd{k}"]) * d * d
        dc = dn / s["c"] - num * s[f"dc{k}"] / (s["c"] * s["c"])
        s[f"dh{k}"] = s[f"dh{k}"] * factor + s["h"] * (dc * d + c * dd)
        s[f"dc{k}"], s[f"dd{k}"] = dc, dd
    s["h"] = s["h"] * factor
    s["c"], s["d"] = c, d
    return factor


def _beta_fraction_grad(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> tuple:
    """(dI/da, dI/db) from _beta_fraction's form I = prefix h / a, h the fraction,
    forward mode through Lentz's recurrence; the prefix's logarithmic derivatives are
    log x - psi(a + 1) + psi(a + b) (with the 1/a) and log1p(-x) - psi(b) + psi(a + b)."""
    first_den = 1 - (a + b) * x / (a + 1)
    first = 1 / np.where(np.abs(first_den) < _TINY, _TINY, first_den)
    # d(first)/da = -first^2 d(first_den)/da, first_den's: -x (1 - b) / (a + 1)^2, -x / (a + 1)
    da0 = first * first * x * (1 - b) / ((a + 1) * (a + 1))
    db0 = first * first * x / (a + 1)

    def step(m, s):
        a, b, x = s["a"], s["b"], s["x"]
        p, q = a + 2 * m - 1, a + 2 * m
        even = m * (b - m) * x / (p * q)
        _lentz_grad(s, even, (-even * (1 / p + 1 / q), m * x / (p * q)))
        r = a + 2 * m + 1
        odd = -(a + m) * (a + b + m) * x / (q * r)
        ab = 1 / (a + b + m)
        factor = _lentz_grad(s, odd, (odd * (1 / (a + m) + ab - 1 / q - 1 / r), odd * ab))
        return ((np.abs(factor - 1) <= _EPS) & (np.abs(s["dh0"] - s["last0"]) <= _EPS * np.abs(
            s["dh0"])) & (np.abs(s["dh1"] - s["last1"]) <= _EPS * np.abs(s["dh1"])))

    def tracked(m, s):
        s["last0"], s["last1"] = s["dh0"], s["dh1"]
        return step(m, s)

    def result(s):
        a, b, x, h = s["a"], s["b"], s["x"], s["h"]
        value = np.exp(a * np.log(x) + b * np.log1p(-x)
                       - (lgamma(a) + lgamma(b) - lgamma(a + b))) / a
        both = digamma(a + b)
        grad_a = value * ((np.log(x) - digamma(a + 1) + both) * h + s["dh0"])
        grad_b = value * ((np.log1p(-x) - digamma(b) + both) * h + s["dh1"])
        return np.stack([grad_a, grad_b])

    zero = np.zeros_like(x)
    state = {"a": a, "b": b, "x": x, "h": first, "d": first, "c": np.ones_like(x),
             "dh0": da0, "dd0": da0, "dc0": zero, "dh1": db0, "dd1": db0, "dc1": zero,
             "last0": zero, "last1": zero}
    return _until_converged(state, tracked, result, rows=(2,))


def _betainc_grad_flat(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(dI/da, dI/db), branch by branch as _betainc_flat (above the mean from
    I_x(a, b) = 1 - I_(1-x)(b, a)); 0 at x = 0 and x = 1, NaN outside a, b > 0."""
    out = np.full((2,) + x.shape, np.nan)
    ok = (a > 0) & (b > 0) & (a < np.inf) & (b < np.inf) & (x >= 0) & (x <= 1)
    out[:, ok & ((x == 0) | (x == 1))] = 0.0
    inner = ok & (x > 0) & (x < 1)
    low = inner & (x * (a + b + 2) < a + 1)
    high = inner & ~low
    out[:, low] = _beta_fraction_grad(a[low], b[low], x[low])
    out[:, high] = -_beta_fraction_grad(b[high], a[high], 1 - x[high])[::-1]
    return out


def betainc_da(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The derivative of I_x(a, b) in a."""
    return _ufunc_like(lambda a, b, x: _betainc_grad_flat(a, b, x)[0], a, b, x)


def betainc_db(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The derivative of I_x(a, b) in b."""
    return _ufunc_like(lambda a, b, x: _betainc_grad_flat(a, b, x)[1], a, b, x)
