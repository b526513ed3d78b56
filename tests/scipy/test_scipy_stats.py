"""pullback.scipy.stats against scipy.stats: values of every function (float64, 0-d and
broadcast arguments), gradients in x and every continuous parameter against central
differences of scipy's function, and pb.grad against eager."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as ss
from scipy_checks import check, check_second

import pullback as pb
from pullback.scipy import stats as S

RNG = np.random.default_rng(0)
X = RNG.normal(size=(2, 3))
LOC = np.array([0.2, -0.1, 0.4])
SCALE = np.array([[1.5], [0.8]])
POS_X = RNG.uniform(0.2, 3.0, (2, 3))
UNIT_X = RNG.uniform(0.1, 0.9, (2, 3))

# (distribution, function, arguments (positional, scipy's order), differentiable ones)
CASES = [
    *[("norm", f, (X, LOC, SCALE), (0, 1, 2))
      for f in ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf")],
    ("norm", "ppf", (UNIT_X, LOC, SCALE), (0, 1, 2)),
    ("norm", "isf", (UNIT_X, LOC, SCALE), (0, 1, 2)),
    *[("t", f, (X, np.array([2.5, 4.0, 9.0]), LOC, SCALE), (0, 1, 2, 3))
      for f in ("logpdf", "pdf")],
    *[("gamma", f, (POS_X, np.array([0.7, 2.0, 3.5]), 0.1, SCALE), (0, 1, 2, 3))
      for f in ("logpdf", "pdf")],
    *[("beta", f, (UNIT_X, np.array([0.7, 2.0, 3.5]), 1.5, -0.05, 1.2), (0, 1, 2, 3, 4))
      for f in ("logpdf", "pdf")],
    # the cdfs through the incomplete gamma and beta functions: differentiable in x, loc,
    # scale and the shape parameters
    *[("t", f, (X, np.array([2.5, 4.0, 9.0]), LOC, SCALE), (0, 1, 2, 3))
      for f in ("cdf", "logcdf", "sf", "logsf")],
    *[("gamma", f, (POS_X, np.array([0.7, 2.0, 3.5]), 0.1, SCALE), (0, 1, 2, 3))
      for f in ("cdf", "logcdf", "sf", "logsf")],
    *[("beta", f, (UNIT_X, np.array([0.7, 2.0, 3.5]), 1.5, -0.05, 1.2), (0, 1, 2, 3, 4))
      for f in ("cdf", "logcdf", "sf", "logsf")],
    *[(d, f, (X, LOC, SCALE), (0, 1, 2))
      for d in ("laplace", "cauchy", "logistic") for f in ("logpdf", "pdf", "cdf", "logcdf")],
    *[("logistic", f, (X, LOC, SCALE), (0, 1, 2)) for f in ("sf", "logsf")],
    *[("expon", f, (POS_X, -0.1, SCALE), (0, 1, 2)) for f in ("logpdf", "pdf", "cdf", "logcdf")],
    *[("uniform", f, (UNIT_X, -0.2, 1.5), (0, 1, 2)) for f in ("logpdf", "pdf", "cdf", "logcdf")],
    *[("poisson", f, (np.array([[0, 1, 2], [3, 5, 8]]), np.array([0.5, 2.0, 4.0])), (1,))
      for f in ("logpmf", "pmf", "cdf", "logcdf")],
    *[("binom", f, (np.array([[0, 1, 2], [3, 5, 4]]), 5, np.array([0.2, 0.5, 0.7])), (2,))
      for f in ("logpmf", "pmf", "cdf", "logcdf")],
    *[("bernoulli", f, (np.array([[0, 1, 1], [0, 0, 1]]), np.array([0.2, 0.5, 0.7])), (1,))
      for f in ("logpmf", "pmf", "cdf")],
]


def _id(c) -> str:
    return f"{c[0]}.{c[1]}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_values_and_grads(case) -> None:
    dist, fn, args, wrt = case
    ours, ref = getattr(getattr(S, dist), fn), getattr(getattr(ss, dist), fn)
    np.testing.assert_allclose(ours(*args), ref(*args), rtol=1e-11, atol=1e-300)
    check(ours, ref, list(args), wrt, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_scalars_give_scalars(case) -> None:
    dist, fn, args, _ = case
    first = tuple(np.asarray(a).flat[0] for a in args)
    ours, ref = getattr(getattr(S, dist), fn), getattr(getattr(ss, dist), fn)
    got = ours(*first)
    assert np.shape(got) == ()
    np.testing.assert_allclose(got, ref(*first), rtol=1e-11)


def test_outside_the_support() -> None:
    x = np.array([-1.0, 0.0, 0.5, 1.0, 2.0])
    for dist, params in [("gamma", (2.0,)), ("gamma", (1.0,)), ("beta", (2.0, 3.0)),
                         ("beta", (1.0, 1.0)), ("expon", ()), ("uniform", ())]:
        np.testing.assert_allclose(getattr(S, dist).logpdf(x, *params),
                                   getattr(ss, dist).logpdf(x, *params), rtol=1e-12)
    k = np.array([-1.0, 0.5, 2.0, 7.0])
    np.testing.assert_array_equal(S.poisson.logpmf(k, 2.0) == -np.inf, [True, True, False, False])
    np.testing.assert_allclose(S.binom.pmf(k, 5, 0.3), ss.binom.pmf(k, 5, 0.3), atol=1e-15)
    np.testing.assert_allclose(S.expon.cdf(x), ss.expon.cdf(x))
    for fn in ("cdf", "logcdf"):  # below the support, off the integers, above n, loc
        np.testing.assert_allclose(getattr(S.poisson, fn)(k, 2.0, loc=1),
                                   getattr(ss.poisson, fn)(k, 2.0, loc=1), rtol=1e-12)
        np.testing.assert_allclose(getattr(S.binom, fn)(k, 5, 0.3),
                                   getattr(ss.binom, fn)(k, 5, 0.3), rtol=1e-12, atol=1e-15)
    assert S.poisson.logcdf(-2, 2.0) == -np.inf
    # gradients stay finite (0) where the density is -inf
    a = pb.tensor(2.0, dtype=pb.float64, requires_grad=True)
    S.gamma.logpdf(pb.tensor([-1.0, 1.0], dtype=pb.float64), a)[1].backward()
    assert np.isfinite(a.grad.numpy())


COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]])
MEAN = np.array([0.1, -0.3, 0.2])
PTS = RNG.normal(size=(4, 3))


@pytest.mark.parametrize("fn", ["logpdf", "pdf"])
@pytest.mark.parametrize("singular", [False, True])
@pytest.mark.parametrize("x", [PTS, PTS[0], PTS.reshape(2, 2, 3), PTS[:1]], ids=str.__call__)
def test_multivariate_normal(fn: str, singular: bool, x: np.ndarray) -> None:
    ours, ref = getattr(S.multivariate_normal, fn), getattr(ss.multivariate_normal, fn)
    got = ours(x, MEAN, COV, allow_singular=singular)
    want = ref(x, MEAN, COV, allow_singular=singular)
    assert np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-11)
    sym = lambda x, m, c: (c + c.T) / 2  # noqa: E731 (the differences move one entry)
    check(lambda x, m, c: ours(x, m, sym(x, m, c), allow_singular=singular),
          lambda x, m, c: ref(x, m, sym(x, m, c), allow_singular=singular),
          [x, MEAN, COV], (0, 1, 2), rtol=1e-5)


def test_multivariate_normal_parameter_forms() -> None:
    x = PTS
    for mean, cov in [(None, 2.0), (MEAN, 0.5), (MEAN, np.array([1.0, 2.0, 0.5])), (0.3, 2.0)]:
        xx = x[:, 0] if np.ndim(mean) == 0 else x
        np.testing.assert_allclose(S.multivariate_normal.logpdf(xx, mean, cov),
                                   ss.multivariate_normal.logpdf(xx, mean, cov), rtol=1e-12)
    singular = np.array([[1.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(
        S.multivariate_normal.logpdf([0.5, 0.5], cov=singular, allow_singular=True),
        ss.multivariate_normal.logpdf([0.5, 0.5], cov=singular, allow_singular=True))
    with pytest.raises(ValueError, match="must be of shape"):
        S.multivariate_normal.logpdf(x, MEAN, np.eye(2))


def test_multivariate_normal_second_derivative_in_the_mean() -> None:
    check_second(lambda m: S.multivariate_normal.logpdf(PTS, m, COV), [MEAN], 0)


ALPHA = np.array([1.5, 2.0, 0.8])
SIMPLEX = RNG.dirichlet(ALPHA, size=4).T  # (3, 4): components first, as scipy has them


@pytest.mark.parametrize("fn", ["logpdf", "pdf"])
@pytest.mark.parametrize("x", [SIMPLEX, SIMPLEX[:, 0], SIMPLEX[:2]], ids=["3x4", "3", "2x4"])
def test_dirichlet(fn: str, x: np.ndarray) -> None:
    ours, ref = getattr(S.dirichlet, fn), getattr(ss.dirichlet, fn)
    np.testing.assert_allclose(ours(x, ALPHA), ref(x, ALPHA), rtol=1e-11)
    check(lambda a: ours(x, a), lambda a: ref(x, a), [ALPHA], (0,), rtol=1e-5)
    if fn == "pdf":
        return
    w = np.random.default_rng(1).uniform(0.5, 1.5, np.shape(ref(x, ALPHA)))
    xt = pb.tensor(x, requires_grad=True)
    (ours(xt, ALPHA) * w).sum().backward()
    # d/dx_i sum_j (alpha_j - 1) log x_j (the free components; the last is 1 - the rest)
    want = (ALPHA[:len(x), None] - 1) / x.reshape(len(x), -1) * w.reshape(-1)
    if len(x) == 2:
        last = 1 - x.sum(axis=0)
        want = want - (ALPHA[2] - 1) / last * w
    np.testing.assert_allclose(xt.grad.numpy().reshape(want.shape), want, rtol=1e-12)


def test_repr() -> None:
    assert repr(S.norm).startswith("<pullback.scipy.stats.norm: logpdf, pdf")
    assert "logpmf" in dir(S.poisson)
