"""Graph nodes (grad_fn objects), saved values and hook handles.

A node's ``next_functions`` holds one ``(node, output_nr)`` edge per input of the
forward op; ``(None, 0)`` marks an input that needs no gradient.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable

import numpy as np

from ..ops import Meta, OpDef, complete, vjp_per_input
from ..ops.table.results import pack
from ..ops.writes import copy, view_chain, view_scatter
from . import messages
from .anomaly_mode import is_anomaly_enabled
from .grad_mode import STATE, new_node, on_node_extras
from .saved_hooks import (  # noqa: F401
    PackedOutput,
    PackedTensor,
    disable_saved_tensors_hooks,
    save_on_cpu,
    saved_tensors_hooks,
)

_seq = itertools.count()
Tensor: Any = None  # set by pullback.tensor (which imports this module)


class RemovableHandle:
    """Returned by every ``register_*hook``; ``remove()`` may be called again safely."""

    _ids = itertools.count()
    __slots__ = ("_table", "id")

    def __init__(self, table: dict) -> None:
        self._table = weakref.ref(table) if _weakrefable(table) else (lambda: table)
        self.id = next(RemovableHandle._ids)

    def remove(self) -> None:
        table = self._table()
        if table is not None:
            table.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


def _weakrefable(obj: object) -> bool:
    try:
        weakref.ref(obj)
        return True
    except TypeError:
        return False


#: set once any hook or retain_grad was registered in this process (until then the
#: cached backward's walk skips looking for hooks on every node); see note_hooks
hooks_seen = False


def note_hooks() -> None:
    """Record that a hook or retain_grad exists somewhere from now on."""
    global hooks_seen
    hooks_seen = True


class HookDict(dict):
    """A dict of hooks in registration order (weak-referenceable for handles)."""

    __slots__ = ("__weakref__",)

    def add(self, fn: Callable) -> RemovableHandle:
        note_hooks()
        handle = RemovableHandle(self)
        self[handle.id] = fn
        return handle


class Node:
    """Base of every grad_fn. Subclasses implement ``apply(grads, needs, create_graph)``."""

    __slots__ = ("_edges", "_seq", "_pre_hooks", "_post_hooks", "_tensor_hooks",
                 "_retained", "_metadata", "_freed", "__weakref__")
    _qualname: str | None = None  # torch's namespaced name() for special C++ nodes

    def __init__(self, edges: tuple) -> None:
        self._edges = edges
        self._seq = next(_seq)
        self._pre_hooks = self._post_hooks = None
        self._tensor_hooks = self._retained = None
        self._metadata = None
        self._freed = False
        if EXTRAS:
            new_node(self)

    # --- torch's Node API ------------------------------------------------------------
    def name(self) -> str:
        return self._qualname or type(self).__name__

    @property
    def next_functions(self) -> tuple:
        return self._edges

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def register_hook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_inputs, grad_outputs)`` runs after the node; may return new grad_inputs."""
        if self._post_hooks is None:
            self._post_hooks = HookDict()
        return self._post_hooks.add(fn)

    def register_prehook(self, fn: Callable) -> RemovableHandle:
        """``fn(grad_outputs)`` runs before the node; may return new grad_outputs."""
        if self._pre_hooks is None:
            self._pre_hooks = HookDict()
        return self._pre_hooks.add(fn)

    def __call__(self, *grads: Any) -> Any:
        """Run the node on gradients directly (as torch allows); in grad mode the
        result is differentiable, like a backward with create_graph=True."""
        n = self.num_outputs
        if len(grads) != n:
            raise TypeError(f"expected {n} arguments, got {len(grads)} instead")
        create_graph = STATE.grad_enabled
        grads = [g if create_graph or not isinstance(g, Tensor) else g._data for g in grads]
        out = self.apply(list(grads), [e[0] is not None for e in self._edges], create_graph)
        out = tuple(o if o is None or isinstance(o, Tensor) else Tensor._make(np.asarray(o))
                    for o in out)
        return out[0] if len(out) == 1 else out

    @property
    def num_outputs(self) -> int:
        return 1

    def __repr__(self) -> str:
        return f"<{type(self).__name__} object at {hex(id(self))}>"

    # --- engine interface ------------------------------------------------------------
    def tensor_hooks(self, output_nr: int) -> dict | None:
        return None if self._tensor_hooks is None else self._tensor_hooks.get(output_nr)

    def add_tensor_hook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        if self._tensor_hooks is None:
            self._tensor_hooks = {}
        return self._tensor_hooks.setdefault(output_nr, HookDict()).add(fn)

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        """The gradients for ``next_functions`` given those of the outputs (``needs[i]``
        says whether edge i wants one). Every concrete node class overrides this."""
        raise TypeError(f"{self.name()} is an abstract node: it has no backward")

    def release(self) -> None:
        """Free saved values after a backward without retain_graph."""

    def _pack_saved(self, hooks: tuple) -> None:
        """Saved-tensor hooks are on: keep ``pack(t)`` of each saved tensor instead."""


