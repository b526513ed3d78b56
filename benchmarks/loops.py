"""Loops as loops (issue 17): first call and steady call against the trip count.

A tanh RNN (batch 4, hidden 16, float64), loss = sum of the hidden states, gradient
with respect to the weights via ``pb.value_and_grad``, written four ways:

* ``pb.scan``: the loop is one region, traced once whatever its length;
* a plain ``for x in xs`` loop: the source pass turns it into the same region;
* native: the plain loop with ``pb.config.native_loops`` (numba installed): the forward
  and reverse loops each run as one compiled function (its first call in a process
  includes numba's compile; later lengths reuse the compiled loop);
* unrolled: a plain loop the source pass leaves alone (it appends to a list), so every
  step is in the trace, as before issue 17;
* the floor: the forward loop and its reverse loop written by hand in numpy.

JAX, when it is installed, beside them: ``jax.lax.scan`` and a Python loop under
``jax.jit`` (unrolled into the trace), both ``jit(value_and_grad)``. First calls use
a fresh function object each (no cache can answer).
"""

from __future__ import annotations

import importlib
import importlib.util
import linecache
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
    source: dict[int, int] = field(default_factory=dict)  # generated characters (plain for)
    missing: dict[str, str] = field(default_factory=dict)  # way -> why it was not run


SCAN_SRC = """
def rnn(xs, w):
    def step(h, x):
        h = np.tanh(h @ w + x)
        return h, h
    h, hs = pb.scan(step, np.zeros(xs.shape[1:]), xs)
    return hs.sum()
"""
PLAIN_SRC = """
def rnn(xs, w):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for x in xs:
        h = np.tanh(h @ w + x)
        total = total + h.sum()
    return total
"""
UNROLLED_SRC = """
def rnn(xs, w):
    h = np.zeros(xs.shape[1:])
    sums = []
    for x in xs:
        h = np.tanh(h @ w + x)
        sums.append(h.sum())
    return sum(sums)
"""
JAX_SCAN_SRC = """
def rnn(xs, w):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()
    h, sums = jax.lax.scan(step, jnp.zeros(xs.shape[1:]), xs)
    return sums.sum()
"""
JAX_UNROLLED_SRC = """
def rnn(xs, w):
    h = jnp.zeros(xs.shape[1:])
    total = 0.0
    for t in range(xs.shape[0]):
        h = jnp.tanh(h @ w + xs[t])
        total = total + h.sum()
    return total
"""
WAYS = {"pb.scan": SCAN_SRC, "plain for": PLAIN_SRC, "native": PLAIN_SRC,
        "unrolled": UNROLLED_SRC,
        "JAX lax.scan": JAX_SCAN_SRC, "JAX jit unrolled": JAX_UNROLLED_SRC, "floor": None}


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


def _fresh(source: str, env: dict) -> Callable:
    """A new function object compiled from ``source``, whose source ``inspect`` finds
    (registered in linecache, as for a file): pullback's source pass reads it."""
    _fresh.count = getattr(_fresh, "count", 0) + 1
    filename = f"<bench-loops-{_fresh.count}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    env = dict(env)
    exec(compile(source, filename, "exec"), env)
    return env["rnn"]


