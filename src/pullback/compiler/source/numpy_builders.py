"""numpy's functions on values holding traced ones: ``np.array``, ``np.stack``,
``np.concatenate``... of lists of traced values recorded as one op (``numpy_call``),
``np.r_`` / ``np.c_`` (``concat_index``), and the arrays a converted function writes
into made local Tensors (``new_buffer``, ``as_buffer``).

>>> import numpy as np, pullback as pb
>>> a = pb.tensor(2.0, requires_grad=True)
>>> numpy_call(np.sum, [1.0, a * a])
tensor(5., dtype=pullback.float64, grad_fn=<SumBackward0>)
>>> new_buffer(np.zeros, 2)  # no trace: numpy's result
array([0., 0.])
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...autograd import record
from ...numpy_face import adopt
from ...ops.joining import cat_op, stack_op
from ...ops.numpy_extras import numpy_full, numpy_full_like
from ...tensor import Tensor
from ..user_lines import TraceError, source_of, user_frame
from .entry import ENTRY, at_line
from .traced_values import data_of, fresh, holds_traced, is_traced, traced_inside


def _stacked(items: list, axis: int, ref: np.ndarray) -> Tensor:
    """``np.stack(items, axis)`` recorded, as ``ref`` (numpy's result) has it."""
    operands = tuple(_operand(a) for a in items)
    out = record.apply(stack_op, operands, {"dim": axis % ref.ndim})
    return _cast(adopt(out, operands), ref.dtype)


def traced_array(obj: Any, dtype: Any = None) -> Any:
    """``np.array(obj, dtype)`` for nested lists holding traced values: a stack of
    its elements (each a traced value, a traced array, or a constant)."""
    ref = np.array(data_of(obj), dtype=dtype)  # numpy's shape and dtype (and errors)
    return _stacked([traced_array(x) if holds_traced(x) else x for x in obj], 0, ref)


def array_like(x: Any) -> Any:
    """``x``, a (nested) list or tuple holding traced values that numpy would take as
    one numeric array (``[mu0, mu1]``, ``[[a, 0.1], [0.1, b]]``), as one traced array;
    anything else (a pytree such as ``(c, lower)``, a value) as it is."""
    if not holds_traced(x):
        return x
    try:
        ref = np.array(data_of(x))
    except (ValueError, TypeError):
        return x
    return traced_array(x) if ref.dtype.kind in "biufc" else x


def _as_array(x: Any) -> Any:
    return traced_array(x) if holds_traced(x) else x


def _cast(t: Tensor, dtype: Any) -> Tensor:
    if dtype is None or np.dtype(dtype) == t._data.dtype:
        return t
    return t.to(np.dtype(dtype))


def _leading_ones(t: Tensor, ndim: int) -> Tensor:
    """``t`` with leading axes of length 1 up to ``ndim`` axes."""
    if t.ndim >= ndim:
        return t
    return t.reshape((1,) * (ndim - t.ndim) + tuple(t.shape))


# ------------------------------------------------ numpy functions on traced values
# (numpy's own signatures: a wrong argument raises numpy's TypeError)
def _array(object: Any, dtype: Any = None, *, copy: Any = True, order: Any = "K",
           subok: bool = False, ndmin: int = 0, like: Any = None) -> Any:
    if is_traced(object):
        out = _cast(object.clone() if copy else object, dtype)
    else:
        out = traced_array(object, dtype)
    return _leading_ones(out, ndmin)


def _asarray(a: Any, dtype: Any = None, order: Any = None, *, device: Any = None,
             copy: Any = None, like: Any = None) -> Any:
    return _array(a, dtype, copy=bool(copy))


def _ascontiguousarray(a: Any, dtype: Any = None, *, like: Any = None) -> Any:
    return _array(a, dtype, copy=False, ndmin=1)


def _stack(arrays: Any, axis: int = 0, out: Any = None, *, dtype: Any = None,
           casting: str = "same_kind") -> Any:
    if out is not None:
        return np.stack(arrays, axis, out, dtype=dtype, casting=casting)
    items = [_as_array(a) for a in arrays]
    ref = np.stack([data_of(a) for a in items], axis, dtype=dtype, casting=casting)
    return _stacked(items, axis, ref)


def _concatenate(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: str = "same_kind") -> Any:
    if out is not None:
        return np.concatenate(arrays, axis, out, dtype=dtype, casting=casting)
    items = [_as_array(a) for a in arrays]
    if axis is None:
        items = [a.reshape(-1) if isinstance(a, Tensor) else np.ravel(a) for a in items]
        axis = 0
    ref = np.concatenate([data_of(a) for a in items], axis, dtype=dtype, casting=casting)
    axis %= ref.ndim
    operands = tuple(_operand(a) for a in items)
    out = record.apply(cat_op, operands, {"dim": axis})
    return _cast(adopt(out, operands), ref.dtype)


def _atleast(a: Any, ndim: int) -> Any:
    """numpy's atleast_1d/atleast_2d of one value (a traced list becomes an array)."""
    a = _as_array(a)
    if isinstance(a, Tensor):
        return _leading_ones(a, ndim)
    return np.atleast_1d(a) if ndim == 1 else np.atleast_2d(a)


def _hstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    items = [_atleast(a, 1) for a in tup]
    axis = 0 if items and items[0].ndim == 1 else 1
    return _concatenate(items, axis, dtype=dtype, casting=casting)


def _vstack(tup: Any, *, dtype: Any = None, casting: str = "same_kind") -> Any:
    return _concatenate([_atleast(a, 2) for a in tup], 0, dtype=dtype, casting=casting)


#: numpy function -> its form for arguments holding traced values
_BUILDERS: dict = {np.array: _array, np.asarray: _asarray, np.asanyarray: _asarray,
                   np.ascontiguousarray: _ascontiguousarray, np.stack: _stack,
                   np.concatenate: _concatenate, np.hstack: _hstack, np.vstack: _vstack,
                   np.full: numpy_full, np.full_like: numpy_full_like,
                   # their dispatchers look inside the lists (numpy's protocol finds the
                   # traced choices): called as written, lists of any shapes kept
                   np.choose: np.choose, np.select: np.select, np.block: np.block,
                   np.piecewise: np.piecewise, np.linalg.multi_dot: np.linalg.multi_dot,
                   np.histogramdd: np.histogramdd,
                   # (its dispatcher looks inside a tuple only)
                   np.lexsort: lambda keys, axis=-1: np.lexsort(tuple(keys), axis)}
if hasattr(np, "row_stack"):  # (numpy 2 deprecates it: vstack's alias)
    _BUILDERS[np.row_stack] = _vstack


#: creation function -> what computes its value (``empty``: zeros, so that generated
#: code holds no uninitialized memory)
CREATION: dict = {np.zeros: np.zeros, np.ones: np.ones, np.empty: np.zeros, np.full: np.full,
                 np.zeros_like: np.zeros_like, np.ones_like: np.ones_like,
                 np.empty_like: np.zeros_like, np.full_like: np.full_like}


def new_buffer(fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` for a creation function of ``CREATION`` whose result the
    function writes into: inside a trace, a float buffer is a local Tensor that traced
    values may be written into; elsewhere (and for other dtypes) numpy's array."""
    if ENTRY.get() is None:
        return fn(*args, **kwargs)
    plain = lambda x: x._data if isinstance(x, Tensor) else x
    value = CREATION[fn](*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
        return value
    buf = fresh(value)
    fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
    if fn in (np.full, np.full_like) and is_traced(fill):
        buf[...] = fill
    return buf


def as_buffer(out: Any, args: tuple, kwargs: dict) -> Any:
    """The result of a numpy function (``np.eye(2)``, ``np.array([0., 1.])``) the function
    writes into: inside an entry, a new float array (one sharing no memory with the
    arrays it was made from) becomes a local Tensor, as ``new_buffer``'s do."""
    if ENTRY.get() is None or type(out) is not np.ndarray or out.dtype.kind not in "fc":
        return out
    if any(np.may_share_memory(out, a) for a in _arrays_in((args, kwargs))):
        return out  # a view: writes into it are writes into its source
    return fresh(out)


def _arrays_in(x: Any) -> list:
    if isinstance(x, np.ndarray):
        return [x]
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        return [a for y in x for a in _arrays_in(y)]
    return []


def is_creation(fn: Any) -> bool:
    """A numpy function that makes a new array from a shape (``CREATION``)."""
    return _lookup(CREATION, fn) is not None


def _lookup(table: dict, fn: Any) -> Any:
    try:
        return table.get(fn)
    except TypeError:  # an unhashable callable
        return None


def numpy_call(fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` for a numpy function ``fn``: numpy's own call unless a
    traced value is inside a list argument."""
    if not (traced_inside(args) or traced_inside(kwargs.values())):
        return fn(*args, **kwargs)
    build = _lookup(_BUILDERS, fn)
    if build is not None:
        return build(*args, **kwargs)
    return fn(*[_as_array(a) for a in args], **{k: _as_array(v) for k, v in kwargs.items()})


# ------------------------------------------------------------------ np.r_ and np.c_
class _IndexConcat:
    """``np.r_[...]`` / ``np.c_[...]`` from rewritten code (``concat_index``): numpy's own
    when no traced value is among the items, else one concatenate of the items made
    arrays as numpy makes them (r_: at least 1-d, along axis 0; c_: 1-d items as columns,
    at least 2-d, along the last axis)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __getitem__(self, key: Any) -> Any:
        items = key if isinstance(key, tuple) else (key,)
        if not traced_inside(items):
            return self.obj[key]
        name = "np.c_" if self.obj is np.c_ else "np.r_"
        if any(isinstance(i, str) for i in items):
            raise TraceError(f"{name}[...] with a string directive on values that need a "
                             f"gradient is not supported; call np.concatenate instead ("
                             f"{at_line(source_of(user_frame()))})")
        parts = [self._part(i, name == "np.c_") for i in items]
        return np.concatenate(parts, axis=-1 if name == "np.c_" else 0)

    def _part(self, item: Any, columns: bool) -> Any:
        if isinstance(item, slice):
            item = self.obj[item] if not columns else np.r_[item]
        if not is_traced(item):
            item = np.asarray(item)
        if item.ndim == 0:
            item = item.reshape(1)
        if columns and item.ndim == 1:
            item = item.reshape(-1, 1)
        return item


def concat_index(obj: Any) -> Any:
    """What ``np.r_`` / ``np.c_`` read in rewritten code (``_IndexConcat``)."""
    return _IndexConcat(obj) if obj is np.r_ or obj is np.c_ else obj


def _operand(x: Any) -> Any:
    """``x`` as an op's input: a traced Tensor as it is, a number as it is (a literal
    in generated code), anything else as the constant array it stands for."""
    if is_traced(x) or isinstance(x, (int, float, complex)):
        return x
    return np.asarray(data_of(x))
