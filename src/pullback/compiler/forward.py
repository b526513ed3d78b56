"""``pb.jvp`` and ``pb.linearize``: forward mode as generated code.

Called on plain values, the function is traced once per argument signature, the
tangent pass (``transforms/tangent.py``) interleaves the tangent program with it, and
the generated function computes the values and their tangents together, through the
cache loop every front door runs (``cache.py``). Called inside another transform's
trace, or on Tensors an outer computation differentiates, it runs eagerly on dual
tensors (``autograd/forward_ad.py``) instead, so that the tangents keep their graph:
``pb.grad`` of a ``pb.jvp``, ``pb.jacfwd`` of a ``pb.grad`` work.

>>> import numpy as np, pullback as pb
>>> pb.jvp(lambda x: x ** 3, (np.array([1., 2.]),), (np.array([1., 1.]),))
(array([1., 8.]), array([ 3., 12.]))
>>> out, f_jvp = pb.linearize(np.sin, np.array(0.5))
>>> f_jvp(np.array(2.0))
array(1.75516512)
>>> pb.grad(lambda x: pb.jvp(lambda y: y ** 3, (x,), (1.0,))[1])(2.0)
12.0
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import numpy as np

from pullback.transforms import pipeline

from ..autograd import anomaly_mode, forward_ad
from ..autograd.record import trace_hooks
from ..ir import Var, every_eqn, naming
from ..numpy_face import face_like
from ..ops.table.quiet import INSIDE, context
from ..pytree import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten
from ..settings import config
from ..tensor import Tensor
from . import disk_cache, disk_variants, source
from .cache import cache_for, check_captures, guard_env
from .compiled import Joint
from .conversions import functional
from .doors import (
    as_kind,
    check_target,
    constants_on_numpy_face,
    copy_back,
    grad_slots,
    has_graph,
    ident,
    kind_of,
    map_traced,
    numpy_face_args,
    private_copy,
    strip_values,
)
from .lazy_arrays import env_for, finish, kind_of_array, kinds_in, one_task
from .trace import (
    Traced,
    float_dtype,
    gather_inputs,
    proxy,
    trace_call,
    unflatten,
)
from .user_lines import def_line
from .vjp import vjp as reverse

__all__ = ["jvp", "linearize", "JVPProgram", "private_copy", "copy_back"]



class JVPVariant:
    """One specialization: the generated code and how to feed and read it."""

    def __init__(self, traced: Traced, module: Any, slots: list, n_value: int,
                 value_tree: Any, tangent_module: Any = None, n_res: int = 0,
                 parts: Any = None, lazy: bool = False) -> None:
        self.traced = traced
        self.lazy = lazy  # Dask's (or CuPy's) arrays among the primals: its code runs on them
        # linearize: the forward and tangent graph before it was split (jacfwd's columns
        # batch it: ``joint``), when it neither draws nor prints (it runs the forward
        # again; the tangents add pure ops only)
        self.parts = parts if parts is not None and all(
            e.op.pure for e in every_eqn(traced.graph)) else None
        self.columns: dict = {}  # (size, slot) -> (module, batched)
        self.module = module  # inputs + tangents -> outputs + tangents (linearize: + residuals)
        self.slots = slots  # graph inputs that take a tangent, in tangent order
        self.dtypes = [traced.graph.inputs[j].dtype for j in slots]
        self.n_value = n_value  # output leaves of the value (the rest are aux)
        self.value_tree = value_tree
        self.tangent_module = tangent_module  # linearize: residuals + tangents -> tangents
        self.n_res = n_res
        # its entry in the persistent cache (jacfwd's batched columns are kept under it)
        self.disk_key: str | None = None


class JVPProgram:
    """A function's forward-mode programs for one choice of differentiated arguments
    (``nums``; None: every one), behind its own cache. ``jvp`` uses one per function,
    ``jacfwd`` one per argnums."""

    def __init__(self, fn: Callable, has_aux: bool, nums: tuple | None = None,
                 name: str = "jvp", linear: bool = False, writes: bool = True) -> None:
        self.fn = fn
        self.has_aux = has_aux
        self.nums = nums
        self.name = name
        self.linear = linear
        # eagerly, numpy's semantics for writes into arguments (copied back into them);
        # not for jacfwd's runs per column, where the next column would see the writes
        self.writes = writes
        # shared by the programs of functions with one code and the same cells (cache.py)
        self.cache = cache_for(fn, (name, has_aux, nums, linear))

    def targets(self, n: int) -> tuple:
        return tuple(range(n)) if self.nums is None else self.nums

    def call(self, args: tuple, tangents: list) -> tuple:
        """``(out, tangent_out)`` (``aux`` third with has_aux); ``tangents``: one per
        target, each in its argument's structure."""
        nums = self.targets(len(args))
        if trace_hooks() or anomaly_mode.is_anomaly_enabled() or any(
                has_graph(x) for x in tree_leaves((args, tangents))):
            return self.eager(args, tangents, nums, plain=False)
        return self.cache.call(_Call(self, tangents), args)

    # ---------------------------------------------------------------- generated
    def value_fn(self, *args: Any) -> Any:
        return self.checked(self.fn(*args), numpy_face_args(args))

    def checked(self, out: Any, numpy_face: bool) -> Any:
        """``fn``'s output, refused with torch.func's words unless it is Tensors (and
        an aux, with has_aux); on the numpy face, floats and float arrays that do not depend
        on the inputs are constants, their tangent zeros (JAX's and autograd's)."""
        value = out
        if self.has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError(f"{self.name}(f, primals, tangents): output of function f "
                                   "should be a tuple: (output, aux) if has_aux is True")
            value = out[0]
        value = constants_on_numpy_face(value, numpy_face)
        out = (value, out[1]) if self.has_aux else value
        for leaf in tree_leaves(value):
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"{self.name}(f, primals, tangents): expected f(*primals) to "
                                   f"return only tensors, got unsupported type {type(leaf)}")
        return out

    def build(self, args: tuple) -> JVPVariant:
        nums = self.targets(len(args))
        for k in nums:
            check_target(self.name, k, args[k])
        # pb.jvp's and jacfwd's whole variants, kept for a later process (read before
        # any trace; jacfwd's with its tangent program and batched columns as parts)
        kept = None if self.has_aux else (self.name, nums, self.has_aux, "linear") \
            if self.linear else (self.name, nums, self.has_aux)
        found = kept and config.cache_dir and not kinds_in(args) and self._kept(kept, args)
        if found:
            return found
        with functional(self.name):
            traced = trace_call(self.value_fn, args, lambda i, a: i in nums, self.name,
                                self.fn)
        g = traced.graph
        slots = grad_slots(traced, nums)
        wrt = [g.inputs[j] for j in slots]
        tans = [Var(v.shape, v.dtype, np.zeros(v.shape, v.dtype),
                    name=naming.TANGENT_PREFIX + (v.name or "x")) for v in wrt]
        value_tree = traced.out_tree[1][0] if self.has_aux else traced.out_tree
        n_value = len(flat_leaves(value_tree))
        name = ident(g.name) + ("_linearized" if self.linear else "_jvp")
        env, lazy = env_for(args), bool(kinds_in(args))
        if not self.linear:
            module, _ = disk_cache.generated_with(
                g, ("jvp", tuple(slots), n_value, lazy), name, guard_env(traced.guards) | env,
                lambda: (pipeline.jvp_program(g, wrt, tans, n_value), None),
                block=naming.TANGENT_OF)
            strip_values(g)
            if kept and config.cache_dir and not lazy:
                disk_variants.store(self.fn, kept, args, traced, module)
            return JVPVariant(traced, module, slots, n_value, value_tree, lazy=lazy)
        parts = Joint(g, lambda: pipeline.jvp_graph(g, wrt, tans, n_value))
        door = ("linearize", tuple(slots), n_value, lazy)
        module, meta = parts.generate_forward(door, name, guard_env(traced.guards) | env)
        tangent_module, _ = disk_cache.generated_with(
            g, (*door, "tangent"), name + "_tangent", env,
            lambda: (parts.split.backward, None), parts.canon, block=naming.TANGENT_OF)
        variant = JVPVariant(traced, module, slots, n_value, value_tree, tangent_module,
                             len(meta["residuals"]), parts, lazy)
        if kept and config.cache_dir and not lazy:
            variant.disk_key = disk_variants.store(
                self.fn, kept, args, traced, module,
                {"n_res": variant.n_res, "columns": variant.parts is not None},
                {"tangent": tangent_module})
        return variant

    def _kept(self, kept: tuple, args: tuple) -> JVPVariant | None:
        """The whole variant a process before this one kept (``disk_variants``), or None."""
        nums = self.targets(len(args))
        if not self.linear:
            found = disk_variants.load(self.fn, kept, args)
            tree = found and found[0].out_tree  # (has_aux's are not kept: the value's)
            return found and JVPVariant(*found, grad_slots(found[0], nums),
                                        len(flat_leaves(tree)), tree)
        found = disk_variants.load_parts(self.fn, kept, args, ("tangent",))
        if not found:
            return None
        traced, module, meta, parts, key = found
        variant = JVPVariant(traced, module, grad_slots(traced, nums),
                             len(flat_leaves(traced.out_tree)), traced.out_tree,
                             parts["tangent"], meta["n_res"])
        if meta["columns"]:  # (its batched columns: parts kept as they were made)
            variant.disk_key = key
        return variant

    def run(self, variant: JVPVariant, args: tuple, tangents: list | None) -> Any:
        if variant.module is None:  # (a custom Function inside)
            return None if tangents is None else self.fallback(args, tangents)
        check_captures(variant.traced)
        arrays = gather_inputs(variant.traced, args)
        extra = [] if tangents is None else tangent_arrays(variant, tangents)
        fn = variant.module.fn
        if variant.lazy:  # (a loop over small Dask arrays: one task)
            fn = one_task(fn, [*arrays, *extra], variant.traced.graph)
        result = fn(*arrays, *extra) if INSIDE.get() else context().run(fn, *arrays, *extra)
        if self.linear:
            return variant, result
        if variant.lazy:  # Dask's arrays: lazy, or computed together in one pass
            result = finish(list(result))
        n = variant.traced.n_outputs
        kind = self._kind(args)
        return self.package(variant, kind, list(result[:n]), list(result[n:]))

    def linearized(self, args: tuple) -> tuple | None:
        """One run of the generated forward at ``args`` (a ``linear`` program, on plain
        values): ``(out, aux, tangent_of)``, where ``tangent_of(tangents)`` (one per
        target, each in its argument's structure) is the output's tangent, computed from
        that run's saved values without running ``fn`` again, so its draws and prints
        happen once. None when no generated code applies (a custom Function inside, or
        guards that keep failing)."""
        got = self.cache.call(_Call(self, None), args)
        if got is None:
            return None
        variant, result = got
        n = variant.traced.n_outputs
        outs, res = list(result[:n]), list(result[n:])
        if variant.lazy:  # (the residuals stay lazy: each tangent_of reads them)
            outs = finish(outs)
        kind = self._kind(args)
        full = unflatten(variant.traced.out_tree, [as_kind(kind, o) for o in outs])
        out, aux = (full[0], full[1]) if self.has_aux else (full, None)
        mod = variant.tangent_module.fn

        def tangent_of(tangents: list) -> Any:
            ts = tangent_arrays(variant, tangents)
            fn = one_task(mod, [*res, *ts], variant.traced.graph) if variant.lazy else mod
            got = fn(*res, *ts) if INSIDE.get() else context().run(fn, *res, *ts)
            if variant.lazy:
                got = finish(list(got))
            return unflatten(variant.value_tree, [as_kind(kind, t) for t in got])

        tangent_of.columns = lambda k, basis: self._columns(variant, args, k, basis, kind)
        return out, aux, tangent_of

    def _columns(self, variant: JVPVariant, args: tuple, k: int, basis: np.ndarray,
                 kind: str) -> list | None:
        """The tangents of the value's leaves along each of ``basis`` (a batch of tangents
        of slot ``k``, the others zero) from one batched run of the joint graph: each
        leaf's tangents stacked in axis 0. None when the joint draws or prints."""
        if variant.parts is None and variant.disk_key is None:
            return None
        inputs = gather_inputs(variant.traced, args)
        g, n_in = variant.traced.graph, len(variant.traced.graph.inputs)
        zeros = [np.zeros(g.inputs[j].shape, g.inputs[j].dtype) for j in variant.slots]
        key = (len(basis), k)
        found = variant.columns.get(key)
        part = f"columns {len(basis)} {k}"
        if found is None and variant.parts is None:  # (read from disk: no graph)
            found = disk_variants.load_part(variant.disk_key, part)
            if found is None:
                return None  # (column by column)
            variant.columns[key] = found
        if found is None:
            values = inputs + [basis if j == k else z for j, z in enumerate(zeros)]
            flags = [False] * n_in + [j == k for j in range(len(zeros))]
            found = variant.columns[key] = disk_cache.generated_with(
                g, ("jacfwd columns", tuple(variant.slots), variant.n_value, *key),
                ident(g.name) + "_columns", {},
                lambda: pipeline.vmapped(variant.parts.joint, values, flags, len(basis)),
                variant.parts.canon)
            if variant.disk_key is not None:
                disk_variants.store_part(variant.disk_key, part, *found)
        module, flags = found
        tangents = [basis if j == k else z for j, z in enumerate(zeros)]
        got = module.fn(*inputs, *tangents)
        n_out = len(variant.traced.graph.outputs)
        return [as_kind(kind, t if b else np.broadcast_to(t, (len(basis),) + np.shape(t)))
                for t, b in zip(got[n_out:], flags[n_out:])]

    def _kind(self, args: tuple) -> str:
        leaves = [x for k in self.targets(len(args)) for x in tree_leaves(args[k])]
        return kind_of(leaves[0]) if leaves else "tensor"

    def package(self, variant: JVPVariant, kind: str, outs: list, tangents: list) -> tuple:
        full = unflatten(variant.traced.out_tree, [as_kind(kind, o) for o in outs])
        t_out = unflatten(variant.value_tree, [as_kind(kind, t) for t in tangents])
        if self.has_aux:
            return full[0], t_out, full[1]
        return full, t_out

    def fallback(self, args: tuple, tangents: list) -> Any:
        return self.eager(args, tangents, self.targets(len(args)), plain=True)

    # -------------------------------------------------------------------- eager
    def eager(self, args: tuple, tangents: list, nums: tuple, plain: bool) -> tuple:
        """On dual tensors: inside a trace, on tensors with a graph, or falling back
        (``plain``: results of the kinds passed in, as generated code returns them)."""
        for k in nums:
            check_target(self.name, k, args[k])
        if forward_ad.level_open() and not plain:
            return self._by_reverse(args, tangents, nums)
        floats = float_dtype(args)
        keep = lambda x: x if has_graph(x) else proxy(x, False, floats)
        call_args = list(args)
        with forward_ad.dual_level():
            for k, t in zip(nums, tangents):
                call_args[k] = map_traced(
                    lambda p, tk: forward_ad.make_dual(p, _tangent_tensor(tk, p)),
                    map_traced(keep, args[k]), t)
            with functional(self.name):
                out = self.checked(source.rewrite(self.fn, numpy_semantics=self.writes)(
                    *call_args), numpy_face_args(args))
            value, aux = (out[0], out[1]) if self.has_aux else (out, None)
            leaves, tree = tree_flatten(value)
            pairs = [forward_ad.unpack_dual(o) for o in leaves]
        prims = [p for p, _ in pairs]
        tans = [face_like(Tensor._make(np.zeros_like(p._data)), p) if t is None
                else face_like(t, p) for p, t in pairs]
        if plain:
            kind = self._kind(args)
            show = lambda x: as_kind(kind, x.detach()._data)
            prims, tans = [show(p) for p in prims], [show(t) for t in tans]
            if aux is not None:
                aux = tree_unflatten(tree_structure(aux), [show(a) if isinstance(a, Tensor)
                                                           else a for a in tree_leaves(aux)])
        value, t_out = tree_unflatten(tree, prims), tree_unflatten(tree, tans)
        return (value, t_out, aux) if self.has_aux else (value, t_out)


    def _by_reverse(self, args: tuple, tangents: list, nums: tuple) -> tuple:
        """Forward mode inside forward mode (one dual level is open, the outer one's):
        the output's tangent as the VJP of the VJP, which is linear in its cotangent
        ``u`` (J^T u), pulled back along the tangents (J t); its ops propagate the outer
        level's tangents, as any ops do."""
        def of_targets(*targets: Any) -> Any:
            call_args = list(args)
            for k, t in zip(nums, targets):
                call_args[k] = t
            return self.checked(self.fn(*call_args), numpy_face_args(args))

        got = reverse(of_targets, *[args[k] for k in nums], has_aux=self.has_aux)
        out, pull = got[0], got[1]
        zeros = tree_map(lambda o: face_like(Tensor._make(np.zeros_like(o._data)), o), out)
        (t_out,) = reverse(pull, zeros)[1](tuple(tangents))
        return (out, t_out, got[2]) if self.has_aux else (out, t_out)


