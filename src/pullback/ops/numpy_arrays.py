"""numpy's array-building functions with traced arrays, composed of existing ops:
``insert``, ``delete``, ``resize`` and ``block`` gather from their inputs' elements,
``vander``, ``logspace``, ``geomspace`` and ``ediff1d`` compute as numpy does;
``trim_zeros`` and ``extract`` slice and gather; ``unstack`` takes each index of
the axis.

- ``insert`` / ``delete`` / ``resize`` / ``block`` run numpy's own function on arrays of
  element numbers (each input's elements numbered in turn) and gather the values at the
  numbers it returns: every argument form, broadcast and error is numpy's, and a
  value repeated by a broadcast gets the sum of its gradients.
- ``vander`` multiplies its columns up cumulatively, as numpy does.
- ``logspace`` is ``base ** linspace(start, stop)``; ``geomspace`` takes numpy's
  steps (sign, ``log10``, ``logspace``, then the exact endpoints).
- ``ediff1d`` is the differences of the raveled array between ``to_begin`` and
  ``to_end`` (both may require grad); ``trim_zeros`` and ``extract`` read which
  elements are zero (or true) from the values, a guard of the trace under ``pb.grad``,
  and slice or gather the rest (the condition of ``extract`` gets no gradient).

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([1., 2., 3.], requires_grad=True)
>>> np.insert(x, 1, x[2] * 10)
tensor([ 1., 30.,  2.,  3.], grad_fn=<IndexSelectBackward0>)
>>> np.vander(x, 3)
tensor([[1., 1., 1.],
        [4., 2., 1.],
        [9., 3., 1.]], dtype=pullback.float64, grad_fn=<SliceBackward0>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import to_dtype, where
from .table import args
from .table.registry import is_traced, public


def _numbered(values: list) -> tuple:
    """Each value's elements numbered after the previous values', and the values'
    elements in one flat array of their common dtype."""
    dtype = np.result_type(*(args.np_dtype(v) for v in values))
    numbers, flat, start = [], [], 0
    for v in values:
        size = int(np.prod(np.shape(v), dtype=np.int64))
        numbers.append(np.arange(start, start + size, dtype=np.int64).reshape(np.shape(v)))
        flat.append(np.reshape(to_dtype(v, dtype) if is_traced(v) else np.asarray(v, dtype), -1))
        start += size
    return numbers, np.concatenate(flat), dtype


def _gathered(flat: Any, at: np.ndarray) -> Any:
    taken = np.take(flat, np.ravel(at))
    return taken if at.ndim == 1 else np.reshape(taken, at.shape)


def _numpy_insert(arr, obj, values, axis=None):
    arr = args.value(arr)
    if is_traced(obj):
        raise args.Unsupported
    values = values if is_traced(values) else np.asarray(values)
    (a, v), flat, _ = _numbered([arr, values])
    flat = to_dtype(flat, args.np_dtype(arr))  # numpy casts the values to arr's dtype
    return _gathered(flat, np.insert(a, obj, v, axis))


def _numpy_delete(arr, obj, axis=None):
    arr = args.value(arr)
    if is_traced(obj):
        raise args.Unsupported
    (a,), flat, _ = _numbered([arr])
    return _gathered(flat, np.delete(a, obj, axis))


def _numpy_resize(a, new_shape):
    a = args.value(a)
    (n,), flat, _ = _numbered([a])
    if n.size == 0:
        raise args.Unsupported  # numpy's zeros
    return _gathered(flat, np.resize(n, new_shape))


def _leaves(arrays: Any, found: list) -> Any:
    """The nesting of lists with each leaf replaced by its element numbers' slot."""
    if isinstance(arrays, list):
        return [_leaves(a, found) for a in arrays]
    found.append(arrays if is_traced(arrays) else np.asarray(arrays))
    return len(found) - 1


def _numpy_block(arrays):
    found: list = []
    nest = _leaves(arrays, found)
    if not found:
        raise args.Unsupported  # numpy's own error
    numbers, flat, _ = _numbered(found)
    return _gathered(flat, np.block(_put_numbers(nest, numbers)))


def _put_numbers(nest, numbers):
    """``np.block``'s nested lists with each leaf's element numbers (a module function:
    a closure calling itself is a cycle, keeping the values alive until the gc runs)."""
    return [_put_numbers(a, numbers) for a in nest] if isinstance(nest, list) else \
        numbers[nest]


public("insert", numpy={np.insert: _numpy_insert})(_numpy_insert)
public("delete", numpy={np.delete: _numpy_delete})(_numpy_delete)
public("resize", numpy={np.resize: _numpy_resize})(_numpy_resize)
public("block", numpy={np.block: _numpy_block})(_numpy_block)


def _numpy_vander(x, N=None, increasing=False):
    x = args.value(x)
    if np.ndim(x) != 1:
        raise args.Unsupported  # numpy's ValueError
    n = x.shape[0]
    N = n if N is None else int(N)
    dtype = np.promote_types(args.np_dtype(x), int)
    x = to_dtype(x, dtype)
    if N <= 1:
        return np.ones((n, N), dtype)
    cols = np.concatenate([np.ones((n, 1), dtype), np.broadcast_to(x[:, None], (n, N - 1))],
                          axis=1)
    v = np.cumprod(cols, axis=1)
    return v if increasing else v[:, ::-1]


