"""Running an op on Tensors: compute it on numpy, and record a node when grad is on.

``apply`` is the Tensor kind's dispatcher (see ops.registry.OpDef.__call__); ``apply_inplace``
is the in-place form with torch's leaf, view and version-counter rules.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from ..array_libraries import computed_error, kind_of_array
from ..ops.subscripts import BASIC_INDEX_OPS, basic_index_kind
from ..ops.table.promotion import promoted
from ..ops.table.quiet import INSIDE, THREAD, context, quietly
from ..ops.table.results import pack
from . import edges, graph, inplace_checks, inplace_writes, messages, saved_hooks
from .edges import VersionCounter, mark_view, record_node, refresh_view, shared_meta
from .grad_mode import STATE, new_node, on_node_extras
from .graph import SavedOutput
from .inplace_checks import check_inplace, check_multi_view, check_overlap, check_unread_view
from .inplace_writes import old_value, rebase, rebase_view, write_into
from .tracer_hooks import HOOKS

Tensor: Any = None  # the Tensor class: ``use_tensor_class`` (pullback.tensor calls it)


def use_tensor_class(cls: type) -> None:
    """Make ``cls`` the Tensor class of the autograd modules that make and test Tensors
    (this one, graph.py, edges.py, inplace_writes.py, saved_hooks.py, inplace_checks.py).
    ``pullback.tensor`` calls it once, as the class imports the autograd package, which
    therefore cannot import it: the one place the class is handed down."""
    global Tensor
    Tensor = graph.Tensor = saved_hooks.Tensor = inplace_checks.Tensor = cls
    edges.Tensor = inplace_writes.Tensor = cls


#: threads tracing now. Ops read HOOKS (a thread-local lookup) only while it is not 0:
#: a trace records its own thread's ops and no other thread's.
TRACING = 0
_TRACING_LOCK = threading.Lock()


def start_tracing(on_op: Any, on_concrete: Any, on_write: Any, knows: Any = None) -> None:
    """Send this thread's ops, conversions and writes to a tracer until
    ``stop_tracing``."""
    global TRACING
    HOOKS.ops.append(on_op)
    HOOKS.concrete.append(on_concrete)
    HOOKS.writes.append(on_write)
    if knows is not None:
        HOOKS.values.append(knows)
    with _TRACING_LOCK:
        TRACING += 1


def stop_tracing(on_op: Any, on_concrete: Any, on_write: Any, knows: Any = None) -> None:
    global TRACING
    with _TRACING_LOCK:
        TRACING -= 1
    HOOKS.ops.remove(on_op)
    HOOKS.concrete.remove(on_concrete)
    HOOKS.writes.remove(on_write)
    if knows is not None:
        HOOKS.values.remove(knows)
    if not HOOKS.ops:
        HOOKS.copies.clear()


def traced_value(t: Any) -> bool:
    """Whether a tracer of this thread records ``t`` as a value of its graph (computed
    in it; not a constant it would read as a literal)."""
    return bool(trace_hooks()) and any(knows(t) for knows in HOOKS.values)


def trace_hooks() -> list:
    """This thread's tracers' op hooks (empty when it is not tracing)."""
    return HOOKS.ops if TRACING else []


#: anomaly mode or saved-tensor hooks are on somewhere (grad_mode.set_node_extra): each
#: new node then runs grad_mode.new_node; a plain global, the op hot path's one check
EXTRAS = False


def _set_extras(on: bool) -> None:
    global EXTRAS
    EXTRAS = on


on_node_extras(_set_extras)

#: some thread profiles (autograd/profiler.py): ops then call the profiler's start and
#: end; a plain global, checked before and after each op, False otherwise
PROFILING = False
_profile_start: Any = None
_profile_end: Any = None


def set_profiling(on: bool, start: Any = None, end: Any = None) -> None:
    """The profiler's registration point: ``start(op)`` before each op, ``end(op, args,
    result)`` after it, until ``set_profiling(False)`` (which keeps the callbacks: an op
    another thread is running may still call ``end``)."""
    global PROFILING, _profile_start, _profile_end
    if on:
        _profile_start, _profile_end = start, end
    PROFILING = on


#: forward mode's tangent propagation, ``hook(op, args, params, result, inplace)``, while
#: a dual level is open (forward_ad.py sets it); None otherwise: the op hot path's check
FORWARD: Any = None


def set_forward(hook: Any) -> None:
    global FORWARD
    FORWARD = hook


def notify_concrete(t: Any, how: str) -> None:
    """Tell this thread's tracers that ``t``'s value leaves the graph (``how``: item...)."""
    if TRACING:
        for hook in HOOKS.concrete:
            hook(t, how)


_new = object.__new__
_weakref = weakref.ref


def apply(op, args: tuple, params: dict) -> Any:
    """Run ``op`` on Tensors (and scalars/arrays), recording a node if grad is needed."""
    if PROFILING:
        _profile_start(op)
    arrays = []
    wants = False  # some input requires grad
    for a in args:
        if isinstance(a, Tensor):
            arrays.append(a._data)
            # (a stale view of a base that came to require grad has _requires_grad False)
            if a._requires_grad or (a._base is not None and a._base._requires_grad):
                wants = True
        else:
            arrays.append(a)
    promote = op.promote
    if promote is not None and not (  # (two arrays of one float dtype need no casts)
            len(arrays) == 2 and arrays[0].__class__ is arrays[1].__class__ is np.ndarray
            and arrays[0].dtype is arrays[1].dtype and arrays[0].dtype.kind in "fc"):
        arrays = promoted(op, arrays, params)
    try:
        # numpy's warnings off (ops.quiet.quietly, inlined: every eager op passes here)
        if INSIDE.get():
            out = op.forward(*arrays, **params)
        else:
            try:
                ctx = THREAD.ctx
            except AttributeError:
                ctx = context()
            out = ctx.run(op.forward, *arrays, **params)
    except Exception as e:
        _failed(e, args, arrays)
        raise
    if type(out) is not np.ndarray:
        if op.multi:
            return _apply_multi(op, args, params, out, wants)
        if TRACING and not isinstance(out, np.generic):
            _refuse_foreign(op, out)
        out = np.asarray(out)
    # integer results never require grad; inference mode never records
    if (wants and op.differentiable and STATE.grad_enabled and out.dtype.kind in "fc"
            and not STATE.inference):
        result = _record(op, args, params, out)
    else:
        result = _new(Tensor)  # new_tensor(out, None), inlined: every op makes one
        result._data = out
        result._grad_fn = None
        result._requires_grad = False
        result._output_nr = 0
        result._vc = VersionCounter()
        result._base = None
        if STATE.inference:
            result._is_inference = True
        if op.is_view:
            mark_view(result, args[0], op, params)
    if TRACING:
        for hook in HOOKS.ops:
            hook(op, args, params, result)
    if PROFILING:
        _profile_end(op, args, result)
    if FORWARD is not None:  # (after the tracers: the tangent's ops read the result)
        FORWARD(op, args, params, result, False)
    return result


def _failed(e: Exception, args: tuple, arrays: list) -> None:
    """An op's forward raised ``e``: tell the tracers (a trace holding stand-ins of its
    inputs is made again on values), and raise numpy's broadcasting failure worded as
    torch words it (the caller re-raises any other error)."""
    if TRACING:
        for a in args:
            notify_concrete(a, "error")
    if isinstance(e, ValueError):
        raise messages.forward_error(e, arrays) from None


def _refuse_foreign(op, out: Any) -> None:
    """Refuse an op's result that is another library's array: a traced function that
    read a Dask array from a global or a closure (eager ops outside traces ask for
    numpy Tensors)."""
    if kind_of_array(out) is not None:
        raise computed_error(op.name, kind_of_array(out))


def _record(op, args: tuple, params: dict, out: np.ndarray) -> Any:
    """The result of ``op`` with its node (Tensor._make and SavedOutput inlined: this
    runs once per recorded op)."""
    node, needed = record_node(op, args, params)
    result = _new(Tensor)
    result._data = out
    result._grad_fn = node
    result._requires_grad = True
    result._output_nr = 0
    result._vc = VersionCounter()
    result._base = None
    if op.is_view:
        mark_view(result, args[0], op, params)
    if "out" in needed:  # SavedOutput(result), inlined
        so = node.saved_out = _new(SavedOutput)
        so.data = out
        so.vc = result._vc
        so.version = 0
        so.ref = _weakref(result)
    if EXTRAS:
        new_node(node)
    return result


def _apply_multi(op, args: tuple, params: dict, outs: tuple, wants: bool) -> Any:
    """``apply`` for an op with several outputs: one node, whose output k is the op's
    output k (the float outputs require grad); an op with ``regions`` makes each output
    a view of its first input, of that output's region."""
    results = [Tensor._make(np.asarray(o)) for o in outs]
    if (wants and op.differentiable and STATE.grad_enabled and not STATE.inference
            and any(t._data.dtype.kind in "fc" for t in results)):
        _record_multi(op, args, params, results)
    src = args[0] if args else None
    if op.regions is not None and isinstance(src, Tensor):
        for t, index in zip(results, op.regions(src._data.shape, **params)):
            mark_view(t, src, BASIC_INDEX_OPS[basic_index_kind(index, src._data.shape)],
                       {"index": index})
            if STATE.grad_enabled:  # torch's CreationMeta::MULTI_OUTPUT_NODE
                t._multi_view = True
    result = pack(op.result, results)
    if TRACING:
        for hook in HOOKS.ops:
            hook(op, args, params, result)
    if PROFILING:
        _profile_end(op, args, result)
    if FORWARD is not None:
        FORWARD(op, args, params, result, False)
    return result


