"""A long scan traced for a front door leaves stand-ins for its outputs (control_flow.py
``STAND_IN_FROM``): the loop runs once, in the generated code of the call that traced.
Whatever reads a stand-in (a branch, float(), a print's text, an op failing on it and
caught, a while loop run on it) makes the trace again on the real values: every answer
is the uncompiled function's."""

from __future__ import annotations

import numpy as np
import pytest
from pullback.transforms import regions

import pullback as pb
from pullback.compiler import control_flow

rng = np.random.default_rng(5)
XS, W = rng.standard_normal((12, 2, 3)), rng.standard_normal((3, 3)) * 0.5


@pytest.fixture(autouse=True)
def _short(monkeypatch: pytest.MonkeyPatch) -> list:
    monkeypatch.setattr(control_flow, "STAND_IN_FROM", 4)
    made = []
    real = regions._scan_zeros
    monkeypatch.setattr(regions, "_scan_zeros", lambda *a, **k: made.append(1) or real(*a, **k))
    return made


def _states(xs: np.ndarray, w: np.ndarray) -> np.ndarray:
    def step(h, x):
        h = np.tanh(h @ w + x)
        return h, h
    return pb.scan(step, np.zeros(xs.shape[1:]), xs)[1]


def _fd(f: object, w: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    g = np.zeros_like(w)
    for i in np.ndindex(w.shape):
        e = np.zeros_like(w)
        e[i] = eps
        g[i] = (f(w + e) - f(w - e)) / (2 * eps)
    return g


def _check(f: object, w: np.ndarray = W) -> None:
    value, g = pb.value_and_grad(f)(w)
    assert np.isclose(value, f(w))
    np.testing.assert_allclose(g, _fd(f, w), rtol=1e-6, atol=1e-8)


def test_a_loop_nothing_reads_runs_once(_short: list) -> None:
    def plain(w):
        h = np.zeros(XS.shape[1:])
        total = 0.0
        for x in XS:
            h = np.tanh(h @ w + x)
            total = total + h.sum()
        return total
    _check(lambda w: _states(XS, w).sum())
    _check(plain)
    assert _short  # (the trace left stand-ins)


def test_nested_loops_count_their_inner_steps(_short: list, monkeypatch) -> None:
    # 3 rows of 3 cells: no loop reaches 10 steps, the outer one runs 12 (9 + 3)
    monkeypatch.setattr(control_flow, "STAND_IN_FROM", 10)

    def table(w):
        R = np.zeros((4, 4))
        for i in range(1, 4):
            for j in range(1, 4):
                R[i, j] = np.tanh(R[i - 1, j] * w[0, 0] + R[i, j - 1] * w[1, 1] + w[i - 1, j - 1])
        return R[3, 3] + np.sum(R * R)
    _check(table)
    assert _short  # (the outer loop left stand-ins)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_branch_on_the_loop_reads_its_values(sign: float) -> None:
    def f(w):
        hs = _states(XS * sign, w)
        return (hs ** 2).sum() if hs.sum() > 0 else hs.sum()
    _check(f)


def test_float_and_print_text_read_its_values() -> None:
    seen = []

    def f(w):
        hs = _states(XS, w)
        seen.append(str(hs[-1, 0, 0]))
        return hs.sum() * (2.0 if float(hs[3].sum()) > 0 else 3.0)
    _check(f)
    eager = float(_states(XS, W)[-1, 0, 0])
    assert float(seen[0]) == pytest.approx(eager)  # (the traced call's text: real values)


def test_an_error_on_a_stand_in_caught_by_the_function() -> None:
    def f(w):
        hs = _states(XS, w)
        m = hs[-1].T @ hs[-1] + np.eye(3)
        try:
            return np.linalg.inv(m).sum()
        except np.linalg.LinAlgError:  # (a stand-in of zeros would not come here either)
            return hs.sum() * 0.0
    _check(f)

    def g(w):
        hs = _states(XS, w)
        try:
            return np.linalg.inv(hs[-1][:, :2]).sum()  # (singular on zeros)
        except np.linalg.LinAlgError:
            return hs.sum() * 0.0
    assert abs(np.linalg.det(_states(XS, W)[-1][:, :2])) > 0.1
    _check(g)


def test_a_while_loop_runs_on_the_loop_values() -> None:
    def f(w):
        s = _states(XS, w).sum()
        return pb.while_loop(lambda c: c < 15.0 + np.abs(s), lambda c: c * 2.0 + s * s * 0.01,
                             s * 0.0 + 1.0)
    _check(f)


def _rnn_while(w, xs, limit):
    h = np.zeros(xs.shape[1:])
    t = 0
    while t < limit:
        h = np.tanh(h @ w + xs[t])
        t = t + 1
    return h


@pytest.mark.parametrize("read", [False, True])
def test_a_long_while_loop_stops_early_at_trace_time(read: bool,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A while loop (or a for loop that breaks) stops after ``WHOLE_LOOP_FROM`` steps
    at trace time, its outputs stand-ins: the call's generated code runs it whole. A
    trace that reads them is made again on the real values (the loop then runs on)."""
    monkeypatch.setattr(regions, "WHOLE_LOOP_FROM", 3)
    xs = np.random.default_rng(6).standard_normal((9, 2, 3))
    rest = []
    real = regions._rest_of_while
    monkeypatch.setattr(regions, "_rest_of_while", lambda *a: rest.append(1) or real(*a))

    def f(w):
        h = _rnn_while(w, xs, 9)
        return (h * h).sum() if not read or h.sum() > -1e9 else h.sum()
    value, g = pb.value_and_grad(f)(W)
    assert len(rest) == read  # (the trace ran past the first steps only to be read)
    assert np.isclose(value, f(W))
    np.testing.assert_allclose(g, _fd(f, W), rtol=1e-6, atol=1e-8)
