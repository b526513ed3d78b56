"""``pb.vjp`` over Dask's (or CuPy's) arrays: the output and a pullback, lazily.

``pb.vjp`` on numpy values runs ``pb.compile``'s code on Tensors and pulls back through
autograd; a Tensor holds numpy arrays only, so with a Dask array among the primals it
comes here instead: the function is traced once per argument signature (on stand-ins,
``lazy_arrays``), the generated forward returns the output and the residuals, Dask
arrays that are only a graph, and ``vjp_fn`` runs the generated backward on them and
the cotangents, building more graph. Nothing is computed until the user computes
(``dask.compute(out, *vjp_fn(ct))`` computes the forward's shared part once), unless
``config.dask_compute`` asks for computed results at each call.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from ..autograd.grad_mode import enable_grad
from ..ops.table.quiet import INSIDE, context
from ..pytree import tree_flatten, tree_structure, tree_unflatten
from ..tensor import Tensor
from .cache import cache_for
from .compiled import Variant, build_variant
from .conversions import functional
from .doors import as_kind, has_graph, kind_of
from .lazy_arrays import finish, kind_of_array, one_task
from .trace import gather_inputs, is_traced_arg, slot_values, unflatten
from .user_lines import def_line


class _Slot:
    """Where leaf ``k`` of the function's output comes from: graph output ``j``
    (``made``) or graph input ``j`` (an argument returned as it is)."""

    __slots__ = ("made", "j", "k")

    def __init__(self, made: bool, j: int, k: int) -> None:
        self.made, self.j, self.k = made, j, k


class LazyVJP:
    """The front door of ``pb.vjp`` (and of a door built on it, ``how``) over lazy
    arrays: one cache per function, variants of ``pb.compile``'s kind."""

    def __init__(self, fn: Callable, has_aux: bool, how: str) -> None:
        self.fn = fn
        self.has_aux = has_aux
        self.how = how
        self.cache = cache_for(fn, (how, "lazy", has_aux))

    def build(self, args: tuple) -> Variant:
        with enable_grad(), functional(self.how):
            return build_variant(self.fn, args, self.how, self.fn, wants=lambda i, a: True)

    def run(self, variant: Variant, args: tuple) -> tuple:
        arrays = gather_inputs(variant.traced, args)
        fn = one_task(variant.forward.fn, arrays, variant.traced.graph)  # (a loop: one task)
        result = fn(*arrays) if INSIDE.get() else context().run(fn, *arrays)
        return variant, arrays, list(result)

    def fallback(self, args: tuple) -> Any:
        raise TypeError(f"{self.how}: {def_line(self.fn)}: the values it captured keep "
                        "changing between calls over Dask arrays, and they cannot run "
                        "eagerly; pass them as arguments")


