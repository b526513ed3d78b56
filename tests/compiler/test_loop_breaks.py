"""``for`` loops with a ``break`` as lean while regions: a step's row ``xs[t]`` is read
as the item op's row (``xs[t]`` in the generated code, ``g_xs[t] += ...`` in its
reverse), and an ``if test: break`` first in the body is part of the loop's condition
(``t < n and not test``: no flag, no branch to rerun in the reverse loop). Checked
against central finite differences (float64), eager code and ``pb.compile``, with one
trace over several trip counts."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb

RNG = np.random.default_rng(3)
XS = RNG.standard_normal((9, 2, 3))
W = RNG.standard_normal((3, 3)) * 0.5


def break_last(xs, w, limit):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t])
        total = total + h.sum()
        if total < limit:
            break
    return total + (h * h).sum()


def break_first(xs, w, limit):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for t in range(xs.shape[0]):
        if total < limit:
            break
        h = np.tanh(h @ w + xs[t])
        total = total + h.sum()
    return total + (h * h).sum()


def break_first_at_t(xs, w, limit):  # (the test reads t: the flag stays)
    h = np.zeros(xs.shape[1:])
    for t in range(xs.shape[0]):
        if xs[t].sum() > limit:
            break
        h = np.tanh(h @ w + xs[t - 1])
    return (h * h).sum()


def while_break_first(a, limit):
    x, total = a, a * 0
    while x > 1.0:
        if total > limit:
            break
        x = x * 0.7
        total = total + x
    return x + total


LIMITS = (1.0, 0.0, -1.0, -2.5, -3.0)  # (0 to 3 steps, or all 9: a total of -2.87 at most)


@pytest.mark.parametrize("f", [break_last, break_first, break_first_at_t])
def test_gradients_over_several_trip_counts_trace_once(f) -> None:
    vg = pb.value_and_grad(f, argnums=(0, 1))
    compiled = pb.compile(f)
    for limit in LIMITS:
        value, (g_xs, g_w) = vg(XS, W, limit)
        assert value == pytest.approx(f(XS, W, limit), rel=1e-12)
        np.testing.assert_allclose(np.asarray(compiled(XS, W, limit)), value, rtol=1e-12)
        np.testing.assert_allclose(g_w, fd(lambda w, lim=limit: f(XS, w, lim), W),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(g_xs, fd(lambda xs, lim=limit: f(xs, W, lim), XS),
                                   rtol=1e-6, atol=1e-9)
        xs, w = pb.tensor(XS, requires_grad=True), pb.tensor(W, requires_grad=True)
        out = f(xs, w, limit)  # (eager, on Tensors: the user's loop as written)
        if isinstance(out, pb.Tensor):  # (else no step ran: w is not read)
            out.backward()
            np.testing.assert_allclose(g_w, w.grad.numpy(), rtol=1e-12, atol=1e-14)
        else:
            assert not g_w.any()
    assert vg.cache.info.misses == 1 and compiled.cache.info.misses == 1
    info = pb.compiler.inspect(vg, XS, W, 1.0)
    assert info.loops == () and "guard(" not in info.forward
    assert "take" not in info.forward and "index_add" not in info.forward


def test_the_trip_counts_differ() -> None:
    for f in (break_last, break_first, break_first_at_t):
        assert len({round(float(f(XS, W, limit)), 12) for limit in LIMITS}) >= 3


def test_a_leading_break_is_the_loop_s_condition() -> None:
    forward = pb.compiler.inspect(pb.grad(break_first, argnums=1), XS, W, 1.0).forward
    assert "xs[t]" in forward and "else:" not in forward  # (no branch in the loops)
    assert forward.count(" break\n") == 1
    flagged = pb.compiler.inspect(pb.grad(break_first_at_t, argnums=1), XS, W, 1.0).forward
    assert "else:" in flagged  # (its test reads t: the part after it is a branch)


def test_a_while_loop_with_a_leading_break() -> None:
    g = pb.grad(while_break_first)
    for a, limit in ((50.0, 1e9), (50.0, 40.0), (5.0, 1.0), (0.5, 1.0)):
        np.testing.assert_allclose(g(a, limit), fd(lambda x, lim=limit:
                                                    while_break_first(x, lim), a),
                                   rtol=1e-6)
    assert g.cache.info.misses == 1
    info = pb.compiler.inspect(g, 50.0, 40.0)
    assert info.loops == () and "else:" not in info.forward


def over_rows(xs, w, limit):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for x in xs:
        if total < limit:
            break
        h = np.tanh(h @ w + x)
        total = total + h.sum()
    for pair in zip(xs, xs[::-1]):
        if total < limit - 1.0:
            break
        h = h * 0.5 + pair[0] * pair[1]
        total = total + h.sum()
    return total + (h * h).sum()


def test_a_leading_break_over_an_array_s_rows() -> None:
    vg = pb.value_and_grad(over_rows, argnums=(0, 1))
    for limit in LIMITS:
        value, (g_xs, g_w) = vg(XS, W, limit)
        assert value == pytest.approx(over_rows(XS, W, limit), rel=1e-12)
        np.testing.assert_allclose(g_w, fd(lambda w, lim=limit: over_rows(XS, w, lim), W),
                                   rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(g_xs, fd(lambda xs, lim=limit: over_rows(xs, W, lim),
                                            XS), rtol=1e-6, atol=1e-9)
    assert vg.cache.info.misses == 1
    info = pb.compiler.inspect(vg, XS, W, 1.0)
    assert info.loops == () and "else:" not in info.forward


def test_a_leading_break_reading_an_item_stays_behind_the_condition() -> None:
    a = np.array([0.5, 1.0, 2.0, 4.0])

    def scan_while(w, limit):  # (a[k] after the last step would be out of range)
        k, total = 0, w * 0
        while k < 4:
            if a[k] > limit:
                break
            total = total + w * a[k]
            k = k + 1
        return total

    def scan_for(w, limit):
        k, total = 0, w * 0
        for _ in range(4):
            if a[k] * w > limit:
                break
            total = total + w * a[k]
            k = k + 1
        return total
    for f in (scan_while, scan_for):
        g = pb.grad(f)
        for limit in (10.0, 1.5, 0.1):
            numeric = fd(lambda w, lim=limit, f=f: f(w, lim), 1.0)
            np.testing.assert_allclose(g(1.0, limit), numeric, rtol=1e-6)


def while_true_break_last(a, tol):
    x, k = a, 0
    while True:  # Sinkhorn's and Newton's idiom: the only way out is the break
        step = 0.5 * (x - a / x)
        x = x - step
        k += 1
        if abs(step) < tol or k >= 60:
            break
    return x * k


def while_true_break_first(a, limit):
    x, total = a, a * 0
    while True:
        if total > limit:
            break
        x = x * 0.7
        total = total + x
    return x + total


@pytest.mark.parametrize("f, cases", [
    (while_true_break_last, ((2.0, 1e-12), (9.0, 1e-3), (9.0, 1e-12), (0.3, 1e-8))),
    (while_true_break_first, ((50.0, 40.0), (5.0, 1.0), (0.5, 1.0), (5.0, -1.0)))],
    ids=lambda v: getattr(v, "__name__", ""))
def test_while_true_with_a_break_is_a_region(f, cases) -> None:
    """``while True:`` whose break is its only exit: a while region on the break's flag
    (it unrolled, 'the condition is not a traced value', tracing again per trip count)."""
    g = pb.value_and_grad(f)
    for a, arg in cases:
        value, grad = g(a, arg)
        assert value == pytest.approx(f(a, arg), rel=1e-12)
        np.testing.assert_allclose(grad, fd(lambda x, v=arg: f(x, v), a), rtol=1e-6)
    assert g.cache.info.misses == 1
    info = pb.compiler.inspect(g, *cases[0])
    assert info.loops == () and "while True:" in info.forward
