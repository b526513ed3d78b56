"""scipy's Bessel functions, erfcinv, gammasgn, sqrtm, solve_sylvester, solve_banded,
signal.convolve, stats.chi2 and multivariate_normal.entropy (issue 23): values against
scipy's, gradients against float64 central differences of scipy's own functions, eager
and under pb.grad of unmodified scipy code (the source pass routes the calls)."""

import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.signal
import scipy.special
import scipy.stats
from scipy_checks import check, check_second

import pullback as pb
from pullback.scipy import linalg as L
from pullback.scipy import signal as S
from pullback.scipy import special as P
from pullback.scipy import stats as T

RNG = np.random.default_rng(23)
# both sides of 25 (Miller's recurrence / Hankel's expansions), tiny x, x far out
X = np.concatenate([np.geomspace(1e-6, 1.0, 15), np.linspace(1.05, 60.0, 400), [200.0, 1e4]])


def _close(got, want, rtol=1e-12, atol=1e-15):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["j0", "j1", "y0", "y1", "k0", "k1", "k0e", "k1e"])
def test_bessel_01_values(name):
    """Absolute error 1e-15 near the zeros, relative 1e-12 elsewhere."""
    want = getattr(scipy.special, name)(X)
    got = getattr(P, name)(X)
    scale = np.maximum(np.abs(want), 1e-3) if name[0] in "jy" else np.abs(want) + 1e-300
    assert np.max(np.abs(got - want) / scale) < 1e-12


def test_bessel_edges_as_scipys():
    edges = np.array([0.0, -0.0, -2.0, np.inf, -np.inf, np.nan])
    for name in ["j0", "j1", "y0", "y1", "k0", "k1", "k0e", "k1e"]:
        _close(getattr(P, name)(edges), getattr(scipy.special, name)(edges))
    for n in (0, 1, 2, 5):
        _close(P.jn(n, edges), scipy.special.jn(n, edges))
        _close(P.yn(n, edges), scipy.special.yn(n, edges))
    for v in (0.0, 2.0, 2.5, -2.5, -3.0):
        _close(P.iv(v, edges), scipy.special.iv(v, edges))
        _close(P.ive(v, edges), scipy.special.ive(v, edges))


@pytest.mark.parametrize("n", [-3, 2, 3, 7, 20])
def test_jn_yn_values(n):
    x = X[(X > 0.5) & (X < 1e3)]
    for mine, theirs in ((P.jn, scipy.special.jn), (P.yn, scipy.special.yn)):
        want = theirs(n, x)
        assert np.max(np.abs(mine(n, x) - want) / np.maximum(np.abs(want), 1e-2)) < 1e-11


@pytest.mark.parametrize("v", [0.0, 1.0, 0.5, -0.5, -1.5, 2.5, -2.0, 7.3, 10.0])
def test_iv_ive_values(v):
    x = np.linspace(0.01, 120.0, 500)
    _close(P.iv(v, x), scipy.special.iv(v, x), rtol=1e-13)
    _close(P.ive(v, x), scipy.special.ive(v, x), rtol=1e-13)
    _close(P.ive(v, -x[:50]), scipy.special.ive(v, -x[:50]), rtol=1e-13)


def test_orders_broadcast_and_jv_refuses_fractional_orders():
    x = np.array([[0.5], [2.0], [30.0]])
    _close(P.iv([0.5, 1.0, 2.5], x), scipy.special.iv([0.5, 1.0, 2.5], x))
    _close(P.jv([0, 3], x), scipy.special.jv([0, 3], x))
    with pytest.raises(ValueError, match="jv: pullback supports integer orders only"):
        P.jv(0.5, x)


@pytest.mark.parametrize("name,order", [("j0", None), ("j1", None), ("y0", None),
                                        ("y1", None), ("k0", None), ("k1", None),
                                        ("k0e", None), ("k1e", None), ("jn", 3),
                                        ("yn", 2), ("iv", 1.5), ("iv", -2.0), ("ive", 0.5)])
def test_bessel_gradients(name, order):
    x = np.array([0.4, 1.3, 3.7, 8.0, 26.0]) if name != "iv" else np.array([0.4, 1.3, 3.7])
    if name in ("j0", "j1", "jn"):  # (scipy: NaN for x < 0 and a fractional order)
        x = np.concatenate([x, -x[:2]])
    mine, theirs = getattr(P, name), getattr(scipy.special, name)
    if order is None:
        check(mine, theirs, [x], (0,))
        check_second(mine, [x], 0)
    else:
        check(lambda t: mine(order, t), lambda t: theirs(order, t), [x], (0,))
        check_second(lambda t: mine(order, t), [x], 0)