def lazy_vjp(fn: Callable, primals: tuple, has_aux: bool, how: str) -> tuple:
    """``(out, vjp_fn)`` (``aux`` third with ``has_aux``) of ``fn`` at ``primals``, some
    of them Dask arrays: the output and aux as the generated code returns them (Dask
    arrays where they depend on one), ``vjp_fn`` pulling cotangents back lazily."""
    door = _door(fn, has_aux, how)
    variant, arrays, result = door.cache.call(door, primals)
    traced = variant.traced
    n = traced.n_outputs
    given = slot_values(traced, primals) + list(traced.captures)
    returned = variant.returned or tuple((True, j) for j in range(n))
    # (lazy, or computed together in one pass with config.dask_compute)
    values = finish([result[j] if m else given[j] for m, j in returned])
    full = unflatten(traced.out_tree, [_Slot(m, j, k) for k, (m, j) in enumerate(returned)])
    if has_aux and not (isinstance(full, tuple) and len(full) == 2):
        raise RuntimeError(f"{how}(f, *primals): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    value, aux = full if has_aux else (full, None)
    slots, tree = tree_flatten(value)
    for s in slots:
        if not isinstance(s, _Slot):
            raise RuntimeError(f"{how}(f, *primals): expected f(*primals) to return only "
                               f"tensors, got unsupported type {type(s)}")
    kind = kind_of(tree_flatten(primals)[0][0])
    show = lambda s: as_kind(kind, values[s.k]) if isinstance(s, _Slot) else s
    pull = LazyVJPFunction(variant, arrays, result[n:], slots, tree, primals, how)
    out = tree_unflatten(tree, [show(s) for s in slots])
    if not has_aux:
        return out, pull
    aux_leaves, aux_tree = tree_flatten(aux)
    return out, pull, tree_unflatten(aux_tree, [show(x) for x in aux_leaves])


_DOORS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _door(fn: Callable, has_aux: bool, how: str) -> LazyVJP:
    """The one lazy door of ``fn`` for these settings (its cache lives as long as ``fn``)."""
    try:
        doors = _DOORS.setdefault(fn, {})
    except TypeError:  # not weak-referenceable: compiled for this call only
        return LazyVJP(fn, has_aux, how)
    door = doors.get((has_aux, how))
    if door is None:
        door = doors[has_aux, how] = LazyVJP(fn, has_aux, how)
    return door


class LazyVJPFunction:
    """``vjp_fn`` over lazy arrays: cotangents shaped like the output -> one gradient
    per primal, each in its primal's structure, built by the generated backward."""

    def __init__(self, variant: Variant, arrays: list, residuals: list, slots: list,
                 tree: Any, primals: tuple, how: str) -> None:
        self.variant = variant
        self.arrays = arrays  # the call's graph inputs (zeros for unreached gradients)
        self.residuals = residuals
        self.slots = slots  # per output leaf: where it comes from
        self.tree = tree
        self.primals = primals
        self.how = how

    def __call__(self, cotangent: Any) -> tuple:
        leaves, tree = tree_flatten(cotangent)
        if tree != self.tree:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function. cotangents: "
                               f"{repr(tree)[10:-1]}, primal output: {repr(self.tree)[10:-1]}")
        traced = self.variant.traced
        g = traced.graph
        n_args = len(traced.arg_slots)
        seeds: dict = {}  # graph output j -> its cotangent
        direct: dict = {}  # graph input k returned as it is -> its cotangent
        for s, c in zip(self.slots, leaves):
            var = g.outputs[s.j] if s.made else g.inputs[s.j]
            into = seeds if s.made else direct
            c = self._seed(c, var)
            into[s.j] = c if s.j not in into else into[s.j] + c
        grads = self._backward(seeds, n_args)
        for k, c in direct.items():
            if k < n_args:
                grads[k] = c if grads[k] is None else grads[k] + c
        grads = finish([np.zeros_like(a) if gk is None else gk
                        for a, gk in zip(self.arrays, grads)])
        result, by_arg = [], {}
        for k, (i, _) in enumerate(traced.arg_slots):
            by_arg.setdefault(i, []).append(grads[k])
        for i, p in enumerate(self.primals):
            gs = [as_kind(kind_of(leaf), gk) for leaf, gk in
                  zip(tree_flatten(p)[0], by_arg.get(i, []))]
            result.append(gs[0] if is_traced_arg(p) else
                          tree_unflatten(tree_structure(p), gs))
        return tuple(result)

    def _backward(self, seeds: dict, n_args: int) -> list:
        """The generated backward on the residuals and the seeds: per argument slot, its
        gradient, None where no cotangent reaches it."""
        variant = self.variant
        grads: list = [None] * n_args
        if variant.adjoint is None:  # no output depends on a primal
            return grads
        outs = variant.traced.graph.outputs
        floats = [(j, v) for j, v in enumerate(outs) if v.dtype.kind in "fc"]
        present = tuple(j in seeds for j, _ in floats)
        given = [seeds[j] if j in seeds else np.zeros(v.shape, v.dtype) for j, v in floats]
        mask = tuple(k < n_args for k in variant.wrt)
        fn = one_task(variant.backward_module(mask, present).fn, [*self.residuals, *given],
                      variant.traced.graph)
        result = fn(*self.residuals, *given) if INSIDE.get() else \
            context().run(fn, *self.residuals, *given)
        for k, gk in zip(variant.wrt, result):
            if k < n_args:
                grads[k] = gk
        return grads

    def _seed(self, c: Any, var: Any) -> Any:
        """A cotangent as an array of its output's dtype: Dask's cast lazily, never
        converted; a Tensor's array, unless it has a graph (not differentiable here)."""
        if isinstance(c, Tensor):
            if has_graph(c):
                raise TypeError(f"{self.how}: vjp_fn over Dask arrays takes cotangents with "
                                "no autograd graph (a Tensor cannot hold the Dask arrays "
                                "it would be differentiated through)")
            c = c._data
        if kind_of_array(c) is not None:
            c = c if np.dtype(c.dtype) == var.dtype else c.astype(var.dtype)
        else:
            c = np.asarray(c, dtype=var.dtype)
        if tuple(c.shape) != tuple(var.shape):
            raise RuntimeError(f"{self.how}: vjp_fn: a cotangent of shape {tuple(c.shape)} "
                               f"for an output of shape {tuple(var.shape)}")
        return c


__all__ = ["lazy_vjp", "LazyVJP", "LazyVJPFunction"]
