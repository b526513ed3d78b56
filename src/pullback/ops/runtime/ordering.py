"""Sorting in torch's order (stable, NaN first when descending), topk and medians."""

from __future__ import annotations

import numpy as np

from ..cumulative import _cummax as cummax  # (the ops' own: plain numpy)
from ..cumulative import _cummin as cummin
from ..ordering import _lower_median as median  # (the op's own: plain numpy)
from ..ordering import _lower_nanmedian as nanmedian
from ..ordering import _nanmedians as nanmedian_along
from ..torch_statistics import _mode_index as mode_index
from .reductions import c_order

__all__ = ["stable_order", "sort", "topk", "argsort_descending", "median", "argmedian",
           "median_along", "cummax", "cummin", "nanmedian", "nanmedian_along", "mode_index"]


def stable_order(x, axis, descending=False):
    """The indices that sort ``x`` along ``axis``, stably (torch's order: descending keeps
    equal elements in their order and puts NaN first)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable")
    flipped = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
    return np.flip(x.shape[axis] - 1 - flipped, axis)


def sort(x, axis, descending):
    """(values, indices) of ``x`` sorted along ``axis`` (None: a 0-d ``x``)."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    index = stable_order(x, axis, descending)
    return np.ascontiguousarray(np.take_along_axis(x, index, axis)), index


def topk(x, k, axis, largest):
    """(values, indices) of the ``k`` largest (or smallest) along ``axis``, in order."""
    if x.ndim == 0:
        return x.copy(), np.zeros((), np.int64)
    index = np.ascontiguousarray(np.take(stable_order(x, axis, largest), np.arange(k), axis))
    return np.take_along_axis(x, index, axis), index


def argsort_descending(x, axis):
    """torch's argsort(descending=True): NaN first, then by -x, equal elements in their
    order (lexsort's last key first, over the axis moved to the end)."""
    key = -x.astype(np.float64) if x.dtype.kind in "biu" else -x
    if x.dtype.kind not in "fc":
        return np.argsort(key, axis=axis, kind="stable")
    nan = np.isnan(x)
    keys = (np.moveaxis(np.where(nan, 0, key), axis, -1), np.moveaxis(~nan, axis, -1))
    return np.ascontiguousarray(np.moveaxis(np.lexsort(keys, axis=-1), -1, axis))


def argmedian(x, axis, keepdims):
    """The index of the lower median along ``axis`` (the first NaN's, if there is one;
    among equal elements the first)."""
    order = np.argsort(x, axis=axis, kind="stable")
    index = np.take(order, [(x.shape[axis] - 1) // 2], axis=axis)
    if x.dtype.kind in "fc":
        nan = np.isnan(x)
        index = np.where(nan.any(axis=axis, keepdims=True),
                         np.argmax(nan, axis=axis, keepdims=True), index)
    return c_order(index if keepdims else np.squeeze(index, axis))


def median_along(x, axis, keepdims):
    """(values, indices) of the lower median along ``axis``."""
    index = argmedian(x, axis, keepdims)
    at = index if keepdims else np.expand_dims(index, axis)
    values = np.take_along_axis(x, at, axis=axis)
    return c_order(values if keepdims else np.squeeze(values, axis)), index
