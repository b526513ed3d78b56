"""Sums and means as accurate along any axis as numpy's are along the contiguous one.

numpy sums pairwise (an error growing like log n) only along the axis its inner loop
runs over: a float32 sum over axis 0 of a C-contiguous (10**6, 4) array adds row after
row, with a relative error (1e-5) a hundred times torch's; a bias gradient over a large
batch is such a sum. So a float32 (or complex64) reduction into several results, of
more than ``PAIRWISE_BLOCK`` elements each, accumulates in float64 and rounds once, at
the end. Smaller ones stay in float32: numpy's own pairwise sum adds blocks of that many
naively. So do full reductions (a loss): numpy runs them as one pairwise inner loop,
whatever the layout.

The eager forwards call ``sum_of`` and ``mean_of``; the templates print the same
computation with ``print_sum`` and ``print_mean``, so eager, compiled and ``pb.grad``
results agree to the last bit.

>>> x = np.full((10**6, 4), 0.1, np.float32)
>>> x.sum(axis=0)[0], sum_of(x, axis=0)[0], sum_of(x)   # exact: 100000.0015, 400000.006
(np.float32(100958.34), np.float32(100000.0), np.float32(400000.03))
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

#: numpy's pairwise summation adds blocks of this many elements one after another
PAIRWISE_BLOCK = 128
_WIDER = {np.dtype(np.float32): np.dtype(np.float64),
          np.dtype(np.complex64): np.dtype(np.complex128)}


def count(shape: tuple, axis: Any = None) -> int:
    """How many elements go into each result of a reduction over ``axis`` (None: all;
    an int; a tuple of non-negative axes)."""
    if axis is None:
        return math.prod(shape)
    return math.prod(shape[a] for a in (axis if isinstance(axis, tuple) else (axis,)))


def wider(dtype: np.dtype, shape: tuple, axis: Any) -> np.dtype | None:
    """The dtype a reduction over ``axis`` of a ``dtype`` array of ``shape`` accumulates
    in, when it is not ``dtype`` itself."""
    wide = None if axis is None else _WIDER.get(dtype)
    if wide is None or not PAIRWISE_BLOCK < count(shape, axis) < math.prod(shape):
        return None
    return wide


def sum_of(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """``x.sum(axis, keepdims=keepdims)``, accumulated in float64 where ``wider`` says
    (an array of another library as it is: ``np.asarray`` would compute a Dask array)."""
    if not isinstance(x, np.ndarray) and not hasattr(x, "__array_function__"):
        x = np.asarray(x)
    wide = wider(x.dtype, x.shape, axis)
    if wide is None:
        return x.sum(axis=axis, keepdims=keepdims)
    return x.sum(axis=axis, dtype=wide, keepdims=keepdims).astype(x.dtype)


def mean_of(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """A float mean as sum / count (numpy's np.mean wrapper costs microseconds on small
    arrays); NaN over no elements, as torch's, without numpy's warnings (a Dask array
    as it is, as in ``sum_of``)."""
    if not isinstance(x, np.ndarray) and not hasattr(x, "__array_function__"):
        x = np.asarray(x)
    n = count(x.shape, axis)
    wide = wider(x.dtype, x.shape, axis)
    total = x.sum(axis=axis, dtype=wide, keepdims=keepdims)
    if not n:
        return total * np.nan
    return total / n if wide is None else (total / n).astype(x.dtype)


def _sum_text(src: str, lit: Callable, axis: Any, keepdims: bool, wide: np.dtype | None) -> str:
    one = isinstance(axis, tuple) and len(axis) == 1
    kw = [] if axis is None else [f"axis={lit(axis[0] if one else axis)}"]
    kw += ["keepdims=True"] * bool(keepdims) + [f"dtype={lit(wide)}"] * (wide is not None)
    return f"{src}.sum({', '.join(kw)})"


def print_sum(x: Any, src: str, lit: Callable, axis: Any = None,
              keepdims: bool = False) -> str:
    """``sum_of`` as generated code spells it (``x``: the input's IR value, ``src``: its
    name, ``lit``: codegen's literal printer)."""
    wide = wider(x.dtype, x.shape, axis)
    total = _sum_text(src, lit, axis, keepdims, wide)
    return total if wide is None else f"{total}.astype({lit(x.dtype)})"


def print_mean(x: Any, src: str, lit: Callable, axis: Any = None,
               keepdims: bool = False) -> str:
    """``mean_of`` as generated code spells it, the count known at codegen."""
    n = count(x.shape, axis)
    wide = wider(x.dtype, x.shape, axis)
    total = _sum_text(src, lit, axis, keepdims, wide)
    if not n:
        return f"{total} * np.nan"
    return f"{total} / {n}" if wide is None else f"({total} / {n}).astype({lit(x.dtype)})"
