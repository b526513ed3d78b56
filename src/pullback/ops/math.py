"""Elementwise and reduction primitives, and their torch-style front functions."""

from __future__ import annotations

import builtins

import numpy as np

from .registry import defop

# Complex values follow torch's conjugate Wirtinger convention: a holomorphic op's
# rule is g * conj(f'(z)). conj of a real value is the value itself, so the real
# rules are unchanged (and codegen drops the no-op).


def is_complex(x) -> bool:
    """Whether a value (array, Tensor, IR value or scalar) holds complex numbers."""
    d = getattr(x, "dtype", None)
    if d is None:
        return isinstance(x, builtins.complex)
    return bool(getattr(d, "is_complex", False)) or getattr(d, "kind", "") == "c"


def conj(x):
    """The complex conjugate; a real value is returned as it is (no op, no node)."""
    return conj_op(x) if is_complex(x) else x


conj_op = defop("conj", np.conjugate, "ConjBackward0", vjp=(lambda g, out, x: conj(g),))
real = defop("real", np.real, "RealBackward0", vjp=(lambda g, out, x: g,))
imag = defop("imag", np.imag, "ImagBackward0", vjp=(lambda g, out, x: g * 1j,))
complex = defop("complex", lambda re, im: re + 1j * im if re.dtype != np.float32 else
                (re + 1j * im).astype(np.complex64), "ComplexBackward0",
                vjp=(lambda g, out, re, im: real(g),
                     lambda g, out, re, im: imag(g)))

# ---------------------------------------------------------------- elementwise
add = defop("add", np.add, "AddBackward0",
            vjp=(lambda g, out, x, y: g,
                 lambda g, out, x, y: g))
sub = defop("sub", np.subtract, "SubBackward0",
            vjp=(lambda g, out, x, y: g,
                 lambda g, out, x, y: -g))
rsub = defop("rsub", lambda x, y: np.subtract(y, x), "RsubBackward1",
             vjp=(lambda g, out, x, y: -g,
                  lambda g, out, x, y: g))
mul = defop("mul", np.multiply, "MulBackward0",
            vjp=(lambda g, out, x, y: g * conj(y),
                 lambda g, out, x, y: g * conj(x)),
            uses=("y", "x"))
div = defop("div", np.true_divide, "DivBackward0",
            vjp=(lambda g, out, x, y: g / conj(y),
                 lambda g, out, x, y: -g * conj(x / (y * y))),
            uses=("y", "x y"))
reciprocal = defop("reciprocal", np.reciprocal, "ReciprocalBackward0",
                   vjp=(lambda g, out, x: -g * conj(out * out),), uses=("out",))
neg = defop("neg", np.negative, "NegBackward0",
            vjp=(lambda g, out, x: -g,))
pow_scalar = defop("pow_scalar", lambda x, exponent: np.power(x, exponent), "PowBackward0",
                   vjp=(lambda g, out, x, exponent: zeros_like(g) if exponent == 0
                        else g * conj(exponent * x ** (exponent - 1)),),
                   uses=("x",))
pow = defop("pow", np.power, "PowBackward1",
            vjp=(lambda g, out, x, y: g * y * x ** (y - 1),
                 lambda g, out, x, y: g * out * log(x)),
            uses=("x y", "x out"))
rpow_scalar = defop("rpow_scalar", lambda x, base: np.power(base, x), "PowBackward2",
                    vjp=(lambda g, out, x, base: g * out * float(np.log(base)),),
                    uses=("out",))
exp = defop("exp", np.exp, "ExpBackward0", vjp=(lambda g, out, x: g * conj(out),),
            uses=("out",))
log = defop("log", np.log, "LogBackward0", vjp=(lambda g, out, x: g / conj(x),), uses=("x",))
sqrt = defop("sqrt", np.sqrt, "SqrtBackward0",
             vjp=(lambda g, out, x: g / (2 * conj(out)),), uses=("out",))
sin = defop("sin", np.sin, "SinBackward0", vjp=(lambda g, out, x: g * conj(cos(x)),),
            uses=("x",))
cos = defop("cos", np.cos, "CosBackward0", vjp=(lambda g, out, x: -g * conj(sin(x)),),
            uses=("x",))
tanh = defop("tanh", np.tanh, "TanhBackward0",
             vjp=(lambda g, out, x: g * conj(1 - out * out),), uses=("out",))
abs = defop("abs", np.abs, "AbsBackward0", vjp=(lambda g, out, x: g * sign(x),), uses=("x",))


def _sigmoid(x):
    return np.reciprocal(1 + np.exp(-x))


sigmoid = defop("sigmoid", _sigmoid, "SigmoidBackward0",
                vjp=(lambda g, out, x: g * conj(out * (1 - out)),), uses=("out",))
relu = defop("relu", lambda x: np.maximum(x, 0), "ReluBackward0",
             vjp=(lambda g, out, x: g * (out > 0),), uses=("out",))
clamp = defop("clamp", lambda x, min, max: np.clip(x, min, max), "ClampBackward1",
              vjp=(lambda g, out, x, min, max: g * in_range(x, min=min, max=max),),
              uses=("x",))
where = defop("where", np.where, "WhereBackward0",
              vjp=(None,
                   lambda g, out, cond, x, y: where(cond, g, 0),
                   lambda g, out, cond, x, y: where(cond, 0, g)),
              uses=("", "cond", "cond"))
cast = defop("cast", lambda x, dtype: x.astype(dtype), "ToCopyBackward0",
             vjp=(lambda g, out, x, dtype: g,))
clone = defop("clone", np.copy, "CloneBackward0", vjp=(lambda g, out, x: g,))

