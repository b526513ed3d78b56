"""``pb.vjp``: the function's output and a function that pulls cotangents back.

Called on plain values, the function runs compiled (one ``CompiledFunction`` per
function, so repeated calls hit its cache) and the pullback runs the generated
backward code. Called inside another transform's trace, or on Tensors that require
grad, it runs on those values themselves with ``create_graph=True``: its output and
the gradients ``vjp_fn`` returns keep their graph, so an outer ``grad``, ``vjp`` or
``compile`` differentiates through them. ``vjp_fn`` is linear in its cotangent and
differentiable with respect to it, as in JAX.

>>> import numpy as np, pullback as pb
>>> out, vjp_fn = pb.vjp(lambda x: x ** 2, np.array([1., 2.]))
>>> vjp_fn(np.array([1., 10.]))
(array([ 2., 40.]),)
>>> pb.grad(lambda x: pb.vjp(lambda y: y ** 3, x)[1](1.0)[0])(2.0)
12.0
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Callable

import numpy as np

from ..autograd.grad_mode import enable_grad
from ..autograd.record import trace_hooks
from ..pytree import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from ..tensor import Tensor
from . import source
from .compiled import CompiledFunction
from .conversions import functional
from .doors import (
    as_kind,
    check_target,
    constants_on_numpy_face,
    copy_back,
    has_graph,
    kind_of,
    map_traced,
    nested_leaf,
    numpy_face_args,
    private_copy,
    pull_back,
)
from .jax_options import check_complex, holomorphic_vjp
from .lazy_arrays import kind_of_array
from .lazy_vjp import lazy_vjp
from .trace import float_dtype, is_traced_arg, proxy

#: the leaf types of primals that are not another library's arrays (one set lookup)
_PLAIN = frozenset([np.ndarray, float, Tensor])

_COMPILED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def compiled(fn: Callable) -> Callable:
    """The one CompiledFunction of ``fn`` (its cache lives as long as ``fn``)."""
    if isinstance(fn, CompiledFunction):
        return fn
    try:
        with _LOCK:
            c = _COMPILED.get(fn)
            if c is None:
                c = _COMPILED[fn] = CompiledFunction(fn, how="vjp")
        return c
    except TypeError:  # not weak-referenceable (a builtin): compiled for this call only
        return CompiledFunction(fn, how="vjp")


def _struct_error(got: Any, want: Any) -> RuntimeError:
    return RuntimeError("Expected pytree structure of cotangents to be the same as pytree "
                        "structure of outputs to the function. cotangents: "
                        f"{repr(got)[10:-1]}, primal output: {repr(want)[10:-1]}")


class VJPFunction:
    """``vjp_fn``: cotangents shaped like the output -> one gradient per primal."""

    def __init__(self, fn: Callable, has_aux: bool, outs: list, tree: Any, targets: list,
                 primals: tuple, nested: bool) -> None:
        self.fn = fn
        self.has_aux = has_aux
        self.outs = outs  # the output's leaves (Tensors)
        self.tree = tree
        self.targets = targets  # per primal: its leaves the gradients are taken for
        self.primals = primals
        self.nested = nested

    def __call__(self, cotangent: Any) -> tuple:
        leaves, tree = tree_flatten(cotangent)
        if tree != self.tree:
            raise _struct_error(tree, self.tree)
        cts = [c if isinstance(c, Tensor) else Tensor._make(np.asarray(c, dtype=o._data.dtype))
               for c, o in zip(leaves, self.outs)]
        create = self.nested or bool(trace_hooks()) or any(map(has_graph, cts))
        outs, targets = self.outs, self.targets
        if create and not self.nested:  # differentiated in the cotangent: the forward
            outs, targets = self._rerun()  # again, its inputs constants of the caller's
        with enable_grad():
            grads = pull_back(outs, [t for ts in targets for t in ts], cts, create)
        it = iter(grads)
        result = []
        for p, ts in zip(self.primals, targets):
            gs = [next(it) for _ in ts]
            if not create:  # plain values in, plain values out
                gs = [as_kind(kind_of(leaf), g._data) for leaf, g in zip(tree_leaves(p), gs)]
            result.append(gs[0] if is_traced_arg(p) else tree_unflatten(tree_structure(p), gs))
        return tuple(result)

    def _rerun(self) -> tuple:
        """The output's leaves and the primals' leaves of a fresh eager run of ``fn``
        (inside a trace, the primals are that trace's constants)."""
        floats = float_dtype(self.primals)
        args = [map_traced(lambda x: proxy(x, True, floats), p) for p in self.primals]
        with enable_grad(), functional("vjp"):
            out = source.rewrite(self.fn, numpy_semantics=True)(*args)
        return tree_leaves(out[0] if self.has_aux else out), [tree_leaves(a) for a in args]


def vjp(fn: Callable, *primals: Any, has_aux: bool = False, holomorphic: bool = False) -> tuple:
    """``(out, vjp_fn)``, or ``(out, vjp_fn, aux)`` with ``has_aux``; ``vjp_fn(ct)``
    returns one gradient per primal, each in its primal's structure. Primals and the
    output may be pytrees (the cotangent has the output's structure). ``holomorphic``:
    JAX's pullback ct * f'(z) of a holomorphic function (torch's is ct * conj(f'(z))).
    Dask arrays among the primals: the output and the gradients are Dask arrays
    (``lazy_vjp.py``)."""
    if holomorphic:
        check_complex("vjp", "inputs", primals)
        out = vjp(fn, *primals, has_aux=has_aux)
        check_complex("vjp", "outputs", out[0])
        return (out[0], holomorphic_vjp(out[1])) + out[2:]
    return vjp_for("vjp", fn, primals, has_aux)


def vjp_for(how: str, fn: Callable, primals: tuple, has_aux: bool) -> tuple:
    """``pb.vjp``'s work for front door ``how`` (jacrev's rows pass their own name, so
    that its refusal of Dask arrays names jacrev)."""
    for k, p in enumerate(primals):
        check_target("vjp", k, p)
    leaves = tree_leaves(primals)
    nested = trace_hooks() or any(map(has_graph, leaves))
    given = primals
    if not nested:  # JAX's: vjp_fn is for the primals as they are now (the caller may
        # write into its arrays later); the function's writes go back as under pb.grad
        primals = tuple(map_traced(private_copy, p) for p in primals)
        if not set(map(type, leaves)) <= _PLAIN and any(map(kind_of_array, leaves)):
            return lazy_vjp(fn, primals, has_aux, how)
    floats = float_dtype(primals)
    keep = (lambda x: nested_leaf(x, floats)) if nested else \
        (lambda x: proxy(x, True, floats))
    args = [map_traced(keep, p) for p in primals]
    with enable_grad(), functional("vjp"):
        out = (source.rewrite(fn, numpy_semantics=True) if nested else compiled(fn))(*args)
    if not nested:
        copy_back(given, primals)
    if has_aux:
        if not (isinstance(out, tuple) and len(out) == 2):
            raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                               "(output, aux) if has_aux is True")
        out, aux = out
    out = constants_on_numpy_face(out, numpy_face_args(primals))
    outs, tree = tree_flatten(out)
    for o in outs:
        if not isinstance(o, Tensor):
            raise RuntimeError("vjp(f, *primals): expected f(*primals) to return only "
                               f"tensors, got unsupported type {type(o)}")
    targets = [tree_leaves(a) for a in args]
    fn_out = VJPFunction(fn, has_aux, outs, tree, targets, primals, nested)
    if not nested:  # plain values in: plain values out, of the first primal's kind
        kind = kind_of(tree_leaves(primals)[0]) if primals else "tensor"
        show = lambda x: as_kind(kind, x.detach()._data) if isinstance(x, Tensor) else x
        out = tree_map(show, out)
        if has_aux:
            aux = tree_map(show, aux)
    return (out, fn_out, aux) if has_aux else (out, fn_out)


__all__ = ["vjp", "vjp_for", "VJPFunction"]
