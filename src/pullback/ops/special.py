"""Special functions as ops: erf, erfc, erfinv, lgamma, digamma and polygamma, on the
numpy kernels of specfun.py, with torch's rules (which second order reaches: lgamma's
rule reads digamma, digamma's polygamma(1), polygamma(n)'s polygamma(n + 1))."""

from __future__ import annotations

import math

from . import specfun
from .elementwise import exp
from .registry import defop, public

_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)
_HALF_SQRT_PI = math.sqrt(math.pi) / 2


def _special(name: str, forward, grad_fn: str, rule, **facts):
    """A real unary op reachable as pb.<name>, Tensor.<name> and Tensor.<name>_."""
    facts.setdefault("function", True)
    facts.setdefault("method", True)
    facts.setdefault("inplace", True)
    return defop(name, forward, grad_fn, vjp=(rule,), uses=("x",), elementwise=True,
                 fresh=True, **facts)


erf = _special("erf", specfun.erf, "ErfBackward0",
               lambda g, out, x: g * exp(-(x * x)) * _TWO_OVER_SQRT_PI)
erfc = _special("erfc", specfun.erfc, "ErfcBackward0",
                lambda g, out, x: g * exp(-(x * x)) * -_TWO_OVER_SQRT_PI)


def _erfinv_rule(g, out, x):
    """torch's: sqrt(pi)/2 exp(erfinv(x)^2) g (it saves x, not the result)."""
    e = erfinv(x)
    return g * exp(e * e) * _HALF_SQRT_PI


erfinv = _special("erfinv", specfun.erfinv, "ErfinvBackward0", _erfinv_rule)
lgamma = _special("lgamma", specfun.lgamma, "LgammaBackward0",
                  lambda g, out, x: g * digamma(x))
digamma = _special("digamma", specfun.digamma, "DigammaBackward0",
                   lambda g, out, x: g * polygamma_op(x, n=1))
polygamma_op = _special("polygamma", lambda x, n: specfun.polygamma(n, x),
                        "PolygammaBackward0",
                        lambda g, out, x, n: g * polygamma_op(x, n=n + 1),
                        function=False, method=False, inplace="polygamma_")


@public("polygamma", function=True)
def polygamma(n, input):
    """torch.polygamma(n, input): the n-th derivative of digamma."""
    return polygamma_op(input, n=int(n))


def _polygamma_method(self, n):
    return polygamma_op(self, n=int(n))


public("polygamma", method=True)(_polygamma_method)
