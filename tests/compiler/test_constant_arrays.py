"""A constant ndarray beside a traced value never becomes a guard on the traced value:
an optimisation loop over a global data matrix runs one variant."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pullback as pb
from pullback.compiler.user_lines import Guard

X = np.random.default_rng(0).standard_normal((20, 5))


@pytest.mark.parametrize("f", [
    lambda w: np.tanh(X @ w).sum(), lambda w: (w @ X.T).sum(), lambda w: (X * w).sum(),
    lambda w: (X + w).sum(), lambda w: np.dot(X, w).sum(), lambda w: np.sum(X - w) * np.ndim(w),
], ids=["X@w", "w@X.T", "X*w", "X+w", "np.dot", "np.ndim"])
def test_steps_over_a_global_matrix_reuse_one_variant(f):
    vg = pb.value_and_grad(f)
    w = np.zeros(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(50):
            _, g = vg(w)
            w = w - 0.01 * g
    assert vg.cache.info.misses == 1 and vg.cache.info.hits == 49


def test_a_guard_message_shows_an_array_by_its_shape():
    g = Guard(None, "__array__", np.arange(600.0), None)
    assert g.describe() == "__array__() of a traced value was an array of shape (600,) (float64)"
