"""Bessel functions as ops, on the kernels of kernels/bessel.py: torch's ``i0`` and
torch.special's ``i0e, i1, i1e, bessel_j0, bessel_j1, bessel_y0, bessel_y1,
modified_bessel_k0, modified_bessel_k1`` and their scaled forms (its names, grad_fn names
and values at 0), and scipy's ``jn, yn, iv, ive`` of an order that is a parameter (not
differentiable). The rules are the standard recurrences: i0' = i1, i0e' = i1e - sgn(x)
i0e, i1' = i0 - i1 / x and i1e' = i0e - i1e (sgn(x) + 1 / x) (both 1/2 at 0);
J_0' = -J_1, J_1' = J_0 - J_1 / x (1/2 at 0), the same for Y;
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
>>> x = pb.tensor([0.0, 1.0, -2.0], dtype=pb.float64, requires_grad=True)
>>> y = OPS["special_i1"](x)
>>> y.grad_fn.name()
'SpecialI1Backward0'
>>> y.sum().backward()
>>> x.grad                          # i1' = i0 - i1 / x, 1/2 at 0
tensor([0.5000, 0.7009, 1.4843], dtype=pullback.float64)
"""

from __future__ import annotations

import numpy as np

from .elementwise import sign, where
from .kernels import bessel as B
from .table.registry import declare, unary

# ----------------------------------------------------- first kind, modified: i0, i1
# torch: i0' = i1; i0e' = i1e - sgn(x) i0e; i1' = i0 - i1 / x and i1e' = i0e - i1e (sgn(x)
# + 1 / x), both 1/2 at x = 0
i0 = unary("i0", B.i0, "I0Backward0", lambda g, out, x: g * special_i1(x), "x",
           numpy={np.i0: lambda x: i0(x)})
declare(i0, "i0", function=("special.i0", "special.modified_bessel_i0"))
special_i0e = unary("special_i0e", B.i0e, "SpecialI0EBackward0",
                    lambda g, out, x: g * (special_i1e(x) - sign(x) * out), "x out",
                    public=False, function="special.i0e")
special_i1 = unary("special_i1", B.i1, "SpecialI1Backward0",
                   lambda g, out, x: g * where(x == 0, 0.5, i0(x) - out / x), "x out",
                   public=False, function=("special.i1", "special.modified_bessel_i1"))
special_i1e = unary("special_i1e", B.i1e, "SpecialI1EBackward0",
                    lambda g, out, x: g * where(x == 0, 0.5, special_i0e(x)
                                                - out * (sign(x) + 1 / x)), "x out",
                    public=False, function="special.i1e")

# ------------------------------------------------------------- first and second kind
special_bessel_j0 = unary("special_bessel_j0", B.j0, "SpecialBesselJ0Backward0",
                          lambda g, out, x: -g * special_bessel_j1(x), "x",
                          public=False, function="special.bessel_j0")
special_bessel_j1 = unary("special_bessel_j1", B.j1, "SpecialBesselJ1Backward0",
                          lambda g, out, x: g * where(x == 0, 0.5, special_bessel_j0(x)
                                                      - out / x), "x out",
                          public=False, function="special.bessel_j1")
special_bessel_y0 = unary("special_bessel_y0", B.y0, "SpecialBesselY0Backward0",
                          lambda g, out, x: -g * special_bessel_y1(x), "x",
                          public=False, function="special.bessel_y0")
special_bessel_y1 = unary("special_bessel_y1", B.y1, "SpecialBesselY1Backward0",
                          lambda g, out, x: g * (special_bessel_y0(x) - out / x), "x out",
                          public=False, function="special.bessel_y1")

# K_0' = -K_1, K_1' = -K_0 - K_1 / x; the scaled ones (e^x K): k0e - k1e, k1e (1 - 1/x) - k0e
special_modified_bessel_k0 = unary(
    "special_modified_bessel_k0", B.k0, "SpecialModifiedBesselK0Backward0",
    lambda g, out, x: -g * special_modified_bessel_k1(x), "x",
    public=False, function="special.modified_bessel_k0")
special_modified_bessel_k1 = unary(
    "special_modified_bessel_k1", B.k1, "SpecialModifiedBesselK1Backward0",
    lambda g, out, x: -g * (special_modified_bessel_k0(x) + out / x), "x out",
    public=False, function="special.modified_bessel_k1")
special_scaled_modified_bessel_k0 = unary(
    "special_scaled_modified_bessel_k0", B.k0e, "SpecialScaledModifiedBesselK0Backward0",
    lambda g, out, x: g * (out - special_scaled_modified_bessel_k1(x)), "x out",
    public=False, function="special.scaled_modified_bessel_k0")
special_scaled_modified_bessel_k1 = unary(
    "special_scaled_modified_bessel_k1", B.k1e, "SpecialScaledModifiedBesselK1Backward0",
    lambda g, out, x: g * (out - special_scaled_modified_bessel_k0(x) - out / x), "x out",
    public=False, function="special.scaled_modified_bessel_k1")

# ------------------------------------------- scipy's, of an order (a param, no gradient)
scipy_jn = unary("scipy_jn", lambda x, n: B.jn(x, n), "ScipyJnBackward0",
                 lambda g, out, x, n: g * (scipy_jn(x, n=n - 1) - scipy_jn(x, n=n + 1)) / 2,
                 public=False, template="rt.jn({0}, {n})")
scipy_yn = unary("scipy_yn", lambda x, n: B.yn(x, n), "ScipyYnBackward0",
                 lambda g, out, x, n: g * (scipy_yn(x, n=n - 1) - scipy_yn(x, n=n + 1)) / 2,
                 public=False, template="rt.yn({0}, {n})")
scipy_iv = unary("scipy_iv", lambda x, v: B.iv(x, v), "ScipyIvBackward0",
                 lambda g, out, x, v: g * (scipy_iv(x, v=v - 1) + scipy_iv(x, v=v + 1)) / 2,
                 public=False, template="rt.iv({0}, {v})")
scipy_ive = unary("scipy_ive", lambda x, v: B.ive(x, v), "ScipyIveBackward0",
                  lambda g, out, x, v: g * ((scipy_ive(x, v=v - 1) + scipy_ive(x, v=v + 1)) / 2
                                            - sign(x) * out), "x out", public=False,
                  template="rt.ive({0}, {v})")