def _median(fn: Callable, args: tuple, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _value_and_grad(way: str, src: str) -> Callable | None:
    """``(xs, w) -> (value, grad)`` for one way, compiled by its library (None: the
    library is not installed)."""
    if way.startswith("JAX"):
        try:
            jax = importlib.import_module("jax")
        except ImportError:
            return None
        jax.config.update("jax_enable_x64", True)
        env = {"jax": jax, "jnp": importlib.import_module("jax.numpy")}
        vg = jax.jit(jax.value_and_grad(_fresh(src, env), argnums=1))
        return lambda xs, w: jax.block_until_ready(vg(xs, w))
    pb = importlib.import_module("pullback")
    vg = pb.value_and_grad(_fresh(src, {"np": np, "pb": pb}), argnums=1)
    if way != "native":
        return vg
    if importlib.util.find_spec("numba") is None:
        return None

    def native(xs: np.ndarray, w: np.ndarray) -> tuple:
        with pb.config.override(native_loops=True):
            return vg(xs, w)
    return native


def run(quick: bool) -> LoopTimes:
    pb = importlib.import_module("pullback")
    out = LoopTimes()
    rng = np.random.default_rng(0)
    w = rng.standard_normal((HIDDEN, HIDDEN)) * 0.3
    lengths = (50, 1000) if quick else (50, 1000, 10000)
    for way, src in WAYS.items():
        out.first[way], out.steady[way] = {}, {}
        for n in lengths:
            if "unrolled" in way and n > UNROLLED_UP_TO or \
                    way == "JAX jit unrolled" and quick and n > 50:  # (minutes to compile)
                continue
            xs = rng.standard_normal((n, BATCH, HIDDEN))
            if src is None:
                out.steady[way][n] = _median(floor, (xs, w), 3 if n > 1000 else 7)
                continue
            vg = _value_and_grad(way, src)
            if vg is None:
                out.missing[way] = "not installed"
                break
            t0 = time.perf_counter()
            value, grad = vg(xs, w)
            out.first[way][n] = time.perf_counter() - t0
            expected = floor(xs, w)
            if not (np.allclose(value, expected[0]) and np.allclose(grad, expected[1])):
                raise AssertionError(f"{way} at {n} steps disagrees with the floor")
            out.steady[way][n] = _median(vg, (xs, w), 3 if n > 1000 else 7)
            if way == "plain for":
                out.source[n] = len(pb.compiler.inspect(vg, xs, w).forward)
    return out


def section(t: LoopTimes | None) -> list[str]:
    """The markdown section: first and steady calls per way, and the issue's targets,
    ratios from this run."""
    if t is None:
        return []
    ms = lambda s: "-" if s is None else f"{s * 1e3:.1f} ms"
    lengths = sorted(t.steady["floor"])
    ways = [w for w in WAYS if w != "floor" and w not in t.missing]
    rows = ["| way | " + " | ".join(f"first, {n} steps | steady, {n} steps" for n in lengths)
            + " |", "| --- |" + " --- | --- |" * len(lengths)]
    for way in ways:
        rows.append(f"| {way} | " + " | ".join(
            f"{ms(t.first[way].get(n))} | {ms(t.steady[way].get(n))}" for n in lengths) + " |")
    rows.append("| numpy floor | " + " | ".join(f"- | {ms(t.steady['floor'][n])}"
                                                 for n in lengths) + " |")
    checks = []
    for way in ("pb.scan", "plain for"):
        base = t.first[way][lengths[0]]
        for n in lengths[1:]:
            limit = 1.5 * base + t.steady[way][n]
            first = t.first[way][n]
            checks.append(f"- {way}, first call at {n} steps: {ms(first)}; target 1.5 x the "
                          f"first call at {lengths[0]} + one steady call = {ms(limit)} "
                          f"({'met' if first <= limit else f'{first / limit:.2f}x over'})")
        checks.append(f"- {way}, steady / floor: " + ", ".join(
            f"{t.steady[way][n] / t.steady['floor'][n]:.2f} at {n}" for n in lengths)
            + " (target 1.1)")
    if "native" in ways:
        checks.append("- native, steady / floor: " + ", ".join(
            f"{t.steady['native'][n] / t.steady['floor'][n]:.2f} at {n}" for n in lengths)
            + f"; first call at {lengths[0]} / plain for's: "
            f"{t.first['native'][lengths[0]] / t.first['plain for'][lengths[0]]:.1f}x "
            "(numba's compile, once per process)")
        if "JAX lax.scan" in ways and 1000 in t.steady["JAX lax.scan"]:
            checks.append("- native, steady at 1000 steps / JAX lax.scan's: "
                          f"{t.steady['native'][1000] / t.steady['JAX lax.scan'][1000]:.2f}")
    if "JAX lax.scan" in ways and 1000 in t.first["JAX lax.scan"]:
        ratio = t.first["plain for"][1000] / t.first["JAX lax.scan"][1000]
        checks.append(f"- plain for, first call at 1000 steps / JAX lax.scan's: {ratio:.2f} "
                      "(target 0.25)")
    checks.append("- generated characters (plain for): " + ", ".join(
        f"{c} at {n}" for n, c in sorted(t.source.items())))
    missing = [f"- {way}: {why}" for way, why in t.missing.items()]
    return (["## Loops as loops (issue 17)", "",
             f"tanh RNN, batch {BATCH}, hidden {HIDDEN}, float64, value_and_grad with "
             "respect to the weights (benchmarks/loops.py says how each way is written).",
             ""] + rows + [""] + checks + missing + [""])
