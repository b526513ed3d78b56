"""Embedding lookups' gradients and embedding_bag (pullback's own numpy forwards)."""

from __future__ import annotations

import numpy as np

from ..embedding import _embedding_bag, _embedding_bag_backward, _max_gather, _renorm_scale


def embedding_backward(g, indices, num_weights, padding_idx):
    """The gradient of the rows looked up at ``indices``: each row of ``g`` added into
    its row of a zero table, the ``padding_idx`` row kept 0."""
    d = g.shape[-1] if g.ndim else 1
    out = np.zeros((num_weights, d), g.dtype)
    np.add.at(out, indices.reshape(-1), np.reshape(g, (indices.size, -1)))
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def embedding_bag(w, indices, offsets, mode, padding_idx, include_last_offset):
    """Each bag's rows of ``w`` combined by ``mode`` ("sum", "mean" or "max"); the bags
    are ``indices``' rows (2-d) or start at ``offsets`` (1-d)."""
    return _embedding_bag(w, indices, offsets, mode, padding_idx, include_last_offset)


def embedding_bag_backward(g, w, indices, offsets, mode, padding_idx, include_last_offset):
    """embedding_bag's gradient for ``w``: each bag's row of ``g`` added to the rows it
    looked up (divided by the bag's size for "mean"; at the maxima for "max")."""
    return _embedding_bag_backward(g, w, indices, offsets, mode, padding_idx,
                                   include_last_offset)


def embedding_bag_max_gather(gw, w, indices, offsets, mode, padding_idx, include_last_offset):
    """The transpose of max mode's backward: each bag's entries of ``gw`` at its maxima."""
    return _max_gather(gw, w, indices, offsets, mode, padding_idx, include_last_offset)


def renorm_scale(w, indices, max_norm, norm_type):
    """Per row of ``w``: max_norm / (norm + 1e-7) for the rows looked up whose norm is
    above max_norm, else 1 (torch's embedding_renorm_)."""
    return _renorm_scale(w, indices, max_norm, norm_type)
