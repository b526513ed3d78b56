"""The regularized incomplete gamma and beta functions (gammainc, gammaincc, betainc)
against scipy: values over the parameter ranges and into the tails, the edges (0, 1,
inf, NaN, invalid parameters), 0-d and float32 results, the derivative in x against
central differences (eager, compiled, second order), the derivatives in the shape
parameters against mpmath, the refusal of second derivatives in them, and scipy's own
ufuncs on Tensors."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as ss
from scipy_checks import check, check_second

import pullback as pb
from pullback.scipy import special as S
from pullback.scipy import stats

NAN, INF = np.nan, np.inf
SHAPES = [1e-3, 0.1, 0.5, 1.0, 2.5, 12.0, 50.0, 300.0]
RATIOS = [1e-3, 0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 5.0, 20.0]


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got - want) / np.abs(want)))


@pytest.mark.parametrize("a", SHAPES)
def test_gammainc_values(a: float) -> None:
    x = a * np.array(RATIOS)
    # scipy's own error grows with a (1e-12 at a = 300); pullback's stays nearer 1e-13
    tol = 2e-13 if a <= 12 else 5e-12
    for ours, theirs in ((S.gammainc, sp.gammainc), (S.gammaincc, sp.gammaincc)):
        want = theirs(a, x)
        keep = want > 1e-300
        assert _rel(ours(a, x)[keep], want[keep]) < tol


BETA_SHAPES = [0.05, 0.5, 1.0, 3.0, 20.0, 150.0]
BETA_X = np.array([1e-10, 1e-3, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999, 1 - 1e-10])


@pytest.mark.parametrize("a", BETA_SHAPES)
def test_betainc_values(a: float) -> None:
    for b in BETA_SHAPES:
        want = sp.betainc(a, b, BETA_X)
        keep = want > 1e-300
        # the prefix x^a (1 - x)^b / B(a, b) loses ~1e-16 max(a, b) through lgamma
        tol = 3e-14 if max(a, b) <= 3 else 2e-12
        assert _rel(S.betainc(a, b, BETA_X)[keep], want[keep]) < tol, b


def test_edges_are_scipys() -> None:
    a = np.array([2.0, 2.0, 0.0, 0.0, 3.0, 1.0, -1.0, NAN, INF, 2.0])
    x = np.array([0.0, -1.0, 2.0, 0.0, INF, NAN, 1.0, 1.0, 1.0, 1e-320])
    for ours, theirs in ((S.gammainc, sp.gammainc), (S.gammaincc, sp.gammaincc)):
        np.testing.assert_array_equal(ours(a, x), theirs(a, x))
    a = np.array([0.0, 1.0, 2.0, 2.0, 0.0, 1.0, 2.0, 2.0, NAN, -1.0, 2.0])
    b = np.array([1.0, 0.0, -1.0, 2.0, 0.0, 1.0, 3.0, 3.0, 1.0, 1.0, 3.0])
    x = np.array([0.5, 0.5, 0.5, 1.5, 0.5, 0.0, 1.0, NAN, 0.5, 0.5, -0.1])
    np.testing.assert_array_equal(S.betainc(a, b, x), sp.betainc(a, b, x))


def test_scalars_integers_and_float32() -> None:
    assert S.gammainc(2, 1) == pytest.approx(1 - 2 / np.e, rel=1e-15)
    assert np.shape(S.gammaincc(2.0, 1.0)) == () and isinstance(S.betainc(2, 3, 0.5),
                                                                np.float64)
    x32 = np.array([0.2, 0.6], np.float32)
    assert S.betainc(np.float32(2.0), 3.0, x32).dtype == np.float32
    assert S.gammainc(np.float32(2.0), x32).dtype == np.float32
    t = pb.tensor([0.2, 0.6], dtype=pb.float32)
    out = S.betainc(2.0, pb.tensor(3.0, dtype=pb.float64), t)  # common dtype: float64
    assert out.dtype == pb.float64
    np.testing.assert_allclose(out.numpy(), sp.betainc(2.0, 3.0, np.float64(x32)),
                               rtol=1e-15)


GRAD_CASES = [
    (S.gammainc, sp.gammainc, [np.array([0.3, 2.0, 15.0, 40.0]),
                               np.array([[0.5, 1.0, 20.0, 38.0], [2.0, 5.0, 9.0, 45.0]])]),
    (S.gammaincc, sp.gammaincc, [np.array([0.3, 2.0, 15.0, 40.0]),
                                 np.array([[0.5, 1.0, 20.0, 38.0], [2.0, 5.0, 9.0, 45.0]])]),
]


@pytest.mark.parametrize("f, ref, args", GRAD_CASES, ids=["gammainc", "gammaincc"])
def test_gamma_grads_in_x(f, ref, args) -> None:
    check(f, ref, args, (1,), rtol=1e-6, atol=1e-9)
    check_second(f, args, 1)


def test_betainc_grads_in_x() -> None:
    args = [np.array([0.5, 3.0, 20.0]), np.array([[0.7], [30.0]]),
            np.array([[0.9, 0.2, 0.45], [0.01, 0.5, 0.3]])]
    check(S.betainc, sp.betainc, args, (2,), rtol=1e-6, atol=1e-9)
    check_second(S.betainc, args, 2)
    # 0-d
    check(S.betainc, sp.betainc, [2.0, 3.0, np.float64(0.4)], (2,), rtol=1e-6)


def test_gamma_grads_in_a() -> None:
    """dP/da and dQ/da: against differences of scipy's, and mpmath's to 1e-13."""
    args = [np.array([[0.002, 0.3, 0.45, 2.0], [13.0, 40.0, 250.0, 0.8]]),
            np.array([[0.01, 1.2, 3.0, 2.5], [10.0, 45.0, 240.0, 1.6]])]
    for f, ref in ((S.gammainc, sp.gammainc), (S.gammaincc, sp.gammaincc)):
        check(f, ref, args, (0, 1), rtol=1e-6, atol=1e-9, eps=1e-7)
    a = pb.tensor(args[0], requires_grad=True)
    S.gammainc(a, args[1]).sum().backward()
    with mpmath.workdps(30):
        want = [float(mpmath.diff(lambda s, v=float(v): mpmath.gammainc(
            s, 0, v, regularized=True), float(u))) for u, v in zip(args[0].flat, args[1].flat)]
    np.testing.assert_allclose(a.grad.numpy().ravel(), want, rtol=1e-13)
    # mixed second derivative: d/dx dP/da = density * (log x - digamma(a))
    check_second(lambda a, x: S.gammainc(a, x), [np.array([0.7, 3.0]), np.array([1.0, 2.0])], 1)


def test_betainc_grads_in_a_and_b() -> None:
    """dI/da and dI/db: against differences of scipy's, and mpmath's, on both sides of
    the mean (the fraction, and its symmetry I_x(a, b) = 1 - I_(1-x)(b, a))."""
    args = [np.array([[0.05, 0.5, 3.0], [20.0, 2.0, 150.0]]),
            np.array([[0.7, 0.02, 2.0], [30.0, 50.0, 40.0]]),
            np.array([[0.9, 0.2, 0.45], [0.3, 0.01, 0.8]])]
    check(S.betainc, sp.betainc, args, (0, 1, 2), rtol=1e-6, atol=1e-9, eps=1e-7)
    a, b = (pb.tensor(v, requires_grad=True) for v in args[:2])
    S.betainc(a, b, args[2]).sum().backward()
    for k, got in enumerate((a.grad, b.grad)):
        want = []
        with mpmath.workdps(30):
            for u, v, w in zip(args[0].flat, args[1].flat, args[2].flat):
                p = [float(u), float(v)]

                def f(s, p=p, w=float(w), k=k):
                    q = list(p)
                    q[k] = s
                    return mpmath.betainc(q[0], q[1], 0, w, regularized=True)

                want.append(float(mpmath.diff(f, p[k])))
        np.testing.assert_allclose(got.numpy().ravel(), want, rtol=2e-13)
    # mixed second derivatives: d/dx dI/da, d/dx dI/db
    check_second(lambda a, b, x: S.betainc(a, b, x),
                 [np.array([0.7, 3.0]), np.array([2.0, 0.5]), np.array([0.3, 0.6])], 2)


@pytest.mark.parametrize("call, message", [
    (lambda a: S.betainc(a, 2.0, 0.3), "the second derivative of betainc with respect to a "),
    (lambda b: S.betainc(2.0, b, 0.3), "the second derivative of betainc with respect to b "),
    (lambda df: stats.t.cdf(0.3, df), "the second derivative of betainc with respect to [ab] "),
    (lambda a: S.gammaincc(a, 2.0), "the second derivative of gammainc with respect to a "),
])
def test_a_second_derivative_in_a_shape_parameter_raises(call, message) -> None:
    a = pb.tensor(1.5, dtype=pb.float64, requires_grad=True)
    (g,) = pb.autograd.grad(call(a), a, create_graph=True)
    assert np.isfinite(float(g))
    with pytest.raises(NotImplementedError, match=message + "is not implemented"):
        g.backward()


def test_scipy_ufuncs_on_tensors_run_them() -> None:
    x = pb.tensor([0.2, 0.7], dtype=pb.float64, requires_grad=True)
    y = sp.gammainc(2.0, x) + sp.gammaincc(0.5, x) + sp.betainc(2.0, 3.0, x)
    assert y.grad_fn is not None
    np.testing.assert_allclose(y.detach().numpy(), sp.gammainc(2.0, [0.2, 0.7])
                               + sp.gammaincc(0.5, [0.2, 0.7])
                               + sp.betainc(2.0, 3.0, [0.2, 0.7]), rtol=1e-14)
    y.sum().backward()
    want = pb.tensor([0.2, 0.7], dtype=pb.float64, requires_grad=True)
    (S.gammainc(2.0, want) + S.gammaincc(0.5, want) + S.betainc(2.0, 3.0, want)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), want.grad.numpy())
    g = pb.grad(lambda x: sp.betainc(2.0, 3.0, x).sum())(np.array([0.2, 0.7]))
    np.testing.assert_allclose(g, 12 * np.array([0.2, 0.7]) * np.array([0.8, 0.3]) ** 2)


def test_t_cdf_at_its_centre_and_infinities() -> None:
    """At z = 0 the value is 1/2 and the derivative the density (the incomplete beta's
    chain rule would give 0 * inf there); at +-inf 1 and 0 with a zero gradient."""
    x = pb.tensor([0.3, INF, -INF, 1.3], dtype=pb.float64, requires_grad=True)
    loc = pb.tensor(0.3, dtype=pb.float64, requires_grad=True)
    cdf = stats.t.cdf(x, 4.0, loc, 2.0)
    np.testing.assert_allclose(cdf.detach().numpy(), ss.t.cdf([0.3, INF, -INF, 1.3], 4.0,
                                                              0.3, 2.0), rtol=1e-14)
    cdf.sum().backward()
    pdf = ss.t.pdf([0.3, 1.3], 4.0, 0.3, 2.0)
    np.testing.assert_allclose(x.grad.numpy(), [pdf[0], 0.0, 0.0, pdf[1]], rtol=1e-13)
    np.testing.assert_allclose(loc.grad.numpy(), -pdf.sum(), rtol=1e-13)


@pytest.mark.parametrize("dist, params", [("t", (3.0,)), ("t", (0.7,)), ("gamma", (0.4,)),
                                          ("gamma", (6.0,)), ("beta", (0.5, 4.0)),
                                          ("beta", (30.0, 2.0))])
def test_cdfs_over_the_line_and_tails(dist: str, params: tuple) -> None:
    """Every function of the four on a line through both tails and off the support,
    against scipy (logcdf and logsf as accurate in the far tail as scipy's)."""
    x = np.concatenate([[-2.0, 0.0, NAN, 1.0], np.geomspace(1e-12, 0.5, 6),
                        1 - np.geomspace(1e-12, 0.5, 6)])
    if dist != "beta":
        x = np.concatenate([x, [-40.0, 3.0, 30.0, 300.0]])
    ours, theirs = getattr(stats, dist), getattr(ss, dist)
    for fn in ("cdf", "logcdf", "sf", "logsf"):
        got, want = getattr(ours, fn)(x, *params), getattr(theirs, fn)(x, *params)
        np.testing.assert_allclose(got, want, rtol=2e-12, atol=1e-15, err_msg=fn)


def test_invalid_shape_parameters_give_nan() -> None:
    assert np.isnan(stats.t.cdf(1.0, 0.0)) and np.isnan(stats.gamma.sf(1.0, -1.0))
    assert np.isnan(stats.beta.logcdf(0.5, 2.0, 0.0))


def test_cdf_gradients_stay_finite_off_the_support() -> None:
    x = pb.tensor([-1.0, 0.0, 0.5, 1.0, 2.0], dtype=pb.float64, requires_grad=True)
    (stats.gamma.logcdf(x, 2.0).exp().sum() + stats.beta.cdf(x, 2.0, 3.0).sum()
     + stats.beta.logsf(x, 2.0, 3.0).exp().sum()).backward()
    assert np.all(np.isfinite(x.grad.numpy()))


def _unmodified(x):
    return ss.gamma.logcdf(x, 2.0, scale=1.5).sum() + ss.t.sf(x, 3.0).sum()


def test_unmodified_scipy_code_differentiates_under_pb_grad() -> None:
    """scipy.stats' cdfs on traced values run pullback.scipy's (the source pass)."""
    x = np.array([0.5, 2.0])
    want = (ss.gamma.pdf(x, 2.0, scale=1.5) / ss.gamma.cdf(x, 2.0, scale=1.5)
            - ss.t.pdf(x, 3.0))
    np.testing.assert_allclose(pb.grad(_unmodified)(x), want, rtol=1e-12)
