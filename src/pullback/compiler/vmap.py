"""``pb.vmap``: a function written for one example, run on a batch.

The function is traced once on one example (the arguments without their mapped axis);
``transforms/batch.py`` runs the trace's equations on the whole batch through each op's
batching rule. On plain arrays and Tensors the batched equations become generated numpy
code, cached like every front door's; inside another transform's trace, or on Tensors
that require grad, they run as ops (recorded there, or by autograd), so vmap composes
with grad, jacrev, compile and itself in any order.

A function that makes a Python decision on a batched value (``if x.sum() > 0``) cannot
share one trace across the batch: it runs once per batch element instead, with a
warning (torch.func and JAX refuse it).

>>> import numpy as np
>>> import pullback as pb
>>> pb.vmap(np.dot)(np.ones((4, 3)), np.ones((4, 3)))
array([3., 3., 3., 3.])
>>> pb.vmap(lambda a: a * 2, in_axes=1)(np.ones((3, 5))).shape
(5, 3)
>>> w = np.ones((3, 2))
>>> pb.vmap(pb.grad(lambda w, x: np.tanh(x @ w).sum()), in_axes=(None, 0))(w, np.ones((5, 3))).shape
(5, 3, 2)
"""

from __future__ import annotations

import functools
import threading
import warnings
from typing import Any, Callable

import numpy as np

from pullback.transforms import pipeline
from pullback.transforms.batch import RANDOMNESS, batch_eval

from .. import dtypes
from ..autograd import record
from ..autograd.grad_mode import no_grad
from ..autograd.tracer_hooks import gathering, untraced
from ..numpy_face import NumpyTensor
from ..ops.joining import cat as pb_cat
from ..ops.joining import stack as pb_stack
from ..ops.reshaping import movedim
from ..ops.shape import expand
from ..ops.table.batching import Unbatchable
from ..pytree import tree_flatten, tree_map, tree_unflatten
from ..settings import config
from ..tensor import Tensor
from . import disk_cache, disk_variants, source
from .cache import cache_for, guard_env
from .doors import has_graph, ident
from .lazy_arrays import check_call, kind_of_array, kinds_in
from .trace import (
    Traced,
    gather_inputs,
    param_names,
    positional,
    slot_values,
    trace_call,
    unflatten,
)
from .user_lines import def_line


class VmapVariant:
    """One specialization: the trace of one example, which graph inputs carry the batch,
    and the generated code over the batch (None inside traces and for guarded traces)."""

    def __init__(self, traced: Traced, batched: list, size: int, module: Any,
                 out_batched: list, per_example: bool = False) -> None:
        self.traced = traced
        # a Python decision on the values (guards), or an op no loop batches: the
        # function runs once per batch element
        self.per_example = per_example or bool(traced.guards)
        self.batched = batched
        self.size = size
        self.module = module
        self.out_batched = out_batched


