"""Batching rules: how an op runs on values that carry one more axis in front, the batch
axis of ``vmap``.

A rule is ``rule(op, args, batched, **params)``: ``args`` are the op's inputs, those
with ``batched[i]`` true carry the batch in axis 0; the rule returns the op's result
with the batch in axis 0 of every output. It is written with the table's primitives,
so the same rule runs on arrays, on Tensors (recording autograd) and on IR values.

Most ops need no rule of their own; ``rule_of`` derives one:

- an elementwise op: batched inputs get ones after the batch axis up to the
  example rank of the widest input, then broadcasting does the rest;
- an op of one input whose params name axes (``dim``, ``dims``, ``dim0``...): the
  axes move one to the right.

An op declares ``batch=`` when neither fits (matmul, reshapes, losses...). An op with
no rule runs once per batch element and stacks the results (``loop``): slower, never
wrong, with a one-time warning naming the op.

>>> import numpy as np
>>> from pullback.ops.table.registry import OPS
>>> x = np.arange(6.).reshape(2, 3)          # a batch of two vectors
>>> apply_rule(OPS["sum_dim"], (x,), (True,), {"dim": (0,), "keepdim": False})
array([ 3., 12.])
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from .args import np_dtype
from .registry import OPS, OpDef
from .results import pack

#: the params that name axes of the (one) input, shifted by the derived rule
DIM_PARAMS = ("dim", "dims", "dim0", "dim1", "dim2")

_WARNED: set = set()  # ops whose missing rule has been warned about


class NoRule(Exception):
    """A rule does not cover these arguments: the op runs once per batch element."""


class Unbatchable(Exception):
    """An op whose results are not arrays (a custom Function's call record) or whose
    shapes differ from element to element (a while loop's saved steps) cannot run on a
    batch even by a loop: the caller runs the whole function once per element."""


class Padded(tuple):
    """A rule's outputs of which those from ``start`` on are padded past what an element
    had (a while loop's saved steps, run as long as the longest element's): an equation
    of the one-example trace that reads them is batched by its op's rule in
    ``PADDED_RULES``, given ``steps`` (which steps are each element's), or cannot be
    batched (``Unbatchable``)."""

    start: int = 0
    steps: Any = None

    @classmethod
    def of(cls, values: tuple, start: int, steps: Any = None) -> Padded:
        out = cls(values)
        out.start, out.steps = start, steps
        return out


#: op name -> ``rule(op, args, batched, padded, steps, **params)`` for an equation that
#: reads ``Padded`` values (``padded[i]``: input i is one; ``steps``: their Padded's)
PADDED_RULES: dict[str, Callable] = {}


# ------------------------------------------------------------------ values
def ndim(x: Any) -> int:
    n = getattr(x, "ndim", None)
    return np.ndim(x) if n is None else n


def shape(x: Any) -> tuple:
    s = getattr(x, "shape", None)
    return np.shape(x) if s is None else tuple(s)


def size_of(args: tuple, batched: tuple) -> int:
    """The batch size: axis 0 of any batched input."""
    return next(shape(a)[0] for a, b in zip(args, batched) if b)


def align(x: Any, rank: int) -> Any:
    """A batched ``x`` with ones after the batch axis, to ``rank`` example axes."""
    s = shape(x)
    if len(s) - 1 >= rank:
        return x
    return OPS["reshape"](x, shape=s[:1] + (1,) * (rank + 1 - len(s)) + s[1:])


def with_batch(x: Any, size: int) -> Any:
    """An unbatched ``x`` as a batched value: the same example ``size`` times (a view)."""
    return OPS["expand"](OPS["unsqueeze"](x, dim=0), shape=(size,) + shape(x))


def example(x: Any, i: int) -> Any:
    """Batch element ``i`` of a batched ``x``."""
    return OPS["select"](x, index=(i,))


def shift(d: Any, rank: int) -> Any:
    """Axis ``d`` (or a tuple of them) of an example of ``rank`` axes, as an axis of the
    batched value; a None (every axis) cannot shift."""
    if d is None or rank == 0:
        raise NoRule
    if isinstance(d, (tuple, list)):
        return type(d)(int(a) % rank + 1 for a in d)
    return int(d) % rank + 1


# ------------------------------------------------------------------- rules
def elementwise(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    rank = max(ndim(a) - b for a, b in zip(args, batched))
    return op(*[align(a, rank) if b else a for a, b in zip(args, batched)], **params)


def shifted_dims(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """One input, its axes named by ``DIM_PARAMS`` moved one to the right."""
    rank = ndim(args[0]) - 1
    moved = {k: shift(v, rank) if k in DIM_PARAMS else v for k, v in params.items()}
    return op(*args, **moved)


def shifted_out_dims(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """As ``shifted_dims`` for ops whose axes count in the result, one more than the
    input has (unsqueeze, diag_embed)."""
    rank = ndim(args[0])
    moved = {k: shift(v, rank) if k in DIM_PARAMS else v for k, v in params.items()}
    return op(*args, **moved)


def batch_shape(op: OpDef, args: tuple, batched: tuple, shape: tuple, **params: Any) -> Any:
    """A shape param (reshape, view, expand, sum_to): the batch axis in front of it. An
    expand that adds axes aligns its input first; a sum_to that sums leading axes away
    keeps them as ones, then drops them."""
    x, size = args[0], size_of(args, batched)
    if op.name == "expand":
        x = align(x, len(shape))
    pad = (1,) * (ndim(x) - 1 - len(shape)) if op.name == "sum_to" else ()
    out = op(x, *args[1:], shape=(size,) + pad + tuple(shape), **params)
    return OPS["reshape"](out, shape=(size,) + tuple(shape)) if pad else out


def batch_index(op: OpDef, args: tuple, batched: tuple, index: tuple, **params: Any) -> Any:
    """A basic or advanced index: a full slice for the batch axis in front, unless
    advanced indices (arrays) stand apart, which numpy would move before the batch."""
    index = index if isinstance(index, tuple) else (index,)
    advanced = [i for i, k in enumerate(index) if not isinstance(k, (int, slice, type(None),
                                                                     type(Ellipsis)))]
    if advanced and advanced != list(range(advanced[0], advanced[-1] + 1)):
        raise NoRule
    if "shape" in params:
        params["shape"] = (size_of(args, batched),) + tuple(params["shape"])
    return op(*args, index=(slice(None),) + tuple(index), **params)


def loop(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """The op once per batch element, the results stacked."""
    size = size_of(args, batched)
    if op.name not in _WARNED:
        _WARNED.add(op.name)
        warnings.warn(f"vmap: there is no batching rule for {op.name}, so it runs once per "
                      "batch element (slower, the same result)", UserWarning, stacklevel=2)
    if size == 0:  # (no element to run it on: one example of zeros gives the shapes)
        first = [OPS["zeros"](shape=shape(a)[1:], dtype=np.dtype(getattr(a, "dtype", float)))
                 if b else a for a, b in zip(args, batched)]
        return _joined(op, [op(*first, **params)], empty=True)
    results = [op(*[example(a, i) if b else a for a, b in zip(args, batched)], **params)
               for i in range(size)]
    return _joined(op, results)


def _joined(op: OpDef, results: list, empty: bool = False) -> Any:
    def join(values: list) -> Any:
        if any(np_dtype(v).kind == "O" for v in values) or len({shape(v) for v in values}) > 1:
            raise Unbatchable(op.name)  # (a call record; a shape each element has its own)
        if empty:
            v = values[0]
            return OPS["expand"](OPS["unsqueeze"](v, dim=0), shape=(0,) + shape(v))
        return OPS["stack"](*values, dim=0)
    if op.multi:
        return pack(op.result, [join([r[k] for r in results]) for k in range(len(results[0]))])
    return join(results)


def rule_of(op: OpDef) -> Callable | None:
    """The op's batching rule: declared, derived, or None (the op loops)."""
    if op.batch is not None:
        return op.batch
    if op.elementwise:
        return elementwise
    if op.n_inputs == 1 and any(p in DIM_PARAMS for p in op.arg_names[1:]):
        return shifted_dims
    return None


def apply_rule(op: OpDef, args: tuple, batched: tuple, params: dict) -> Any:
    """``op`` on ``args`` (some batched in axis 0), batched in axis 0."""
    rule = rule_of(op)
    if rule is not None:
        try:
            return rule(op, args, batched, **params)
        except NoRule:
            pass
    return loop(op, args, batched, **params)


def native(op: OpDef) -> bool:
    """Whether the op batches by a rule (declared or derived), not by a loop."""
    return rule_of(op) is not None


def padded_rule(op: OpDef) -> Callable | None:
    """The rule for an equation reading ``Padded`` values: the op's in ``PADDED_RULES``;
    an elementwise op's (or one that maps each element: cast, zeros_like) gives padded
    values in turn; else None (``Unbatchable``)."""
    rule = PADDED_RULES.get(op.name)
    if rule is None and (op.elementwise or rule_of(op) in (as_is, example_shaped)):
        return padded_elementwise
    return rule


def padded_elementwise(op: OpDef, args: tuple, batched: tuple, padded: tuple, steps: Any,
                       **params: Any) -> Padded:
    """An elementwise op on padded values: padded in turn (their steps past an element's
    own are read only by a loop that masks them), when no other input has the steps'
    axis (an input of one example's trace would have that example's count)."""
    rank = max(ndim(a) - 1 for a, p in zip(args, padded) if p)
    if any(not p and ndim(a) - b >= rank for a, b, p in zip(args, batched, padded)
           if hasattr(a, "shape")):
        raise Unbatchable(op.name)
    return Padded.of((apply_rule(op, args, batched, params),), 0, steps)


# ------------------------------------------------- rules ops declare by name
def as_is(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """An op that maps each element (or each example) on its own: the batch passes
    through (cast, clone, detach, real, ...)."""
    return op(*args, **params)


def leading(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """An op that takes leading batch axes itself (linalg, bmm, layer_norm over the last
    axes): the unbatched tensor inputs become batched views when another is batched
    in a position the op broadcasts only through its own batch axes."""
    size = size_of(args, batched)
    full = [a if b or not _tensor(a) or i >= _n_tensors(op, args) else with_batch(a, size)
            for i, (a, b) in enumerate(zip(args, batched))]
    return op(*full, **params)


def first_only(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """An op that takes leading batch axes on its first input, its other inputs being
    parameters (layer_norm's weight): only a batched first input batches natively."""
    if any(batched[1:]):
        raise NoRule
    return op(*args, **params)


def _tensor(a: Any) -> bool:
    return hasattr(a, "shape") and not isinstance(a, (tuple, list))


def _n_tensors(op: OpDef, args: tuple) -> int:
    return len(args) if op.n_inputs is None else op.n_inputs


def reduce_all(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """A reduction over every axis (sum_all...): the same over every axis but the batch."""
    x = args[0]
    rank = ndim(x) - 1
    every = tuple(range(1, rank + 1))
    name = {"sum_all": "sum_dim", "mean_all": "mean_dim", "max_all": "amax",
            "min_all": "amin"}.get(op.name)
    if name is not None:
        return OPS[name](x, dim=every, keepdim=False)
    flat = OPS["reshape"](x, shape=(shape(x)[0], -1))
    if op.name == "prod_all":
        return OPS["prod_dim"](flat, dim=1, keepdim=False)
    if op.name == "median_all":
        return OPS["median_dim"](flat, dim=1, keepdim=False)[0]
    raise NoRule


def loss(op: OpDef, args: tuple, batched: tuple, reduction: str, **params: Any) -> Any:
    """A loss with ``reduction``: per element (batched elementwise), then reduced over
    every axis but the batch."""
    each = elementwise(op, args, batched, reduction="none", **params)
    if reduction == "none":
        return each
    every = tuple(range(1, ndim(each)))
    return OPS["mean_dim" if reduction == "mean" else "sum_dim"](each, dim=every, keepdim=False)


def joined(op: OpDef, args: tuple, batched: tuple, dim: int) -> Any:
    """cat and stack: every list element batched (the unbatched ones as views), the axis
    one to the right (stack's counts in the result, one more than an element has)."""
    size = size_of(args, batched)
    rank = ndim(next(a for a, b in zip(args, batched) if b)) - 1
    full = [a if b else with_batch(a, size) for a, b in zip(args, batched)]
    if op.name == "cat" and any(shape(a)[1:] == (0,) for a in full):
        raise NoRule  # (torch's legacy empty tensors: per element)
    return op(*full, dim=shift(dim, rank + (op.name == "stack")))


def batch_first(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """Every tensor input batched (the unbatched ones as views), the op run as it is: an
    op that broadcasts over leading axes (masked_fill, copy, where the result has the
    shape of its first input)."""
    size = size_of(args, batched)
    rank = max(ndim(a) - b for a, b in zip(args, batched) if _tensor(a))
    full = [align(a if b else with_batch(a, size), rank) if _tensor(a) else a
            for a, b in zip(args, batched)]
    return op(*full, **params)


def example_shaped(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """An op whose result reads only its input's shape and dtype (zeros_like): one
    example's result, the same for every element."""
    size = size_of(args, batched)
    return with_batch(op(*[example(a, 0) if b else a for a, b in zip(args, batched)],
                         **params), size)


def leading_aligned(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """An op that broadcasts the leading axes of its matrix operands (solve): all of
    them to one rank first; a vector right-hand side (one axis) as a one-column
    matrix, the column dropped after."""
    size = size_of(args, batched)
    tensors = _n_tensors(op, args)
    ranks = [ndim(a) - b for a, b in zip(args[:tensors], batched)]
    vector = tensors == 2 and ranks[1] == 1 and ranks[0] >= 2
    full = [a if b else with_batch(a, size) for a, b in zip(args[:tensors], batched)]
    if vector:
        full[1] = OPS["unsqueeze"](full[1], dim=-1)
        ranks[1] = 2
    rank = max(ranks)
    out = op(*[align(a, rank) for a in full], *args[tensors:], **params)
    return OPS["squeeze"](out, dim=-1) if vector else out


def moved(x: Any, source: int, destination: int) -> Any:
    """``x`` with axis ``source`` moved to ``destination`` (a permute; itself if equal)."""
    order = [d for d in range(ndim(x)) if d != source]
    order.insert(destination, source)
    return x if source == destination else OPS["permute"](x, dims=tuple(order))


def reduction(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """A reduction whose ``dim`` None means every axis (amax, sum_dim, std...): every
    axis but the batch; other dims shift."""
    if params.get("dim", 0) is None:
        params["dim"] = tuple(range(1, ndim(args[0])))
    return shifted_dims(op, args, batched, **params)


def merged(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """An op over a batch of samples in axis 0 (pooling, group_norm, prelu): the vmap
    batch and the op's own batch merged into one axis (the other inputs, its
    parameters, unbatched)."""
    x = args[0]
    if any(batched[1:]) or ndim(x) < 3:
        raise NoRule
    size, s = shape(x)[0], shape(x)
    out = op(OPS["reshape"](x, shape=(size * s[1],) + s[2:]), *args[1:], **params)
    return pack(op.result, [_unmerged(o, size) for o in out]) if op.multi else \
        _unmerged(out, size)


def _unmerged(x: Any, size: int) -> Any:
    s = shape(x)
    return OPS["reshape"](x, shape=(size, s[0] // size) + s[1:])


def flat_or_shifted(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """argmax & co.: ``dim`` None means the flattened example (its index in it)."""
    if params.get("dim", 0) is not None:
        return shifted_dims(op, args, batched, **params)
    if params.get("keepdim"):
        raise NoRule
    x = args[0]
    return op(OPS["reshape"](x, shape=(shape(x)[0], -1)), **{**params, "dim": 1})


def indexed_by(op: OpDef, args: tuple, batched: tuple, **params: Any) -> Any:
    """An op reading a table (its first input) at indices (embedding): batched indices
    pick from the one table natively; a batched table loops."""
    if batched[0]:
        raise NoRule
    return op(*args, **params)


def aligned_dim(op: OpDef, args: tuple, batched: tuple, dim: int, **params: Any) -> Any:
    """An op whose tensor inputs share their rank along ``dim`` (take_along, scatter,
    linalg_cross): every input batched (views for the unbatched), aligned, the axis
    shifted; a ``shape`` param gets the batch."""
    size = size_of(args, batched)
    tensors = _n_tensors(op, args)
    rank = max(ndim(a) - b for a, b in zip(args[:tensors], batched))
    full = [align(a if b else with_batch(a, size), rank) for a, b in
            zip(args[:tensors], batched)]
    if "shape" in params:
        params["shape"] = (size,) + tuple(params["shape"])
    return op(*full, *args[tensors:], dim=shift(dim, rank), **params)


def chained(op: OpDef, args: tuple, batched: tuple, chain: tuple) -> Any:
    """A chain of views (view_chain): each view's own rule in turn."""
    x = args[0]
    for view, params in chain:
        x = apply_rule(view, (x,), (True,), dict(params))
    return x
