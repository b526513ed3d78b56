"""scipy code unmodified under pb.grad and pb.compile: the source pass routes calls of
scipy's functions and, on traced values, calls pullback.scipy's (scipy/_calls.py)."""

import numpy as np
import pytest
import scipy.special
import scipy.stats
from scipy.integrate import odeint
from scipy.special import logsumexp
from scipy.stats import multivariate_normal, norm

import pullback as pb

MU = np.array([0.3, -0.2, 0.5])
X = np.array([1.0, 0.5, -0.4])


def log_density(mu, x):
    """A model written for numpy and scipy only."""
    return (norm.logpdf(x, mu, 2.0).sum() + logsumexp(mu * x)
            + scipy.stats.norm.logcdf(mu).sum() + scipy.special.gammaln(mu + 2.0).sum()
            + multivariate_normal.logpdf(x[:2], mu[:2], np.eye(2)))


def differences(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(len(x))])


def test_scipy_calls_differentiate_under_grad_and_compile():
    want = differences(lambda m: log_density(m, X), MU)
    np.testing.assert_allclose(pb.grad(log_density)(MU, X), want, rtol=1e-6)
    mu = pb.tensor(MU, requires_grad=True)
    out = pb.compile(log_density)(mu, pb.tensor(X))
    out.backward()
    assert out.item() == pytest.approx(log_density(MU, X))
    np.testing.assert_allclose(mu.grad.numpy(), want, rtol=1e-6)


def test_scipy_on_plain_arrays_stays_scipys():
    """Without a traced value the call is scipy's own, with scipy's result."""
    def f(x):
        return norm.logpdf(X).sum() * x.sum()  # the constant part is scipy's float

    np.testing.assert_allclose(pb.grad(f)(MU), np.full(3, norm.logpdf(X).sum()))


def test_odeint_unmodified_gives_gradients_of_its_arguments():
    def decay(y, t, k):
        return -k * y

    def final(k):
        return odeint(decay, np.array([1.0, 2.0]), np.array([0.0, 1.0]), args=(k,))[-1].sum()

    assert pb.grad(final)(0.5) == pytest.approx(-3 * np.exp(-0.5), rel=1e-6)


def test_a_frozen_distribution_names_what_to_use():
    """``norm(mu).logpdf`` fixed its parameters before the call: not replaced, and the
    error names pullback's function."""
    def f(mu):
        return norm(mu).logpdf(X).sum()

    with pytest.raises(RuntimeError, match=r"use pullback.scipy.stats.norm.logpdf instead"):
        pb.grad(f)(MU)
