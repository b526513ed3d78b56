"""The contenders. Each turns a workload and its inputs into ``Prepared``: a ``step()``
that does one full forward + backward (the thing timed, returning the library's own
objects) and a ``to_numpy(result)`` giving ``(loss or None, grads)`` for the check.

A contender whose library or API is missing reports why (``unavailable``) instead of
failing; the harness prints "n/a" for it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from workloads import Inputs, Workload

Result = tuple[float | None, tuple[np.ndarray, ...]]


@dataclass
class Prepared:
    step: Callable[[], Any]
    to_numpy: Callable[[Any], Result]


def numpy_threads() -> int:
    """Threads numpy's BLAS (OpenBLAS) uses: its environment variables, else every core."""
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _arr(x: Any) -> np.ndarray:
    """A numpy copy of a result from any library (detached, on the CPU)."""
    if hasattr(x, "detach"):
        x = x.detach()
    if hasattr(x, "numpy"):
        return np.array(x.numpy())
    return np.array(x)


def _loss(x: Any) -> float:
    return float(_arr(x))


def _sum_dots(gs: Any, vs: Any) -> Any:
    """``sum_i (g_i * v_i).sum()`` in whatever library g and v belong to."""
    total = (gs[0] * vs[0]).sum()
    for g, v in zip(gs[1:], vs[1:]):
        total = total + (g * v).sum()
    return total


class Contender:
    """A library under test. ``module`` is imported lazily; ``api`` names what must exist."""

    name = ""
    label = ""
    module = ""
    api: tuple[str, ...] = ()
    tracemalloc_sees = True        # numpy-based: tracemalloc sees every allocation

    def lib(self) -> Any:
        return importlib.import_module(self.module)

    def unavailable(self, workload: Workload | None = None) -> str | None:
        """Why this contender cannot run (None when it can)."""
        try:
            lib = self.lib()
        except ImportError as e:
            return f"{self.module} not installed ({e.__class__.__name__})"
        for attr in self.api:
            if not hasattr(lib, attr):
                return f"{self.module}.{attr} does not exist yet"
        return None

    def prepare(self, w: Workload, inp: Inputs) -> Prepared:
        return self.prepare_hvp(w, inp) if w.hvp else self.prepare_grad(w, inp)

    def prepare_grad(self, w: Workload, inp: Inputs) -> Prepared:
        raise TypeError(f"{self.name} has no gradient path")

    def prepare_hvp(self, w: Workload, inp: Inputs) -> Prepared:
        raise TypeError(f"{self.name} has no Hessian-vector-product path")


class Floor(Contender):
    name, label, module = "floor", "numpy by hand (floor)", "numpy"

    def prepare_grad(self, w: Workload, inp: Inputs) -> Prepared:
        return Prepared(lambda: w.floor(inp.params, inp.data), lambda r: r)

    def prepare_hvp(self, w: Workload, inp: Inputs) -> Prepared:
        return Prepared(lambda: w.floor(inp.params, inp.data, inp.vectors), lambda r: r)


class _TorchLike(Contender):
    """Eager Tensors with ``loss.backward()``: pullback and PyTorch share this code."""

    def functional(self) -> Any:
        return importlib.import_module(self.module + ".nn.functional")

    def tensors(self, inp: Inputs) -> tuple[list, list, list]:
        m = self.lib()
        ps = [m.from_numpy(p.copy()).requires_grad_() for p in inp.params]
        return ps, [m.from_numpy(d) for d in inp.data], [m.from_numpy(v) for v in inp.vectors]

    def prepare_grad(self, w: Workload, inp: Inputs) -> Prepared:
        m, F = self.lib(), self.functional()
        ps, ds, _ = self.tensors(inp)
        fn = w.torch_fn

        def step():
            for p in ps:
                p.grad = None
            loss = fn(m, F, *ps, *ds)
            loss.backward()
            return loss, [p.grad for p in ps]
        return Prepared(step, lambda r: (_loss(r[0]), tuple(_arr(g) for g in r[1])))

    def prepare_hvp(self, w: Workload, inp: Inputs) -> Prepared:
        m, F = self.lib(), self.functional()
        ps, ds, vs = self.tensors(inp)
        fn, grad = w.torch_fn, m.autograd.grad

        def step():                     # double backward through a create_graph gradient
            loss = fn(m, F, *ps, *ds)
            gs = grad(loss, ps, create_graph=True)
            return loss, grad(_sum_dots(gs, vs), ps)
        return Prepared(step, lambda r: (_loss(r[0]), tuple(_arr(g) for g in r[1])))


class PullbackEager(_TorchLike):
    name, label, module = "pb_eager", "pullback eager", "pullback"


class TorchEager(_TorchLike):
    name, label, module = "torch", "PyTorch eager (CPU)", "torch"
    tracemalloc_sees = False       # torch's CPU allocator does not report to tracemalloc

    def lib(self) -> Any:
        torch = importlib.import_module("torch")
        torch.set_num_threads(numpy_threads())
        return torch


