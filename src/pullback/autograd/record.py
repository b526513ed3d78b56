"""Running an op on Tensors: compute it on numpy, and record a node when grad is on.

``apply`` is the Tensor kind's dispatcher (see ops.registry.call); ``apply_inplace``
is the in-place form with torch's leaf, view and version-counter rules.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops.registry import Meta
from . import messages
from .graph import AccumulateGrad, OpNode, SavedOutput, SavedTensor, node_class
from .grad_mode import STATE

Tensor: Any = None  # set by pullback.tensor (the class imports this module)
TRACE_HOOKS: list = []  # active tracers (compiler): each gets (op, args, params, out)


class VersionCounter:
    """Shared by a tensor, its views and detach(); bumped by every in-place op."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


def grad_edge(t: Any) -> tuple:
    """The (node, output_nr) a gradient for ``t`` flows into; (None, 0) if none."""
    if t._grad_fn is not None:
        return (t._grad_fn, t._output_nr)
    if t._requires_grad:
        return (accumulator(t), 0)
    return (None, 0)


def accumulator(t: Any) -> AccumulateGrad:
    """The leaf's AccumulateGrad node: the same object while any graph holds it."""
    ref = t._accumulator
    acc = ref() if ref is not None else None
    if acc is None:
        import weakref
        acc = AccumulateGrad(t)
        t._accumulator = weakref.ref(acc)
    return acc


def _save(a: Any, i: int, needed: set) -> Any:
    if type(a) is not Tensor and not isinstance(a, Tensor):
        return a
    if i not in needed:
        return Meta(a._data.shape, a._data.dtype)
    if a._is_inference:
        raise RuntimeError(messages.INFERENCE_SAVE)
    return SavedTensor(a)


def make_node(op, args: tuple, params: dict, edges: tuple) -> OpNode:
    """A node for ``op`` saving what the rules of the inputs that need grad read."""
    uses = op.uses
    needed: set = set()
    for i, e in enumerate(edges):
        if e[0] is not None:
            needed |= uses[i]
    cls = op.node_cls
    if cls is None:
        cls = op.node_cls = node_class(op.grad_fn)
    node = cls(op, edges, params, tuple(_save(a, i, needed) for i, a in enumerate(args)), None)
    node.saved_out = "out" in needed  # replaced by the SavedOutput once the output exists
    return node


def apply(op, args: tuple, params: dict) -> Any:
    """Run ``op`` on Tensors (and scalars/arrays), recording a node if grad is needed."""
    arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    out = op.forward(*arrays, **params)
    if type(out) is not np.ndarray:
        out = np.asarray(out)
    requires = False
    if STATE.grad_enabled and op.differentiable:
        for a in args:
            if isinstance(a, Tensor) and a._requires_grad:
                requires = out.dtype.kind in "fc"  # integer results never require grad
                break
    if requires:
        node = make_node(op, args, params, tuple(
            grad_edge(a) if isinstance(a, Tensor) else (None, 0) for a in args))
        result = Tensor._make(out, grad_fn=node)
        if node.saved_out:
            node.saved_out = SavedOutput(result)
        else:
            node.saved_out = None
    else:
        result = Tensor._make(out)
    if op.is_view:
        _mark_view(result, args[0], op, params)
    if TRACE_HOOKS:
        for hook in TRACE_HOOKS:
            hook(op, args, params, result)
    return result


def _mark_view(result: Any, src: Any, op, params: dict) -> None:
    """Views share their base's version counter and remember how they were taken."""
    if not isinstance(src, Tensor):
        return
    base = src._base if src._base is not None else src
    result._base = base
    result._vc = src._vc
    result._view_chain = src._view_chain + ((op, params),)
    if not STATE.grad_enabled:
        result._view_no_grad = True
        if src._requires_grad:  # torch: a view taken under no_grad keeps requires_grad
            result._requires_grad = True
    elif src._view_no_grad:
        result._view_no_grad = True


def check_inplace(t: Any) -> None:
    """torch's refusals for an in-place op on ``t`` (before any data is written)."""
    if t._is_inference and not STATE.inference:
        raise RuntimeError(messages.INFERENCE_INPLACE)
    if not STATE.grad_enabled:
        return
    base = t._base
    if base is None:
        if t._requires_grad and t._grad_fn is None:
            raise RuntimeError(messages.LEAF_INPLACE)
        return
    if t._view_no_grad and base._requires_grad:
        raise RuntimeError(messages.NO_GRAD_VIEW_INPLACE)
    if base._requires_grad and base._grad_fn is None:
        raise RuntimeError(messages.VIEW_LEAF_INPLACE)


def apply_inplace(op, args: tuple, params: dict) -> Any:
    """``args[0] = op(*args)`` in place: bump the version, rebase grad_fn if recording."""
    self = args[0]
    check_inplace(self)
    arrays = [a._data if isinstance(a, Tensor) else a for a in args]
    new = op.forward(*arrays, **params)
    record = STATE.grad_enabled and op.differentiable and any(
        isinstance(a, Tensor) and a._requires_grad for a in args)
    if record:
        # the value before the write, at the graph position it had
        old = Tensor._make(self._data.copy(), grad_fn=self._grad_fn,
                           requires_grad=self._requires_grad)
        old._output_nr = self._output_nr
        args = (old,) + tuple(args[1:])
    try:
        np.copyto(self._data, new, casting="same_kind")
    except TypeError:
        raise RuntimeError(f"result type {np.result_type(new).name} can't be cast to the "
                           f"desired output type {self._data.dtype.name}") from None
    except ValueError as e:
        raise RuntimeError(f"{op.name}_(): {e}") from None
    self._vc.value += 1
    if record:
        edges = tuple(grad_edge(a) if isinstance(a, Tensor) else (None, 0) for a in args)
        node = make_node(op, args, params, edges)
        if self._base is None:
            _rebase(self, node)
        else:
            _rebase_view(self, node)
    if TRACE_HOOKS:
        for hook in TRACE_HOOKS:
            hook(op, args, params, self, inplace=True)
    return self


def _rebase(t: Any, node: OpNode) -> None:
    t._grad_fn = node
    t._output_nr = 0
    t._requires_grad = True
    node.saved_out = SavedOutput(t) if node.saved_out else None


def _rebase_view(view: Any, inner: OpNode) -> None:
    """An in-place write through a view: the base's grad_fn becomes CopySlices."""
    from .copyslices import CopySlices, view_node
    base = view._base
    inner.saved_out = SavedOutput(view) if inner.saved_out else None
    node = CopySlices(grad_edge(base), inner, view._view_chain, base._data)
    base._grad_fn = node
    base._output_nr = 0
    base._requires_grad = True
    view._grad_fn = view_node(base, view._view_chain)
    view._output_nr = 0
    view._requires_grad = True
