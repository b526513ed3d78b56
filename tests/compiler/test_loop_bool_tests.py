"""A loop's or an ``if``'s test joining traced tests with ``and``/``or`` (``while err >
tol and k < 50``): the source pass runs it through the runtime's ``and_``/``or_``, so
the loop is a region (one trace over every trip count) with Python's semantics kept
where the first operand is a Python value. An operand that indexes by a name where the
one before it guards the index (``i < n and x[i] > 0``) leaves the test as written: the
loop unrolls, never reading out of range. Checked against central finite differences
(float64) and the function run eagerly.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import numeric_grad as fd

import pullback as pb


def newton(a):
    x = a
    err = np.abs(x * x - a) + 1.0
    k = 0
    while err > 1e-10 and k < 50:
        x = 0.5 * (x + a / x)
        err = np.abs(x * x - a)
        k = k + 1
    return x * 1.0


def either(a):
    x, k = a, 0
    while not (x < 1.5 or k >= 30):
        x = np.sqrt(x) + 0.1
        k += 1
    return x


SCALE, OFF = 0.7, None


def mixed(a):
    x = a
    for _ in range(6):
        if SCALE is not None and x > 1.0:  # (a Python test first, then a traced one)
            x = x * SCALE
        else:
            x = np.sin(x) + 1.2
    return x


def mixed_off(a):
    x = a
    for _ in range(6):
        if OFF is not None and x > 1.0:  # (False: x > 1.0 is never computed)
            x = x * 3.0
        else:
            x = np.sin(x) + 1.2
    return x


def or_in_body(a):
    x = a
    for _ in range(5):
        if x > 2.0 or x < 0.5:
            x = 0.5 * x + 0.3
        else:
            x = x * x
    return x


def guarded_index(xs):
    i, n, s = 0, xs.shape[0], 0.0
    while i < n and xs[i] > 0:  # (i == n on exit: xs[i] must not be read)
        s = s + xs[i] * xs[i]
        i = i + 1
    return s


def _positive(v, j):
    return v[j] > 0


def helper_index(xs):
    i, n, s = 0, xs.shape[0], 0.0
    while i < n and _positive(xs, i):  # (a user function: it may index, so not run early)
        s = s + xs[i] * xs[i]
        i = i + 1
    return s


@pytest.mark.parametrize("f, points", [
    (newton, [2.0, 9.0, 1e4, 0.3]),
    (either, [100.0, 3.0, 1e6, 1.2]),
    (mixed, [0.3, 1.7, 2.5]),
    (mixed_off, [0.3, 1.7]),
    (or_in_body, [0.1, 1.1, 1.6, 3.0]),
])
def test_a_test_with_and_or_is_a_region_with_the_right_gradient(f, points) -> None:
    g, c = pb.grad(f), pb.compile(f)
    for p in points:
        a = np.float64(p)
        want = fd(lambda v: f(v[()]), np.array(p))
        np.testing.assert_allclose(g(a), want, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(np.asarray(c(a)), f(a), rtol=1e-12)
        ae = pb.tensor(a, requires_grad=True)
        f(ae).backward()  # eager: the test as written
        np.testing.assert_allclose(g(a), ae.grad.numpy(), rtol=1e-10)
    assert g.cache.info.misses == 1  # (one trace: the trip count is a run-time value)
    info = pb.compiler.inspect(g, np.float64(points[0]))
    assert info.loops == () and not any("bool()" in g for g in info.guards)


def test_the_generated_code_holds_the_loop_once() -> None:
    info = pb.compiler.inspect(pb.grad(newton), np.float64(2.0))
    assert info.forward.count("while True:") == 1 and " & " in info.forward  # (and: &)


@pytest.mark.parametrize("f", [guarded_index, helper_index])
def test_a_test_that_guards_an_index_unrolls_and_never_reads_out_of_range(f) -> None:
    g = pb.grad(f)
    np.testing.assert_allclose(g(np.array([0.5, -1.0, 2.0])), [1.0, 0.0, 0.0])  # (first)
    xs = np.array([0.5, 1.5, 2.0])  # (all positive: the loop ends at i == n)
    np.testing.assert_allclose(g(xs), 2 * xs)
    np.testing.assert_allclose(np.asarray(pb.compile(f)(xs)), f(xs))
    ys = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(g(ys), [1.0, 0.0, 0.0])
    assert any("unrolled" in n for n in pb.compiler.inspect(g, xs).loops)


def test_python_operands_keep_pythons_semantics() -> None:
    rt = pb.compiler.source.loop_helpers
    assert rt.and_(0, lambda: 1 / 0) == 0 and rt.or_("x", lambda: 1 / 0) == "x"
    assert rt.and_(2, lambda: [3]) == [3] and rt.or_(None, lambda: ()) == ()


def test_a_function_whose_only_change_is_an_and_is_still_converted() -> None:
    def f(x):
        k = 2
        if np.sum(x) > 0 and k > 1:  # (k, read in the operand's lambda, becomes a cell)
            print("positive")
        return x * 2.0
    assert pb.compiler.source.convert(f) is not None
