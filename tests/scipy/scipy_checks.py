"""Checks shared by the pullback.scipy tests (this folder has no __init__.py, so that
it is no package named ``scipy`` in front of the real one).

- ``grads``: eager gradients of ``sum(w * f(*args))`` for the float arguments in ``wrt``;
- ``fd``: the same by float64 central differences of a reference (scipy's function);
- ``check``: both, plus ``pb.grad`` of the same function (compiled) against eager;
- ``check_second``: the Hessian-vector product (grad of grad) against differences of
  the eager gradient.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

import pullback as pb

EPS = 1e-6


def weights(shape: tuple, seed: int = 5) -> np.ndarray:
    return np.random.default_rng(seed).uniform(0.5, 1.5, shape)


def _weighted(out: Any, w: np.ndarray) -> Any:
    return (out * w).sum()


def grads(f: Callable, args: list, wrt: tuple, w: np.ndarray) -> list:
    ts = [pb.tensor(np.asarray(a, np.float64), requires_grad=i in wrt) if i in wrt else a
          for i, a in enumerate(args)]
    _weighted(f(*ts), w).backward()
    return [ts[i].grad.numpy() for i in wrt]


def fd(ref: Callable, args: list, wrt: tuple, w: np.ndarray, eps: float = EPS) -> list:
    out = []
    for i in wrt:
        x = np.array(args[i], np.float64)
        g = np.zeros_like(x)
        for j in np.ndindex(x.shape):
            vals = []
            for s in (eps, -eps):
                y = x.copy()
                y[j] += s
                a = list(args)
                a[i] = y
                vals.append(float(np.sum(np.asarray(ref(*a)) * w)))
            g[j] = (vals[0] - vals[1]) / (2 * eps)
        out.append(g)
    return out


def compiled(f: Callable, args: list, wrt: tuple, w: np.ndarray) -> list:
    ts = [pb.tensor(np.asarray(a, np.float64)) if i in wrt else a for i, a in enumerate(args)]
    g = pb.grad(lambda *xs: _weighted(f(*xs), w), argnums=wrt)(*ts)
    return [x.numpy() for x in g]


def check(f: Callable, ref: Callable, args: list, wrt: tuple, rtol: float = 1e-6,
          atol: float = 1e-7, eps: float = EPS) -> None:
    """Gradients of f (eager and compiled) against differences of ref."""
    w = weights(np.shape(np.asarray(ref(*args))))
    eager = grads(f, args, wrt, w)
    for got, want in zip(eager, fd(ref, args, wrt, w, eps)):
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)
    for got, want in zip(compiled(f, args, wrt, w), eager):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def check_second(f: Callable, args: list, i: int, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """d/dx (grad f . v) for argument i against differences of the eager gradient."""
    x = np.asarray(args[i], np.float64)
    w = weights(np.shape(np.asarray(f(*args))))
    v = weights(x.shape, seed=9)

    def gv(xv: np.ndarray, graph: bool):
        a = list(args)
        a[i] = pb.tensor(xv, requires_grad=True)
        (g,) = pb.autograd.grad(_weighted(f(*a), w), a[i], create_graph=graph)
        return a[i], (g * v).sum()

    t, s = gv(x, True)
    (h,) = pb.autograd.grad(s, t)
    num = np.zeros_like(x)
    for j in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[j] += EPS
        lo[j] -= EPS
        num[j] = (float(gv(hi, False)[1]) - float(gv(lo, False)[1])) / (2 * EPS)
    np.testing.assert_allclose(h.numpy(), num, rtol=rtol, atol=atol)
