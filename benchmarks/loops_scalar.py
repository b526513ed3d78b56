"""A scalar loop (issue 19): a Kalman filter's negative log-likelihood over 200 steps,
its parameters three 0-d float64 arrays, ``value_and_grad`` with respect to them;
beside the floor (the forward and reverse loops written by hand on numbers) and JAX's
``jit(value_and_grad)`` of the loop written as ``lax.scan`` when JAX is
installed. Every step is a dozen operations on numbers: what each costs is the time."""

from __future__ import annotations

import gc
import importlib
import time
from collections.abc import Callable
from typing import Any

import numpy as np

STEPS = 200

KALMAN_SRC = '''
def kalman(a, log_q, log_r, ys):
    q, r = np.exp(log_q), np.exp(log_r)
    mean, var, nll = 0.0, 1.0, 0.0
    for t in range(ys.shape[0]):
        mean_pred, var_pred = a * mean, a * a * var + q
        s = var_pred + r
        gain, v = var_pred / s, ys[t] - mean_pred
        nll = nll + 0.5 * (np.log(2 * np.pi * s) + v * v / s)
        mean, var = mean_pred + gain * v, (1 - gain) * var_pred
    return nll
'''


def kalman_floor(a: Any, log_q: Any, log_r: Any, ys: np.ndarray) -> tuple:
    """The value and the three gradients by hand, on numbers: the forward loop keeps
    each step's values, the reverse loop reads them back."""
    a, q, r = float(a), float(np.exp(log_q)), float(np.exp(log_r))
    mean, var, nll, kept = 0.0, 1.0, 0.0, []
    for y in ys.tolist():
        mean_pred, var_pred = a * mean, a * a * var + q
        s = var_pred + r
        gain, v = var_pred / s, y - mean_pred
        nll += 0.5 * (np.log(2 * np.pi * s) + v * v / s)
        kept.append((mean, var, var_pred, s, gain, v))
        mean, var = mean_pred + gain * v, (1 - gain) * var_pred
    g_a = g_q = g_r = g_mean = g_var = 0.0
    for mean, var, var_pred, s, gain, v in reversed(kept):
        g_gain = g_mean * v - g_var * var_pred
        g_v = g_mean * gain + v / s
        g_s = 0.5 / s - 0.5 * v * v / (s * s) - g_gain * var_pred / (s * s)
        g_var_pred = g_var * (1 - gain) + g_gain / s + g_s
        g_mean_pred = g_mean - g_v
        g_a += g_var_pred * 2 * a * var + g_mean_pred * mean
        g_q, g_r = g_q + g_var_pred, g_r + g_s
        g_mean, g_var = g_mean_pred * a, g_var_pred * a * a
    return nll, (g_a, g_q * q, g_r * r)


JAX_SRC = """
def kalman(a, log_q, log_r, ys):
    q, r = jnp.exp(log_q), jnp.exp(log_r)

    def step(carry, y):
        mean, var, nll = carry
        mean_pred, var_pred = a * mean, a * a * var + q
        s = var_pred + r
        gain, v = var_pred / s, y - mean_pred
        nll = nll + 0.5 * (jnp.log(2 * jnp.pi * s) + v * v / s)
        return (mean_pred + gain * v, (1 - gain) * var_pred, nll), None

    (_, _, nll), _ = jax.lax.scan(step, (jnp.zeros(()), jnp.ones(()), jnp.zeros(())), ys)
    return nll
"""


def _jax(fresh: Callable) -> Callable | None:
    """JAX's ``jit(value_and_grad)`` of the loop as ``lax.scan`` (a Python loop unrolled
    into the trace takes XLA minutes to compile at 200 steps)."""
    try:
        jax = importlib.import_module("jax")
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    env = {"jax": jax, "jnp": importlib.import_module("jax.numpy")}
    vg = jax.jit(jax.value_and_grad(fresh(JAX_SRC, env, "kalman"), argnums=(0, 1, 2)))
    return lambda *args: jax.block_until_ready(vg(*args))


def run(fresh: Callable, median: Callable) -> dict:
    """way -> (first call, steady call) in seconds (first None for the floor), or the
    way -> "not installed"."""
    pb = importlib.import_module("pullback")
    ys = np.random.default_rng(2).standard_normal(STEPS)
    args = (np.asarray(0.9), np.asarray(-1.0), np.asarray(-0.5), ys)
    value, grads = kalman_floor(*args)
    out: dict = {"numpy floor": (None, median(kalman_floor, args, 7))}
    ways = {"pb.value_and_grad": lambda: pb.value_and_grad(
        fresh(KALMAN_SRC, {"np": np}, "kalman"), argnums=(0, 1, 2)),
        "JAX jit (lax.scan)": lambda: _jax(fresh)}
    for way, make in ways.items():
        vg = make()
        if vg is None:
            out[way] = "not installed"
            continue
        gc.collect()
        t0 = time.process_time()
        got, got_grads = vg(*args)
        first = time.process_time() - t0
        if not np.allclose(got, value) or not np.allclose(np.stack(got_grads), grads):
            raise AssertionError(f"the Kalman filter ({way}) disagrees with the floor")
        out[way] = (first, median(vg, args, 7))
    return out


def section(t: dict | None) -> list[str]:
    """The scalar loop's rows: first and steady calls, steady / floor."""
    if not t:
        return []
    floor = t["numpy floor"][1]
    rows = ["| way | first call | steady call | steady / floor |", "| --- | --- | --- | --- |"]
    for way, times in t.items():
        if isinstance(times, str):
            rows.append(f"| {way} | {times} | - | - |")
            continue
        first, steady = times
        rows.append(f"| {way} | {'-' if first is None else f'{first * 1e3:.1f} ms'} | "
                    f"{steady * 1e3:.3f} ms | {steady / floor:.2f} |")
    return [f"A scalar loop: a Kalman filter over {STEPS} steps, three 0-d float64 "
            "parameters, value_and_grad with respect to them (benchmarks/loops_scalar.py)."
            , ""] + rows + [""]
