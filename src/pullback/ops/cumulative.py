"""Cumulative sums and products along one dim (an int, or None on a 0-d input): cumsum
and cumprod, torch's and numpy's spellings (numpy's ``axis=None``: over the flattened
input).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import conj, logical_and, to_dtype, where
from .reductions import sum_dim
from .shape import reshape
from .statistics import _as_dtype
from .table import args
from .table.registry import c_order, defop, public


# ------------------------------------------------------------ cumulative ops
def _cumsum(x, dim, reverse=False):
    if dim is None:
        return np.array(x, copy=True)
    if reverse:
        return c_order(np.flip(np.cumsum(np.flip(x, dim), axis=dim), dim))
    return np.cumsum(x, axis=dim)


def _print_cumsum(e: Any, a: list, lit: Any) -> str:
    d, src = e.params["dim"], a[0]
    if d is None:
        return f"{src}.copy()"
    if e.params.get("reverse"):
        return f"np.ascontiguousarray(np.flip(np.cumsum(np.flip({src}, {d}), axis={d}), {d}))"
    return f"np.cumsum({src}, axis={d})"


# reverse: the sum from each element to the end (the gradient of a cumulative sum)
cumsum_op = defop("cumsum", _cumsum, "CumsumBackward0",
                  vjp=(lambda g, out, x, dim, reverse=False:
                       cumsum_op(g, dim=dim, reverse=not reverse),),
                  template=_print_cumsum, fresh=True, inplace="cumsum_")


def _cumprod_rule(g, out, x, dim):
    """torch's cumprod_backward, written without branches on the data: before a slice's
    first zero, the sum from k on of g * out, over x; at the first zero, the sum up to
    the second zero of g times the product of the elements before it but the zero;
    after it, 0 (first order exact; the second order misses the terms through a zero)."""
    if dim is None:
        return g
    z = x == 0
    y = where(z, 1, x)
    zeros = cumsum_op(z, dim=dim)
    before = zeros == 0
    at_first = logical_and(z, zeros == 1)
    a = cumsum_op(where(before, g * conj(out), 0), dim=dim, reverse=True) / conj(y)
    b = sum_dim(where(zeros == 1, g * conj(cumprod_op(y, dim=dim)), 0), dim=(dim,),
                keepdim=True)
    return where(before, a, where(at_first, b, 0))


cumprod_op = defop("cumprod", lambda x, dim: _cumprod(x, dim), "CumprodBackward0",
                   vjp=(_cumprod_rule,), uses=("x out",), fresh=True, inplace="cumprod_",
                   template=lambda e, a, lit: (f"{a[0]}.copy()" if e.params["dim"] is None
                                               else f"np.cumprod({a[0]}, axis={e.params['dim']})"))


def _cumprod(x, dim):
    return np.array(x, copy=True) if dim is None else np.cumprod(x, axis=dim)


def _cumulative(op: Any, input: Any, dim: Any, dtype: Any) -> Any:
    input = _as_dtype(input, dtype)
    if dtype is None and np.dtype(args.np_dtype(input)).kind in "biu":
        input = to_dtype(input, np.int64)  # torch accumulates integers in int64
    return op(input, dim=args.dim_or_all(dim, input.ndim))


def _numpy_cumulative(op: Any, a: Any, axis: Any, dtype: Any, out: Any) -> Any:
    args.plain(out)
    x = _as_dtype(args.value(a), dtype)
    if axis is None:
        x, axis = reshape(x, -1), 0
    return op(x, dim=args.axes(axis, x.ndim)[0] if x.ndim else None)


@public("cumsum", function=True, method=True,
        numpy={np.cumsum: lambda a, axis=None, dtype=None, out=None:
               _numpy_cumulative(cumsum_op, a, axis, dtype, out)})
def cumsum(input, dim, *, dtype=None):
    return _cumulative(cumsum_op, input, dim, dtype)


@public("cumprod", function=True, method=True,
        numpy={np.cumprod: lambda a, axis=None, dtype=None, out=None:
               _numpy_cumulative(cumprod_op, a, axis, dtype, out)})
def cumprod(input, dim, *, dtype=None):
    return _cumulative(cumprod_op, input, dim, dtype)
