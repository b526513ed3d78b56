"""The benchmark's workloads: inputs from a fixed seed, and each loss written twice.

* ``torch_fn(m, F, *params, *data)`` in PyTorch's style; ``m`` is ``pullback`` or ``torch``
  and ``F`` its ``nn.functional``. Pullback eager, pullback compiled and PyTorch run it.
* ``numpy_fn(xp, params, *data)`` in numpy's style; ``xp`` is ``autograd.numpy`` (HIPS)
  or ``jax.numpy``. ``params`` is a tuple.

Hidden layers use tanh, not relu: tanh is smooth, so the Hessian-vector product of the
MLP is not mostly zeros, and one activation serves every workload.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import floors
import numpy as np

SEED = 0
F32 = np.float32


@dataclass(frozen=True)
class Inputs:
    """Parameters (differentiated), data (not differentiated) and, for an HVP, v."""

    param_names: tuple[str, ...]
    params: tuple[np.ndarray, ...]
    data: tuple[np.ndarray, ...]
    vectors: tuple[np.ndarray, ...] = ()


@dataclass(frozen=True)
class Workload:
    """One benchmark program. ``kind`` says what bounds it: overhead, compute, memory, data."""

    name: str
    title: str
    kind: str
    make: Callable[[np.random.Generator], Inputs]
    floor: Callable
    torch_fn: Callable
    numpy_fn: Callable
    hvp: bool = False

    def inputs(self) -> Inputs:
        return self.make(np.random.default_rng(SEED))


def _normal(rng: np.random.Generator, shape: tuple, std: float = 1.0) -> np.ndarray:
    return (rng.standard_normal(shape) * std).astype(F32)


# --------------------------------------------------------------------------- MLP
def _mlp_inputs(batch: int, d_in: int, hidden: int, classes: int) -> Callable:
    def make(rng: np.random.Generator) -> Inputs:
        params = (_normal(rng, (d_in, hidden), d_in ** -0.5), _normal(rng, (hidden,), 0.1),
                  _normal(rng, (hidden, classes), hidden ** -0.5), _normal(rng, (classes,), 0.1))
        data = (_normal(rng, (batch, d_in)), rng.integers(0, classes, batch).astype(np.int64))
        vectors = tuple(_normal(rng, p.shape) for p in params)
        return Inputs(("w1", "b1", "w2", "b2"), params, data, vectors)
    return make


def mlp_torch(m, F, w1, b1, w2, b2, x, y):
    return F.cross_entropy(m.tanh(x @ w1 + b1) @ w2 + b2, y)


def mlp_numpy(xp, params, x, y):
    w1, b1, w2, b2 = params
    z = xp.tanh(x @ w1 + b1) @ w2 + b2
    z = z - xp.max(z, axis=1, keepdims=True)
    logp = z - xp.log(xp.sum(xp.exp(z), axis=1, keepdims=True))
    return -xp.mean(logp[xp.arange(x.shape[0]), y])


# ------------------------------------------------------------------------- chain
def _chain_inputs(layers: int, size: int) -> Callable:
    def make(rng: np.random.Generator) -> Inputs:
        params = tuple(_normal(rng, (size,), 0.1) for _ in range(layers))
        return Inputs(tuple(f"w{i}" for i in range(layers)), params, (_normal(rng, (size,)),))
    return make


def chain_torch(m, F, *args):
    *ws, h = args
    for w in ws:
        h = m.tanh(h * w + h)
    return h.sum()


def chain_numpy(xp, params, h):
    for w in params:
        h = xp.tanh(h * w + h)
    return xp.sum(h)


# --------------------------------------------------------------------------- RNN
def _rnn_inputs(rng: np.random.Generator, steps: int = 50, batch: int = 32,
                hidden: int = 64) -> Inputs:
    params = (_normal(rng, (hidden, hidden), hidden ** -0.5),
              _normal(rng, (hidden, hidden), 0.9 * hidden ** -0.5), _normal(rng, (hidden,), 0.1))
    data = (_normal(rng, (steps, batch, hidden)), np.zeros((batch, hidden), F32))
    return Inputs(("wx", "wh", "b"), params, data)


def rnn_torch(m, F, wx, wh, b, xs, h):
    for t in range(xs.shape[0]):
        h = m.tanh(xs[t] @ wx + h @ wh + b)
    return (h * h).mean()


def rnn_numpy(xp, params, xs, h):
    wx, wh, b = params
    for t in range(xs.shape[0]):
        h = xp.tanh(xs[t] @ wx + h @ wh + b)
    return xp.mean(h * h)


# -------------------------------------------------------------- logistic regression
def _logreg_inputs(rng: np.random.Generator, rows: int = 1_000_000, features: int = 20) -> Inputs:
    X = _normal(rng, (rows, features))
    w_true = _normal(rng, (features,), 0.3)
    y = (rng.random(rows, dtype=F32) < 1 / (1 + np.exp(-(X @ w_true)))).astype(F32)
    params = (_normal(rng, (features,), 0.1), np.asarray(0.1, F32))
    return Inputs(("w", "b"), params, (X, y))


def logreg_torch(m, F, w, b, X, y):
    return F.binary_cross_entropy_with_logits(X @ w + b, y)


def logreg_numpy(xp, params, X, y):
    w, b = params
    z = X @ w + b
    return xp.mean(xp.logaddexp(0, z) - y * z)


# --------------------------------------------------------------------- attention
def _attention_inputs(rng: np.random.Generator, seq: int = 128, dim: int = 64) -> Inputs:
    params = tuple(_normal(rng, (dim, dim), dim ** -0.5) for _ in range(4))
    return Inputs(("wq", "wk", "wv", "wo"), params, (_normal(rng, (seq, dim)),))


def attention_torch(m, F, wq, wk, wv, wo, x):
    q, k, v = x @ wq, x @ wk, x @ wv
    a = F.softmax(q @ k.T * (1.0 / x.shape[1] ** 0.5), dim=-1)
    y = a @ v @ wo
    return (y * y).mean()


def attention_numpy(xp, params, x):
    wq, wk, wv, wo = params
    q, k, v = x @ wq, x @ wk, x @ wv
    s = q @ k.T * (1.0 / x.shape[1] ** 0.5)
    e = xp.exp(s - xp.max(s, axis=1, keepdims=True))
    y = (e / xp.sum(e, axis=1, keepdims=True)) @ v @ wo
    return xp.mean(y * y)


WORKLOADS: tuple[Workload, ...] = (
    Workload("mlp_small", "MLP b32 64-32-10", "overhead", _mlp_inputs(32, 64, 32, 10),
             floors.mlp, mlp_torch, mlp_numpy),
    Workload("mlp_mnist", "MLP b64 784-128-10", "compute", _mlp_inputs(64, 784, 128, 10),
             floors.mlp, mlp_torch, mlp_numpy),
    Workload("mlp_large", "MLP b256 1024-1024-10", "compute", _mlp_inputs(256, 1024, 1024, 10),
             floors.mlp, mlp_torch, mlp_numpy),
    Workload("chain_small", "chain 100 x tanh(h*w+h), 16 floats", "overhead",
             _chain_inputs(100, 16), floors.chain, chain_torch, chain_numpy),
    Workload("chain_large", "chain 20 x tanh(h*w+h), 100k floats", "memory",
             _chain_inputs(20, 100_000), floors.chain, chain_torch, chain_numpy),
    Workload("rnn", "tanh RNN b32 h64, 50 steps", "overhead", _rnn_inputs,
             floors.rnn, rnn_torch, rnn_numpy),
    Workload("logreg", "logistic regression 1M x 20", "data", _logreg_inputs,
             floors.logreg, logreg_torch, logreg_numpy),
    Workload("attention", "attention seq128 d64", "compute", _attention_inputs,
             floors.attention, attention_torch, attention_numpy),
    Workload("mlp_hvp", "HVP of MLP b32 64-32-10", "overhead", _mlp_inputs(32, 64, 32, 10),
             floors.mlp_hvp, mlp_torch, mlp_numpy, hvp=True),
)

OVERHEAD_BOUND = tuple(w.name for w in WORKLOADS if w.kind == "overhead")


def select(names: str | None) -> tuple[Workload, ...]:
    """Workloads named in a comma-separated list (a name or a prefix of names); all if None."""
    if not names:
        return WORKLOADS
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    chosen = tuple(w for w in WORKLOADS if any(w.name.startswith(n) for n in wanted))
    unknown = [n for n in wanted if n not in ("latency", "loops", "batching", "new_process")
               and not any(w.name.startswith(n) for w in WORKLOADS)]
    if unknown:
        known = ", ".join(w.name for w in WORKLOADS)
        raise SystemExit(f"unknown workload(s) {unknown}; known: {known}, latency, loops, "
                         "batching, new_process")
    return chosen
