"""``pb.compile``: traced on the first call, then generated forward code; the
outputs' grad_fn is one node for the whole compiled region, whose backward is the
generated backward code.
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pullback.transforms import pipeline
from pullback.transforms.adjoint import active_vars

from ..autograd import anomaly_mode, messages, profiler, record, transform_scopes
from ..autograd.edges import grad_edge
from ..autograd.grad_mode import STATE, enable_grad
from ..autograd.graph import Node, SavedTensor
from ..autograd.record import trace_hooks
from ..ir import Var, evaluate, grad_of
from ..numpy_face import to_tensor_face
from ..ops.table.quiet import INSIDE, context, quietly
from ..pytree import tree_leaves, tree_map
from ..settings import config
from ..tensor import Tensor
from . import anomaly, disk_cache, disk_compiled, source
from .cache import cache_for, call_key, check_captures, check_maxsize, guard_env
from .conversions import check_cut
from .doors import fast_compile, given_kind, ident, strip_values, tensor_data
from .jax_options import with_static
from .lazy_arrays import env_for, finish, kinds_in, lazy_context, one_task
from .trace import (
    Traced,
    arg_array,
    float_dtype,
    gather_inputs,
    input_leaf,
    is_traced_arg,
    numpy_face,
    positional,
    slot_values,
    trace_call,
    unflatten,
)
from .user_lines import TraceError, def_line


@dataclass
class Variant:
    """One specialization of a compiled function: its traces and generated code."""

    traced: Traced
    wrt: list  # graph-input positions that get gradients
    forward: Any  # codegen Module: inputs -> outputs (+ residuals when grad is needed)
    adjoint: Any = None  # Joint (the joint graph and its split) when grad is needed
    backwards: dict = field(default_factory=dict)  # (needs, present) -> Module
    simple: bool = False  # every call argument is a traced top-level value, in order
    returned: tuple | None = None  # see returned_slots; None: the outputs, in order
    tracked: tuple = ()  # per output: whether it gets the CompiledNode (requires grad)
    given: str | None = None  # simple, and every argument an array (or Tensor): given_kind
    lazy: bool = False  # Dask's (or CuPy's) arrays among the arguments: its code runs on them
    env: dict = field(default_factory=dict)  # what its code names differently (env_for)
    fast: Any = None  # the cache's hot path for this variant (doors.fast_compile)
    # inputs the backward reads: their versions are checked like eager saved tensors
    checked: tuple = ()
    disk: str | None = None  # its persistent cache entry's key (disk_compiled)
    entry: Any = None  # and that entry (disk_compiled.Entry)

    def __post_init__(self) -> None:
        tr = self.traced
        self.wrt_set = frozenset(self.wrt)
        if self.given is not None and not (self.wrt or self.lazy or tr.captures or tr.generators
                                           or self.returned or tr.cut is not None):
            self.fast = fast_compile(self.forward.fn, tr.check, self.given == "tensors",
                                     tr.out_tree, tr.n_outputs)

    @property
    def split(self) -> Any:
        """The pipeline.Split (None without gradients), made when first needed."""
        return None if self.adjoint is None else self.adjoint.split

    @property
    def joint(self) -> Any:
        return None if self.adjoint is None else self.adjoint.joint

    def backward_module(self, needs: tuple, present: tuple) -> Any:
        mod = self.backwards.get((needs, present))
        if mod is None and isinstance(self.adjoint, Retraced):  # (read from disk: so
            mod = self.entry.backwards.get((needs, present)) or \
                disk_compiled.load_backward(self.disk, needs, present)  # is its backward)
            self.backwards[needs, present] = mod
        if mod is None:  # generated on the first backward (a range of its own when profiled)
            name = ident(self.traced.graph.name) + "_backward"
            door = ("compile backward", self.lazy, tuple(self.wrt), needs, present)
            with profiler.Range(f"pb.compile: codegen {name}"), lazy_context(self.lazy):
                mod, _ = disk_cache.generated_with(
                    self.traced.graph, door, name, self.env,
                    lambda: (pipeline.backward_for(self.split.backward, needs, present),
                             None), self.adjoint.canon)
            self.backwards[needs, present] = mod
            if self.entry is not None:
                disk_compiled.store_backward(self.entry, needs, present, mod,
                                             self.traced.graph)
        return mod


    def batched_backward(self, size: int, seed: int, inputs: list) -> tuple:
        """The joint forward and backward over a batch of ``size`` cotangents for float
        output ``seed``, the other cotangents and the inputs unbatched (jacrev's rows:
        one pullback for all of them): ``(module, batched)``, the module returning the
        outputs then the gradients, ``batched`` which of those carry the batch.
        ``inputs``: a call's input arrays (the batched graph is built on their shapes)."""
        key = ("batched", size, seed)
        found = self.backwards.get(key) or self.entry and self.entry.backwards.get(key)
        if not found:  # (read from disk: so is this, when it was kept with the forward)
            name = ident(self.traced.graph.name) + "_jacobian_rows"
            door = ("compile jacobian rows", tuple(self.wrt), size, seed)
            found = disk_cache.generated_with(
                self.traced.graph, door, name, {},
                lambda: self._batched_graph(size, seed, inputs), self.adjoint.canon)
            if self.entry is not None:
                disk_compiled.store_batched(self.entry, size, seed, found)
        self.backwards[key] = found
        return found

    def _batched_graph(self, size: int, seed: int, inputs: list) -> tuple:
        joint, n_in = self.joint, len(self.traced.graph.inputs)
        values = list(inputs) + [
            np.zeros(((size,) if k == seed else ()) + v.shape, v.dtype)
            for k, v in enumerate(joint.inputs[n_in:])]
        flags = [k == n_in + seed for k in range(len(joint.inputs))]
        return pipeline.vmapped(joint, values, flags, size)