class VmapFunction:
    """``vmap(fn, in_axes, out_axes)``: see the module's docstring. ``style`` is whose
    words errors use: "jax" (``pb.vmap``) or "torch" (``pullback.func.vmap``)."""

    how = "vmap"

    def __init__(self, fn: Callable, in_axes: Any = 0, out_axes: Any = 0,
                 axis_size: int | None = None, randomness: str = "error",
                 chunk_size: int | None = None, style: str = "jax") -> None:
        if not callable(fn):
            raise TypeError(f"vmap: the function to vectorize must be callable, not "
                            f"{type(fn).__name__}")
        if randomness not in RANDOMNESS:
            raise RuntimeError("Only allowed values for randomness are 'error', 'different',"
                               f" or 'same'. Got {randomness}")
        if chunk_size is not None and (type(chunk_size) is not int or chunk_size < 1):
            raise ValueError(f"vmap: chunk_size should be None or greater than 0. "
                             f"(got {chunk_size})")
        _check_axes_spec(in_axes, "in_axes" if style == "jax" else "in_dims", fn, style)
        self.fn = fn
        self.in_axes = in_axes
        self.out_axes = out_axes
        self.axis_size = axis_size
        self.randomness = randomness
        self.chunk_size = chunk_size
        self.style = style
        self.cache = cache_for(fn, ("vmap", _key(in_axes), _key(out_axes), randomness))
        self._call = threading.local()  # this thread's call: (axes, batch size)
        functools.update_wrapper(self, fn, updated=())

    # ------------------------------------------------------------------ calling
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        n_positional = len(args)
        if kwargs:  # (mapped along axis 0 as JAX's; passed through as torch.func's)
            args = positional(self.fn, "vmap", args, kwargs)
        flats = [tree_flatten(a) for a in args]  # (each argument flattened once a call)
        axes = _arg_axes(self, args, flats, n_positional)
        size = _batch_size(self, args, axes, flats)
        moved = tuple(_moved(a, ax, f) for a, ax, f in zip(args, axes, flats))
        leaves = [x for f in flats for x in f[0]]
        kind = "tensor" if any(isinstance(x, Tensor) and type(x) is not NumpyTensor
                               for x in leaves) else "array"
        plain = not any(map(has_graph, leaves))
        if self.chunk_size is not None and size > self.chunk_size:
            return self._chunked(moved, axes, size, kind, plain)
        out, out_batched = self._batched(moved, axes, size, plain)
        return self._finish(out, out_batched, size, kind)

    def _batched(self, moved: tuple, axes: list, size: int, plain: bool) -> tuple:
        """The flat outputs (batch in axis 0 where batched) and their tree. ``plain``: no
        argument is a value an outer computation differentiates through."""
        outer = getattr(self._call, "now", None)
        self._call.now = (axes, size, plain)
        try:
            return self.cache.call(self, moved)
        finally:
            self._call.now = outer

    def _chunked(self, moved: tuple, axes: list, size: int, kind: str, plain: bool) -> Any:
        """torch's chunk_size: the batch in chunks, the results joined."""
        parts = []
        for lo in range(0, size, self.chunk_size):
            n = min(self.chunk_size, size - lo)
            part = tuple(_leafwise(a, ax, lambda x, lo=lo, n=n: x[lo:lo + n])
                         for a, ax in zip(moved, axes))
            parts.append(self._batched(part, axes, n, plain))
        (leaves, tree), flags = parts[0]
        joined = [_join([p[0][0][k] for p in parts]) if flags[k] else leaves[k]
                  for k in range(len(leaves))]
        return self._finish((joined, tree), flags, size, kind)

    # ------------------------------------------------------------- the cache loop
    def build(self, moved: tuple) -> VmapVariant:
        axes, size, plain = self._call.now
        # a whole variant kept for a later process (read before any trace)
        kept = ("vmap", self.style, self.randomness, axes, size)
        keep = plain and config.cache_dir and not kinds_in(moved) and not record.trace_hooks()
        found = keep and disk_variants.load_meta(self.fn, kept, moved)
        if found:
            traced, module, out_batched = found
            return VmapVariant(traced, _slot_flags(traced, axes), size, module, out_batched)
        one = tuple(_leafwise(a, ax, _first if size else _zeros) for a, ax in zip(moved, axes))
        with untraced(), gathering():  # (a trace of its own; x[i] reads i)
            traced = trace_call(self._traced_fn, one, _differentiated(moved), "vmap",
                                self.fn)
        batched = _slot_flags(traced, axes) + [False] * len(traced.captures)
        if traced.guards:
            return VmapVariant(traced, batched, size, None, [], per_example=True)
        module, out_batched = None, []
        if plain and not any(map(has_graph, traced.captures)):
            try:
                module, out_batched = self._generate(traced, batched, moved, size)
            except Unbatchable:  # (an op no loop can batch: the function per element)
                return VmapVariant(traced, batched, size, None, [], per_example=True)
            if keep and module is not None:
                disk_variants.store(self.fn, kept, moved, traced, module, list(out_batched))
        return VmapVariant(traced, batched, size, module, out_batched)

    def _generate(self, traced: Traced, batched: list, moved: tuple, size: int) -> tuple:
        """Numpy code over the whole batch, and which outputs it batches."""
        g = traced.graph
        door = ("vmap", tuple(batched), size, self.randomness)
        return disk_cache.generated_with(
            g, door, ident(g.name) + "_vmap", guard_env(traced.guards),
            lambda: pipeline.vmapped(g, gather_inputs(traced, moved), batched, size,
                                     self.randomness))

    def run(self, variant: VmapVariant, moved: tuple) -> tuple:
        traced = variant.traced
        if variant.per_example:
            return self._per_example(moved, traced.guards)
        if variant.module is not None and self._call.now[2] and not any(
                map(has_graph, traced.captures)) and not record.trace_hooks():
            outs = variant.module.fn(*gather_inputs(traced, moved))
            return (list(outs), traced.out_tree), variant.out_batched
        values = _slot_values(traced, moved) + list(traced.captures)
        try:
            outs, flags = batch_eval(traced.graph, values, variant.batched, variant.size,
                                     self.randomness, no_grad, record.apply)
        except Unbatchable:
            variant.per_example = True
            return self._per_example(moved)
        return (outs, traced.out_tree), flags

    def _traced_fn(self, *args: Any) -> Any:
        """``fn`` with JAX's outputs: an array or number it returns (a constant of the
        trace) is an output too, broadcast over the batch."""
        out = self.fn(*args)
        if self.style != "jax":
            return out
        return tree_map(lambda x: NumpyTensor._make(np.asarray(x)) if isinstance(
            x, (np.ndarray, np.generic, float, int)) and not isinstance(x, bool) else x, out)

    def fallback(self, moved: tuple) -> tuple:
        return self._per_example(moved)

    def _per_example(self, moved: tuple, guards: list = ()) -> tuple:
        """The function once per batch element, its outputs stacked (a trace that made
        Python decisions on the values cannot serve the whole batch; the first one's line
        named)."""
        axes, size, plain = self._call.now  # (with Tensors an outer computation
        # differentiates, numpy code runs as the source pass made it: R[i, j] = v)
        at = next((f" (at {g.src}: {g.src.text.strip()})" for g in guards
                   if g.src is not None), "")
        warnings.warn(f"vmap: {def_line(self.fn)} makes a Python decision (an if, a "
                      f"bool(), .item()) on a batched value{at}, calls a custom Function, "
                      "or makes values whose shapes depend on the data (a while loop's "
                      "steps under grad), so it runs once per batch element", UserWarning,
                      stacklevel=5)
        fn = self.fn if plain else source.rewrite(self.fn, numpy_semantics=True)
        results = [fn(*[_leafwise(a, ax, lambda x, i=i: x[i])
                        for a, ax in zip(moved, axes)]) for i in range(size)]
        if not results:
            raise ValueError(f"vmap: {def_line(self.fn)} makes Python decisions on its "
                             "values and the batch is empty: there is no element to run")
        flat = [tree_flatten(r)[0] for r in results]
        tree = tree_flatten(results[0])[1]
        leaves = [_join([f[k] for f in flat], stack=True) for k in range(len(flat[0]))]
        return (leaves, ("pytree", tree)), [True] * len(leaves)

    # ------------------------------------------------------------------ results
    def _finish(self, result: tuple, flags: list, size: int, kind: str) -> Any:
        """The outputs with their batch axes where ``out_axes`` says, of the kind the
        arguments were (Tensors for Tensors, arrays for arrays)."""
        leaves, tree = result
        if kind == "tensor":
            leaves = [Tensor._make(x) if isinstance(x, np.ndarray) else x for x in leaves]
        marked = [_Out(x, b) for x, b in zip(leaves, flags)]
        if isinstance(tree, tuple) and tree[:1] == ("pytree",):
            out = tree_unflatten(tree[1], marked)
        else:
            out = unflatten(tree, marked)
        spec = self.out_axes
        axes = _prefix(self, spec, out) if not (spec is None or type(spec) is int) else spec
        flat, treedef = tree_flatten(out)
        axes = axes if isinstance(axes, list) else [axes] * len(flat)
        return tree_unflatten(treedef, [
            _out_leaf(self, x.value, x.batched, ax, size) if isinstance(x, _Out) else x
            for x, ax in zip(flat, axes)])