def test_erfcinv_and_gammasgn():
    y = np.array([0.0, 1e-300, 1e-20, 0.01, 0.5, 1.0, 1.5, 1.99, 2.0, 2.5])
    _close(P.erfcinv(y), scipy.special.erfcinv(y), rtol=1e-13)
    check(P.erfcinv, scipy.special.erfcinv, [np.array([1e-3, 0.02, 0.7, 1.4, 1.95])], (0,),
          rtol=1e-5)
    x = np.array([0.0, -0.0, -1.0, -1.5, -2.5, 2.0, 0.3, np.nan, np.inf, -np.inf])
    _close(P.gammasgn(x), scipy.special.gammasgn(x))
    t = pb.tensor([0.5, -0.5, -1.5], dtype=pb.float64, requires_grad=True)
    (P.gammasgn(t) * t).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [1.0, -1.0, 1.0])  # its own slope is 0


def _unmodified_special(x):
    """scipy.special code written for numpy."""
    return (scipy.special.j0(x) + scipy.special.y1(x) * scipy.special.jn(2, x)
            + scipy.special.iv(1.5, x) + scipy.special.ive(2, x)
            + scipy.special.erfcinv(x / 10) + scipy.special.yn(3, x)
            * scipy.special.gammasgn(x - 2.5)).sum()


def _differences(f, x, eps=1e-6):
    x = np.asarray(x, np.float64)
    out = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[j] += eps
        lo[j] -= eps
        out[j] = (f(hi) - f(lo)) / (2 * eps)
    return out


def test_unmodified_special_code_under_grad_and_eager():
    x = np.array([1.0, 2.0, 3.0])
    want = _differences(_unmodified_special, x)
    _close(pb.grad(_unmodified_special)(x), want, rtol=1e-7, atol=1e-8)
    t = pb.tensor(x, requires_grad=True)
    _unmodified_special(t).backward()  # scipy's ufuncs on a Tensor: pullback's
    _close(t.grad.numpy(), want, rtol=1e-7, atol=1e-8)


# ------------------------------------------------------------------------ linalg
A = RNG.normal(size=(4, 4)) + 4 * np.eye(4)
SPD = A @ A.T / 4 + np.eye(4)
B = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
Q = RNG.normal(size=(4, 3))
AB = RNG.normal(size=(4, 6)) + np.array([[0.0], [0.0], [6.0], [0.0]])  # (the diagonal: row u)
RHS = RNG.normal(size=(6, 2))


@pytest.mark.parametrize("m", [SPD, A, np.array([[1.0, 2.0], [3.0, 4.0]]),
                               np.array([[1.0, 2.0], [0.0, -1.0]]), np.zeros((2, 2)),
                               np.array([[1.0, 1.0], [0.0, 1.0]])])
def test_sqrtm_values(m):
    with warnings.catch_warnings():  # (scipy warns of the singular one)
        warnings.simplefilter("ignore")
        want = scipy.linalg.sqrtm(m)
    got = L.sqrtm(m)
    assert got.dtype == want.dtype
    _close(got, want, atol=1e-13)


def test_linalg_values():
    _close(L.solve_sylvester(A, B, Q), scipy.linalg.solve_sylvester(A, B, Q), atol=1e-14)
    _close(L.solve_banded((1, 2), AB, RHS), scipy.linalg.solve_banded((1, 2), AB, RHS),
           atol=1e-13)
    _close(L.solve_banded((1, 2), AB, RHS[:, 0]), scipy.linalg.solve_banded((1, 2), AB, RHS[:, 0]),
           atol=1e-13)
    with pytest.raises(ValueError, match="l\\+u\\+1 \\(3\\) does not equal ab.shape\\[0\\]"):
        L.solve_banded((1, 1), AB, RHS)


def test_linalg_gradients():
    check(L.sqrtm, scipy.linalg.sqrtm, [A], (0,), rtol=1e-5)
    check(L.sqrtm, scipy.linalg.sqrtm, [SPD], (0,), rtol=1e-5)
    check_second(L.sqrtm, [SPD], 0)
    check(L.solve_sylvester, scipy.linalg.solve_sylvester, [A, B, Q], (0, 1, 2), rtol=1e-5)
    check_second(lambda b: L.solve_sylvester(A, b, Q), [B], 0)
    check(lambda ab, b: L.solve_banded((1, 2), ab, b),
          lambda ab, b: scipy.linalg.solve_banded((1, 2), ab, b), [AB, RHS], (0, 1),
          rtol=1e-5)


def _unmodified_linalg(m, b, q, ab):
    return ((scipy.linalg.sqrtm(m) ** 2).sum() + (scipy.linalg.solve_sylvester(m, b, q) ** 3).sum()
            + (scipy.linalg.solve_banded((1, 2), ab, RHS) ** 2).sum())