def returned_slots(traced: Traced) -> tuple | None:
    """Make the graph's outputs the distinct values it computes; return, per tensor the
    function returned, ``(True, j)`` for output j or ``(False, k)`` for graph input k.
    As in torch, a tensor returned twice is one tensor, and a returned argument or
    captured tensor is that tensor itself (None: the outputs are returned as they are)."""
    g = traced.graph
    input_at = {v.id: k for k, v in enumerate(g.inputs)}
    computed: list = []
    slots = []
    for v in g.outputs:
        if v.id in input_at:
            slots.append((False, input_at[v.id]))
            continue
        if all(v is not c for c in computed):
            computed.append(v)
        slots.append((True, next(j for j, c in enumerate(computed) if c is v)))
    if len(computed) == len(g.outputs):
        return None
    traced.graph = g.replace(outputs=computed)
    traced.n_outputs = len(computed)
    return tuple(slots)


def build_variant(fn: Callable, args: tuple, how: str = "compile",
                  user_fn: Callable | None = None, wants: Callable | None = None) -> Variant:
    """Trace ``fn`` on ``args`` and generate its code (``user_fn``, default ``fn``,
    names the graph and its inputs). ``wants(i, leaf)``: which arguments get gradients
    (default: Tensors that require grad, with grad mode on)."""
    grad_on = STATE.grad_enabled
    traced = trace_call(fn, args, wants or (lambda i, a: grad_on and isinstance(a, Tensor)
                                            and a._requires_grad), how, user_fn)
    returned = returned_slots(traced)
    g = traced.graph
    n_args = len(traced.arg_slots)
    wrt = [k for k in range(n_args) if traced.requires[k]] + [
        n_args + j for j, t in enumerate(traced.captures) if grad_on and t._requires_grad]
    name = ident(g.name)
    simple = traced.arg_slots == [(i, ()) for i in range(len(args))]
    given = given_kind(args) if simple else None
    active = active_vars(g, [g.inputs[k] for k in wrt])
    tracked = tuple(v.id in active and v.dtype.kind in "fc" for v in g.outputs)
    lazy = bool(kinds_in(args))
    env = env_for(args)
    if not grad_on or not any(tracked):
        mod = disk_cache.generated(g, ("compile", lazy), name,
                                   guard_env(traced.guards) | env, lambda: pipeline.simplify(g))
        strip_values(g)
        return Variant(traced, [], mod, simple=simple, returned=returned, given=given,
                       lazy=lazy, env=env)
    adjoint = Joint(g, _joint_of(g, wrt))  # (g keeps its values until the split is made)
    fwd, meta = adjoint.generate_forward(("compile forward", lazy, tuple(wrt)),
                                         name + "_forward", guard_env(traced.guards) | env)
    return Variant(traced, wrt, fwd, adjoint, simple=simple, returned=returned,
                   tracked=tracked, given=given, lazy=lazy, env=env,
                   checked=tuple(meta["checked"]))


