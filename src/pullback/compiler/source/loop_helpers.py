"""What a converted loop's body and the code after it call besides the loop itself
(``loop_runtime.py``), through ``__pb_rt__``: ``loop_index`` (``x[t]`` at a traced
counter, one graph for every step), ``stacked`` (``np.stack(hs)`` and the like of a list
a loop appended to: a region's stacked outputs need no work) and ``and_``/``or_``/
``not_`` (a test's ``and``, ``or`` and ``not`` on traced booleans, ``bool_tests.py``).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...autograd import record
from ...ops.indexing import index_select
from ...ops.items import item_op
from ...tensor import Tensor
from .numpy_builders import numpy_call
from .runtime import subscript


def not_(test: Any) -> Any:
    """``not test`` for a test that may be traced (the other branch of an ``if`` that
    returns, as a loop's stop test): an array's logical not, else Python's."""
    if isinstance(test, (Tensor, np.ndarray, np.generic)):
        return np.logical_not(test)
    return not test


def and_(a: Any, b: Callable) -> Any:
    """``a and b()`` (``bool_tests.py``): the logical and of ``a`` and ``b()`` when ``a``
    is a traced boolean scalar, else Python's (short-circuit, giving an operand)."""
    if _traced_test(a):
        try:
            return np.logical_and(a, b())
        except Exception:  # (b may fail where a is false: Python's, asking for a)
            pass
    return a and b()


def or_(a: Any, b: Callable) -> Any:
    """``a or b()``: the logical or when ``a`` is a traced boolean scalar, else Python's."""
    if _traced_test(a):
        try:
            return np.logical_or(a, b())
        except Exception:  # (b may fail where a is true: Python's, asking for a)
            pass
    return a or b()


def _traced_test(a: Any) -> bool:
    return record.TRACING and isinstance(a, Tensor) and a._data.shape == () \
        and a._data.dtype == np.bool_


def stacked(f: Callable, items: Any) -> Any:
    """``f(items)`` for a list a converted loop appended to (``appends.py``): the list
    after the loop as written; the region's stacked per-step outputs (rows for items)
    after a region, for which ``np.stack`` and the like need no work. A list left a list
    (the loop ran unrolled, as inside ``vmap(grad(f))``) of traced values goes to
    numpy's builders as the source pass routes ``np.array(hs)`` elsewhere."""
    if isinstance(items, list) and f in (np.stack, np.array, np.asarray, np.concatenate):
        return numpy_call(f, items)
    if isinstance(items, list) or not isinstance(items, (Tensor, np.ndarray)):
        return f(items)
    if f is np.stack or f is np.array or f is np.asarray:
        return items
    if f is len:
        return items.shape[0]
    if f is sum:
        return np.sum(items, axis=0) if items.shape[0] else 0
    if f is np.concatenate and items.ndim >= 2:
        return np.reshape(items, (-1, *items.shape[2:]))
    return f(list(items))


def loop_index(x: Any, index: Any) -> Any:
    """``x[index]`` in a converted body, where the index reads the loop variable: ints
    (traced or not) and whole axes read the item or the row (``item``: the generated
    code reads ``x[t]`` as a hand-written loop does); a traced integer among slices
    selects through ``index_select`` (one graph for every step), else as ``subscript``."""
    parts = index if isinstance(index, tuple) else (index,)
    if not record.TRACING or not isinstance(x, (Tensor, np.ndarray)) \
            or not any(map(traced_int, parts)) \
            or any(p is None or p is Ellipsis or isinstance(p, (list, np.ndarray))
                   or isinstance(p, Tensor) and not traced_int(p) for p in parts):
        return subscript(x, index)
    if len(parts) <= x.ndim and all(traced_int(p) or type(p) is int
                                    or type(p) is slice and p == _ALL
                                    for p in parts):  # (an item, or a row: x[t], x[t, :])
        return item_op(x, *filter(traced_int, parts),
                       where=tuple(None if traced_int(p) else p for p in parts))
    rest = []
    for d, p in enumerate(parts):
        if traced_int(p):
            x = index_select(x, d, p.reshape(1))
            p = 0
        rest.append(p)
    return subscript(x, tuple(rest))


_ALL = slice(None)


def row(x: Any, i: Any) -> Any:
    """A while region's step ``i`` of an array the body only reads (a range's slice
    ``x[t]``, an iterated array's item): a gather at the traced ``i`` (``x[t]`` in the
    generated code, no copy, as a hand-written loop reads it; ``g_x[t] += g`` in the
    reverse)."""
    return subscript(x, i)


def traced_int(p: Any) -> bool:
    return isinstance(p, Tensor) and p._data.ndim == 0 and p._data.dtype.kind in "iu"
