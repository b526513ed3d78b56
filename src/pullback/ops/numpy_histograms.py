"""numpy's histograms of several dimensions with traced arrays: ``histogram2d``,
``histogramdd`` and ``histogram_bin_edges``, as ``histogram`` (numpy_statistics.py).

The counts do not depend differentiably on the samples: numpy runs on the values (a
read: a guard of the trace under ``pb.grad``) and its results come back, bin edges
included (no gradient, as ``histogram``'s, also from a ``range`` or ``bins`` that
require grad). With ``weights`` that require grad, the counts (and densities) are
the sums of the weights per bin (numpy's bins, ``index_add``), differentiable in them.

>>> import numpy as np, pullback as pb
>>> w = pb.tensor([1., 2., 3.], requires_grad=True)
>>> np.histogram2d([0., 1., 1.], [0., 0., 1.], bins=2, weights=w)[0]
tensor([[1., 0.],
        [2., 3.]], dtype=pullback.float64, grad_fn=<ViewBackward0>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import to_dtype
from .indexing import index_add
from .shape import detach, reshape
from .table.registry import is_traced, public


def _values(x: Any) -> Any:
    """The values of ``x`` (a read of a traced value: a guard of the trace); a list
    or tuple of values item by item."""
    if isinstance(x, (list, tuple)):
        return [_values(v) for v in x]
    return np.asarray(detach(x)) if is_traced(x) else x


def _range(r: Any) -> Any:
    return None if r is None else [None if p is None else tuple(float(_values(v)) for v in p)
                                   for p in r]


def _samples(sample: Any) -> np.ndarray:
    """numpy's (N, D) reading of ``histogramdd``'s sample."""
    if isinstance(sample, np.ndarray) and sample.ndim == 2:
        return sample
    return np.atleast_2d(sample).T


def _weighted(sample: np.ndarray, edges: list, weights: Any, density: Any) -> Any:
    """The sums of ``weights`` in numpy's bins (a sample on the last edge in the last
    bin, outside ones in none)."""
    nbins = tuple(e.shape[0] - 1 for e in edges)
    inside = np.ones(sample.shape[0], bool)
    at = []
    for i, e in enumerate(edges):
        k = np.searchsorted(e, sample[:, i], "right") - 1
        k[sample[:, i] == e[-1]] -= 1
        inside &= (k >= 0) & (k < nbins[i])
        at.append(k)
    flat = np.ravel_multi_index(tuple(k[inside] for k in at), nbins) if nbins else at
    w = to_dtype(reshape(weights, (-1,)), np.float64)
    hist = reshape(index_add(np.zeros(int(np.prod(nbins)), np.float64), 0,
                             np.asarray(flat, np.int64), w[np.flatnonzero(inside)]), nbins)
    if density:
        total = np.sum(hist)
        for i, e in enumerate(edges):
            hist = hist / np.reshape(np.diff(e), tuple(-1 if j == i else 1
                                                       for j in range(len(edges))))
        hist = hist / total
    return hist


def _histogramdd(sample, bins=10, range=None, density=None, weights=None):
    data = _values(sample)
    bins = _values(bins) if isinstance(bins, (list, tuple)) or is_traced(bins) else bins
    range = _range(range)
    if not is_traced(weights):
        return np.histogramdd(data, bins, range, density, weights)
    _, edges = np.histogramdd(data, bins, range)  # numpy's bins and errors
    return _weighted(_samples(data), edges, weights, density), edges


def _histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    x, y = _values(x), _values(y)
    bins = _values(bins) if isinstance(bins, (list, tuple)) or is_traced(bins) else bins
    range = _range(range)
    if not is_traced(weights):
        return np.histogram2d(x, y, bins, range, density, weights)
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in (1, 2):
        bins = [np.asarray(bins)] * 2
    hist, edges = _histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


def _histogram_bin_edges(a, bins=10, range=None, weights=None):
    bins = _values(bins) if isinstance(bins, (list, tuple)) or is_traced(bins) else bins
    return np.histogram_bin_edges(_values(a), bins, None if range is None else tuple(
        float(_values(v)) for v in range), _values(weights))


public("histogramdd", numpy={np.histogramdd: _histogramdd})(_histogramdd)
public("histogram2d", numpy={np.histogram2d: _histogram2d})(_histogram2d)
public("histogram_bin_edges", numpy={np.histogram_bin_edges: _histogram_bin_edges})(
    _histogram_bin_edges)