class Joint:
    """A traced graph's joint graph (``make()``: forward and backward, or forward and
    tangents) and its split into the two (``pipeline.Split``), made when first needed:
    code read from the persistent cache (``disk_cache``) needs them only when some
    other code of the graph's is not there too, or for ``create_graph`` (the graph
    keeps its trace-time values, which the passes read, until then)."""

    def __init__(self, graph: Any, make: Callable[[], Any]) -> None:
        self.graph = graph
        self.make = make
        # (the keys of the code generated later: taken before the passes rename values)
        self.canon = disk_cache.canonical_text(graph) if config.cache_dir else None
        self.residuals: list | None = None  # the forward's residuals' names (from disk)

    @functools.cached_property
    def joint(self) -> Any:
        return self.make()

    @functools.cached_property
    def split(self) -> Any:
        g = self.graph
        sp = pipeline.split_joint(self.joint, len(g.inputs), len(g.outputs))
        strip_values(self.joint)
        strip_values(g)
        names = [v.name for v in sp.residuals]
        if self.residuals is not None and names != self.residuals:
            raise RuntimeError(  # (the passes are deterministic: a bug if it happens)
                "pullback: the forward read from the persistent cache saves other values "
                f"({self.residuals}) than its backward reads ({names}); clear "
                f"{config.cache_dir!r} and report it")
        return sp

    def forward(self) -> tuple:
        """The forward graph to generate and what a variant needs beside its code:
        which inputs the backward reads, and the residuals' names."""
        sp = self.split
        saved = {v.id for v in sp.residuals}
        checked = [k for k, v in enumerate(self.graph.inputs) if v.id in saved]
        return sp.forward, {"checked": checked, "residuals": [v.name for v in sp.residuals]}

    def generate_forward(self, door: tuple, name: str, env: dict) -> tuple:
        """The forward's Module (from disk or generated) and its ``forward()`` data."""
        module, meta = disk_cache.generated_with(self.graph, door, name, env, self.forward,
                                                 self.canon)
        self.residuals = meta["residuals"]
        return module, meta


class Retraced:
    """The ``Joint`` of a variant read from the persistent cache, which has no graph:
    made by tracing again (``build()``: the Variant), once, when first needed."""

    def __init__(self, build: Callable[[], Variant], residuals: list) -> None:
        self.build = build
        self.names = residuals

    @functools.cached_property
    def real(self) -> Joint:
        joint = self.build().adjoint
        joint.residuals = self.names  # (its split checks they are the kept forward's)
        return joint

    def __getattr__(self, name: str) -> Any:
        if name == "real":  # (its build raised AttributeError: not a lookup of itself)
            raise AttributeError(f"retracing for the joint failed: {name}")
        return getattr(self.real, name)


def _joint_of(g: Any, wrt: list) -> Callable[[], Any]:
    def make() -> Any:
        seeds = [Var(v.shape, v.dtype, np.ones(v.shape, v.dtype), name=grad_of(v.name))
                 if v.dtype.kind in "fc" else None for v in g.outputs]
        return pipeline.joint_graph(g, [g.inputs[k] for k in wrt], seeds)
    return make


