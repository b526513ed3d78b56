"""numpy's floating-point functions and array-API cumulatives with traced arrays:
``float_power``, ``ldexp``, ``frexp``, ``modf``, ``divmod`` and ``cumulative_sum`` /
``cumulative_prod`` composed of existing ops; ``nextafter`` is a primitive.

- ``float_power`` is ``power`` in float64 (complex128 for complex operands), numpy's
  dtype whatever the operands'.
- ``ldexp(x1, x2)`` is ``x1 * 2 ** x2``: differentiable in ``x1``; the exponents are
  integers (no gradient), read from the values (a guard of the trace under ``pb.grad``).
- ``frexp`` gives the mantissa ``x * 2 ** -e`` (the gradient ``2 ** -e``, as
  torch.frexp's) and the exponent ``e``, an int32 array of no gradient.
- ``modf`` gives the fractional part ``x - trunc(x)`` (the gradient one; signs, zeros
  and infinities numpy's) and the integral part (``trunc``: zero gradient).
- ``divmod`` is ``(floor_divide, remainder)``: the quotient has floor_divide's zero
  gradient, the remainder remainder's (one in ``x1``, ``-floor(x1 / x2)`` in ``x2``).
- ``nextafter`` has torch's gradient: one in ``x1``, zero in ``x2`` (the result is
  ``x1`` moved by one float towards ``x2``).
- ``cumulative_sum`` / ``cumulative_prod`` are ``cumsum`` / ``cumprod`` with numpy's
  ``include_initial`` (a leading zero or one along the axis).

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([0.75, -2.5], requires_grad=True)
>>> np.modf(x)[0]
tensor([ 0.7500, -0.5000], grad_fn=<WhereBackward0>)
>>> np.cumulative_sum(x, include_initial=True)
tensor([ 0.0000,  0.7500, -1.7500], grad_fn=<CatBackward0>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import to_dtype, where, zeros_like
from .shape import detach, reshape
from .table import args
from .table.registry import defop, is_traced, public


def _values(x: Any) -> np.ndarray:
    """The values of ``x`` (a read of a traced value: a guard of the trace)."""
    return np.asarray(detach(x)) if is_traced(x) else np.asarray(x)


def _typed(v: Any, dtype: Any) -> Any:
    return to_dtype(v, dtype) if is_traced(v) else np.asarray(v, dtype)


def _float_power(x1, x2):
    x1, x2 = args.value(x1), args.value(x2)
    kinds = [args.np_dtype(v).kind for v in (x1, x2)]
    if not set(kinds) <= set("biufc"):
        raise args.Unsupported  # numpy's own error
    dtype = np.dtype(np.complex128 if "c" in kinds else np.float64)
    return np.power(_typed(x1, dtype), _typed(x2, dtype))


def _ldexp(x1, x2):
    x1 = args.value(x1)
    e = _values(args.value(x2))
    dtype = np.ldexp(np.zeros((), args.np_dtype(x1)), np.zeros((), e.dtype)).dtype
    return _typed(x1, dtype) * np.ldexp(np.ones((), dtype), e)  # numpy's errors


def _frexp(x):
    x = args.value(x)
    dtype = np.frexp(np.zeros((), args.np_dtype(x)))[0].dtype  # numpy's errors
    e = np.frexp(_values(x))[1]
    return _typed(x, dtype) * np.ldexp(np.ones((), dtype), -e), e


def _modf(x):
    x = args.value(x)
    dtype = np.modf(np.zeros((), args.np_dtype(x)))[0].dtype  # numpy's errors
    x = _typed(x, dtype)
    whole = np.trunc(x)
    # x - whole, signed as x (numpy's -0.0 for -2.0): its negation from the other side,
    # exact and of gradient one too; 0 of x's sign for an infinity
    frac = where(np.signbit(x), -(whole - x), x - whole)
    return where(np.isinf(x), np.copysign(np.zeros((), dtype), x), frac), whole


def _divmod(x1, x2):
    """numpy's ``(x1 // x2, x1 % x2)``: floor_divide's zero gradient, remainder's."""
    return np.floor_divide(x1, x2), np.remainder(x1, x2)


public("float_power", numpy={np.float_power: _float_power})(_float_power)
public("ldexp", numpy={np.ldexp: _ldexp})(_ldexp)
public("frexp", numpy={np.frexp: _frexp})(_frexp)
public("modf", numpy={np.modf: _modf})(_modf)
public("divmod", numpy={np.divmod: _divmod})(_divmod)

#: one float towards x2: torch's gradient (one in x1, zero in x2)
nextafter = defop("nextafter", np.nextafter, "NextafterBackward0",
                  vjp=(lambda g, out, x, y: g, lambda g, out, x, y: zeros_like(g)),
                  uses=("", ""), template="np.nextafter({0}, {1})", promote=(0, 1),
                  elementwise=True, numpy=np.nextafter, function=True, method=True,
                  inplace=True)


def _cumulative(fn: Any, initial: float, x: Any, axis: Any, dtype: Any, out: Any,
                include_initial: bool) -> Any:
    args.plain(out)
    x = args.value(x)
    if np.ndim(x) == 0:
        x = reshape(x, (1,)) if is_traced(x) else np.reshape(x, (1,))  # (numpy's 1-d)
    if axis is None and np.ndim(x) > 1:
        raise args.Unsupported  # numpy's ValueError
    axis = 0 if axis is None else args.axes(axis, x.ndim)[0]
    c = fn(x, axis=axis, dtype=dtype)
    if not include_initial:
        return c
    shape = tuple(1 if i == axis else n for i, n in enumerate(c.shape))
    return np.concatenate([np.full(shape, initial, args.np_dtype(c)), c], axis=axis)


def _cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative(np.cumsum, 0, x, axis, dtype, out, include_initial)


def _cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative(np.cumprod, 1, x, axis, dtype, out, include_initial)


public("cumulative_sum", numpy={np.cumulative_sum: _cumulative_sum})(_cumulative_sum)
public("cumulative_prod", numpy={np.cumulative_prod: _cumulative_prod})(_cumulative_prod)
