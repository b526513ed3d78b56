"""Scatters, index writes and masks: torch's addressing, and the gradients of
indexing (zeros with the gradient written or added at the index)."""

from __future__ import annotations

import numpy as np


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


def masked_select(x, mask):
    """The elements of ``x`` where ``mask`` is true (the two broadcast), in order."""
    xb, mb = np.broadcast_arrays(x, mask)
    return xb[mb]


def masked_select_backward(g, mask, shape):
    """``g`` put back at the mask's places, zeros elsewhere, in the broadcast shape of
    ``shape`` and the mask."""
    full = np.broadcast_shapes(tuple(shape), np.shape(mask))
    out = np.zeros(full, dtype=np.result_type(g))
    out[np.broadcast_to(mask, full)] = g
    return out


def masked_scatter(x, mask, source):
    """A copy of ``x`` with the mask's places filled, in order, from ``source``."""
    out = np.array(x, copy=True, order="C")
    m = np.broadcast_to(mask, out.shape)
    out[m] = np.reshape(source, -1)[:int(m.sum())]
    return out


def masked_scatter_backward(g, mask, shape):
    """The source's gradient: ``g`` at the mask's places, in order, then zeros, in the
    source's ``shape``."""
    picked = np.asarray(g)[np.broadcast_to(mask, np.shape(g))]
    out = np.zeros(int(np.prod(shape)), dtype=np.result_type(g))
    out[:picked.size] = picked
    return out.reshape(shape)
