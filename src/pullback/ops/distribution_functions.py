"""The normal, gamma and beta distributions' functions as ops, on the numpy kernels of
kernels/normal.py and kernels/incomplete_gamma_beta.py: the normal distribution's
log_ndtr and ndtri, erfcx and xlog1py, with torch's rules (``torch.special``'s: its
grad_fn names, its values at 0 and at the poles); the regularized incomplete gamma
functions (torch's ``special.gammainc``, ``gammaincc``) and scipy's incomplete beta
function ``betainc``, differentiable in x and in their shape parameters (those once: a
second derivative in a or b raises NotImplementedError, as torch's igamma does for a
first one). ``pullback.scipy.special`` offers them under scipy's names.

>>> import pullback as pb
>>> x = pb.tensor([-1.0, 0.0, 2.0], dtype=pb.float64, requires_grad=True)
>>> y = pb.special.log_ndtr(x)
>>> y.grad_fn.name()
'SpecialLogNdtrBackward0'
>>> y.sum().backward()
>>> x.grad                          # phi(x) / Phi(x)
tensor([1.5251, 0.7979, 0.0552], dtype=pullback.float64)
"""

from __future__ import annotations

import math

import numpy as np

from .elementwise import exp, log, logical_and, where
from .erf_gamma import digamma, lgamma
from .kernels import incomplete_gamma_beta, normal
from .pointwise import log1p, xlogy
from .table.registry import defop, unary

_SQRT_2PI = math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


# torch: erfcx' = 2 x erfcx(x) - 2 / sqrt(pi)
special_erfcx = unary("special_erfcx", normal.erfcx, "SpecialErfcxBackward0",
                      lambda g, out, x: (2.0 * x * out - _TWO_OVER_SQRT_PI) * g, "x out",
                      public=False, function="special.erfcx")
# torch: log_ndtr' = phi / Phi = exp(-(log Phi + x^2 / 2)) / sqrt(2 pi)
special_log_ndtr = unary("special_log_ndtr", normal.log_ndtr, "SpecialLogNdtrBackward0",
                         lambda g, out, x: g / _SQRT_2PI * exp(-(out + x * x / 2)), "x out",
                         public=False, function="special.log_ndtr")
# torch: ndtri' = sqrt(2 pi) exp(ndtri^2 / 2)
special_ndtri = unary("special_ndtri", normal.ndtri, "SpecialNdtriBackward0",
                      lambda g, out, x: g * _SQRT_2PI * exp(out * out / 2), "out",
                      public=False, function="special.ndtri")


def _xlog1py(x, y):
    """torch's (and scipy's) xlog1py: 0 where x == 0 (unless y is NaN), else x log1p(y)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        v = np.where(x == 0, 0, x * np.log1p(y))
    return np.where(np.isnan(y), np.nan, v).astype(v.dtype, copy=False)


# torch: x's gradient xlog1py(g, y), 0 where x == 0 and y <= -1; y's g x / (1 + y)
special_xlog1py = defop(
    "special_xlog1py", _xlog1py, "SpecialXlog1PyBackward0",
    vjp=(lambda g, out, x, y: where(logical_and(x == 0, y <= -1), 0, g * log1p(y)),
         lambda g, out, x, y: g * x / (y + 1)),
    uses=("y x", "x y"), elementwise=True, fresh=True, promote=(0, 1),
    function="special.xlog1py", template="rt.xlog1py({0}, {1})")


def _refuse(function: str, arg: str, what: str = "derivative"):
    """What the rule of a shape parameter with no derivative does when a gradient is
    asked of it: raise, as torch's igamma does for its ``input``."""
    only = "in x only" if what == "derivative" else f"once in {arg}"
    raise NotImplementedError(
        f"the {what} of {function} with respect to {arg} is not implemented: "
        f"pullback.scipy.special.{function} is differentiable {only}")


def _gamma_density(a, x):
    """x^(a - 1) e^-x / Gamma(a), the derivative of gammainc(a, x) in x."""
    return exp(xlogy(a - 1, x) - x - lgamma(a))


