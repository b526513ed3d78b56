"""vmap (issue 18): per-sample gradients and Jacobians, printed as ratios of one run.

* per-sample gradients of a small MLP (64-32-10, tanh, softmax cross-entropy, float64)
  over 512 examples: ``pb.vmap(pb.grad(loss), in_axes=(None, 0, 0))`` against a Python
  loop over ``pb.grad`` and against torch.func's ``vmap(grad)`` (JAX is not installed
  here: its column is left out, not guessed);
* the Jacobian of a 256-to-256 two-layer tanh MLP through ``pb.jacrev`` (one batched
  pullback) against the rows pulled back one by one (what jacrev did before).
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

EXAMPLES, IN, HIDDEN, CLASSES = 512, 64, 32, 10
JAC = 256


@dataclass
class BatchTimes:
    steady: dict[str, float] = field(default_factory=dict)  # seconds per call
    first: dict[str, float] = field(default_factory=dict)


def loss(p: dict, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Softmax cross-entropy of one example (numpy code)."""
    h = np.tanh(x @ p["w1"] + p["b1"])
    z = h @ p["w2"] + p["b2"]
    top = z.max()
    return np.log(np.exp(z - top).sum()) + top - z[y]


def _median(fn: Callable, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _torch_per_sample(params: dict, xs: np.ndarray, ys: np.ndarray) -> Callable | None:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return None
    tp = {k: torch.tensor(v) for k, v in params.items()}

    def tloss(p, x, y):
        z = torch.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
        return torch.nn.functional.cross_entropy(z[None], y[None])
    f = torch.func.vmap(torch.func.grad(tloss), in_dims=(None, 0, 0))
    tx, ty = torch.tensor(xs), torch.tensor(ys)
    return lambda: f(tp, tx, ty)


def run(quick: bool) -> BatchTimes:
    pb = importlib.import_module("pullback")
    rng = np.random.default_rng(0)
    out = BatchTimes()
    rounds = 7 if quick else 31
    params = {"w1": rng.standard_normal((IN, HIDDEN)) * 0.1, "b1": np.zeros(HIDDEN),
              "w2": rng.standard_normal((HIDDEN, CLASSES)) * 0.1, "b2": np.zeros(CLASSES)}
    xs, ys = rng.standard_normal((EXAMPLES, IN)), rng.integers(0, CLASSES, EXAMPLES)
    per_sample = pb.vmap(pb.grad(loss), in_axes=(None, 0, 0))
    t0 = time.perf_counter()
    got = per_sample(params, xs, ys)
    out.first["vmap(grad)"] = time.perf_counter() - t0
    one = pb.grad(loss)
    for i in (0, EXAMPLES - 1):
        want = one(params, xs[i], ys[i])
        if not all(np.allclose(got[k][i], want[k]) for k in params):
            raise AssertionError(f"vmap(grad) disagrees with grad at example {i}")
    out.steady["vmap(grad)"] = _median(lambda: per_sample(params, xs, ys), rounds)
    out.steady["loop of grad"] = _median(
        lambda: [one(params, xs[i], ys[i]) for i in range(EXAMPLES)], max(3, rounds // 5))
    torch_call = _torch_per_sample(params, xs, ys)
    if torch_call is not None:
        torch_call()
        out.steady["torch.func vmap(grad)"] = _median(torch_call, rounds)
    w1 = rng.standard_normal((JAC, JAC)) * 0.05
    w2 = rng.standard_normal((JAC, JAC)) * 0.05
    mlp = lambda x: np.tanh(np.tanh(x @ w1) @ w2)  # noqa: E731
    x = rng.standard_normal(JAC)
    jac = pb.jacrev(mlp)
    t0 = time.perf_counter()
    jac(x)
    out.first["jacrev"] = time.perf_counter() - t0
    out.steady["jacrev"] = _median(lambda: jac(x), rounds)
    _, pull = pb.vjp(mlp, x)
    basis = np.eye(JAC)
    out.steady["jacrev row by row"] = _median(lambda: [pull(e) for e in basis],
                                              max(3, rounds // 5))
    return out


def section(t: BatchTimes | None) -> list[str]:
    if t is None:
        return []
    ms = lambda s: f"{s * 1e3:.2f} ms"  # noqa: E731
    s = t.steady
    rows = [f"| {name} | {ms(sec)} |" for name, sec in s.items()]
    lines = ["## vmap: per-sample gradients and Jacobians (issue 18)", "",
             f"MLP {IN}-{HIDDEN}-{CLASSES}, tanh, cross-entropy, float64, {EXAMPLES} "
             f"examples; Jacobian of a {JAC}-to-{JAC} two-layer tanh MLP. JAX is not "
             "installed here.", "", "| what | steady call |", "| --- | --- |"] + rows + [""]
    lines.append(f"- vmap(grad) first call {ms(t.first['vmap(grad)'])}; "
                 f"{s['loop of grad'] / s['vmap(grad)']:.1f}x faster than a loop over "
                 "pb.grad (target 10x)")
    if "torch.func vmap(grad)" in s:
        lines.append(f"- vmap(grad) / torch.func vmap(grad): "
                     f"{s['vmap(grad)'] / s['torch.func vmap(grad)']:.2f} (target 1.5)")
    lines.append(f"- jacrev first call {ms(t.first['jacrev'])}; "
                 f"{s['jacrev row by row'] / s['jacrev']:.1f}x faster than the rows one by "
                 "one (target 5x)")
    return lines + [""]
