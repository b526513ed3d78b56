"""Running an op on Tensors: compute it on numpy, and record a node when grad is on.

``apply`` is the Tensor kind's dispatcher (see ops.registry.OpDef.__call__); ``apply_inplace``
is the in-place form with torch's leaf, view and version-counter rules.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import numpy as np

from .. import dtypes
from ..array_libraries import computed_error, kind_of_array
from ..ops import Meta
from ..ops.shape import BASIC_INDEX_OPS, basic_index_kind, view_chain
from ..ops.table.promotion import promoted
from ..ops.table.quiet import INSIDE, THREAD, context, quietly
from ..ops.table.results import pack
from . import graph as _graph
from . import inplace_checks, messages, saved_hooks
from .grad_mode import STATE, new_node, on_node_extras
from .graph import AccumulateGrad, CopySlices, OpNode, SavedOutput, SavedTensor, node_class
from .graph import _seq as _node_seq
from .inplace_checks import check_inplace, check_multi_view, check_overlap, check_unread_view

Tensor: Any = None  # the Tensor class: ``use_tensor_class`` (pullback.tensor calls it)


def use_tensor_class(cls: type) -> None:
    """Make ``cls`` the Tensor class of the autograd modules that make and test Tensors
    (this one, graph.py, saved_hooks.py, inplace_checks.py). ``pullback.tensor`` calls
    it once, as the class imports the autograd package, which therefore cannot import
    it: the one place the class is handed down."""
    global Tensor
    Tensor = _graph.Tensor = saved_hooks.Tensor = inplace_checks.Tensor = cls


class _Hooks(threading.local):
    """This thread's tracers (the compiler): ``ops`` each get (op, args, params, out),
    ``concrete`` each get (tensor, how) when a tensor's value becomes a Python value,
    ``writes`` each get the tensor an in-place op is about to write into; ``values``
    each tell whether a tensor is a value of their graph (not a constant)."""

    def __init__(self) -> None:
        self.ops: list = []
        self.concrete: list = []
        self.writes: list = []
        self.values: list = []


HOOKS = _Hooks()
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


def traced_value(t: Any) -> bool:
    """Whether a tracer of this thread records ``t`` as a value of its graph (computed
    in it; not a constant it would read as a literal)."""
    return bool(trace_hooks()) and any(knows(t) for knows in HOOKS.values)


def trace_hooks() -> list:
    """This thread's tracers' op hooks (empty when it is not tracing)."""
    return HOOKS.ops if TRACING else []


class _Gathering(threading.local):
    on = False


#: while on (a vmap's trace of one example), ``x[i]`` with a traced integer tensor ``i``
#: records a gather that reads ``i`` (every example's own index), not a guard on its value
GATHERING = _Gathering()


class gathering:
    """Inside it, this thread's tensor indices are gathers (see ``GATHERING``)."""

    def __enter__(self) -> None:
        self.saved = GATHERING.on
        GATHERING.on = True

    def __exit__(self, *exc: object) -> None:
        GATHERING.on = self.saved


class untraced:
    """Inside it this thread's tracers see no op and no conversion (a custom
    Function's forward and backward are one opaque step of the trace)."""

    def __enter__(self) -> None:
        self.saved = HOOKS.ops, HOOKS.concrete, HOOKS.writes
        HOOKS.ops, HOOKS.concrete, HOOKS.writes = [], [], []

    def __exit__(self, *exc: object) -> None:
        HOOKS.ops, HOOKS.concrete, HOOKS.writes = self.saved


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


class _Transforms(threading.local):
    """The functional transforms (``pb.grad``, ``pb.vjp``, ``pb.jvp``...) this thread
    runs the user's function under, innermost last, by name; None stands for code
    allowed to convert values (an effect's formatting, a custom Function)."""

    def __init__(self) -> None:
        self.stack: list = []


TRANSFORMS = _Transforms()
#: scopes open now (any thread): conversions read TRANSFORMS only while it is not 0
TRANSFORMING = 0
#: the compiler's (compiler/conversions.py): ``(tensor, how, transform)`` -> the error
#: that names the user's line, or None where the value's use loses no gradient
conversion_error: Any = None


class transform_scope:
    """Inside it, this thread runs the user's function for the functional transform
    ``name`` (None: conversions are allowed again, as an effect's formatting needs):
    ``check_conversion`` refuses the conversions that would drop a gradient."""

    def __init__(self, name: str | None) -> None:
        self.name = name

    def __enter__(self) -> None:
        global TRANSFORMING
        TRANSFORMS.stack.append(self.name)
        with _TRACING_LOCK:
            TRANSFORMING += 1

    def __exit__(self, *exc: object) -> None:
        global TRANSFORMING
        with _TRACING_LOCK:
            TRANSFORMING -= 1
        TRANSFORMS.stack.pop()