class CompiledNode(Node):
    """The grad_fn of a compiled region's outputs (torch.compile's name)."""

    __slots__ = ("variant", "residuals", "inputs", "versions", "n_out")
    _qualname = None

    def __init__(self, variant: Variant, edges: tuple, residuals: tuple, inputs: list) -> None:
        Node.__init__(self, edges)
        self.variant = variant
        self.residuals = residuals
        self.inputs = inputs
        self.versions = tuple(inputs[k]._vc.value for k in variant.checked)
        self.n_out = variant.traced.n_outputs

    @property
    def num_outputs(self) -> int:
        return self.n_out

    def _again(self, e: Any, args: tuple) -> Any:
        """One equation of the joint graph evaluated again (``create_graph``): what the
        forward did besides its values (draws, prints) is not done twice; a draw is
        the value the forward drew (a residual)."""
        if e.op.pure or any(isinstance(a, Var) for a in e.inputs):
            return e.op(*args, **e.params)
        if not e.outs:
            return ()
        saved = {v.id: r for v, r in zip(self.variant.split.residuals, self.residuals)}
        if all(v.id in saved for v in e.outs):  # (split.draws: saved when read)
            values = [Tensor._make(np.asarray(saved[v.id])) for v in e.outs]
            return values[0] if e.out is not None else tuple(values)
        return e.op(*args, **e.params)

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        if self._freed:
            raise RuntimeError(messages.SECOND_BACKWARD)
        inputs = self.inputs
        for k, version in zip(self.variant.checked, self.versions):
            SavedTensor.check(inputs[k], version)
        outs = self.variant.traced.graph.outputs
        floats = [(g, v) for g, v in zip(grads, outs) if v.dtype.kind in "fc"]
        present = tuple(g is not None for g, _ in floats)
        seeds = [g if g is not None else np.zeros(v.shape, v.dtype) for g, v in floats]
        wrt = self.variant.wrt
        if create_graph:  # recompute through the op table so the backward is differentiable
            seeds = [s if isinstance(s, Tensor) else Tensor._make(np.asarray(s)) for s in seeds]
            result = evaluate(self.variant.joint, inputs + seeds,
                              step=self._again)[len(outs):]
        else:
            mask = tuple(bool(needs[k]) for k in wrt)
            if anomaly_mode.is_anomaly_enabled():  # interpreted: a failure names its line
                g = pipeline.backward_for(self.variant.split.backward, mask, present)
                result = anomaly.run_graph(self, g, [*self.residuals, *seeds])
            else:
                result = quietly(self.variant.backward_module(mask, present).fn,
                                 *self.residuals, *seeds)
        per_edge = [None] * len(self._edges)
        for k, g in zip(wrt, result):
            per_edge[k] = g
        return per_edge

    def release(self) -> None:
        self._freed = True
        self.residuals = None


CompiledNode.__name__ = "CompiledFunctionBackward"