def test_unmodified_linalg_code_under_grad():
    got = pb.grad(_unmodified_linalg, argnums=(0, 1, 2, 3))(A, B, Q, AB)
    args = [A, B, Q, AB]
    for i, g in enumerate(got):
        def f(x, i=i):
            a = list(args)
            a[i] = x
            return _unmodified_linalg(*a)
        _close(g, _differences(f, args[i]), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------------ signal
@pytest.mark.parametrize("s1,s2", [((7,), (3,)), ((3,), (7,)), ((5, 6), (2, 3)),
                                   ((2, 3), (5, 6)), ((4, 5, 3), (2, 2, 2)), ((5,), (4,))])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_values(s1, s2, mode):
    a, b = RNG.normal(size=s1), RNG.normal(size=s2)
    _close(S.convolve(a, b, mode=mode), scipy.signal.convolve(a, b, mode=mode), atol=1e-13)


def test_convolve_errors_as_scipys():
    with pytest.raises(ValueError, match="same dimensionality"):
        S.convolve(np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="at least as large"):
        S.convolve(np.ones((2, 5)), np.ones((3, 2)), mode="valid")


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_convolve_gradients(mode):
    a, b = RNG.normal(size=(5, 4)), RNG.normal(size=(2, 3))
    check(lambda x, y: S.convolve(x, y, mode=mode),
          lambda x, y: scipy.signal.convolve(x, y, mode=mode), [a, b], (0, 1))


def _unmodified_signal(a, b):
    return (scipy.signal.convolve(a, b, mode="same") ** 2).sum() + scipy.signal.convolve(a, b).sum()


def test_unmodified_convolve_under_grad():
    a, b = RNG.normal(size=(6,)), RNG.normal(size=(3,))
    ga, gb = pb.grad(_unmodified_signal, argnums=(0, 1))(a, b)
    _close(ga, _differences(lambda x: _unmodified_signal(x, b), a), rtol=1e-6, atol=1e-7)
    _close(gb, _differences(lambda y: _unmodified_signal(a, y), b), rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------- stats
@pytest.mark.parametrize("fn", ["logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"])
def test_chi2(fn):
    x = np.array([0.05, 0.5, 2.0, 7.0, 30.0])
    mine, theirs = getattr(T.chi2, fn), getattr(scipy.stats.chi2, fn)
    _close(mine(x, 3.5, loc=0.01, scale=1.3), theirs(x, 3.5, loc=0.01, scale=1.3), rtol=1e-11)
    _close(mine(np.array([-1.0, 0.0]), 2.0), theirs(np.array([-1.0, 0.0]), 2.0))
    check(lambda x, df, s: mine(x, df, scale=s), lambda x, df, s: theirs(x, df, scale=s),
          [x, np.full(5, 3.5), 1.3], (0, 1), rtol=1e-5)


def test_multivariate_normal_entropy():
    _close(T.multivariate_normal.entropy(cov=SPD), scipy.stats.multivariate_normal.entropy(cov=SPD))
    _close(T.multivariate_normal.entropy([1.0, 2.0], 2.0),
           scipy.stats.multivariate_normal.entropy([1.0, 2.0], 2.0))
    # (the gradient of a symmetric cov, as logpdf's and torch's; scipy reads one triangle)
    check(lambda c: T.multivariate_normal.entropy(cov=c),
          lambda c: scipy.stats.multivariate_normal.entropy(cov=(c + c.T) / 2), [SPD], (0,),
          rtol=1e-5)


def _unmodified_stats(c, df):
    return (scipy.stats.multivariate_normal.entropy(cov=c @ c.T + np.eye(2))
            + scipy.stats.chi2.logpdf(2.0, df) + scipy.stats.chi2.cdf(1.5, df))


def test_unmodified_stats_under_grad():
    c, df = np.array([[2.0, 0.5], [0.5, 1.0]]), 3.0
    gc, gdf = pb.grad(_unmodified_stats, argnums=(0, 1))(c, df)
    _close(gc, _differences(lambda x: _unmodified_stats(x, df), c), rtol=1e-6, atol=1e-8)
    assert gdf == pytest.approx(_differences(lambda d: _unmodified_stats(c, float(d)),
                                             np.array(df)), rel=1e-6)


# -------------------------------------------------------------------- pb.special
@pytest.mark.parametrize("name", ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
                                  "modified_bessel_i0", "modified_bessel_i1",
                                  "modified_bessel_k0", "modified_bessel_k1",
                                  "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
                                  "i0", "i0e",
                                  "i1", "i1e", "erfcx", "log_ndtr"])
def test_pb_special_names_as_torchs(name):
    """torch.special's names, with torch's values (torch's Cephes forms of the Bessel
    functions of the first and second kind are good to about 1e-8 relative near x = 7.5,
    where pullback's agree with scipy's and mpmath's to 1e-15), differentiable (torch's
    bessel_j0... are not): gradients against central differences."""
    torch = pytest.importorskip("torch")
    x = np.array([0.2, 0.5, 3.0, 7.5, 30.0])
    want = getattr(torch.special, name)(torch.tensor(x)).numpy()
    fn = getattr(pb.special, name)
    t = pb.tensor(x, requires_grad=True)
    out = fn(t)
    _close(out.detach().numpy(), want, rtol=1e-7)
    out.sum().backward()
    eps = 1e-6
    fd = (fn(pb.tensor(x + eps)).numpy() - fn(pb.tensor(x - eps)).numpy()) / (2 * eps)
    _close(t.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
