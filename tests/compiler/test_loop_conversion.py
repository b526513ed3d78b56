"""The source pass turns plain Python loops into regions: ``for t in range(...)`` and
``while`` in unmodified numpy code trace their body once (a scan or while region)
under ``pb.value_and_grad``, ``pb.grad`` and ``pb.compile``; a loop that cannot be a
region (a carry changing shape, a list appended to, an int counter) is unrolled as
before, and ``pb.compiler.inspect`` says which and why. Checked against central finite
differences (float64), eager ``.backward()`` and the unconverted function."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb

RNG = np.random.default_rng(0)
XS = RNG.standard_normal((12, 3))
W = RNG.standard_normal((3, 3)) * 0.5
U = RNG.standard_normal((3, 3)) * 0.5


def rnn(w, xs):
    h = np.zeros(3)
    total = 0.0
    for t in range(xs.shape[0]):
        pre = xs[t] @ U + h @ w
        h = np.tanh(pre)
        total = total + h.sum()
    return total + (h * h).sum()


def rnn_steps(w, xs, steps):
    h = np.zeros(3)
    for t in range(steps):
        h = np.tanh(xs[t] @ U + h @ w)
    return (h * h).sum()


def newton_sqrt(a):
    x = a
    while np.abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


# --------------------------------------------------------------------------- for
def test_rnn_loop_is_a_region_with_the_right_gradient() -> None:
    vg = pb.value_and_grad(rnn)
    value, g = vg(W, XS)
    assert value == pytest.approx(rnn(W, XS), rel=1e-12)
    np.testing.assert_allclose(g, fd(lambda w: rnn(w, XS), W), rtol=1e-6)
    w = pb.tensor(W, requires_grad=True)  # eager, on Tensors: the user's loop as written
    rnn(w, XS).backward()
    np.testing.assert_allclose(g, w.grad.numpy(), rtol=1e-12)
    source = pb.compiler.inspect(pb.grad(rnn), W, XS).forward
    assert "for i in range(12):" in source and "while" not in source
    assert pb.compiler.inspect(pb.grad(rnn), W, XS).loops == ()


def test_generated_source_does_not_grow_with_the_trip_count() -> None:
    long_xs = RNG.standard_normal((200, 3))
    short = pb.compiler.inspect(pb.value_and_grad(rnn), W, XS[:10]).forward
    long = pb.compiler.inspect(pb.value_and_grad(rnn), W, long_xs).forward
    assert abs(len(long) - len(short)) < 40  # (digits, and a del of a large array)
    np.testing.assert_allclose(pb.grad(rnn)(W, long_xs), pb.grad(rnn)(W, long_xs))


def test_an_int_argument_for_the_trip_count_traces_once() -> None:
    vg = pb.value_and_grad(rnn_steps)
    for steps in (3, 7, 12, 1):
        value, g = vg(W, XS, steps)
        assert value == pytest.approx(rnn_steps(W, XS, steps), rel=1e-12)
        np.testing.assert_allclose(g, fd(lambda w, n=steps: rnn_steps(w, XS, n), W),
                                   rtol=1e-6, atol=1e-10)
    assert vg.cache.info.misses == 1 and vg.cache.info.recompiles == 0
    assert "while True:" in pb.compiler.inspect(vg, W, XS, 5).forward
    assert rnn_steps(W, XS, 0) == 0.0 and vg(W, XS, 0)[0] == 0.0  # (no step at all)


def test_compile_of_a_tensor_loop_traces_once() -> None:
    def model(w, xs):
        h = pb.zeros(3, dtype=pb.float64)
        for t in range(2, xs.shape[0], 3):
            h = pb.tanh(xs[t] + h @ w)
        return h.sum()
    compiled = pb.compile(model)
    for k in range(3):
        w = pb.tensor(W + 0.1 * k, requires_grad=True)
        model(w, pb.tensor(XS)).backward()
        eager = w.grad.numpy().copy()
        w.grad = None
        compiled(w, pb.tensor(XS)).backward()
        np.testing.assert_allclose(w.grad.numpy(), eager, rtol=1e-12)
    assert compiled.cache.info.misses == 1


def test_nested_loops_and_closures() -> None:
    def f(w):
        acc = np.zeros(3)
        for i in range(3):
            h = XS[i]
            for _ in range(2):
                h = np.tanh(h @ w)
            acc = acc + h * i
        return (acc ** 2).sum()
    np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
    assert "for " in pb.compiler.inspect(pb.grad(f), W).forward


# ------------------------------------------------------------------------- while
def test_newton_while_loop_traces_once_over_trip_counts() -> None:
    g = pb.grad(newton_sqrt)
    for a in (2.0, 9.0, 100.0, 1e6):
        np.testing.assert_allclose(g(a), 0.5 / np.sqrt(a), rtol=1e-9)
    assert g.cache.info.misses == 1 and g.cache.info.recompiles == 0
    assert "while True:" in pb.compiler.inspect(g, 2.0).forward
    assert newton_sqrt(16.0) == pytest.approx(4.0)  # (eager: the user's loop)


# ---------------------------------------------------------------------- fallbacks
def test_a_carry_changing_shape_unrolls_with_the_right_gradient() -> None:
    def grow(w):
        h = np.ones(1) * w
        for _ in range(3):
            h = np.concatenate([h, h * w])
        return h.sum()
    np.testing.assert_allclose(pb.grad(grow)(0.7), fd(grow, 0.7), rtol=1e-7)
    (note,) = pb.compiler.inspect(pb.grad(grow), 0.7).loops
    assert "test_loop_conversion.py:" in note and "float64[1]" in note


def test_loops_that_stay_unrolled_are_still_right() -> None:
    def appended(w):
        hs = []
        h = np.ones(3)
        for t in range(3):
            h = np.tanh(h @ w + XS[t])
            hs.append(h)
        return np.stack(hs).sum()

    def counted(w):
        k, h = 0, np.ones(3)
        for t in range(4):
            k += 1
            h = np.sin(h @ w) * k
            if t == 2:
                break
        return h.sum()

    def branchy(w):
        h = np.ones(3)
        for _ in range(4):
            h = h @ w
            if h.sum() > 0:  # (a guard, as before)
                h = -h
        return h.sum()
    for f in (appended, counted, branchy):
        np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6, atol=1e-9)
    assert any("int" in n for n in pb.compiler.inspect(pb.grad(counted), W).loops) or \
        "for i in range" not in pb.compiler.inspect(pb.grad(counted), W).forward
    assert any("branches" in n or "Python value" in n
               for n in pb.compiler.inspect(pb.grad(branchy), W).loops)


def test_a_body_drawing_random_numbers_unrolls_and_draws_as_eager() -> None:
    def noisy(w, seed):
        rng = np.random.default_rng(seed)
        h = np.ones(3)
        for _ in range(3):
            h = np.tanh(h @ w) + rng.standard_normal(3) * 0.1
        return h.sum()
    np.testing.assert_allclose(pb.grad(noisy)(W, 5), fd(lambda w: noisy(w, 5), W), rtol=1e-6)


def test_eager_runs_of_the_converted_function_are_the_plain_loop() -> None:
    w = pb.tensor(W, requires_grad=True)  # pb.grad on a tensor needing grad: eager
    g = pb.grad(lambda w: rnn(w, XS))(w)
    np.testing.assert_allclose(g.detach().numpy(), fd(lambda w: rnn(w, XS), W), rtol=1e-6)
