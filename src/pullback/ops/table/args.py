"""Argument conventions shared by the public functions: torch's (``dim``, sizes,
dtypes) and numpy's (``axis``, ``keepdims``, ``out``), with their error messages."""

from __future__ import annotations

from typing import Any

import numpy as np

from ... import dtypes
from .registry import is_traced

AxisError = getattr(np, "exceptions", np).AxisError


class Unsupported(Exception):
    """A numpy-signature implementation got arguments it does not cover: numpy's
    own function runs instead (and refuses if a gradient would be lost)."""


class Kept:
    """A result numpy gives as a plain value, not an array (lstsq's rank, an int32
    scalar): the numpy face returns ``value`` as is, not as a Tensor."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


# ----------------------------------------------------------------------- torch's
def wrap_dim(dim: Any, ndim: int) -> int:
    """One ``dim`` as a non-negative dim, with torch's IndexError out of range; a 0-d
    tensor takes -1 and 0, as if it had one dim."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {dim})")
    return int(dim) % n


def dims(dim: Any, ndim: int) -> tuple:
    """``dim`` (an int or a sequence) as a tuple of distinct non-negative dims, checked as
    torch checks them; () on a 0-d tensor, whose dims -1 and 0 name no axis."""
    found = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
    seen: list = []
    for d in (wrap_dim(d, ndim) for d in found):
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.append(d)
    return tuple(seen) if ndim else ()


def dim_or_all(dim: Any, ndim: int) -> int | None:
    """One ``dim`` for the ops that take one (max, argmax, softmax): None on a 0-d tensor,
    meaning every axis, which there numpy's axis=None reduces over."""
    d = wrap_dim(dim, ndim)
    return d if ndim else None


def shape_arg(size: tuple) -> tuple:
    """``view(2, 3)`` and ``view((2, 3))`` both mean shape (2, 3)."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(s) for s in size)


def resolve_shape(shp: tuple, shape: tuple) -> tuple:
    """Fill in a -1 and check the element count against ``shape``, with torch's message."""
    n = int(np.prod(shape, dtype=np.int64))
    if -1 in shp:
        known = int(np.prod([s for s in shp if s != -1], dtype=np.int64))
        shp = tuple(n // known if s == -1 and known else s for s in shp)
    if int(np.prod(shp, dtype=np.int64)) != n:
        raise RuntimeError(f"shape '{list(shp)}' is invalid for input of size {n}")
    return shp


def np_dtype(x: Any) -> np.dtype:
    """The numpy dtype of a Tensor, IR value, array or Python scalar."""
    d = getattr(x, "dtype", None)
    if d is None:
        return np.result_type(x)
    return getattr(d, "np", d)


def dtype_name(x: Any) -> str:
    """torch's capitalized dtype name ('Long', 'Float')."""
    return dtypes.as_dtype(np_dtype(x))._scalar_name


def size_str(x: Any) -> str:
    return f"torch.Size([{', '.join(str(n) for n in x.shape)}])"


def reduction(reduction: str) -> str:
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


# ----------------------------------------------------------------------- numpy's
def value(x: Any) -> Any:
    """Tensors, IR values and scalars as they are; anything array-like as an ndarray."""
    if is_traced(x) or isinstance(x, (np.ndarray, int, float, bool, np.generic)):
        return x
    return np.asarray(x)


def axes(axis: Any, ndim: int) -> tuple | None:
    """numpy's axis argument as a sorted tuple of non-negative axes (None: all); () on a
    0-d array, whose axes 0 and -1 numpy's reductions take and which name no axis."""
    if axis is None:
        return None
    found = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    n = max(ndim, 1)
    for a in found:
        if not -n <= a < n:
            raise AxisError(a, ndim)
    return tuple(sorted(a % n for a in found)) if ndim else ()


def numpy_form(fn: Any) -> Any:
    """numpy's spelling of a function that checks its arguments as torch does: where the
    torch form refuses them (a RuntimeError with torch's message), numpy's own function
    runs instead, and raises numpy's error."""
    def run(*a: Any, **kw: Any) -> Any:
        try:
            return fn(*a, **kw)
        except RuntimeError:
            raise Unsupported from None

    return run


def broadcast_shape(a: Any, b: Any) -> tuple:
    """The broadcast shape of two tensors, with torch's error."""
    x, y = tuple(a.shape), tuple(b.shape)
    n = max(len(x), len(y))
    x, y = (1,) * (n - len(x)) + x, (1,) * (n - len(y)) + y
    for d, (i, j) in enumerate(zip(x, y)):
        if i != j and 1 not in (i, j):
            raise RuntimeError(f"The size of tensor a ({i}) must match the size of tensor b "
                               f"({j}) at non-singleton dimension {d}")
    return tuple(max(i, j) if 0 not in (i, j) else 0 for i, j in zip(x, y))


def plain(out: Any = None, **rest: Any) -> None:
    """Refuse ``out=`` and keywords the pullback form does not take."""
    if out is not None or rest:
        raise Unsupported
