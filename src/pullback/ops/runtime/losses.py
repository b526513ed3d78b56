"""Softmax, log_softmax and nll_loss as generated code calls them (the max shift,
the picking by target).

>>> x = np.array([[1.0, 2.0, 3.0]], np.float32)
>>> log_softmax(x, 1)
array([[-2.4076061, -1.407606 , -0.407606 ]], dtype=float32)
>>> float(nll_loss(log_softmax(x, 1), np.array([2]), None, -100, "mean"))
0.40760600566864014
"""

from __future__ import annotations

import numpy as np

from ..cross_entropy import _nll, _nll_backward, _picked
from ..cross_entropy import softmax_nll_backward as softmax_nll_backward  # (plain numpy: rt's)
from ..kernels.summation import PAIRWISE_BLOCK, sum_of
from .reductions import c_order


def softmax(x, axis):
    """exp(x - max) normalized along ``axis`` (the max shift keeps exp finite)."""
    if not x.size:
        return x.copy()
    e = x - x.max(axis=axis, keepdims=True)
    e = np.exp(e, out=e) if x.ndim else np.exp(e)  # (0-d: e is a numpy scalar)
    # (a row of at most PAIRWISE_BLOCK: numpy's own sum, as sum_of's)
    e /= (e.sum(axis=axis, keepdims=True) if x.ndim and x.shape[axis] <= PAIRWISE_BLOCK
          else sum_of(e, axis, keepdims=True))
    return c_order(e)


def log_softmax(x, axis):
    """x - logsumexp(x) along ``axis``, shifted by the max."""
    if not x.size:
        return x.copy()
    s = x - x.max(axis=axis, keepdims=True)
    e = np.exp(s)  # (a row of at most PAIRWISE_BLOCK: numpy's own sum, as sum_of's)
    s -= np.log(e.sum(axis=axis, keepdims=True) if x.ndim and x.shape[axis] <= PAIRWISE_BLOCK
                else sum_of(e, axis, keepdims=True))
    return c_order(s)


def bce_logits(x, y):
    """(1 - y) x + log1p(exp(-|x|)) + max(-x, 0) elementwise: binary cross-entropy of
    logits x, stable for either sign of x, summed in that order; in two new arrays where
    x and y are arrays of one shape and dtype (one per term otherwise)."""
    if not (type(x) is type(y) is np.ndarray and x.ndim and x.shape == y.shape
            and x.dtype == y.dtype):
        return (1 - y) * x + np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)
    out = np.subtract(1, y)
    out *= x
    t = np.abs(x)
    np.negative(t, out=t)
    np.exp(t, out=t)
    np.log1p(t, out=t)
    out += t
    out -= np.minimum(x, 0, out=t)  # (+ max(-x, 0): the same bits, one pass fewer)
    return out


def nll_loss(logp, target, weight, ignore_index, reduction):
    """-logp[i, target[i]] for each row of a (rows, classes) ``logp``, its mean or sum;
    any other case (class weights, a target equal to ``ignore_index`` or negative, no
    reduction) as pullback's own nll_loss."""
    if weight is not None or logp.ndim != 2 or not target.size or reduction == "none" or \
            0 <= ignore_index < logp.shape[1]:
        return _nll(logp, target, weight, ignore_index, reduction)
    return nll_rows(logp, target, ignore_index, reduction)


def nll_rows(logp, target, ignore_index, reduction):
    """nll_loss's common case, as the template finds it when traced: a (rows, classes)
    ``logp``, no class weights, ``ignore_index`` no class, a mean or a sum. Only a
    negative target (``ignore_index``'s, or out of range) takes the general path."""
    if target[target.argmin()] < 0:  # (argmin: a third of np.min's time on a batch)
        return _nll(logp, target, None, ignore_index, reduction)
    picked = _picked(logp, target)  # (torch's error for a target past the classes)
    if reduction == "sum":
        return -picked.sum()
    return -picked.sum() / target.size if logp.dtype.itemsize >= 4 else np.mean(-picked)


def nll_backward(g, target, weight, shape, ignore_index, reduction):
    """nll_loss's gradient: -g (over the rows, for a mean) at each row's target, zeros
    elsewhere (any other case as nll_loss's)."""
    if weight is not None or len(shape) != 2 or not target.size or reduction == "none" or \
            0 <= ignore_index < shape[1]:
        return _nll_backward(g, target, weight, shape, ignore_index, reduction)
    return nll_rows_backward(g, target, shape, ignore_index, reduction)


def nll_rows_backward(g, target, shape, ignore_index, reduction):
    """nll_rows's gradient (its case decided when traced, a negative target excepted)."""
    if target[target.argmin()] < 0:
        return _nll_backward(g, target, None, shape, ignore_index, reduction)
    out = np.zeros(shape, np.result_type(g))
    out[np.arange(target.size), target] = -g / target.size if reduction == "mean" else -g
    return out


def class_one_hot(labels, num_classes):
    """int64 one-hot rows of class ``labels`` (torch's one_hot and its errors)."""
    if labels.size and labels.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if labels.size and labels.max() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    return (labels[..., None] == np.arange(num_classes)).astype(np.int64)
