"""Shared test fixtures: the torch oracle (required, never skipped) and numeric helpers."""

from __future__ import annotations

import numpy as np
import pytest

import pullback as pb


@pytest.fixture(scope="session")
def torch():
    """PyTorch as the reference oracle. The test extra installs it; a test that needs
    it fails (it does not skip) when it is missing."""
    try:
        import torch as _torch
    except ImportError:  # pragma: no cover - the test extra installs torch
        pytest.fail("this test compares with PyTorch: pip install -e '.[test]'")
    return _torch


@pytest.fixture(autouse=True)
def fresh_caches():
    """Each test's front doors trace afresh: their caches are shared by function (a
    ``pb.grad`` made again over one function finds the variants of the last), so a
    test counting traces must not find another test's."""
    pb.compiler.reset()


@pytest.fixture
def rng():
    return np.random.default_rng(0)


def numeric_grad(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of scalar ``f`` at float64 ``x``."""
    x = np.array(x, dtype=np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + eps
        hi = f(x)
        x[i] = old - eps
        lo = f(x)
        x[i] = old
        g[i] = (hi - lo) / (2 * eps)
    return g
