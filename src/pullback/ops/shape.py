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


# the one broadcast reduction every binary rule's result goes through (torch's sum_to is
# a keepdim sum, named SumBackward1, followed by a view when leading dims go away)
sum_to = defop("sum_to", _sum_to, "SumBackward1",
               vjp=(lambda g, out, x, shape: expand(g, shape=x.shape),))
expand = defop("expand", lambda x, shape: np.broadcast_to(x, shape), "ExpandBackward0",
               vjp=(lambda g, out, x, shape: g,), is_view=True)
view = defop("view", lambda x, shape: np.reshape(x, shape), "ViewBackward0",
             vjp=(lambda g, out, x, shape: reshape(g, shape=x.shape),), is_view=True)
reshape = defop("reshape", lambda x, shape: np.reshape(x, shape), "UnsafeViewBackward0",
                vjp=(lambda g, out, x, shape: reshape(g, shape=x.shape),))
unsqueeze = defop("unsqueeze", lambda x, dim: np.expand_dims(x, dim), "UnsqueezeBackward0",
                  vjp=(lambda g, out, x, dim: reshape(g, shape=x.shape),), is_view=True)
# squeeze(dim) / squeeze() / squeeze(dims): torch names the three forms differently
squeeze = defop("squeeze", lambda x, dim: np.squeeze(x, dim), "SqueezeBackward1",
                vjp=(lambda g, out, x, dim: reshape(g, shape=x.shape),), is_view=True)
squeeze_all = defop("squeeze_all", lambda x, dim: np.squeeze(x, dim), "SqueezeBackward0",
                    vjp=(lambda g, out, x, dim: reshape(g, shape=x.shape),), is_view=True)
squeeze_dims = defop("squeeze_dims", lambda x, dim: np.squeeze(x, dim), "SqueezeBackward2",
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
    """Advanced indexing's backward: repeated indices add up."""
    out = np.zeros(shape, dtype=np.result_type(g))
    np.add.at(out, index, g)
    return out


def _view_backward(g, shape, index):
    """Basic indexing's backward: the gradient written into the viewed region."""
    out = np.zeros(shape, dtype=np.result_type(g))
    _view_get(out, index)[...] = g
    return out


def _view_get(x, index):
    """Basic indexing that always returns a view (a 0-d array, never a scalar)."""
    parts = index if isinstance(index, tuple) else (index,)
    if not any(p is Ellipsis for p in parts):
        parts = parts + (Ellipsis,)
    return x[parts]


def _basic_index_op(name: str, grad_fn: str, backward_grad_fn: str) -> tuple:
    """``x[index]`` for basic indices (a view) and its backward, each the other's rule;
    torch names both after the last view op the index applies."""
    fwd = defop(name, _view_get, grad_fn, is_view=True,
                vjp=(lambda g, out, x, index: bwd(g, shape=x.shape, index=index),))
    bwd = defop(name + "_backward", _view_backward, backward_grad_fn,
                vjp=(lambda g, out, x, shape, index: fwd(g, index=index),))
    return fwd, bwd


select, select_backward = _basic_index_op("select", "SelectBackward0", "SelectBackwardBackward0")
slice, slice_backward = _basic_index_op("slice", "SliceBackward0", "SliceBackwardBackward0")
index_unsqueeze, index_unsqueeze_backward = _basic_index_op(
    "index_unsqueeze", "UnsqueezeBackward0", "SqueezeBackward1")
alias, alias_backward = _basic_index_op("alias", "AliasBackward0", "AliasBackwardBackward0")
index = defop("index", lambda x, index: x[index], "IndexBackward0",
              vjp=(lambda g, out, x, index: index_backward(g, shape=x.shape, index=index),))
index_backward = defop("index_backward", _index_backward, "IndexPutImplBackward0",
                       vjp=(lambda g, out, x, shape, index:
                            globals()["index"](g, index=index),))


def _is_full(p, shape: tuple | None, dim: int) -> bool:
    if p == _SLICE(None):
        return True
    return shape is not None and dim < len(shape) and p.indices(shape[dim]) == (0, shape[dim], 1)


def basic_index_kind(idx, shape: tuple | None = None) -> str | None:
    """The view op torch names ``x[idx]`` after (the last one the index applies:
    'select', 'slice', 'index_unsqueeze' or 'alias'), or None for advanced indexing.
    A lone slice is always a slice; in a tuple, full slices apply nothing.

    >>> basic_index_kind(0), basic_index_kind((_SLICE(None), 1)), basic_index_kind([0, 1])
    ('select', 'select', None)
    >>> basic_index_kind((0, _SLICE(1, None))), basic_index_kind((1, None))
    ('slice', 'index_unsqueeze')
    >>> basic_index_kind((_SLICE(None),)), basic_index_kind(_SLICE(None))
    ('alias', 'slice')
    """
    if isinstance(idx, _SLICE):
        return "slice"
    parts = idx if isinstance(idx, tuple) else (idx,)
    for p in parts:
        if isinstance(p, (bool, np.bool_)) or not (
                p is None or p is Ellipsis or isinstance(p, (int, np.integer, _SLICE))):
            return None
    kind, dim = "alias", 0
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
    for p in parts:
        if p is Ellipsis:
            dim += len(shape) - consumed if shape is not None else 0
        elif p is None:
            kind = "index_unsqueeze"
        else:
            if isinstance(p, _SLICE):
                if not _is_full(p, shape, dim):
                    kind = "slice"
            else:
                kind = "select"
            dim += 1
    return kind


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
# torch's node for a write through a view is CopySlices (no "Backward" suffix)
view_scatter = defop("view_scatter", _view_scatter, "CopySlices",
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
             vjp=(lambda g, out, dst, src: zeros_like(g),
                  lambda g, out, dst, src: g))
# the in-place x.fill_(value) and x.zero_(): the old value gets a zero gradient
fill = defop("fill", lambda x, value: np.full_like(x, value), "FillBackward2",
             vjp=(lambda g, out, x, value: zeros_like(g),))
zero = defop("zero", np.zeros_like, "ZeroBackward0", vjp=(lambda g, out, x: zeros_like(g),))

from .math import zeros_like  # noqa: E402  (math imports this module's expand/reshape)

# x.detach() / x.data inside a traced function: the value, with no gradient through it
detach = defop("detach", lambda x: x)
