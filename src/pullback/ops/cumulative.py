"""Cumulative ops along one dim (an int, or None on a 0-d input): cumsum and cumprod,
torch's and numpy's spellings (numpy's ``axis=None``: over the flattened input);
logcumsumexp; cummax and cummin, each (values, indices).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import absolute, conj, exp, log, logical_and, to_dtype, where, zeros_like
from .indexing import scatter_add_op
from .reductions import sum_dim
from .shape import reshape
from .statistics import _as_dtype
from .table import args
from .table.registry import c_order, defop, public, rt_call
from .table.results import return_type


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


# ------------------------------------------------------------------ logcumsumexp
def _logcumsumexp(x, dim, reverse=False):
    if dim is None:
        return np.array(x, copy=True)
    if reverse:
        return c_order(np.flip(np.logaddexp.accumulate(np.flip(x, dim), axis=dim), dim))
    return np.logaddexp.accumulate(x, axis=dim)


def _print_logcumsumexp(e: Any, a: list, lit: Any) -> str:
    d, src = e.params["dim"], a[0]
    if d is None:
        return f"{src}.copy()"
    if e.params.get("reverse"):
        return (f"np.ascontiguousarray(np.flip(np.logaddexp.accumulate(np.flip({src}, {d}), "
                f"axis={d}), {d}))")
    return f"np.logaddexp.accumulate({src}, axis={d})"


def _by_sign(v, along):
    """``along(log v)`` for the positive ``v`` less ``along(log -v)`` for the negative (the
    log of a zero is the lowest float, not -inf, and is taken of 1, so that no second
    order meets inf - inf or 0 / 0): a sum of v times exponentials, in logs."""
    low = float(np.finfo(args.np_dtype(v)).min)
    log_v = log(absolute(where(v == 0, 1, v)))
    return along(where(v > 0, log_v, low)) - along(where(v < 0, log_v, low))


def _logcumsumexp_rule(g, out, x, dim, reverse=False):
    """torch's logcumsumexp_backward: at j, the sum over the k from j on of
    g_k exp(x_j - out_k), that is exp(x_j + the reverse logcumsumexp of log g - out)."""
    if dim is None:
        return g
    return _by_sign(g, lambda s: exp(logcumsumexp_op(s - out, dim=dim, reverse=not reverse)
                                      + x))


def _logcumsumexp_tangent(t, out, x, dim, reverse=False):
    """At k, the sum over the j up to k of t_j exp(x_j - out_k)."""
    if dim is None:
        return t
    return _by_sign(t, lambda s: exp(logcumsumexp_op(s + x, dim=dim, reverse=reverse) - out))


logcumsumexp_op = defop("logcumsumexp", _logcumsumexp, "LogcumsumexpBackward0",
                        vjp=(_logcumsumexp_rule,), jvp=(_logcumsumexp_tangent,),
                        uses=("x out",), fresh=True,
                        template=_print_logcumsumexp)


@public("logcumsumexp", function=True, method=True)
def logcumsumexp(input, dim):
    d = args.dim_or_all(dim, input.ndim)
    if np.dtype(args.np_dtype(input)).kind not in "f":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                                  f"'{args.dtype_name(input)}'")
    return logcumsumexp_op(input, dim=d)


# ------------------------------------------------------------------ cummax, cummin
return_types_cummax = return_type("cummax", ("values", "indices"))
return_types_cummin = return_type("cummin", ("values", "indices"))


def _cumulative_extreme(x, axis, step):
    """(values, indices) of the running max (step np.maximum) or min along ``axis``: a NaN
    stays, and the index is the last element that reached the running value (torch's)."""
    if axis is None:
        return np.array(x, copy=True), np.zeros((), np.int64)
    values = step.accumulate(x, axis=axis) if x.size else np.array(x, copy=True)
    reached = x == values
    if x.dtype.kind in "fc":
        reached |= np.isnan(x)
    where_ = np.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - 1 - axis))
    at = np.where(reached, where_, 0)
    return values, c_order(np.maximum.accumulate(at, axis=axis) if x.size else at)


def _cummax(x, axis):
    """(values, indices) of the running max along ``axis`` (None: a 0-d ``x``)."""
    return _cumulative_extreme(x, axis, np.maximum)


def _cummin(x, axis):
    """(values, indices) of the running min along ``axis`` (None: a 0-d ``x``)."""
    return _cumulative_extreme(x, axis, np.minimum)


def _cumulative_pick(g, out, x, dim):
    """torch's cummaxmin_backward: each value's gradient added at the index it came from."""
    if dim is None:
        return g.values
    return scatter_add_op(zeros_like(g.values), out.indices, g.values, dim=dim)


cummax_op = defop("cummax", lambda x, dim: _cummax(x, dim), "CummaxBackward0",
                  outputs=return_types_cummax, vjp=(_cumulative_pick,), uses=("indices",),
                  fresh=True, template=rt_call("cummax", "axis=dim"))
cummin_op = defop("cummin", lambda x, dim: _cummin(x, dim), "CumminBackward0",
                  outputs=return_types_cummin, vjp=(_cumulative_pick,), uses=("indices",),
                  fresh=True, template=rt_call("cummin", "axis=dim"))


@public("cummax", function=True, method=True)
def cummax(input, dim):
    return cummax_op(input, dim=args.dim_or_all(dim, input.ndim))


@public("cummin", function=True, method=True)
def cummin(input, dim):
    return cummin_op(input, dim=args.dim_or_all(dim, input.ndim))
