"""Reductions one numpy call cannot say: logsumexp's max shift, the product of the
others, normalization over axes; and ``c_order``, the layout every helper returns."""

from __future__ import annotations

import numpy as np

from ..kernels.summation import sum_of
from ..norms import _renorm as renorm  # noqa: F401 (the op's own: plain numpy)
from ..reductions import fast_mean


def c_order(a):
    """``a`` laid out C-contiguous (itself when it is, as a 0-d array always is, or when
    it is another library's array, which has no layout to read: Dask's)."""
    try:
        if a.flags.c_contiguous:
            return a
    except AttributeError:  # (no layout to read)
        return a
    return np.ascontiguousarray(a)


def logsumexp(x, axis, keepdims):
    """log(sum(exp(x))) along ``axis`` (an int, a tuple, or None: every axis), shifted by
    the max, which counts as 0 where it is infinite (all -inf gives -inf, an inf inf)."""
    if x.size:
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isinf(m), 0, m)
    else:
        m = np.zeros([1 if axis is None or i in np.atleast_1d(axis) else n
                      for i, n in enumerate(x.shape)], x.dtype)
    s = np.log(sum_of(np.exp(x - m), axis, True)) + m
    if not keepdims:
        s = np.squeeze(s, axis=axis)
    return c_order(s)


def prod_others(x, axis):
    """The product of the other elements of each slice along ``axis``, at each element
    (Q / x without zeros; Q, the product of the nonzero ones, at a slice's only zero)."""
    zero = x == 0
    y = np.where(zero, 1, x)
    q = np.prod(y, axis=axis, keepdims=True)
    zeros = np.sum(zero, axis=axis, keepdims=True)
    return np.where(zeros == 0, q / y, np.where(zero & (zeros == 1), q, 0)).astype(q.dtype,
                                                                                  copy=False)


def normalize(x, axes, eps):
    """(x - mean) / sqrt(var + eps) over ``axes`` (layer, batch and group norm)."""
    mu = fast_mean(x, axis=axes, keepdims=True)
    xc = x - mu
    var = fast_mean(xc * xc, axis=axes, keepdims=True)
    return xc / np.sqrt(var + x.dtype.type(eps))