class PullbackCompiled(Contender):
    """``pb.value_and_grad(f, argnums=params)`` on numpy arrays; the HVP is
    ``pb.grad`` of ``sum(grad(f) * v)``."""

    name, label, module = "pb_compiled", "pullback compiled", "pullback"
    api = ("value_and_grad", "grad")

    def _f(self, w: Workload) -> Callable:
        pb, F = self.lib(), importlib.import_module("pullback.nn.functional")
        fn = w.torch_fn

        def f(*args):
            return fn(pb, F, *args)
        return f

    def prepare_grad(self, w: Workload, inp: Inputs) -> Prepared:
        argnums = tuple(range(len(inp.params)))
        vg = self.lib().value_and_grad(self._f(w), argnums=argnums)
        params = tuple(p.copy() for p in inp.params)
        return Prepared(lambda: vg(*params, *inp.data),
                        lambda r: (_loss(r[0]), tuple(_arr(g) for g in r[1])))

    def prepare_hvp(self, w: Workload, inp: Inputs) -> Prepared:
        pb = self.lib()
        n, nd = len(inp.params), len(inp.data)
        argnums = tuple(range(n))
        g = pb.grad(self._f(w), argnums=argnums)

        def grad_dot_v(*args):
            return _sum_dots(g(*args[:n + nd]), args[n + nd:])
        hvp = pb.grad(grad_dot_v, argnums=argnums)
        params = tuple(p.copy() for p in inp.params)
        return Prepared(lambda: hvp(*params, *inp.data, *inp.vectors),
                        lambda r: (None, tuple(_arr(x) for x in r)))


class PullbackFused(PullbackCompiled):
    """``pb.value_and_grad`` traced with ``config.fuse`` on: arithmetic on large arrays
    runs as numba kernels (numba's threads: NUMBA_NUM_THREADS, every core by default).
    Only the workloads with elementwise runs over large arrays; the first call (traced
    here, not timed) pays numba's compile time."""

    name, label = "pb_fused", "pullback compiled, fused (numba)"
    workloads = ("chain_large",)

    def unavailable(self, workload: Workload | None = None) -> str | None:
        if importlib.util.find_spec("numba") is None:
            return "numba not installed (pip install pullback[fast])"
        if workload is not None and workload.name not in self.workloads:
            return "no elementwise runs over large arrays to fuse"
        return super().unavailable(workload)

    def prepare_grad(self, w: Workload, inp: Inputs) -> Prepared:
        with self.lib().config.override(fuse=True):
            prepared = super().prepare_grad(w, inp)
            prepared.step()  # traced (and its kernels compiled) with fusion on
        return prepared


def _flat(arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    return np.concatenate([a.ravel() for a in arrays])


def _unflat(xp: Any, theta: Any, shapes: list[tuple]) -> tuple:
    out, at = [], 0
    for shape in shapes:
        size = int(np.prod(shape, dtype=np.int64))
        out.append(xp.reshape(theta[at:at + size], shape))
        at += size
    return tuple(out)


class Hips(Contender):
    """HIPS autograd: ``value_and_grad`` over the parameter tuple; the HVP is
    ``hessian_vector_product`` over one flat parameter vector (it takes a single array)."""

    name, label, module = "hips", "HIPS autograd", "autograd"

    def prepare_grad(self, w: Workload, inp: Inputs) -> Prepared:
        autograd, anp = self.lib(), importlib.import_module("autograd.numpy")
        fn = w.numpy_fn
        vg = autograd.value_and_grad(lambda ps, *d: fn(anp, ps, *d))
        params = tuple(p.copy() for p in inp.params)
        return Prepared(lambda: vg(params, *inp.data),
                        lambda r: (_loss(r[0]), tuple(_arr(g) for g in r[1])))

    def prepare_hvp(self, w: Workload, inp: Inputs) -> Prepared:
        autograd, anp = self.lib(), importlib.import_module("autograd.numpy")
        fn, shapes = w.numpy_fn, [p.shape for p in inp.params]
        hvp = autograd.hessian_vector_product(
            lambda theta, *d: fn(anp, _unflat(anp, theta, shapes), *d))
        theta, v = _flat(inp.params), _flat(inp.vectors)
        return Prepared(lambda: hvp(theta, *inp.data, v),
                        lambda r: (None, _unflat(np, np.asarray(r), shapes)))


class Jax(Contender):
    """``jax.jit(jax.value_and_grad(f))`` on the CPU; the HVP is jit of grad of grad-dot-v."""

    name, label, module = "jax", "JAX jit", "jax"
    tracemalloc_sees = False

    def _setup(self, w: Workload, inp: Inputs) -> tuple:
        jax, jnp = self.lib(), importlib.import_module("jax.numpy")
        fn = w.numpy_fn

        def f(ps, *d):
            return fn(jnp, ps, *d)
        conv = lambda arrays: tuple(jnp.asarray(a) for a in arrays)
        return jax, f, conv(inp.params), conv(inp.data), conv(inp.vectors)

    def prepare_grad(self, w: Workload, inp: Inputs) -> Prepared:
        jax, f, ps, ds, _ = self._setup(w, inp)
        vg = jax.jit(jax.value_and_grad(f))
        return Prepared(lambda: jax.block_until_ready(vg(ps, *ds)),
                        lambda r: (_loss(r[0]), tuple(_arr(g) for g in r[1])))

    def prepare_hvp(self, w: Workload, inp: Inputs) -> Prepared:
        jax, f, ps, ds, vs = self._setup(w, inp)
        g = jax.grad(f)
        hvp = jax.jit(jax.grad(lambda p, v, *d: _sum_dots(g(p, *d), v)))
        return Prepared(lambda: jax.block_until_ready(hvp(ps, vs, *ds)),
                        lambda r: (None, tuple(_arr(x) for x in r)))


CONTENDERS: tuple[Contender, ...] = (Floor(), PullbackEager(), PullbackCompiled(),
                                     PullbackFused(), Hips(), TorchEager(), Jax())


def select(names: str | None) -> tuple[Contender, ...]:
    """The floor plus the contenders named in a comma-separated list (all if None)."""
    if not names:
        return CONTENDERS
    wanted = {n.strip() for n in names.split(",")}
    unknown = wanted - {c.name for c in CONTENDERS}
    if unknown:
        raise SystemExit(f"unknown contender(s) {sorted(unknown)}; known: "
                         + ", ".join(c.name for c in CONTENDERS))
    return tuple(c for c in CONTENDERS if c.name == "floor" or c.name in wanted)
