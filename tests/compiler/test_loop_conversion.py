"""The source pass turns plain Python loops into regions: ``for t in range(...)`` and
``while`` in unmodified numpy code trace their body once (a scan or while region)
under ``pb.value_and_grad``, ``pb.grad`` and ``pb.compile``; a loop that cannot be a
region (a carry changing shape, a list appended to, an int counter) is unrolled as
before, and ``pb.compiler.inspect`` says which and why. Checked against central finite
differences (float64), eager ``.backward()`` and the unconverted function."""

from __future__ import annotations

import re
import warnings

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
    # xs[t] is the scan's slice of xs for the step: no gather, and no scatter into a
    # gradient the size of xs on every step of the reverse loop
    assert "take" not in source and "index_add" not in source
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


def test_a_name_first_assigned_in_the_body_peels_the_first_step() -> None:
    def f(w, xs):
        h = np.zeros(3)
        for t in range(xs.shape[0]):
            h = np.tanh(xs[t] + h @ w)
            y = h @ U  # (no value before the loop: the first step runs alone)
        return (y * y).sum()
    g = pb.grad(f)
    np.testing.assert_allclose(g(W, XS), fd(lambda w: f(w, XS), W), rtol=1e-6)
    short = pb.compiler.inspect(g, W, XS[:4])
    long = pb.compiler.inspect(g, W, np.tile(XS, (10, 1)))
    assert short.loops == () and abs(len(long.forward) - len(short.forward)) < 40


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


def test_loops_over_arrays_zip_and_enumerate_are_scans() -> None:
    rng = np.random.default_rng(130)  # (its own: the data must not depend on test order)
    ys = rng.standard_normal((8, 3))

    def f(w, xs, ys):
        h = np.zeros(3)
        for x in xs:
            h = np.tanh(h @ w + x)
        for k, (x, y) in enumerate(zip(xs, ys)):  # (zip stops at the shorter)
            h = h + np.sin(x * y) @ w * k
        for x, y in zip(xs, ys):
            h = h * np.cos(y @ w) + x
        for i, x in enumerate(xs, 1):
            h = h + x * XS[i] * i
        return (h * h).sum()
    xs = XS[:6]
    g = pb.grad(f)
    np.testing.assert_allclose(g(W, xs, ys), fd(lambda w: f(w, xs, ys), W), rtol=1e-6)
    info = pb.compiler.inspect(g, W, xs, ys)
    assert info.loops == () and len(re.findall(r"for i\w* in range\(6\):", info.forward)) == 4
    for n in (4, 9):  # a new length is a new shape: one more trace each
        long = rng.standard_normal((n, 3))
        np.testing.assert_allclose(g(W, long, ys), fd(lambda w, a=long: f(w, a, ys), W),
                                   rtol=1e-6)


def test_a_loop_over_a_list_of_arrays_unrolls() -> None:
    def f(w):
        h = np.ones(3)
        for m in [w, w.T, w @ w]:
            h = np.tanh(m @ h)
        return h.sum()
    np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
    (note,) = pb.compiler.inspect(pb.grad(f), W).loops
    assert "iterates over a list" in note


def test_temporaries_of_two_loops_and_an_inner_loops_result() -> None:
    def two(w):
        h = np.zeros(3)
        for x in XS[:4]:
            pre = h @ w + x  # (a temporary of each loop: carried by neither)
            h = np.tanh(pre)
        g = h
        for x in XS[4:8]:
            pre = g @ w - x
            g = np.sin(pre)
        return (g * h).sum()

    def nested(w):
        total = np.zeros(3)
        for i in range(2):
            y = np.zeros(3)
            for j in range(3):
                y = np.tanh(XS[j] @ w) * (i + 1)  # (the outer body reads it after)
            total = total + y
        return total.sum()
    for f in (two, nested):
        np.testing.assert_allclose(pb.value_and_grad(f)(W)[0], f(W), rtol=1e-12)
        np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
        assert pb.compiler.inspect(pb.grad(f), W).loops == ()


# ------------------------------------------------------------------------- while
def test_newton_while_loop_traces_once_over_trip_counts() -> None:
    g = pb.grad(newton_sqrt)
    for a in (2.0, 9.0, 100.0, 1e6):
        np.testing.assert_allclose(g(a), 0.5 / np.sqrt(a), rtol=1e-9)
    assert g.cache.info.misses == 1 and g.cache.info.recompiles == 0
    assert "while True:" in pb.compiler.inspect(g, 2.0).forward
    assert newton_sqrt(16.0) == pytest.approx(4.0)  # (eager: the user's loop)


# ------------------------------------------------------------- break, continue
def fixed_point(a):
    x = a
    for _ in range(100):
        x_new = 0.5 * (x + a / x)
        if np.abs(x_new - x) < 1e-12:
            break
        x = x_new
    return x


def test_a_for_loop_that_breaks_on_convergence_traces_once() -> None:
    g = pb.grad(fixed_point)
    for a in (2.0, 9.0, 100.0, 1e6):
        np.testing.assert_allclose(g(a), 0.5 / np.sqrt(a), rtol=1e-9)
    assert g.cache.info.misses == 1
    info = pb.compiler.inspect(g, 2.0)
    assert info.loops == () and "guard(" not in info.forward and "while True:" in info.forward