class _Call:
    """One call through a program's cache: the program, with this call's tangents."""

    def __init__(self, program: JVPProgram, tangents: list | None) -> None:
        self.program = program
        self.tangents = tangents
        self.fn = program.fn
        self.how = program.name

    def build(self, args: tuple) -> JVPVariant:
        return self.program.build(args)

    def run(self, variant: JVPVariant, args: tuple) -> Any:
        return self.program.run(variant, args, self.tangents)

    def fallback(self, args: tuple) -> Any:
        if self.tangents is None:  # linearize: no generated code for these arguments
            return None
        return self.program.fallback(args, self.tangents)


def flat_leaves(tree: Any) -> list:
    """The leaf slots (None) of a trace's output structure (``trace.flatten``)."""
    if tree is None:
        return [None]
    kind, sub = tree
    if kind == "const":
        return []
    items = sub.values() if kind is dict else sub
    return [x for s in items for x in flat_leaves(s)]


def tangent_arrays(variant: JVPVariant, tangents: list) -> list:
    """The tangents' leaves as arrays of their primals' dtypes, in slot order (Dask's
    cast lazily, never converted)."""
    leaves = [x._data if isinstance(x, Tensor) else x
              for t in tangents for x in ([t] if _is_leaf(t) else tree_leaves(t))]
    if not variant.lazy and set(map(type, leaves)) <= _PLAIN:
        return [np.asarray(t, dtype=d) for t, d in zip(leaves, variant.dtypes)]
    return [_lazy_tangent(t, d, variant) for t, d in zip(leaves, variant.dtypes)]


