"""The ``rt`` of generated code over Dask arrays: the runtime helpers (plain numpy
functions, ``ops/runtime``) made to keep Dask arrays lazy.

Most helpers are numpy code that numpy's protocols send to Dask as they are (a
logsumexp's max, exp and sum). Two kinds are not, and would compute a Dask array
given one (``np.asarray`` of it, or a write of it into a numpy buffer):

- the special functions numpy lacks (erf, lgamma, the Bessel functions...), numpy
  kernels that work on a flat float64 array: run on each chunk
  (``dask.array.core.elemwise``, which broadcasts as numpy does);
- the index writes (scatters, ``index_add``, ``zeros_set``, an item write
  ``b[idx] = v``): numpy's item writes, ``np.add.at``, no chunked form here: run as
  one Dask task on the computed values, its result a Dask array of the shape and dtype
  a run on stand-ins gives (nothing computed now; the task holds the whole result, as
  a numpy buffer would).

The ``np`` of that code (``lazy_arrays.DaskNumpy``) reads numpy's functions through
``for_dask``: a function Dask does not implement (``np.linalg.vector_norm``), which
Dask would compute through numpy, runs as one task too; the vector norm, a loss's
staple, chunk by chunk.

Inside one task (``lazy_arrays.one_task``) the arguments are numpy's and every helper
is itself.

>>> import numpy as np
>>> float(DaskRuntime().erf(np.float64(0.5))) == float(runtime.erf(np.float64(0.5)))
True
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ..array_libraries import kind_of_array
from ..ops import runtime
from ..ops.runtime import indexing, special
from ..ops.table.quiet import quietly

#: helpers of one or more arrays of the same shape (broadcast), element by element
ELEMENTWISE = frozenset(special.__all__) - {"xlog1py", "sigmoid"}  # (those: numpy's)

#: helpers that write items into a numpy buffer (masked_select's size depends on values:
#: its op refuses Dask arguments at trace time)
WHOLE = frozenset(indexing.__all__) - {"masked_select", "masked_select_backward"}


def _lazy(args: tuple) -> bool:
    return any(kind_of_array(a) == "dask" for a in args)


def _stand_in(a: Any) -> Any:
    if kind_of_array(a) is None:
        return a
    return np.broadcast_to(np.ones((), np.dtype(a.dtype)), a.shape)


def by_chunk(fn: Callable, *args: Any) -> Any:
    """``fn(*args)``, an elementwise numpy kernel, chunk by chunk over Dask arrays."""
    if not _lazy(args):
        return fn(*args)
    import dask.array as da  # (an optional dependency: only Dask variants get here)

    one = [np.ones((), np.dtype(a.dtype)) if kind_of_array(a) else a for a in args]
    dtype = np.result_type(quietly(fn, *one))
    return da.core.elemwise(functools.partial(quietly, fn), *args, dtype=dtype)


def as_one_task(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a numpy function with no chunked form here, as one
    Dask task when an argument is a Dask array (its results' shapes and dtypes from a
    run on stand-ins)."""
    if not _lazy(args + tuple(kwargs.values())):
        return fn(*args, **kwargs)
    import dask  # (an optional dependency: only Dask variants get here)
    import dask.array as da

    like = quietly(fn, *map(_stand_in, args), **{k: _stand_in(v) for k, v in kwargs.items()})
    several = isinstance(like, tuple)
    task = dask.delayed(quietly, pure=True, nout=len(like) if several else None)(
        fn, *args, **kwargs)
    made = [da.from_delayed(t, np.shape(r), dtype=np.result_type(r))
            for t, r in zip(task if several else [task], like if several else [like])]
    return type(like)(*made) if hasattr(like, "_fields") else tuple(made) if several \
        else made[0]


def for_dask(space: Any, name: str, theirs: str) -> Any:
    """``space.name`` (numpy, or its ``linalg``) in code over Dask arrays: itself when
    Dask's module ``theirs`` implements it, or is no function; else run as one task."""
    value = getattr(space, name)
    if isinstance(value, (type, np.ufunc)) or not callable(value):
        return value
    import importlib  # (dask is an optional dependency: only Dask variants get here)

    if hasattr(importlib.import_module(theirs), name):
        return value
    return functools.partial(as_one_task, value)


def vector_norm(x: Any, ord: Any = 2, axis: Any = None, keepdims: bool = False) -> Any:
    """``np.linalg.vector_norm`` in Dask's reductions (chunk by chunk)."""
    if kind_of_array(x) != "dask":
        return np.linalg.vector_norm(x, ord=ord, axis=axis, keepdims=keepdims)
    a = abs(x)
    if ord == np.inf:
        return a.max(axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return a.min(axis=axis, keepdims=keepdims)
    if ord == 0:
        return (a != 0).sum(axis=axis, keepdims=keepdims).astype(a.dtype)
    if ord == 1:
        return a.sum(axis=axis, keepdims=keepdims)
    if ord is None or ord == 2:
        return np.sqrt((a * a).sum(axis=axis, keepdims=keepdims))
    return ((a ** ord).sum(axis=axis, keepdims=keepdims)) ** (1.0 / ord)


class DaskLinalg:
    """``np.linalg`` in code over Dask arrays (``for_dask``)."""

    vector_norm = staticmethod(vector_norm)

    def __getattr__(self, name: str) -> Any:
        value = self.__dict__[name] = for_dask(np.linalg, name, "dask.array.linalg")
        return value


class DaskRuntime:
    """``rt`` for generated code over Dask arrays (the module docstring): each helper
    as it is, chunk by chunk (``ELEMENTWISE``) or as one task (``WHOLE``)."""

    def __getattr__(self, name: str) -> Any:
        fn = getattr(runtime, name)
        if name in ELEMENTWISE:
            fn = functools.partial(by_chunk, fn)
        elif name in WHOLE:
            fn = functools.partial(as_one_task, fn)
        self.__dict__[name] = fn  # (once per name)
        return fn


#: the one instance generated code reads
RT = DaskRuntime()
