"""numpy's statistics functions by their numpy names on Tensors and in ``pb.grad``,
composed of existing ops (so their gradients, tangents, batching and generated code
are those ops'): ``average``, ``cov``, ``corrcoef``, ``quantile`` / ``percentile`` and
their NaN-ignoring forms, ``nanmedian``, ``nanmax`` / ``nanmin``, ``nanvar`` /
``nanstd``, ``nanprod``, ``nancumsum`` / ``nancumprod``, ``ptp``, ``bincount`` and
``histogram``.

- Arguments numpy refuses go to numpy, which raises its own error; so do forms not
  covered here (``out=``, ``where=``, quantile ``weights=``), refused when a gradient
  would be lost.
- quantile's methods: linear (the default), lower, higher, nearest and midpoint; the
  value at a fractional position is numpy's two-sided interpolation of the two
  neighbours of the sorted slice (the gradient splits between them).
- numpy's RuntimeWarnings (an all-NaN slice, no degrees of freedom) are not repeated:
  the values are numpy's (NaN).
- ``histogram``: the counts do not depend differentiably on the data, so it runs on the
  values and returns numpy's results (as torch.histogram's have no gradient), bin edges
  included, also from a ``range`` that requires grad; with ``weights`` that require
  grad, the counts (and densities) are sums of the weights, differentiable in them.
- ``bincount`` is differentiable in its ``weights`` (a sum per bin, in float64).
- ``nanmedian`` is numpy's: the mean of the two middle values for an even count, each
  taking half the gradient (torch.nanmedian takes the lower one, all the gradient);
  a tie's gradient goes to the element the sort puts at the middle.

>>> import numpy as np, pullback as pb
>>> x = pb.tensor([3., 1., 4., 1., 5.], requires_grad=True)
>>> np.quantile(x, 0.25)
tensor(1., grad_fn=<ViewBackward0>)
>>> np.average(x, weights=[1., 1., 0., 0., 2.])
tensor(3.5000, dtype=pullback.float64, grad_fn=<DivBackward0>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cumulative import _numpy_cumulative, cumprod_op, cumsum_op
from .elementwise import (
    clamp,
    clone,
    conj,
    is_complex,
    isnan,
    logical_not,
    real,
    sqrt,
    to_dtype,
    where,
)
from .indexing import index_add, take_along_dim
from .joining import cat
from .linalg import matmul
from .pointwise import floor
from .reductions import _numpy_max, _numpy_mean, _numpy_min, _numpy_sum
from .selection import _numpy_sort
from .shape import detach, expand, permute_op, reshape
from .statistics import _numpy_prod, _numpy_var_std, std_op, var_op
from .table import args
from .table.registry import is_traced, public


def _kind(x: Any) -> str:
    return np.dtype(args.np_dtype(x)).kind


def _nan_filled(a: Any, fill: float) -> Any:
    """``a`` with its NaNs as ``fill`` (itself when it cannot hold a NaN)."""
    x = args.value(a)
    return where(isnan(x), fill, x) if _kind(x) in "fc" else x


def _real_dtype(x: Any) -> np.dtype:
    d = np.dtype(args.np_dtype(x))
    return np.dtype(d.char.lower()) if d.kind == "c" else d


# ------------------------------------------------------------ NaN-ignoring reductions
def _nan_extreme(extreme: Any, fill: float) -> Any:
    def nan_extreme(a, axis=None, out=None, keepdims=False, **rest):
        """The extreme of the elements that are not NaN (NaN where all are; ties
        share the gradient, as np.max's)."""
        args.plain(out, **rest)
        x = args.value(a)
        if _kind(x) not in "fc":
            return extreme(x, axis, keepdims=keepdims)
        nan = isnan(x)
        m = extreme(where(nan, fill, x), axis, keepdims=keepdims)
        return where(_numpy_sum(logical_not(nan), axis, keepdims=keepdims) == 0, np.nan, m)
    return nan_extreme


for _name, _fn, _impl in (("nanmax", np.nanmax, _nan_extreme(_numpy_max, -np.inf)),
                          ("nanmin", np.nanmin, _nan_extreme(_numpy_min, np.inf))):
    public(_name, numpy={_fn: _impl})(_impl)


def _numpy_nanprod(a, axis=None, dtype=None, out=None, keepdims=False, **rest):
    return _numpy_prod(_nan_filled(a, 1), axis, dtype, out, keepdims, **rest)


def _numpy_nancumsum(a, axis=None, dtype=None, out=None):
    return _numpy_cumulative(cumsum_op, _nan_filled(a, 0), axis, dtype, out)


def _numpy_nancumprod(a, axis=None, dtype=None, out=None):
    return _numpy_cumulative(cumprod_op, _nan_filled(a, 1), axis, dtype, out)


public("nanprod", numpy={np.nanprod: _numpy_nanprod})(_numpy_nanprod)
public("nancumsum", numpy={np.nancumsum: _numpy_nancumsum})(_numpy_nancumsum)
public("nancumprod", numpy={np.nancumprod: _numpy_nancumprod})(_numpy_nancumprod)


def _numpy_nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **rest):
    """numpy's nanvar: the mean of the squared deviations of the elements that are not
    NaN, over their count less ``ddof`` (NaN where that is not positive)."""
    args.plain(out, **rest)
    x = args.value(a)
    if _kind(x) not in "fc":
        return _numpy_var_std(var_op)(x, axis, dtype, ddof=ddof, keepdims=keepdims)
    x = x if dtype is None else to_dtype(x, dtype)
    keep = logical_not(isnan(x))
    n = to_dtype(_numpy_sum(keep, axis, keepdims=True), _real_dtype(x))
    d = where(keep, x - _numpy_sum(where(keep, x, 0), axis, keepdims=True) / n, 0)
    dof = to_dtype(_numpy_sum(keep, axis, keepdims=keepdims), _real_dtype(x)) - ddof
    bad = dof <= 0
    s = _numpy_sum(real(d * conj(d)) if is_complex(d) else d * d, axis, keepdims=keepdims)
    return where(bad, np.nan, s / where(bad, 1, dof))