#: tangent leaf types that are not another library's arrays (one set lookup per call)
_PLAIN = frozenset([np.ndarray, float, int])


def _lazy_tangent(t: Any, dtype: np.dtype, variant: JVPVariant) -> Any:
    kind = kind_of_array(t)
    if kind is None:
        return np.asarray(t, dtype=dtype)
    if not variant.lazy:
        raise TypeError(f"jvp: a tangent is a {kind} array but no primal is: the numpy "
                        "code generated for the primals would compute it into a numpy "
                        f"array; pass the primals as {kind} arrays too "
                        "(dask.array.from_array), or the tangent as a numpy array")
    return t if np.dtype(t.dtype) == dtype else t.astype(dtype)


def _is_leaf(t: Any) -> bool:
    return isinstance(t, (Tensor, np.ndarray, float, int))


def _tangent_tensor(t: Any, primal: Tensor) -> Tensor:
    if isinstance(t, Tensor):
        return t
    return face_like(Tensor._make(np.asarray(t, dtype=primal._data.dtype)), primal)


_PROGRAMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def program_of(fn: Callable, has_aux: bool, linear: bool = False) -> JVPProgram:
    """The one JVPProgram of ``fn`` (its cache lives as long as ``fn``)."""
    key = (has_aux, linear)
    try:
        programs = _PROGRAMS.setdefault(fn, {})
    except TypeError:  # not weak-referenceable: compiled for this call only
        return JVPProgram(fn, has_aux, name="linearize" if linear else "jvp", linear=linear)
    p = programs.get(key)
    if p is None:
        p = programs[key] = JVPProgram(fn, has_aux, name="linearize" if linear else "jvp",
                                       linear=linear)
    return p


