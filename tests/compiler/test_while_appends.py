"""A fresh list appended to in a ``while`` loop, or before the ``break`` of a ``for``
loop, and read whole after it: the source pass makes the appended values the while
region's per-step outputs (stacked as long as it ran; the reverse loop reads their
gradient row by row), so the loop is traced once, whatever its trip count, and the
generated code holds the body once. Checked against central finite differences
(float64) and the function run eagerly.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb

W = np.array([[0.9, 0.2], [-0.3, 0.8]])
RNG = np.random.default_rng(3)


def newton_iterates(a):
    x = a * 1.0
    xs = []
    while np.abs(x * x - a).max() > 1e-9:
        x = 0.5 * (x + a / x)
        xs.append(x)
    return (np.stack(xs) ** 2).sum() + len(xs)


def counted_while(a):
    x, k = a * 1.0, 0
    ys = []
    while k < 4:
        x = np.sin(x) * 1.5
        ys.append(x.sum())
        k = k + 1
    return sum(ys) + np.array(ys)[1] * ys[-1]


def rnn_until_converged(xs, w):
    h = np.zeros(2)
    hs = []
    for x in xs:
        h = np.tanh(h @ w + x)
        hs.append(h)
        if np.abs(h).sum() > 1.2:
            break
    return (np.stack(hs) ** 2).sum()


def range_with_break(xs, w):
    h = np.zeros(2)
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t])
        hs.append(h * 2.0)
        if np.abs(h).sum() > 1.2:
            break
        h = h * 0.9
    total = 0.0
    for r in hs:
        total = total + (r * r).sum()
    return total + sum(hs)[0]


def appends_after_the_break(xs, w):
    h = np.zeros(2)
    hs = []
    for x in xs:
        h = np.tanh(h @ w + x)
        if np.abs(h).sum() > 1.2:
            break
        hs.append(h)  # (the step that breaks does not append: left unrolled)
    return np.stack(hs).sum()


def _xs(n: int) -> np.ndarray:
    return RNG.normal(size=(n, 2)) * 0.4


def test_newton_iterates_collected_in_a_while_loop() -> None:
    g, vg, c = pb.grad(newton_iterates), pb.value_and_grad(newton_iterates), \
        pb.compile(newton_iterates)
    for a in ([2.0, 3.0], [2.0, 300.0], [2.0, 3.0]):
        a = np.array(a)
        np.testing.assert_allclose(g(a), fd(newton_iterates, a), rtol=1e-6, atol=1e-8)
        value, grad = vg(a)
        assert float(value) == pytest.approx(newton_iterates(a), rel=1e-12)
        np.testing.assert_allclose(grad, g(a), rtol=1e-12)
        assert float(c(a)) == pytest.approx(newton_iterates(a), rel=1e-12)
        t = pb.tensor(a, requires_grad=True)
        c(t).backward()  # (pb.compile's backward)
        np.testing.assert_allclose(t.grad.numpy(), g(a), rtol=1e-10)
    info = pb.compiler.inspect(g, np.array([2.0, 3.0]))
    assert info.loops == ()
    assert info.forward.count("while True:") == 1
    assert g.cache.info.misses == 2  # (a trip count is guarded: the stacks' length)
    hit = g.cache.info.hits
    g(np.array([2.0, 3.0]))
    assert g.cache.info.hits == hit + 1


def test_a_counted_while_loop_collects_scalars() -> None:
    a = np.array([0.3, 0.7])
    g = pb.grad(counted_while)
    np.testing.assert_allclose(g(a), fd(counted_while, a), rtol=1e-6, atol=1e-8)
    assert pb.compiler.inspect(g, a).loops == ()
    np.testing.assert_allclose(pb.jacfwd(counted_while)(a), g(a), rtol=1e-10)


@pytest.mark.parametrize("f", [rnn_until_converged, range_with_break])
def test_a_for_loop_appending_before_its_break_is_a_region(f) -> None:
    g, c = pb.grad(f, argnums=(0, 1)), pb.compile(f)
    for n in (3, 6, 9):
        xs = _xs(n)
        gx, gw = g(xs, W)
        np.testing.assert_allclose(gx, fd(lambda v: f(v, W), xs), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gw, fd(lambda w, xs=xs: f(xs, w), W), rtol=1e-6,
                                   atol=1e-8)
        assert float(c(xs, W)) == pytest.approx(f(xs, W), rel=1e-12)
        if f is rnn_until_converged:  # (the eager Tensor run, the list as written)
            we = pb.tensor(W, requires_grad=True)
            f(pb.tensor(xs), we).backward()
            np.testing.assert_allclose(gw, we.grad.numpy(), rtol=1e-10)
    info = pb.compiler.inspect(g, xs, W)
    assert info.loops == ()
    short = pb.compiler.inspect(pb.grad(f, argnums=(0, 1)), xs[:3], W).forward
    assert abs(len(info.forward) - len(short)) < 20  # (the body once)


def test_an_append_after_the_break_keeps_the_loop_unrolled() -> None:
    xs = _xs(5)
    g = pb.grad(appends_after_the_break, argnums=1)
    np.testing.assert_allclose(g(xs, W), fd(lambda w: appends_after_the_break(xs, w), W),
                               rtol=1e-6, atol=1e-8)
    assert any("hs.append" in n for n in pb.compiler.inspect(g, xs, W).loops)


def test_a_loop_that_runs_no_step_gives_an_empty_stack() -> None:
    def f(a):
        x = a * 1.0
        xs = []
        while np.abs(x * x - a).max() > 1e-9:
            x = 0.5 * (x + a / x)
            xs.append(x)
        return x.sum() * (len(xs) + 1)
    a = np.array([1.0, 4.0])
    c = pb.compile(f)
    assert float(c(a)) == pytest.approx(f(a))
    assert float(c(np.array([1.0, 1.0]))) == pytest.approx(f(np.array([1.0, 1.0])))
    np.testing.assert_allclose(pb.grad(f)(a), fd(f, a), rtol=1e-6, atol=1e-8)


def test_vmap_of_a_while_loop_appending_runs_per_element() -> None:
    a = np.array([[2.0, 3.0], [4.0, 0.5]])
    with pytest.warns(UserWarning, match="once per batch element"):
        out = pb.vmap(pb.grad(newton_iterates))(a)
    for row, o in zip(a, out):
        np.testing.assert_allclose(o, fd(newton_iterates, row), rtol=1e-6, atol=1e-8)


def test_second_order_through_the_stacked_iterates() -> None:
    a = np.array([2.0, 3.0])
    g = pb.grad(newton_iterates)
    h = np.array([(g(a + 1e-5 * e) - g(a - 1e-5 * e)) / 2e-5 for e in np.eye(2)])
    np.testing.assert_allclose(pb.hessian(newton_iterates)(a), h, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(pb.jacrev(pb.grad(newton_iterates))(a), h, rtol=1e-5,
                               atol=1e-7)
