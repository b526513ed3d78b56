"""Tensor operators and methods: thin calls into ops.api and the op table."""

from __future__ import annotations

from typing import Any

import numpy as np

from .autograd.record import CONCRETE_HOOKS, apply_inplace
from .ops import api, math, shape
from .ops.registry import OPS


def _index(idx: Any) -> Any:
    """Tensors and lists inside an index become numpy arrays (static index values;
    a traced index tensor becomes a guard on its value)."""
    if isinstance(idx, tuple):
        return tuple(_index(i) for i in idx)
    if hasattr(idx, "_data"):
        if CONCRETE_HOOKS:
            for hook in CONCRETE_HOOKS:
                hook(idx, "index")
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
    for p, n in zip(dims, shp):
        if not isinstance(p, slice) or p.indices(n) != (0, n, 1):
            return False
    return True


def _inplace(name: str) -> Any:
    """``t.<name>_(other)``: the op ``name`` written into ``t``."""
    op = OPS[name]

    def method(self, *args: Any, **params: Any) -> Any:
        return apply_inplace(op, (self,) + args, params)

    method.__name__ = name + "_"
    return method


class TensorMethods:
    __slots__ = ()

    # ------------------------------------------------------------- operators
    def __add__(self, other):
        return math.add(self, other)

    def __radd__(self, other):
        return math.add(self, other)  # torch: other + x runs add(x, other)

    def __sub__(self, other):
        return math.sub(self, other)

    def __rsub__(self, other):
        return math.rsub(self, other)

    def __mul__(self, other):
        return math.mul(self, other)

    def __rmul__(self, other):
        return math.mul(self, other)

    def __truediv__(self, other):
        return math.div(self, other)

    def __rtruediv__(self, other):
        if isinstance(other, (int, float)) and self._data.dtype.kind in "fc":
            # torch: reciprocal(x) * other
            return math.mul(math.reciprocal(self), other)
        return math.div(other, self)

    def __neg__(self):
        return math.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return math.abs(self)

    def __pow__(self, exponent):
        return api.pow(self, exponent)

    def __rpow__(self, base):
        return api.pow(base, self)

    def __matmul__(self, other):
        return api.matmul(self, other)

    def __rmatmul__(self, other):
        return api.matmul(other, self)

    def __gt__(self, other):
        return math.gt(self, other)

    def __ge__(self, other):
        return math.ge(self, other)

    def __lt__(self, other):
        return math.lt(self, other)

    def __le__(self, other):
        return math.le(self, other)

    def __eq__(self, other):
        return math.eq(self, other)

    def __ne__(self, other):
        return math.ne(self, other)

    def __and__(self, other):
        return math.logical_and(self, other)

    def __or__(self, other):
        return math.logical_or(self, other)

    def __invert__(self):
        return math.logical_not(self)

    # ------------------------------------------------------------- comparisons
    def eq(self, other):
        return math.eq(self, other)

    def ne(self, other):
        return math.ne(self, other)

    def gt(self, other):
        return math.gt(self, other)

    def ge(self, other):
        return math.ge(self, other)

    def lt(self, other):
        return math.lt(self, other)

    def le(self, other):
        return math.le(self, other)

    def all(self, dim=None, keepdim=False):
        """True where no element is zero (composed: no element of ``not x`` is true)."""
        return math.eq(api.sum(math.logical_not(self), dim, keepdim), 0)

    def any(self, dim=None, keepdim=False):
        return math.ne(api.sum(math.ne(self, 0), dim, keepdim), 0)

    # numpy's protocols: numpy functions on Tensors run pullback ops (numpy_interop.py)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .numpy_interop import array_ufunc
        return array_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from .numpy_interop import array_function
        return array_function(func, types, args, kwargs)

    def __getitem__(self, idx):
        if type(idx) is int:  # x[i]: always a select (what api.getitem would pick)
            return shape.select(self, index=idx)
        return api.getitem(self, _index(idx))

    def __setitem__(self, idx, value):
        idx = _index(idx)
        if _whole(idx, self.shape):  # torch writes into the tensor itself, not a view
            apply_inplace(shape.copy, (self, value), {})
        elif shape.basic_index_kind(idx) is not None:
            apply_inplace(shape.copy, (api.getitem(self, idx), value), {})
        else:
            apply_inplace(shape.index_put, (self, value), {"index": idx})

    def __iadd__(self, other):
        return apply_inplace(math.add, (self, other), {})

    def __isub__(self, other):
        return apply_inplace(math.sub, (self, other), {})

    def __imul__(self, other):
        return apply_inplace(math.mul, (self, other), {})

    def __itruediv__(self, other):
        return apply_inplace(math.div, (self, other), {})

    # ------------------------------------------------------------ elementwise
    def exp(self):
        return math.exp(self)

    def log(self):
        return math.log(self)

    def sqrt(self):
        return math.sqrt(self)

    def abs(self):
        return math.abs(self)

    def sin(self):
        return math.sin(self)

    def cos(self):
        return math.cos(self)

    def tanh(self):
        return math.tanh(self)

    def sigmoid(self):
        return math.sigmoid(self)

    def relu(self):
        return math.relu(self)

    def neg(self):
        return math.neg(self)

    def sign(self):
        return math.sign(self)

    def pow(self, exponent):
        return api.pow(self, exponent)

    def clamp(self, min=None, max=None):
        return api.clamp(self, min, max)

    clip = clamp

    def add(self, other, *, alpha=1):
        return api.add(self, other, alpha=alpha)

    def sub(self, other, *, alpha=1):
        return api.sub(self, other, alpha=alpha)

    def mul(self, other):
        return math.mul(self, other)

    def div(self, other):
        return math.div(self, other)

    def maximum(self, other):
        return api.maximum(self, other)

    def minimum(self, other):
        return api.minimum(self, other)

    def softmax(self, dim):
        return api.softmax(self, dim)

    def log_softmax(self, dim):
        return api.log_softmax(self, dim)

    # ------------------------------------------------------------- reductions
    def sum(self, dim=None, keepdim=False, *, dtype=None):
        return api.sum(self, dim, keepdim, dtype=dtype)

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        return api.mean(self, dim, keepdim, dtype=dtype)

    def max(self, dim=None, keepdim=False):
        return api.max(self, dim, keepdim)

    def min(self, dim=None, keepdim=False):
        return api.min(self, dim, keepdim)

    def argmax(self, dim=None, keepdim=False):
        return api.argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return api.argmin(self, dim, keepdim)

    # ----------------------------------------------------------------- shapes
    def reshape(self, *shape):
        return api.reshape(self, *shape)

    def view(self, *shape):
        return api.view(self, *shape)

    def view_as(self, other):
        return api.view(self, other.shape)

    def flatten(self, start_dim=0, end_dim=-1):
        return api.flatten(self, start_dim, end_dim)

    def transpose(self, dim0, dim1):
        return api.transpose(self, dim0, dim1)

    def t(self):
        return api.t(self)

    @property
    def T(self):
        return api.permute(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self):
        return api.transpose(self, -2, -1)

    def permute(self, *dims):
        return api.permute(self, *dims)

    def unsqueeze(self, dim):
        return api.unsqueeze(self, dim)

    def squeeze(self, dim=None):
        return api.squeeze(self, dim)

    def expand(self, *sizes):
        return api.expand(self, *sizes)

    def expand_as(self, other):
        return api.expand(self, other.shape)

    def matmul(self, other):
        return api.matmul(self, other)

    def mm(self, other):
        return api.mm(self, other)

    def dot(self, other):
        return api.matmul(self, other)

    def clone(self):
        return math.clone(self)

    def contiguous(self):
        return self if self._data.flags.c_contiguous else math.clone(self)

    # ----------------------------------------------------------------- dtypes
    def to(self, dtype=None, *args, **kwargs):
        if dtype is None or isinstance(dtype, str) and dtype in ("cpu",):
            dtype = kwargs.get("dtype")
            if dtype is None:
                return self
        return api.to_dtype(self, dtype)

    def type(self, dtype=None):
        if dtype is None:
            from .autograd.messages import legacy_type
            return legacy_type(self._data.dtype)
        return api.to_dtype(self, dtype)

    def type_as(self, other):
        return api.to_dtype(self, other._data.dtype)

    def float(self):
        return api.to_dtype(self, np.float32)

    def double(self):
        return api.to_dtype(self, np.float64)

    def half(self):
        return api.to_dtype(self, np.float16)

    def long(self):
        return api.to_dtype(self, np.int64)

    def int(self):
        return api.to_dtype(self, np.int32)

    def bool(self):
        return api.to_dtype(self, np.bool_)

    def is_floating_point(self):
        return self._data.dtype.kind == "f"

    def conj(self):
        return math.conj(self)

    @property
    def real(self):
        return math.real(self)

    @property
    def imag(self):
        return math.imag(self)

    def is_complex(self):
        return self._data.dtype.kind == "c"

    # -------------------------------------------------------------- in place
    add_ = _inplace("add")
    sub_ = _inplace("sub")
    mul_ = _inplace("mul")
    div_ = _inplace("div")
    exp_ = _inplace("exp")
    log_ = _inplace("log")
    sqrt_ = _inplace("sqrt")
    abs_ = _inplace("abs")
    neg_ = _inplace("neg")
    tanh_ = _inplace("tanh")
    sigmoid_ = _inplace("sigmoid")
    relu_ = _inplace("relu")
    copy_ = _inplace("copy")

    def pow_(self, exponent):
        return apply_inplace(math.pow_scalar, (self,), {"exponent": exponent})

    def clamp_(self, min=None, max=None):
        return apply_inplace(math.clamp, (self,), {"min": min, "max": max})

    def fill_(self, value):
        return apply_inplace(shape.fill, (self,), {"value": value})

    def zero_(self):
        return apply_inplace(shape.zero, (self,), {})
