"""``pb.grad`` and ``pb.value_and_grad``: gradient functions.

A call with plain values runs one generated function that computes the value and
the gradients together, with no graph and no nodes. A call inside another trace or
on tensors that require grad runs eagerly with ``create_graph=True`` instead, so
that ``pb.grad(pb.grad(f))`` and gradients of gradients work.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable, Sequence

import numpy as np

from pullback.transforms import pipeline

from ..autograd import anomaly_mode, record
from ..autograd.grad_mode import enable_grad
from ..ir import Var, grad_of
from ..numpy_face import NumpyTensor, face_like
from ..ops.table.quiet import INSIDE, context
from ..pytree import tree_leaves, tree_structure, tree_unflatten
from ..settings import config
from ..tensor import Tensor
from . import disk_cache, disk_variants, source
from .cache import cache_for, check_captures, guard_env
from .conversions import functional
from .doors import (
    OutputError,
    as_kind,
    check_argnums,
    check_target,
    data_of,
    fast_grad,
    float_scalar,
    given_kind,
    grad_slots,
    has_graph,
    ident,
    kind_of,
    map_traced,
    may_hold_graph,
    nested_leaf,
    numpy_face_args,
    pull_back,
    scalar_error,
    strip_values,
    warn_independent,
)
from .jax_options import HolomorphicGrad, with_static
from .lazy_arrays import env_for, finish, kinds_in, one_task
from .source.entry import Entry
from .trace import (
    Traced,
    arg_array,
    flatten,
    float_dtype,
    gather_inputs,
    positional,
    proxy,
    slot_values,
    trace_call,
    unflatten,
)
from .user_lines import TraceError, def_line


class GradVariant:
    """One specialization: the generated function and how to call and unpack it
    (``GradFunction.run`` calls it)."""

    fast = None  # the cache's hot path for this variant (doors.fast_grad), after a run

    def __init__(self, traced: Traced, module: Any, nums: tuple, args: tuple) -> None:
        self.traced = traced
        self.module = module
        # the gradients the function does not reach (zeros): seen on the first run, as
        # the generated code returns None for them (its source may come from disk_cache)
        self.missing: tuple | None = None
        value = traced.graph.outputs[0]
        self.seed = np.ones(value.shape, value.dtype)
        self.grad_slots = grad_slots(traced, nums)
        values = slot_values(traced, args)
        self.grad_kinds = [kind_of(values[s]) for s in self.grad_slots]
        # per argnums target: None for an array, else its structure (gradients rebuilt in it)
        self.grad_trees = [None if not traced.arg_slots[s][1] else tree_structure(args[k])
                           for k, s in zip(nums, self._first_slots(nums))]
        self.simple = not traced.captures and all(not p for _, p in traced.arg_slots) \
            and len(traced.arg_slots) == len(args)
        self.out_kind = kind_of(args[nums[0]])
        self.numpy_face = numpy_face_args([args[k] for k in nums])
        self.nums = nums
        self.lazy = bool(kinds_in(args))
        # a container holds a Tensor that requires grad (part of the cache key): run
        # eagerly so that the gradients keep their graph to it
        self.in_graph = any(map(has_graph, tree_leaves(args)))
        # arrays in, arrays out, no containers; ``plain``: one gradient, as it is
        self.flat = not self.lazy and self.out_kind == "array" and \
            traced.out_tree is None and all(t is None for t in self.grad_trees) and \
            set(self.grad_kinds) == {"array"}
        self.plain = self.flat and len(self.grad_trees) == 1
        self.as_given = self.simple and given_kind(args) == "arrays"

    def _first_slots(self, nums: tuple) -> list:
        return [next(j for j, (i, _) in enumerate(self.traced.arg_slots) if i == k)
                for k in nums]


def _zeros_for_missing(variant: GradVariant, arrays: Any, grads: tuple) -> list:
    """The gradients with zeros for those the function does not reach, and autograd's
    warning when it reaches none on the numpy face."""
    grads = list(grads)
    for k in variant.missing:
        grads[k] = np.zeros_like(arrays[variant.grad_slots[k]])
    if variant.numpy_face and len(variant.missing) == len(grads):
        warn_independent()
    return grads


class GradFunction:
    """value_and_grad(f) (and grad(f), which drops the value). ``name``: the front
    door's name, which its errors and the cache's messages show (``pb.value_and_grad``'s
    by default; ``pullback.func.grad_and_value`` passes torch.func's)."""

    def __init__(self, fn: Callable, argnums: Any, has_aux: bool, with_value: bool,
                 name: str | None = None) -> None:
        self.fn = fn
        self.how = name or ("value_and_grad" if with_value else "grad")
        self.argnums = argnums
        self.has_aux = has_aux
        self.with_value = with_value
        # (with_value too: pb.grad's holomorphic door computes the value under "grad")
        self.cache = cache_for(fn, (self.how, with_value, argnums, has_aux))
        self._single = not has_aux and not isinstance(argnums, tuple)  # one gradient
        self._nums: dict[int, tuple] = {}
        # bound once, as every call passes them (the cache's call, this door's aside)
        self._cached, self._aside_bound = self.cache.call, self._aside
        functools.update_wrapper(self, fn, updated=())

    def _argnums(self, n: int) -> tuple:
        nums = self._nums.get(n)
        if nums is None:
            nums = self._nums[n] = check_argnums(self.how, self.argnums, n)
        return nums

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = positional(self.fn, self.how, args, kwargs)
        if record.TRACING and record.trace_hooks():
            return self._eager(args, self._argnums(len(args)))
        if anomaly_mode.is_anomaly_enabled():  # no nodes in generated code: eager autograd
            return self.fallback(args)        # names the failing op's forward call
        return self._cached(self, args, self._aside_bound)

    def _aside(self, args: tuple) -> Any:
        """A call past the cache's hot path (arrays only: no graph): run eagerly on
        tensors that require grad (differentiable results), else None (the cache's)."""
        if may_hold_graph(args):
            for a in args:
                if isinstance(a, Tensor) and (a._requires_grad or a._grad_fn is not None
                                              or a._fw_tangent is not None):
                    return self._eager(args, self._argnums(len(args)))
        return None

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        """Decorating a method: the instance is argument 0 (count it in ``argnums``)."""
        return self if obj is None else types.MethodType(self, obj)

    # ------------------------------------------------------------------ compiled
    def build(self, args: tuple) -> GradVariant:
        nums = self._argnums(len(args))
        for k in nums:
            check_target(self.how, k, args[k])
        # (a later process: no trace)
        kept = (self.how, self.with_value, self.argnums, self.has_aux)
        found = config.cache_dir and not kinds_in(args) and \
            disk_variants.load(self.fn, kept, args)
        if found:
            return GradVariant(*found, nums, args)
        with functional(self.how):
            traced = trace_call(self._value_fn, args, lambda i, a: i in nums, self.how,
                                self.fn)
        g = traced.graph
        value = g.outputs[0]
        if value.shape != () and int(np.prod(value.shape)) != 1:
            raise scalar_error(self.how, len(value.shape))
        if value.dtype.kind not in "fc":
            raise TypeError(f"{self.how}: {def_line(self.fn)} returned a {value.dtype} "
                            "value; only float outputs can be differentiated")
        wrt = [g.inputs[j] for j in grad_slots(traced, nums)]
        seed = Var(value.shape, value.dtype, np.ones(value.shape, value.dtype),
                   name=grad_of(None))
        seeds = [seed] + [None] * (len(g.outputs) - 1)
        name = ident(g.name) + "_value_and_grad"
        lazy = bool(kinds_in(args))
        value = self.with_value or self.has_aux or lazy  # (pb.grad's value: not computed)
        door = ("value_and_grad", tuple(grad_slots(traced, nums)), lazy, value)
        module = disk_cache.generated(g, door, name, guard_env(traced.guards) | env_for(args),
                                      lambda: pipeline.value_and_grad_graph(g, wrt, seeds,
                                                                            value))
        strip_values(g)
        if config.cache_dir and not lazy:
            disk_variants.store(self.fn, kept, args, traced, module)
        return GradVariant(traced, module, nums, args)

    def run(self, variant: GradVariant, args: tuple) -> Any:
        """The generated function on ``args``, its results of the kinds passed in.
        Raises GuardFailed when the variant does not apply."""
        if variant.as_given:  # the common case: every argument an array, passed as it is
            arrays = args
        elif variant.simple:  # every argument a traced array, Tensor or float
            arrays = [a._data if type(a) is Tensor else a if type(a) is np.ndarray
                      else arg_array(a, v) for a, v in zip(args, variant.traced.graph.inputs)]
        else:
            check_captures(variant.traced)
            if variant.in_graph or any(map(has_graph, variant.traced.captures)):
                return self._eager(args, variant.nums)  # the gradient reaches them too
            arrays = gather_inputs(variant.traced, args)
        fn = variant.module.fn  # (quietly, inlined: every call passes here)
        if variant.lazy:  # (long code over small Dask arrays: one task)
            fn = one_task(fn, arrays, variant.traced.graph)
        result = fn(*arrays, variant.seed) if INSIDE.get() else \
            context().run(fn, *arrays, variant.seed)
        if variant.lazy:  # Dask's arrays: lazy, or computed in one pass
            result = finish(result)
        n = variant.traced.n_outputs
        if variant.missing is None:
            variant.missing = tuple(k for k, g in enumerate(result[n:]) if g is None)
            variant.fast = self._fast(variant)
        grads = result[n:] if not variant.missing else _zeros_for_missing(variant, arrays,
                                                                           result[n:])
        if variant.plain and self._single:  # numpy in and out
            return (result[0], grads[0]) if self.with_value else grads[0]
        return self._package(variant, result[:n], grads)

    def _fast(self, variant: GradVariant) -> Any:
        """The variant's hot path (``Cache.call`` runs it on a hit), when it has one:
        arrays in and out, passed as they are, every gradient reached, no draws."""
        if not (variant.as_given and variant.flat and not variant.missing
                and not variant.traced.generators) or self.has_aux:
            return None
        inputs = variant.traced.graph.inputs
        scalars = tuple(k for k, s in enumerate(variant.grad_slots) if not inputs[s].shape)
        return fast_grad(variant.module.fn, variant.seed, variant.traced.check,
                         self.with_value, not (variant.plain and self._single), scalars)

    def _value_fn(self, *args: Any) -> Any:
        out = self.fn(*args)
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise TypeError(f"{self.how}: {def_line(self.fn)} must return a pair "
                                "(output, aux) when has_aux=True")
        value = out[0] if self.has_aux else out
        if not isinstance(value, Tensor) and numpy_face_args(args) and float_scalar(value):
            # a numpy float the inputs do not reach (np.float64(3.0), a sum of constants):
            # a constant output, whose gradient is zeros (autograd's warning, run's)
            value = NumpyTensor._make(np.asarray(value))
            out = (value, out[1]) if self.has_aux else value
        if not isinstance(value, Tensor):  # torch.func's words (a tuple needs has_aux)
            hint = ("; to return more than the value, return (value, aux) and pass "
                    "has_aux=True") if isinstance(value, (tuple, list)) else ""
            raise OutputError(f"{self.how}(f)(*args): Expected f(*args) to return a "
                              f"Tensor, got {type(value)}{hint}")
        return out

    def _package(self, variant: GradVariant, outs: list, grads: list) -> Any:
        if variant.flat:  # arrays in and out, no containers: no trees to rebuild
            return self._result(np.asarray(outs[0]), list(map(np.asarray, grads)))
        flat = iter([as_kind(k, g) for k, g in zip(variant.grad_kinds, grads)])
        gs = [next(flat) if tree is None else tree_unflatten(
            tree, [next(flat) for _ in range(tree.num_leaves)]) for tree in variant.grad_trees]
        kind = variant.out_kind
        if variant.traced.out_tree is None:  # a single value: no tree to rebuild
            full = as_kind(kind, outs[0])
        else:
            full = unflatten(variant.traced.out_tree, [as_kind(kind, o) for o in outs])
        return self._result(full, gs)

    def _result(self, out: Any, grads: Sequence) -> Any:
        """What the caller gets, from ``fn``'s output (or (output, aux)) and the gradients."""
        g = tuple(grads) if isinstance(self.argnums, tuple) else grads[0]
        if self.has_aux:
            value, aux = out
            return ((value, aux), g) if self.with_value else (g, aux)
        return (out, g) if self.with_value else g

    # --------------------------------------------------------------------- eager
    def _eager(self, args: tuple, nums: tuple) -> Any:
        """Inside a trace or on tensors that require grad: differentiable results."""
        for k in nums:
            check_target(self.how, k, args[k])
        floats = float_dtype(args)
        keep = lambda x: nested_leaf(x, floats)
        call_args = [map_traced(keep, a) if k in nums else a for k, a in enumerate(args)]
        out, grads = self._autograd(call_args, nums, create_graph=True)
        # each gradient on its argument's face, as the function saw the argument
        return self._result(out, [map_traced(lambda a, g: face_like(g, a), call_args[k], g)
                                  for k, g in zip(nums, grads)])

    def fallback(self, args: tuple) -> Any:
        """Eager autograd for arguments whose guards keep failing, with results of the
        kinds ``run`` returns: numpy in, numpy out; Tensor in, Tensor out; float, float."""
        nums = self._argnums(len(args))
        floats = float_dtype(args)
        call_args = [map_traced(lambda x, k=k: proxy(x, k in nums, floats), a)
                     for k, a in enumerate(args)]
        out, grads = self._autograd(call_args, nums, create_graph=False)
        leaves, tree = flatten(out)
        kind = kind_of(args[nums[0]])
        out = unflatten(tree, [as_kind(kind, data_of(x)) for _, x in leaves])
        return self._result(out, [map_traced(lambda a, g: as_kind(kind_of(a), g._data),
                                              args[k], g) for k, g in zip(nums, grads)])

    def _autograd(self, call_args: list, nums: tuple, create_graph: bool) -> tuple:
        """``fn``'s output and its value's gradients for ``call_args[k]``, k in ``nums``
        (each in the structure of its argument). ``fn`` runs converted by the source pass;
        writes into its arguments go to copies, copied back after the gradients."""
        targets = [tree_leaves(call_args[k]) for k in nums]
        flat_targets = [t for ts in targets for t in ts]
        versions = [t._vc.value for t in flat_targets]
        with enable_grad(), Entry(True, tuple(call_args)):
            with functional(self.how):
                out = source.converted(self._value_fn)(*call_args)
            self._check_unwritten(flat_targets, versions)
            value = out[0] if self.has_aux else out
            if value.numel() != 1:
                raise scalar_error(self.how, value.ndim)
            if not has_graph(value) and numpy_face_args([call_args[k] for k in nums]):
                warn_independent()
            try:
                flat = pull_back([value], flat_targets, [None], create_graph)
            except RuntimeError as e:
                e.add_note(f"{self.how} differentiated {def_line(self.fn)} eagerly, under "
                           "torch's rules (inside another function's trace, on tensors that "
                           "require grad, or falling back); traced, numpy code may also write "
                           "into an array after reading a part of it a gradient needs")
                raise
        it = iter(flat)
        grads = [tree_unflatten(tree_structure(call_args[k]), [next(it) for _ in ts])
                 for k, ts in zip(nums, targets)]
        return out, grads

    def _check_unwritten(self, targets: list, versions: list) -> None:
        """Refuse a gradient for an argument the function wrote into in place other than
        through the source pass's copies: it would be for the value written."""
        for t, version in zip(targets, versions):
            if t._vc.value != version:
                raise TraceError(f"{self.how}: {def_line(self.fn)} wrote into an argument "
                                 "it is differentiated with respect to, in place (outside "
                                 "numpy-style code the source pass rewrites); write into a "
                                 "copy of it instead")


def grad(fn: Callable, argnums: Any = 0, has_aux: bool = False, *, holomorphic: bool = False,
         static_argnums: Any = None, static_argnames: Any = None) -> Any:
    """The gradient function of scalar-valued ``fn`` with respect to ``argnums``.
    ``static_argnums``/``static_argnames``: arguments that are Python values (part of the
    cache key, by value, as JAX's jit); ``holomorphic=True``: JAX's f'(z) of a holomorphic
    function of complex inputs (torch's convention, the conjugate, otherwise).

    >>> import pullback as pb, numpy as np
    >>> pb.grad(lambda x: (x ** 3).sum())(np.array([1., 2.]))
    array([ 3., 12.])
    >>> pb.grad(pb.grad(lambda x: x ** 3))(2.0)
    12.0
    """
    return _made(fn, argnums, has_aux, False, holomorphic, static_argnums, static_argnames)


def value_and_grad(fn: Callable, argnums: Any = 0, has_aux: bool = False, *,
                   holomorphic: bool = False, static_argnums: Any = None,
                   static_argnames: Any = None) -> Any:
    """``fn``'s value and gradient together: ``(value, grad)``, or
    ``((value, aux), grad)`` with ``has_aux`` (the options are ``grad``'s)."""
    return _made(fn, argnums, has_aux, True, holomorphic, static_argnums, static_argnames)


def _made(fn: Callable, argnums: Any, has_aux: bool, with_value: bool, holomorphic: bool,
          static_argnums: Any, static_argnames: Any) -> Any:
    def make(f: Callable, nums: Any) -> Any:
        if holomorphic:
            inner = GradFunction(f, nums, has_aux, with_value=True, name=how)
            return HolomorphicGrad(inner, nums, has_aux, with_value)
        return GradFunction(f, nums, has_aux, with_value)
    how = "value_and_grad" if with_value else "grad"
    return with_static(make, fn, argnums, static_argnums, static_argnames, how)


__all__ = ["grad", "value_and_grad", "GradFunction", "TraceError"]
