"""The multivariate distributions: multivariate_normal (``mean=None, cov=1,
allow_singular=False``) and dirichlet (``alpha``), with scipy's shapes: a point is
the last axis of x for multivariate_normal and the first for dirichlet, and the result
is squeezed as scipy squeezes it. Differentiable in x, mean, cov and alpha.

>>> import numpy as np, pullback as pb
>>> from pullback.scipy.stats import multivariate_normal
>>> cov = pb.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=pb.float64, requires_grad=True)
>>> lp = multivariate_normal.logpdf(np.array([[0.0, 1.0], [1.0, -1.0]]), cov=cov)
>>> lp
tensor([-2.6891, -3.2605], dtype=pullback.float64, grad_fn=<ViewBackward0>)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.elementwise import where
from .. import special
from ..special import _float
from ._common import LOG_2PI, Distribution, exp_of


def _squeeze(out: Any) -> Any:
    """scipy's _squeeze_output: every length-1 axis gone."""
    return np.squeeze(out) if any(n == 1 for n in np.shape(out)) else out


def _mvn_parameters(mean: Any, cov: Any) -> tuple:
    """(dim, mean as (dim,), cov as (dim, dim)), as scipy's _process_parameters."""
    cov = _float(cov)
    if mean is None:
        dim = 1 if np.ndim(cov) == 0 else np.shape(cov)[0]
        mean = np.zeros(dim)
    mean = _float(mean)
    dim = 1 if np.ndim(mean) == 0 else np.shape(mean)[0]
    mean = np.reshape(mean, (dim,))
    if np.ndim(cov) == 0:
        cov = cov * np.eye(dim)
    elif np.ndim(cov) == 1:
        cov = cov * np.eye(dim)  # a diagonal
    if np.shape(cov) != (dim, dim):
        raise ValueError(f"Array 'cov' must be of shape ({dim}, {dim}), not "
                         f"{np.shape(cov)}.")
    return dim, mean, cov


def _mvn_points(x: Any, dim: int) -> Any:
    """x as (..., dim), as scipy's _process_quantiles."""
    x = _float(x)
    if np.ndim(x) == 0:
        return np.reshape(x, (1, 1)) if dim == 1 else np.reshape(x, (1,))
    if np.ndim(x) == 1:
        return np.reshape(x, (-1, 1)) if dim == 1 else np.reshape(x, (1, -1))
    return x


def _mvn_logpdf(x: Any, mean: Any = None, cov: Any = 1, allow_singular: bool = False) -> Any:
    dim, mean, cov = _mvn_parameters(mean, cov)
    dev = _mvn_points(x, dim) - mean
    batch = np.shape(dev)[:-1]
    flat = np.reshape(dev, (-1, dim))
    if allow_singular:
        # the pseudo-inverse and pseudo-determinant, as scipy's _PSD (no support check)
        s, u = np.linalg.eigh(cov)
        keep = s > 1e6 * np.finfo(np.float64).eps * np.max(np.abs(s.detach() if hasattr(
            s, "detach") else s))
        s_kept = where(keep, s, 1.0)
        maha = np.sum(np.square(flat @ u) * where(keep, 1.0 / s_kept, 0.0), axis=-1)
        log_det = np.sum(where(keep, np.log(s_kept), 0.0))
        rank = np.sum(np.asarray(keep._data if hasattr(keep, "_data") else keep))
    else:
        chol = np.linalg.cholesky(cov)
        z = np.linalg.solve(chol, np.swapaxes(flat, 0, 1))
        maha = np.sum(np.square(z), axis=0)
        log_det = 2 * np.sum(np.log(np.diagonal(chol)))
        rank = dim
    out = -0.5 * (rank * LOG_2PI + log_det + maha)
    return _squeeze(np.reshape(out, batch))


def _mvn_entropy(mean: Any = None, cov: Any = 1) -> Any:
    """(dim (1 + log 2 pi) + log det(cov)) / 2, from the Cholesky factor's diagonal (a
    singular cov raises, as scipy's)."""
    dim, _, cov = _mvn_parameters(mean, cov)
    log_det = 2 * np.sum(np.log(np.diagonal(np.linalg.cholesky(cov))))
    return 0.5 * (dim * (1 + LOG_2PI) + log_det)


multivariate_normal = Distribution(
    "multivariate_normal", logpdf=_mvn_logpdf,
    pdf=exp_of(_mvn_logpdf),
    entropy=_mvn_entropy)


def _dirichlet_logpdf(x: Any, alpha: Any) -> Any:
    alpha = _float(alpha)
    x = _float(x)
    k = np.shape(alpha)[0]
    if np.shape(x)[0] == k - 1:  # scipy: the last component is 1 - the others' sum
        last = 1 - np.sum(x, axis=0, keepdims=True)
        x = np.concatenate([x, last], axis=0)
    if np.shape(x)[0] != k:
        raise ValueError(f"Vector 'x' must have either the same number of entries as, or "
                         f"one entry fewer than, parameter vector 'a', but alpha.shape = "
                         f"{np.shape(alpha)} and x.shape = {np.shape(x)}.")
    log_b = np.sum(special.gammaln(alpha)) - special.gammaln(np.sum(alpha))
    a = np.reshape(alpha, (k,) + (1,) * (np.ndim(x) - 1))
    return _squeeze(np.sum(special.xlogy(a - 1, x), axis=0) - log_b)


dirichlet = Distribution(
    "dirichlet", logpdf=_dirichlet_logpdf,
    pdf=exp_of(_dirichlet_logpdf))
