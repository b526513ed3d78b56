"""torch-style functions over the primitives: argument handling and the choice of
primitive (``sum()`` vs ``sum(dim)``, ``matmul`` as ``mm``/``mv``/``dot``...).

Tensor methods and the ``pullback.*`` functions both call these, so every argument
rule lives here once. They accept Tensors, numpy arrays and IR values alike.
"""

from __future__ import annotations

import builtins
from collections import namedtuple
from typing import Any

import numpy as np

from . import linalg, math, nn, shape

_max = builtins.max
return_types_max = namedtuple("max", ["values", "indices"])
return_types_min = namedtuple("min", ["values", "indices"])


def _dims(dim: Any, ndim: int) -> tuple:
    if isinstance(dim, (list, tuple)):
        return tuple(d % _max(ndim, 1) for d in dim)
    return (dim % _max(ndim, 1),)


def _shape_arg(size: tuple) -> tuple:
    """``view(2, 3)`` and ``view((2, 3))`` both mean shape (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


# ------------------------------------------------------------------- arithmetic
def add(input, other, *, alpha=1):
    return math.add(input, other if alpha == 1 else other * alpha)


def sub(input, other, *, alpha=1):
    return math.sub(input, other if alpha == 1 else other * alpha)


def pow(input, exponent):
    if isinstance(exponent, (int, float, np.number)) and not isinstance(exponent, bool):
        return math.pow_scalar(input, exponent=exponent)
    if isinstance(input, (int, float, np.number)):
        return math.rpow_scalar(exponent, base=input)
    return math.pow(input, exponent)


def clamp(input, min=None, max=None):
    if min is None and max is None:
        raise RuntimeError("clamp: At least one of 'min' or 'max' must not be None")
    return math.clamp(input, min=min, max=max)


def where(condition, input, other):
    return math.where(condition, input, other)


# ------------------------------------------------------------------- reductions
def sum(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    if dim is None:
        return math.sum_all(input)
    return math.sum_dim(input, dim=_dims(dim, input.ndim), keepdim=bool(keepdim))


def mean(input, dim=None, keepdim=False, *, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    if np.dtype(_np_dtype(input)).kind not in "fc":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating "
            f"point or complex dtype. Got: {_dtype_name(input)}")
    if dim is None:
        return math.mean_all(input)
    return math.mean_dim(input, dim=_dims(dim, input.ndim), keepdim=bool(keepdim))


def _extreme(input, dim, keepdim, all_op, dim_op, arg_op, result):
    if dim is None:
        return all_op(input)
    if not isinstance(dim, (int, np.integer)):  # max(a, b): elementwise
        return maximum(input, dim) if all_op is math.max_all else minimum(input, dim)
    d = int(dim) % _max(input.ndim, 1)
    values = dim_op(input, dim=d, keepdim=bool(keepdim))
    return result(values, arg_op(input, dim=d, keepdim=bool(keepdim)))


def max(input, dim=None, keepdim=False):
    return _extreme(input, dim, keepdim, math.max_all, math.max_dim, math.argmax,
                    return_types_max)


def min(input, dim=None, keepdim=False):
    return _extreme(input, dim, keepdim, math.min_all, math.min_dim, math.argmin,
                    return_types_min)


def maximum(input, other):
    return math.maximum(input, other)


def minimum(input, other):
    return math.minimum(input, other)


def argmax(input, dim=None, keepdim=False):
    if dim is None:
        return math.argmax(reshape(input, -1), dim=0, keepdim=False)
    return math.argmax(input, dim=int(dim), keepdim=bool(keepdim))


def argmin(input, dim=None, keepdim=False):
    if dim is None:
        return math.argmin(reshape(input, -1), dim=0, keepdim=False)
    return math.argmin(input, dim=int(dim), keepdim=bool(keepdim))


# ----------------------------------------------------------------------- shapes
def _is_contiguous(x) -> bool:
    flags = getattr(getattr(x, "_data", x), "flags", None)
    return flags is None or flags.c_contiguous


def reshape(input, *size):
    shp = _resolve(_shape_arg(size), input)
    if _is_contiguous(input):
        return shape.view(input, shape=shp)
    return shape.reshape(input, shape=shp)


def view(input, *size):
    if not _is_contiguous(input):
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return shape.view(input, shape=_resolve(_shape_arg(size), input))


def _resolve(shp: tuple, input) -> tuple:
    """Fill in a -1 and check the element count, with torch's message."""
    n = int(np.prod(input.shape, dtype=np.int64))
    if -1 in shp:
        known = int(np.prod([s for s in shp if s != -1], dtype=np.int64))
        shp = tuple(n // known if s == -1 and known else s for s in shp)
    if int(np.prod(shp, dtype=np.int64)) != n:
        raise RuntimeError(f"shape '{list(shp)}' is invalid for input of size {n}")
    return shp


def flatten(input, start_dim=0, end_dim=-1):
    nd = input.ndim
    if nd == 0:
        return reshape(input, 1)
    s, e = start_dim % nd, end_dim % nd
    shp = tuple(input.shape[:s]) + (-1,) + tuple(input.shape[e + 1:])
    return reshape(input, shp)


def transpose(input, dim0, dim1):
    return shape.transpose(input, dim0=int(dim0), dim1=int(dim1))


def t(input):
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    return shape.t(input)


def permute(input, *dims):
    dims = _shape_arg(dims)
    return shape.permute(input, dims=tuple(d % input.ndim for d in dims))


def unsqueeze(input, dim):
    return shape.unsqueeze(input, dim=int(dim) % (input.ndim + 1))


def squeeze(input, dim=None):
    if dim is None:
        dims = tuple(i for i, n in enumerate(input.shape) if n == 1)
        return shape.squeeze_all(input, dim=dims)
    op = shape.squeeze_dims if isinstance(dim, (tuple, list)) else shape.squeeze
    return op(input, dim=tuple(d for d in _dims(dim, input.ndim) if input.shape[d] == 1))


def expand(input, *size):
    size = _shape_arg(size)
    lead = len(size) - input.ndim
    full = tuple(input.shape[i - lead] if s == -1 else s for i, s in enumerate(size))
    return shape.expand(input, shape=full)


def getitem(input, index):
    kind = shape.basic_index_kind(index, tuple(input.shape))
    op = shape.index if kind is None else getattr(shape, kind)
    return op(input, index=index)


# ---------------------------------------------------------------- linear algebra
def matmul(input, other):
    a, b = input.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{a}D and {b}D")
    if a == 1 and b == 1:
        return linalg.dot(input, other)
    if a == 2 and b == 2:
        return linalg.mm(input, other)
    if a == 2 and b == 1:
        return linalg.mv(input, other)
    if a == 1 and b == 2:
        return shape.squeeze(linalg.mm(shape.unsqueeze(input, dim=0), other), dim=(0,))
    if b == 1:
        return shape.squeeze(linalg.bmm(input, shape.unsqueeze(other, dim=1)), dim=(b + a - 2,))
    if a == 1:
        return shape.squeeze(linalg.bmm(shape.unsqueeze(input, dim=0), other), dim=(b - 2,))
    return linalg.bmm(input, other)


def mm(input, mat2):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError("self must be a matrix" if input.ndim != 2 else "mat2 must be a matrix")
    return linalg.mm(input, mat2)


def linear(input, weight, bias=None):
    if bias is not None and input.ndim == 2:
        return linalg.addmm(bias, input, shape.t(weight))
    out = matmul(input, shape.t(weight) if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


# -------------------------------------------------------------------- dtypes
def _np_dtype(x):
    d = getattr(x, "dtype", None)
    if d is None:
        return np.result_type(x)
    return getattr(d, "np", d)


def _dtype_name(x) -> str:
    from ..dtypes import as_dtype
    return as_dtype(_np_dtype(x)).name.capitalize()


def to_dtype(input, dtype):
    from ..dtypes import to_numpy_dtype
    npd = to_numpy_dtype(dtype)
    if _np_dtype(input) == npd:
        return input
    return math.cast(input, dtype=npd)


# ----------------------------------------------------------------------- nn
def softmax(input, dim=None, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    return nn.softmax(input, dim=_softmax_dim(input, dim))


def log_softmax(input, dim=None, dtype=None):
    if dtype is not None:
        input = to_dtype(input, dtype)
    return nn.log_softmax(input, dim=_softmax_dim(input, dim))


def _softmax_dim(input, dim):
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return int(dim) % _max(input.ndim, 1)


def relu(input):
    return math.relu(input)


def sigmoid(input):
    return math.sigmoid(input)


def tanh(input):
    return math.tanh(input)


def _reduction(reduction: str) -> str:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean",
                                     pos_weight=None):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Target size ({_size(target)}) must be the same as input size "
                         f"({_size(input)})")
    if weight is not None or pos_weight is not None:
        raise TypeError("binary_cross_entropy_with_logits: weight and pos_weight are not "
                        "supported yet")
    return nn.binary_cross_entropy_with_logits(input, target, reduction=_reduction(reduction))


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    if weight is not None:
        raise TypeError("binary_cross_entropy: weight is not supported yet")
    return nn.binary_cross_entropy(input, target, reduction=_reduction(reduction))


def mse_loss(input, target, reduction="mean"):
    return nn.mse_loss(input, target, reduction=_reduction(reduction))


def nll_loss(input, target, reduction="mean"):
    if input.ndim != 2:
        raise ValueError(f"nll_loss: expected 2D input (batch, classes), got {input.ndim}D")
    return nn.nll_loss(input, target, reduction=_reduction(reduction))


def cross_entropy(input, target, reduction="mean"):
    return nll_loss(log_softmax(input, 1), target, reduction=reduction)


def _size(x) -> str:
    return f"torch.Size([{', '.join(str(n) for n in x.shape)}])"


__all__ = [n for n in dir() if not n.startswith("_") and n not in (
    "annotations", "builtins", "namedtuple", "np", "linalg", "math", "nn", "shape", "call", "Any")]
