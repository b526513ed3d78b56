"""numpy's set functions and sorts of several keys with traced arrays: ``unique`` (and
``unique_values`` / ``counts`` / ``inverse`` / ``all``), ``union1d``, ``intersect1d``,
``setdiff1d``, ``setxor1d``, ``sort_complex`` and ``lexsort``.

numpy runs on the values (a read: a guard of the trace under ``pb.grad``) and says
which elements the results are; the results are those elements, gathered from the
arrays, so each value's gradient goes to the element it came from:

- ``unique``'s to the first occurrence (numpy's ``return_index``); torch.unique has no
  gradient, numpy code gets this one. Indices, inverses and counts are integer arrays
  (no gradient), numpy's.
- ``union1d`` / ``setxor1d``: the first occurrence in ``ar1`` then ``ar2``;
  ``setdiff1d``: the element of ``ar1``; ``intersect1d``: the element of ``ar1``
  (numpy's first index ``return_indices`` gives), of ``ar2`` when only ``ar2`` is
  traced.
- ``sort_complex`` sorts by real then imaginary part (numpy's order) and gives complex
  values; ``lexsort`` returns numpy's indices (no gradient).

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([3., 1., 3., 2.], requires_grad=True)
>>> np.unique(x)
tensor([1., 2., 3.], grad_fn=<IndexSelectBackward0>)
>>> np.unique(x, return_counts=True)[1]
tensor([1, 1, 2])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import to_dtype
from .shape import detach, reshape
from .table import args
from .table.registry import is_traced, public


def _values(x: Any) -> np.ndarray:
    """The values of ``x`` (a read of a traced value: a guard of the trace)."""
    return np.asarray(detach(x)) if is_traced(x) else np.asarray(x)


def _operand(x: Any) -> Any:
    x = args.value(x)
    return x if is_traced(x) else np.asarray(x)


def _flat(x: Any, dtype: Any = None) -> Any:
    x = reshape(x, (-1,)) if is_traced(x) else np.ravel(x)
    return x if dtype is None or args.np_dtype(x) == dtype else (
        to_dtype(x, dtype) if is_traced(x) else x.astype(dtype))


def _gather(flat: Any, at: np.ndarray, dtype: Any) -> Any:
    """The elements ``at`` of a 1-d ``flat``, in ``dtype`` (numpy's result's)."""
    taken = np.take(flat, np.asarray(at, np.intp))
    return to_dtype(taken, dtype) if args.np_dtype(taken) != dtype else taken


def _first_of(flat_values: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Where each of ``found`` (values numpy's set function gave) first occurs in
    ``flat_values``."""
    u, first = np.unique(flat_values, return_index=True)
    if u.size == 0:
        return np.zeros(0, np.intp)
    return first[np.minimum(np.searchsorted(u, found), u.size - 1)]


def _unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
            *, equal_nan=True, sorted=True):
    x = _operand(ar)
    if not is_traced(x):
        raise args.Unsupported
    found = np.unique(_values(x), True, return_inverse, return_counts, axis,
                      equal_nan=equal_nan, sorted=sorted)  # numpy's errors
    first = found[1]
    values = np.take(_flat(x), first) if axis is None else np.take(x, first, axis=axis)
    result = (values,) + ((first,) if return_index else ()) + tuple(found[2:])
    return result[0] if len(result) == 1 else result


def _unique_form(fn: Any) -> Any:
    """numpy's ``unique_values`` / ``counts`` / ``inverse`` / ``all`` (``fn``): its
    results, the unique values gathered from the array."""
    def run(x):
        x = _operand(x)
        if not is_traced(x):
            raise args.Unsupported
        v = _values(x)
        found = fn(v)
        if isinstance(found, np.ndarray):
            return _gather(_flat(x), _first_of(v.ravel(), found), found.dtype)
        at = found.indices if hasattr(found, "indices") else _first_of(v.ravel(),
                                                                       found.values)
        return found._replace(values=_gather(_flat(x), at, found.values.dtype))
    return run


public("unique numpy", numpy={
    np.unique: _unique, np.unique_values: _unique_form(np.unique_values),
    np.unique_counts: _unique_form(np.unique_counts),
    np.unique_inverse: _unique_form(np.unique_inverse),
    np.unique_all: _unique_form(np.unique_all)})(_unique)


def _both(ar1: Any, ar2: Any) -> tuple:
    a, b = _operand(ar1), _operand(ar2)
    if not (is_traced(a) or is_traced(b)):
        raise args.Unsupported
    return a, b, _values(a).ravel(), _values(b).ravel()


def _union1d(ar1, ar2):
    a, b, va, vb = _both(ar1, ar2)
    found = np.union1d(va, vb)
    flat = np.concatenate([_flat(a, found.dtype), _flat(b, found.dtype)])
    return _gather(flat, _first_of(np.concatenate([va, vb]), found), found.dtype)


def _setxor1d(ar1, ar2, assume_unique=False):
    a, b, va, vb = _both(ar1, ar2)
    found = np.setxor1d(va, vb, assume_unique)
    flat = np.concatenate([_flat(a, found.dtype), _flat(b, found.dtype)])
    return _gather(flat, _first_of(np.concatenate([va, vb]), found), found.dtype)


def _setdiff1d(ar1, ar2, assume_unique=False):
    a, _, va, vb = _both(ar1, ar2)
    found = np.setdiff1d(va, vb, assume_unique)
    at = np.flatnonzero(np.isin(va, vb, assume_unique=True, invert=True)) \
        if assume_unique else _first_of(va, found)
    return _gather(_flat(a), at, found.dtype)


def _intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    a, b, va, vb = _both(ar1, ar2)
    found, i1, i2 = np.intersect1d(va, vb, assume_unique, return_indices=True)
    values = _gather(_flat(a), i1, found.dtype) if is_traced(a) else \
        _gather(_flat(b), i2, found.dtype)
    return (values, i1, i2) if return_indices else values


public("union1d", numpy={np.union1d: _union1d})(_union1d)
public("setxor1d", numpy={np.setxor1d: _setxor1d})(_setxor1d)
public("setdiff1d", numpy={np.setdiff1d: _setdiff1d})(_setdiff1d)
public("intersect1d", numpy={np.intersect1d: _intersect1d})(_intersect1d)


def _sort_complex(a):
    x = _operand(a)
    if np.ndim(x) == 0 or not is_traced(x):
        raise args.Unsupported  # numpy's own error
    dtype = np.sort_complex(np.zeros(1, args.np_dtype(x))).dtype
    order = np.argsort(_values(x), axis=-1, kind="stable")
    return to_dtype(np.take_along_axis(x, order, axis=-1), dtype)


def _lexsort(keys, axis=-1):
    found = [_values(k) for k in keys] if isinstance(keys, (tuple, list)) else _values(keys)
    return np.lexsort(found, axis=axis)  # (indices: no gradient)


public("sort_complex", numpy={np.sort_complex: _sort_complex})(_sort_complex)
public("lexsort", numpy={np.lexsort: _lexsort})(_lexsort)