#: anomaly mode or saved-tensor hooks are on somewhere: new nodes run grad_mode.new_node
EXTRAS = False


def _set_extras(on: bool) -> None:
    global EXTRAS
    EXTRAS = on


on_node_extras(_set_extras)


class SavedTensor:
    """A tensor kept for backward, with the version it had when it was saved."""

    __slots__ = ("tensor", "version")

    def __init__(self, tensor: Any) -> None:
        self.tensor = tensor
        self.version = tensor._vc.value

    def unpack(self, create_graph: bool) -> Any:
        t = self.tensor
        if t._vc.value != self.version:
            SavedTensor.check(t, self.version)
        return t if create_graph else t._data

    @staticmethod
    def check(t: Any, version: int) -> None:
        """Raise torch's error if ``t`` was modified in place since ``version``."""
        if t._vc.value != version:
            raise RuntimeError(messages.modified_inplace(
                t._data, t._vc.value, version, t._grad_fn, anomaly=is_anomaly_enabled()))


class SavedOutput:
    """An op's own output kept for backward: holds the data and a weak link to the
    tensor (a strong one would make a cycle tensor -> grad_fn -> tensor)."""

    __slots__ = ("data", "vc", "version", "ref")

    def __init__(self, tensor: Any) -> None:
        self.data = tensor._data
        self.vc = tensor._vc
        self.version = tensor._vc.value
        self.ref = weakref.ref(tensor)

    def unpack(self, create_graph: bool, node: Node) -> Any:
        t = self.ref()
        if self.vc.value != self.version:
            raise RuntimeError(messages.modified_inplace(
                self.data, self.vc.value, self.version, node, anomaly=is_anomaly_enabled()))
        if not create_graph:
            return self.data
        if t is None or t._grad_fn is not node:
            t = Tensor._make(self.data, grad_fn=node, vc=self.vc)
        return t


class OpNode(Node):
    """The node of one primitive op from the table; its class name is torch's."""

    __slots__ = ("op", "params", "saved", "saved_out")

    def __init__(self, op, edges: tuple, params: dict, saved: tuple, saved_out) -> None:
        self._edges = edges  # Node.__init__ inlined: one node per recorded op
        self._seq = next(_seq)
        self._pre_hooks = self._post_hooks = self._tensor_hooks = self._retained = None
        self._metadata = None
        self._freed = False
        self.op = op
        self.params = params
        self.saved = saved
        self.saved_out = saved_out

    def unpack(self, create_graph: bool) -> tuple:
        if self._freed:
            raise RuntimeError(messages.SECOND_BACKWARD)
        vals = tuple(s.unpack(create_graph) if type(s) in _UNPACKS else s
                     for s in self.saved)
        out = self.saved_out
        if out is not None:
            out = out.unpack(create_graph, self)
        return out, vals

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        if grads[0] is None:  # an undefined gradient (gradcheck's check of them) gives none
            return [None] * len(self._edges)
        out, vals = self.unpack(create_graph)
        return vjp_per_input(self.op, grads[0], out, vals, self.params, needs)

    def release(self) -> None:
        """Free what was saved. torch also saves Python-scalar operands (as wrapped
        tensors), so a node whose rules read anything counts as freed afterwards."""
        if self._freed:
            return
        uses, variadic = self.op.uses, self.op.variadic
        for i, e in enumerate(self._edges):
            if e[0] is not None and uses[0 if variadic else i]:
                break
        else:
            return
        self._freed = True
        self.saved = tuple(None if type(s) in _UNPACKS else s for s in self.saved)
        self.saved_out = None

    def _pack_saved(self, hooks: tuple) -> None:
        # a saved input's history is the node's edge for it (the saved tuple has one
        # entry per input, like the edges)
        self.saved = tuple(PackedTensor(s.tensor, hooks, e if e[0] is not None else None)
                           if type(s) is SavedTensor else s
                           for s, e in zip(self.saved, self._edges))
        so = self.saved_out
        t = so.ref() if type(so) is SavedOutput else None
        if t is not None:
            self.saved_out = PackedOutput(t, hooks, 0)

    def _saved(self, arg: str) -> Any:
        """torch's ``_saved_<arg>`` accessor (``_saved_self``, ``_saved_result``...)."""
        names, outputs = self.op.torch_args, self.op.output_names
        if arg in outputs and any(("out", outputs.index(arg)) in u for u in self.op.uses):
            return self._saved_output(outputs.index(arg))  # an output its rules read
        if arg != "result" and arg not in names[:len(self.saved)]:
            raise AttributeError(
                f"'{type(self).__name__}' object has no attribute '_saved_{arg}'")
        if self._freed:
            raise RuntimeError(messages.SECOND_BACKWARD)
        if arg == "result":
            return None if self.saved_out is None else self.saved_out.unpack(True, self)
        s = self.saved[names.index(arg)]
        if type(s) in _UNPACKS:
            return s.unpack(True)
        if s is None or isinstance(s, Meta):
            return None
        return Tensor._make(np.asarray(s))  # a wrapped Python scalar, as torch keeps it


