"""The methods only Tensors have (IR values share the rest, ops.methods.ValueMethods):
in-place ops, item assignment, numpy's protocols and dtype conversions.

The in-place methods are derived from the op table: a primitive declared with
``inplace=`` becomes ``Tensor.<name>_`` with torch's signature (``x.clamp_(0, 1)``,
``x.add_(y)``; see ops/bindings.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import numpy_interop
from .autograd.messages import index_put_dtypes, legacy_type
from .autograd.record import apply_inplace, check_overlap, notify_concrete
from .ops import Public, bindings, subscribe
from .ops import elementwise as ew
from .ops.shape import basic_index_kind, copy, getitem, index_put, select


def _index(idx: Any) -> Any:
    """Tensors and lists inside an index become numpy arrays (static index values;
    a traced index tensor becomes a guard on its value)."""
    if isinstance(idx, tuple):
        return tuple(_index(i) for i in idx)
    if hasattr(idx, "_data"):
        notify_concrete(idx, "index")
        return idx._data
    if isinstance(idx, list):
        return np.asarray([_index(i) for i in idx])
    return idx


def _whole(idx: Any, shp: tuple) -> bool:
    """Whether an index selects the whole tensor by full slices (``x[:]``, ``x[...]``)."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    dims = [p for p in parts if p is not Ellipsis]
    if len(dims) > len(shp) or len(parts) - len(dims) > 1:
        return False
    k = next((i for i, p in enumerate(parts) if p is Ellipsis), len(parts))
    after = parts[k + 1:]  # (the parts after an Ellipsis index the last dims)
    for p, n in zip(parts[:k] + after, shp[:k] + shp[len(shp) - len(after):]):
        if not isinstance(p, slice) or p.indices(n) != (0, n, 1):
            return False
    return True


class TensorMethods:
    __slots__ = ()

    # numpy's protocols: numpy functions on Tensors run pullback ops (numpy_interop.py)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return numpy_interop.array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return numpy_interop.array_function(func, types, args, kwargs)

    def __getitem__(self, idx):
        if type(idx) is int:  # x[i]: always a select (what getitem would pick)
            return select(self, index=idx)
        return getitem(self, _index(idx))

    def __setitem__(self, idx, value):
        idx = _index(idx)
        if _whole(idx, self.shape):  # torch writes into the tensor itself, not a view
            apply_inplace(copy, (self, value), {})
        elif basic_index_kind(idx) is not None:
            apply_inplace(copy, (getitem(self, idx), value), {})
        else:
            check_overlap(self, (value,), full=True)  # torch's index_put_ refuses any overlap
            if hasattr(value, "_data") and value._data.dtype != self._data.dtype:
                raise RuntimeError(index_put_dtypes(self._data.dtype, value._data.dtype))
            apply_inplace(index_put, (self, value), {"index": idx})

    def __iadd__(self, other):
        return apply_inplace(ew.add_op, (self, other), {})

    def __isub__(self, other):
        return apply_inplace(ew.sub_op, (self, other), {})

    def __imul__(self, other):
        return apply_inplace(ew.mul, (self, other), {})

    def __itruediv__(self, other):
        return apply_inplace(ew.div, (self, other), {})

    def contiguous(self):
        return self if self._data.flags.c_contiguous else ew.clone_contiguous(self)

    # ----------------------------------------------------------------- dtypes
    def to(self, dtype=None, *args, **kwargs):
        if dtype is None or isinstance(dtype, str) and dtype in ("cpu",):
            dtype = kwargs.get("dtype")
            if dtype is None:
                return self
        return ew.to_dtype(self, dtype)

    def type(self, dtype=None):
        if dtype is None:
            return legacy_type(self._data.dtype)
        return ew.to_dtype(self, dtype)

    def type_as(self, other):
        return ew.to_dtype(self, other._data.dtype)

    def float(self):
        return ew.to_dtype(self, np.float32)

    def double(self):
        return ew.to_dtype(self, np.float64)

    def half(self):
        return ew.to_dtype(self, np.float16)

    def long(self):
        return ew.to_dtype(self, np.int64)

    def int(self):
        return ew.to_dtype(self, np.int32)

    def bool(self):
        return ew.to_dtype(self, np.bool_)

    def is_floating_point(self):
        return self._data.dtype.kind == "f"

    def is_complex(self):
        return self._data.dtype.kind == "c"


def _install(entry: Public) -> None:
    if entry.inplace and entry.operands is not None:
        setattr(TensorMethods, entry.inplace, bindings.inplace_public(
            entry.fn, entry.operands, entry.inplace, apply_inplace))
    elif entry.inplace:
        setattr(TensorMethods, entry.inplace,
                bindings.inplace(entry.fn, entry.inplace, apply_inplace))


subscribe(_install)
