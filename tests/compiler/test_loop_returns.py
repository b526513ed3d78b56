"""An early ``return`` inside a plain Python loop: the source pass turns the loop into a
while region that stops once the return's test holds, and the function's two exits
into one ``pb.cond``; one trace serves every exit pattern. Checked against central
finite differences (float64), torch, and the loop as written run eagerly on Tensors.
A return may read a range's or enumerate's counter (the value at the step that
returned is carried out of the loop). A loop the pass leaves as written (two returns,
a return reading an array the loop walks, a list appended to) unrolls, and
``pb.compiler.inspect`` lists it with its line and why.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import numeric_grad as fd

import pullback as pb

W = np.array([[0.9, 0.2], [-0.3, 0.8]])
XS = np.array([[0.1, 0.2], [0.5, 0.6], [-0.5, 0.1], [0.3, -0.9]])


def stop_early(x, w, T=np):
    h = x
    for _ in range(6):
        h = T.tanh(h @ w) + x
        if h.sum() > 1.5:
            return h * 2.0
        h = h * 1.1
    return h


def in_else(x, w, T=np):
    h, n = x, 0.0
    while n < 5.0:
        h = T.sin(h @ w) + x
        n = n + 1.0
        if h.sum() < 1.2:
            h = h * 0.9
        else:
            return h * n, h.sum() + n
    return h - 1.0, h.sum()


def nested(x, w, T=np):
    h = x
    for i in range(3):
        for _ in range(3):
            h = T.tanh(h @ w) * 1.2 + x * (i + 1)
            if (h * h).sum() > 4.0:
                return h.sum() * 3.0
        h = h * 0.8
    return h.sum()


def rows(x, w, T=np):
    h = x
    for v in T.asarray(XS):
        h = T.tanh(h @ w + v)
        if h[0] > 0.4:
            return h * 2.0 + 1.0
    return h


def at_step(x, w, T=np):
    h = x
    for i in range(1, 7):
        h = T.tanh(h @ w) + x
        if h.sum() > 1.5:
            return h * i, h.sum() - i
    return h, h.sum()


def counted(x, w, T=np):
    h = x
    for k, row in enumerate(w):
        h = T.tanh(h * row) + x
        if h.sum() > 1.0:
            return h * (k + 0.5)
    return h * 0.1


def nested_at(x, w, T=np):
    h = x
    for i in range(3):
        for j in range(3):
            h = T.tanh(h @ w) * 1.2 + x * (i + 1)
            if (h * h).sum() > 4.0:
                return h.sum() * (i + 2 * j + 1.0)
        h = h * 0.8
    return h.sum()


def loss(f, T=np):
    def run(x, w):
        out = f(x, w, T)
        out = out if isinstance(out, tuple) else (out,)
        return sum((o * o).sum() for o in out)
    return run


def torch_grads(f, x, w):
    """f run by torch (the same Python loop, on torch tensors): value, d/dx, d/dw."""
    xt = torch.tensor(x, requires_grad=True)
    wt = torch.tensor(w, requires_grad=True)
    out = loss(f, torch)(xt, wt)
    out.backward()
    return out.item(), xt.grad.numpy(), wt.grad.numpy()


CASES = [stop_early, in_else, nested, rows, at_step, counted, nested_at]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_a_loop_with_a_return_is_a_region_with_the_right_gradient(f) -> None:
    vg = pb.value_and_grad(loss(f), argnums=(0, 1))
    for x in XS:
        value, (gx, gw) = vg(x, W)
        assert value == pytest.approx(loss(f)(x, W), rel=1e-12)
        np.testing.assert_allclose(gx, fd(lambda x: loss(f)(x, W), x), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gw, fd(lambda w, x=x: loss(f)(x, w), W), rtol=1e-6, atol=1e-8)
        tv, tx, tw = torch_grads(f, x, W)
        assert value == pytest.approx(tv, rel=1e-12)
        np.testing.assert_allclose(gx, tx, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(gw, tw, rtol=1e-10, atol=1e-12)
        xe, we = pb.tensor(x, requires_grad=True), pb.tensor(W, requires_grad=True)
        loss(f)(xe, we).backward()  # eager: the loop as written, step by step
        np.testing.assert_allclose(gx, xe.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert vg.cache.info.misses == 1  # (one trace: the exit is a run-time value)
    info = pb.compiler.inspect(pb.grad(loss(f)), XS[0], W)
    assert info.loops == ()
    assert "while True:" in info.forward


def test_the_values_compile_and_forward_mode_agree() -> None:
    for f in CASES:
        c = pb.compile(f)
        for x in XS:
            want = f(x, W)
            got = c(x, W)
            for a, b in zip(want if isinstance(want, tuple) else (want,),
                            got if isinstance(got, tuple) else (got,)):
                np.testing.assert_allclose(np.asarray(b), a, rtol=1e-12)
        if f not in (nested, nested_at):  # (below)
            np.testing.assert_allclose(pb.jacfwd(loss(f))(XS[1], W),
                                       pb.jacrev(loss(f))(XS[1], W), rtol=1e-10, atol=1e-12)


def test_jacfwd_of_nested_loops_whose_inner_loop_stops_early() -> None:
    """jacfwd's columns batch the reverse of an inner loop whose steps are known only at
    run time; the batched body's dead copies of its saved steps, reshaped to the trace's
    count, once stayed in the generated code (dce now cleans a scan's body)."""
    def nb(x, w):
        h = x
        for i in range(3):
            for _ in range(3):
                h = np.tanh(h @ w) * 1.2 + x * (i + 1)
                if (h * h).sum() > 4.0:
                    break
            h = h * 0.8
        return h.sum()
    np.testing.assert_allclose(pb.jacfwd(nb)(XS[1], W), pb.grad(nb)(XS[1], W), rtol=1e-10)


def test_forward_mode_of_a_return_from_nested_loops() -> None:
    """Found by the fuzzer (seed 365): the inner loop's saved steps have a length known
    only at run time, and the code generator's size check read it as a number."""
    def stop(v):
        h = v * 0.5
        for _ in range(3):
            for _ in range(2):
                h = np.sin(h) * 0.9 + v * 0.4
                if np.sum(h) > 0.5:
                    return h * 1.5
                h = h + 0.1
            h = h * 0.9
        return h
    x = np.array([0.622, 0.639, 0.310, -0.712])
    want = fd(lambda v: stop(v).sum(), x)
    np.testing.assert_allclose(pb.jacfwd(lambda v: stop(v).sum())(x), want, rtol=1e-6)
    np.testing.assert_allclose(pb.grad(lambda v: stop(v).sum())(x), want, rtol=1e-6)


def test_a_return_reading_values_made_in_the_loop_only() -> None:
    """``y`` has no value before the loop: the loop unrolls (a note says why), right."""
    def f(x):
        h = x
        for _ in range(4):
            y = np.tanh(h) * 1.3
            if y.sum() > 1.0:
                return y * 2.0
            h = y + x
        return h
    g = pb.grad(lambda x: (f(x) ** 2).sum())
    for x in XS:
        np.testing.assert_allclose(g(x), fd(lambda x: (f(x) ** 2).sum(), x), rtol=1e-6)
    assert any("y has no value before it" in n
               for n in pb.compiler.inspect(g, XS[0]).loops)


def test_loops_left_as_written_are_listed_with_their_line_and_why() -> None:
    def f(x):
        hist = []
        h = x
        for _ in range(3):
            h = np.tanh(h) * 0.5
            hist.append(h)
        for _ in range(3):
            if h.sum() > 9.0:
                return h
            if h.sum() < -9.0:
                if h.sum() < -10.0: return -h  # noqa: E701 (nested: unrolls)
            h = h * 0.9
        for t in np.ones((2, 2)):
            h = h * 0.5
            if h.sum() > 9.0:
                return h * t
        for _ in range(2):
            h = np.concatenate([h, h])
        else:
            h = h * 1.0
        for _ in range(2):
            h = np.concatenate([h, h[:1]])
        return h.sum() + sum(a.sum() for a in hist[:2])  # (a slice: the list stays)
    g = pb.grad(f)
    x = np.array([0.3, -0.2])
    np.testing.assert_allclose(g(x), fd(f, x), rtol=1e-6)
    first = f.__code__.co_firstlineno
    want = [(3, "it calls hist.append(), which may change state outside it (line "
                f"{first + 5})"),
            (6, "it returns from the function in more than one place, not each last in "
                "an if at the top level of its body"),
            (12, "its return reads the loop variable"),
            (16, "it has an else clause"),
            (20, "the body must return a carry of the shapes and dtypes it takes")]
    notes = pb.compiler.inspect(g, x).loops
    assert len(notes) == len(want), notes
    for note, (line, why) in zip(notes, want):
        assert f"test_loop_returns.py:{first + line}: loop unrolled: {why}" in note, note


def test_a_return_reading_the_counter_traces_once_over_trip_counts() -> None:
    def f(x, w, n):
        h = x
        for i in range(n):
            h = np.tanh(h @ w) + x
            if h.sum() > 1.2:
                return (h * i).sum()
        return h.sum()
    g = pb.grad(f)
    for n in (1, 2, 4, 7, 12):
        for x in XS:
            np.testing.assert_allclose(g(x, W, n), fd(lambda x, n=n: f(x, W, n), x), rtol=1e-6,
                                       atol=1e-8)
            assert float(pb.compile(f)(x, W, n)) == pytest.approx(f(x, W, n), rel=1e-12)
    assert g.cache.info.misses == 1
    short, long = (pb.compiler.inspect(g, XS[0], W, n) for n in (2, 12))
    assert short.loops == () and len(short.forward) == len(long.forward)
