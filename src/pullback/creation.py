"""Making tensors: ``tensor``, ``zeros``, ``randn``, ``from_numpy`` and friends.

>>> import pullback as pb
>>> pb.tensor([1., 2.]).dtype, pb.tensor([1, 2]).dtype
(pullback.float32, pullback.int64)
>>> pb.zeros(2, 3).shape
(2, 3)
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import numpy as np

from . import devices, dtypes
from .autograd import messages, record
from .numpy_face import NumpyTensor, to_tensor_face
from .numpy_interop import FUNCTIONS
from .ops import OPS, sampling
from .ops.elementwise import clone
from .ops.numpy_extras import numpy_full_like
from .ops.sampling import manual_seed  # noqa: F401  (re-exported as pb.manual_seed)
from .tensor import Tensor, as_array

TENSOR_COPY = messages.copy_construct("torch.tensor")


def _check_flag(flag: Any, name: str | None) -> None:
    """torch's argument parser refuses a requires_grad that is not a bool."""
    if type(flag) is not bool and flag is not None:  # None means the default
        name = name or sys._getframe(2).f_code.co_name
        raise TypeError(f"{name}(): argument 'requires_grad' must be bool, not "
                        f"{type(flag).__name__}")


def _random(op, requires_grad: bool, **params: Any) -> Tensor:
    """A random tensor made by an op, so compiled code draws anew on every call."""
    _check_flag(requires_grad, None)
    t = record.apply(op, (), params)  # the Tensor path: compiled code records it
    if requires_grad:
        t._set_requires_grad(True, messages.FLOAT_ONLY_FACTORY)
    return t


def _new(data: np.ndarray, requires_grad: bool, name: str | None = None) -> Tensor:
    _check_flag(requires_grad, name)
    if not requires_grad:
        return local(data)
    t = Tensor._make(data)
    t._set_requires_grad(True, messages.FLOAT_ONLY_FACTORY)
    return t


def local(data: np.ndarray) -> Tensor:
    """A new tensor for ``data``, an array made for it. Inside a trace it is a local
    value of the traced function, a ``clone`` of a constant that generated code makes
    anew on every call, so in-place writes into it are traced like writes into any
    tensor the function computed (not refused as writes into a captured one)."""
    if record.TRACING and record.trace_hooks():
        return record.apply(clone, (data,), {})
    return Tensor._make(data)


def tensor(data: Any, *, dtype: Any = None, requires_grad: bool = False,
           device: Any = None) -> Tensor:
    """A new leaf tensor holding a copy of ``data`` (of a tensor: torch's warning, and no
    gradient flows back to it)."""
    devices.check(device)
    if isinstance(data, Tensor) and type(data) is not NumpyTensor:  # (not a traced array)
        warnings.warn(TENSOR_COPY, UserWarning, stacklevel=2)
    return _new(as_array(data, dtype), requires_grad)


