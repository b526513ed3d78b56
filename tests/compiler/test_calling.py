"""Calling conventions of the front doors: keywords, methods, partials, defaults."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pullback as pb

W, X = np.array([1.0, 2.0, 3.0]), np.eye(3)
ONES = np.ones(3)


def loss(w, x, scale=2.0):
    return (scale * (x @ w) ** 2).sum()


def test_keyword_arguments_are_traced_like_positional_ones():
    g = pb.grad(loss)
    np.testing.assert_allclose(g(W, x=X), 4 * W)
    np.testing.assert_allclose(g(W, X, scale=1.0), 2 * W)
    np.testing.assert_allclose(g(w=W, x=X, scale=3.0), 6 * W)
    # a call with keywords binds the defaults too, and scale is a traced float: one trace
    assert g.cache.info.misses == 1
    with pytest.raises(TypeError, match="grad: loss .*unexpected keyword argument 'z'"):
        g(W, X, z=1)


def test_a_compiled_method_binds_its_instance():
    class Model:
        def __init__(self, w):
            self.w = pb.tensor(w, requires_grad=True)

        @pb.compile
        def forward(self, x):
            return (x * self.w).sum()

    a, b = Model(W), Model(2 * W)
    x = pb.tensor(W)
    a.forward(x).backward()
    b.forward(x=x).backward()
    np.testing.assert_allclose(a.w.grad.numpy(), W)
    np.testing.assert_allclose(b.w.grad.numpy(), W)
    assert Model.forward.cache.info.misses == 2  # instances are part of the key


def test_partials_and_defaults():
    g = pb.grad(functools.partial(loss, scale=0.5))
    np.testing.assert_allclose(g(W, X), W)
    np.testing.assert_allclose(pb.grad(loss)(W, X), 4 * W)


def test_a_keyword_after_a_left_out_default_takes_the_default():
    def f(x, w=ONES, lam=2.0):
        return (x * w).sum() * lam
    np.testing.assert_allclose(pb.grad(f)(W, lam=3.0), [3.0, 3.0, 3.0])
    assert pb.grad(f, argnums=2)(W, lam=3.0) == 6.0  # lam is argument 2
    out, vjp_fn = pb.vjp(functools.partial(f, lam=4.0), W)
    np.testing.assert_allclose(vjp_fn(1.0)[0], [4.0, 4.0, 4.0])


def test_keyword_only_parameters_are_refused_clearly():
    with pytest.raises(TypeError, match="keyword-only or \\*\\*kwargs arguments \\(k\\)"):
        pb.compile(lambda x, *, k: x * k)(pb.ones(2), k=2.0)
