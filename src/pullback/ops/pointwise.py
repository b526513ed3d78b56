"""More elementwise ops: trigonometric and hyperbolic functions, exponentials and
logarithms in other bases, two-operand math (atan2, hypot, fmax, remainder...), rounding,
predicates, and the fused forms torch has (lerp, addcmul, addcdiv).

Each is one declaration with torch's name and numpy's where both exist. The rules are
torch's formulas (derivatives.yaml, FunctionsManual.cpp), so kinks, ties, zeros and NaN
get torch's gradients; tests/ops/cases.py notes each one beside its cases. Rounding ops
(floor, ceil, trunc, round) are differentiable with a zero gradient, as in torch (their
results require grad); predicates (isinf, signbit...) are not (bool results never do).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes
from .elementwise import (
    absolute,
    conj,
    cos,
    exp,
    is_complex,
    isnan,
    logical_and,
    logical_or,
    logical_template,
    power,
    sin,
    where,
    zeros_like,
)
from .shape import detach
from .table import args
from .table.registry import defop, is_traced, public, unary

_LN2, _LN10 = math.log(2), math.log(10)
_DEG = math.pi / 180


# ------------------------------------------------------- trigonometric, hyperbolic
tan = unary("tan", np.tan, "TanBackward0", lambda g, out, x: g * conj(1 + out * out), "out")
rsqrt = unary("rsqrt", lambda x: 1 / np.sqrt(x), "RsqrtBackward0",
              lambda g, out, x: g * conj(out * out * out) * -0.5, "out",
              template="1 / np.sqrt({0})")
asin = unary("asin", np.arcsin, "AsinBackward0",
             lambda g, out, x: g * conj(rsqrt(1 - x * x)), "x", aliases=("arcsin",))
acos = unary("acos", np.arccos, "AcosBackward0",
             lambda g, out, x: -g * conj(rsqrt(1 - x * x)), "x", aliases=("arccos",))
atan = unary("atan", np.arctan, "AtanBackward0",
             lambda g, out, x: g / conj(x * x + 1), "x", aliases=("arctan",))
sinh = unary("sinh", np.sinh, "SinhBackward0", lambda g, out, x: g * conj(cosh(x)), "x")
cosh = unary("cosh", np.cosh, "CoshBackward0", lambda g, out, x: g * conj(sinh(x)), "x")
asinh = unary("asinh", np.arcsinh, "AsinhBackward0",
              lambda g, out, x: g * conj(rsqrt(x * x + 1)), "x", aliases=("arcsinh",))
acosh = unary("acosh", np.arccosh, "AcoshBackward0",
              lambda g, out, x: g * conj(rsqrt(x * x - 1)), "x", aliases=("arccosh",))
atanh = unary("atanh", np.arctanh, "AtanhBackward0",
              lambda g, out, x: g / conj(1 - x * x), "x", aliases=("arctanh",))
deg2rad = unary("deg2rad", np.deg2rad, "Deg2RadBackward0", lambda g, out, x: g * _DEG, "",
                numpy=(np.deg2rad, np.radians))
rad2deg = unary("rad2deg", np.rad2deg, "Rad2DegBackward0", lambda g, out, x: g / _DEG, "",
                numpy=(np.rad2deg, np.degrees))


def _sinc_rule(g, out, x):
    """torch's sinc_backward: (pi x cos(pi x) - sin(pi x)) / (pi x^2), 0 at x = 0 (a
    select before the product with g, as torch's masked_fill)."""
    px = x * math.pi
    return g * conj(where(x == 0, 0, (px * cos(px) - sin(px)) / (px * x)))


sinc = unary("sinc", np.sinc, "SincBackward0", _sinc_rule, "x", template="np.sinc({0})",
             numpy=np.sinc)

# ------------------------------------------------------ exponentials, logarithms
exp2 = unary("exp2", np.exp2, "Exp2Backward0", lambda g, out, x: g * conj(out * _LN2), "out")
expm1 = unary("expm1", np.expm1, "Expm1Backward0", lambda g, out, x: g * conj(out + 1), "out")
log2 = unary("log2", np.log2, "Log2Backward0", lambda g, out, x: g / conj(x * _LN2), "x")
log10 = unary("log10", np.log10, "Log10Backward0", lambda g, out, x: g / conj(x * _LN10), "x")
log1p = unary("log1p", np.log1p, "Log1PBackward0", lambda g, out, x: g / conj(x + 1), "x")


