"""pullback.scipy.linalg against scipy.linalg: values (one matrix, vector and matrix
right-hand sides, a batch), gradients against central differences of scipy's own
function, pb.grad against eager, a second derivative, scipy's errors; and unmodified
scipy code under pb.grad and pb.compile (the source pass routes scipy.linalg's calls)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl
from scipy_checks import check, check_second

import pullback as pb
from pullback.scipy import linalg as L

RNG = np.random.default_rng(3)
M = np.eye(3) + 0.3 * RNG.standard_normal((3, 3))  # well conditioned, not symmetric
B2 = RNG.standard_normal((3, 2))
B1 = RNG.standard_normal(3)
X = RNG.standard_normal((3, 3))
SPD = X @ X.T / 3 + np.eye(3)


def spd(x):
    """A symmetric positive-definite matrix of any square x (Tensor or array)."""
    return x @ x.T / 3 + np.eye(3)


# (pullback's call, scipy's call) on the same arguments
VALUES = {
    "solve_triangular lower": (lambda m: m.solve_triangular(M, B2, lower=True)),
    "solve_triangular upper vector": (lambda m: m.solve_triangular(M, B1)),
    "solve_triangular trans=T unit": (
        lambda m: m.solve_triangular(M, B2, trans="T", lower=True, unit_diagonal=True)),
    "solve_triangular trans=1": (lambda m: m.solve_triangular(M, B1, trans=1)),
    "solve_triangular batch": (lambda m: m.solve_triangular(np.stack([M, M.T]), B2)),
    "cholesky": (lambda m: m.cholesky(SPD)),
    "cholesky lower": (lambda m: m.cholesky(SPD, lower=True)),
    "cholesky reads the upper triangle": (lambda m: m.cholesky(np.triu(SPD))),
    "cho_solve lower": (lambda m: m.cho_solve(m.cho_factor(SPD, lower=True), B2)),
    "cho_solve upper vector": (lambda m: m.cho_solve(m.cho_factor(SPD), B1)),
    "solve": (lambda m: m.solve(M, B2)),
    "solve vector": (lambda m: m.solve(M, B1)),
    "solve transposed": (lambda m: m.solve(M, B1, transposed=True)),
    "solve pos": (lambda m: m.solve(np.triu(SPD), B2, assume_a="pos")),
    "solve pos lower": (lambda m: m.solve(np.tril(SPD), B1, assume_a="pos", lower=True)),
    "solve sym reads one triangle": (lambda m: m.solve(np.triu(M), B2, assume_a="sym")),
    "solve sym lower transposed": (
        lambda m: m.solve(np.tril(M), B1, assume_a="sym", lower=True, transposed=True)),
    "solve lower triangular": (lambda m: m.solve(M, B2, assume_a="lower triangular")),
    "solve upper triangular transposed": (
        lambda m: m.solve(M, B1, assume_a="upper triangular", transposed=True)),
    "inv": (lambda m: m.inv(M)),
    "det": (lambda m: m.det(M)),
    "det batch": (lambda m: m.det(np.stack([M, SPD]))),
    "expm": (lambda m: m.expm(M)),
    "ints": (lambda m: m.solve_triangular([[2, 0], [1, 4]], [2, 9], lower=True)),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_values_are_scipys(name):
    got, want = VALUES[name](L), VALUES[name](sl)
    assert isinstance(got, (np.ndarray, np.floating)) and np.shape(got) == np.shape(want)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# (f of module and arguments, arguments, which to differentiate)
GRADS = {
    "solve_triangular lower": (lambda m, a, b: m.solve_triangular(a, b, lower=True),
                               [M, B2], (0, 1)),
    "solve_triangular upper trans=T": (lambda m, a, b: m.solve_triangular(a, b, trans=1),
                                       [M, B1], (0, 1)),
    "solve_triangular unit_diagonal": (
        lambda m, a, b: m.solve_triangular(a, b, lower=True, unit_diagonal=True),
        [M, B2], (0, 1)),
    "cholesky": (lambda m, x: m.cholesky(spd(x)), [X], (0,)),
    "cho_solve": (lambda m, x, b: m.cho_solve(m.cho_factor(spd(x), lower=True), b),
                  [X, B2], (0, 1)),
    "cho_solve upper": (lambda m, x, b: m.cho_solve(m.cho_factor(spd(x)), b), [X, B1], (0, 1)),
    "solve": (lambda m, a, b: m.solve(a, b), [M, B2], (0, 1)),
    "solve pos": (lambda m, x, b: m.solve(spd(x), b, assume_a="pos"), [X, B1], (0, 1)),
    "solve sym": (lambda m, a, b: m.solve(a, b, assume_a="sym"), [M + M.T, B2], (0, 1)),
    "inv": (lambda m, a: m.inv(a), [M], (0,)),
    "det": (lambda m, a: m.det(a), [M], (0,)),
    "expm": (lambda m, a: m.expm(a), [M], (0,)),
}


@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_differences_of_scipy(name):
    f, args, wrt = GRADS[name]
    check(lambda *a: f(L, *a), lambda *a: f(sl, *a), args, wrt)


def test_second_derivative_of_solve_triangular():
    check_second(lambda a, b: L.solve_triangular(a, b, lower=True), [M, B2], 0)


def test_gradient_of_a_is_zero_off_its_triangle():
    a = pb.tensor(M, requires_grad=True)
    L.solve_triangular(a, B2, lower=True).sum().backward()
    g = a.grad.numpy()
    assert not np.triu(g, 1).any() and g[np.tril_indices(3)].all()


def test_errors_are_scipys():
    with pytest.raises(np.linalg.LinAlgError, match="^2-th leading minor of the array is "
                       "not positive definite$"):
        L.cholesky(pb.tensor([[1.0, 2.0], [2.0, 1.0]], requires_grad=True))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        L.solve(np.ones((2, 2)), np.ones(2))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        L.inv(pb.tensor(np.ones((2, 2))))
    with pytest.raises(ValueError, match="at least two-dimensional"):
        L.det(np.ones(3))
    with pytest.raises(ValueError, match="invalid trans"):
        L.solve_triangular(M, B1, trans=3)
    with pytest.raises(ValueError, match="not a recognized matrix structure"):
        L.solve(M, B1, assume_a="round")


# ------------------------------------------------------------- unmodified scipy code
T = np.linspace(0.0, 2.0, 5)
Y = np.sin(3 * T)


def gp_nll(theta):
    """A Gaussian process's negative log marginal likelihood, written for scipy."""
    K = np.exp(theta[1]) * np.exp(-0.5 * (T[:, None] - T[None, :]) ** 2 / np.exp(2 * theta[0]))
    K = K + 0.1 * np.eye(len(T))
    Lk = sl.cholesky(K, lower=True)
    alpha = sl.solve_triangular(Lk, Y, lower=True)
    return 0.5 * alpha @ alpha + np.log(np.diag(Lk)).sum()