class CompiledFunction:
    """A function traced on its first call and run as generated code afterwards.
    ``target``: what a call runs, when it is not ``fn`` itself (a module, whose
    ``forward`` is ``fn``: it names the trace and binds keyword arguments)."""

    def __init__(self, fn: Callable, maxsize: int | None = None, how: str = "compile",
                 target: Callable | None = None) -> None:
        self.fn = fn
        self.target = fn if target is None else target
        self.how = how  # the front door's name in messages
        self.cache = cache_for(self.target, (how,), maxsize)
        functools.update_wrapper(self, fn, updated=())

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            args = positional(self.fn, self.how, args, kwargs)
        if record.TRACING and trace_hooks() or (record.FORWARD is not None and any(
                getattr(x, "_fw_tangent", None) is not None for x in tree_leaves(args))):
            # inside another function's trace (inlined, that trace records it), or on
            # dual tensors (eager, so that every op propagates their tangents)
            return source.rewrite(self.target)(*args)
        return self.cache.call(self, args)

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        """Decorating a method: the instance is the first argument (one cache)."""
        return self if obj is None else types.MethodType(self, obj)

    def build(self, args: tuple) -> Variant:
        kept = config.cache_dir and not kinds_in(args)
        variant = kept and self._from_disk(args)
        if variant:
            return variant
        variant = self.traced_variant(args)
        if kept and not variant.lazy:
            self._to_disk(args, variant)
        if variant.lazy and variant.wrt:
            raise TypeError(
                f"{self.how}: {def_line(self.fn)}: a Tensor that requires grad beside Dask "
                "arrays: pb.compile's results over Dask arrays are Dask arrays, which no "
                "Tensor holds, so they have no autograd graph for .backward(); take the "
                "gradient with pb.grad, pb.value_and_grad or pb.vjp (their generated "
                "backward runs on the Dask arrays), or pass the Tensor under pb.no_grad()")
        return variant

    def traced_variant(self, args: tuple) -> Variant:
        """A variant for ``args``, traced now."""
        return build_variant(self.target, args, self.how, self.fn)

    def described(self) -> tuple[Any, dict, Callable | None, Callable | None]:
        """For the persistent cache: a description of what a variant depends on besides
        ``fn`` and the arguments, the captured tensors it may name (by name), the
        captured values that description covers and a maker of the captured-value
        walk's result without the walk (see ``disk_compiled``; None: walk)."""
        if self.target is not self.fn:
            raise disk_compiled.NotPortable(type(self.target).__name__)
        return None, {}, None, None

    def _from_disk(self, args: tuple) -> Variant | None:
        try:
            target, tensors, own, guards = self.described()
        except disk_compiled.NotPortable:
            return None
        found = disk_compiled.load(self.fn, self.how, args, target, tensors, own, guards)
        if found is None:
            return None
        traced, module, f, entry = found
        adjoint = f["wrt"] and Retraced(lambda: self._retraced(args), f["residuals"])
        simple = traced.arg_slots == [(i, ()) for i in range(len(args))]
        return Variant(traced, f["wrt"], module, adjoint or None, simple=simple,
                       returned=f["returned"], tracked=tuple(f["tracked"]),
                       given=given_kind(args) if simple else None,
                       checked=tuple(f["checked"]), disk=f["key"], entry=entry)

    def _retraced(self, args: tuple) -> Variant:
        """The variant of a kept one (which had gradients), traced again for its joint:
        with grad on, as when it was kept (a first backward, which needs it, runs with
        grad off)."""
        with enable_grad():
            return self.traced_variant(args)

    def _to_disk(self, args: tuple, variant: Variant) -> None:
        try:
            target, tensors, own, _ = self.described()
        except disk_compiled.NotPortable:
            return
        names = {id(t): name for name, t in tensors.items()}
        adjoint = variant.adjoint
        meta = {"wrt": variant.wrt, "returned": variant.returned,
                "tracked": variant.tracked, "checked": variant.checked,
                "residuals": adjoint and adjoint.residuals}
        entry = disk_compiled.store(self.fn, self.how, args, target, names, own,
                                    variant.traced, variant.forward, meta)
        variant.entry, variant.disk = entry, entry and entry.key

    def fallback(self, args: tuple) -> Any:
        """Eager, on what generated code would see: arrays and floats as numpy-face
        leaves, so the results are Tensors, as ``run`` gives."""
        floats, python = float_dtype(args), numpy_face(args)
        leaf = lambda x: x if not is_traced_arg(x) or isinstance(x, Tensor) \
            else input_leaf(x, False, floats, python)
        out = source.rewrite(self.target)(*[tree_map(leaf, a) for a in args])
        return tree_map(to_tensor_face, out)

    def variant_for(self, args: tuple) -> Variant:
        """A new variant for these arguments (traced now), added to the cache."""
        variant = self.build(args)
        self.cache.add(call_key(args), variant)
        return variant

    def lookup(self, args: tuple) -> Variant:
        """The cached variant for these arguments, tracing one if there is none."""
        variants = self.cache.get(call_key(args))
        return variants[-1] if variants else self.variant_for(args)

    def run(self, variant: Variant, args: tuple) -> Any:
        """The variant's generated forward on ``args``: outputs whose grad_fn is one
        CompiledNode. Raises GuardFailed when the variant does not apply."""
        traced = variant.traced
        if traced.cut is not None and transform_scopes.TRANSFORMING:
            check_cut(traced.cut)  # (traced with torch's cut: refused inside grad & co.)
        if traced.captures:
            check_captures(traced)
        given = variant.given
        if given == "tensors":
            inputs = [*args, *traced.captures]
            data = list(map(tensor_data, inputs))
        elif not variant.wrt and given == "arrays":  # no node: no Tensors around them
            inputs = None
            data = [*args, *map(tensor_data, traced.captures)]
        elif variant.lazy:  # Dask's arrays: forward only (build refuses gradients)
            return _run_lazy(variant, args)
        else:
            inputs = _graph_input_tensors(traced, args)
            data = list(map(tensor_data, inputs))
        fn = variant.forward.fn  # numpy's warnings off (quiet.quietly, inlined)
        result = fn(*data) if INSIDE.get() else context().run(fn, *data)
        outs = result[:traced.n_outputs]
        if not variant.wrt:
            tensors = [Tensor._make(np.asarray(o)) for o in outs]
            if variant.returned is not None and inputs is None:  # (an argument returned)
                inputs = _graph_input_tensors(traced, args)
        else:
            wrt = variant.wrt_set
            edges = tuple(grad_edge(t) if k in wrt else _NO_EDGE for k, t in enumerate(inputs))
            node = CompiledNode(variant, edges, result[traced.n_outputs:], inputs)
            tensors = []
            for nr, o in enumerate(outs):
                o = np.asarray(o)
                if variant.tracked[nr]:  # (a detached or integer output has no grad_fn)
                    t = Tensor._make(o, grad_fn=node)
                    t._output_nr = nr
                else:
                    t = Tensor._make(o)
                tensors.append(t)
        if variant.returned is not None:
            tensors = [tensors[j] if made else inputs[j] for made, j in variant.returned]
        return unflatten(traced.out_tree, tensors)