def check_conversion(t: Any, how: str) -> None:
    """Refuse ``how`` (``float``, ``complex``, ``item``, ``tolist``) of ``t`` inside a
    functional transform when ``t`` carries a gradient (requires grad with grad mode on,
    or has a forward tangent): the Python value would be a constant to the transform,
    its gradient silently lost. Outside one, a trace (``pb.compile``'s) is told of the
    cut (``transform`` None), which its variant refuses to run inside one. Callers test
    ``TRANSFORMING or TRACING`` first (the hot path)."""
    stack = TRANSFORMS.stack
    inside = bool(stack) and stack[-1] is not None
    if not (inside or TRACING):
        return
    if (t._requires_grad and STATE.grad_enabled) or t._fw_tangent is not None:
        outer = next(name for name in stack if name is not None) if inside else None
        error = conversion_error(t, how, outer)  # (None: its use cuts nothing)
        if error is not None:
            raise error


class VersionCounter:
    """Shared by a tensor, its views and detach(); bumped by every in-place op.

    ``value`` starts as the class default, so making one is a bare allocation (every
    op's result gets one); the first bump stores it on the instance.
    """

    __slots__ = ("__dict__",)
    value = 0


def grad_edge(t: Any) -> tuple:
    """The (node, output_nr) a gradient for ``t`` flows into; (None, 0) if none."""
    if t._base is not None and t._view_version != t._vc.value:
        refresh_view(t)
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    if t._requires_grad:
        if t._view_no_grad and t._base is not None:
            return (None, 0)  # torch: requires grad through its base, but has no sink
        return (accumulator(t), 0)
    return (None, 0)


def accumulator(t: Any) -> AccumulateGrad:
    """The leaf's AccumulateGrad node: the same object while any graph holds it."""
    ref = t._accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t._accumulator = weakref.ref(acc)
    return acc


def refresh_view(t: Any) -> None:
    """A view whose base (or a sibling view) was modified in place since its grad_fn
    was set gets a new one reading the base's current history (torch:
    AsStridedBackward0). Callers check ``t._view_version != t._vc.value`` first."""
    base = t._base
    if t._grad_fn is None and not base._requires_grad:
        t._view_version = t._vc.value
        return
    if t._multi_view:  # torch refuses it on every read, while the versions differ
        raise RuntimeError(messages.multi_view(t, indirect=True))
    t._view_version = t._vc.value
    if t._view_no_grad:
        raise RuntimeError(messages.NO_GRAD_VIEW_BASE_MODIFIED)
    set_grad_fn(t, view_node(base, t._view_chain))
    t._requires_grad = True


def _meta(x: np.ndarray) -> Meta:
    """Meta(x.shape, x.dtype), shared: a Meta never changes, and most nodes keep one."""
    k = (x.shape, x.dtype)
    m = _METAS.get(k)
    if m is None:
        if len(_METAS) > 4096:
            _METAS.clear()
        m = _METAS[k] = Meta(*k)
    return m


_METAS: dict = {}


#: op -> {mask of inputs that need grad: what the node saves (input positions, 'out')}
_NEEDED: dict = {}


def _needed(op, mask: int) -> frozenset:
    """What a node of ``op`` saves when the inputs in ``mask`` (bit i: input i) need grad."""
    table = _NEEDED.get(op)
    if table is None:
        table = _NEEDED[op] = {}
    needed = table.get(mask)
    if needed is None:
        uses = op.uses
        if op.variadic:  # one rule, for every position
            needed = uses[0] if mask else frozenset()
        else:
            needed = frozenset().union(*(uses[i] for i in range(len(uses)) if mask >> i & 1))
        outs = {u for spec in uses for u in spec if u == "out" or type(u) is tuple}
        if mask and outs:
            # torch saves the result whenever a rule reads it, whichever inputs need
            # grad (x ** y keeps it for y's rule even when only x needs grad)
            needed |= outs
        table[mask] = needed
    return needed