def check_tangents(name: str, primals: Any, tangents: Any) -> None:
    """torch.func's checks: primals a tuple, tangents of the same structure and shapes."""
    if not isinstance(primals, (tuple, list)):
        raise RuntimeError(f"{name}(f, primals, tangents): Expected primals to be a tuple. "
                           "E.g. it should be valid to call f(*primals).")
    ps, ts = tree_structure(tuple(primals)), tree_structure(
        tuple(tangents) if isinstance(tangents, (tuple, list)) else tangents)
    if ps != ts or type(primals) is not type(tangents):
        raise RuntimeError(f"{name}(f, primals, tangents): Expected primals and tangents to "
                           "have the same python structure. For example, if primals is a tuple "
                           "of 3 tensors, tangents also must be. Got primals with structure "
                           f"{ps} and tangents with structure {tree_structure(tangents)}")
    for p, t in zip(tree_leaves(primals), tree_leaves(tangents)):
        if np.shape(_data(p)) != np.shape(_data(t)):
            raise RuntimeError(
                "Trying to set a forward gradient that has a different size than that of the "
                f"original Tensor, this is not supported. Tensor is of size "
                f"{list(np.shape(_data(p)))} while the given forward gradient is of size "
                f"{list(np.shape(_data(t)))}.")


def _data(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


def jvp(fn: Callable, primals: Any, tangents: Any, has_aux: bool = False) -> tuple:
    """``(fn(*primals), J tangents)``: the Jacobian-vector product of ``fn`` at
    ``primals`` (a tuple of arrays, Tensors, floats or pytrees of them) along
    ``tangents`` (the same structure); ``(out, tangent_out, aux)`` with ``has_aux``."""
    check_tangents("jvp", primals, tangents)
    return program_of(fn, has_aux).call(tuple(primals), list(tangents))


def linearize(fn: Callable, *primals: Any) -> tuple:
    """``(fn(*primals), f_jvp)``: ``f_jvp(*tangents)`` is ``J tangents`` at ``primals``,
    without computing ``fn`` again (its generated code reads the values saved by the
    first run, as a backward reads residuals). The primals are copied (as JAX does):
    ``f_jvp`` reads this call's values, not later writes into the caller's array."""
    program = program_of(fn, False, linear=True)
    if trace_hooks() or anomaly_mode.is_anomaly_enabled() or any(
            has_graph(x) for x in tree_leaves(primals)):
        out, _ = program_of(fn, False).call(primals, [_zeros(p) for p in primals])
        return out, lambda *ts: program_of(fn, False).call(primals, list(ts))[1]
    # JAX's: the primals as they are now (the caller may write into its arrays later);
    # what the function wrote into its copies goes back into the caller's arrays
    given, primals = primals, tuple(map_traced(private_copy, p) for p in primals)
    got = program.linearized(primals)
    copy_back(given, primals)
    if got is None:  # guards kept failing, or a custom Function: eagerly, per call
        eager = program_of(fn, False)
        out, _ = eager.fallback(primals, [_zeros(p) for p in primals])
        return out, lambda *ts: eager.fallback(primals, list(ts))[1]
    out, _, tangent_of = got

    def f_jvp(*tangents: Any) -> Any:
        check_tangents("linearize", primals, tangents)
        return tangent_of(list(tangents))

    f_jvp.__name__ = f"{getattr(fn, '__name__', 'f')}_jvp"
    f_jvp.__doc__ = f"The linearization of {def_line(fn)}."
    return out, f_jvp


def _zeros(p: Any) -> Any:
    return map_traced(lambda x: np.zeros_like(_data(x)) if not isinstance(x, float) else 0.0, p)