def as_tensor(data: Any, dtype: Any = None) -> Tensor:
    """``data`` as a tensor, sharing its memory when it is already an array of that
    dtype (a traced numpy argument: a view of it, on the torch face, as eagerly)."""
    if type(data) is NumpyTensor:
        data = _torch_face(data)
    if isinstance(data, Tensor):  # (another dtype: a conversion the graph records)
        return data if dtype is None or data.dtype is dtypes.as_dtype(dtype) else data.to(dtype)
    if isinstance(data, np.ndarray) and dtype is None:
        return Tensor._make(data)
    return tensor(data, dtype=dtype)


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing memory with ``a`` (no copy, keeps its dtype)."""
    if type(a) is NumpyTensor:  # (a traced numpy array)
        return _torch_face(a)
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    return Tensor._make(a)


def _torch_face(a: NumpyTensor) -> Tensor:
    """A view of the numpy-face stand-in ``a`` (a traced array), on the torch face:
    torch's methods where a traced function calls ``pb.as_tensor(x)`` on an array (a
    ``view`` to its own shape, which generated code leaves out, forward and backward)."""
    return to_tensor_face(record.apply(OPS["view"], (a,), {"shape": a.shape}))


def _size(size: tuple) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def _float_dtype(dtype: Any) -> np.dtype:
    return dtypes.to_numpy_dtype(dtype) if dtype is not None else dtypes.default_float.np


def zeros(*size: Any, dtype: Any = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    devices.check(device)
    return _new(np.zeros(_size(size), _float_dtype(dtype)), requires_grad)


def ones(*size: Any, dtype: Any = None, requires_grad: bool = False,
         device: Any = None) -> Tensor:
    devices.check(device)
    return _new(np.ones(_size(size), _float_dtype(dtype)), requires_grad)


def empty(*size: Any, dtype: Any = None, requires_grad: bool = False,
          device: Any = None) -> Tensor:
    devices.check(device)
    return _new(np.empty(_size(size), _float_dtype(dtype)), requires_grad)


def full(size: Any, fill_value: Any, *, dtype: Any = None, requires_grad: bool = False,
         device: Any = None) -> Tensor:
    devices.check(device)
    npd = dtypes.to_numpy_dtype(dtype) or as_array(fill_value).dtype
    return _new(np.full(_size((size,)), fill_value, npd), requires_grad)


def eye(n: int, m: int | None = None, *, dtype: Any = None,
        requires_grad: bool = False,
        device: Any = None) -> Tensor:
    devices.check(device)
    return _new(np.eye(n, m, dtype=_float_dtype(dtype)), requires_grad)


def arange(start: Any, end: Any = None, step: Any = 1, *, dtype: Any = None,
           requires_grad: bool = False,
           device: Any = None) -> Tensor:
    devices.check(device)
    if end is None:
        start, end = 0, start
    npd = dtypes.to_numpy_dtype(dtype)
    if npd is None:
        floaty = any(isinstance(v, float) for v in (start, end, step))
        npd = dtypes.default_float.np if floaty else np.dtype(np.int64)
    return _new(np.arange(start, end, step, dtype=npd), requires_grad)


def linspace(start: float, end: float, steps: int, *, dtype: Any = None,
             requires_grad: bool = False,
             device: Any = None) -> Tensor:
    devices.check(device)
    return _new(np.linspace(start, end, steps, dtype=_float_dtype(dtype)), requires_grad)


def rand(*size: Any, dtype: Any = None, requires_grad: bool = False,
         device: Any = None, generator: Any = None) -> Tensor:
    devices.check(device)
    if generator is not None:  # its own stream, drawn now (not an op of compiled code)
        draw = sampling.rng_of(generator).random(_size(size))
        return _new(draw.astype(_float_dtype(dtype)), requires_grad)
    return _random(sampling.uniform, requires_grad, shape=_size(size), dtype=_float_dtype(dtype))


def randn(*size: Any, dtype: Any = None, requires_grad: bool = False,
          device: Any = None, generator: Any = None) -> Tensor:
    devices.check(device)
    if generator is not None:
        draw = sampling.rng_of(generator).standard_normal(_size(size))
        return _new(draw.astype(_float_dtype(dtype)), requires_grad)
    return _random(sampling.normal, requires_grad, shape=_size(size), dtype=_float_dtype(dtype))


def randint(low: int, high: int | None = None, size: tuple = (), *,
            dtype: Any = None, device: Any = None, generator: Any = None) -> Tensor:
    devices.check(device)
    if high is None:
        low, high = 0, low
    npd = dtypes.to_numpy_dtype(dtype) or np.dtype(np.int64)
    if generator is not None:
        draw = sampling.rng_of(generator).integers(low, high, size=_size((size,)))
        return _new(draw.astype(npd), False)
    return _random(sampling.integers, False, low=low, high=high, shape=_size((size,)), dtype=npd)


def _like(fn):
    def like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False,
             device: Any = None) -> Tensor:
        devices.check(device)
        npd = dtypes.to_numpy_dtype(dtype) or input._data.dtype
        return _new(fn(input._data.shape, npd), requires_grad, like.__name__)
    like.__name__ = fn.__name__ + "_like"
    return like


zeros_like = _like(np.zeros)
ones_like = _like(np.ones)
empty_like = _like(np.empty)


def _numpy_like(fn):
    """``np.zeros_like(t)`` & co. on a Tensor: a new tensor of its shape and dtype
    (no gradient flows into it)."""
    def make(a, *args, **kw):
        return local(fn(getattr(a, "_data", a), *args, **kw))
    return make


for _f in (np.zeros_like, np.ones_like, np.empty_like, np.full_like):
    FUNCTIONS[_f] = _numpy_like(_f)


def _numpy_full_like(a, fill_value, *args, **kw):
    """``np.full_like(t, v)``: with a fill value that is a Tensor, the fill expanded (the
    gradient flows into it, ops/numpy_extras.py); else a new tensor as zeros_like's."""
    if isinstance(fill_value, Tensor):
        return numpy_full_like(a, fill_value, *args, **kw)
    return _numpy_like(np.full_like)(a, fill_value, *args, **kw)


FUNCTIONS[np.full_like] = _numpy_full_like


def rand_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False,
              device: Any = None) -> Tensor:
    devices.check(device)
    npd = dtypes.to_numpy_dtype(dtype) or input._data.dtype
    return _random(sampling.uniform, requires_grad, shape=input._data.shape, dtype=npd)


def randn_like(input: Tensor, *, dtype: Any = None, requires_grad: bool = False,
               device: Any = None) -> Tensor:
    devices.check(device)
    npd = dtypes.to_numpy_dtype(dtype) or input._data.dtype
    return _random(sampling.normal, requires_grad, shape=input._data.shape, dtype=npd)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None,
              requires_grad: bool = False,
              device: Any = None) -> Tensor:
    devices.check(device)
    npd = dtypes.to_numpy_dtype(dtype) or input._data.dtype
    return _new(np.full(input._data.shape, fill_value, npd), requires_grad)
