"""Bessel functions as ops, on the kernels of specfun_bessel.py: torch.special's
``bessel_j0, bessel_j1, bessel_y0, bessel_y1`` (its names) and scipy's ``jn, yn, iv,
ive`` of an order that is a parameter (not differentiable). The rules are the standard
recurrences: J_0' = -J_1, J_1' = J_0 - J_1 / x (1/2 at 0), the same for Y;
K_0' = -K_1, K_1' = -K_0 - K_1 / x (``modified_bessel_k0/k1`` and their scaled forms);
C_n' = (C_(n-1) - C_(n+1)) / 2 for J and Y, I_v' = (I_(v-1) + I_(v+1)) / 2 and
ive' = (ive(v-1) + ive(v+1)) / 2 - sgn(x) ive. ``pullback.scipy.special`` offers them
under scipy's names.

>>> import pullback as pb
>>> from pullback.ops import OPS
>>> x = pb.tensor([1.0, 2.0], dtype=pb.float64, requires_grad=True)
>>> OPS["special_bessel_j0"](x).sum().backward()
>>> x.grad                          # -J_1(x)
tensor([-0.4401, -0.5767], dtype=pullback.float64)
"""

from __future__ import annotations

from . import specfun_bessel as B
from .elementwise import sign, where
from .registry import declare, defop
from .special_more import (
    i0,
    special_erfcx,
    special_i0e,
    special_i1,
    special_i1e,
    special_log_ndtr,
    special_ndtri,
    special_xlog1py,
)


def _unary(name: str, forward, grad_fn: str, rule, uses: str):
    """A unary op, pb.special.<torch's name> (``special_bessel_j0``: ``bessel_j0``)."""
    return defop(name, forward, grad_fn, vjp=(rule,), uses=(uses,), elementwise=True,
                 fresh=True, function="special." + name.removeprefix("special_"))


special_bessel_j0 = _unary("special_bessel_j0", B.j0, "SpecialBesselJ0Backward0",
                           lambda g, out, x: -g * special_bessel_j1(x), "x")
special_bessel_j1 = _unary("special_bessel_j1", B.j1, "SpecialBesselJ1Backward0",
                           lambda g, out, x: g * where(x == 0, 0.5, special_bessel_j0(x)
                                                       - out / x), "x out")
special_bessel_y0 = _unary("special_bessel_y0", B.y0, "SpecialBesselY0Backward0",
                           lambda g, out, x: -g * special_bessel_y1(x), "x")
special_bessel_y1 = _unary("special_bessel_y1", B.y1, "SpecialBesselY1Backward0",
                           lambda g, out, x: g * (special_bessel_y0(x) - out / x), "x out")

# K_0' = -K_1, K_1' = -K_0 - K_1 / x; the scaled ones (e^x K): k0e - k1e, k1e (1 - 1/x) - k0e
special_modified_bessel_k0 = _unary(
    "special_modified_bessel_k0", B.k0, "SpecialModifiedBesselK0Backward0",
    lambda g, out, x: -g * special_modified_bessel_k1(x), "x")
special_modified_bessel_k1 = _unary(
    "special_modified_bessel_k1", B.k1, "SpecialModifiedBesselK1Backward0",
    lambda g, out, x: -g * (special_modified_bessel_k0(x) + out / x), "x out")
special_scaled_modified_bessel_k0 = _unary(
    "special_scaled_modified_bessel_k0", B.k0e, "SpecialScaledModifiedBesselK0Backward0",
    lambda g, out, x: g * (out - special_scaled_modified_bessel_k1(x)), "x out")
special_scaled_modified_bessel_k1 = _unary(
    "special_scaled_modified_bessel_k1", B.k1e, "SpecialScaledModifiedBesselK1Backward0",
    lambda g, out, x: g * (out - special_scaled_modified_bessel_k0(x) - out / x), "x out")


def _ordered(name: str, forward, grad_fn: str, rule, uses: str = "x"):
    """An op of x with a non-differentiable order ``n`` (a number)."""
    return defop(name, forward, grad_fn, vjp=(rule,), uses=(uses,), elementwise=True,
                 fresh=True)


scipy_jn = _ordered("scipy_jn", lambda x, n: B.jn(x, n), "ScipyJnBackward0",
                    lambda g, out, x, n: g * (scipy_jn(x, n=n - 1) - scipy_jn(x, n=n + 1)) / 2)
scipy_yn = _ordered("scipy_yn", lambda x, n: B.yn(x, n), "ScipyYnBackward0",
                    lambda g, out, x, n: g * (scipy_yn(x, n=n - 1) - scipy_yn(x, n=n + 1)) / 2)
scipy_iv = _ordered("scipy_iv", lambda x, v: B.iv(x, v), "ScipyIvBackward0",
                    lambda g, out, x, v: g * (scipy_iv(x, v=v - 1) + scipy_iv(x, v=v + 1)) / 2)
scipy_ive = _ordered("scipy_ive", lambda x, v: B.ive(x, v), "ScipyIveBackward0",
                     lambda g, out, x, v: g * ((scipy_ive(x, v=v - 1) + scipy_ive(x, v=v + 1)) / 2
                                               - sign(x) * out), "x out")


# pb.special: torch.special's names of the ops of special_more.py too
for _op, _names in ((i0, ("special.i0", "special.modified_bessel_i0")),
                    (special_i0e, "special.i0e"),
                    (special_i1, ("special.i1", "special.modified_bessel_i1")),
                    (special_i1e, "special.i1e"), (special_erfcx, "special.erfcx"),
                    (special_log_ndtr, "special.log_ndtr"), (special_ndtri, "special.ndtri"),
                    (special_xlog1py, "special.xlog1py")):
    declare(_op, _op.name, function=_names)
del _op, _names
