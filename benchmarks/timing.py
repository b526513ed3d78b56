"""Measuring: the gradient check, first-call latency, peak memory and interleaved medians."""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from contenders import Contender, Prepared, Result

RTOL = 1e-3            # float32 through up to 100 layers: a few ulps per op add up
ATOL_SCALE = 1e-4      # absolute slack, relative to the largest entry of each gradient


@dataclass
class Entry:
    """What one contender did on one workload."""

    status: str = "ok"             # ok | n/a | error | mismatch
    detail: str = ""               # why n/a / error / mismatch; worst error when ok
    first_call: float | None = None
    median: float | None = None
    samples: list[float] = field(default_factory=list)
    calls: int = 0
    peak_bytes: int | None = None
    prepared: Prepared | None = None


def compare(ref: Result, got: Result) -> tuple[bool, str]:
    """allclose of every gradient (and of the loss, when both have one) against the floor."""
    (ref_loss, ref_grads), (loss, grads) = ref, got
    if len(grads) != len(ref_grads):
        return False, f"{len(grads)} gradients, expected {len(ref_grads)}"
    worst = 0.0
    for i, (r, g) in enumerate(zip(ref_grads, grads)):
        r, g = np.asarray(r), np.asarray(g)
        if g.shape != r.shape:
            return False, f"gradient {i}: shape {g.shape}, expected {r.shape}"
        scale = float(np.max(np.abs(r))) if r.size else 0.0
        atol = ATOL_SCALE * scale + 1e-12
        if not np.allclose(g, r, rtol=RTOL, atol=atol):
            err = float(np.max(np.abs(g - r)))
            return False, f"gradient {i}: max abs error {err:.3g} (max |ref| {scale:.3g})"
        worst = max(worst, float(np.max(np.abs(g - r))) / (scale or 1.0))
    if loss is not None and ref_loss is not None and not np.isclose(loss, ref_loss, rtol=RTOL,
                                                                     atol=1e-6):
        return False, f"loss {loss:.6g}, expected {ref_loss:.6g}"
    return True, f"max rel err {worst:.1e}"


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}"[:160]


def check(contender: Contender, workload, inputs, ref: Result) -> Entry:
    """Prepare, time the first call (trace + codegen for compiled paths), compare to ``ref``."""
    why = contender.unavailable(workload)
    if why:
        return Entry("n/a", why)
    try:
        t0 = time.perf_counter()
        prepared = contender.prepare(workload, inputs)
        result = prepared.step()
        first = time.perf_counter() - t0
        ok, detail = compare(ref, prepared.to_numpy(result))
    except Exception as e:  # noqa: BLE001 - a failing contender is reported, not fatal
        return Entry("error", _short(e))
    if not ok:
        return Entry("mismatch", detail, first_call=first)
    return Entry("ok", detail, first_call=first, prepared=prepared)


def peak_memory(step: Callable[[], object]) -> int:
    """Peak bytes tracemalloc sees allocated during one call (its result included)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = step()
        peak = tracemalloc.get_traced_memory()[1]
        del result
    finally:
        tracemalloc.stop()
    return peak


def _per_call(step: Callable[[], object], calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        step()
    return (time.perf_counter() - t0) / calls


def interleaved(entries: dict[str, Entry], budget: float, rounds: int,
                warmup: int = 2) -> None:
    """Median seconds per call of every ready entry, batches interleaved round by round.

    Each contender gets an equal share of ``budget``; a batch repeats the call enough times
    to take about ``share / rounds`` seconds (at least once; the count follows the latest
    estimate of the call's cost), and the contenders' order rotates each round so drift in
    the machine hits them all alike. Past 1.5x the budget, no new round starts once three
    are done.
    """
    ready = [(name, e) for name, e in entries.items() if e.status == "ok"]
    if not ready:
        return
    estimate = {}
    for name, e in ready:
        for _ in range(warmup):
            e.prepared.step()
        estimate[name] = max(_per_call(e.prepared.step, 1), 1e-7)
    target = budget / len(ready) / rounds
    t0 = time.perf_counter()
    for r in range(rounds):
        if r >= 3 and time.perf_counter() - t0 > 1.5 * budget:
            break
        for name, e in ready[r % len(ready):] + ready[:r % len(ready)]:
            calls = max(1, int(target / estimate[name]))
            e.samples.append(_per_call(e.prepared.step, calls))
            e.calls += calls
            estimate[name] = statistics.median(e.samples)
    for _, e in ready:
        e.median = statistics.median(e.samples)