class _Out:
    """An output value and whether it carries the batch (a pytree leaf)."""

    __slots__ = ("value", "batched")

    def __init__(self, value: Any, batched: bool) -> None:
        self.value, self.batched = value, batched


def vmap(fun: Callable, in_axes: Any = 0, out_axes: Any = 0, axis_size: int | None = None,
         *, randomness: str = "error", chunk_size: int | None = None) -> VmapFunction:
    """``fun`` vectorized over axis ``in_axes`` of its arguments (JAX's ``jax.vmap``):
    ``in_axes`` an int, None (not mapped), or a tuple with one entry per positional
    argument, each an int, None or a pytree prefix of that argument; ``out_axes`` the
    same for the outputs; ``axis_size`` the batch size when no argument is mapped;
    ``randomness`` torch.func's ('error', 'same', 'different')."""
    return VmapFunction(fun, in_axes, out_axes, axis_size, randomness, chunk_size, "jax")


# ---------------------------------------------------------------------- axes
def _key(spec: Any) -> Any:
    leaves, tree = tree_flatten(spec, is_leaf=lambda x: x is None)
    return (tuple(leaves), str(tree))


def _name(door: VmapFunction) -> str:
    return getattr(door.fn, "__name__", type(door.fn).__name__)


def _check_axes_spec(spec: Any, what: str, fn: Callable, style: str) -> None:
    leaves = tree_flatten(spec, is_leaf=lambda x: x is None)[0]
    if all(x is None or type(x) is int for x in leaves):
        return
    name = getattr(fn, "__name__", type(fn).__name__)
    if style == "torch":
        raise ValueError(f"vmap({name}, {what}={spec}, ...)(<inputs>): expected `{what}` to "
                         "be int or a (potentially nested) tuple matching the structure of "
                         f"inputs, got: {type(spec)}.")
    raise TypeError(f"vmap {what} must be an int, None, or a tuple of entries corresponding "
                    f"to the positional arguments passed to the function, but got {spec!r}.")


