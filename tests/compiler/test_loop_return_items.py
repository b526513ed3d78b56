"""An early ``return`` that reads the item of an array the loop walks (``for x in xs``,
``zip``, ``enumerate``): the item is carried out of the loop (``returns.py``), so the
loop is a while region and a new stopping step needs no new trace. Several returns,
each the last statement of an ``if`` at the body's top level: flags, a ``pb.cond``
skipping the rest of the step, one ``break``. Checked against
central finite differences (float64), the eager run, ``pb.value_and_grad`` and
``pb.compile``."""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb

RNG = np.random.default_rng(7)
W = RNG.standard_normal((3, 3)) * 0.5 + np.eye(3) * 0.5


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


def two_returns(x, w):
    h = x
    for t in range(6):
        h = np.tanh(h @ w) + x
        if np.sum(h) > 2.0:
            return np.sum(h * 2.0)
        h = h * 0.9
        if np.sum(h) < -1.0:
            return np.sum(h) * 3.0 + t
        h = h + 0.1
    return np.sum(h)


def three_returns(x, w):
    h = x
    for t in range(5):
        h = np.tanh(h @ w) + x
        if np.sum(h) > 2.5:
            return np.sum(h * 2.0)
        if np.sum(h) > -1.0:
            h = h * 0.9
        else:
            return np.sum(h) * 3.0 + t
        if np.max(h) > 1.1:
            return np.sum(h) - 1.0
        h = h * 0.9
    return np.sum(h)


def _exits(f, x) -> set:
    """Which return of ``f`` ran (its line), by running it under a trace of lines."""
    hit = set()

    def tracer(frame, event, arg):
        if frame.f_code is f.__code__ and event == "return":
            hit.add(frame.f_lineno)
        return tracer
    sys.settrace(tracer)
    try:
        f(x, W)
    finally:
        sys.settrace(None)
    return hit


@pytest.mark.parametrize("f", [two_returns, three_returns])
def test_several_returns_in_a_loop_convert(f) -> None:
    g = pb.grad(f)
    exits = set()
    for x in [np.array([1.0, 0.6, 0.8]) * s for s in (0.05, 0.8, -1.0)] \
            + [np.array([1.5, -1.0, -0.2])]:
        np.testing.assert_allclose(g(x, W), fd(lambda a: f(a, W), x), rtol=1e-6, atol=1e-9)
        value, grad = pb.value_and_grad(f)(x, W)
        assert float(value) == pytest.approx(f(x, W), rel=1e-12)
        assert float(pb.compile(f)(x, W)) == pytest.approx(f(x, W), rel=1e-12)
        assert pb.compiler.inspect(g, x, W).loops == ()
        exits |= _exits(f, x)
    assert len(exits) == len(_returns(f))  # (each return ran for some x)
    assert g.cache.info.misses <= len(exits)  # (one variant per exit: their ifs guard)


def _returns(f) -> list:
    return [line for line in inspect.getsource(f).splitlines()
            if line.strip().startswith("return")]
