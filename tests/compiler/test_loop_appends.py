"""A fresh list appended to in a ``for`` loop and read whole after it (``np.stack(hs)``,
``np.array``, ``np.concatenate``, ``sum``, ``len``, an item, iteration): the source pass
makes the appended values the scan's per-step outputs, so the loop is a region (one
trace over every trip count, the body once in the generated code) and the list after
it is the stacked array. Checked against central finite differences (float64) and the
function run eagerly. A list read otherwise keeps the loop unrolled, with the reason
listed (a ``while`` loop or a ``break``: test_while_appends.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb

W = np.array([[0.9, 0.2], [-0.3, 0.8]])
RNG = np.random.default_rng(0)


def rnn(xs, w):
    h = np.zeros(2)
    hs = []
    for x in xs:
        h = np.tanh(h @ w + x)
        hs.append(h)
    return (np.stack(hs) ** 2).sum()


def losses(xs, w):
    h = np.zeros(2)
    ls = []
    hs = []
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t])
        ls.append(h.sum())
        hs.append(h * 2.0)
    return sum(ls) + np.array(ls)[-1] * len(ls) + np.concatenate(hs).sum() + hs[1][0]


def rows_after(xs, w):
    h = np.zeros(2)
    hs = []
    for i, x in enumerate(xs):
        h = np.sin(h @ w) + x * (i + 1)
        hs.append(h)
    total = 0.0
    for r in hs:  # (iterating the rows: a scan too)
        total = total + (r * r).sum()
    return total


def returned_list(xs, w):
    h = np.zeros(2)
    hs = []
    for x in xs:
        h = np.tanh(h @ w + x)
        hs.append(h)
    return hs[-1].sum() + len(hs[:2])  # (a slice: a list's, not the array's)


def with_break(xs, w):
    h = np.zeros(2)
    hs = []
    for x in xs:
        h = np.tanh(h @ w + x)
        hs.append(h)
        if h.sum() > 5.0:
            break
    return np.stack(hs).sum()


@pytest.mark.parametrize("f", [rnn, losses, rows_after])
def test_appended_lists_are_a_scans_outputs_with_the_right_gradient(f) -> None:
    g, c = pb.grad(f, argnums=(0, 1)), pb.compile(f)
    for T in (3, 5, 8):
        xs = RNG.normal(size=(T, 2))
        gx, gw = g(xs, W)
        np.testing.assert_allclose(gx, fd(lambda v: f(v, W), xs), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gw, fd(lambda w, xs=xs: f(xs, w), W), rtol=1e-6,
                                   atol=1e-8)
        np.testing.assert_allclose(np.asarray(c(xs, W)), f(xs, W), rtol=1e-12)
        if f is not losses:  # (np.array of a list of Tensors is no eager Tensor op)
            we = pb.tensor(W, requires_grad=True)
            f(pb.tensor(xs), we).backward()  # eager: the list as written
            np.testing.assert_allclose(gw, we.grad.numpy(), rtol=1e-10)
    info = pb.compiler.inspect(g, xs, W)
    assert info.loops == ()
    short = pb.compiler.inspect(pb.grad(f, argnums=(0, 1)), xs[:3], W).forward
    assert abs(len(info.forward) - len(short)) < 20  # (the body once, whatever the length)


@pytest.mark.parametrize("f, why", [(returned_list, "hs.append")])
def test_a_list_the_scan_cannot_stack_keeps_the_loop_unrolled(f, why) -> None:
    xs = RNG.normal(size=(4, 2))
    g = pb.grad(f, argnums=1)
    np.testing.assert_allclose(g(xs, W), fd(lambda w: f(xs, w), W), rtol=1e-6, atol=1e-8)
    assert any(why in n for n in pb.compiler.inspect(g, xs, W).loops)


def test_a_while_loop_or_a_break_appending_is_a_region_too() -> None:
    # (its per-step outputs are the while region's: test_while_appends.py)
    def f(x):
        hs, k = [], 0
        while k < 3:
            x = np.sin(x) * 1.5
            hs.append(x)
            k = k + 1
        return np.stack(hs).sum()
    x = np.array([0.3, 0.7])
    xs = RNG.normal(size=(4, 2))
    for g, args, h in ((pb.grad(f), (x,), f), (pb.grad(with_break, argnums=1), (xs, W),
                                                lambda w: with_break(xs, w))):
        np.testing.assert_allclose(g(*args), fd(h, args[-1]), rtol=1e-6, atol=1e-8)
        assert pb.compiler.inspect(g, *args).loops == ()


def test_a_list_made_in_a_tuple_assignment_is_fresh_too() -> None:
    def f(xs, w):
        h, hs = np.zeros(2), []
        for x in xs:
            h = np.tanh(h @ w + x)
            hs.append(h)
        return np.stack(hs).sum()
    xs = RNG.normal(size=(4, 2))
    g = pb.grad(f, argnums=1)
    np.testing.assert_allclose(g(xs, W), fd(lambda w: f(xs, w), W), rtol=1e-6, atol=1e-8)
    assert pb.compiler.inspect(g, xs, W).loops == ()


def appends_a_row_then_writes_it(x):
    R = np.zeros((4, 2)) + x
    hs = []
    for i in range(1, 4):
        hs.append(R[i - 1])  # numpy's list holds the row itself: the write shows in it
        R[i - 1] = R[i - 1] * 2.0 + x
    return np.sum(np.stack(hs) * np.arange(1.0, 7.0).reshape(3, 2))


def appends_a_named_view_then_writes_it(x):
    R = np.zeros((4, 2)) + x
    hs = []
    for i in range(1, 4):
        row = R[i - 1].T
        hs.append(row)
        R[i - 1, 0] = R[i - 1, 1] * 3.0
    return np.sum(np.stack(hs) ** 2)


def appends_an_unpacked_row_then_writes_it(x):
    R = np.zeros((4, 2)) + x
    hs = []
    for i in range(1, 4):
        a, b = R[i - 1], R[i]  # (a tuple's names: each a view of R)
        hs.append(a)
        R[i - 1] = R[i - 1] * 2.0 + b
    return np.sum(np.stack(hs) * np.arange(1.0, 7.0).reshape(3, 2))


def appends_then_adds_in_place(x):
    h = x * 1.0
    hs = []
    for _ in range(3):
        hs.append(h)
        h += np.sin(h)  # the same array, changed after it was appended
    return np.stack(hs).sum()


@pytest.mark.parametrize("f", [appends_a_row_then_writes_it,
                               appends_a_named_view_then_writes_it,
                               appends_an_unpacked_row_then_writes_it,
                               appends_then_adds_in_place])
def test_an_appended_array_written_later_keeps_numpys_list(f) -> None:
    # a converted loop stacks each step's value; numpy's list holds the arrays, which
    # later writes change: such a loop unrolls (it silently stacked the old rows)
    x = np.array([1.0, 1.5])
    np.testing.assert_allclose(float(pb.compile(f)(x)), f(x), rtol=1e-12)
    value, grad = pb.value_and_grad(f)(x)
    assert float(value) == pytest.approx(f(x), rel=1e-12)
    np.testing.assert_allclose(grad, fd(f, x), rtol=1e-6, atol=1e-8)
    assert any("hs.append" in n for n in pb.compiler.inspect(pb.grad(f), x).loops)
