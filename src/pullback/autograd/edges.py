"""A tensor's edge into the graph, and the nodes ops record: ``grad_edge`` (with a
stale view's refresh), ``record_node`` (every op node's maker: its edges and what it
saves), ``view_node`` and ``mark_view`` (views and their shared version counter).
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..ops import Meta
from ..ops.writes import may_be_written, view_chain
from . import messages
from .grad_mode import STATE, new_node, on_node_extras
from .graph import AccumulateGrad, OpNode, SavedTensor, node_class
from .graph import _seq as _node_seq
from .tracer_hooks import own_copy

Tensor: Any = None  # the Tensor class (record.use_tensor_class)
#: anomaly mode or saved-tensor hooks are on somewhere (grad_mode.on_node_extras)
EXTRAS = False


def _set_extras(on: bool) -> None:
    global EXTRAS
    EXTRAS = on


on_node_extras(_set_extras)
_new = object.__new__
_next_seq = _node_seq.__next__

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


def shared_meta(x: np.ndarray) -> Meta:
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
#: the largest numpy array (bytes) a node copies when its rule reads it (an operand, an
#: index array): a larger one (a data matrix) is read by reference, as torch reads an
#: array it shares memory with, so a step over large data does not copy it
SAVED_COPY_LIMIT = 1 << 20


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
        if not isinstance(a, Tensor):  # (a numpy operand the rule reads: what it is now)
            saved.append(own_copy(a) if a.__class__ is np.ndarray and needed and i in needed
                         and a.nbytes <= SAVED_COPY_LIMIT and may_be_written(a) else a)
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
            saved.append(shared_meta(d) if m is None else m)
        i += 1
    cls = op.node_cls or node_class(op)
    node = _new(cls)  # cls(op, edges, params, saved, None), inlined
    node._edges = tuple(edges)
    node._seq = _next_seq()
    node._pre_hooks = node._post_hooks = node._tensor_hooks = node._retained = None
    node._metadata = None
    node._freed = False
    node.op = op
    node.params = _own_arrays(params) if params else params
    node.saved = tuple(saved)
    node.saved_out = None
    return node, needed


def _own_arrays(params: dict) -> dict:
    """``params`` with copies of the numpy arrays in it (an index array, a mask): the
    backward reads the values the forward read, whatever the program writes into them
    after (``idx[0] = 2`` between two uses of ``x[idx]``)."""
    for p in params.values():
        if p.__class__ is np.ndarray or p.__class__ in _SEQUENCES and _holds_array(p):
            return {k: _own(p) for k, p in params.items()}
    return params  # (most ops: shapes and axes, no array; nothing copied or made)


_SEQUENCES = (tuple, list)


def _holds_array(p: Any) -> bool:
    for x in p:
        if x.__class__ is np.ndarray or isinstance(x, _SEQUENCES) and _holds_array(x):
            return True
    return False


def _own(p: Any) -> Any:
    if p.__class__ is np.ndarray:
        return own_copy(p) if p.nbytes <= SAVED_COPY_LIMIT and may_be_written(p) \
            else p
    if isinstance(p, (tuple, list)):
        return p.__class__(_own(x) for x in p)
    return p


def mark_view(result: Any, src: Any, op, params: dict) -> None:
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


def view_node(base: Any, chain: tuple) -> OpNode:
    """The grad_fn of a view after its base was rebased (torch: AsStridedBackward0)."""
    cls = view_chain.node_cls or node_class(view_chain)
    node = cls(view_chain, (grad_edge(base),), {"chain": chain}, (shared_meta(base._data),), None)
    if EXTRAS:
        new_node(node)
    return node