_UNPACKS = frozenset({SavedTensor, PackedTensor})  # saved entries that unpack to a tensor


class MultiOpNode(OpNode):
    """The node of an op with several outputs (split, sort). As in torch, its outputs
    are the op's differentiable (float) ones: ``positions[nr]`` is the op's output whose
    output_nr is ``nr`` (sort's values are output 0 of one; its indices have no node).
    ``outs`` has, per output of the op, a SavedOutput if a rule reads it, else its
    Meta; the rules get zeros for the float outputs no gradient reached."""

    __slots__ = ("outs", "positions")

    @property
    def num_outputs(self) -> int:
        return len(self.positions)

    def spread(self, grads: list) -> list:
        """The gradients by the op's output positions (None at the others)."""
        full = [None] * len(self.outs)
        for nr, k in enumerate(self.positions):
            full[k] = grads[nr]
        return full

    def unpack(self, create_graph: bool) -> tuple:
        out, vals = OpNode.unpack(self, create_graph)
        outs = [self._unpack_output(k, create_graph) for k in range(len(self.outs))]
        return pack(self.op.result, outs), vals

    def _unpack_output(self, k: int, create_graph: bool) -> Any:
        o = self.outs[k]
        if type(o) is PackedOutput:  # (saved-tensor hooks packed it)
            return o.unpack(create_graph, self)
        if type(o) is PackedTensor:
            return o.unpack(create_graph)
        if type(o) is not SavedOutput:
            return o
        differentiable = o.data.dtype.kind in "fc"
        nr = self.positions.index(k) if differentiable else 0
        if o.vc.value != o.version:  # (torch names no node for an integer output)
            raise RuntimeError(messages.modified_inplace(
                o.data, o.vc.value, o.version, self if differentiable else None, nr,
                anomaly=is_anomaly_enabled()))
        if not create_graph:
            return o.data
        t = o.ref()
        if t is not None and (t._grad_fn is self or not differentiable):
            return t
        t = Tensor._make(o.data, grad_fn=self if differentiable else None, vc=o.vc)
        t._output_nr = nr
        return t

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        if all(g is None for g in grads):  # undefined gradients give none
            return [None] * len(self._edges)
        out, vals = self.unpack(create_graph)
        g = complete(self.op, self.spread(grads), out, _zeros)
        return vjp_per_input(self.op, g, out, vals, self.params, needs)

    def release(self) -> None:
        OpNode.release(self)
        if self._freed:
            self.outs = tuple(Meta(o.data.shape, o.data.dtype) if type(o) is SavedOutput
                              else None if type(o) in _PACKED_OUTS else o for o in self.outs)

    def _pack_saved(self, hooks: tuple) -> None:
        OpNode._pack_saved(self, hooks)
        outs = []
        for k, o in enumerate(self.outs):
            t = o.ref() if type(o) is SavedOutput else None
            if t is None:
                outs.append(o)
            elif o.data.dtype.kind in "fc":
                outs.append(PackedOutput(t, hooks, self.positions.index(k)))
            else:  # an integer output (sort's indices): no history
                outs.append(PackedTensor(t, hooks, None))
        self.outs = tuple(outs)

    def _saved_output(self, k: int) -> Any:
        if self._freed:
            raise RuntimeError(messages.SECOND_BACKWARD)
        return (self._unpack_output(k, True)
                if type(self.outs[k]) in (SavedOutput, *_PACKED_OUTS) else None)


_PACKED_OUTS = (PackedOutput, PackedTensor)


def _zeros(shape: tuple, dtype: Any) -> np.ndarray:
    return np.zeros(shape, dtype)


