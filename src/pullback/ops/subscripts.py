"""Subscripts: ``x[index]``. Basic indices are views torch names after the last view op
they apply (``select``, ``slice``, ``index_unsqueeze``, ``alias``), each with its
backward; advanced indices take a copy (``index``) whose backward adds repeated
positions up; torch's ``select(dim, index)``; and the subscript text generated code
writes for a basic index."""

from __future__ import annotations

from typing import Any

import numpy as np

from .table import args, batching
from .table.registry import c_order, defop, public


def _index_backward(g, shape, index):
    """Advanced indexing's backward: repeated indices add up."""
    out = np.zeros(shape, dtype=np.result_type(g))
    np.add.at(out, index, g)
    return out


def _view_backward(g, shape, index):
    """Basic indexing's backward: the gradient written into the viewed region."""
    out = np.zeros(shape, dtype=np.result_type(g))
    view_get(out, index)[...] = g
    return out


def view_get(x, index):
    """Basic indexing that always returns a view (a 0-d array, never a scalar)."""
    parts = index if isinstance(index, tuple) else (index,)
    if not any(p is Ellipsis for p in parts):
        parts = parts + (Ellipsis,)
    return x[parts]


def _print_view_get(e: Any, a: list, lit: Any) -> str:
    """``view_get`` in generated code: ``x[None, 1:]``, ``x[0, ...]`` (an Ellipsis last
    where the index has only integers: a view, never a scalar; a slice or a None keeps
    the result an array without it)."""
    return f"{a[0]}[{subscript_text(e.params['index'], lit, True)}]"


def subscript_text(index: Any, lit: Any, view: bool) -> str:
    """A basic index as subscript text (``view``: an Ellipsis last where it has only
    integers, so that the result is a view)."""
    parts = index if isinstance(index, tuple) else (index,)
    if view and not any(p is Ellipsis or p is None or type(p) is slice for p in parts):
        parts = parts + (Ellipsis,)
    colon = lambda p: ":".join("" if v is None else lit(v)  # noqa: E731
                               for v in (p.start, p.stop) + ((p.step,) if p.step else ()))
    return ", ".join(colon(p) if type(p) is slice else lit(p) for p in parts) or "()"


def one_index(chain: tuple) -> Any:
    """The index of a chain of one basic index op (``R[1, :]``), else None."""
    if len(chain) == 1 and chain[0][0].name in BASIC_INDEX_OPS:
        return chain[0][1].get("index")
    return None


def _basic_index_op(name: str, grad_fn: str, backward_grad_fn: str, template: Any) -> tuple:
    """``x[index]`` for basic indices (a view) and its backward, each the other's rule;
    torch names both after the last view op the index applies."""
    fwd = defop(name, view_get, grad_fn, is_view=True, template=template,
                vjp=(lambda g, out, x, index: bwd(g, shape=x.shape, index=index),),
                batch=batching.batch_index)
    bwd = defop(name + "_backward", _view_backward, backward_grad_fn, fresh=True,
                template="rt.zeros_set({shape}, np.s_[{index}], {0})",
                vjp=(lambda g, out, x, shape, index: fwd(g, index=index),),
                batch=batching.batch_index)
    return fwd, bwd


select, select_backward = _basic_index_op("select", "SelectBackward0",
                                          "SelectBackwardBackward0", "{0}[{index}]")
slice_view, slice_backward = _basic_index_op("slice", "SliceBackward0",
                                             "SliceBackwardBackward0", "{0}[{index}]")
index_unsqueeze, index_unsqueeze_backward = _basic_index_op(
    "index_unsqueeze", "UnsqueezeBackward0", "SqueezeBackward1", _print_view_get)
alias, alias_backward = _basic_index_op("alias", "AliasBackward0", "AliasBackwardBackward0",
                                        _print_view_get)


def _take(x, index):
    """Advanced indexing: contiguous when ``x`` is, as torch's (numpy's result of
    ``x[:, [0, 1]]`` is not)."""
    out = x[index]
    return c_order(out) if type(x) is np.ndarray and x.flags.c_contiguous else out


take_index = defop("index", _take, "IndexBackward0",
                   vjp=(lambda g, out, x, index: index_backward(g, shape=x.shape, index=index),),
                   template="{0}[{index}]", batch=batching.batch_index)
index_backward = defop("index_backward", _index_backward, "IndexPutImplBackward0", fresh=True,
                       template="rt.zeros_add({shape}, np.s_[{index}], {0})",
                       vjp=(lambda g, out, x, shape, index: take_index(g, index=index),),
                       batch=batching.batch_index)


@public("select", function=True, method=True)
def select_along(input, dim, index):
    """torch's ``select(dim, index)``: ``input[:, ..., index]`` with ``index`` at ``dim``, a
    view (SelectBackward0), with torch's errors."""
    if isinstance(index, (bool, float)) or not hasattr(index, "__index__"):
        raise TypeError(f"select(): argument 'index' (position 2) must be int, not "
                        f"{type(index).__name__}")
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = args.wrap_dim(dim, input.ndim)
    n, i = input.shape[d], int(index)
    if not -n <= i < n:
        raise IndexError(f"select(): index {i} out of range for tensor of size "
                         f"[{', '.join(str(k) for k in input.shape)}] at dimension {d}")
    return select(input, index=(slice(None),) * d + (i % n,))


BASIC_INDEX_OPS = {"select": select, "slice": slice_view, "index_unsqueeze": index_unsqueeze,
                   "alias": alias}



def _is_full(p: Any, shape: tuple | None, dim: int) -> bool:
    if p == slice(None):
        return True
    return shape is not None and dim < len(shape) and p.indices(shape[dim]) == (0, shape[dim], 1)


def basic_index_kind(idx: Any, shape: tuple | None = None) -> str | None:
    """The view op torch names ``x[idx]`` after (the last one the index applies:
    'select', 'slice', 'index_unsqueeze' or 'alias'), or None for advanced indexing.
    A lone slice is always a slice; in a tuple, full slices apply nothing.

    >>> basic_index_kind(0), basic_index_kind((slice(None), 1)), basic_index_kind([0, 1])
    ('select', 'select', None)
    >>> basic_index_kind((0, slice(1, None))), basic_index_kind((1, None))
    ('slice', 'index_unsqueeze')
    >>> basic_index_kind((slice(None),)), basic_index_kind(slice(None))
    ('alias', 'slice')
    """
    if isinstance(idx, slice):
        return "slice"
    parts = idx if isinstance(idx, tuple) else (idx,)
    for p in parts:
        if isinstance(p, (bool, np.bool_)) or not (
                p is None or p is Ellipsis or isinstance(p, (int, np.integer, slice))):
            return None
    kind, dim = "alias", 0
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
    for p in parts:
        if p is Ellipsis:
            dim += len(shape) - consumed if shape is not None else 0
        elif p is None:
            kind = "index_unsqueeze"
        else:
            if isinstance(p, slice):
                if not _is_full(p, shape, dim):
                    kind = "slice"
            else:
                kind = "select"
            dim += 1
    return kind


def getitem(input: Any, index: Any) -> Any:
    """``input[index]``: the basic-index view torch would name, or advanced indexing."""
    kind = basic_index_kind(index, tuple(input.shape))
    return take_index(input, index=index) if kind is None else BASIC_INDEX_OPS[kind](
        input, index=index)

