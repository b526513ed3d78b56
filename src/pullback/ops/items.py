"""Items of an array at int indices that may be traced (a loop's counter): ``item``
reads ``x[i, j]``, ``item_put`` writes it and ``item_add`` adds to it, each a new
value. A converted loop's ``R[i - 1, j]`` and ``R[i, j] = v`` (compiler/source/
loop_helpers.py, loop_writes.py) trace to them, so the generated code reads and writes
the item itself, as a hand-written loop does (``R[i - 1, j]``), and the gradient of a
read adds into the gradient's item (``g_R[i - 1, j] += g``), not a whole table per step.
Generated code writes ``item_put``/``item_add`` in place where the loop owns the
array (transforms/codegen_loop_buffers.py), else on a copy.

The index is the param ``where``: an int for a static position, None for the next
traced int among the inputs ``x, *ints[, value]``, a full slice for an axis taken whole
(the batch axis of ``vmap``, in front: ``R[:, i, j] = v`` writes every example's item).

>>> import numpy as np
>>> x = np.arange(6.).reshape(2, 3)
>>> item_put_op.forward(x, np.int64(1), 9.0, where=(None, 2))[1]
array([3., 4., 9.])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .indexing import fill_op
from .table import batching
from .table.registry import defop

_ALL = slice(None)


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
    parts = [next(it) if w is None else ":" if w == _ALL else lit(w)
             for w in e.params["where"]]
    return f"{a[0]}[{', '.join(parts)}]"


def _print_item(e: Any, a: list, lit: Any) -> str:
    where = e.params["where"]
    whole = len(where) == len(e.inputs[0].shape) and _ALL not in where
    return spelled(e, a, lit) + ("" if whole else ".copy()")


def _print_update(name: str) -> Any:
    """``ops.item_put(x, i, v, where=(None, 2))``: on a copy of ``x`` (codegen_loop_buffers
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


def _batch_read(op, args, batched, where):
    """``x[:, i, j]``: the batch taken whole in front of the index; a batched index (an
    int each example has its own) runs per element."""
    if any(batched[1:]):
        raise batching.NoRule
    return op(*args, where=(_ALL,) + tuple(where))


def _batch_write(op, args, batched, where):
    """``out[:, i, j] = v``: the table batched (the same for every example where only the
    value is), the value's example axes aligned to the item's so a value that broadcasts
    into the item broadcasts per example."""
    if any(batched[1:-1]):
        raise batching.NoRule
    size = batching.size_of(args, batched)
    x, v = args[0], args[-1]
    if not batched[0]:
        x = batching.with_batch(x, size)
    if batched[-1]:
        v = batching.align(v, batching.ndim(x) - 1 - sum(w != _ALL for w in where))
    return op(x, *args[1:-1], v, where=(_ALL,) + tuple(where))


item_op = defop("item", _item, "SelectBackward0", variadic=True, fresh=True,
                uses=("inputs",),
                vjp=(_item_rule,), template=_print_item, batch=_batch_read)
item_put_op = defop("item_put", _item_put, "IndexPutBackward0", variadic=True, fresh=True,
                    uses=("inputs",),
                    vjp=(_put_rule,), template=_print_update("item_put"),
                    batch=_batch_write)
item_add_op = defop("item_add", _item_add, "IndexPutBackward0", variadic=True, fresh=True,
                    uses=("inputs",),
                    vjp=(_add_rule,), template=_print_update("item_add"),
                    batch=_batch_write)
