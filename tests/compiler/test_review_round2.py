"""Defects found by trying round five's changes as a user would (the reviewer's own
file): each test is the smallest program that failed, against numpy's run."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np

import pullback as pb

XB = np.array([[0.1, 0.2], [0.5, 0.9], [1.5, 0.3], [0.01, 0.02]])


def counted_while(x):
    h, k = x * 1.0, 0
    while h.sum() < 3.0:
        h = h * 1.3 + np.sin(h)
        k += 1
    return (h ** 2).sum()


def test_vmap_of_grad_batches_a_while_loop_counting_with_plus_equals():
    # was: ``k += 1`` on an int counted as an array changed in place, so pb.grad inside
    # vmap's trace unrolled the loop into guards and vmap ran once per example (warned)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = pb.vmap(pb.grad(counted_while))(XB)
    want = np.stack([pb.grad(counted_while)(x) for x in XB])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def item_first(x):
    r = np.zeros(3)
    r[0] = 1.0
    r[1:] = x[1:] * 2.0
    return (r * x).sum()


def table(D):
    n, m = D.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a = R[i - 1, j]
            R[i, j] = D[i - 1, j - 1] + np.minimum(a, R[i, j - 1])
    return R[n, m]


def _standalone(text: str, arg: np.ndarray) -> tuple:
    """``value_and_grad`` of an exported module, run where pullback cannot be imported."""
    code = ("import sys, numpy as np; sys.modules['pullback'] = None; env = {}\n"
            f"exec(sys.stdin.read(), env); v, g = env['value_and_grad'](np.array({arg.tolist()}))\n"
            "print(repr(float(v))); print(g.tolist())")
    out = subprocess.run([sys.executable, "-I", "-c", code], input=text, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    return float(out[0]), np.array(eval(out[1]))


def test_export_of_item_writes_and_infinite_constants_runs_standalone():
    # was: ExportError (view_scatter's chain= of view ops has no literal) for any item or
    # slice write, and a NameError for np.inf in a constant (written ``inf``)
    for fn, arg in ((item_first, np.array([0.3, 0.7, -0.2])),
                    (table, np.arange(6.0).reshape(3, 2) % 4 / 4)):
        value, grad = _standalone(pb.export(fn, arg), arg)
        want_value, want_grad = pb.value_and_grad(fn)(arg)
        assert np.isclose(value, fn(arg.copy())) and np.isclose(value, want_value)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-12)


def summed_rows(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.tanh(x[i]) * 0.7
    return s


def test_a_range_loop_reading_only_rows_of_a_traced_array_converts():
    # was: with a float carry and nothing traced but x[i] (the scan's slice, not read
    # through the body's closure) the loop unrolled: "no traced value flows through it"
    x = np.linspace(-1.0, 1.0, 7)
    g = pb.value_and_grad(summed_rows)
    value, grad = g(x)
    assert pb.compiler.inspect(g, x).loops == ()
    assert np.isclose(value, summed_rows(x))
    np.testing.assert_allclose(grad, 0.7 * (1 - np.tanh(x) ** 2), rtol=1e-12)


def branching(x):
    if x.sum() > 0:
        return x * 2.0
    return -x


def test_vmap_running_per_example_names_the_decision():
    # was: the warning named the function only; a loop's guard is hard to find unnamed
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pb.vmap(branching)(XB - 0.5)
    assert any("test_review_round2.py:" in str(w.message) and "if x.sum() > 0" in str(w.message)
               for w in seen), [str(w.message) for w in seen]


def test_export_under_native_loops_writes_the_python_loops():
    # was: ExportError "reads 'native_loop', a NativeLoop" (numba's loops have no source)
    arg = np.arange(6.0).reshape(3, 2) % 4 / 4
    with pb.config.override(native_loops=True):
        text = pb.export(table, arg)
    assert "native_loop" not in text
    value, grad = _standalone(text, arg)
    assert np.isclose(value, table(arg.copy()))