def matrix_functions(theta):
    A = np.array([[1.0, theta[0]], [theta[1], 2.0]])
    return (sl.expm(A).sum() + sl.det(A) + sl.inv(A)[0, 1]
            + sl.solve(A, np.array([1.0, 2.0]))[1]
            + sl.cho_solve(sl.cho_factor(A @ A.T + np.eye(2)), np.ones(2)).sum())


def differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


@pytest.mark.parametrize("f", [gp_nll, matrix_functions])
def test_scipy_linalg_code_differentiates_under_grad_and_compile(f):
    theta = np.array([0.2, -0.3])
    want = differences(f, theta)
    np.testing.assert_allclose(pb.grad(f)(theta), want, rtol=1e-6)
    t = pb.tensor(theta, requires_grad=True)
    out = pb.compile(f)(t)
    out.backward()
    assert out.item() == pytest.approx(f(theta), rel=1e-12)
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-6)


def test_except_linalg_error_works_under_grad():
    """GP code that adds jitter when the factorization fails: scipy's error type."""
    def f(x):
        K = np.outer(x, x)  # rank one: not positive definite
        try:
            return sl.cholesky(K, lower=True).sum()
        except np.linalg.LinAlgError:
            return sl.cholesky(K + np.eye(2), lower=True).sum()

    x = np.array([1.0, 0.5])
    np.testing.assert_allclose(pb.grad(f)(x), differences(f, x), rtol=1e-6)
