"""``scipy.stats`` with derivatives: the distributions as namespaces of functions
(``norm.logpdf(x, loc=0, scale=1)``), with scipy's parameters, as ``jax.scipy.stats``
has them. Each is differentiable in x and its continuous parameters.

>>> from pullback.scipy import stats
>>> stats.norm
<pullback.scipy.stats.norm: logpdf, pdf, cdf, logcdf, sf, logsf, ppf, isf>
"""

from ._continuous import beta, cauchy, chi2, expon, gamma, laplace, logistic, norm, t, uniform
from ._discrete import bernoulli, binom, poisson
from ._multivariate import dirichlet, multivariate_normal

__all__ = ["bernoulli", "beta", "binom", "cauchy", "chi2", "dirichlet", "expon", "gamma", "laplace",
           "logistic", "multivariate_normal", "norm", "poisson", "t", "uniform"]
