"""The methods only Tensors have (IR values share the rest, ops.table.methods.ValueMethods):
in-place ops, item assignment, numpy's protocols and dtype conversions.

The in-place methods are derived from the op table: a primitive declared with
``inplace=`` becomes ``Tensor.<name>_`` with torch's signature (``x.clamp_(0, 1)``,
``x.add_(y)``; see ops/table/bindings.py).
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Callable

import numpy as np

from . import devices, numpy_interop
from .autograd import record, tracer_hooks
from .autograd.anomaly_mode import user_frames
from .autograd.inplace_checks import check_overlap
from .autograd.messages import copy_construct, index_put_dtypes, legacy_type
from .autograd.record import apply_inplace, notify_concrete
from .dtypes import to_numpy_dtype as dtype_np
from .ops import Public, subscribe
from .ops import elementwise as ew
from .ops.gathering import index_gather
from .ops.indexing import index_select_op
from .ops.shape import reshape_op
from .ops.subscripts import basic_index_kind, getitem, select
from .ops.table import bindings
from .ops.writes import copy, index_put

NEW_TENSOR_COPY = copy_construct("tensor.new_tensor")


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


def _integer_tensor(idx: Any) -> bool:
    return hasattr(idx, "_data") and idx._data.dtype.kind in "iu"


def _gathered(x: Any, idx: Any) -> Any:
    """``x[idx]`` for an integer tensor ``idx`` as a gather that reads it (a vmap's trace:
    each example's own index; ``tracer_hooks.GATHERING``)."""
    flat = index_select_op(x, reshape_op(idx, shape=(-1,)), dim=0)
    return reshape_op(flat, shape=tuple(idx.shape) + tuple(x.shape[1:]))


def traced_gather(x: Any, idx: Any) -> Any:
    """``x[idx]`` as a gather that reads at run time the integer index tensors the trace
    computed (``ops/gathering.py``), or None where the index has none (or has a boolean
    mask, whose count of True sets the result's shape: a guard, as before)."""
    parts = idx if isinstance(idx, tuple) else (idx,)
    slots, arrays, index = [], [], []
    for k, p in enumerate(parts):
        if hasattr(p, "_data"):
            if p._data.dtype.kind == "b":
                return None
            if p._data.dtype.kind in "iu" and record.traced_value(p):
                slots.append(k)
                arrays.append(p)
                index.append(0)
                continue
        elif isinstance(p, list) and any(hasattr(q, "_data") for q in p) or (
                getattr(p, "dtype", None) == np.bool_):
            return None  # (a list of tensors: numpy's and torch's readings differ)
        index.append(np.asarray(p) if isinstance(p, range) else _index(p))
    if not slots:
        return None
    return index_gather(x, *arrays, index=tuple(index), slots=tuple(slots))


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


def _cast(name: str, dtype: Any) -> Callable:
    """The method ``Tensor.<name>()``: a copy converted to ``dtype`` (torch's
    ``x.float()``, ``x.long()``...)."""
    def cast(self):
        return ew.to_dtype(self, dtype)
    cast.__name__, cast.__qualname__ = name, f"TensorMethods.{name}"
    return cast


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
        if record.TRACING and record.trace_hooks():
            if tracer_hooks.GATHERING.on and _integer_tensor(idx):
                return _gathered(self, idx)
            out = traced_gather(self, idx)
            if out is not None:
                return out
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

    # (without these Python would rebind ``x **= 2`` to a new tensor: a view's base, and
    # every other name for it, would not see the write)
    def __ipow__(self, other):
        return self.pow_(other)

    def __imod__(self, other):
        return self.remainder_(other)

    def __ifloordiv__(self, other):
        return self.floor_divide_(other)

    def contiguous(self):
        return self if self._data.flags.c_contiguous else ew.clone_contiguous(self)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements lie in row-major order (not after ``t()`` or ``permute``)."""
        return bool(self._data.flags.c_contiguous)

    def element_size(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    def apply_(self, callable: Callable) -> Any:
        """Replace each element by ``callable(element)``, in place, as torch: a Python
        call per element, so not for tensors that require grad, nor inside a trace (its
        Python function would not be in the generated code).

        >>> import pullback as pb
        >>> pb.tensor([1.0, 2.0]).apply_(lambda v: v * 10)
        tensor([10., 20.])
        """
        if self._requires_grad:
            raise RuntimeError("Can't call apply_() on Variable that requires grad. Use "
                               "var.detach().apply_() instead.")
        if record.traced_value(self):
            line = (user_frames() or [None])[-1]
            where = "" if line is None else \
                f" at {os.path.basename(line.filename)}:{line.lineno} ({line.line})"
            raise RuntimeError(f"apply_(){where} runs a Python function on each element of a "
                               "traced value, which the generated code cannot repeat: call "
                               "it outside the compiled function")
        real = self._data.dtype.kind != "c"
        if self._data.size == 0:  # (nditer refuses zero-sized operands)
            return self
        for cell in np.nditer(self._data, op_flags=[["readwrite"]]):
            value = callable(cell.item())
            if not isinstance(value, (int, float, np.number) if real else
                              (int, float, complex, np.number)):
                raise TypeError(f"must be {'real' if real else 'complex'} number, not "
                                f"{type(value).__name__}")
            cell[...] = value
        return self

    # ----------------------------------------------------------------- dtypes
    def to(self, *args, **kwargs):
        """torch's three forms: ``to(dtype)``, ``to(device, dtype)``, ``to(other)`` (its dtype;
        every tensor is on the CPU). A GPU raises the CPU build's AssertionError."""
        dtype, copy_ = kwargs.pop("dtype", None), kwargs.pop("copy", False)
        where = kwargs.pop("device", None)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        rest = list(args)
        if rest and hasattr(rest[0], "_data") and hasattr(rest[0], "dtype"):
            dtype = rest.pop(0).dtype
        elif rest and (isinstance(rest[0], str) or devices.is_device(rest[0])):
            where = rest.pop(0)
        if rest and not isinstance(rest[0], bool) and dtype is None:
            dtype = rest.pop(0)
        devices.check(where)
        if dtype is None or np.dtype(dtype_np(dtype)) == self._data.dtype:
            return ew.clone(self) if copy_ else self
        return ew.to_dtype(self, dtype)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        """A new leaf tensor of ``data`` with this tensor's dtype (unless given)."""
        devices.check(device)
        if hasattr(data, "_data"):
            warnings.warn(NEW_TENSOR_COPY, UserWarning, stacklevel=2)
            data = data._data
        arr = np.array(data, dtype=dtype_np(dtype) if dtype is not None else self._data.dtype)
        return self._new_like(arr, requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new_filled(size, 0, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new_filled(size, 1, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        return self._new_filled(size, 0, dtype, device, requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        return self._new_filled((size,), fill_value, dtype, device, requires_grad)

    def _new_filled(self, size, value, dtype, device, requires_grad):
        devices.check(device)
        if len(size) == 1 and isinstance(size[0], (tuple, list)):
            size = tuple(size[0])
        for i, s in enumerate(size):
            if not isinstance(s, (int, np.integer)):
                raise TypeError(f"new_zeros(): argument 'size' failed to unpack the object at "
                                f"pos {i + 1} with error \"type must be tuple of ints,but got "
                                f"{type(s).__name__}\"")
        npd = dtype_np(dtype) if dtype is not None else self._data.dtype
        return self._new_like(np.full(tuple(int(s) for s in size), value, dtype=npd),
                              requires_grad)

    def _new_like(self, arr, requires_grad):
        if record.TRACING and record.trace_hooks():  # a local of the traced function
            t = record.apply(ew.clone, (arr,), {})
        else:
            t = type(self)._make(arr)
        if requires_grad:
            t.requires_grad_(True)
        return t

    def type(self, dtype=None):
        if dtype is None:
            return legacy_type(self._data.dtype)
        return ew.to_dtype(self, dtype)

    def type_as(self, other):
        return ew.to_dtype(self, other._data.dtype)

    float = _cast("float", np.float32)
    double = _cast("double", np.float64)
    half = _cast("half", np.float16)
    long = _cast("long", np.int64)
    int = _cast("int", np.int32)
    bool = _cast("bool", np.bool_)

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
