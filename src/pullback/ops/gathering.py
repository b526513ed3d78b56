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
from .table.registry import c_order, defop


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


def _adjacent(index: tuple, slots: tuple) -> bool:
    """Whether numpy keeps the broadcast index dims where the index arrays stand (they
    and any ints are next to each other), rather than moving them to the front."""
    adv = [k for k, p in enumerate(index)
           if k in slots or isinstance(p, (int, np.integer, np.ndarray, list))]
    return adv == list(range(adv[0], adv[-1] + 1))


def _batch(op, args, batched, index, slots, **params):
    """A batched indexed value with shared index arrays: a full slice for the batch axis
    in front (where numpy keeps the indexed dims in place); batched index arrays, or
    index arrays numpy moves to the front, run once per example."""
    if any(batched[1:]) or not _adjacent(index, slots):
        raise batching.NoRule
    if "shape" in params:
        params["shape"] = (batching.size_of(args, batched),) + tuple(params["shape"])
    return op(*args, index=(slice(None),) + tuple(index),
              slots=tuple(k + 1 for k in slots), **params)


# (numpy gives a scalar, not an array to write into, where the result has no dims)
index_gather = defop(
    "index_gather", _gather, "IndexBackward0", variadic=True, fresh=lambda e: e.out.shape != (),
    vjp=(_gather_rule,), uses=("tensors",), jvp=(_gather_tangent,),
    template=_print_gather, batch=_batch)
index_gather_backward = defop(
    "index_gather_backward", _scatter_add, "IndexPutBackward0", variadic=True, fresh=True,
    vjp=(_scatter_rule,), uses=("tensors",), jvp=(_scatter_tangent,),
    template=_print_scatter_add, batch=_batch)
