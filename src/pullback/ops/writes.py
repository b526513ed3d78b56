"""Writes as new values. A view is its base's chain of view ops: ``view_chain`` replays
it, ``view_scatter`` writes through it (torch's CopySlices) and ``embed`` puts a view's
gradient into its base's shape. Also ``index_put`` (``x[index] = v`` on a copy), the
whole-tensor writes ``copy_``, ``fill_`` and ``zero_``, and ``zeros``, the zero
gradient of an output no gradient reached."""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import zeros_like
from .subscripts import one_index, subscript_text, take_index
from .table import batching
from .table.registry import defop


def may_be_written(a: np.ndarray) -> bool:
    """Whether the values of the numpy array ``a`` can change after it is read: it is
    writeable, or a read-only view of memory that is (``np.broadcast_to``,
    ``sliding_window_view``, ``v.flags.writeable = False`` on a view of a buffer the
    program writes). A read-only array that owns its memory, or views ``bytes``, cannot.

    >>> row = np.zeros(3)
    >>> may_be_written(np.broadcast_to(row, (2, 3)))
    True
    >>> may_be_written(np.frombuffer(b"abcd", np.uint8)), may_be_written(np.ones(2)[0:0])
    (False, True)
    """
    b: Any = a
    while isinstance(b, np.ndarray):
        if b.flags.writeable:
            return True
        b = b.base
        if b is not None and not isinstance(b, np.ndarray) and hasattr(b, "__array_interface__"):
            b = getattr(b, "base", None)  # (stride tricks' holder of the array it views)
    return b is not None and not isinstance(b, bytes)


def _print_view_chain(e: Any, a: list, lit: Any) -> str:
    """``x[1, :]`` for a chain of one index; else the chain's call."""
    index = one_index(e.params["chain"])
    if index is None:
        return f"ops.view_chain({a[0]}, chain={lit(e.params['chain'])})"
    return f"{a[0]}[{subscript_text(index, lit, True)}]"


def _print_view_scatter(e: Any, a: list, lit: Any) -> str:
    """A copy with ``src`` written at one index, as numpy's ``x[1, :] = src`` writes it
    (``rt.index_put(x, np.s_[1, :], src)``); else the chain's call."""
    index = one_index(e.params["chain"])
    if index is None:
        return f"ops.view_scatter({a[0]}, {a[1]}, chain={lit(e.params['chain'])})"
    return f"rt.index_put({a[0]}, np.s_[{subscript_text(index, lit, False)}], {a[1]})"



def _apply_chain(x, chain):
    for op, params in chain:
        x = op.forward(x, **params)
    return x


def _write_region(out, chain, src, accumulate):
    """Write ``src`` into the region of ``out`` (C-contiguous) that ``chain`` views: in
    place where the chain replayed on ``out`` is a view of it, else at the positions the
    chain picks (a reshape that views the base's own layout but not a C-contiguous one; a
    broadcast, which sees positions more than once: ``accumulate`` adds them up)."""
    region = _apply_chain(out, chain)
    if region.flags.writeable and np.may_share_memory(region, out):
        region[...] = src
        return out
    seen = _apply_chain(np.arange(out.size).reshape(out.shape), chain)
    src = np.broadcast_to(src, seen.shape)
    if accumulate:
        np.add.at(out.reshape(-1), seen, src)
    else:
        out.reshape(-1)[seen] = src
    return out


def _embed(g, shape, chain):
    """The gradient of a view, in its base's shape (0 outside the view)."""
    return _write_region(np.zeros(shape, dtype=np.result_type(g)), chain, g, True)


def _view_scatter(base, src, chain):
    return _write_region(np.array(base, copy=True, order="C"), chain, src, False)


class _Taken:
    """A view op standing in for itself while its batching rule runs on a probe array:
    it keeps the params the rule calls it with (the view of the batched base)."""

    def __init__(self, op: Any) -> None:
        self.op, self.params, self.seen, self.out = op, None, None, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.op, name)

    def __call__(self, x: Any, **params: Any) -> Any:
        self.params, self.seen, self.out = params, x, self.op.forward(x, **params)
        return self.out