_NO_EDGE = (None, 0)
_new = object.__new__
_weakref = weakref.ref
_next_seq = _node_seq.__next__


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
        if TRACING:  # (a trace holding stand-ins of its inputs is made again on values)
            for a in args:
                notify_concrete(a, "error")
        if isinstance(e, ValueError):
            raise _forward_error(e, arrays) from None
        raise
    if type(out) is not np.ndarray:
        if op.multi:
            return _apply_multi(op, args, params, out, wants)
        if TRACING and not isinstance(out, np.generic) and kind_of_array(out) is not None:
            # (a traced function read a Dask array from a global or a closure: refused
            # rather than computed; eager ops outside traces ask for numpy Tensors)
            raise computed_error(op.name, kind_of_array(out))
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
            _mark_view(result, args[0], op, params)
    if TRACING:
        for hook in HOOKS.ops:
            hook(op, args, params, result)
    if PROFILING:
        _profile_end(op, args, result)
    if FORWARD is not None:  # (after the tracers: the tangent's ops read the result)
        FORWARD(op, args, params, result, False)
    return result


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
        _mark_view(result, args[0], op, params)
    if "out" in needed:  # SavedOutput(result), inlined
        so = node.saved_out = _new(SavedOutput)
        so.data = out
        so.vc = result._vc
        so.version = 0
        so.ref = _weakref(result)
    if EXTRAS:
        new_node(node)
    return result


def record_node(op, args: tuple, params: dict) -> tuple:
    """The node of an op being recorded, and what it saves (input positions, 'out'):
    edges, then what the rules of the inputs that need grad read, the rest as shapes.
    The one function that makes op nodes (one result, several, an in-place write);
    the caller saves the output and sets the results' ``grad_fn``. (grad_edge, _save
    and the node's constructor are inlined: this runs once per recorded op.)"""
    edges = []
    mask = 0
    bit = 1
    for a in args:
        if isinstance(a, Tensor):
            if a._base is not None:
                e = grad_edge(a)
                edges.append(e)
                if e[0] is not None:
                    mask |= bit
            elif a._grad_fn is not None:
                edges.append((a._grad_fn, a._output_nr))
                mask |= bit
            elif a._requires_grad:  # a leaf: its AccumulateGrad, alive while a graph holds it
                ref = a._accumulator
                acc = ref() if ref is not None else None
                edges.append((accumulator(a) if acc is None else acc, 0))
                mask |= bit
            else:
                edges.append(_NO_EDGE)
        else:
            edges.append(_NO_EDGE)
        bit <<= 1
    table = _NEEDED.get(op)
    needed = table.get(mask) if table is not None else None
    if needed is None:
        needed = _needed(op, mask)
    saved = []
    i = 0
    for a in args:
        if not isinstance(a, Tensor):
            saved.append(a)
        elif needed and i in needed:
            if a._is_inference:
                raise RuntimeError(messages.INFERENCE_SAVE)
            st = _new(SavedTensor)
            st.tensor = a
            st.version = a._vc.value
            saved.append(st)
        else:  # a rule reads only its shape
            d = a._data
            m = _METAS.get((d.shape, d.dtype))
            saved.append(_meta(d) if m is None else m)
        i += 1
    cls = op.node_cls or node_class(op)
    node = _new(cls)  # cls(op, edges, params, saved, None), inlined
    node._edges = tuple(edges)
    node._seq = _next_seq()
    node._pre_hooks = node._post_hooks = node._tensor_hooks = node._retained = None
    node._metadata = None
    node._freed = False
    node.op = op
    node.params = params
    node.saved = tuple(saved)
    node.saved_out = None
    return node, needed


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
            _mark_view(t, src, BASIC_INDEX_OPS[basic_index_kind(index, src._data.shape)],
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
                      else _meta(t._data) for k, t in enumerate(results))
    # torch's node has the differentiable outputs only: output_nr counts those
    node.positions = tuple(k for k, t in enumerate(results) if t._data.dtype.kind in "fc")
    for nr, k in enumerate(node.positions):
        t = results[k]
        t._grad_fn, t._output_nr, t._requires_grad = node, nr, True
    if EXTRAS:
        new_node(node)


def _mark_view(result: Any, src: Any, op, params: dict) -> None:
    """Views share their base's version counter and remember how they were taken."""
    if not isinstance(src, Tensor):
        return
    base = src._base if src._base is not None else src
    result._base = base
    result._vc = src._vc
    result._view_chain = src._view_chain + ((op, params),)
    result._view_version = src._vc.value
    if src._is_inference:
        result._is_inference = True
    if not STATE.grad_enabled:
        result._view_no_grad = True
        if src._requires_grad:  # torch: a view taken under no_grad keeps requires_grad
            result._requires_grad = True
    elif src._view_no_grad:
        result._view_no_grad = True
    elif src._multi_view:  # a view of an output of split & co. inherits its refusals
        result._multi_view = True


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
        raise _forward_error(e, arrays) from None
    # forward mode: the operands before the write (None when none carries a tangent)
    before = None if FORWARD is None else FORWARD(op, args, params, None, True)
    record = STATE.grad_enabled and op.differentiable and not STATE.inference and any(
        isinstance(a, Tensor) and a._requires_grad for a in args)
    if record:
        args = (_old_value(op, args),) + tuple(args[1:])
        # made before the write, as torch saves its operands: an operand that is the
        # target (y *= y), or a view of it, is saved at the version the write changes
        node, needed = record_node(op, args, params)
        node.saved_out = "out" in needed  # (_rebase saves the written tensor)
    if TRACING:
        for hook in HOOKS.writes:
            hook(self)
    _write(self, new)
    self._vc.value += 1
    if record:
        if self._base is None:
            _rebase(self, node)
        else:
            _rebase_view(self, node)
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


