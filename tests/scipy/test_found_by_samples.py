"""What writing the scientific samples (samples/bbvi.py, gaussian_process.py,
mixture_model.py, neural_ode.py) found that pullback does not do yet: each a strict xfail
until it is fixed, with what a user writes and what should happen."""

import numpy as np
import pytest
from scipy.integrate import odeint
from scipy.linalg import cho_factor, cho_solve, solve_triangular

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


@pytest.mark.xfail(strict=True, reason="the source pass routes no scipy.linalg function: "
                   "cho_factor/cho_solve on traced values refuse the conversion to numpy")
def test_scipy_linalg_cho_solve_differentiates():
    theta = np.array([0.2, -1.0])
    np.testing.assert_allclose(pb.grad(quadratic_form)(theta),
                               differences(quadratic_form, theta), rtol=1e-6)


@pytest.mark.xfail(strict=True, reason="scipy >= 1.15 wraps scipy.linalg's functions in "
                   "_lib._util's `wrapper`: the message names `scipy.wrapper`")
def test_the_refusal_names_the_scipy_linalg_function():
    def f(theta):
        return solve_triangular(kernel(theta), Y, lower=True).sum()

    with pytest.raises(RuntimeError, match=r"^scipy\.linalg\.solve_triangular converts"):
        pb.grad(f)(np.array([0.2, -1.0]))


@pytest.mark.xfail(strict=True, reason="scipy's odeint is routed only when an argument is "
                   "traced; a field closing over one gets scipy's, whose message sends the "
                   "user to pullback's odeint, which refuses closures inside a trace")
def test_odeint_with_a_traced_closure_says_pass_it_as_an_argument():
    def final(k):
        return odeint(lambda y, t: -k * y, np.array([1.0]), np.array([0.0, 1.0]))[-1, 0]

    with pytest.raises(TypeError, match=r"pass them as arguments instead"):
        pb.grad(final)(0.5)


@pytest.mark.xfail(strict=True, reason="routed to pullback's odeint, args=array is taken "
                   "as a sequence of arguments; scipy requires a tuple")
def test_odeint_args_must_be_a_tuple_as_in_scipy():
    def final(p):
        return odeint(lambda y, t, p: -p[0] * y, np.array([1.0]), np.array([0.0, 1.0]),
                      args=p)[-1, 0]

    with pytest.raises(Exception, match=r"Extra arguments must be in a tuple"):
        final(np.array([0.5, 1.0]))  # scipy's own error, eagerly
    with pytest.raises(Exception, match=r"Extra arguments must be in a tuple"):
        pb.grad(final)(np.array([0.5, 1.0]))