maximum = defop("maximum", np.maximum, "MaximumBackward0",
                vjp=(lambda g, out, x, y: g * win_weight(x, y),
                     lambda g, out, x, y: g * win_weight(y, x)),
                uses=("x y", "x y"))
minimum = defop("minimum", np.minimum, "MinimumBackward0",
                vjp=(lambda g, out, x, y: g * win_weight(y, x),
                     lambda g, out, x, y: g * win_weight(x, y)),
                uses=("x y", "x y"))

# sign is differentiable in torch, with a zero gradient everywhere
sign = defop("sign", np.sign, "SignBackward0", vjp=(lambda g, out, x: zeros_like(g),))

# ------------------------------------------------------ non-differentiable ops
zeros_like = defop("zeros_like", np.zeros_like)
gt = defop("gt", np.greater)
ge = defop("ge", np.greater_equal)
lt = defop("lt", np.less)
le = defop("le", np.less_equal)
eq = defop("eq", np.equal)
ne = defop("ne", np.not_equal)
logical_not = defop("logical_not", np.logical_not)
logical_and = defop("logical_and", np.logical_and)
logical_or = defop("logical_or", np.logical_or)


def _in_range(x, min, max):
    lo = True if min is None else x >= min
    hi = True if max is None else x <= max
    return np.logical_and(lo, hi)


in_range = defop("in_range", _in_range)


def _win_weight(x, y):
    """1 where x wins, 1/2 on ties (ties split the gradient evenly), 0 where it loses."""
    dt = np.result_type(x, y)
    return np.where(np.greater(x, y), dt.type(1), np.where(np.equal(x, y), dt.type(0.5),
                                                          dt.type(0)))


win_weight = defop("win_weight", _win_weight)


def _argmax(x, dim, keepdim):
    return np.argmax(x, axis=dim, keepdims=keepdim)


def _argmin(x, dim, keepdim):
    return np.argmin(x, axis=dim, keepdims=keepdim)


argmax = defop("argmax", _argmax)
argmin = defop("argmin", _argmin)


def _first_extreme_mask(x, dim, argfn):
    idx = argfn(x, axis=dim, keepdims=True)
    return np.arange(x.shape[dim]).reshape((-1,) + (1,) * (x.ndim - 1 - dim % x.ndim)) == idx


argmax_mask = defop("argmax_mask", lambda x, dim: _first_extreme_mask(x, dim, np.argmax))
argmin_mask = defop("argmin_mask", lambda x, dim: _first_extreme_mask(x, dim, np.argmin))

# ----------------------------------------------------------------- reductions


def _keep_shape(shape: tuple, dim: tuple) -> tuple:
    """``shape`` with the reduced ``dim`` axes kept as 1 (for un-reducing a gradient)."""
    dims = {d % len(shape) for d in dim}
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def _numel(shape: tuple, dim: tuple | None = None) -> int:
    idx = range(len(shape)) if dim is None else dim
    return int(np.prod([shape[d] for d in idx], dtype=np.int64))


sum_all = defop("sum_all", lambda x: np.sum(x), "SumBackward0",
                vjp=(lambda g, out, x: expand(g, shape=x.shape),))
sum_dim = defop("sum_dim", lambda x, dim, keepdim: np.sum(x, axis=dim, keepdims=keepdim),
                "SumBackward1",
                vjp=(lambda g, out, x, dim, keepdim:
                     expand(reshape(g, shape=_keep_shape(x.shape, dim)), shape=x.shape),))
def fast_mean(x, axis=None, keepdims=False):
    """np.mean's value; for float32/float64 as sum / count, which skips numpy's
    Python-level mean wrapper (several microseconds per call on small arrays)."""
    x = np.asarray(x)
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        return np.mean(x, axis=axis, keepdims=keepdims)
    count = x.size if axis is None else _numel(
        x.shape, axis if isinstance(axis, tuple) else (axis,))
    return x.sum(axis=axis, keepdims=keepdims) / max(count, 1) if count else np.mean(x, axis)


mean_all = defop("mean_all", lambda x: fast_mean(x), "MeanBackward0",
                 vjp=(lambda g, out, x: expand(g / _numel(x.shape), shape=x.shape),))
mean_dim = defop("mean_dim", lambda x, dim, keepdim: fast_mean(x, axis=dim, keepdims=keepdim),
                 "MeanBackward1",
                 vjp=(lambda g, out, x, dim, keepdim:
                      expand(reshape(g / _numel(x.shape, dim), shape=_keep_shape(x.shape, dim)),
                             shape=x.shape),))


def _ties(x, out):
    """The even split of a full max/min's gradient over tied elements."""
    mask = x == out
    return mask / sum_all(mask)


max_all = defop("max_all", lambda x: np.max(x), "MaxBackward1",
                vjp=(lambda g, out, x: g * _ties(x, out),), uses=("x out",))
min_all = defop("min_all", lambda x: np.min(x), "MinBackward1",
                vjp=(lambda g, out, x: g * _ties(x, out),), uses=("x out",))
max_dim = defop("max_dim", lambda x, dim, keepdim: np.max(x, axis=dim, keepdims=keepdim),
                "MaxBackward0",
                vjp=(lambda g, out, x, dim, keepdim:
                     reshape(g, shape=_keep_shape(x.shape, (dim,))) * argmax_mask(x, dim=dim),),
                uses=("x",))
min_dim = defop("min_dim", lambda x, dim, keepdim: np.min(x, axis=dim, keepdims=keepdim),
                "MinBackward0",
                vjp=(lambda g, out, x, dim, keepdim:
                     reshape(g, shape=_keep_shape(x.shape, (dim,))) * argmin_mask(x, dim=dim),),
                uses=("x",))

# the shape ops the rules above use; declared in shape.py
from .shape import expand, reshape  # noqa: E402
