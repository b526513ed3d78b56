"""The univariate continuous distributions: norm, t, gamma, chi2, beta, laplace, cauchy,
logistic, expon and uniform, each with scipy's shape parameters, then ``loc=0,
scale=1``; every function is differentiable in x, the shape parameters, loc and scale.

>>> import pullback as pb
>>> from pullback.scipy.stats import norm
>>> mu = pb.tensor(0.5, dtype=pb.float64, requires_grad=True)
>>> lp = norm.logpdf(pb.tensor([0.0, 1.0, 2.0], dtype=pb.float64), loc=mu, scale=2.0).sum()
>>> lp.backward()
>>> float(mu.grad)                  # sum (x - mu) / scale^2
0.375
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...ops.elementwise import where
from .. import special
from ..special import _float
from ._common import INF, LOG_2PI, Distribution, exp_of, inside, log, log_of, standardize

_LOG_PI = math.log(math.pi)


# ------------------------------------------------------------------------ norm
def _norm_logpdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    return -0.5 * (z * z) - 0.5 * LOG_2PI - log(scale)


def _norm_cdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return special.ndtr(standardize(x, loc, scale)[0])


def _norm_logcdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return special.log_ndtr(standardize(x, loc, scale)[0])


def _norm_sf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return special.ndtr(-standardize(x, loc, scale)[0])


def _norm_logsf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return special.log_ndtr(-standardize(x, loc, scale)[0])


def _norm_ppf(q: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return _float(loc) + _float(scale) * special.ndtri(q)


def _norm_isf(q: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return _float(loc) - _float(scale) * special.ndtri(q)


norm = Distribution(
    "norm", logpdf=_norm_logpdf, pdf=exp_of(_norm_logpdf),
    cdf=_norm_cdf, logcdf=_norm_logcdf, sf=_norm_sf, logsf=_norm_logsf, ppf=_norm_ppf,
    isf=_norm_isf)


# ------------------------------------------------------------------------- t
def _t_logpdf(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    df = _float(df)
    half = (df + 1) / 2
    return (special.gammaln(half) - special.gammaln(df / 2) - 0.5 * (log(df) + _LOG_PI)
            - log(scale) - half * np.log1p(z * z / df))


def _t_lower(z: Any, df: Any) -> Any:
    """P(T < -|z|) for z off 0 and finite: (1 - I_u(1/2, df/2)) / 2 with
    u = z^2 / (df + z^2) for z^2 < df (where 1 - u would lose digits), else
    I_w(df/2, 1/2) / 2 with w = df / (df + z^2), each branch on values safe for it."""
    near = z * z < df
    zn = where(near, z, 0.5 * np.sqrt(df) + 0.0 * z)
    zf = where(near, np.sqrt(df) + 0.0 * z, z)
    centre = special.betainc(0.5, df / 2, zn * zn / (df + zn * zn))
    tail = special.betainc(df / 2, 0.5, df / (df + zf * zf))
    return 0.5 * where(near, 1 - centre, tail)


def _t_cdf_pair(z: Any, df: Any) -> tuple:
    """(cdf(z), sf(z)) of the standard t: 1/2 + z pdf(0) at z = 0 (the value, and the
    derivative pdf(0) where the incomplete beta's would be 0 inf), 0 and 1 at the
    infinities, NaN for df <= 0."""
    ok = (z != 0) & (np.abs(z) != INF)
    with np.errstate(divide="ignore", invalid="ignore"):  # (df <= 0: NaN, as scipy)
        lower = _t_lower(where(ok, z, 1.0), df)
        pdf0 = np.exp(special.gammaln((df + 1) / 2) - special.gammaln(df / 2)
                      - 0.5 * (log(df) + _LOG_PI))
    half = 0.5 + where(z == 0, z * pdf0, 0.0)
    cdf = where(ok, where(z < 0, lower, 1 - lower), where(z == 0, half, (z > 0) + 0.0))
    sf = where(ok, where(z > 0, lower, 1 - lower), where(z == 0, 1 - half, (z < 0) + 0.0))
    bad = df <= 0
    return where(bad, np.nan, cdf), where(bad, np.nan, sf)


def _t_cdf(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return _t_cdf_pair(standardize(x, loc, scale)[0], _float(df))[0]


def _t_sf(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return _t_cdf_pair(standardize(x, loc, scale)[0], _float(df))[1]


def _t_logcdf(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return log_of(*_t_cdf_pair(standardize(x, loc, scale)[0], _float(df)))


def _t_logsf(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    cdf, sf = _t_cdf_pair(standardize(x, loc, scale)[0], _float(df))
    return log_of(sf, cdf)


t = Distribution("t", logpdf=_t_logpdf, pdf=exp_of(_t_logpdf),
                 cdf=_t_cdf, logcdf=_t_logcdf, sf=_t_sf, logsf=_t_logsf)


# --------------------------------------------------------------------- gamma
def _gamma_logpdf(x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    a = _float(a)
    return inside(z >= 0, lambda z: special.xlogy(a - 1, z) - z - special.gammaln(a),
                  z, 1.0, -INF) - log(scale)


def _gamma_cdf_pair(x: Any, a: Any, loc: Any, scale: Any) -> tuple:
    """(cdf, sf): P(a, z) and Q(a, z) for 0 < z < inf, the limits outside, NaN for
    a <= 0."""
    z, _ = standardize(x, loc, scale)
    a = _float(a)
    inner = np.logical_not(z <= 0) & (z != INF)  # (NaN stays inside, to come out NaN)
    zs = where(inner, z, 1.0)
    cdf = where(inner, special.gammainc(a, zs), (z > 0) + 0.0)
    sf = where(inner, special.gammaincc(a, zs), (z <= 0) + 0.0)
    bad = a <= 0
    return where(bad, np.nan, cdf), where(bad, np.nan, sf)


def _gamma_logcdf(x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return log_of(*_gamma_cdf_pair(x, a, loc, scale))


def _gamma_logsf(x: Any, a: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    cdf, sf = _gamma_cdf_pair(x, a, loc, scale)
    return log_of(sf, cdf)


gamma = Distribution(
    "gamma", logpdf=_gamma_logpdf, pdf=exp_of(_gamma_logpdf),
    cdf=lambda x, a, loc=0.0, scale=1.0: _gamma_cdf_pair(x, a, loc, scale)[0],
    logcdf=_gamma_logcdf,
    sf=lambda x, a, loc=0.0, scale=1.0: _gamma_cdf_pair(x, a, loc, scale)[1],
    logsf=_gamma_logsf)


# ---------------------------------------------------------------------- chi2
def _chi2(fn):
    """A function of chi2(df) from gamma's: chi2(df) is gamma(df / 2, scale=2)."""
    def run(x: Any, df: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
        return fn(x, _float(df) / 2, loc, 2 * _float(scale))
    return run


chi2 = Distribution(
    "chi2", logpdf=_chi2(_gamma_logpdf),
    pdf=_chi2(exp_of(_gamma_logpdf)),
    cdf=_chi2(lambda x, a, loc, scale: _gamma_cdf_pair(x, a, loc, scale)[0]),
    logcdf=_chi2(_gamma_logcdf),
    sf=_chi2(lambda x, a, loc, scale: _gamma_cdf_pair(x, a, loc, scale)[1]),
    logsf=_chi2(_gamma_logsf))


# ---------------------------------------------------------------------- beta
def _beta_logpdf(x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    a, b = _float(a), _float(b)
    return inside((z >= 0) & (z <= 1),
                  lambda z: (special.xlogy(a - 1, z) + special.xlog1py(b - 1, -z)
                             - special.betaln(a, b)),
                  z, 0.5, -INF) - log(scale)


def _beta_cdf_pair(x: Any, a: Any, b: Any, loc: Any, scale: Any) -> tuple:
    """(cdf, sf): I_z(a, b) and 1 - I_z(a, b) or I_(1-z)(b, a), the one without
    cancellation, for 0 < z < 1; 0 or 1 outside, NaN unless a, b > 0."""
    z, _ = standardize(x, loc, scale)
    a, b = _float(a), _float(b)
    inner = np.logical_not((z <= 0) | (z >= 1))
    zs = where(inner, z, 0.5)
    cdf = special.betainc(a, b, zs)
    # (1 - z is inexact for small z: sf from it only where sf is the smaller one)
    sf = where(cdf < 0.5, 1 - cdf, special.betainc(b, a, 1 - zs))
    cdf = where(inner, cdf, (z >= 1) + 0.0)
    sf = where(inner, sf, (z <= 0) + 0.0)
    bad = (a <= 0) | (b <= 0)
    return where(bad, np.nan, cdf), where(bad, np.nan, sf)


def _beta_logcdf(x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return log_of(*_beta_cdf_pair(x, a, b, loc, scale))


def _beta_logsf(x: Any, a: Any, b: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    cdf, sf = _beta_cdf_pair(x, a, b, loc, scale)
    return log_of(sf, cdf)


beta = Distribution(
    "beta", logpdf=_beta_logpdf, pdf=exp_of(_beta_logpdf),
    cdf=lambda x, a, b, loc=0.0, scale=1.0: _beta_cdf_pair(x, a, b, loc, scale)[0],
    logcdf=_beta_logcdf,
    sf=lambda x, a, b, loc=0.0, scale=1.0: _beta_cdf_pair(x, a, b, loc, scale)[1],
    logsf=_beta_logsf)


# ------------------------------------------------------------------- laplace
def _laplace_logpdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    return -np.abs(z) - log(2 * scale)


def _laplace_cdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, _ = standardize(x, loc, scale)
    e = 0.5 * np.exp(-np.abs(z))
    return where(z < 0, e, 1 - e)


def _laplace_logcdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, _ = standardize(x, loc, scale)
    e = 0.5 * np.exp(-np.abs(z))
    return where(z < 0, log(e), np.log1p(-e))


laplace = Distribution(
    "laplace", logpdf=_laplace_logpdf, pdf=exp_of(_laplace_logpdf),
    cdf=_laplace_cdf, logcdf=_laplace_logcdf)


# -------------------------------------------------------------------- cauchy
def _cauchy_logpdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    return -_LOG_PI - log(scale) - np.log1p(z * z)


def _cauchy_cdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return 0.5 + np.arctan(standardize(x, loc, scale)[0]) / math.pi


cauchy = Distribution(
    "cauchy", logpdf=_cauchy_logpdf, pdf=exp_of(_cauchy_logpdf),
    cdf=_cauchy_cdf, logcdf=lambda x, loc=0.0, scale=1.0: log(_cauchy_cdf(x, loc, scale)))


# ------------------------------------------------------------------ logistic
def _softplus(z: Any) -> Any:
    """log(1 + e^z), without overflow."""
    return np.maximum(z, 0.0) + np.log1p(np.exp(-np.abs(z)))


def _logistic_logpdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    return -np.abs(z) - 2 * np.log1p(np.exp(-np.abs(z))) - log(scale)


logistic = Distribution(
    "logistic", logpdf=_logistic_logpdf, pdf=exp_of(_logistic_logpdf),
    cdf=lambda x, loc=0.0, scale=1.0: special.expit(standardize(x, loc, scale)[0]),
    logcdf=lambda x, loc=0.0, scale=1.0: -_softplus(-standardize(x, loc, scale)[0]),
    sf=lambda x, loc=0.0, scale=1.0: special.expit(-standardize(x, loc, scale)[0]),
    logsf=lambda x, loc=0.0, scale=1.0: -_softplus(standardize(x, loc, scale)[0]))


# --------------------------------------------------------------------- expon
def _expon_logpdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    return inside(z >= 0, lambda z: -z, z, 0.0, -INF) - log(scale)


def _expon_cdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, _ = standardize(x, loc, scale)
    return inside(z >= 0, lambda z: -np.expm1(-z), z, 0.0, 0.0)


def _expon_logcdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, _ = standardize(x, loc, scale)
    return inside(z > 0, lambda z: log(-np.expm1(-z)), z, 1.0, -INF)


expon = Distribution(
    "expon", logpdf=_expon_logpdf, pdf=exp_of(_expon_logpdf),
    cdf=_expon_cdf, logcdf=_expon_logcdf)


# ------------------------------------------------------------------- uniform
def _uniform_logpdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    z, scale = standardize(x, loc, scale)
    return inside((z >= 0) & (z <= 1), lambda z: 0.0 * z, z, 0.5, -INF) - log(scale)


def _uniform_cdf(x: Any, loc: Any = 0.0, scale: Any = 1.0) -> Any:
    return np.clip(standardize(x, loc, scale)[0], 0.0, 1.0)


uniform = Distribution(
    "uniform", logpdf=_uniform_logpdf, pdf=exp_of(_uniform_logpdf),
    cdf=_uniform_cdf, logcdf=lambda x, loc=0.0, scale=1.0: log(_uniform_cdf(x, loc, scale)))
