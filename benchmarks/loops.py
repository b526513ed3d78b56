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
a fresh function object each (no cache can answer). Every time is this process's CPU
time (``time.process_time``, all its threads: XLA's compile threads count), as the
steady calls are: on a shared machine wall time moves with the other loads.

The nested-loop programme: soft-DTW (two nested ``for`` loops writing ``R[i, j]``) over
an n x n cost matrix, n*n steps of the inner body (7x7, 32x32, 100x100: about 50, 1,000
and 10,000 steps), beside its floor written by hand (the forward keeps the softmin's
three weights per cell, the reverse loop spreads each cell's gradient to its three
neighbours), the same with ``pb.config.native_loops`` (numba: the forward and the
reverse loop nest each one compiled function, compiled anew per size), and JAX's: two
nested ``lax.fori_loop`` writing ``R.at[i, j].set`` at every size, the Python loops
traced under ``jax.jit`` at 7x7 only (both ``jit(value_and_grad)``).
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import linecache
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import loops_scalar
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
    nested: LoopTimes | None = None  # the soft-DTW programme's (steps = n * n)
    scalar: dict | None = None  # the Kalman filter's (loops_scalar.py)


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
BREAK_SRC = """
def rnn(xs, w):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    for t in range(xs.shape[0]):
        h = np.tanh(h @ w + xs[t])
        total = total + h.sum()
        if total > 1e9:
            break
    return total
"""
WHILE_SRC = """
def rnn(xs, w):
    h = np.zeros(xs.shape[1:])
    total = 0.0
    t = 0
    while t < xs.shape[0]:
        h = np.tanh(h @ w + xs[t])
        total = total + h.sum()
        t = t + 1
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
DTW_SRC = """
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
"""
JAX_SOFTMIN = """
def softmin(a, b, c, gamma):
    m = jnp.minimum(jnp.minimum(a, b), c)
    return m - gamma * jnp.log(jnp.exp((m - a) / gamma) + jnp.exp((m - b) / gamma)
                               + jnp.exp((m - c) / gamma))
"""
JAX_DTW_LAX_SRC = JAX_SOFTMIN + """
def soft_dtw(D):
    n, m = D.shape
    R = jnp.full((n + 1, m + 1), jnp.inf).at[0, 0].set(0.0)

    def row(i, R):
        def cell(j, R):
            r = D[i - 1, j - 1] + softmin(R[i - 1, j], R[i, j - 1], R[i - 1, j - 1], 0.1)
            return R.at[i, j].set(r)
        return jax.lax.fori_loop(1, m + 1, cell, R)
    R = jax.lax.fori_loop(1, n + 1, row, R)
    return R[n, m]
"""
JAX_DTW_UNROLLED_SRC = JAX_SOFTMIN + """
def soft_dtw(D):
    n, m = D.shape
    R = jnp.full((n + 1, m + 1), jnp.inf).at[0, 0].set(0.0)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            r = D[i - 1, j - 1] + softmin(R[i - 1, j], R[i, j - 1], R[i - 1, j - 1], 0.1)
            R = R.at[i, j].set(r)
    return R[n, m]
"""
DTW_SIDES = {50: 7, 1000: 32, 10000: 100}  # steps (about) -> n of the n x n matrix
WAYS = {"pb.scan": SCAN_SRC, "plain for": PLAIN_SRC, "for + break": BREAK_SRC,
        "while": WHILE_SRC, "native": PLAIN_SRC,
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


def dtw_floor(D: np.ndarray, gamma: float = 0.1) -> tuple:
    """soft-DTW's value and gradient by hand: the forward keeps each cell's softmin
    weights, the reverse loop spreads each cell's gradient to the three cells it read."""
    n, m = D.shape
    R = np.full((n + 1, m + 1), np.inf)
    R[0, 0] = 0.0
    weights = np.empty((n + 1, m + 1, 3))
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            a, b, c = R[i - 1, j], R[i, j - 1], R[i - 1, j - 1]
            low = np.minimum(np.minimum(a, b), c)
            ea, eb, ec = (np.exp((low - a) / gamma), np.exp((low - b) / gamma),
                          np.exp((low - c) / gamma))
            total = ea + eb + ec
            R[i, j] = D[i - 1, j - 1] + low - gamma * np.log(total)
            weights[i, j] = ea / total, eb / total, ec / total
    G = np.zeros((n + 1, m + 1))
    G[n, m] = 1.0
    for i in range(n, 0, -1):
        for j in range(m, 0, -1):
            g = G[i, j]
            wa, wb, wc = weights[i, j]
            G[i - 1, j] += g * wa
            G[i, j - 1] += g * wb
            G[i - 1, j - 1] += g * wc
    return R[n, m], G[1:, 1:]


def _fresh(source: str, env: dict, name: str = "rnn") -> Callable:
    """A new function object compiled from ``source``, whose source ``inspect`` finds
    (registered in linecache, as for a file): pullback's source pass reads it."""
    _fresh.count = getattr(_fresh, "count", 0) + 1
    filename = f"<bench-loops-{_fresh.count}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    env = dict(env)
    exec(compile(source, filename, "exec"), env)
    return env[name]


def _median(fn: Callable, args: tuple, rounds: int) -> float:
    """A steady call's time: the fastest of ``rounds`` rounds, each of enough calls to
    take 20 ms or more, in this process's CPU time (the machine is shared: wall time
    and medians move with the other loads)."""
    t0 = time.process_time()
    fn(*args)
    calls = max(1, int(0.02 / max(time.process_time() - t0, 1e-6)))
    best = float("inf")
    for _ in range(rounds):
        t0 = time.process_time()
        for _ in range(calls):
            fn(*args)
        best = min(best, (time.process_time() - t0) / calls)
    return best


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
    return vg if way != "native" else _native(pb, vg)


def _native(pb: Any, vg: Callable) -> Callable | None:
    """``vg`` called with ``pb.config.native_loops`` on (None: numba is not installed)."""
    if importlib.util.find_spec("numba") is None:
        return None

    def native(*args: Any) -> tuple:
        with pb.config.override(native_loops=True):
            return vg(*args)
    return native


def _jax_dtw(src: str) -> Callable | None:
    """``D -> (value, grad)``: soft-DTW under ``jax.jit(jax.value_and_grad)`` (None: JAX
    is not installed)."""
    try:
        jax = importlib.import_module("jax")
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    env = {"jax": jax, "jnp": importlib.import_module("jax.numpy")}
    vg = jax.jit(jax.value_and_grad(_fresh(src, env, "soft_dtw")))
    return lambda D: jax.block_until_ready(vg(D))


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
            gc.collect()  # (a full collection of the earlier ways' garbage is not this call's)
            t0 = time.process_time()
            value, grad = vg(xs, w)
            out.first[way][n] = time.process_time() - t0
            expected = floor(xs, w)
            if not (np.allclose(value, expected[0]) and np.allclose(grad, expected[1])):
                raise AssertionError(f"{way} at {n} steps disagrees with the floor")
            out.steady[way][n] = _median(vg, (xs, w), 3 if n > 1000 else 7)
            if way == "plain for":
                out.source[n] = len(pb.compiler.inspect(vg, xs, w).forward)
    out.nested = _run_nested(pb, quick)
    out.scalar = loops_scalar.run(_fresh, _median)
    return out


def _run_nested(pb: Any, quick: bool) -> LoopTimes:
    """soft-DTW's first and steady calls (pb.value_and_grad of the nested loops) and
    its floor, per number of steps."""
    ways = {"nested for": None, "native": None, "JAX lax loops": JAX_DTW_LAX_SRC,
            "JAX jit unrolled": JAX_DTW_UNROLLED_SRC}
    out = LoopTimes(first={way: {} for way in ways},
                    steady={**{way: {} for way in ways}, "floor": {}})
    rng = np.random.default_rng(1)
    for steps, side in DTW_SIDES.items():
        if quick and steps > 1000:
            continue
        D = rng.random((side, side))
        rounds = 3 if steps > 1000 else 7
        out.steady["floor"][steps] = _median(dtw_floor, (D,), rounds)
        expected = dtw_floor(D)
        for way, src in ways.items():
            if way in out.missing or way == "JAX jit unrolled" and side > 7:
                continue  # (the unrolled trace of 32x32 takes minutes to compile)
            vg = pb.value_and_grad(_fresh(DTW_SRC, {"np": np}, "soft_dtw")) \
                if src is None else _jax_dtw(src)
            if way == "native":
                vg = _native(pb, vg)
            if vg is None:
                out.missing[way] = "numba is not installed" if way == "native" \
                    else "not installed"
                continue
            gc.collect()
            t0 = time.process_time()
            value, grad = vg(D)
            out.first[way][steps] = time.process_time() - t0
            if not (np.allclose(value, expected[0]) and np.allclose(grad, expected[1])):
                raise AssertionError(f"soft-DTW ({way}) at {side}x{side} disagrees with "
                                     "the floor")
            out.steady[way][steps] = _median(vg, (D,), rounds)
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
    for way in ("pb.scan", "plain for", "for + break", "while"):
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
             ""] + rows + [""] + checks + missing + [""] + _nested_section(t.nested)
            + loops_scalar.section(t.scalar))


