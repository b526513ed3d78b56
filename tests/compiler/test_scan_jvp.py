"""Forward mode's own rule for a scan (transforms/regions_jvp.py): a loop carrying
(primal, tangent) pairs, against the reverse rule's results (``jacrev``) and central
finite differences."""

import numpy as np
import pytest

import pullback as pb
from pullback.ops import OPS

RNG = np.random.default_rng(7)
XS, W = RNG.normal(size=(12, 3, 4)) * 0.5, RNG.normal(size=(4, 4)) * 0.4


def rnn(xs, w):
    def step(h, x):
        h = np.tanh(h @ w + x)
        return h, h * h
    h, ys = pb.scan(step, np.zeros(xs.shape[1:]), xs)
    return ys.sum() + (h * h).sum()


def rnn_plain(xs, w):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for x in xs:
        h = np.tanh(h @ w + x)
        total = total + np.sin(h).sum()
    return total


def counted(xs, w):  # an int carry beside the float one, a reversed walk
    def step(c, x):
        k, h = c
        h = np.tanh(h @ w + x * k)
        return (k + 1, h), h
    (_, h), ys = pb.scan(step, (1, np.zeros(xs.shape[1:])), xs, reverse=True)
    return (ys[0] * ys[-1]).sum() + h.sum()


def nested(xs, w):
    def outer(h, x):
        def inner(g, _):
            return np.tanh(g @ w + x), None
        g, _ = pb.scan(inner, h, None, length=3)
        return g, g.sum()
    h, ys = pb.scan(outer, np.zeros(xs.shape[1:]), xs)
    return ys.sum() + h.sum()


def _central(f, x, v, h=1e-6):
    return (f(x + h * v) - f(x - h * v)) / (2 * h)


@pytest.mark.parametrize("f", [rnn, rnn_plain, counted, nested])
def test_forward_mode_agrees_with_reverse_mode_and_differences(f):
    v_w, v_x = RNG.normal(size=W.shape), RNG.normal(size=XS.shape)
    _, t = pb.jvp(lambda w: f(XS, w), (W,), (v_w,))
    g = pb.grad(f, argnums=1)(XS, W)
    np.testing.assert_allclose(t, np.sum(g * v_w), rtol=1e-10)
    np.testing.assert_allclose(t, _central(lambda w: f(XS, w), W, v_w), rtol=1e-6)
    _, t_both = pb.jvp(f, (XS, W), (v_x, v_w))
    gx = pb.grad(f)(XS, W)
    np.testing.assert_allclose(t_both, np.sum(gx * v_x) + np.sum(g * v_w), rtol=1e-10)
    np.testing.assert_allclose(pb.jacfwd(f, argnums=1)(XS, W), g, rtol=1e-10)
    hv = np.tensordot(pb.hessian(lambda w: f(XS, w))(W), v_w, 2)
    grad = pb.grad(lambda w: f(XS, w))
    np.testing.assert_allclose(hv, _central(grad, W, v_w, 1e-5), rtol=1e-5, atol=1e-8)


def test_the_tangent_loop_is_one_scan_over_the_bodys_tangent(monkeypatch):
    """No reverse loop in forward mode: the jvp's graph holds scans only of the forward
    body and its tangent (the transposed rule walked a reverse body)."""
    monkeypatch.setattr(pb.config, "cache_dir", None)  # (it spies on the trace)
    calls = []
    real = OPS["scan"].jvp[0]

    def spy(*a, **k):
        calls.append(k["body"].name)
        return real(*a, **k)
    OPS["scan"].jvp = (spy,)
    try:
        pb.jvp(lambda w: rnn(XS, w), (W,), (np.ones_like(W),))
    finally:
        OPS["scan"].jvp = (real,)
    assert calls and all("reverse" not in name for name in calls)


def newton_steps(a, w):  # a plain while loop: its tangent walks the steps it took
    x = a
    while np.sum((x * x - a) ** 2) > 1e-20:
        x = 0.5 * (x + a / x) * w
    return np.sum(x * x * x)


def break_loop(a, w):
    x = np.ones_like(a)
    for _ in range(200):
        new = np.cos(a * x) * 0.5 + 0.1 * (w * a)
        if np.max(np.abs(new - x)) < 1e-13:
            break
        x = new
    return np.sum(x * x)


@pytest.mark.parametrize("f", [newton_steps, break_loop])
def test_forward_mode_of_loops_that_stop_early(f):
    a, w = np.array([1.2, 0.3, 1.4]), np.ones(3)
    va, vw = RNG.normal(size=3), RNG.normal(size=3) * 1e-3
    _, t = pb.jvp(f, (a, w), (va, vw))
    ga, gw = pb.grad(f, argnums=(0, 1))(a, w)
    np.testing.assert_allclose(t, ga @ va + gw @ vw, rtol=1e-10)
    np.testing.assert_allclose(pb.jacfwd(f)(a, w), ga, rtol=1e-10)
    np.testing.assert_allclose(pb.jvp(lambda a: f(a, w), (a,), (va,))[1],
                               _central(lambda a: f(a, w), a, va), rtol=1e-6)
