"""What writing the scientific samples (samples/bbvi.py, gaussian_process.py,
mixture_model.py, neural_ode.py) found that pullback did not do, with what a user writes
and what should happen (each was a strict xfail until it was fixed)."""

import numpy as np
import pytest
from scipy.integrate import odeint
from scipy.linalg import cho_factor, cho_solve, lu_factor, solve_triangular

import pullback as pb

Y = np.array([1.0, -0.5, 0.25])


def kernel(theta):
    d = np.arange(3.0)[:, None] - np.arange(3.0)[None, :]
    return np.exp(-0.5 * d ** 2 / np.exp(2 * theta[0])) + np.exp(theta[1]) * np.eye(3)


def quadratic_form(theta):
    """y^T K^-1 y, as GP code writes it with scipy.linalg."""
    return Y @ cho_solve(cho_factor(kernel(theta), lower=True), Y)


def differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def test_scipy_linalg_cho_solve_differentiates():
    """Routed to pullback.scipy.linalg's cho_factor and cho_solve."""
    theta = np.array([0.2, -1.0])
    np.testing.assert_allclose(pb.grad(quadratic_form)(theta),
                               differences(quadratic_form, theta), rtol=1e-6)


def test_the_refusal_names_the_scipy_linalg_function():
    """scipy >= 1.15 wraps scipy.linalg's functions in scipy._lib's ``wrapper``: the
    message names the function it wraps. (Under pb.grad solve_triangular is routed to
    pullback's; called eagerly on a Tensor, scipy's own refuses; lu_factor has no
    pullback version.)"""
    with pytest.raises(RuntimeError, match=r"^scipy\.linalg\.solve_triangular converts.*"
                       r"use pullback\.scipy\.linalg\.solve_triangular instead"):
        solve_triangular(pb.tensor(np.eye(3), requires_grad=True), Y, lower=True)
    with pytest.raises(RuntimeError, match=r"^scipy\.linalg\.lu_factor converts.*"
                       "pullback has no version of it yet"):
        pb.grad(lambda theta: lu_factor(kernel(theta))[0].sum())(np.array([0.2, -1.0]))


def test_odeint_with_a_traced_closure_says_pass_it_as_an_argument():
    """A scipy call is routed when a callable argument closes over a traced value too:
    pullback's odeint then says what to do."""
    def final(k):
        return odeint(lambda y, t: -k * y, np.array([1.0]), np.array([0.0, 1.0]))[-1, 0]

    with pytest.raises(TypeError, match=r"pass them as arguments instead"):
        pb.grad(final)(0.5)


def test_odeint_args_must_be_a_tuple_as_in_scipy():
    """Routed to pullback's odeint, args=array is refused as scipy refuses it."""
    def final(p):
        return odeint(lambda y, t, p: -p[0] * y, np.array([1.0]), np.array([0.0, 1.0]),
                      args=p)[-1, 0]

    with pytest.raises(Exception, match=r"Extra arguments must be in a tuple"):
        final(np.array([0.5, 1.0]))  # scipy's own error, eagerly
    with pytest.raises(Exception, match=r"Extra arguments must be in a tuple"):
        pb.grad(final)(np.array([0.5, 1.0]))