def _logit(x, eps=None):
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


def _logit_rule(g, out, x, eps):
    """torch's logit_backward: g / (x (1 - x)); without eps NaN outside [0, 1] (inf at 0
    and 1), with eps 0 outside [eps, 1 - eps] (the clamped region; its ends included)."""
    d = g / (x * (1 - x))
    if eps is None:
        return where(logical_or(x < 0, x > 1), math.nan, d)
    return where(logical_or(x < eps, x > 1 - eps), 0, d)


def _logit_text(e, a, lit):
    eps = e.params.get("eps")
    x = a[0] if eps is None else f"np.clip({a[0]}, {lit(eps)}, {lit(1 - eps)})"
    return f"np.log({x} / (1 - {x}))"


logit = defop("logit", _logit, "LogitBackward0", vjp=(_logit_rule,), uses=("x",),
              template=_logit_text,
              elementwise=True, fresh=True, function=True, method=True, inplace=True)

# --------------------------------------------------------------- complex parts
_PI = math.pi


def _angle(x):
    """torch's angle: of a real number 0 or pi (NaN at NaN, 0 at -0.0); numpy's of a
    complex one."""
    if x.dtype.kind == "c":
        return np.angle(x)
    if x.dtype.kind != "f":
        x = x.astype(np.float64)
    return np.where(np.isnan(x), x, np.where(x < 0, _PI, 0.0)).astype(x.dtype)


def _angle_rule(g, out, x):
    """torch's angle_backward: zeros for a real input (zeros_like(x), as torch saves x,
    plus zeros_like(g): a gradient no seed reaches is a symbolic zero, None, in compiled
    code); g x / |x|^2 i for a complex one, 0 at 0."""
    if not is_complex(x):
        return zeros_like(g) + zeros_like(x)
    return where(x == 0, 0, g * x / (absolute(x) * absolute(x)) * 1j)


def _print_angle(e, a, lit):
    kind = np.dtype(e.inputs[0].dtype).kind
    if kind == "c":
        return f"np.angle({a[0]})"
    x = a[0] if kind == "f" else f"{a[0]}.astype(np.float64)"
    return (f"np.where(np.isnan({x}), {x}, np.where({x} < 0, np.pi, 0.0))"
            f".astype({lit(np.dtype(e.out.dtype))})")


angle = defop("angle", _angle, "AngleBackward0", vjp=(_angle_rule,), uses=("x",),
              template=_print_angle,
              elementwise=True, fresh=True, function=True, method=True,
              numpy={np.angle: lambda z, deg=False: _numpy_angle(z, deg)})


def _numpy_angle(z, deg):
    a = angle(args.value(z))
    return a * (180 / _PI) if deg else a


def _numpy_fabs(x, out=None, **kw):
    args.plain(out, **kw)
    if is_complex(x):
        raise TypeError("ufunc 'fabs' not supported for the input types, and the inputs "
                        "could not be safely coerced to any supported types according to "
                        "the casting rule ''safe''")
    return absolute(x)


public("fabs", numpy={np.fabs: _numpy_fabs})(_numpy_fabs)


@public("square", function=True, method=True)
def square(input):
    return power(input, 2)


