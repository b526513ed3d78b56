"""Scatters, index writes and masks: torch's addressing, and the gradients of
indexing (zeros with the gradient written or added at the index)."""

from __future__ import annotations

import numpy as np

# (the mask ops' own plain-numpy forwards and adjoints, shipped by pb.export)
from ..masking import _masked_scatter as masked_scatter
from ..masking import _masked_scatter_backward as masked_scatter_backward
from ..masking import _masked_select as masked_select
from ..masking import _masked_select_backward as masked_select_backward

__all__ = ["masked_select", "masked_select_backward", "masked_scatter",
           "masked_scatter_backward", "scatter", "scatter_add", "scatter_reduced",
           "scatter_reduce", "put_along", "index_copy", "index_add", "zeros_set", "zeros_add",
           "index_put", "diagonal_set"]


def _index_at(index, axis):
    """The advanced index that puts ``index`` at ``axis`` and counts along the other dims
    (torch's scatter/gather addressing)."""
    where = list(np.indices(np.shape(index), sparse=True))
    where[axis] = index
    return tuple(where)


def scatter(x, index, src, axis):
    """A copy of ``x`` with ``src`` (an array or a scalar) written at ``index`` along
    ``axis``."""
    out = np.array(x, copy=True, order="C")
    out[_index_at(index, axis)] = src
    return out


def scatter_add(x, index, src, axis):
    """A copy of ``x`` with ``src`` added at ``index`` along ``axis`` (repeats add up)."""
    out = np.array(x, copy=True, order="C")
    np.add.at(out, _index_at(index, axis), src)
    return out


def scatter_reduced(x, index, src, axis, reduce):
    """torch's legacy ``scatter(..., reduce="add"|"multiply")``: ``src`` accumulated into
    a copy of ``x``."""
    out = np.array(x, copy=True)
    vals = src[tuple(slice(0, n) for n in np.shape(index))] if np.ndim(src) else src
    (np.add if reduce == "add" else np.multiply).at(out, _index_at(index, axis), vals)
    return out


def scatter_reduce(x, index, src, axis, reduce, include_self):
    """torch's scatter_reduce: ``src`` combined by ``reduce`` ("sum", "prod", "mean",
    "amax", "amin") into a copy of ``x`` at ``index`` along ``axis``, ``x``'s own value
    taking part where ``include_self``."""
    out = np.array(x, copy=True, order="C")
    at = _index_at(index, axis)
    if not include_self:
        out[at] = {"sum": 0, "prod": 1, "mean": 0, "amax": -np.inf, "amin": np.inf}[reduce]
    ufunc = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum,
             "amin": np.minimum}[reduce]
    ufunc.at(out, at, src)
    if reduce == "mean":
        count = np.zeros(out.shape, out.dtype) + (1 if include_self else 0)
        np.add.at(count, at, 1)
        out = np.where(count > 0, out / np.maximum(count, 1), out)
    return out


def put_along(src, index, axis, shape):
    """Zeros of ``shape`` with ``src`` added at ``index`` along ``axis``."""
    out = np.zeros(shape, dtype=np.result_type(src))
    np.add.at(out, _index_at(index, axis), src)
    return out


def index_copy(x, axis, index, value):
    """A copy of ``x`` with ``value`` written at ``index`` of ``axis``
    (``out[:, index] = value`` for axis 1)."""
    out = np.array(x, copy=True, order="C")
    out[(slice(None),) * axis + (index,)] = value
    return out


def index_add(x, axis, index, value):
    """A copy of ``x`` with ``value`` added at ``index`` of ``axis`` (repeats add up)."""
    out = np.array(x, copy=True, order="C")
    np.add.at(out, (slice(None),) * axis + (index,), value)
    return out


def zeros_set(shape, index, value):
    """Zeros of ``shape`` (``value``'s dtype) with ``value`` written at ``index`` (a basic
    index: the gradient of a view)."""
    out = np.zeros(shape, dtype=np.result_type(value))
    out[index] = value
    return out


def zeros_add(shape, index, value):
    """Zeros of ``shape`` with ``value`` added at ``index`` (advanced indexing's gradient:
    repeated indices add up)."""
    out = np.zeros(shape, dtype=np.result_type(value))
    np.add.at(out, index, value)
    return out


def index_put(x, index, value):
    """A copy of ``x`` with ``value`` written at ``index`` (``x[index] = value``)."""
    out = np.array(x, copy=True)
    out[index] = value
    return out


def diagonal_set(shape, value, offset, axis1, axis2):
    """Zeros of ``shape`` with ``value`` on the diagonal (``offset``, ``axis1``,
    ``axis2``): diag_embed, and diagonal's gradient."""
    out = np.zeros(shape, dtype=np.result_type(value))
    diagonal = np.diagonal(out, offset, axis1, axis2)
    diagonal.flags.writeable = True  # (a view of out, which numpy hands out read-only)
    diagonal[...] = value
    return out