def test_a_break_testing_the_step_s_slice() -> None:
    def f(w):
        h = np.zeros(3)
        for t in range(8):
            h = np.tanh(h @ w + XS[t])
            if XS[t].sum() > 1.0:
                break
        return h.sum()
    np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
    assert pb.compiler.inspect(pb.grad(f), W).loops == ()


def test_break_and_continue_over_arrays_zip_and_enumerate() -> None:
    ys = RNG.standard_normal((6, 3))

    def f(w):
        h = np.zeros(3)
        for x in XS:
            h = np.tanh(h @ w + x)
            if x.sum() > 1.0:
                break
        for k, (x, y) in enumerate(zip(XS, ys)):
            z = np.sin(x * y) @ w
            if z.sum() < -0.5:
                continue
            h = h + z * k + x
        for i, x in enumerate(ys, 2):
            if (h * x).sum() > 3.0:
                break
            h = h * 0.9 + x * i
        return h.sum()
    np.testing.assert_allclose(pb.value_and_grad(f)(W)[0], f(W), rtol=1e-12)
    np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
    assert pb.compiler.inspect(pb.grad(f), W).loops == ()


def test_continue_and_a_while_loop_that_breaks() -> None:
    def skip(w):
        h = np.ones(3)
        for t in range(6):
            z = np.tanh(h * w)
            if z.sum() < 0:
                continue
            h = z + t
        return h.sum()

    def halve(a):
        x, total = a, a * 0
        while x > 1.0:
            x = x * 0.7
            if x < 3.0:
                break
            total = total + x
        return x + total
    w = np.array([0.3, -2.0, 0.5])
    np.testing.assert_allclose(pb.grad(skip)(w), fd(skip, w), rtol=1e-6)
    g = pb.grad(halve)
    for a in (50.0, 5.0, 0.5):
        np.testing.assert_allclose(g(a), fd(halve, a), rtol=1e-6)
    assert g.cache.info.misses == 1
    for f, x in ((skip, w), (halve, 50.0)):
        info = pb.compiler.inspect(pb.grad(f), x)
        assert info.loops == () and "guard(" not in info.forward


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

    for f in (appended, counted):
        np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6, atol=1e-9)
    assert "for i in range" not in pb.compiler.inspect(pb.grad(counted), W).forward


# ---------------------------------------------------------------------------- if
def test_an_if_on_a_traced_value_is_a_cond_inside_and_outside_loops() -> None:
    def f(w, x):
        h = x @ w
        if h.sum() > 0:
            y = np.sin(h)
        else:
            y = np.cos(h) * 2
        for t in range(4):
            if (h * t).sum() > 0.3:
                h = np.tanh(h @ w)
            else:
                h = h * 0.5
        return (y * h).sum()
    g = pb.grad(f)
    for k in range(6):  # both outcomes of both tests: one trace
        np.testing.assert_allclose(g(W, XS[k]), fd(lambda w, x=XS[k]: f(w, x), W),
                                   rtol=1e-6, atol=1e-10)
    assert g.cache.info.misses == 1
    info = pb.compiler.inspect(g, W, XS[0])
    assert info.loops == () and "guard(" not in info.forward
    assert "for i in range(4):" in info.forward and "else:" in info.forward


def test_an_elif_chain_assigning_tuples_is_nested_conds() -> None:
    def f(w, x):
        h = x @ w
        if h[0] > 0:
            a, b = h * 2, h.sum()
        elif h[1] > 0:
            a, b = h * 3, h.max()
        else:
            a, b = -h, h.min()
        return (a * b).sum()
    g = pb.grad(f)
    for k in range(8):
        np.testing.assert_allclose(g(W, XS[k]), fd(lambda w, x=XS[k]: f(w, x), W),
                                   rtol=1e-6, atol=1e-10)
    assert g.cache.info.misses == 1
    assert pb.compiler.inspect(g, W, XS[0]).loops == ()


def test_an_if_whose_branches_differ_in_shape_stays_a_guard() -> None:
    def f(w):
        h = np.ones(3) @ w
        if h.sum() > 0:
            h = np.concatenate([h, h])
        return (h * h).sum()
    np.testing.assert_allclose(pb.grad(f)(W), fd(f, W), rtol=1e-6)
    info = pb.compiler.inspect(pb.grad(f), W)
    (note,) = info.loops
    assert "branch guarded" in note and "guard(" in info.forward


def test_an_int_bounding_a_loop_that_unrolls_is_a_cache_key_again() -> None:
    def f(w, n):
        k, h = 0, np.ones(3)
        for _ in range(n):  # (an int counter: unrolled, so n is a guarded number)
            h = np.tanh(h @ w)
            k += 1
        return h.sum() * k
    g = pb.grad(f)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "traced N times, falling back to eager")
        for n in range(1, 12):
            np.testing.assert_allclose(g(W, n), fd(lambda w, n=n: f(w, n), W), rtol=1e-6)
    assert g.cache.info.recompiles == 0 and g.cache.info.fallbacks == 0


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