def _nan_to_num(x, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _numpy_nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    if not copy:
        raise args.Unsupported  # writes into x
    return nan_to_num(args.value(x), nan=nan, posinf=posinf, neginf=neginf)


# torch: the gradient times isfinite(x) (a product: an inf or NaN g gives NaN there)
nan_to_num = defop("nan_to_num", _nan_to_num, "NanToNumBackward0",
                   vjp=(lambda g, out, x, nan, posinf, neginf: g * isfinite(x),),
                   uses=("x",), elementwise=True, fresh=True,
                   template="np.nan_to_num({0}, nan={nan}, posinf={posinf}, neginf={neginf})",
                   function=True, method=True, inplace=True,
                   numpy={np.nan_to_num: _numpy_nan_to_num})


# -------------------------------------------------------------------- rounding
def _integers_kept(ufunc: np.ufunc) -> Any:
    """torch's rounding: integers are returned as they are (numpy's ufunc makes floats)."""
    def forward(x):
        x = np.asarray(x)
        return x.copy() if x.dtype.kind in "biu" else ufunc(x)

    forward.__name__ = ufunc.__name__
    return forward


def _rounding_template(name: str) -> Any:
    def write(e: Any, a: list, lit: Any) -> str:
        return f"{a[0]}.copy()" if e.inputs[0].dtype.kind in "biu" else f"np.{name}({a[0]})"
    return write


def _rounding(name: str, ufunc: np.ufunc, grad_fn: str, **names: Any) -> Any:
    """A rounding op: differentiable with a zero gradient everywhere, as in torch."""
    names.setdefault("function", True)
    names.setdefault("method", True)
    names.setdefault("inplace", True)
    return defop(name, _integers_kept(ufunc), grad_fn, vjp=(lambda g, out, x: zeros_like(g),),
                 template=_rounding_template(ufunc.__name__), elementwise=True, fresh=True,
                 **names)


floor = _rounding("floor", np.floor, "FloorBackward0", numpy=np.floor)
ceil = _rounding("ceil", np.ceil, "CeilBackward0", numpy=np.ceil)
trunc = _rounding("trunc", np.trunc, "TruncBackward0", function=("trunc", "fix"),
                  method=("trunc", "fix"),
                  numpy={np.trunc: lambda x: trunc(x),
                         np.fix: lambda x, out=None: _numpy_fix(x, out)})
round_op = _rounding("round", np.rint, "RoundBackward0", function=False, method=False,
                     inplace="round_")
# torch's round(decimals=d) is numpy's: x * 10^d rounded half to even, divided by 10^d
round_decimals = defop("round_decimals", lambda x, decimals: np.round(x, decimals),
                       "RoundBackward1", vjp=(lambda g, out, x, decimals: zeros_like(g),),
                       template="np.round({0}, {decimals})", elementwise=True, fresh=True)


def _numpy_fix(x, out):
    args.plain(out)
    return trunc(args.value(x))


def _numpy_round(a, decimals=0, out=None):
    args.plain(out)
    return round_(args.value(a), decimals=decimals)


@public("round", function=True, method=True,
        numpy={np.round: _numpy_round, np.around: _numpy_round, np.rint: lambda x: round_(x)})
def round_(input, *, decimals=0):
    if decimals == 0:
        return round_op(input)
    return round_decimals(input, decimals=int(decimals))


frac = defop("frac", lambda x: x - np.trunc(x), "FracBackward0", vjp=(lambda g, out, x: g,),
             template="{0} - np.trunc({0})", elementwise=True, fresh=True,
             function=True, method=True, inplace=True)

# ---------------------------------------------------------------- predicates
isinf = defop("isinf", np.isinf, template="np.isinf({0})", function=True, method=True,
              numpy=np.isinf)
isfinite = defop("isfinite", np.isfinite, template="np.isfinite({0})", function=True,
                 method=True, numpy=np.isfinite)
isposinf = defop("isposinf", np.isposinf, template="np.isposinf({0})", elementwise=True,
                 fresh=True, function=True, method=True,
                 numpy={np.isposinf: lambda x, out=None: _predicate(isposinf, x, out)})
isneginf = defop("isneginf", np.isneginf, template="np.isneginf({0})", elementwise=True,
                 fresh=True, function=True, method=True,
                 numpy={np.isneginf: lambda x, out=None: _predicate(isneginf, x, out)})
signbit = defop("signbit", np.signbit, template="np.signbit({0})", function=True, method=True,
                numpy=np.signbit)
logical_xor = defop("logical_xor", np.logical_xor,
                    template=logical_template("{0} ^ {1}", np.logical_xor), function=True,
                    method=True, numpy=np.logical_xor)
def _no_floor_divide_derivative(*_: Any, **__: Any) -> Any:
    raise RuntimeError("derivative for aten::floor_divide is not implemented")


# numpy's floor division (Python's //), torch's floor_divide and div(rounding_mode="floor"):
# torch computes it with a gradient-less node whose backward raises; the rules that read
# it (remainder's) detach it
def _numpy_floor_divide(x1, x2, out=None):
    """numpy's floor_divide on the numpy face: piecewise constant, so its gradient is
    zero (JAX's and autograd's), not torch's refusal."""
    args.plain(out)  # (on detached operands: forward mode's tangents stop there too)
    return floor_divide(_detached(x1), _detached(x2))


def _detached(x: Any) -> Any:
    return detach(x) if is_traced(x) else x


floor_divide = defop("floor_divide", np.floor_divide, "NotImplemented", template="{0} // {1}",
                     vjp=(_no_floor_divide_derivative, _no_floor_divide_derivative),
                     uses=("", ""), promote=(0, 1), function=True, method=True, inplace=True,
                     numpy={np.floor_divide: _numpy_floor_divide})


def _predicate(op, x, out):
    args.plain(out)
    return op(args.value(x))


# ------------------------------------------------------------- two operands
def _atan2_rule(sign: int) -> Any:
    """torch's atan2_backward: g y / (x^2 + y^2) and -g x / (x^2 + y^2), with the
    reciprocal 0 where x = y = 0 (both gradients 0 there)."""
    def rule(g, out, x, y):
        d = x * x + y * y
        r = where(d == 0, 0, 1 / d)
        return g * (y if sign > 0 else -x) * r
    return rule


atan2 = defop("atan2", np.arctan2, "Atan2Backward0", vjp=(_atan2_rule(1), _atan2_rule(-1)),
              uses=("x y", "x y"), template="np.arctan2({0}, {1})", promote=(0, 1),
              function=("atan2", "arctan2"), method=("atan2", "arctan2"), inplace="atan2_",
              numpy=np.arctan2)
# NaN at (0, 0), as in torch (0 / 0)
hypot = defop("hypot", np.hypot, "HypotBackward0",
              vjp=(lambda g, out, x, y: g * x / out, lambda g, out, x, y: g * y / out),
              uses=("x out", "y out"), template="np.hypot({0}, {1})", promote=(0, 1),
              function=True, method=True, inplace=True, numpy=np.hypot)
logaddexp = defop("logaddexp", np.logaddexp, "LogaddexpBackward0",
                  vjp=(lambda g, out, x, y: g / (exp(y - x) + 1),
                       lambda g, out, x, y: g / (exp(x - y) + 1)),
                  uses=("x y", "x y"), template="np.logaddexp({0}, {1})", promote=(0, 1),
                  function=True, method=True, numpy=np.logaddexp)
logaddexp2 = defop("logaddexp2", np.logaddexp2, "Logaddexp2Backward0",
                   vjp=(lambda g, out, x, y: g / (power(2.0, y - x) + 1),
                        lambda g, out, x, y: g / (power(2.0, x - y) + 1)),
                   uses=("x y", "x y"), template="np.logaddexp2({0}, {1})", promote=(0, 1),
                   function=True, method=True, numpy=np.logaddexp2)


def _fmax_mask(x, y):
    """Where fmax's gradient goes to x: x >= y, or y is NaN (ties: all to x, as torch)."""
    return logical_or(x >= y, isnan(y))


def _fmin_mask(x, y):
    return logical_or(x <= y, isnan(y))


fmax = defop("fmax", np.fmax, "FmaxBackward0",
             vjp=(lambda g, out, x, y: where(_fmax_mask(x, y), g, 0),
                  lambda g, out, x, y: where(_fmax_mask(x, y), 0, g)),
             uses=("x y", "x y"), template="np.fmax({0}, {1})", promote=(0, 1),
             function=True, method=True, numpy=np.fmax)
fmin = defop("fmin", np.fmin, "FminBackward0",
             vjp=(lambda g, out, x, y: where(_fmin_mask(x, y), g, 0),
                  lambda g, out, x, y: where(_fmin_mask(x, y), 0, g)),
             uses=("x y", "x y"), template="np.fmin({0}, {1})", promote=(0, 1),
             function=True, method=True, numpy=np.fmin)
# torch's grad_fn for a Python number as `other` is RemainderBackward0 (FmodBackward0,
# CopysignBackward1, XlogyBackward1/2): here one op serves both, named for two tensors
remainder = defop("remainder", np.remainder, "RemainderBackward1",
                  vjp=(lambda g, out, x, y: g,
                       lambda g, out, x, y: -g * floor_divide(_detached(x), _detached(y))),
                  uses=("", "x y"), template="np.remainder({0}, {1})", promote=(0, 1),
                  function=True, method=True, inplace=True, numpy=np.remainder)
fmod = defop("fmod", np.fmod, "FmodBackward1",
             vjp=(lambda g, out, x, y: g,
                  lambda g, out, x, y: -g * trunc(x / y)),
             uses=("", "x y"), template="np.fmod({0}, {1})", promote=(0, 1),
             function=True, method=True, inplace=True, numpy=np.fmod)
# torch: x's gradient is g * out / x, 0 where x == 0; y's is zero
copysign = defop("copysign", np.copysign, "CopysignBackward0",
                 vjp=(lambda g, out, x, y: g * where(x == 0, 0, out / x),
                      lambda g, out, x, y: zeros_like(g)),
                 uses=("x out", ""), template="np.copysign({0}, {1})", promote=(0, 1),
                 function=True, method=True, inplace=True, numpy=np.copysign)


def _xlogy(x, y):
    """torch's xlogy: 0 where x == 0 (unless y is NaN), else x log(y)."""
    v = np.where(x == 0, 0, x * np.log(y))
    return np.where(np.isnan(y), np.nan, v).astype(v.dtype, copy=False)


xlogy = defop("xlogy", _xlogy, "XlogyBackward0",
              vjp=(lambda g, out, x, y: where(logical_and(x == 0, y <= 0), 0, xlogy(g, y)),
                   lambda g, out, x, y: g * x / y),
              uses=("y x", "x y"), elementwise=True, fresh=True, promote=(0, 1),
              template="np.where(np.isnan({1}), np.nan, np.where({0} == 0, 0, {0} * np.log({1})))",
              function=True, method=True, inplace=True)


def _lerp(x, end, weight):
    """torch's lerp: x + w (end - x) for |w| < 1/2, else end - (end - x) (1 - w)."""
    d = end - x
    return np.where(np.abs(weight) < 0.5, x + weight * d, end - d * (1 - weight))


#: _lerp in generated code (end - x written twice: the same values, one expression)
_LERP = "np.where(np.abs({2}) < 0.5, {0} + {2} * ({1} - {0}), {1} - ({1} - {0}) * (1 - {2}))"
lerp_tensor = defop("lerp", _lerp, "LerpBackward1",
                    template=_LERP,
                    vjp=(lambda g, out, x, end, weight: g * conj(1 - weight),
                         lambda g, out, x, end, weight: g * conj(weight),
                         lambda g, out, x, end, weight: g * conj(end - x)),
                    uses=("weight", "weight", "x end"), elementwise=True, fresh=True,
                    torch_args=("self", "end", "weight"), inplace="lerp_")
lerp_scalar = defop("lerp_scalar", _lerp, "LerpBackward0",
                    template=_LERP.replace("{2}", "{weight}"),
                    vjp=(lambda g, out, x, end, weight: g * (1 - weight),
                         lambda g, out, x, end, weight: g * weight),
                    elementwise=True, fresh=True, torch_args=("self", "end"))


@public("lerp", function=True, method=True)
def lerp(input, end, weight):
    scalar = isinstance(weight, (int, float)) and not isinstance(weight, bool)
    want = dtypes.as_dtype(args.np_dtype(input))
    for name, v in (("end", end),) + ((("weight", weight),) if not scalar else ()):
        got = dtypes.as_dtype(args.np_dtype(v))
        if got != want:
            raise RuntimeError(f"expected dtype {want._cpp} for `{name}` but got dtype "
                               f"{got._cpp}")
    if scalar:
        return lerp_scalar(input, end, weight=weight)
    return lerp_tensor(input, end, weight)


addcmul = defop("addcmul", lambda x, t1, t2, value=1: x + value * t1 * t2, "AddcmulBackward0",
                vjp=(lambda g, out, x, t1, t2, value: g,
                     lambda g, out, x, t1, t2, value: g * conj(t2 * value),
                     lambda g, out, x, t1, t2, value: g * conj(t1 * value)),
                uses=("", "t2", "t1"), template="{0} + {value} * {1} * {2}",
                elementwise=True, fresh=True, torch_args=("self", "tensor1", "tensor2"),
                function=True, method=True, inplace=True)
addcdiv = defop("addcdiv", lambda x, t1, t2, value=1: x + value * t1 / t2, "AddcdivBackward0",
                vjp=(lambda g, out, x, t1, t2, value: g,
                     lambda g, out, x, t1, t2, value: g * conj(value / t2),
                     lambda g, out, x, t1, t2, value: -g * conj(value * t1 / (t2 * t2))),
                uses=("", "t2", "t1 t2"), template="{0} + {value} * {1} / {2}",
                elementwise=True, fresh=True, torch_args=("self", "tensor1", "tensor2"),
                function=True, method=True, inplace=True)