def _arg_axes(door: VmapFunction, args: tuple, flats: list, n_positional: int) -> list:
    """Per argument, its leaves' axes (None: not mapped) as a list, or one axis for an
    argument that is a leaf. The arguments past ``n_positional`` came as keywords."""
    spec = door.in_axes
    if isinstance(spec, list) and door.style == "jax":
        spec = tuple(spec)
    if not isinstance(spec, tuple):
        spec = (spec,) * n_positional
    spec = tuple(spec) + ((None if door.style == "torch" else 0),) * (len(args) - n_positional)
    if len(spec) != len(args):
        raise _structure_error(door, spec, args)
    return [_prefix(door, s, a, f) for s, a, f in zip(spec, args, flats)]


def _prefix(door: VmapFunction, spec: Any, arg: Any, flat: tuple | None = None) -> Any:
    """``spec`` (an axis or a pytree prefix of ``arg``) as one axis per leaf of ``arg``
    (``flat``: ``arg`` flattened, if it is at hand)."""
    leaves, tree = flat or tree_flatten(arg)
    if spec is None or type(spec) is int:
        return [spec] * len(leaves) if tree.node is not None else spec
    try:
        axes: list = []
        for sub_spec, sub in _matched(spec, arg):
            axes += _prefix(door, sub_spec, sub) if tree_flatten(sub)[1].node is not None \
                else [sub_spec]
    except (TypeError, ValueError, KeyError, IndexError):
        raise _structure_error(door, spec, arg) from None
    if len(axes) != len(leaves):
        raise _structure_error(door, spec, arg)
    return axes