def batched_chain(chain: tuple, shape: tuple) -> tuple:
    """``chain`` as views of a base of ``shape`` with the batch in front: each view's
    batching rule, where it is one call of the view itself (an index with a full slice
    in front, a shape with the batch...); else NoRule (a rule that reshapes its input
    first, or whose result is not the view's own)."""
    x, out = np.zeros(shape), []
    for op, params in chain:
        rule, taken = batching.rule_of(op), _Taken(op)
        if rule is None or rule(taken, (x,), (True,), **dict(params)) is not taken.out \
                or taken.out is None or taken.seen is not x:
            raise batching.NoRule
        out.append((op, taken.params))
        x = taken.out
    return tuple(out)


def _batch_embed(op, args, batched, shape, chain):
    """A batched gradient of a view, in its batched base."""
    full = (batching.size_of(args, batched),) + tuple(shape)
    return op(args[0], shape=full, chain=batched_chain(chain, full))


def _batch_view_scatter(op, args, batched, chain):
    """A write through a view of a batched base (the same base for every example where
    only the value is batched); a batched value aligned to the view's example axes."""
    size = batching.size_of(args, batched)
    base, src = args
    base = base if batched[0] else batching.with_batch(base, size)
    full = batching.shape(base)
    views = batched_chain(chain, full)
    if batched[1]:
        src = batching.align(src, np.ndim(_apply_chain(np.zeros(full[1:]), chain)))
    return op(base, src, chain=views)


view_chain = defop("view_chain", _apply_chain, "AsStridedBackward0", aliases=True,
                   template=_print_view_chain,
                   vjp=(lambda g, out, x, chain: embed(g, shape=x.shape, chain=chain),),
                   batch=batching.chained)
embed = defop("embed", _embed, "AsStridedScatterBackward0", fresh=True,
              vjp=(lambda g, out, x, shape, chain: view_chain(g, chain=chain),),
              batch=_batch_embed)
# torch's node for a write through a view is CopySlices (no "Backward" suffix)
view_scatter = defop("view_scatter", _view_scatter, "CopySlices", fresh=True,
                     template=_print_view_scatter,
                     vjp=(lambda g, out, base, src, chain: view_scatter(g, 0, chain=chain),
                          lambda g, out, base, src, chain: view_chain(g, chain=chain)),
                     batch=_batch_view_scatter)


def _index_put(x, v, index):
    out = np.array(x, copy=True)
    out[index] = v
    return out


index_put = defop("index_put", _index_put, "IndexPutBackward0",
                  template="rt.index_put({0}, np.s_[{index}], {1})",
                  vjp=(lambda g, out, x, v, index: index_put(g, 0, index=index),
                       lambda g, out, x, v, index: take_index(g, index=index)))
def _print_copy(e: Any, a: list, lit: Any) -> str:
    """``dst.copy_(src)`` as a new value: ``src.copy()`` of dst's shape and dtype
    already, a scalar of dst's dtype for a 0-d one (``np.broadcast_to`` costs some
    microseconds a call, a loop's written table and ``R[0, 0] = 0.0`` pay it once a
    call), else ``src`` broadcast and cast."""
    dst, src = e.inputs
    dtype = np.dtype(dst.dtype)
    shape = getattr(src, "shape", None)
    if tuple(dst.shape) == () and (type(src) in (int, float, bool) or shape == ()):
        return f"{lit(dtype)}({a[1]})"
    if shape is not None and tuple(shape) == tuple(dst.shape) and src.dtype == dtype:
        return f"{a[1]}.copy()"
    return f"np.broadcast_to({a[1]}, np.shape({a[0]})).astype({lit(dtype)})"


copy = defop("copy", lambda dst, src: np.broadcast_to(src, np.shape(dst)).astype(
    np.result_type(dst)), "CopyBackwards", template=_print_copy,
             vjp=(lambda g, out, dst, src: zeros_like(g),
                  lambda g, out, dst, src: g), inplace="copy_", batch=batching.batch_first)
# the in-place x.fill_(value) and x.zero_(): the old value gets a zero gradient
fill = defop("fill", lambda x, value: np.full_like(x, value), "FillBackward2",
             template="np.full_like({0}, {value})",
             vjp=(lambda g, out, x, value: zeros_like(g),), inplace="fill_", batch=batching.as_is)
# the zero gradient of an output of a multi-output op that no gradient reached
zeros = defop("zeros", lambda shape, dtype: np.zeros(shape, dtype), fresh=True,
              template="np.zeros({shape}, {dtype})")
zero = defop("zero", np.zeros_like, "ZeroBackward0", vjp=(lambda g, out, x: zeros_like(g),),
             template="np.zeros_like({0})",
             inplace="zero_", batch=batching.as_is)