def _nested_section(t: LoopTimes | None) -> list[str]:
    """soft-DTW's table: first and steady calls per number of steps of each way, the
    floor's steady call and each way's steady / floor ratio."""
    if t is None:
        return []
    ms = lambda s: "-" if s is None else f"{s * 1e3:.{2 if s < 1e-3 else 1}f} ms"
    ways = [w for w in t.first if w not in t.missing]
    rows = ["| steps (n x n) | " + " | ".join(f"{w}: first | {w}: steady" for w in ways)
            + " | numpy floor | " + " | ".join(f"{w}: steady / floor" for w in ways) + " |",
            "| --- |" + " --- | --- |" * len(ways) + " --- |" + " --- |" * len(ways)]
    for steps in sorted(t.steady["floor"]):
        side, fl = DTW_SIDES[steps], t.steady["floor"][steps]
        ratios = [t.steady[w].get(steps) for w in ways]
        rows.append(f"| {side * side} ({side}x{side}) | " + " | ".join(
            f"{ms(t.first[w].get(steps))} | {ms(t.steady[w].get(steps))}" for w in ways)
            + f" | {ms(fl)} | " + " | ".join("-" if r is None else f"{r / fl:.2f}"
                                             for r in ratios) + " |")
    sizes = sorted(t.first.get("native", {}))
    if sizes and "nested for" in ways:  # (numba compiles each size's two loops anew)
        rows += ["", "- native, first call / nested for's: " + ", ".join(
            f"{t.first['native'][n] / t.first['nested for'][n]:.1f}x at {n}" for n in sizes)
            + " (numba's compile of the forward and the reverse loop, per size)"]
        if 1000 in t.steady.get("JAX lax loops", {}) and 1000 in t.steady["native"]:
            rows.append("- native, steady at 1024 / JAX lax loops': "
                        f"{t.steady['native'][1000] / t.steady['JAX lax loops'][1000]:.2f}")
    missing = [f"- {way}: {why}" for way, why in t.missing.items()]
    return ["soft-DTW (two nested loops writing `R[i, j]`), value_and_grad with respect "
            "to the cost matrix, beside the hand-written forward and reverse loops; "
            "native: with `pb.config.native_loops` (numba), each of the two loop nests "
            "one compiled function; "
            "JAX's ways: two nested `lax.fori_loop`s writing `R.at[i, j].set` (JAX lax "
            "loops), and the Python loops traced under `jax.jit` (JAX jit unrolled, 7x7 "
            "only: larger traces take minutes to compile).", ""] + rows + [""] + missing \
        + ([""] if missing else [])
