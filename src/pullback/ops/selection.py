"""Ordering: ``sort`` and ``topk``, ops with two outputs (values, indices) whose nodes
save the indices (torch's SortBackward0, TopkBackward0), and the gather/scatter pair
their gradients go through.

>>> import pullback as pb
>>> s = pb.tensor([3., 1., 2.], requires_grad=True).sort()
>>> s.values, s.indices
(tensor([1., 2., 3.], grad_fn=<SortBackward0>), tensor([1, 2, 0]))
"""

from __future__ import annotations

import numpy as np

from .table import args, batching
from .table.registry import c_order, defop, public, rt_call
from .table.results import return_type

Sorted = return_type("sort", ("values", "indices"))
Top = return_type("topk", ("values", "indices"))


def _put_along(src, index, dim, shape):
    """Zeros of ``shape`` with ``src`` added at ``index`` along ``dim`` (scatter-add)."""
    out = np.zeros(shape, dtype=np.result_type(src))
    where = list(np.indices(np.shape(index), sparse=True))
    where[dim] = index
    np.add.at(out, tuple(where), src)
    return out


# the gradients of a selection: x gathered at the indices along dim, and the scatter
# of a gradient back (torch's double backward of sort/topk is a ScatterBackward0)
take_along = defop("take_along", lambda x, index, dim: np.take_along_axis(x, index, dim),
                   "GatherBackward0", torch_args=("self", "index"), uses=("index", ""),
                   vjp=(lambda g, out, x, index, dim: put_along(g, index, dim=dim,
                                                                shape=x.shape), None),
                   template="np.take_along_axis({0}, {1}, axis={dim})", batch=batching.aligned_dim)
put_along = defop("put_along", _put_along, "ScatterBackward0", fresh=True,
                  torch_args=("src", "index"), uses=("index", ""),
                  vjp=(lambda g, out, src, index, dim, shape: take_along(g, index, dim=dim),
                       None), batch=batching.aligned_dim,
                  template=rt_call("put_along", "axis=dim", "shape"))


def _order(x, dim, descending):
    """Stable sort indices along ``dim``; descending keeps ties in their order and puts
    NaN first, as torch does (an ascending sort of the reversed axis, reversed)."""
    if not descending:
        return np.argsort(x, axis=dim, kind="stable")
    n = x.shape[dim]
    flipped = np.argsort(np.flip(x, dim), axis=dim, kind="stable")
    return np.flip(n - 1 - flipped, dim)


def _sort(x, dim, descending):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    index = _order(x, dim, descending)
    return c_order(np.take_along_axis(x, index, dim)), index


def _topk(x, k, dim, largest):
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    index = np.ascontiguousarray(np.take(_order(x, dim, largest), np.arange(k), axis=dim))
    return np.take_along_axis(x, index, dim), index


def _scatter_values(g, out, x, dim):
    """The values' gradient put back where the indices took them from."""
    if x.ndim == 0:
        return g.values
    return put_along(g.values, out.indices, dim=dim, shape=x.shape)


# stable=... picks torch's other overload, named SortBackward1; the sort is stable either way
sort_op = defop("sort", lambda x, dim, descending: _sort(x, dim, descending), "SortBackward0",
                outputs=Sorted, vjp=(lambda g, out, x, dim, descending:
                                     _scatter_values(g, out, x, dim),), uses=("indices",),
                template=rt_call("sort", "axis=dim", "descending"))
sort_stable = defop("sort_stable", lambda x, dim, descending: _sort(x, dim, descending),
                    "SortBackward1", outputs=Sorted, uses=("indices",),
                    vjp=(lambda g, out, x, dim, descending: _scatter_values(g, out, x, dim),),
                    template=rt_call("sort", "axis=dim", "descending"))
topk_op = defop("topk", _topk, "TopkBackward0", outputs=Top, uses=("indices",),
                vjp=(lambda g, out, x, k, dim, largest: _scatter_values(g, out, x, dim),),
                template=rt_call("topk", "k", "axis=dim", "largest"))


def _numpy_sort(a, axis=-1, kind=None, order=None, *, stable=None):
    if order is not None:
        raise args.Unsupported
    x = args.value(a)
    if axis is None:
        x, axis = x.reshape(-1), 0
    return sort_op(x, dim=args.axes(axis, x.ndim)[0] if x.ndim else None,
                   descending=False).values


@public("sort", function=True, method=True, numpy={np.sort: _numpy_sort})
def sort(input, dim=-1, descending=False, *, stable=None):
    d = args.wrap_dim(dim, input.ndim)
    op = sort_op if stable is None else sort_stable
    return op(input, dim=d if input.ndim else None, descending=bool(descending))


@public("topk", function=True, method=True)
def topk(input, k, dim=-1, largest=True, sorted=True):
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool):
        raise TypeError(f"topk(): argument 'k' (position 2) must be int, not {type(k).__name__}")
    d = args.wrap_dim(dim, input.ndim)
    n = input.shape[d] if input.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    return topk_op(input, k=int(k), dim=d if input.ndim else None, largest=bool(largest))

