"""A ``while`` loop whose body writes a table's items (``H[k, k] = y`` with a
data-dependent trip count, a ``while`` inside a ``for`` filling a dynamic programme's
rows) writes them in place in the generated code, forward and in the reverse loop,
as a ``for`` loop does; and the forward keeps no copy of the table per step when the
reverse loop does not read it. Checked against central finite differences (float64),
forward mode, and the plain function (numpy's own table: eager autograd does not
reach through it)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb

RNG = np.random.default_rng(5)
D6 = RNG.standard_normal((6, 6))


def fixed_point(x, tol):
    H = np.zeros((80, 80))
    y = x
    k = np.int64(0)
    while np.abs(y - np.cos(y)) > tol:
        y = np.cos(y)
        H[k, k] = y * x
        k = k + 1
    return y + np.sum(H * H)


def rows(D, n):
    m = D.shape[0]
    R = np.zeros((m, m))
    for i in range(n):
        j = np.int64(0)
        while j < m:
            R[i, j] = R[i - 1, j] * 0.5 + np.sin(D[i, j])
            j = j + 1
    return np.sum(R * R)


def grows(x):
    R = np.zeros(30)
    R[0] = x
    k = np.int64(0)
    while R[k] < 5.0:  # (the condition reads the table the body writes)
        R[k + 1] = R[k] * 1.5 + x
        k = k + 1
    return np.sum(R) + np.sum(R * R) * 0.01


def whole(x):
    R = np.zeros(8)
    k = np.int64(0)
    while k < 8:
        R[k] = np.sum(R) * 0.5 + x  # (the body reads the whole table: it unrolls)
        k = k + 1
    return np.sum(R * R)


@pytest.mark.parametrize("f, args", [(fixed_point, (0.7, 1e-9)), (grows, (0.3,)),
                                     (whole, (0.4,))], ids=["fixed", "grows", "whole"])
def test_while_writing_items_is_right(f, args) -> None:
    x, rest = np.float64(args[0]), args[1:]
    g = pb.grad(f)(x, *rest)
    assert g == pytest.approx(fd(lambda v: f(v, *rest), np.array(x)), rel=1e-6)
    assert float(pb.compile(f)(x, *rest)) == pytest.approx(f(x, *rest), rel=1e-12)
    assert float(pb.jacfwd(f)(x, *rest)) == pytest.approx(g, rel=1e-10)
    info = pb.compiler.inspect(pb.grad(f), x, *rest)
    if f is whole:
        assert "it writes an item it cannot write functionally" in info.loops[0]
    else:
        assert info.loops == () and "while True:" in info.forward


def test_the_table_is_written_in_place_and_not_kept_per_step() -> None:
    info = pb.compiler.inspect(pb.grad(fixed_point), np.float64(0.7), 1e-9)
    assert "item_put" not in info.forward and "H_1[k, k] = " in info.forward
    assert ".append(H" not in info.forward  # (the reverse loop reads k and y, not H)
    info = pb.compiler.inspect(pb.compile(grows), np.float64(0.3))
    assert "item_put" not in info.forward


def test_a_while_in_a_for_writes_rows_in_place_over_trip_counts() -> None:
    g = pb.grad(rows)
    for n in (2, 4, 6):
        np.testing.assert_allclose(g(D6, n), fd(lambda d, n=n: rows(d, n), D6), rtol=1e-6,
                                   atol=1e-9)
        assert float(pb.compile(rows)(D6, n)) == pytest.approx(rows(D6, n), rel=1e-12)
    assert g.cache.info.misses == 1
    short, long = (pb.compiler.inspect(g, D6, n) for n in (2, 6))
    assert short.loops == () and len(short.forward) == len(long.forward)
    assert "item_put" not in short.forward and "R_2[i, j] = " in short.forward


def int_rows(D, n):
    m = D.shape[0]
    R = np.zeros((m, m))
    for i in range(n):
        j = 0  # (a Python int counter: traced as an int64 in the region)
        while j < m:
            R[i, j] = R[i - 1, j] * 0.5 + np.sin(D[i, j])
            j += 1
    return np.sum(R * R)


def settle(h, w):
    k = 0
    while np.sum(h * h) > 0.05:
        h = np.tanh(h @ w) * 0.8
        k += 1
    z = np.zeros(k + 1)  # (k read after the loop as a Python int: a guard)
    return np.sum(h) * k + np.sum(z) + len(z)


def test_a_while_loop_with_an_int_counter_is_a_region() -> None:
    g = pb.grad(int_rows)
    for n in (2, 5):
        np.testing.assert_allclose(g(D6, n), fd(lambda d, n=n: int_rows(d, n), D6),
                                   rtol=1e-6, atol=1e-9)
    info = pb.compiler.inspect(g, D6, 5)
    assert info.loops == () and "R_2[i, j] = " in info.forward
    w = RNG.standard_normal((4, 4)) * 0.5
    c, gs = pb.compile(settle), pb.grad(settle)
    for scale in (1.0, 0.3, 2.0):  # (different trip counts)
        h = np.linspace(-1.0, 1.0, 4) * scale
        assert float(c(h, w)) == pytest.approx(settle(h, w), rel=1e-12)
        np.testing.assert_allclose(gs(h, w), fd(lambda v: settle(v, w), h), rtol=1e-6,
                                   atol=1e-8)
    assert pb.compiler.inspect(c, h, w).loops == ()