def _old_value(op, args: tuple) -> Any:
    """The target's value before an in-place write, at the graph position it had
    (copied only if a rule of an input that needs grad reads it)."""
    self = args[0]
    reads_self = any(0 in op.uses[i] for i, a in enumerate(args)
                     if isinstance(a, Tensor) and a._requires_grad)
    old = Tensor._make(self._data.copy() if reads_self else self._data,
                       grad_fn=self._grad_fn, requires_grad=self._requires_grad)
    old._output_nr = self._output_nr
    return old


def set_grad_fn(t: Any, node: Any) -> None:
    """Give ``t`` a new history (in-place rebase, view refresh). Tensor hooks stay
    with the old node; retain_grad moves to the new one, as in torch."""
    if t._retains_grad:
        old = t._grad_fn
        if old is not None and old._retained is not None:
            old._retained.pop(t._output_nr, None)
        if node._retained is None:
            node._retained = {}
        node._retained[0] = weakref.ref(t)
    t._grad_fn = node
    t._output_nr = 0


def _write(t: Any, new: np.ndarray) -> None:
    """Copy an in-place op's result into ``t``'s storage, with torch's checks."""
    dst = t._data
    if new.shape != dst.shape and _broadcast(new.shape, dst.shape) != dst.shape:
        raise RuntimeError(f"output with shape {messages.size_str(dst.shape)} doesn't match "
                           f"the broadcast shape {messages.size_str(new.shape)}")
    if new.dtype != dst.dtype and not np.can_cast(new.dtype, dst.dtype, "same_kind"):
        raise RuntimeError(f"result type {dtypes.as_dtype(new.dtype)._scalar_name} can't be "
                           "cast to the desired output type "
                           f"{dtypes.as_dtype(dst.dtype)._scalar_name}")
    np.copyto(dst, new, casting="unsafe")


def _forward_error(e: ValueError, arrays: list) -> Exception:
    """numpy's broadcasting failure worded as torch words it (other errors unchanged)."""
    if "broadcast" not in str(e):
        return e
    shapes = [a.shape for a in arrays if isinstance(a, np.ndarray)]
    for i, a in enumerate(shapes):
        for b in shapes[i + 1:]:
            n = max(len(a), len(b))
            for d in range(n - 1, -1, -1):
                sa = a[d - n + len(a)] if d - n + len(a) >= 0 else 1
                sb = b[d - n + len(b)] if d - n + len(b) >= 0 else 1
                if sa != sb and sa != 1 and sb != 1:
                    return RuntimeError(f"The size of tensor a ({sa}) must match the size of "
                                        f"tensor b ({sb}) at non-singleton dimension {d}")
    return e


def _broadcast(a: tuple, b: tuple) -> tuple | None:
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def _rebase(t: Any, node: OpNode) -> None:
    set_grad_fn(t, node)
    t._requires_grad = True
    node.saved_out = SavedOutput(t) if node.saved_out else None


def _rebase_view(view: Any, inner: OpNode) -> None:
    """An in-place write through a view: the base's grad_fn becomes CopySlices."""
    base = view._base
    inner.saved_out = SavedOutput(view) if inner.saved_out else None
    node = CopySlices(grad_edge(base), inner, view._view_chain)
    set_grad_fn(base, node)
    base._requires_grad = True
    set_grad_fn(view, view_node(base, view._view_chain))
    view._requires_grad = True
    view._view_version = view._vc.value


def view_node(base: Any, chain: tuple) -> OpNode:
    """The grad_fn of a view after its base was rebased (torch: AsStridedBackward0)."""
    cls = view_chain.node_cls or node_class(view_chain)
    node = cls(view_chain, (grad_edge(base),), {"chain": chain}, (_meta(base._data),), None)
    if EXTRAS:
        new_node(node)
    return node
