"""Advanced indexing by index arrays the trace computed: ``f[left_ix, top_ix]`` where
``left_ix = np.floor(ys).astype(int)`` depends on the traced inputs. The index arrays
are run-time inputs of the equation (not differentiable), so a new index value is not
a new trace; the static parts of the index (ints, slices, None, ``...``, constant
arrays) stay parameters, and generated code reads as the user wrote it,
``f[left_ix, top_ix]``. numpy's semantics throughout: the index arrays broadcast
together, negative indices wrap, an out-of-range index raises numpy's IndexError.

>>> import numpy as np
>>> from pullback.ops.gathering import index_gather
>>> f = np.arange(12.).reshape(3, 4)
>>> index_gather.forward(f, np.array([0, -1]), np.array([1, 3]), index=(0, 0), slots=(0, 1))
array([ 1., 11.])
>>> index_gather_backward.forward(np.ones(2), np.array([0, 0]), shape=(2, 2), index=(0, 1),
...                               slots=(0,))
array([[0., 2.],
       [0., 0.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .table import batching
from .table.registry import OPS, c_order, defop


def parts_of(arrays: tuple, index: tuple, slots: tuple) -> tuple:
    """The whole index: ``index`` with the arrays put at the positions ``slots``."""
    parts = list(index)
    for k, a in zip(slots, arrays):
        parts[k] = a
    return tuple(parts)


def _gather(x, *arrays, index, slots):
    out = np.asarray(x)[parts_of(arrays, index, slots)]
    return c_order(out)  # (torch's indexing result is contiguous; numpy's may not be)


def _scatter_add(g, *arrays, shape, index, slots):
    out = np.zeros(shape, dtype=np.result_type(g))
    np.add.at(out, parts_of(arrays, index, slots), g)  # (a repeated position adds up)
    return out


def _subscript(names: list, params: dict, lit: Any) -> str:
    """``left_ix, top_ix`` (or ``:, i, 1:3``): the index as source text."""
    slots = dict(zip(params["slots"], names))
    text = []
    for k, p in enumerate(params["index"]):
        if k in slots:
            text.append(slots[k])
        elif p is Ellipsis:
            text.append("...")
        elif type(p) is slice:
            bound = lambda b: "" if b is None else lit(b)
            step = "" if p.step is None else f":{lit(p.step)}"
            text.append(f"{bound(p.start)}:{bound(p.stop)}{step}")
        else:
            text.append(lit(p))
    return ", ".join(text)


def _print_gather(e: Any, a: list, lit: Any) -> str:
    return f"{a[0]}[{_subscript(a[1:], e.params, lit)}]"


def _print_scatter_add(e: Any, a: list, lit: Any) -> str:
    return (f"rt.zeros_add({lit(e.params['shape'])}, np.s_[{_subscript(a[1:], e.params, lit)}],"
            f" {a[0]})")


def _gather_rule(g, out, tensors, i, index, slots):
    """The gradient of the indexed value (``i == 0``): ``g`` added at the positions read;
    the index arrays have none."""
    if i:
        return None
    return index_gather_backward(g, *tensors[1:], shape=tuple(tensors[0].shape), index=index,
                                 slots=slots)


def _scatter_rule(g, out, tensors, i, shape, index, slots):
    return index_gather(g, *tensors[1:], index=index, slots=slots) if i == 0 else None


def _gather_tangent(t, out, tensors, i, index, slots):
    return index_gather(t, *tensors[1:], index=index, slots=slots) if i == 0 else None


def _scatter_tangent(t, out, tensors, i, shape, index, slots):
    return index_gather_backward(t, *tensors[1:], shape=shape, index=index,
                                 slots=slots) if i == 0 else None


def _advanced(index: tuple, slots: tuple) -> list:
    """The positions of the index's advanced parts (arrays and, beside them, ints)."""
    return [k for k, p in enumerate(index)
            if k in slots or isinstance(p, (int, np.integer, np.ndarray))]


def _kept_at(index: tuple, slots: tuple, rank: int) -> int:
    """Where numpy puts the broadcast dims of the index arrays in the result: in place
    of the first when the advanced parts are next to each other, else in front."""
    adv = _advanced(index, slots)
    if adv != list(range(adv[0], adv[-1] + 1)):
        return 0
    consumed = sum(1 for p in index if p is not None and p is not Ellipsis)
    return sum(rank - consumed if p is Ellipsis else 1 for p in index[:adv[0]])


def _batch(op, args, batched, index, slots, **params):
    """A batch: an index array over the batch (``arange(size)``) in front of the index,
    the batched index arrays aligned behind it; numpy puts the broadcast dims first,
    where the example's result has them after ``_kept_at`` dims: moved there."""
    size = batching.size_of(args, batched)
    backward = "shape" in params
    rank = len(params["shape"]) if backward else batching.ndim(args[0]) - batched[0]
    arrays = list(args[1:])
    n = max([batching.ndim(a) - b for a, b in zip(arrays, batched[1:])]
            + [np.ndim(index[k]) for k in _advanced(index, slots) if k not in slots])
    for k, (a, b) in enumerate(zip(arrays, batched[1:])):
        if b:
            rest = batching.shape(a)[1:]
            arrays[k] = OPS["reshape"](a, shape=(size,) + (1,) * (n - len(rest)) + rest)
    lead = np.arange(size, dtype=np.int64).reshape((size,) + (1,) * n)
    at = _kept_at(index, slots, rank)
    first = args[0] if batched[0] else batching.with_batch(args[0], size)
    if backward:
        params["shape"] = (size,) + tuple(params["shape"])
        for _ in range(n if at else 0):  # (the example's layout back to numpy's)
            first = batching.moved(first, at + n, 1)
    out = op(first, *arrays, index=(lead,) + tuple(index), slots=tuple(k + 1 for k in slots),
             **params)
    for _ in range(n if at and not backward else 0):
        out = batching.moved(out, 1, at + n)
    return out


def _copies(e: Any) -> bool:
    """Whether numpy's result is a new array the generated code may write into: an
    index with dims makes it advanced indexing (a copy); scalar indices only (an
    ``np.int64`` at run time: ``argmax``'s, a loop counter) give a view of the indexed
    array, and where the result has no dims, a scalar."""
    return e.out.shape != () and (
        any(np.ndim(p) > 0 for p in e.params["index"] if isinstance(p, (list, np.ndarray)))
        or any(len(getattr(a, "shape", ())) > 0 for a in e.inputs[1:]))


index_gather = defop(
    "index_gather", _gather, "IndexBackward0", variadic=True, fresh=_copies,
    vjp=(_gather_rule,), uses=("tensors",), jvp=(_gather_tangent,),
    template=_print_gather, batch=_batch)
index_gather_backward = defop(
    "index_gather_backward", _scatter_add, "IndexPutBackward0", variadic=True, fresh=True,
    vjp=(_scatter_rule,), uses=("tensors",), jvp=(_scatter_tangent,),
    template=_print_scatter_add, batch=_batch)