# dP/da: no closed form; the kernel differentiates the series and the continued fraction
# (its own derivative in x is the density's in a; a second derivative in a raises)
special_gammainc_da = defop(
    "special_gammainc_da", incomplete_gamma_beta.gammainc_da, "SpecialGammaincDaBackward0",
    vjp=(lambda g, out, a, x: _refuse("gammainc", "a", "second derivative"),
         lambda g, out, a, x: g * _gamma_density(a, x) * (log(x) - digamma(a))),
    uses=("", "a x"), elementwise=True, fresh=True, promote=(0, 1),
    template="rt.gammainc_da({0}, {1})")

# torch: igamma's other (x): the density; its input (a): not implemented in torch, here
# dP/da (and dQ/da = -dP/da)
special_gammainc = defop(
    "special_gammainc", incomplete_gamma_beta.gammainc, "IgammaBackward0",
    vjp=(lambda g, out, a, x: g * special_gammainc_da(a, x),
         lambda g, out, a, x: g * _gamma_density(a, x)),
    uses=("a x", "a x"), elementwise=True, fresh=True, promote=(0, 1),
    template="rt.gammainc({0}, {1})", function=("igamma", "special.gammainc"), method="igamma",
    inplace="igamma_")
special_gammaincc = defop(
    "special_gammaincc", incomplete_gamma_beta.gammaincc, "IgammacBackward0",
    vjp=(lambda g, out, a, x: -g * special_gammainc_da(a, x),
         lambda g, out, a, x: -g * _gamma_density(a, x)),
    uses=("a x", "a x"), elementwise=True, fresh=True, promote=(0, 1),
    template="rt.gammaincc({0}, {1})", function=("igammac", "special.gammaincc"), method="igammac",
    inplace="igammac_")


def _beta_density(a, b, x):
    """x^(a - 1) (1 - x)^(b - 1) / B(a, b), the derivative of betainc(a, b, x) in x."""
    return exp(xlogy(a - 1, x) + special_xlog1py(b - 1, -x)
               - (lgamma(a) + lgamma(b) - lgamma(a + b)))


def _beta_grad_op(name: str, kernel, grad_fn: str, slope):
    """dI/da or dI/db as an op: its derivative in x is the density times ``slope``
    (the density's logarithmic derivative in that parameter); a second derivative in
    a or b raises."""
    return defop(
        name, kernel, grad_fn,
        vjp=(lambda g, out, a, b, x: _refuse("betainc", "a", "second derivative"),
             lambda g, out, a, b, x: _refuse("betainc", "b", "second derivative"),
             lambda g, out, a, b, x: g * _beta_density(a, b, x) * slope(a, b, x)),
        uses=("", "", "a b x"), elementwise=True, fresh=True, torch_args=("a", "b", "x"),
        template=f"rt.{kernel.__name__}({{0}}, {{1}}, {{2}})")


special_betainc_da = _beta_grad_op(
    "special_betainc_da", incomplete_gamma_beta.betainc_da, "SpecialBetaincDaBackward0",
    lambda a, b, x: log(x) - digamma(a) + digamma(a + b))
special_betainc_db = _beta_grad_op(
    "special_betainc_db", incomplete_gamma_beta.betainc_db, "SpecialBetaincDbBackward0",
    lambda a, b, x: log1p(-x) - digamma(b) + digamma(a + b))

# scipy's betainc(a, b, x) (torch has none): operands of one dtype (pullback.scipy
# casts them); dI/da and dI/db from the kernels that differentiate the fraction
special_betainc = defop(
    "special_betainc", incomplete_gamma_beta.betainc, "SpecialBetaincBackward0",
    vjp=(lambda g, out, a, b, x: g * special_betainc_da(a, b, x),
         lambda g, out, a, b, x: g * special_betainc_db(a, b, x),
         lambda g, out, a, b, x: g * _beta_density(a, b, x)),
    uses=("a b x", "a b x", "a b x"), elementwise=True, fresh=True,
    torch_args=("a", "b", "x"), template="rt.betainc({0}, {1}, {2})")
