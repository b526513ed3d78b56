"""Diagonals: ``diagonal`` (a view, as torch's), ``diag_embed`` and their gradients,
and the functions over them (``diag``, ``diagflat``), with torch's and numpy's
spellings.

>>> import pullback as pb
>>> x = pb.ones(3, 3, requires_grad=True)
>>> x.diagonal(1).grad_fn, pb.diag_embed(pb.ones(2)).shape
(<DiagonalBackward0 object at ...>, (2, 2))
"""

from __future__ import annotations

import numpy as np

from .elementwise import clone
from .shape import reshape
from .table import args, batching
from .table.registry import defop, public


def _diagonal(x, offset, dim1, dim2):
    """numpy's diagonal, a view writable where ``x`` is (numpy marks it read-only)."""
    d = np.diagonal(x, offset, dim1, dim2)
    if isinstance(x, np.ndarray) and x.flags.writeable:
        d.flags.writeable = True
    return d


def _embedded(g, shape, offset, dim1, dim2):
    """Zeros of ``shape`` with ``g`` on the diagonal (offset, dim1, dim2)."""
    out = np.zeros(shape, dtype=np.result_type(g))
    _diagonal(out, offset, dim1, dim2)[...] = g
    return out


def embed_shape(shape: tuple, offset: int, dim1: int, dim2: int) -> tuple:
    """The shape diag_embed makes of ``shape``: its last dim as a diagonal of two new
    dims ``dim1`` and ``dim2`` (of the result), ``offset`` above the main one."""
    n = shape[-1] + abs(offset) if shape else abs(offset) + 1
    rest = list(shape[:-1])
    for d in sorted((dim1, dim2)):
        rest.insert(d, n)
    return tuple(rest)


diagonal_op = defop(
    "diagonal", _diagonal, "DiagonalBackward0", is_view=True,
    vjp=(lambda g, out, x, offset, dim1, dim2: diagonal_backward(
        g, shape=x.shape, offset=offset, dim1=dim1, dim2=dim2),),
    template="np.diagonal({0}, {offset}, {dim1}, {dim2})")
def _embedded_batch(op, args, batched, shape, offset, dim1, dim2):
    """diagonal's backward over a batch: its axes count in ``shape``, the result's."""
    rank = len(shape)
    return op(args[0], shape=(args[0].shape[0],) + tuple(shape), offset=offset,
              dim1=batching.shift(dim1, rank), dim2=batching.shift(dim2, rank))


diagonal_backward = defop(
    "diagonal_backward", _embedded, "DiagonalBackwardBackward0", fresh=True,
    template="rt.diagonal_set({shape}, {0}, {offset}, {dim1}, {dim2})",
    vjp=(lambda g, out, x, shape, offset, dim1, dim2: diagonal_op(
        g, offset=offset, dim1=dim1, dim2=dim2),), batch=_embedded_batch)
diag_embed_op = defop(
    "diag_embed", lambda x, offset, dim1, dim2: _embedded(
        x, embed_shape(np.shape(x), offset, dim1, dim2), offset, dim1, dim2),
    "DiagEmbedBackward0", fresh=True,
    template="rt.diagonal_set({out_shape}, {0}, {offset}, {dim1}, {dim2})",
    vjp=(lambda g, out, x, offset, dim1, dim2: diagonal_op(
        g, offset=offset, dim1=dim1, dim2=dim2),), batch=batching.shifted_out_dims)


# ------------------------------------------------------------------- torch's spellings
@public("diagonal", function=True, method=True)
def diagonal(input, offset=0, dim1=0, dim2=1):
    d1 = args.wrap_dim(dim1, input.ndim)
    d2 = args.wrap_dim(dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diagonal_op(input, offset=int(offset), dim1=d1, dim2=d2)


@public("diag_embed", function=True, method=True)
def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    d1 = args.wrap_dim(dim1, input.ndim + 1)
    d2 = args.wrap_dim(dim2, input.ndim + 1)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return diag_embed_op(input, offset=int(offset), dim1=d1, dim2=d2)


@public("diag", function=True, method=True)
def diag(input, diagonal=0):
    if input.ndim == 1:
        return diag_embed_op(input, offset=int(diagonal), dim1=0, dim2=1)
    if input.ndim != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    return clone(diagonal_op(input, offset=int(diagonal), dim1=0, dim2=1))


@public("diagflat", function=True, method=True)
def diagflat(input, offset=0):
    return diag_embed_op(reshape(input, -1), offset=int(offset), dim1=0, dim2=1)


# ------------------------------------------------------------------- numpy's spellings
def _numpy_diagonal(a, offset=0, axis1=0, axis2=1):
    x = args.value(a)
    d1, d2 = args.axes(axis1, x.ndim)[0], args.axes(axis2, x.ndim)[0]
    if x.ndim < 2 or d1 == d2:
        raise ValueError("axis1 and axis2 cannot be the same" if x.ndim >= 2 else
                         "diag requires an array of at least two dimensions")
    return diagonal_op(x, offset=int(offset), dim1=d1, dim2=d2)


def _numpy_diag(v, k=0):
    x = args.value(v)
    if x.ndim == 1:
        return diag_embed_op(x, offset=int(k), dim1=0, dim2=1)
    if x.ndim != 2:
        raise ValueError("Input must be 1- or 2-d.")
    return diagonal_op(x, offset=int(k), dim1=0, dim2=1)


def _numpy_diagflat(v, k=0):
    return diag_embed_op(reshape(args.value(v), -1), offset=int(k), dim1=0, dim2=1)


public("numpy_diagonals", numpy={np.diagonal: _numpy_diagonal, np.diag: _numpy_diag,
                                 np.diagflat: _numpy_diagflat})(_numpy_diagonal)

