"""Shape primitives: views, broadcasting, indexing and the broadcast reduction."""

from __future__ import annotations

import numpy as np

from .registry import defop, reduced_axes

_SLICE = slice  # the builtin; this module declares an op named slice


def _sum_to(x, shape):
    axes = reduced_axes(np.shape(x), shape)
    if axes:
        x = np.sum(x, axis=axes, keepdims=True)
    return x.reshape(shape) if np.ndim(x) != len(shape) else x


# the one broadcast reduction every binary rule's result goes through
sum_to = defop("sum_to", _sum_to, "SumToSizeBackward0",
               vjp=(lambda g, out, x, shape: expand(g, shape=x.shape),))
expand = defop("expand", lambda x, shape: np.broadcast_to(x, shape), "ExpandBackward0",
               vjp=(lambda g, out, x, shape: g,), is_view=True)
view = defop("view", lambda x, shape: np.reshape(x, shape), "ViewBackward0",
             vjp=(lambda g, out, x, shape: reshape(g, shape=x.shape),), is_view=True)
reshape = defop("reshape", lambda x, shape: np.reshape(x, shape), "UnsafeViewBackward0",
                vjp=(lambda g, out, x, shape: reshape(g, shape=x.shape),))
unsqueeze = defop("unsqueeze", lambda x, dim: np.expand_dims(x, dim), "UnsqueezeBackward0",
                  vjp=(lambda g, out, x, dim: reshape(g, shape=x.shape),), is_view=True)
squeeze = defop("squeeze", lambda x, dim: np.squeeze(x, dim), "SqueezeBackward1",
                vjp=(lambda g, out, x, dim: reshape(g, shape=x.shape),), is_view=True)
transpose = defop("transpose", lambda x, dim0, dim1: np.swapaxes(x, dim0, dim1),
                  "TransposeBackward0",
                  vjp=(lambda g, out, x, dim0, dim1: transpose(g, dim0=dim0, dim1=dim1),),
                  is_view=True)
t = defop("t", np.transpose, "TBackward0", vjp=(lambda g, out, x: t(g),), is_view=True)
permute = defop("permute", lambda x, dims: np.transpose(x, dims), "PermuteBackward0",
                vjp=(lambda g, out, x, dims: permute(g, dims=tuple(np.argsort(dims))),),
                is_view=True)


def _index_backward(g, shape, index):
    out = np.zeros(shape, dtype=np.result_type(g))
    if basic_index_kind(index):
        out[index] = g
    else:
        np.add.at(out, index, g)
    return out


# x[index]: one forward and rule, named after torch's node for the index kind
def _getitem_rule(g, out, x, index):
    return index_backward(g, shape=x.shape, index=index)


def _view_get(x, index):
    """Basic indexing that always returns a view (a 0-d array, never a scalar)."""
    parts = index if isinstance(index, tuple) else (index,)
    if not any(p is Ellipsis for p in parts):
        parts = parts + (Ellipsis,)
    return x[parts]


select = defop("select", _view_get, "SelectBackward0", vjp=(_getitem_rule,), is_view=True)
slice = defop("slice", _view_get, "SliceBackward0",
              vjp=(_getitem_rule,), is_view=True)
index = defop("index", lambda x, index: x[index], "IndexBackward0", vjp=(_getitem_rule,))
index_backward = defop("index_backward", _index_backward, "IndexBackwardBackward0",
                       vjp=(lambda g, out, x, shape, index: index(g, index=index),))


def basic_index_kind(idx) -> str | None:
    """'select' or 'slice' for numpy basic indexing (a view), None for advanced.

    >>> basic_index_kind(0), basic_index_kind((_SLICE(None), 1)), basic_index_kind([0, 1])
    ('select', 'slice', None)
    """
    parts = idx if isinstance(idx, tuple) else (idx,)
    for p in parts:
        if isinstance(p, (bool, np.bool_)) or not (
                p is None or p is Ellipsis or isinstance(p, (int, np.integer, _SLICE))):
            return None
    return "select" if isinstance(parts[0], (int, np.integer)) else "slice"


# ---- writes through views: a view is its base's chain of view ops -----------------
def _apply_chain(x, chain):
    for op, params in chain:
        x = op.forward(x, **params)
    return x


def _embed(g, shape, chain):
    out = np.zeros(shape, dtype=np.result_type(g))
    _apply_chain(out, chain)[...] = g
    return out


def _view_scatter(base, src, chain):
    out = np.array(base, copy=True)
    _apply_chain(out, chain)[...] = src
    return out


view_chain = defop("view_chain", _apply_chain, "AsStridedBackward0",
                   vjp=(lambda g, out, x, chain: embed(g, shape=x.shape, chain=chain),))
embed = defop("embed", _embed, "AsStridedScatterBackward0",
              vjp=(lambda g, out, x, shape, chain: view_chain(g, chain=chain),))
view_scatter = defop("view_scatter", _view_scatter, "CopySlicesBackward0",
                     vjp=(lambda g, out, base, src, chain: view_scatter(g, 0, chain=chain),
                          lambda g, out, base, src, chain: view_chain(g, chain=chain)))


def _index_put(x, v, index):
    out = np.array(x, copy=True)
    out[index] = v
    return out


index_put = defop("index_put", _index_put, "IndexPutBackward0",
                  vjp=(lambda g, out, x, v, index: index_put(g, 0, index=index),
                       lambda g, out, x, v, index: globals()["index"](g, index=index)))
copy = defop("copy", lambda dst, src: np.broadcast_to(src, np.shape(dst)).astype(
    np.result_type(dst)), "CopyBackwards",
             vjp=(None, lambda g, out, dst, src: g))
fill = defop("fill", lambda x, value: np.full_like(x, value), "FillBackward0",
             vjp=(lambda g, out, x, value: g * 0,))
