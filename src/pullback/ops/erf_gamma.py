"""The error and gamma functions as ops: erf, erfc, erfinv, lgamma, digamma and
polygamma, on the numpy kernels of kernels/erf_gamma.py, with torch's rules (which second
order reaches: lgamma's rule reads digamma, digamma's polygamma(1), polygamma(n)'s
polygamma(n + 1))."""

from __future__ import annotations

import math

from .elementwise import exp
from .kernels import erf_gamma as kernel
from .table.registry import public, unary

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_HALF_SQRT_PI = math.sqrt(math.pi) / 2


erf = unary("erf", kernel.erf, "ErfBackward0",
            lambda g, out, x: g * exp(-(x * x)) * _TWO_OVER_SQRT_PI)
erfc = unary("erfc", kernel.erfc, "ErfcBackward0",
             lambda g, out, x: g * exp(-(x * x)) * -_TWO_OVER_SQRT_PI)


def _erfinv_rule(g, out, x):
    """torch's: sqrt(pi)/2 exp(erfinv(x)^2) g (it saves x, not the result)."""
    e = erfinv(x)
    return g * exp(e * e) * _HALF_SQRT_PI


erfinv = unary("erfinv", kernel.erfinv, "ErfinvBackward0", _erfinv_rule)
lgamma = unary("lgamma", kernel.lgamma, "LgammaBackward0", lambda g, out, x: g * digamma(x))
digamma = unary("digamma", kernel.digamma, "DigammaBackward0",
                lambda g, out, x: g * polygamma_op(x, n=1))
polygamma_op = unary("polygamma", lambda x, n: kernel.polygamma(n, x), "PolygammaBackward0",
                     lambda g, out, x, n: g * polygamma_op(x, n=n + 1),
                     public=False, inplace="polygamma_", template="rt.polygamma({n}, {0})")


@public("polygamma", function=True)
def polygamma(n, input):
    """torch.polygamma(n, input): the n-th derivative of digamma."""
    return polygamma_op(input, n=int(n))


def _polygamma_method(self, n):
    return polygamma_op(self, n=int(n))


public("polygamma", method=True)(_polygamma_method)