def _numpy_nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **rest):
    """sqrt(nanvar), with a zero gradient where the variance is 0 (as np.std's)."""
    args.plain(out, **rest)
    if _kind(args.value(a)) not in "fc":
        return _numpy_var_std(std_op)(a, axis, dtype, ddof=ddof, keepdims=keepdims)
    v = _numpy_nanvar(a, axis, dtype, None, ddof, keepdims)
    zero = v == 0
    return where(zero, 0, sqrt(where(zero, 1, v)))


public("nanvar", numpy={np.nanvar: _numpy_nanvar})(_numpy_nanvar)
public("nanstd", numpy={np.nanstd: _numpy_nanstd})(_numpy_nanstd)


def _numpy_ptp(a, axis=None, out=None, keepdims=False):
    """max - min (np.max's and np.min's gradients)."""
    args.plain(out)
    return _numpy_max(a, axis, keepdims=keepdims) - _numpy_min(a, axis, keepdims=keepdims)


public("ptp", numpy={np.ptp: _numpy_ptp})(_numpy_ptp)


# ------------------------------------------------------------------ average, cov
def _numpy_average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """numpy's average: the mean, or sum(a * w) / sum(w), differentiable in both; the
    sum of weights that is zero is read (a guard under pb.grad) for numpy's error."""
    x = args.value(a)
    order = None
    if axis is not None:  # numpy's order of the axes (the weights' axes follow it)
        args.axes(axis, x.ndim)
        order = tuple(ax % max(x.ndim, 1) for ax in (
            axis if isinstance(axis, (tuple, list)) else (axis,)))
    if weights is None:
        avg = _numpy_mean(x, order, keepdims=keepdims)
        scl = np.asarray(int(np.prod(x.shape)) / max(int(np.prod(avg.shape)), 1),
                         np.dtype(args.np_dtype(avg)))
    else:
        w = args.value(weights)
        dtype = np.result_type(args.np_dtype(x), args.np_dtype(w),
                               *(["f8"] if _kind(x) in "biu" else []))
        if tuple(np.shape(w)) != tuple(x.shape):
            if order is None or tuple(np.shape(w)) != tuple(x.shape[ax] for ax in order):
                raise args.Unsupported  # numpy's TypeError or ValueError
            w = permute_op(w, dims=tuple(int(i) for i in np.argsort(order))) \
                if is_traced(w) else np.transpose(w, np.argsort(order))
            w = reshape(w, tuple(s if ax in order else 1 for ax, s in enumerate(x.shape)))
        w = to_dtype(w, dtype)
        scl = _numpy_sum(w, order, keepdims=keepdims)
        if bool(_numpy_sum(scl == 0) > 0):  # (a guard of the trace when traced)
            raise args.Unsupported  # numpy's ZeroDivisionError
        avg = _numpy_sum(to_dtype(x, dtype) * w, order, keepdims=keepdims) / scl
    if not returned:
        return avg
    if tuple(np.shape(scl)) != tuple(avg.shape):
        scl = clone(expand(scl, shape=tuple(avg.shape))) if is_traced(scl) else \
            np.broadcast_to(scl, tuple(avg.shape)).copy()
    return avg, scl


