"""``R[index] = value`` in a loop's body, as ``item_writes.py`` rewrote it
(``R = item_set(R, index, value)``): in place when the body runs as Python, a new
value when it is traced as a region's body (``region_attempts.py`` counts those).

An int for every axis, or for the leading axes (a row, ``traj[t] = x``), writes the item
(``item_put``, in place in generated code where the loop owns the array); another is
made of ``index_select`` and ``index_copy`` along one axis at a time,
so an index read from the loop's counter (a traced int) needs no guard, and the
gradient of a step reads only the index: a reverse loop keeps no copy of the array
per step for the write.

>>> import numpy as np
>>> R = np.zeros((2, 3))
>>> item_set(R, (1, 2), 5.0) is R, R[1, 2]
(True, np.float64(5.0))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.indexing import index_copy_op, index_select_op
from ...ops.items import item_put_op
from ...tensor import Tensor
from .runtime import copies_elements, stored, subscript

#: how many region bodies are being traced (their item writes make new values)
DEPTH = [0]
item_slice = slice


def int0() -> np.int64:
    """0 as a carried int (``returns.counter_carries``: a loop's counter read after it
    starts as this, an int64 as the counter of a region is)."""
    return np.int64(0)


def first_item(xs: Any) -> Any:
    """Zeros shaped and typed as an item of ``xs`` (``returns.counter_carries``: the
    item of an array a loop walks, read after it, starts as this)."""
    if isinstance(xs, (Tensor, np.ndarray)) and xs.ndim:
        return np.zeros(tuple(xs.shape)[1:], xs.dtype if isinstance(xs, np.ndarray)
                        else xs._data.dtype)
    return int0()  # (not an array: the loop stays as written, the value unread)


def truth(test: Any) -> Any:
    """A return's test as a flag a loop may carry (``returns._returns``): a traced
    boolean as it is, an array's truth as ``!= 0``, else a 0-d bool array."""
    if isinstance(test, Tensor) and test._data.shape == ():
        return test if test._data.dtype == np.bool_ else np.not_equal(test, 0)
    return np.asarray(bool(test))


def any_of(*flags: Any) -> Any:
    """Whether one of a loop's return flags is set (its ``break`` test)."""
    out = flags[0]
    for f in flags[1:]:
        out = np.logical_or(out, f)
    return out


def item_set(x: Any, index: Any, value: Any) -> Any:
    """``x[index] = value``, then ``x``; in a region's body being traced, the array
    ``x`` with ``value`` at ``index``, a new value (``x`` is left as it is)."""
    if DEPTH[0] and isinstance(x, Tensor):
        return written(x, index, value)
    x[index] = stored(x, value)
    return x


def item_read(x: Any, index: Any, why: str) -> Any:
    """``x[index]`` (``subscript``), bound to a name the body reads after writing
    ``x``'s items: in a region's body being traced, only where the read is a copy (an
    int for every axis: numpy's scalar, not ``pb.compile``'s view); another raises
    TypeError with ``why`` (the loop then unrolls, as a view must see the writes)."""
    if DEPTH[0] and isinstance(x, Tensor):
        parts = list(index) if isinstance(index, tuple) else [index]
        if len(parts) != x.ndim or not all(map(_int, parts)) \
                or not copies_elements(x, index):
            raise TypeError(why)
    return subscript(x, index)


def written(x: Tensor, index: Any, value: Any) -> Tensor:
    """A new array: ``x`` with ``value`` at ``index``, for an index of ints (Python's or
    traced) and full slices ``:``; another raises TypeError (the loop then unrolls)."""
    parts = list(index) if isinstance(index, tuple) else [index]
    for p in parts:
        if not (_int(p) or _full(p)):
            raise TypeError("the body writes at an index other than ints and ':'")
    while parts and _full(parts[-1]):
        parts.pop()
    if len(parts) > x.ndim:
        raise IndexError(f"too many indices for an array of {x.ndim} dimensions")
    if parts and all(map(_int, parts)):
        return _item_put(x, parts, value)
    return _put(x, parts, value)


def _item_put(x: Tensor, parts: list, value: Any) -> Tensor:
    """The item (or row) at an int for each leading axis: ``item_put``, written in place
    where the loop owns the array."""
    shape = tuple(x.shape)[len(parts):]
    if not (isinstance(value, Tensor) and tuple(value.shape) == shape
            and value._data.dtype == x._data.dtype):
        value = _filled(shape, x, value)
    traced = [p for p in parts if isinstance(p, Tensor)]
    where = tuple(None if isinstance(p, Tensor) else int(p) for p in parts)
    return item_put_op(x, *traced, value, where=where)


def _full(p: Any) -> bool:
    return isinstance(p, slice) and p == slice(None)


def _int(p: Any) -> bool:
    if isinstance(p, Tensor):
        return p._data.ndim == 0 and p._data.dtype.kind in "iu"
    return isinstance(p, (int, np.integer)) and not isinstance(p, bool)


def _filled(shape: tuple, like: Tensor, value: Any) -> Any:
    """``value`` broadcast to ``shape``, in ``like``'s dtype (numpy's cast on writing)."""
    out = np.zeros(shape, like._data.dtype) + value
    if isinstance(out, Tensor) and out._data.dtype != like._data.dtype:
        raise TypeError("the value written has another dtype than the array")
    return out


def _put(x: Tensor, parts: list, value: Any) -> Tensor:
    if not parts:
        return _filled(tuple(x.shape), x, value) + 0 * x
    p, rest = parts[0], parts[1:]
    shape = tuple(x.shape)
    if _full(p):  # (the axis last in x and in the value: the next part first)
        kept = [shape[d] for d, q in enumerate(parts) if not _int(q)] \
            + list(shape[len(parts):])
        v = _filled(tuple(kept), x, value)
        v = v.permute(*range(1, v.ndim), 0)
        out = _put(x.permute(*range(1, x.ndim), 0), rest, v)
        return out.permute(x.ndim - 1, *range(x.ndim - 1))
    where = p.reshape(1) if isinstance(p, Tensor) else np.array([int(p)])
    if rest:
        row = index_select_op(x, where, dim=0).reshape(shape[1:])
        new = _put(row, rest, value)
    else:
        new = _filled(shape[1:], x, value)
    return index_copy_op(x, where, new.reshape((1,) + shape[1:]), dim=0)
