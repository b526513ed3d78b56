"""Loops as loops (issue 17): first call and steady call against the trip count.

A tanh RNN (batch 4, hidden 16, float64), loss = sum of the hidden states, gradient
with respect to the weights via ``pb.value_and_grad``:

* ``pb.scan``: the loop is one region, traced once whatever its length;
* unrolled: the same program as a Python ``for`` loop (every step in the trace);
* the floor: the forward loop and its reverse loop written by hand in numpy.

First calls use a fresh function object each (no cache can answer). JAX is not on
this machine; its columns are left out, not guessed.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

BATCH, HIDDEN = 4, 16
UNROLLED_UP_TO = 1000  # longer unrolled traces take minutes: not measured


@dataclass
class LoopTimes:
    """Seconds per trip count: first calls and steady calls of each way."""

    first: dict[str, dict[int, float]] = field(default_factory=dict)
    steady: dict[str, dict[int, float]] = field(default_factory=dict)
    source: dict[int, int] = field(default_factory=dict)  # generated characters (scan)


SCAN_SRC = """
def rnn(xs, w):
    def step(h, x):
        h = np.tanh(h @ w + x)
        return h, h
    h, hs = pb.scan(step, np.zeros(xs.shape[1:]), xs)
    return hs.sum()
"""
UNROLLED_SRC = """
def rnn(xs, w):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for x in xs:
        h = np.tanh(h @ w + x)
        total = total + h.sum()
    return total
"""


def floor(xs: np.ndarray, w: np.ndarray) -> tuple:
    """The loss and its gradient by hand: a forward loop keeping the states, then the
    reverse loop."""
    hs = [np.zeros(xs.shape[1:])]
    for x in xs:
        hs.append(np.tanh(hs[-1] @ w + x))
    g_h = np.zeros_like(hs[0])
    g_w = np.zeros_like(w)
    for t in range(len(xs), 0, -1):
        g_a = (g_h + 1.0) * (1.0 - hs[t] * hs[t])
        g_w += hs[t - 1].T @ g_a
        g_h = g_a @ w.T
    return sum(h.sum() for h in hs[1:]), g_w


def _fresh(source: str, pb) -> Callable:
    _fresh.count = getattr(_fresh, "count", 0) + 1
    env = {"np": np, "pb": pb}
    exec(compile(source, f"<bench-loops-{_fresh.count}>", "exec"), env)
    return env["rnn"]


def _median(fn: Callable, args: tuple, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(quick: bool) -> LoopTimes:
    pb = importlib.import_module("pullback")
    out = LoopTimes()
    rng = np.random.default_rng(0)
    w = rng.standard_normal((HIDDEN, HIDDEN)) * 0.3
    lengths = (50, 1000) if quick else (50, 1000, 10000)
    for way, src in (("pb.scan", SCAN_SRC), ("unrolled", UNROLLED_SRC), ("floor", None)):
        out.first[way], out.steady[way] = {}, {}
        for n in lengths:
            if way == "unrolled" and n > UNROLLED_UP_TO:
                continue
            xs = rng.standard_normal((n, BATCH, HIDDEN))
            if src is None:
                out.steady[way][n] = _median(floor, (xs, w), 3 if n > 1000 else 7)
                continue
            vg = pb.value_and_grad(_fresh(src, pb), argnums=1)
            t0 = time.perf_counter()
            value, grad = vg(xs, w)
            out.first[way][n] = time.perf_counter() - t0
            expected = floor(xs, w)
            if not (np.allclose(value, expected[0]) and np.allclose(grad, expected[1])):
                raise AssertionError(f"{way} at {n} steps disagrees with the floor")
            out.steady[way][n] = _median(vg, (xs, w), 3 if n > 1000 else 7)
            if way == "pb.scan":
                out.source[n] = len(pb.compiler.inspect(vg, xs, w).forward)
    return out


def section(t: LoopTimes | None) -> list[str]:
    """The markdown section: the table and the issue's targets, ratios from this run."""
    if t is None:
        return []
    ms = lambda s: "-" if s is None else f"{s * 1e3:.1f} ms"
    lengths = sorted(t.steady["floor"])
    rows = ["| steps | pb.scan first | pb.scan steady | unrolled first | unrolled steady "
            "| numpy floor | scan / floor | generated characters |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in lengths:
        scan_s, fl = t.steady["pb.scan"][n], t.steady["floor"][n]
        rows.append(f"| {n} | {ms(t.first['pb.scan'][n])} | {ms(scan_s)} | "
                    f"{ms(t.first['unrolled'].get(n))} | {ms(t.steady['unrolled'].get(n))} | "
                    f"{ms(fl)} | {scan_s / fl:.2f} | {t.source[n]} |")
    base = t.first["pb.scan"][lengths[0]]
    checks = []
    for n in lengths[1:]:
        limit = 1.5 * base + t.steady["pb.scan"][n]
        first = t.first["pb.scan"][n]
        checks.append(f"- first call at {n} steps: {ms(first)}, target 1.5 x first call at "
                      f"{lengths[0]} + one steady call = {ms(limit)} "
                      f"({'met' if first <= limit else f'{first / limit:.2f}x over'})")
    return (["## Loops as loops (pb.scan, issue 17)", "",
             f"tanh RNN, batch {BATCH}, hidden {HIDDEN}, float64, pb.value_and_grad with "
             "respect to the weights; JAX is not installed here.", ""]
            + rows + [""] + checks + [""])
