"""A long scan's forward on arrays runs as one generated loop function (regions.py
``WHOLE_LOOP_FROM``): its results are those of the per-step loop, bit for bit, traced
for the compiler, through a while loop's reverse and in a gradient of a gradient."""

from __future__ import annotations

import numpy as np
import pytest
from pullback.transforms import regions

import pullback as pb
from pullback.compiler import control_flow


def _rnn(xs: np.ndarray, w: np.ndarray) -> np.ndarray:
    def step(h, x):
        h = np.tanh(h @ w + x)
        return h, h.sum()
    h, sums = pb.scan(step, np.zeros(xs.shape[1:]), xs)
    return sums.sum() + (h * h).sum()


def _newton(a: np.ndarray) -> np.ndarray:
    x = pb.while_loop(lambda x: np.abs(x * x - a).max() > 1e-12, lambda x: 0.5 * (x + a / x), a)
    return x.sum()


def _both(fn: object, monkeypatch: pytest.MonkeyPatch, spy: str = "_loop_runner") -> tuple:
    """``fn()`` with every loop run per step, then as one generated loop (made by
    ``spy``: every scan's, or the rest of every while loop's)."""
    monkeypatch.setattr(pb.config, "cache_dir", None)  # (a variant kept on disk: no trace)
    monkeypatch.setattr(regions, "WHOLE_LOOP_FROM", 10 ** 9)
    per_step = fn()
    pb.compiler.reset()  # (front doors made from now on trace afresh)
    monkeypatch.setattr(regions, "WHOLE_LOOP_FROM", 1)
    made = []
    real = getattr(regions, spy)
    monkeypatch.setattr(regions, spy, lambda *a, **k: made.append(real(*a, **k)) or made[-1])
    whole = fn()
    assert made and all(f is not None for f in made)  # (every scan ran as one loop)
    return per_step, whole


def _same(a: object, b: object) -> None:
    for x, y in zip(np.atleast_1d(np.asarray(a, dtype=object)).ravel(),
                    np.atleast_1d(np.asarray(b, dtype=object)).ravel()):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


rng = np.random.default_rng(0)
XS, W = rng.standard_normal((30, 2, 3)), rng.standard_normal((3, 3)) * 0.5


@pytest.mark.parametrize("door", ["value_and_grad", "hessian"])
def test_whole_loop_matches_per_step(door: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if door == "value_and_grad":
        call = lambda: pb.value_and_grad(lambda w: _rnn(XS, w))(W)
    else:
        call = lambda: pb.hessian(lambda w: _rnn(XS[:5], w))(W)
    per_step, whole = _both(call, monkeypatch)
    _same(per_step, whole)


def test_while_reverse_as_one_loop_over_trip_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    a = np.array([2.0, 9.0, 30.0])
    per_step, whole = _both(lambda: [pb.hessian(_newton)(a * k) for k in (1.0, 100.0)],
                            monkeypatch)
    for p, q in zip(per_step, whole):
        np.testing.assert_array_equal(p, q)
    np.testing.assert_allclose(whole[0], np.diag(-0.25 * a ** -1.5))


def _damped(a: np.ndarray) -> np.ndarray:
    def body(c: tuple) -> tuple:
        i, x = c
        return i + 1, 0.5 * np.sin(x) + a
    return pb.while_loop(lambda c: c[0] < 7, body, (np.int64(0), a))[1].sum()


def _damped_for(a: np.ndarray) -> np.ndarray:
    x = a
    for _ in range(40):
        x = 0.5 * np.sin(x) + a
        if x.sum() > 1e9:
            break
    return (x * x).sum()


@pytest.mark.parametrize("fn", [_damped, _damped_for])
def test_while_forward_goes_on_as_one_loop(fn: object, monkeypatch: pytest.MonkeyPatch) -> None:
    # (the first WHOLE_LOOP_FROM steps one by one, the rest as one generated loop; a
    # trace that may leave stand-ins stops the loop there instead: not here)
    monkeypatch.setattr(control_flow, "standing_in", lambda on: regions.standing_in(False))
    a = np.array([0.3, -1.2, 2.0])
    per_step, whole = _both(lambda: [pb.value_and_grad(fn)(a * k) for k in (1.0, 0.5)],
                            monkeypatch, "_rest_of_while")
    for p, q in zip(per_step, whole):
        _same(p, q)
    eps, (_, g) = 1e-6, whole[0]
    fd = [(fn(a + eps * e) - fn(a - eps * e)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
