"""config.native_loops: a loop region over small arrays runs as one numba-compiled loop
(forward and reverse), with the Python loop's results to rounding and finite
differences' gradients; what it cannot write stays a Python loop and inspect says why.
numba compiles each loop in about a second: the tests share a few loop bodies."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from ops import numeric_grad as fd

import pullback as pb
from pullback.compiler import cache

pytest.importorskip("numba")
RNG = np.random.default_rng(0)
XS, W, B = RNG.standard_normal((7, 4, 5)), RNG.standard_normal((5, 5)) * 0.4, \
    RNG.standard_normal(5)
SCALE = np.linspace(0.5, 1.5, 7)


@pytest.fixture(autouse=True)
def native():
    cache.reset()
    with pb.config.override(native_loops=True):
        yield
    cache.reset()


def rnn(xs, w, b):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for i, x in enumerate(xs):  # (an int counter, and a captured array read at it)
        h = np.tanh(h @ w + x + b * SCALE[i])
        total = total + (h * h).sum()
    return total


def gates(xs, w, b):
    h = np.zeros(xs.shape[1:], xs.dtype)
    for x in xs:
        z = 1 / (1 + np.exp(-(h @ w + b)))
        h = z * h + (1 - z) * np.maximum(x, 0.0)
    return (h * h).sum()


def newton(a):
    x = a
    while np.abs(x * x - a).max() > 1e-10:
        x = 0.5 * (x + a / x)
    return x.sum()


def _both(f, *args, argnums):
    """(native, Python loop) value_and_grad results, and the native one's inspection."""
    vg = pb.value_and_grad(f, argnums=argnums)
    got = vg(*args)
    info = pb.compiler.inspect(vg, *args)
    cache.reset()
    with pb.config.override(native_loops=False):
        want = pb.value_and_grad(f, argnums=argnums)(*args)
    return got, want, info


def _close(got, want, tol):
    np.testing.assert_allclose(got[0], want[0], rtol=tol)
    for a, b in zip(got[1], want[1]):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_rnn_forward_and_reverse_loops_are_native_and_exact():
    got, want, info = _both(rnn, XS, W, B, argnums=(0, 1, 2))
    _close(got, want, 1e-12)
    assert info.native == (f"{__file__}:36: native",)
    assert "native_loop(" in info.forward and "native_loop_1(" in info.forward
    assert "range(" not in info.forward  # (both loops run inside numba)
    np.testing.assert_allclose(got[1][1], fd(lambda w: rnn(XS, w, B), W), rtol=1e-6)
    np.testing.assert_allclose(got[1][2], fd(lambda b: rnn(XS, W, b), B), rtol=1e-6)


def test_a_float32_loop_with_a_sigmoid_gate_and_maximum_stays_float32():
    args = [a.astype(np.float32) for a in (XS, W, B)]
    got, want, info = _both(gates, *args, argnums=(1, 2))
    _close(got, want, 1e-5)
    assert info.native[0].endswith(": native")


def test_a_while_loops_reverse_is_native():
    a = np.array([2.0, 3.0, 5.0])
    got, want, info = _both(newton, a, argnums=0)
    assert "native_loop(" in info.forward and "while True:" in info.forward
    assert info.native == (f"{__file__}:52: reverse loop: native",)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    np.testing.assert_allclose(got[1], 0.5 / np.sqrt(a), rtol=1e-8)


def test_inspect_says_why_a_while_loops_reverse_stays_a_python_loop():
    def stops(a):
        x, k = a, 0
        while k < 20:
            x = np.sin(x) + 0.3 * a
            if np.abs(x).max() > 3.0:
                return x.sum() * 2
            k += 1
        return x.sum()

    got, want, info = _both(stops, np.array([1.0, 2.0]), argnums=0)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert len(info.native) == 1 and ": reverse loop: Python loop: its body uses amax" \
        in info.native[0]
    assert "native_loop(" not in info.forward


