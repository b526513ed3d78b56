"""dce drops a loop's carries nothing reads: the reverse loop of a ``for`` with a
``break`` reading ``xs[t]`` sums the gradient of ``xs`` in a carry as large as ``xs``,
each step (quadratic in the trip count); without a gradient asked for ``xs`` it goes."""

from __future__ import annotations

import numpy as np

import pullback as pb


def _rnn(xs: np.ndarray, w: np.ndarray) -> np.ndarray:
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t])
        total = total + h.sum()
        if total > 1e300:
            break
    return total


rng = np.random.default_rng(3)
XS, W = rng.standard_normal((6, 2, 3)), rng.standard_normal((3, 3)) * 0.5


def _fd(f: object, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def test_unasked_gradient_of_a_read_array_is_not_summed() -> None:
    vg = pb.value_and_grad(_rnn, argnums=1)
    value, g = vg(XS, W)
    assert np.isclose(value, _rnn(XS, W))
    np.testing.assert_allclose(g, _fd(lambda w: _rnn(XS, w), W), rtol=1e-6, atol=1e-8)
    source = pb.compiler.inspect(vg, XS, W).forward
    assert "index_add" not in source and "zeros_like(xs)" not in source


def test_asked_gradient_of_a_read_array_is_kept() -> None:
    _, (g_xs, g_w) = pb.value_and_grad(_rnn, argnums=(0, 1))(XS, W)
    np.testing.assert_allclose(g_xs, _fd(lambda xs: _rnn(xs, W), XS), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g_w, _fd(lambda w: _rnn(XS, w), W), rtol=1e-6, atol=1e-8)
