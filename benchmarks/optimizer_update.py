"""How should an optimizer update its parameters? Three ways, timed on a 4-layer MLP.

    python benchmarks/optimizer_update.py            # both model sizes
    python benchmarks/optimizer_update.py --quick    # fewer repeats

- ``flat``: what ``pb.optim.Adam`` does: the parameters are views of one flat array,
  the gradients are gathered with one ``np.concatenate``, and the update is ten numpy
  calls on whole flat arrays (``optim/flat.py``);
- ``compiled``: the update written as a pure function of lists of arrays, compiled by
  ``pb.compile`` into straight-line generated code (ten numpy calls per parameter),
  whose results are copied into each parameter's ``_data`` (and state) afterwards;
- ``loop``: the same numpy math in place, parameter by parameter (torch's CPU
  "single tensor" path).

Each is timed alone (the update, gradients given) and inside a full training step
(forward, backward, update) with a compiled forward; medians of interleaved rounds,
one BLAS thread. The numbers are quoted in docs/design.md ("The optimizers' update").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import numpy as np  # noqa: E402

import pullback as pb  # noqa: E402
import pullback.nn.functional as F  # noqa: E402
from pullback import nn  # noqa: E402

B1, B2, LR, EPS = 0.9, 0.999, 1e-3, 1e-8


def mlp(sizes: list) -> nn.Module:
    layers: list = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


def adam_pure(params, grads, ms, vs, step_size, bc2_sqrt):
    """One Adam step as a pure function of lists of arrays (for ``pb.compile``)."""
    new_p, new_m, new_v = [], [], []
    for p, g, m, v in zip(params, grads, ms, vs):
        m = m + (g - m) * (1 - B1)
        v = v * B2 + (1 - B2) * g * g
        p = p + -step_size * m / (np.sqrt(v) / bc2_sqrt + EPS)
        new_p.append(p)
        new_m.append(m)
        new_v.append(v)
    return new_p, new_m, new_v


class Compiled:
    """Adam by a compiled pure update; results copied back into the parameters."""

    def __init__(self, params: list) -> None:
        self.params = params
        self.ms = [np.zeros_like(p._data) for p in params]
        self.vs = [np.zeros_like(p._data) for p in params]
        self.t = 0
        self.fn = pb.compile(adam_pure)

    def step(self) -> None:
        self.t += 1
        size = LR / (1 - B1 ** self.t)
        bc2 = (1 - B2 ** self.t) ** 0.5
        with pb.no_grad():
            ps, ms, vs = self.fn([p._data for p in self.params],
                                 [p._grad._data for p in self.params], self.ms, self.vs,
                                 size, bc2)
        for p, new in zip(self.params, ps):
            np.copyto(p._data, new._data)
            p._vc.value += 1
        self.ms = [m._data for m in ms]
        self.vs = [v._data for v in vs]


class Loop:
    """Adam parameter by parameter, in place (torch's single-tensor path in numpy)."""

    def __init__(self, params: list) -> None:
        self.params = params
        self.ms = [np.zeros_like(p._data) for p in params]
        self.vs = [np.zeros_like(p._data) for p in params]
        self.t = 0

    def step(self) -> None:
        self.t += 1
        size = LR / (1 - B1 ** self.t)
        bc2 = (1 - B2 ** self.t) ** 0.5
        for p, m, v in zip(self.params, self.ms, self.vs):
            g = p._grad._data
            m += (g - m) * (1 - B1)
            v *= B2
            v += (1 - B2) * g * g
            denom = np.sqrt(v)
            denom /= bc2
            denom += EPS
            p._data += -size * m / denom
            p._vc.value += 1


def contenders(sizes: list) -> dict:
    out = {}
    for name in ("flat", "compiled", "loop"):
        pb.manual_seed(0)
        model = mlp(sizes)
        params = list(model.parameters())
        opt = pb.optim.Adam(params, lr=LR) if name == "flat" else \
            Compiled(params) if name == "compiled" else Loop(params)
        out[name] = (model, params, opt)
    return out


def median_times(fns: dict, rounds: int, calls: int) -> dict:
    samples: dict = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[k].append((time.perf_counter() - start) / calls)
    return {k: statistics.median(v) for k, v in samples.items()}


def measure(sizes: list, batch: int, rounds: int, calls: int) -> dict:
    rng = np.random.default_rng(0)
    x = pb.tensor(rng.standard_normal((batch, sizes[0])).astype(np.float32))
    y = pb.tensor(rng.integers(0, sizes[-1], batch))
    cs = contenders(sizes)
    for _, params, _ in cs.values():
        for p in params:
            p.grad = pb.tensor(rng.standard_normal(p.shape).astype(np.float32) * 1e-2)
    update = {k: opt.step for k, (_, _, opt) in cs.items()}
    for fn in update.values():
        fn()  # first calls: traces, state allocation
    alone = median_times(update, rounds, calls)

    def train_step(model, opt, fwd):
        def step():
            for p in model.parameters():
                p.grad = None
            F.cross_entropy(fwd(x), y).backward()
            opt.step()
        return step

    steps = {k: train_step(m, opt, pb.compile(m)) for k, (m, _, opt) in cs.items()}
    for fn in steps.values():
        fn()
    full = median_times(steps, rounds, max(1, calls // 4))
    return {"alone": alone, "full": full}


def report(label: str, n_params: int, result: dict) -> None:
    print(f"\n{label} ({n_params} parameters, 8 tensors), Adam, median per call:")
    print(f"{'':10s} {'update alone':>14s} {'training step':>14s}")
    for k in result["alone"]:
        print(f"{k:10s} {result['alone'][k] * 1e6:11.1f} us {result['full'][k] * 1e6:11.1f} us")


def main(argv: list) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    args = p.parse_args(argv)
    rounds, calls = (5, 20) if args.quick else (15, 100)
    for label, sizes, batch in (("small MLP 64-64-64-64-10", [64, 64, 64, 64, 10], 32),
                                ("MNIST-sized MLP 784-256-256-128-10",
                                 [784, 256, 256, 128, 10], 64)):
        n = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
        report(label, n, measure(sizes, batch, rounds, calls))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