def _matched(spec: Any, arg: Any) -> list:
    """The children of ``spec`` beside those of ``arg`` (same container kind)."""
    if isinstance(spec, dict) and isinstance(arg, dict):
        if sorted(spec) != sorted(arg):
            raise ValueError
        return [(spec[k], arg[k]) for k in sorted(arg)]
    if isinstance(spec, (list, tuple)) and isinstance(arg, (list, tuple)) \
            and len(spec) == len(arg):
        return list(zip(spec, arg))
    raise ValueError


def _structure_error(door: VmapFunction, spec: Any, args: Any) -> ValueError:
    if door.style == "torch":
        return ValueError(f"vmap({_name(door)}, in_dims={door.in_axes}, ...)(<inputs>): in_dims "
                          "is not compatible with the structure of `inputs`. in_dims has "
                          f"structure {tree_flatten(spec, is_leaf=lambda x: x is None)[1]} "
                          f"but inputs has structure {tree_flatten(args)[1]}.")
    return ValueError(f"vmap in_axes specification must be a tree prefix of the corresponding "
                      f"value, got specification {spec!r} for value tree "
                      f"{tree_flatten(args)[1]}.")


def _batch_size(door: VmapFunction, args: tuple, axes: list, flats: list) -> int:
    sizes = []
    for k, (a, ax, flat) in enumerate(zip(args, axes, flats)):
        for leaf, axis in (zip(flat[0], ax) if isinstance(ax, list) else [(a, ax)]):
            if axis is None:
                continue
            sizes.append(_axis_size(door, k, leaf, axis))
    if door.axis_size is not None:
        sizes.append(door.axis_size)
    if not sizes:
        if door.style == "torch":
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        raise ValueError("vmap must have at least one non-None value in in_axes")
    if len(set(sizes)) > 1:
        if door.style == "torch":
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        raise ValueError("vmap got inconsistent sizes for array axes to be mapped: "
                         + ", ".join(f"an axis had size {s}" for s in sizes))
    return sizes[0]


