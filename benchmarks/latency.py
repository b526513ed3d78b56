"""Compiler latency micro-benchmarks (issue 4's targets).

* First call of a 500-equation function: trace + transforms + codegen + one run.
  The function is ``h = tanh(h * w + h)`` 166 times (498 equations) then ``(h * h).sum()``
  (2 more). Every repetition compiles a fresh function object from fresh source, so no
  cache can answer it.
* Long traces: the first call via pb.value_and_grad of the same chain 10 times longer
  (5,000 equations): time per equation should stay what it is at 500 (linear).
* Cache-hit overhead: a call through each front door of ``f(a0..a{n-1}) = (a0 * 2 + a1 +
  ...).sum()`` on 4-float arrays, minus its own generated function called directly, for
  n = 1, 8, 64 arguments (issue 19's limit: 2 us + 0.3 us per argument).
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LAYERS = 166           # 3 equations each, + mul + sum = 500
ARG_COUNTS = (1, 8, 64)


@dataclass
class Latency:
    """Results; ``missing`` says why a front door could not be measured."""

    first_call: dict[str, list[float]] = field(default_factory=dict)
    steady: dict[str, float] = field(default_factory=dict)
    overhead: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    long_trace: dict[int, float] = field(default_factory=dict)  # equations -> seconds
    missing: dict[str, str] = field(default_factory=dict)


def _fresh(source: str, name: str, env: dict) -> Callable:
    """A new function object with its own code object, compiled from ``source``."""
    _fresh.count = getattr(_fresh, "count", 0) + 1
    namespace = dict(env)
    exec(compile(source, f"<bench-{name}-{_fresh.count}>", "exec"), namespace)
    return namespace[name]


CHAIN_TEMPLATE = """
def chain500(x, w):
    h = x
    for _ in range({layers}):
        h = pb.tanh(h * w + h)
    return (h * h).sum()
"""
CHAIN_SRC = CHAIN_TEMPLATE.format(layers=LAYERS)


def _median_time(fn: Callable, args: tuple, calls: int, rounds: int) -> float:
    """Median over ``rounds`` batches of the seconds per ``fn(*args)``."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        times.append((time.perf_counter() - t0) / calls)
    return statistics.median(times)


def _doors(pb) -> dict[str, Callable]:
    """Front doors: name -> (function -> callable running forward and backward once)."""
    doors = {}
    if hasattr(pb, "compile"):
        def compiled(f):
            cf = pb.compile(f)

            def run(x, w):
                xt, wt = pb.from_numpy(x), pb.from_numpy(w.copy()).requires_grad_()
                out = cf(xt, wt)
                out.backward()
                return out
            return run
        doors["pb.compile + backward"] = compiled
    if hasattr(pb, "value_and_grad"):
        doors["pb.value_and_grad"] = lambda f: pb.value_and_grad(f, argnums=1)
    return doors


def first_call(result: Latency, repeats: int) -> None:
    pb = importlib.import_module("pullback")
    rng = np.random.default_rng(0)
    x = rng.standard_normal(16).astype(np.float32)
    w = (rng.standard_normal(16) * 0.1).astype(np.float32)
    doors = _doors(pb)
    for door in ("pb.compile + backward", "pb.value_and_grad"):
        if door not in doors:
            result.missing[door] = f"pullback.{door.split()[0][3:]} does not exist yet"
    for door, make in doors.items():
        try:
            times = []
            for _ in range(repeats):
                run = make(_fresh(CHAIN_SRC, "chain500", {"pb": pb}))
                t0 = time.perf_counter()
                run(x, w)
                times.append(time.perf_counter() - t0)
            result.first_call[door] = times
            result.steady[door] = _median_time(run, (x, w), 3, 5)
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            result.missing[door] = f"{type(e).__name__}: {e}"[:160]


def long_trace(result: Latency) -> None:
    """Seconds of the first call via pb.value_and_grad at 500 and 5,000 equations."""
    pb = importlib.import_module("pullback")
    if not hasattr(pb, "value_and_grad"):
        return
    rng = np.random.default_rng(0)
    x = rng.standard_normal(16).astype(np.float32)
    w = (rng.standard_normal(16) * 0.1).astype(np.float32)
    for layers in (LAYERS, LAYERS * 10):
        f = _fresh(CHAIN_TEMPLATE.format(layers=layers), "chain500", {"pb": pb})
        t0 = time.perf_counter()
        pb.value_and_grad(f, argnums=1)(x, w)
        result.long_trace[3 * layers + 2] = time.perf_counter() - t0


def _sum_source(n: int) -> tuple[str, str]:
    args = ", ".join(f"a{i}" for i in range(n))
    body = "".join(f"    out = out + a{i}\n" for i in range(1, n))
    return f"def f({args}):\n    out = a0 * 2.0\n{body}    return out.sum()\n", "f"


def _hit_doors(pb) -> dict[str, tuple[Callable, bool]]:
    """Front doors measured for their cache-hit cost: name -> (make, on Tensors)."""
    return {"pb.compile on Tensors": (pb.compile, True),
            "pb.compile on arrays": (pb.compile, False),
            "pb.grad on arrays": (pb.grad, False),
            "pb.value_and_grad of every argument": (
                lambda f: pb.value_and_grad(f, argnums=tuple(range(f.__code__.co_argcount))),
                False)}


def _generated_globals(cf: Any) -> dict:
    """The names the generated source reads (``np``, its bound constants: ``f32_2``), from
    the module of the door's one variant."""
    variant = next(iter(cf.cache.entries.values()))[0]
    module = getattr(variant, "module", None) or variant.forward
    return dict(module.fn.__globals__)


def cache_hit(result: Latency, calls: int, rounds: int) -> None:
    """Each door's call against the very function it runs (its generated source, from
    ``pb.compiler.inspect``, exec'd on its own): what a hit adds."""
    pb = importlib.import_module("pullback")
    if not hasattr(pb, "compile"):
        result.missing["cache hit"] = "pullback.compile does not exist yet"
        return
    for door, (make, tensors) in _hit_doors(pb).items():
        result.overhead[door] = {}
        for n in ARG_COUNTS:
            source, name = _sum_source(n)
            arrays = tuple(np.full(4, i, np.float32) for i in range(n))
            args = tuple(pb.from_numpy(a) for a in arrays) if tensors else arrays
            try:
                cf = make(_fresh(source, name, {"pb": pb}))
                cf(*args)
                generated = pb.compiler.inspect(cf, *args).forward
                plain = _fresh(generated, generated.split("(")[0][4:], _generated_globals(cf))
                extra = (np.float32(1),) * (plain.__code__.co_argcount - n)  # g_out
                t_hit = _median_time(cf, args, calls, rounds)
            except Exception as e:  # noqa: BLE001 - reported, not fatal
                result.missing[f"cache hit via {door}"] = f"{type(e).__name__}: {e}"[:160]
                break
            t_plain = _median_time(plain, arrays + extra, calls, rounds)
            result.overhead[door][n] = (t_hit, t_plain)


def run(quick: bool) -> Latency:
    result = Latency()
    first_call(result, repeats=2 if quick else 7)
    long_trace(result)
    cache_hit(result, calls=200 if quick else 2000, rounds=5 if quick else 15)
    return result
