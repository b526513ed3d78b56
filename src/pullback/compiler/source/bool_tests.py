"""A test joining tests with ``and``/``or`` (``while err > tol and k < n:``) as calls of
the runtime, so that a traced test stays a traced boolean: Python's ``and`` would ask
for its first operand's truth (a guard; in a loop's body, no region).

::

    while err > tol and k < n:   ->   while __pb_rt__.and_(err > tol, lambda: k < n):

``and_(a, b)`` is Python's ``a and b()`` (short-circuit, giving an operand) when ``a``
is not traced, and the logical and of ``a`` and ``b()`` when it is a traced boolean (a
region's condition then computes both). So the second operand must be safe to compute
when the first is false: one that indexes by a name (``i < n and x[i] > 0``, ``x[i]``
out of range once ``i == n``), or calls a function other than numpy's (and its
indexing ones), an array's reductions and a few builtins (the function may index),
leaves the test as written (its loop unrolls, as before).
``not x`` in such a test (or alone) becomes ``not_(x)``, the logical not of a traced ``x``.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from .loop_names import _loads
from .nodes import _at, _runtime, walk
from .scope import Scope, is_numpy

#: numpy's functions reading at an index (out of range where the test guards it)
_INDEXING = frozenset({"take", "take_along_axis", "choose", "compress", "put",
                       "unravel_index", "ravel_multi_index", "item", "itemset"})
#: the methods of an array an operand may call (reductions and the like)
_METHODS = frozenset({"sum", "mean", "max", "min", "any", "all", "std", "var", "prod",
                      "dot", "astype", "reshape", "ravel", "flatten", "copy", "transpose"})
_BUILTINS = (abs, len, min, max, float, int, bool, round, isinstance)


def traced_test(test: Any, scope: Scope) -> Any:
    """``test`` with its ``and``/``or`` (and ``not`` above them) through the runtime, or
    as written when an operand after the first may fail where the one before is false."""
    if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
        operand = traced_test(test.operand, scope)
        return gast.copy_location(_at(gast.Call(func=_runtime("not_"), args=[operand],
                                                keywords=[]), test), test)
    if not isinstance(test, gast.BoolOp) \
            or not all(_safe(v, scope) for v in test.values[1:]):
        return test
    helper = "and_" if isinstance(test.op, gast.And) else "or_"
    values = [traced_test(v, scope) for v in test.values]
    out = values[-1]
    for v in reversed(values[:-1]):
        out = _at(gast.Call(func=_runtime(helper), args=[v, _lazy(out)], keywords=[]), test)
    return gast.copy_location(out, test)


def _lazy(value: Any) -> Any:
    """``lambda: value``, marked ours (a body holding it may still be converted; the
    loop analysis reads the names it reads)."""
    none = gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                          kwarg=None, defaults=[])
    fn = _at(gast.Lambda(args=none, body=value), value)
    fn.pb_lazy = True
    return fn


def _safe(value: Any, scope: Scope) -> bool:
    """Whether ``value`` may be computed where the operands before it say not to: no
    item read at an index that reads a name, no call that may read one."""
    for n in walk(value):
        if isinstance(n, gast.Subscript) and _loads([n.slice]):
            return False
        if isinstance(n, gast.Call) and not _safe_call(n.func, scope):
            return False
    return True


def _safe_call(f: Any, scope: Scope) -> bool:
    obj = scope.resolve(f)
    if is_numpy(obj):
        return getattr(obj, "__name__", "") not in _INDEXING
    if any(obj is b for b in _BUILTINS):
        return True
    return isinstance(f, gast.Attribute) and f.attr in _METHODS \
        and not isinstance(scope.resolve(f.value), type(np))
