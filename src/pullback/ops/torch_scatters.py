"""torch's out-of-place writes into a view and its block layouts, written over other ops
(their gradients, tangents and batching are those ops'): ``slice_scatter``,
``select_scatter``, ``diagonal_scatter`` (a copy of the input with ``src`` written into
one of its views: the gradient of the covered elements goes to ``src``), ``block_diag``
and ``unique_consecutive``.

- ``unique_consecutive`` runs on the values (a read: a guard of the trace under
  ``pb.grad``); each value is gathered from the first element of its run, so its
  gradient goes there (torch's backward refuses; inverse and counts: no gradient).

>>> import pullback as pb
>>> pb.slice_scatter(pb.zeros(2, 4), pb.ones(2, 2), 1, step=2)
tensor([[1., 0., 1., 0.],
        [1., 0., 1., 0.]])
>>> pb.block_diag(pb.tensor([[1.0]]), pb.tensor([2.0, 3.0]))
tensor([[1., 0., 0.],
        [0., 2., 3.]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .joining import cat
from .table import args
from .table.promotion import result_type
from .table.registry import is_traced, public


def _written(input, view, src, view_of: Any):
    """A copy of ``input`` with ``src`` written into ``view_of(copy)`` (torch's check
    that src has the view's shape first)."""
    if tuple(src.shape) != tuple(view.shape):
        raise RuntimeError(
            "expected src to have a size equal to the slice of self. src size = "
            f"{list(src.shape)}, slice size = {list(view.shape)}")
    out = input.clone()
    view_of(out).copy_(src)
    return out


@public("slice_scatter", function=True, method=True)
def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with ``src`` written into ``input[..., start:end:step, ...]`` (along
    ``dim``)."""
    d = args.wrap_dim(dim, max(input.ndim, 1))
    index = (slice(None),) * d + (slice(start, end, step),)
    return _written(input, input[index], src, lambda t: t[index])


@public("select_scatter", function=True, method=True)
def select_scatter(input, src, dim, index):
    """``input`` with ``src`` written into ``input.select(dim, index)``."""
    return _written(input, input.select(dim, index), src, lambda t: t.select(dim, index))


@public("diagonal_scatter", function=True, method=True)
def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with ``src`` written into ``input.diagonal(offset, dim1, dim2)``."""
    return _written(input, input.diagonal(offset, dim1, dim2), src,
                    lambda t: t.diagonal(offset, dim1, dim2))


@public("block_diag", function=True)
def block_diag(*tensors):
    """The tensors (0-d: 1x1, 1-d: one row) on the diagonal of a matrix of zeros, in
    their promoted dtype."""
    blocks = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        blocks.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1
                      else t)
    if not blocks:
        raise TypeError("block_diag() needs at least one tensor here (torch's gives an "
                        "empty 1x0 matrix)")
    dtype = result_type([np.empty((0,) if t.ndim else (), args.np_dtype(t))
                         for t in tensors])  # (torch's: a 0-d tensor's dtype is weaker)
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        b = b if args.np_dtype(b) == dtype else b.to(dtype)
        right = width - left - b.shape[1]
        rows.append(cat([b.new_zeros((b.shape[0], left)), b,
                         b.new_zeros((b.shape[0], right))], dim=1))
        left += b.shape[1]
    return cat(rows, dim=0)


@public("unique_consecutive", function=True, method=True)
def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """The first element of each run of equal elements (of equal slices along ``dim``;
    flattened when None), with each element's run (inverse) and the runs' lengths."""
    x = input.reshape(-1) if dim is None else input
    d = 0 if dim is None else args.wrap_dim(dim, max(input.ndim, 1))
    values = np.moveaxis(_values(x), d, 0) if x.ndim else _values(x).reshape(1)
    n = values.shape[0]
    rows = values.reshape(n, int(np.prod(values.shape[1:])))
    starts = np.ones(n, bool)
    starts[1:] = np.any(rows[1:] != rows[:-1], axis=1)
    first = np.flatnonzero(starts)
    found = x.index_select(d, x.new_tensor(first).long()) if x.ndim else x.reshape(1)
    inverse = np.cumsum(starts) - 1
    result = (found,)
    if return_inverse:
        result += (x.new_tensor(inverse.reshape(
            tuple(input.shape) if dim is None else (n,))).long(),)
    if return_counts:
        result += (x.new_tensor(np.diff(np.append(first, n))).long(),)
    return result[0] if len(result) == 1 else result


def _values(x: Any) -> np.ndarray:
    """The values of ``x`` (a read of a traced value: a guard of the trace)."""
    return np.asarray(x.detach()) if is_traced(x) else np.asarray(x)