def _axis_size(door: VmapFunction, k: int, leaf: Any, axis: int) -> int:
    if not isinstance(leaf, (np.ndarray, Tensor)):
        if kind_of_array(leaf) is not None:  # Dask's: refused by name (unmapped ones
            # are, at trace time)
            check_call("vmap", def_line(door.fn), (leaf,), param_names(door.fn, k + 1)[k:])
        if door.style == "torch":
            raise ValueError(f"vmap({_name(door)}, in_dims={door.in_axes}, ...)(<inputs>): Got "
                             f"in_dim={axis} for an input but the input is of type "
                             f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        raise ValueError(f"vmap was requested to map its argument along axis {axis}, which "
                         f"implies that its rank should be at least {max(axis + 1, -axis)}, "
                         f"but argument {k} is a {type(leaf).__name__}, which has rank 0")
    n = leaf.ndim
    if not -n <= axis < n:
        if door.style == "torch":
            raise ValueError(f"vmap({_name(door)}, in_dims={door.in_axes}, ...)(<inputs>): Got "
                             f"in_dim={axis} for some input, but that input is a Tensor of "
                             f"dimensionality {n} so expected in_dim to satisfy -{n} <= in_dim "
                             f"< {n}.")
        raise ValueError(f"vmap was requested to map its argument along axis {axis}, which "
                         f"implies that its rank should be at least {max(axis + 1, -axis)}, "
                         f"but argument {k} has rank {n} (shape {tuple(leaf.shape)})")
    return leaf.shape[axis]


def _leafwise(a: Any, ax: Any, f: Callable) -> Any:
    """``f`` on the mapped leaves of argument ``a`` (axes ``ax``)."""
    if not isinstance(ax, list):
        return a if ax is None else f(a)
    leaves, tree = tree_flatten(a)
    return tree_unflatten(tree, [x if axis is None else f(x) for x, axis in zip(leaves, ax)])


def _moved(a: Any, ax: Any, flat: tuple) -> Any:
    """Argument ``a`` (flattened: ``flat``) with each mapped leaf's axis moved to the
    front."""
    if isinstance(ax, list):
        if all(axis is None or axis == 0 for axis in ax):
            return a
        leaves, tree = flat
        return tree_unflatten(tree, [_front(x, axis) for x, axis in zip(leaves, ax)])
    return _front(a, ax)


def _front(x: Any, axis: Any) -> Any:
    if axis is None or axis % x.ndim == 0:
        return x
    if isinstance(x, Tensor):
        return movedim(x, axis, 0)
    return np.moveaxis(x, axis, 0)


def _differentiated(moved: tuple) -> Callable:
    """Which proxies of the traced function require grad: the float leaves of the
    arguments an outer computation differentiates through, so that a pb.grad inside
    records a backward that computation differentiates (not a constant)."""
    outer = [any(map(has_graph, tree_flatten(a)[0])) for a in moved]
    return lambda i, a: outer[i] and dtypes.is_differentiable(
        np.asarray(getattr(a, "_data", a)).dtype)


def _first(x: Any) -> Any:
    """One example of a mapped leaf, of its kind (the traced function's input)."""
    if isinstance(x, Tensor):
        return (type(x) if type(x) in (Tensor, NumpyTensor) else Tensor)._make(
            np.array(x._data[0]))
    return np.array(x[0])


def _zeros(x: Any) -> Any:
    data = np.zeros(x.shape[1:], x.dtype if not isinstance(x, Tensor) else x._data.dtype)
    return Tensor._make(data) if isinstance(x, Tensor) else data


def _slot_flags(traced: Traced, axes: list) -> list:
    """Whether each argument slot of the trace is a mapped leaf."""
    flags = []
    for i, path in traced.arg_slots:
        ax = axes[i]
        flags.append((ax[path[0]] if path else None) is not None if isinstance(ax, list)
                     else ax is not None)
    return flags


def _slot_values(traced: Traced, moved: tuple) -> list:
    """The call's values for the trace's argument slots, as they are (Tensors kept), a
    float as a 0-d array."""
    return [np.asarray(v) if isinstance(v, (float, complex, np.floating, np.complexfloating))
            else v
            for v in slot_values(traced, moved)]


def _join(parts: list, stack: bool = False) -> Any:
    """Batch parts joined along axis 0 (stacked, for one element each)."""
    if any(isinstance(p, Tensor) for p in parts):
        return pb_stack(parts) if stack else pb_cat(parts)
    return np.stack(parts) if stack else np.concatenate(parts)


def _out_leaf(door: VmapFunction, x: Any, batched: bool, axis: Any, size: int) -> Any:
    if axis is None:
        if batched:
            if door.style == "torch":
                raise ValueError(f"vmap({_name(door)}, ...): `{_name(door)}` can not return a "
                                 "BatchedTensor when out_dim is None")
            raise ValueError("vmap has mapped output but out_axes is None")
        return x
    if not batched:
        x = expand(x, shape=(size,) + tuple(np.shape(x))) if isinstance(x, Tensor) else \
            np.broadcast_to(x, (size,) + np.shape(x)).copy()
    n = np.ndim(x) if not isinstance(x, Tensor) else x.ndim
    if not -n <= axis < n:
        raise ValueError(f"vmap: out_axes {axis} is out of range for an output of rank {n - 1}")
    if axis % n == 0:
        return x
    return movedim(x, 0, axis) if isinstance(x, Tensor) else np.moveaxis(x, 0, axis)
