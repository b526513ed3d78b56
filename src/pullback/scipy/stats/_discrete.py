"""The discrete distributions: poisson, binom and bernoulli, with scipy's parameters
(``mu``; ``n, p``; ``p``; then ``loc=0``). The counts ``k`` are data (no derivative);
``mu`` and ``p`` are differentiable. Outside the support, and at non-integer ``k``,
logpmf is -inf and pmf 0, as in scipy. poisson's and binom's cdf sum the pmf from 0 to
k (a logsumexp), so they read the values of k.

>>> import pullback as pb
>>> from pullback.scipy.stats import poisson
>>> mu = pb.tensor(2.0, dtype=pb.float64, requires_grad=True)
>>> poisson.logpmf([0, 1, 3], mu).sum().backward()
>>> float(mu.grad)                  # sum k / mu - 1
-1.0
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ops.elementwise import where
from .. import special
from ..special import _float
from ._common import INF, Distribution, exp_of, inside


def _counts(k: Any, loc: Any) -> tuple:
    """(k - loc, whether it is a non-negative integer)."""
    k = _float(k) - _float(loc)
    return k, (k >= 0) & (k == np.floor(k))


def _poisson_logpmf(k: Any, mu: Any, loc: Any = 0) -> Any:
    k, ok = _counts(k, loc)
    mu = _float(mu)
    return inside(ok, lambda k: special.xlogy(k, mu) - special.gammaln(k + 1) - mu,
                  k, 0.0, -INF)


def _summed(logpmf, k: Any, loc: Any, *params: Any) -> Any:
    """log cdf: logsumexp of logpmf(j) over j = 0 .. floor(k - loc) (k is data: its values
    are read), -inf below the support."""
    k = np.floor(np.asarray(_constant(_float(k))) - np.asarray(_constant(_float(loc))))
    top = int(np.max(k, initial=-1))
    if top < 0:
        return np.full(np.broadcast_shapes(k.shape, *map(np.shape, params)), -INF)
    j = np.arange(top + 1.0).reshape((-1,) + (1,) * k.ndim)
    terms = where(j <= k, logpmf(j, *params), -INF)
    return special.logsumexp(terms, axis=0)


def _constant(x: Any) -> Any:
    return x.detach() if hasattr(x, "detach") else x


def _poisson_logcdf(k: Any, mu: Any, loc: Any = 0) -> Any:
    return _summed(_poisson_logpmf, k, loc, _float(mu))


poisson = Distribution(
    "poisson", logpmf=_poisson_logpmf, pmf=exp_of(_poisson_logpmf),
    logcdf=_poisson_logcdf, cdf=exp_of(_poisson_logcdf))


def _binom_logpmf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k, ok = _counts(k, loc)
    n, p = _float(n), _float(p)
    ok = ok & (k <= n)

    def logpmf(k):
        comb = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
        return comb + special.xlogy(k, p) + special.xlog1py(n - k, -p)

    return inside(ok, logpmf, k, 0.0, -INF)


def _binom_logcdf(k: Any, n: Any, p: Any, loc: Any = 0) -> Any:
    k = np.minimum(np.asarray(_constant(_float(k))), np.asarray(_constant(_float(n))))
    return _summed(_binom_logpmf, k, loc, _float(n), _float(p))


binom = Distribution(
    "binom", logpmf=_binom_logpmf, pmf=exp_of(_binom_logpmf),
    logcdf=_binom_logcdf, cdf=exp_of(_binom_logcdf))


def _bernoulli_logpmf(k: Any, p: Any, loc: Any = 0) -> Any:
    k, ok = _counts(k, loc)
    p = _float(p)
    return inside(ok & (k <= 1), lambda k: special.xlogy(k, p) + special.xlog1py(1 - k, -p),
                  k, 0.0, -INF)


def _bernoulli_cdf(k: Any, p: Any, loc: Any = 0) -> Any:
    k = _float(k) - _float(loc)
    p = _float(p)
    return where(k < 0, 0.0, where(k < 1, 1 - p, 1.0 + 0.0 * p))


bernoulli = Distribution(
    "bernoulli", logpmf=_bernoulli_logpmf, pmf=exp_of(_bernoulli_logpmf), cdf=_bernoulli_cdf)