def _record_multi(op, args: tuple, params: dict, results: list) -> None:
    node, needed = record_node(op, args, params)
    node.outs = tuple(SavedOutput(t) if "out" in needed or ("out", k) in needed
                      else shared_meta(t._data) for k, t in enumerate(results))
    # torch's node has the differentiable outputs only: output_nr counts those
    node.positions = tuple(k for k, t in enumerate(results) if t._data.dtype.kind in "fc")
    for nr, k in enumerate(node.positions):
        t = results[k]
        t._grad_fn, t._output_nr, t._requires_grad = node, nr, True
    if EXTRAS:
        new_node(node)


def apply_inplace(op, args: tuple, params: dict) -> Any:
    """``args[0] = op(*args)`` in place: bump the version, rebase grad_fn if recording."""
    self = args[0]
    if PROFILING:
        _profile_start(op)
    if self._multi_view:
        check_multi_view(self, args)
    if self._base is not None and self._view_version != self._vc.value:
        check_unread_view(self)
        refresh_view(self)
    check_inplace(self)
    check_overlap(self, args[1:])
    arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    if op.promote is not None:
        arrays = promoted(op, arrays, params)
    try:
        new = np.asarray(quietly(op.forward, *arrays, **params))
    except ValueError as e:
        raise messages.forward_error(e, arrays) from None
    # forward mode: the operands before the write (None when none carries a tangent)
    before = None if FORWARD is None else FORWARD(op, args, params, None, True)
    record = STATE.grad_enabled and op.differentiable and not STATE.inference and any(
        isinstance(a, Tensor) and a._requires_grad for a in args)
    if record:
        args = (old_value(op, args),) + tuple(args[1:])
        # made before the write, as torch saves its operands: an operand that is the
        # target (y *= y), or a view of it, is saved at the version the write changes
        node, needed = record_node(op, args, params)
        node.saved_out = "out" in needed  # (_rebase saves the written tensor)
    if TRACING:
        for hook in HOOKS.writes:
            hook(self)
    write_into(self, new)
    self._vc.value += 1
    if record:
        if self._base is None:
            rebase(self, node)
        else:
            rebase_view(self, node)
        if EXTRAS:
            new_node(node)
    if TRACING:
        for hook in HOOKS.ops:
            hook(op, args, params, self, inplace=True)
    if PROFILING:
        _profile_end(op, args, self)
    if before is not None:
        FORWARD(op, before, params, self, False)
    return self