def test_what_it_cannot_write_stays_a_python_loop_and_inspect_says_why():
    def flipped(xs, w):
        h = np.zeros(xs.shape[1:])
        for x in xs:
            h = np.tanh(h @ w + x)[:, ::-1]
        return h.sum()

    got, want, info = _both(flipped, XS, W, argnums=1)
    np.testing.assert_array_equal(got[1], want[1])
    assert len(info.native) == 1 and "Python loop: its body uses" in info.native[0]
    assert "native_loop(" not in info.forward


def test_nested_transforms_and_tensors_run_the_region_instead():
    hess = pb.grad(lambda w: pb.grad(rnn, argnums=1)(XS, w, B).sum())(W)
    cache.reset()
    with pb.config.override(native_loops=False):
        want = pb.grad(lambda w: pb.grad(rnn, argnums=1)(XS, w, B).sum())(W)
    np.testing.assert_allclose(hess, want, rtol=1e-12)

    @pb.compile
    def loss(xs, w):
        h = pb.zeros(4, 5, dtype=pb.float64)
        for x in xs:
            h = (h @ w + x).tanh()
        return h.sum()

    w = pb.tensor(W, requires_grad=True)
    loss(pb.tensor(XS), w).backward()
    np.testing.assert_allclose(w.grad.numpy(), fd(lambda v: np.sum(_tanh_rnn(v)), W),
                               rtol=1e-6)


def _tanh_rnn(w):
    h = np.zeros((4, 5))
    for x in XS:
        h = np.tanh(h @ w + x)
    return h


def test_numba_is_not_imported_while_the_setting_is_off():
    code = ("import sys, numpy as np, pullback as pb\n"
            "def f(xs):\n    h = np.zeros(3)\n    for x in xs:\n        h = np.tanh(h + x)\n"
            "    return h.sum()\n"
            "pb.grad(f)(np.ones((4, 3)))\nassert 'numba' not in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def softmin(a, b, c, gamma):
    m = np.minimum(np.minimum(a, b), c)
    return m - gamma * np.log(np.exp((m - a) / gamma) + np.exp((m - b) / gamma)
                              + np.exp((m - c) / gamma))


def soft_dtw(D):
    n, m = D.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            R[i, j] = D[i - 1, j - 1] + softmin(R[i - 1, j], R[i, j - 1], R[i - 1, j - 1], 0.1)
    return R[n, m]


def test_soft_dtws_nested_loops_and_item_writes_are_native_forward_and_reverse():
    D = RNG.random((4, 5))
    D[1, 2] = D[2, 2]  # (a tie: minimum's gradient mask splits it)
    got, want, info = _both(soft_dtw, D, argnums=0)
    _close(got, want, 1e-13)
    assert len(info.native) == 1 and info.native[0].endswith(": native")
    assert "native_loop(" in info.forward and "native_loop_1(" in info.forward
    code = [line.strip() for line in info.forward.splitlines()]
    assert not [line for line in code if line.startswith("for ")]  # (both nests in numba)
    np.testing.assert_allclose(got[1], fd(soft_dtw, D), rtol=1e-6, atol=1e-9)


def test_a_nested_loop_it_cannot_write_stays_a_python_loop_and_says_why():
    def table(D):
        R = np.zeros((3, 3))
        for i in range(1, 3):
            for j in range(1, 3):
                R[i, j] = np.arctan(R[i - 1, j] + D[i, j]) * R[i, j - 1] + D[j, i]
        return R[2, 2]

    D = RNG.random((3, 3))
    got, want, info = _both(table, D, argnums=0)
    np.testing.assert_array_equal(got[1], want[1])
    assert info.native[0].endswith("Python loop: its inner loop stays a Python loop: its "
                                   "body uses atan, which native loops do not write")
    assert "native_loop(" not in info.forward
    np.testing.assert_allclose(got[1], fd(table, D), rtol=1e-6, atol=1e-9)
