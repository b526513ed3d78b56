"""An early ``return`` that reads the item of an array the loop walks (``for x in xs``,
``zip``, ``enumerate``): the item is carried out of the loop (``returns.py``), so the
loop is a while region and a new stopping step needs no new trace. Checked against
central finite differences (float64), the eager run, ``pb.value_and_grad`` and
``pb.compile``."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb

RNG = np.random.default_rng(7)
W = RNG.standard_normal((3, 3)) * 0.5


def each(xs, w):
    h = np.zeros(3)
    for x in xs:
        h = np.tanh(h @ w + x)
        if np.sum(h) > 1.0:
            return np.sum(h * x)
    return np.sum(h)


def zipped(xs, w):
    h = np.zeros(3)
    ys = xs[::-1]
    for x, y in zip(xs, ys):
        h = np.tanh(h @ w + x)
        if np.sum(h) > 1.0:
            return np.sum(h * x + y)
    return np.sum(h)


def counted(xs, w):
    h = np.zeros(3)
    for i, x in enumerate(xs):
        h = np.tanh(h @ w + x)
        if np.sum(h) > 1.0:
            return np.sum(h * x) * i
    return np.sum(h)


@pytest.mark.parametrize("f", [each, zipped, counted])
def test_a_return_reading_the_walked_item_converts_and_traces_once(f) -> None:
    g = pb.grad(f)
    steps = set()
    for scale in (0.05, 0.5, 0.9, 1.5):  # (it returns at a different step, or never)
        xs = RNG.random((6, 3)) * scale
        np.testing.assert_allclose(g(xs, W), fd(lambda a: f(a, W), xs), rtol=1e-6,
                                   atol=1e-9)
        value, grad = pb.value_and_grad(f)(xs, W)
        assert float(value) == pytest.approx(f(xs, W), rel=1e-12)
        np.testing.assert_allclose(grad, g(xs, W), rtol=1e-12)
        assert float(pb.compile(f)(xs, W)) == pytest.approx(f(xs, W), rel=1e-12)
        steps.add(_stop(f, xs))
        assert pb.compiler.inspect(g, xs, W).loops == ()
    assert len(steps) > 1 and g.cache.info.misses == 1


def _stop(f, xs) -> int:
    h = np.zeros(3)
    for k, x in enumerate(xs):
        h = np.tanh(h @ W + x)
        if np.sum(h) > 1.0:
            return k
    return -1