_NO_EDGE = (None, 0)


def _run_lazy(variant: Variant, args: tuple) -> Any:
    """A forward-only variant on Dask's (or CuPy's) arrays: the generated code's results
    as it returns them (Dask arrays, lazy; computed together with
    ``config.dask_compute``), not Tensors, which hold numpy arrays only; a returned
    argument is that argument."""
    traced = variant.traced
    inputs = gather_inputs(traced, args)
    fn = one_task(variant.forward.fn, inputs, traced.graph)
    result = fn(*inputs) if INSIDE.get() else context().run(fn, *inputs)
    outs = list(result[:traced.n_outputs])
    if variant.returned is not None:
        given = slot_values(traced, args) + list(traced.captures)
        outs = [outs[j] if made else given[j] for made, j in variant.returned]
    return unflatten(traced.out_tree, finish(outs))


def _input_tensor(a: Any, var: Var) -> Tensor:
    """The Tensor for a call's argument ``a`` (graph input ``var``): a Tensor (of either
    face) itself, so that gradients reach it; an array or float wrapped."""
    return a if isinstance(a, Tensor) else Tensor._make(arg_array(a, var))


def _graph_input_tensors(traced: Traced, args: tuple) -> list:
    tensors = [_input_tensor(a, v) for a, v in zip(slot_values(traced, args),
                                                    traced.graph.inputs)]
    return tensors + list(traced.captures)


def compile(fn: Callable | None = None, *, maxsize: int | None = None,
            static_argnums: Any = None, static_argnames: Any = None) -> Any:
    """Decorate a function: traced on first call, then generated forward/backward code.
    An object that knows how to be compiled (``pb.nn.Module``: its ``_pb_compile``) is
    compiled its own way.

    >>> import pullback as pb
    >>> @pb.compile
    ... def f(x):
    ...     return (x * x).sum()
    >>> x = pb.tensor([1., 2.], requires_grad=True)
    >>> f(x).backward(); x.grad
    tensor([2., 4.])
    """
    if maxsize is not None:
        check_maxsize(maxsize, "compile: maxsize")
    if fn is None:
        return lambda f: compile(f, maxsize=maxsize, static_argnums=static_argnums,
                                 static_argnames=static_argnames)
    if static_argnums is not None or static_argnames is not None:  # (JAX's jit's)
        return with_static(lambda f, _: compile(f, maxsize=maxsize), fn, None,
                           static_argnums, static_argnames, "compile")
    if isinstance(fn, CompiledFunction):
        return fn
    own = getattr(type(fn), "_pb_compile", None)
    if own is not None:
        return own(fn, maxsize)
    return CompiledFunction(fn, maxsize)


__all__ = ["compile", "CompiledFunction", "CompiledNode", "TraceError"]
