"""Writes through views under ``pb.vmap`` (ops/writes.py's ``view_scatter`` and its
gradient ``embed``): batched by the views' own rules, not once per example."""

from __future__ import annotations

import warnings

import numpy as np

import pullback as pb

RNG = np.random.default_rng(11)


def written(x):
    R = np.full((3, 4), 0.5)
    R[0, 1:3] = x[:2] * 2.0
    R[1] = x[1] * x
    R[2, ::2] = np.sin(x[2:4])
    return R


def _batched(fn, xs):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        got = pb.vmap(fn)(xs)
    looped = [str(w.message) for w in record if "no batching rule" in str(w.message)]
    assert not looped, looped
    return got


def test_writes_through_views_are_batched() -> None:
    xs = RNG.standard_normal((5, 4))
    np.testing.assert_allclose(_batched(written, xs), [written(x) for x in xs], rtol=1e-12)


def test_their_gradients_are_batched() -> None:
    xs = RNG.standard_normal((5, 4))
    w = RNG.standard_normal((3, 4))
    f = pb.grad(lambda x: (written(x) * w).sum())
    np.testing.assert_allclose(_batched(f, xs), [f(x) for x in xs], rtol=1e-12)
    jac = pb.jacrev(written)
    np.testing.assert_allclose(_batched(jac, xs), [jac(x) for x in xs], rtol=1e-12)
