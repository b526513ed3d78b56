"""numpy's functions of sampled data with traced arrays, composed of existing ops:
``trapezoid``, ``interp``, ``correlate``, ``heaviside``, ``unwrap``, ``piecewise`` and
``apply_along_axis``.

- ``interp`` is differentiable in ``x``, ``xp`` and ``fp`` (piecewise linear; at a
  sample point, the slope of the segment to its right); the segment of each point is
  a ``searchsorted`` primitive (an index, no gradient), so ``pb.grad`` reads no data.
- ``correlate`` is ``convolve`` with the second sequence reversed and conjugated.
- ``heaviside`` runs (torch's backward refuses it): its gradient in ``x1`` is zero, as
  the step's is wherever it has one; ``x2`` gets the gradient where ``x1 == 0``.
- ``unwrap``'s correction is piecewise constant in ``p``: its gradient is the identity.
- ``piecewise`` calls each function on the selected elements (as numpy does, so a
  function sees no element outside its piece); ``apply_along_axis`` calls the
  function on each 1-d slice and stacks the results; ``apply_over_axes`` calls it
  once per axis, as numpy does (a result with one axis fewer gets it back, of length
  one).

>>> import numpy as np, pullback as pb
>>> y = pb.tensor([1., 2., 4.], requires_grad=True)
>>> np.trapezoid(y, dx=0.5)
tensor(2.2500, grad_fn=<SumBackward1>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import to_dtype, where
from .indexing import take_along_dim
from .shape import reshape
from .table import args, batching
from .table.registry import defop, is_traced, public


def _search_batch(op, args, batched, side):
    if batched[0]:
        raise batching.NoRule  # (a sequence per example: once per example)
    return op(*args, side=side)


#: where each x goes in a sorted 1-d sequence (an index: no gradient); interp's segments
searchsorted = defop("searchsorted", lambda seq, x, side: np.searchsorted(seq, x, side=side),
                     template="np.searchsorted({0}, {1}, side={side})", fresh=True,
                     batch=_search_batch)


def _typed(v: Any, dtype: Any) -> Any:
    return to_dtype(v, dtype) if is_traced(v) else np.asarray(v, dtype)


def _along(ndim: int, axis: int, index: slice) -> tuple:
    return tuple(index if i == axis else slice(None) for i in range(ndim))


def _numpy_trapezoid(y, x=None, dx=1.0, axis=-1):
    y = args.value(y)
    if np.ndim(y) == 0:
        raise args.Unsupported  # numpy's own error
    ax = args.axes(axis, y.ndim)[0]
    if x is None:
        d = dx
    else:
        x = args.value(x)
        if np.ndim(x) == 1:
            d = np.reshape(np.diff(x), tuple(-1 if i == ax else 1 for i in range(y.ndim)))
        else:
            d = np.diff(x, axis=axis)
    hi, lo = _along(y.ndim, ax, slice(1, None)), _along(y.ndim, ax, slice(None, -1))
    return np.sum(d * (y[hi] + y[lo]) / 2.0, axis=axis)


public("trapezoid", numpy={np.trapezoid: _numpy_trapezoid})(_numpy_trapezoid)


def _numpy_interp(x, xp, fp, left=None, right=None, period=None):
    x, xp, fp = args.value(x), args.value(xp), args.value(fp)
    if np.ndim(xp) != 1 or np.ndim(fp) != 1 or xp.shape[0] != fp.shape[0] \
            or xp.shape[0] == 0 or period == 0:
        raise args.Unsupported  # numpy's own error
    dtype = np.complex128 if args.np_dtype(fp).kind == "c" else np.float64
    x, xp, fp = _typed(x, np.float64), _typed(xp, np.float64), _typed(fp, dtype)
    if period is not None:
        period = abs(period)
        x, xp = np.mod(x, period), np.mod(xp, period)
        order = np.argsort(xp)
        xp, fp = np.take(xp, order), np.take(fp, order)
        xp = np.concatenate([xp[-1:] - period, xp, xp[:1] + period])
        fp = np.concatenate([fp[-1:], fp, fp[:1]])
        left = right = None
    n = xp.shape[0]
    j = searchsorted(xp, x, side="right") - 1  # xp[j] <= x < xp[j + 1]
    if n == 1:
        inside = np.broadcast_to(fp[0], np.shape(x))
    else:
        k = np.clip(j, 0, n - 2)
        x0, x1, f0, f1 = (_at(v, i) for v in (xp, fp) for i in (k, k + 1))
        inside = where(j == n - 1, fp[n - 1], (f1 - f0) / (x1 - x0) * (x - x0) + f0)
    low = fp[0] if left is None else _typed(left, dtype)
    high = fp[n - 1] if right is None else _typed(right, dtype)
    y = where(x < xp[0], low, where(x > xp[n - 1], high, inside))
    return where(np.isnan(x), x, y) if dtype == np.float64 else y


def _at(v: Any, k: Any) -> Any:
    """``v[k]`` for a 1-d ``v`` and a traced index: an op (a constant ``v`` indexed
    by numpy would read the index, a guard of the trace)."""
    if not is_traced(k):
        return np.take(v, k)
    return reshape(take_along_dim(v, reshape(k, -1), 0), tuple(k.shape))


public("interp", numpy={np.interp: _numpy_interp})(_numpy_interp)


def _numpy_correlate(a, v, mode="valid"):
    a, v = args.value(a), args.value(v)
    if np.ndim(v) != 1 or np.ndim(a) != 1:
        raise args.Unsupported
    n, m = a.shape[0], v.shape[0]
    if mode == "same" and m > n:  # (numpy swaps the two: its window starts at n // 2)
        full = np.convolve(a, np.conjugate(v[::-1]), mode="full")
        return full[n // 2:n // 2 + m]
    return np.convolve(a, np.conjugate(v[::-1]), mode=mode)


public("correlate", numpy={np.correlate: _numpy_correlate})(_numpy_correlate)


def _numpy_heaviside(x1, x2, out=None, **kw):
    args.plain(out, **kw)
    x1, x2 = args.value(x1), args.value(x2)
    dtype = np.result_type(*(v if isinstance(v, (int, float)) else args.np_dtype(v)
                             for v in (x1, x2)))  # (a Python number: weak, as numpy's)
    if dtype.kind not in "fc" or args.np_dtype(x1).kind == "c":
        raise args.Unsupported  # numpy's own loops
    shape = np.broadcast_shapes(np.shape(x1), np.shape(x2))
    one, zero = np.ones((), dtype), np.zeros((), dtype)
    y = where(x1 < 0, zero, where(x1 > 0, one, _typed(x2, dtype)))
    y = where(np.isnan(x1), _typed(x1, dtype), y)
    return np.broadcast_to(y, shape) if np.shape(y) != shape else y


public("heaviside", numpy={np.heaviside: _numpy_heaviside})(_numpy_heaviside)


def _numpy_unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    p = args.value(p)
    if args.np_dtype(p).kind not in "f" or np.ndim(p) == 0:
        raise args.Unsupported  # numpy's integer form, or its own error
    ax = args.axes(axis, p.ndim)[0]
    dd = np.diff(p, axis=ax)
    discont = period / 2 if discont is None else discont
    high = period / 2
    ddmod = np.mod(dd + high, period) - high
    ddmod = where((ddmod == -high) & (dd > 0), high, ddmod)
    correct = where(np.abs(dd) < discont, 0.0, ddmod - dd)
    first, rest = _along(p.ndim, ax, slice(None, 1)), _along(p.ndim, ax, slice(1, None))
    return np.concatenate([p[first], p[rest] + np.cumsum(correct, axis=ax)], axis=ax)


public("unwrap", numpy={np.unwrap: _numpy_unwrap})(_numpy_unwrap)


def _conditions(x: Any, condlist: Any) -> list:
    if isinstance(condlist, (list, tuple)) and condlist and np.ndim(condlist[0]) > 0 \
            or is_traced(condlist):
        conds = list(condlist) if not is_traced(condlist) else [condlist]
    else:
        conds = [condlist] if np.ndim(condlist) == np.ndim(x) else list(condlist)
    return [c if is_traced(c) else np.asarray(c, bool) for c in conds]


def _numpy_piecewise(x, condlist, funclist, *a, **kw):
    x = args.value(x)
    if not is_traced(x) or np.ndim(x) == 0:
        raise args.Unsupported
    conds = _conditions(x, condlist)
    n = len(conds)
    if len(funclist) == n + 1:
        rest = np.ones(np.shape(x), bool)
        for c in conds:
            rest = rest & ~c
        conds.append(rest)
    elif len(funclist) != n:
        raise args.Unsupported  # numpy's ValueError
    y = np.zeros(np.shape(x), args.np_dtype(x))
    for c, f in zip(conds, funclist):
        c = np.broadcast_to(c, np.shape(x))
        if callable(f):
            picked = x * 0
            picked[c] = to_dtype(args.value(f(x[c], *a, **kw)), args.np_dtype(x))
            y = where(c, picked, y)
        else:
            y = where(c, to_dtype(np.asarray(f), args.np_dtype(x)), y)
    return y


public("piecewise", numpy={np.piecewise: _numpy_piecewise})(_numpy_piecewise)


def _numpy_apply_along_axis(func1d, axis, arr, *a, **kw):
    arr = args.value(arr)
    ax = args.axes(axis, np.ndim(arr))[0]
    moved = np.moveaxis(arr, ax, -1)
    outer = tuple(moved.shape[:-1])
    if not outer or 0 in outer:
        raise args.Unsupported  # numpy's own forms and errors
    results = [args.value(func1d(moved[i], *a, **kw)) for i in np.ndindex(*outer)]
    first = results[0]
    dtype = args.np_dtype(first)
    stacked = np.stack([to_dtype(r, dtype) if is_traced(r) else np.asarray(r, dtype)
                        for r in results])
    k = np.ndim(first)
    out = np.reshape(stacked, outer + tuple(np.shape(first)))
    order = list(range(ax)) + list(range(len(outer), len(outer) + k)) \
        + list(range(ax, len(outer)))
    return np.transpose(out, order)


public("apply_along_axis", numpy={np.apply_along_axis: _numpy_apply_along_axis})(
    _numpy_apply_along_axis)


def _numpy_apply_over_axes(func, a, axes):
    val = args.value(a)
    n = np.ndim(val)
    for axis in (axes,) if np.ndim(axes) == 0 else axes:
        res = func(val, n + axis if axis < 0 else axis)
        if np.ndim(res) != np.ndim(val):
            res = np.expand_dims(res, n + axis if axis < 0 else axis)
            if np.ndim(res) != np.ndim(val):
                raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val


public("apply_over_axes", numpy={np.apply_over_axes: _numpy_apply_over_axes})(
    _numpy_apply_over_axes)
