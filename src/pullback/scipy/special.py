"""``scipy.special`` with derivatives: scipy's names, parameters and conventions, on
pullback Tensors (with every derivative scipy's function has), numpy arrays and
Python numbers (plain values, as scipy gives).

Each function is the op table's primitive (``gammaln`` is ``lgamma``, ``i1e`` is
``special_i1e``) or numpy code over them (``logsumexp``, ``softmax``, ``betaln``), so it
runs eagerly, under ``pb.grad`` and in generated code alike.

>>> import pullback as pb
>>> from pullback.scipy import special
>>> x = pb.tensor([0.5, 2.0, 7.0], dtype=pb.float64, requires_grad=True)
>>> y = special.gammaln(x).sum() + special.logsumexp(x, b=[1.0, 2.0, 0.5])
>>> y.backward()
>>> x.grad                              # digamma(x) + b exp(x) / sum(b exp(x))
tensor([-1.9606,  0.4490,  2.8437], dtype=pullback.float64)
>>> special.expit(0.0), special.ndtri([0.025, 0.5])
(np.float64(0.5), array([-1.95996398,  0.        ]))
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from ..ops import OPS
from ..ops.elementwise import sign, to_dtype, where
from ..ops.table.args import np_dtype, value
from ..ops.table.promotion import promote_types

__all__ = ["beta", "betainc", "betaln", "digamma", "erf", "erfc", "erfcinv", "erfcx", "erfinv",
           "expit", "gamma", "gammainc", "gammaincc", "gammaln", "gammasgn", "i0", "i0e", "i1",
           "i1e", "iv", "ive", "j0", "j1", "jn", "jv", "k0", "k0e", "k1", "k1e", "log_ndtr",
           "log_softmax", "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma",
           "psi", "rgamma", "softmax", "xlog1py", "xlogy", "y0", "y1", "yn"]

_SQRT1_2 = math.sqrt(0.5)
_LOG_PI = math.log(math.pi)


def _float(x: Any) -> Any:
    """``x`` (a Tensor, array, list or number) with a float dtype: integers and bools
    as float64, as scipy's ufuncs compute them."""
    x = value(x)
    if isinstance(x, (bool, int)):
        return float(x)
    return x if np_dtype(x).kind in "fc" else to_dtype(x, np.float64)


def _unary(op: str, name: str, doc: str, **params: Any):
    fn = OPS[op]

    def special(x: Any) -> Any:
        return fn(_float(x), **params)

    special.__name__ = special.__qualname__ = name
    special.__doc__ = doc
    return special


gammaln = _unary("lgamma", "gammaln", "log|Gamma(x)|; its derivative is digamma.")
digamma = psi = _unary("digamma", "digamma", "psi(x), the derivative of gammaln.")
erf = _unary("erf", "erf", "The error function.")
erfc = _unary("erfc", "erfc", "1 - erf(x), without the cancellation.")
erfinv = _unary("erfinv", "erfinv", "The inverse of erf on (-1, 1).")
erfcx = _unary("special_erfcx", "erfcx", "exp(x^2) erfc(x), the scaled erfc.")
expit = _unary("sigmoid", "expit", "1 / (1 + exp(-x)), the logistic sigmoid.")
logit = _unary("logit", "logit", "log(p / (1 - p)), the inverse of expit.", eps=None)
log_ndtr = _unary("special_log_ndtr", "log_ndtr",
                  "log ndtr(x), accurate far into the lower tail.")
ndtri = _unary("special_ndtri", "ndtri", "The inverse of ndtr (the normal quantile).")
i0 = _unary("i0", "i0", "The modified Bessel function of order 0.")
i0e = _unary("special_i0e", "i0e", "exp(-|x|) i0(x).")
i1 = _unary("special_i1", "i1", "The modified Bessel function of order 1.")
i1e = _unary("special_i1e", "i1e", "exp(-|x|) i1(x).")
j0 = _unary("special_bessel_j0", "j0", "The Bessel function of the first kind of order 0.")
j1 = _unary("special_bessel_j1", "j1", "The Bessel function of the first kind of order 1.")
y0 = _unary("special_bessel_y0", "y0", "The Bessel function of the second kind of order 0.")
y1 = _unary("special_bessel_y1", "y1", "The Bessel function of the second kind of order 1.")

k0 = _unary("special_modified_bessel_k0", "k0", "The modified Bessel function K_0.")
k1 = _unary("special_modified_bessel_k1", "k1", "The modified Bessel function K_1.")
k0e = _unary("special_scaled_modified_bessel_k0", "k0e", "exp(x) k0(x).")
k1e = _unary("special_scaled_modified_bessel_k1", "k1e", "exp(x) k1(x).")