public("average", numpy={np.average: _numpy_average})(_numpy_average)


def _rows(v: Any, rowvar: bool, dtype: np.dtype) -> Any:
    """``v`` as a 2-d array of variables by rows, in ``dtype``."""
    v = to_dtype(args.value(v), dtype)
    if v.ndim > 2:
        raise args.Unsupported  # numpy's ValueError
    if v.ndim < 2:
        return reshape(v, (1, -1))
    return v if rowvar else permute_op(v, dims=(1, 0))


def _numpy_cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
               *, dtype=None):
    """numpy's cov: the deviations from the (weighted) means, times their transposed
    conjugate, over the degrees of freedom."""
    if ddof is not None and ddof != int(ddof) or is_traced(fweights):
        raise args.Unsupported  # numpy's ValueError (fweights: integers, no gradient)
    if dtype is None:
        dtype = np.result_type(*(args.np_dtype(v) for v in (m, y) if v is not None),
                               np.float64)
    X = _rows(m, rowvar or np.ndim(m) == 1, np.dtype(dtype))
    if X.shape[0] == 0:
        raise args.Unsupported  # numpy's empty result
    if y is not None:
        Y = _rows(y, rowvar or np.ndim(y) == 1 or np.shape(y)[0] == 1, np.dtype(dtype))
        X = cat([X, Y], dim=0)
    ddof = (1 if not bias else 0) if ddof is None else int(ddof)
    w = _sample_weights(fweights, aweights, X.shape[1])
    avg, w_sum = _numpy_average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = X.shape[1] - ddof
    elif ddof == 0:
        fact = w_sum
    elif aweights is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * _numpy_sum(w * args.value(aweights)) / w_sum
    if bool(fact <= 0):  # numpy warns and divides by 0
        raise args.Unsupported
    X = X - reshape(avg, (-1, 1))
    X_T = permute_op(X if w is None else X * w, dims=(1, 0))
    c = matmul(X, conj(X_T)) * (1 / fact) if not is_traced(fact) else \
        matmul(X, conj(X_T)) / fact
    return reshape(c, tuple(s for s in c.shape if s != 1))


def _sample_weights(fweights: Any, aweights: Any, n: int) -> Any:
    """fweights times aweights (None when neither is given), checked as numpy checks
    them (numpy's error where they fail: Unsupported)."""
    w = None
    for k, given in enumerate((fweights, aweights)):
        if given is None:
            continue
        v = to_dtype(args.value(given), np.float64)
        if np.ndim(v) != 1 or v.shape[0] != n or bool(_numpy_sum(v < 0) > 0) or (
                k == 0 and not np.all(np.around(v) == v)):
            raise args.Unsupported
        w = v if w is None else w * v
    return w


public("cov", numpy={np.cov: _numpy_cov})(_numpy_cov)


def _numpy_corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """cov over the outer product of the standard deviations, clipped to [-1, 1] as
    numpy's (and torch's); real values only."""
    c = _numpy_cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c
    d = take_along_dim(reshape(c, -1), np.arange(0, c.shape[0] ** 2, c.shape[0] + 1))
    s = sqrt(real(d) if is_complex(d) else d)
    c = c / reshape(s, (-1, 1)) / reshape(s, (1, -1))
    if is_complex(c):
        raise args.Unsupported  # (numpy clips both parts)
    return clamp(c, -1, 1)


public("corrcoef", numpy={np.corrcoef: _numpy_corrcoef})(_numpy_corrcoef)


# ------------------------------------------------------------------ quantiles
_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")


def _positions(n: Any, q: np.ndarray, method: str) -> tuple:
    """(previous, next, gamma) of numpy's quantile method for ``n`` elements: indices
    into the sorted slice and the weight of the next one."""
    v = (n - 1) * q
    if method == "lower":
        v = floor(v) if is_traced(v) else np.floor(v)
    elif method == "higher":
        v = -floor(-v) if is_traced(v) else np.ceil(v)
    elif method == "nearest":
        v = _round_half_even(v)
    prev = floor(v) if is_traced(v) else np.floor(v)
    gamma = v - prev
    if method == "midpoint":
        gamma = where(gamma == 0, 0.0, 0.5) if is_traced(gamma) else \
            np.where(gamma == 0, 0.0, 0.5)
    return prev, prev + 1, gamma


def _round_half_even(v: Any) -> Any:
    if not is_traced(v):
        return np.around(v)
    f = floor(v)
    up = (v - f > 0.5) | ((v - f == 0.5) & (f - 2 * floor(f / 2) == 1))
    return where(up, f + 1, f)