public("vander", numpy={np.vander: _numpy_vander})(_numpy_vander)


def _ndmin(x: Any, n: int) -> Any:
    return np.reshape(x, (1,) * (n - np.ndim(x)) + tuple(np.shape(x)))


def _numpy_logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    start, stop, base = args.value(start), args.value(stop), args.value(base)
    if not isinstance(base, (float, int)) and np.ndim(base):  # (numpy's test)
        n = len(np.broadcast_shapes(np.shape(start), np.shape(stop), np.shape(base)))
        start, stop, base = (_ndmin(v, n) for v in (start, stop, base))
        base = np.expand_dims(base, axis=axis)
    out = np.power(base, np.linspace(start, stop, num=num, endpoint=endpoint, axis=axis))
    return out if dtype is None else to_dtype(out, np.dtype(dtype))


def _numpy_geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    start, stop = (v if is_traced(v) else np.asarray(v) for v in (start, stop))
    if bool(np.any(start == 0)) or bool(np.any(stop == 0)):
        raise args.Unsupported  # numpy's ValueError
    dt = np.result_type(args.np_dtype(start), args.np_dtype(stop), float(num),
                        np.zeros((), dtype))
    if dt.kind == "c":
        raise args.Unsupported
    start, stop = to_dtype(start, dt), to_dtype(stop, dt)
    sign = np.sign(start)
    start, stop = start / sign, stop / sign
    result = _numpy_logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint,
                             base=10.0, dtype=dt)
    if num > 0:
        at = np.arange(num).reshape((-1,) + (1,) * (np.ndim(result) - 1))
        result = where(at == 0, start, result)
        if num > 1 and endpoint:
            result = where(at == num - 1, stop, result)
    result = result * sign
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return to_dtype(result, np.dtype(dtype) if dtype is not None else dt)


public("logspace", numpy={np.logspace: _numpy_logspace})(_numpy_logspace)
public("geomspace", numpy={np.geomspace: _numpy_geomspace})(_numpy_geomspace)


def _flat(v: Any, dtype: Any) -> Any:
    """``v`` raveled, in ``dtype`` (numpy's same-kind cast, else its own error)."""
    if is_traced(v):
        return np.reshape(to_dtype(v, dtype), -1)
    v = np.asanyarray(v)
    if not np.can_cast(v.dtype, dtype, casting="same_kind"):
        raise args.Unsupported  # numpy's TypeError
    return np.asarray(v, dtype).ravel()


def _numpy_ediff1d(ary, to_end=None, to_begin=None):
    """The differences of the raveled array, between ``to_begin`` and ``to_end`` (each
    raveled and cast to the array's dtype, as numpy's), differentiable in all three."""
    x = np.reshape(args.value(ary), -1)
    dtype = args.np_dtype(x)
    parts = [x[1:] - x[:-1]]
    if to_begin is not None:
        parts.insert(0, _flat(args.value(to_begin), dtype))
    if to_end is not None:
        parts.append(_flat(args.value(to_end), dtype))
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


public("ediff1d", numpy={np.ediff1d: _numpy_ediff1d})(_numpy_ediff1d)


def _numpy_trim_zeros(filt, trim="fb", axis=None):
    """numpy's trim_zeros: the box of the nonzero elements (read from the values, a
    guard of the trace) sliced out of the array."""
    x = args.value(filt)
    if not is_traced(x) or not isinstance(trim, str) or trim.lower() not in \
            ("fb", "bf", "f", "b"):
        raise args.Unsupported  # numpy's own errors
    trim, nd = trim.lower(), x.ndim
    found = tuple(range(nd)) if axis is None else \
        np.lib.array_utils.normalize_axis_tuple(axis, nd, argname="axis")  # numpy's errors
    if not found:
        return x
    at = np.argwhere(np.asarray(x.detach()))
    if at.size == 0:
        start = stop = [0] * nd
    else:
        start = at.min(axis=0) if "f" in trim else [None] * nd
        stop = at.max(axis=0) + 1 if "b" in trim else [None] * nd
    return x[tuple(slice(start[d], stop[d]) if d in found else slice(None)
                   for d in range(nd))]


public("trim_zeros", numpy={np.trim_zeros: _numpy_trim_zeros})(_numpy_trim_zeros)


def _numpy_extract(condition, arr):
    """The elements of the raveled ``arr`` where the raveled condition (data, no
    gradient; read: a guard of the trace) is true."""
    cond = condition.detach() if is_traced(condition) else condition
    at = np.flatnonzero(np.ravel(np.asarray(cond)))
    x = np.reshape(args.value(arr), -1)
    if at.size and at[-1] >= x.shape[0]:
        raise args.Unsupported  # numpy's IndexError
    return x[at]


public("extract", numpy={np.extract: _numpy_extract})(_numpy_extract)


def _numpy_unstack(x, /, *, axis=0):
    x = args.value(x)
    np.unstack(np.broadcast_to(np.zeros((), args.np_dtype(x)), np.shape(x)), axis=axis)
    ax = args.axes(axis, np.ndim(x))[0]  # (numpy's errors, above)
    return tuple(x[(slice(None),) * ax + (i,)] for i in range(np.shape(x)[ax]))


public("unstack", numpy={np.unstack: _numpy_unstack})(_numpy_unstack)