def _by_order(op: str, param: str, order: Any, x: Any) -> Any:
    """``OPS[op](x, **{param: order})`` for an order that is a number or numbers
    broadcasting with ``x`` (each distinct order once); the order is not differentiable."""
    order = np.asarray(value(order), dtype=np.float64)
    x = _float(x)
    if order.ndim == 0:
        return OPS[op](x, **{param: float(order)})
    out = None
    for v in np.unique(order):
        part = OPS[op](x, **{param: float(v)})
        out = where(order == v, part, 0.0 if out is None else out)
    return out


def _integer_order(function: str, n: Any) -> Any:
    n = np.asarray(value(n), dtype=np.float64)
    if np.any(n != np.floor(n)):
        raise ValueError(f"{function}: pullback supports integer orders only "
                         f"(got {n.tolist()})")
    return n


def jv(v: Any, x: Any) -> Any:
    """J_v(x), the Bessel function of the first kind, for integer orders ``v`` (scipy's
    ``jn`` is ``jv``); differentiable in x: J_v' = (J_(v-1) - J_(v+1)) / 2."""
    return _by_order("scipy_jn", "n", _integer_order("jv", v), x)


jn = jv


def yn(n: Any, x: Any) -> Any:
    """Y_n(x), the Bessel function of the second kind of integer order ``n`` (truncated
    to an integer, as scipy does); Y_n' = (Y_(n-1) - Y_(n+1)) / 2."""
    return _by_order("scipy_yn", "n", np.trunc(np.asarray(value(n), dtype=np.float64)), x)


def iv(v: Any, x: Any) -> Any:
    """I_v(x), the modified Bessel function of the first kind of real order ``v``
    (NaN for x < 0 unless v is an integer); I_v' = (I_(v-1) + I_(v+1)) / 2."""
    return _by_order("scipy_iv", "v", v, x)


def ive(v: Any, x: Any) -> Any:
    """exp(-|x|) I_v(x); its derivative (I_(v-1) + I_(v+1)) e^-|x| / 2 - sgn(x) ive."""
    return _by_order("scipy_ive", "v", v, x)


def erfcinv(y: Any) -> Any:
    """The inverse of erfc on (0, 2): -ndtri(y / 2) / sqrt 2, accurate for tiny y."""
    return OPS["special_ndtri"](_float(y) * 0.5) * -_SQRT1_2


def gammasgn(x: Any) -> Any:
    """The sign of Gamma(x), scipy's: 1 for x > 0 and +0, -1 at -0, (-1)^ceil(-x) for
    negative x, NaN at the poles (negative integers, -inf) and NaN; its derivative is 0."""
    x = _float(x)
    with np.errstate(invalid="ignore"):
        s = where(x > 0, 1.0, where(x == 0, where(np.signbit(x), -1.0, 1.0),
                                    1.0 - 2.0 * np.remainder(np.ceil(-x), 2.0)))
        pole = np.isnan(x) | ((x < 0) & (np.floor(x) == x))
    return where(pole, np.nan, s)


def ndtr(x: Any) -> Any:
    """The standard normal CDF, erfc(-x / sqrt 2) / 2."""
    return 0.5 * OPS["erfc"](_float(x) * -_SQRT1_2)


def xlogy(x: Any, y: Any) -> Any:
    """x log(y), 0 where x == 0 (the derivative in x is 0 there too where y <= 0)."""
    return OPS["xlogy"](_float(x), _float(y))


def xlog1py(x: Any, y: Any) -> Any:
    """x log1p(y), 0 where x == 0."""
    return OPS["special_xlog1py"](_float(x), _float(y))


def gammainc(a: Any, x: Any) -> Any:
    """The regularized lower incomplete gamma function P(a, x); differentiable in x
    (its derivative is the gamma density x^(a-1) e^-x / Gamma(a)) and once in a (the
    series and the continued fraction differentiated term by term).

    >>> float(gammainc(2.0, 1.0))           # 1 - 2 / e
    0.2642411176571153
    """
    return OPS["special_gammainc"](_float(a), _float(x))