def _lerp(a: Any, b: Any, t: Any, dtype: np.dtype) -> Any:
    """numpy's two-sided interpolation (from b where t >= 0.5), the difference taken
    in the values' dtype and the rest in ``dtype``, as numpy's."""
    d = to_dtype(b - a, dtype)
    a, b = to_dtype(a, dtype), to_dtype(b, dtype)
    if not is_traced(t) and (np.all(t >= 0.5) or np.all(t < 0.5)):  # one side only
        return b - d * (1 - t) if np.all(t >= 0.5) else a + d * t
    return where(t >= 0.5, b - d * (1 - t), a + d * t)


def _by_first_axis(x: Any, axis: Any) -> tuple:
    """``x`` with the reduced axes flattened into a first one, and the kept shape."""
    found = args.axes(axis, x.ndim)
    if found is None:
        return reshape(x, (-1,)), ()
    kept = [i for i in range(x.ndim) if i not in found]
    moved = permute_op(x, dims=tuple(found) + tuple(kept))
    return reshape(moved, (-1,) + tuple(x.shape[i] for i in kept)), tuple(
        x.shape[i] for i in kept)


def _quantile(a, q, axis, out, method, keepdims, rest, nan, weak=None):
    args.plain(out, **rest)
    x = args.value(a)
    weak = type(q) in (int, float) if weak is None else weak  # numpy's weak scalar
    qa = np.asanyarray(q)
    if is_traced(q) or method not in _METHODS or _kind(x) not in "iuf" or qa.dtype.kind \
            not in "biuf" or not (np.all(qa >= 0) and np.all(qa <= 1)) or x.size == 0:
        raise args.Unsupported  # numpy's error, or a form not covered here
    dtype = np.dtype(args.np_dtype(x)) if method in ("lower", "higher", "nearest") else \
        np.result_type(args.np_dtype(x), 0.5 if weak else qa.dtype)
    flat, kept = _by_first_axis(x, axis)
    s = _numpy_sort(flat, axis=0)
    qf = qa.reshape((-1,) + (1,) * len(kept)).astype(  # (numpy's positions: in q's dtype)
        qa.dtype if qa.dtype.kind == "f" else np.float64)
    if nan and _kind(x) == "f":
        y = _nan_quantile(s, qf, method, dtype)
    else:
        prev, nxt, gamma = _positions(s.shape[0], qf, method)
        top, at = s.shape[0] - 1, (qf.shape[0],) + kept
        lo = np.broadcast_to(np.clip(prev, 0, top).astype(np.int64), at)
        hi = np.broadcast_to(np.clip(nxt, 0, top).astype(np.int64), at)
        y = _pick(s, lo, hi, gamma, method, dtype)
        if _kind(x) == "f":  # a slice holding a NaN: NaN (numpy's last sorted element)
            last = s[-1]
            y = where(isnan(last), to_dtype(last, dtype), y)
    reduced = args.axes(axis, x.ndim)
    shape = qa.shape + (kept if not keepdims else tuple(
        1 if reduced is None or i in reduced else n for i, n in enumerate(x.shape)))
    return reshape(y, shape)


def _pick(s, lo, hi, gamma, method, dtype):
    a = take_along_dim(s, np.ascontiguousarray(lo) if not is_traced(lo) else lo, 0)
    if method in ("lower", "higher", "nearest"):
        return a
    b = take_along_dim(s, np.ascontiguousarray(hi) if not is_traced(hi) else hi, 0)
    t = to_dtype(gamma, dtype) if is_traced(gamma) else np.asarray(gamma, dtype)
    return _lerp(a, b, t, dtype)


def _nan_quantile(s, qf, method, dtype):
    """Per slice, the quantile of its elements that are not NaN (sorted first): the
    positions from each slice's count; NaN where all are NaN."""
    k = _numpy_sum(logical_not(isnan(s)), 0, keepdims=True)  # (1, *kept)
    prev, nxt, gamma = _positions(to_dtype(k, qf.dtype), qf, method)
    top = k - 1
    lo = to_dtype(clamp(prev, 0, None), np.int64)
    lo = where(lo > top, top, lo)
    hi = to_dtype(where(nxt > top, top, nxt), np.int64)
    lo, hi = where(lo < 0, 0, lo), where(hi < 0, 0, hi)
    y = _pick(s, lo, hi, gamma, method, dtype)
    return where(k == 0, np.nan, y)


def _numpy_quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                    keepdims=False, **rest):
    """The sorted slice's elements at numpy's positions for ``q`` (a constant),
    interpolated (linear, midpoint) or picked (lower, higher, nearest)."""
    return _quantile(a, q, axis, out, method, keepdims, rest, nan=False)


