"""Items of an array at int indices that may be traced (a loop's counter): ``item``
reads ``x[i, j]``, ``item_put`` writes it and ``item_add`` adds to it, each a new
value. A converted loop's ``R[i - 1, j]`` and ``R[i, j] = v`` (compiler/source/
loop_runtime.py, loop_writes.py) trace to them, so the generated code reads and writes
the item itself, as a hand-written loop does (``R[i - 1, j]``), and the gradient of a
read adds into the gradient's item (``g_R[i - 1, j] += g``), not a whole table per step.
Generated code writes ``item_put``/``item_add`` in place where the loop owns the
array (transforms/codegen_regions.py), else on a copy.

The index is the param ``where``: an int for a static position, None for the next
traced int among the inputs ``x, *ints[, value]``.

>>> import numpy as np
>>> x = np.arange(6.).reshape(2, 3)
>>> item_put_op.forward(x, np.int64(1), 9.0, where=(None, 2))[1]
array([3., 4., 9.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .indexing import fill_op
from .table.registry import defop


def at(where: tuple, ints: Any) -> tuple:
    """The index ``where`` stands for, its Nones taken from ``ints`` in order."""
    it = iter(ints)
    return tuple(next(it) if w is None else w for w in where)


def _item(x, *ints, where):
    return np.array(x[at(where, ints)], copy=True)


def _item_put(x, *rest, where):
    out = np.array(x, copy=True)
    out[at(where, rest[:-1])] = rest[-1]
    return out


def _item_add(x, *rest, where):
    out = np.array(x, copy=True)
    out[at(where, rest[:-1])] += rest[-1]
    return out


def spelled(e: Any, a: list, lit: Any) -> str:
    """``x[i - 1, j]``: the index as generated code writes it (the inputs' names for
    the traced ints)."""
    it = iter(a[1:])
    parts = [next(it) if w is None else lit(w) for w in e.params["where"]]
    return f"{a[0]}[{', '.join(parts)}]"


def _print_item(e: Any, a: list, lit: Any) -> str:
    whole = len(e.params["where"]) == len(e.inputs[0].shape)
    return spelled(e, a, lit) + ("" if whole else ".copy()")


def _print_update(name: str) -> Any:
    """``ops.item_put(x, i, v, where=(None, 2))``: on a copy of ``x`` (codegen_regions
    writes the in-place statement where a loop owns ``x``)."""
    def write(e: Any, a: list, lit: Any) -> str:
        return f"ops.{name}({', '.join(a)}, where={lit(e.params['where'])})"
    return write


def _value_rule(g, out, inputs, i, where):
    """The gradient of input ``i`` of item_put/item_add: the index's ints get none."""
    if i == len(inputs) - 1:
        return item_op(g, *inputs[1:-1], where=where)
    return None


def _item_rule(g, out, inputs, i, where):
    if i:
        return None
    zeros = fill_op(g, value=0, shape=inputs[0].shape)
    return item_add_op(zeros, *inputs[1:], g, where=where)


def _put_rule(g, out, inputs, i, where):
    if i == 0:
        return item_put_op(g, *inputs[1:-1], 0.0, where=where)
    return _value_rule(g, out, inputs, i, where)


def _add_rule(g, out, inputs, i, where):
    return g if i == 0 else _value_rule(g, out, inputs, i, where)


item_op = defop("item", _item, "SelectBackward0", variadic=True, fresh=True,
                uses=("inputs",),
                vjp=(_item_rule,), template=_print_item)
item_put_op = defop("item_put", _item_put, "IndexPutBackward0", variadic=True, fresh=True,
                    uses=("inputs",),
                    vjp=(_put_rule,), template=_print_update("item_put"))
item_add_op = defop("item_add", _item_add, "IndexPutBackward0", variadic=True, fresh=True,
                    uses=("inputs",),
                    vjp=(_add_rule,), template=_print_update("item_add"))