class AccumulateGrad(Node):
    """The sink of a leaf that requires grad: adds incoming gradients into ``.grad``."""

    __slots__ = ("variable",)
    _qualname = "torch::autograd::AccumulateGrad"

    def __init__(self, variable: Any) -> None:
        Node.__init__(self, ())
        self.variable = variable

    def tensor_hooks(self, output_nr: int) -> dict | None:
        return self.variable._hooks

    def add_tensor_hook(self, output_nr: int, fn: Callable) -> RemovableHandle:
        v = self.variable
        if v._hooks is None:
            v._hooks = HookDict()
        return v._hooks.add(fn)

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        if grads[0] is None:
            return []
        accumulate(self.variable, grads[0], create_graph)
        hooks = self.variable._post_acc_hooks
        if hooks:
            for fn in list(hooks.values()):
                fn(self.variable)
        return []


def accumulate(t: Any, g: Any, create_graph: bool) -> None:
    """``t.grad += g`` as torch's AccumulateGrad does it: the first gradient is copied
    (under create_graph through a differentiable copy, CopyBackwards); later ones are
    added in place, or out of place under create_graph."""
    old = t._grad
    if create_graph:
        if not isinstance(g, Tensor):
            g = Tensor._make(np.asarray(g))
        if old is None:
            t._grad = copy(Tensor._make(np.empty_like(t._data)), g)
            t._grad._vc.value = 1  # torch writes it with copy_
        else:
            t._grad = old + g
        return
    data = g if type(g) is np.ndarray else getattr(g, "_data", g)
    if old is None:
        t._grad = Tensor._make(np.array(data, dtype=t._data.dtype))
    else:
        np.add(old._data, data, out=old._data, casting="unsafe")
        old._vc.value += 1


# torch's ``_saved_<name>`` accessors, as properties: a ``__getattr__`` on the node class
# would slow down every attribute read of every node (the engine's and the recorder's)
def _saved_accessors(names: tuple) -> None:
    """``_saved_<arg>`` for torch argument names (properties: a ``__getattr__`` on the
    node class would slow down every attribute read of every node)."""
    for arg in names:
        if not hasattr(OpNode, "_saved_" + arg):
            setattr(OpNode, "_saved_" + arg, property(lambda node, _a=arg: node._saved(_a)))


_saved_accessors(("result", "self", "other"))

#: (torch's node name, several outputs) -> its class: one op with several outputs and one
#: with a single output may share torch's name (linalg.svd and linalg.svdvals)
_node_classes: dict[tuple, type] = {}
#: name() of nodes torch implements in C++ by hand (their type name is the short one)
_QUALNAMES = {"CopyBackwards": "torch::autograd::CopyBackwards"}


def node_class(op: OpDef) -> type:
    """The node class of ``op``'s nodes, named as torch names it (``MulBackward0``...),
    with ``_saved_<arg>`` accessors for torch's names of its arguments; made once."""
    cls = op.node_cls
    if cls is None:
        name = op.grad_fn
        cls = _node_classes.get((name, op.multi))
        if cls is None:
            base = MultiOpNode if op.multi else OpNode
            cls = type(name, (base,), {"__slots__": (), "_qualname": _QUALNAMES.get(name)})
            _node_classes[name, op.multi] = cls
        _saved_accessors(op.torch_args + op.output_names)
        op.node_cls = cls
    return cls


class CopySlices(Node):
    """The node a base gets when it is written through one of its views: the view's
    region of the incoming gradient goes through the write's own node (``inner``),
    the rest passes to the old base."""

    __slots__ = ("inner", "chain")
    _qualname = "torch::autograd::CopySlices"

    def __init__(self, base_edge: tuple, inner: OpNode, chain: tuple) -> None:
        Node.__init__(self, (base_edge,) + inner._edges[1:])
        self.inner = inner
        self.chain = chain

    def apply(self, grads: list, needs: list, create_graph: bool) -> list:
        g = grads[0]
        if g is None:
            return [None] * len(self._edges)
        g_view = view_chain(g, chain=self.chain)
        # the old view's gradient only when the old base wants one: the inner node saved
        # nothing for it otherwise (y[0].mul_(x) where y needs no grad)
        inner = self.inner.apply([g_view], needs, create_graph)
        g_old = inner[0]
        g_base = None
        if needs[0]:
            g_base = view_scatter(g, 0 if g_old is None else g_old, chain=self.chain)
        return [g_base] + inner[1:]

    def release(self) -> None:
        self.inner.release()