def _numpy_percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                      keepdims=False, **rest):
    return _quantile(a, _hundredth(q), axis, out, method, keepdims, rest, nan=False,
                     weak=type(q) in (int, float))


def _numpy_nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                       keepdims=False, **rest):
    return _quantile(a, q, axis, out, method, keepdims, rest, nan=True)


def _numpy_nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                         keepdims=False, **rest):
    return _quantile(a, _hundredth(q), axis, out, method, keepdims, rest, nan=True,
                     weak=type(q) in (int, float))


def _hundredth(q: Any) -> Any:
    if is_traced(q):
        raise args.Unsupported
    return np.true_divide(q, 100)


for _name, _fn, _impl in (("quantile", np.quantile, _numpy_quantile),
                          ("percentile", np.percentile, _numpy_percentile),
                          ("nanquantile", np.nanquantile, _numpy_nanquantile),
                          ("nanpercentile", np.nanpercentile, _numpy_nanpercentile)):
    public(_name, numpy={_fn: _impl})(_impl)


def _numpy_nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy's nanmedian: per slice, the mean of the two middle elements that are not
    NaN (the middle one for an odd count; NaN where all are NaN), each taking half the
    gradient, from the slice sorted (NaNs last)."""
    args.plain(out)
    x = args.value(a)
    if _kind(x) not in "iuf" or x.size == 0:
        raise args.Unsupported  # numpy's own forms (complex, empty)
    if axis is not None:
        np.lib.array_utils.normalize_axis_tuple(axis, x.ndim)  # numpy's errors
    if _kind(x) != "f":
        x = to_dtype(x, np.float64)
    flat, kept = _by_first_axis(x, axis)
    s = _numpy_sort(flat, axis=0)
    k = _numpy_sum(logical_not(isnan(s)), 0, keepdims=True)
    lo, hi = (to_dtype(clamp(v, 0, None), np.int64) for v in ((k - 1) // 2, k // 2))
    hi = where(hi > k - 1, lo, hi)
    y = (take_along_dim(s, lo, 0) + take_along_dim(s, hi, 0)) / 2
    y = where(k == 0, np.nan, y)
    reduced = args.axes(axis, x.ndim)
    return reshape(y, kept if not keepdims else tuple(
        1 if reduced is None or i in reduced else n for i, n in enumerate(x.shape)))


public("nanmedian", numpy={np.nanmedian: _numpy_nanmedian})(_numpy_nanmedian)

# ------------------------------------------------------------ bincount, histogram
def _values(x: Any) -> Any:
    """The values of ``x`` (a read of a traced value: a guard of the trace)."""
    return np.asarray(detach(x)) if is_traced(x) else np.asarray(x)


def _numpy_bincount(x, weights=None, minlength=0):
    """numpy's bincount; with weights, their sum per bin (index_add, float64)."""
    if not is_traced(weights):
        raise args.Unsupported  # numpy's own (no gradient to keep)
    index = _values(x)
    counts = np.bincount(index, minlength=minlength)  # numpy's errors
    w = to_dtype(weights, np.float64)
    if tuple(w.shape) != index.shape:
        raise args.Unsupported
    return index_add(np.zeros(counts.shape[0]), 0, index.astype(np.int64), w)


public("bincount", numpy={np.bincount: _numpy_bincount})(_numpy_bincount)


def _numpy_histogram(a, bins=10, range=None, density=None, weights=None):
    """numpy's histogram of the values (no gradient in the data, the bins or the
    range); with weights that require grad, the counts are their sums per bin."""
    data = _values(a)
    if isinstance(bins, (list, tuple)) or is_traced(bins):
        bins = _values(bins)
    if range is not None:
        range = tuple(float(_values(r)) for r in range)
    if not is_traced(weights):
        return np.histogram(data, bins, range, density, weights)
    edges = np.histogram_bin_edges(data, bins, range)
    nb = edges.shape[0] - 1
    flat = data.reshape(-1)
    idx = np.searchsorted(edges, flat, "right") - 1
    idx[flat == edges[-1]] = nb - 1
    inside = np.flatnonzero((flat >= edges[0]) & (flat <= edges[-1]))
    w = reshape(weights, (-1,))
    counts = index_add(np.zeros(nb, args.np_dtype(w)), 0, idx[inside].astype(np.int64),
                       w[inside])
    if density:
        counts = counts / np.diff(edges) / _numpy_sum(counts)
    return counts, edges


public("histogram", numpy={np.histogram: _numpy_histogram})(_numpy_histogram)