def gammaincc(a: Any, x: Any) -> Any:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), without
    the cancellation; differentiable as gammainc."""
    return OPS["special_gammaincc"](_float(a), _float(x))


def betainc(a: Any, b: Any, x: Any) -> Any:
    """The regularized incomplete beta function I_x(a, b); differentiable in x (its
    derivative is the beta density) and once in a and b (the continued fraction
    differentiated through its recurrence).

    >>> float(betainc(2.0, 3.0, 0.5))       # 11 / 16
    0.6875
    """
    a, b, x = _common(_float(a), _float(b), _float(x))
    return OPS["special_betainc"](a, b, x)


def _common(*xs: Any) -> tuple:
    """Float operands cast to their common dtype (torch's promotion: a Python number
    takes the other operands' dtype), for an op of several operands that promotes none."""
    arrays = [x for x in xs if not isinstance(x, float)]
    dtype = functools.reduce(promote_types, map(np_dtype, arrays), None)
    return tuple(x if isinstance(x, float) or np_dtype(x) == dtype else to_dtype(x, dtype)
                 for x in xs)


def polygamma(n: Any, x: Any) -> Any:
    """The n-th derivative of digamma; ``n`` (an integer, or integers broadcasting with
    ``x``) is not differentiable."""
    x = _float(x)
    n = np.asarray(value(n))
    if np.any(n != np.floor(n)) or np.any(n < 0):
        raise ValueError("polygamma: n must be a non-negative integer")
    if n.ndim == 0:
        k = int(n)
        return OPS["digamma"](x) if k == 0 else OPS["polygamma"](x, n=k)
    out = None
    for k in np.unique(n):
        part = polygamma(int(k), x)
        out = where(n == k, part, 0.0 if out is None else out)
    return out


def betaln(a: Any, b: Any) -> Any:
    """log|B(a, b)| = gammaln(a) + gammaln(b) - gammaln(a + b)."""
    a, b = _float(a), _float(b)
    return OPS["lgamma"](a) + OPS["lgamma"](b) - OPS["lgamma"](a + b)


def _gamma_sign(x: Any) -> Any:
    """The sign of Gamma(x): 1 for x > 0, (-1)^ceil(-x) below (a constant)."""
    return where(x > 0, 1.0, 1.0 - 2.0 * np.remainder(np.ceil(-x), 2.0))


def gamma(x: Any) -> Any:
    """Gamma(x) = sign * exp(gammaln(x))."""
    x = _float(x)
    return _gamma_sign(x) * np.exp(OPS["lgamma"](x))


def rgamma(x: Any) -> Any:
    """1 / Gamma(x), 0 at the poles."""
    x = _float(x)
    return _gamma_sign(x) * np.exp(-OPS["lgamma"](x))


def beta(a: Any, b: Any) -> Any:
    """B(a, b) = Gamma(a) Gamma(b) / Gamma(a + b)."""
    a, b = _float(a), _float(b)
    s = _gamma_sign(a) * _gamma_sign(b) * _gamma_sign(a + b)
    return s * np.exp(betaln(a, b))


def multigammaln(a: Any, d: int) -> Any:
    """The log of the multivariate gamma function of dimension ``d``:
    d (d - 1) / 4 log(pi) + sum_j gammaln(a - j / 2), j = 0 .. d - 1."""
    a = _float(a)
    d = int(d)
    out = d * (d - 1) / 4 * _LOG_PI
    for j in range(d):
        out = out + OPS["lgamma"](a - j / 2)
    return out


def _constant(x: Any) -> Any:
    """``x`` as a constant (no gradient flows into it)."""
    detach = getattr(x, "detach", None)
    return detach() if detach is not None else x


def logsumexp(a: Any, axis: Any = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False) -> Any:
    """log(sum(b * exp(a))) over ``axis`` (None: all), scipy's: NaN where the sum is
    negative, unless ``return_sign``, which returns ``(log|sum|, sign(sum))``.

    >>> logsumexp([1.0, 2.0], b=[1.0, -1.0], return_sign=True)
    (np.float64(1.5413248546129181), np.float64(-1.0))
    """
    a = _float(a)
    if b is None and not return_sign:
        return OPS["logsumexp"](a, dim=_dims(axis, np.ndim(a)), keepdim=bool(keepdims))
    m = np.max(_constant(a), axis=axis, keepdims=True)
    m = where(np.isfinite(m), m, 0.0)
    e = np.exp(a - m)
    if b is not None:
        e = _float(b) * e
    s = np.sum(e, axis=axis, keepdims=True)
    if return_sign:
        sgn = _constant(sign(s))
        s = np.abs(s)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log(s) + m
    if not keepdims:
        out = np.squeeze(out, axis=axis)
        if return_sign:
            sgn = np.squeeze(sgn, axis=axis)
    return (out, sgn) if return_sign else out


def _dims(axis: Any, ndim: int) -> tuple:
    """numpy's axis (None: every axis; negative ones counted from the end) as a tuple."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    n = max(ndim, 1)
    for ax in axes:
        if not -n <= ax < n:
            raise np.exceptions.AxisError(ax, ndim)
    return tuple(sorted({ax % n for ax in axes})) if ndim else ()


def softmax(x: Any, axis: Any = None) -> Any:
    """exp(x) / sum(exp(x)) over ``axis`` (None: all elements, as scipy)."""
    x = _float(x)
    return np.exp(x - logsumexp(x, axis=axis, keepdims=True))


def log_softmax(x: Any, axis: Any = None) -> Any:
    """x - logsumexp(x) over ``axis`` (None: all elements)."""
    x = _float(x)
    return x - logsumexp(x, axis=axis, keepdims=True)


def _scalar(out: Any) -> Any:
    """A 0-d array result as a numpy scalar, as scipy returns it (Tensors stay)."""
    if isinstance(out, tuple):
        return tuple(_scalar(o) for o in out)
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def _scipy_result(fn):
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return _scalar(fn(*args, **kwargs))
    return run


for _name in __all__:
    globals()[_name] = _scipy_result(globals()[_name])
del _name
