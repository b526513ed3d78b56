"""The cached backward's walk (compiler/replay.py): a graph's *structure key*, its
nodes in discovery order and the saved arrays its generated backward reads, or None
where the graph must be interpreted (a hook, a freed or modified saved value, saved-tensor
hooks, a node that is not a primitive op's).

The key holds, per node, the op, its params, its edges as node positions, the shapes
and dtypes of what it saved (Python scalars by value); the leaves' shapes and dtypes;
the order the engine would run the nodes in; the seeds' and captures' places.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import graph as _graph
from ..autograd.graph import (
    AccumulateGrad,
    MultiOpNode,
    OpNode,
    SavedOutput,
    SavedTensor,
)
from ..autograd.saved_hooks import PackedTensor
from ..ops import Meta

# markers of the kinds of saved values in a key (unique objects: never equal to data)
_M, _A, _S, _O, _L, _N = (object() for _ in range(6))


class Walk:
    """One graph's structure key, its nodes in discovery order, their saved arrays,
    and ``params_at``: where the key holds params (to freeze if they are unhashable)."""

    __slots__ = ("key", "nodes", "arrays", "params_at")

    def __init__(self, key: tuple, nodes: list, arrays: list, params_at: list) -> None:
        self.key = key
        self.nodes = nodes
        self.arrays = arrays
        self.params_at = params_at



# --------------------------------------------------------------------- the walk
_KINDS: dict = {}
_OP, _LEAF, _OTHER, _MULTI = 1, 2, 0, 3
_OPNODE_API = ("apply", "unpack", "release", "num_outputs", "tensor_hooks")


def _kind(cls: type) -> int:
    k = _KINDS.get(cls)
    if k is None:
        base = MultiOpNode if issubclass(cls, MultiOpNode) else OpNode
        if cls is AccumulateGrad:
            k = _LEAF
        elif issubclass(cls, OpNode) and all(
                getattr(cls, n) is getattr(base, n) for n in _OPNODE_API):
            # node_class() made it: torch's name on (Multi)OpNode's behaviour
            k = _MULTI if base is MultiOpNode else _OP
        else:
            k = _OTHER
        _KINDS[cls] = k
    return k


def walk(root_edges: list, seeds: list, captures: dict | None) -> Walk | None:
    """The structure key of the graph behind ``root_edges``, or None when the graph
    must be interpreted. ``captures``: grad()'s (node, output_nr) -> slot.

    One pass in discovery order (breadth first from the roots; edges name nodes by
    discovery position), then the order the engine runs them in: by sequence number.
    """
    index: dict = {None: -1}  # node -> discovery position
    nodes: list = []
    for n, _ in root_edges:
        if n not in index:
            index[n] = len(nodes)
            nodes.append(n)
    key: list = []
    arrays: list = []
    params_at: list = []
    kinds = _KINDS
    hooked = _graph.hooks_seen
    for n in nodes:  # (the loop also visits the nodes appended while it runs)
        kind = kinds.get(type(n)) or _kind(type(n))
        if hooked and (n._pre_hooks or n._post_hooks or n._tensor_hooks or n._retained):
            return None
        if kind == _OP or kind == _MULTI:
            if not _op_key(n, kind == _MULTI, index, nodes, key, arrays, params_at):
                return None
        elif kind == _LEAF:
            v = n.variable
            if hooked and (v._hooks or v._post_acc_hooks):
                return None
            a = v._data
            key += (_L, a.shape, a.dtype)
        else:
            return None
    if not _roots_key(nodes, index, root_edges, seeds, captures, key):
        return None
    return Walk(tuple(key), nodes, arrays, params_at)


def _op_key(n: OpNode, multi: bool, index: dict, nodes: list, key: list, arrays: list,
            params_at: list) -> bool:
    """An op node into the key: its op, params and edges (a node an edge reaches first
    is appended to ``nodes``), what it saved; False when the graph must be interpreted."""
    if n._freed:
        return False
    p = n.params
    if p:
        params_at.append(len(key) + 1)
        p = tuple(p.items())
    else:
        p = ()
    edges = n._edges
    saved = n.saved
    if len(saved) != len(edges):
        return False  # (make_node saves one entry per input, as it makes edges)
    key += (n.op, p, len(edges))
    for e in edges:
        nxt = e[0]
        j = index.get(nxt)
        if j is None:
            j = index[nxt] = len(nodes)
            nodes.append(nxt)
        key.append(j if e[1] == 0 else (j, e[1]))  # (output k of a multi-output op)
    if not _saved_key(saved, key, arrays):
        return False
    so = n.saved_out
    if so is None:
        key.append(_N)
    elif type(so) is SavedOutput:
        if so.vc.value != so.version:
            return False
        a = so.data
        key += (_O, a.shape, a.dtype)
        arrays.append(a)
    else:
        return False
    return not multi or _outputs_key(n.outs, key, arrays)


def _saved_key(saved: tuple, key: list, arrays: list) -> bool:
    """A node's saved values into the key: a saved tensor or array as its shape and dtype
    (the array into ``arrays``), the rest marked; False for a tensor modified in place
    (the interpreter raises torch's error) or one saved through saved-tensor hooks."""
    for s in saved:
        ts = type(s)
        if ts is SavedTensor:
            t = s.tensor
            if t._vc.value != s.version:
                return False
            a = t._data
            key += (a.shape, a.dtype)
            arrays.append(a)
        elif ts is Meta:
            key += (_M, s.shape, s.dtype)
        elif ts is np.ndarray:
            key += (_A, s.shape, s.dtype)
            arrays.append(s)
        elif s is None:
            key.append(_N)
        elif ts is int or ts is bool:  # its value is part of the code
            key += (_S, ts, s)
        elif ts is PackedTensor:
            return False  # saved-tensor hooks: unpack_hook must run
        elif ts is float or ts is complex or isinstance(s, np.generic):
            key += (_S, ts, repr(s))  # exact: tells -0.0 from 0.0, nan == nan
        else:
            key += (_S, ts, s)
    return True


def _roots_key(nodes: list, index: dict, root_edges: list, seeds: list,
               captures: dict | None, key: list) -> bool:
    """The engine's order of the nodes, the seeds' and the captures' places into the
    key; False for a seed that is not an array."""
    seqs = [n._seq for n in nodes]
    order = sorted(range(len(nodes)), key=seqs.__getitem__, reverse=True)
    key.append(tuple(order))  # the engine runs the latest-made ready node first
    for (n, nr), s in zip(root_edges, seeds):
        if type(s) is not np.ndarray:
            return False
        key += (index[n], nr, s.shape, s.dtype)
    if captures is not None:
        key.append(_N)
        for (n, nr), slot in captures.items():
            key += (index.get(n, -2), nr, slot)  # -2: an input the graph does not reach
    return True


def _outputs_key(outs: tuple, key: list, arrays: list) -> bool:
    """The outputs of a multi-output node into the key (their shapes and dtypes: the
    zeros of those no gradient reaches) and the saved ones into ``arrays``; False when a
    saved one was modified in place (the interpreter raises torch's error)."""
    key.append(len(outs))
    for o in outs:
        if type(o) is SavedOutput:
            if o.vc.value != o.version:
                return False
            key += (_O, o.data.shape, o.data.dtype)
            arrays.append(o.data)
        else:
            key += (_M, o.shape, o.dtype)
    return True


def _frozen(key: tuple, params_at: list) -> tuple | None:
    """``key`` with params that hold slices, lists or dicts made hashable (None when
    something in it stays unhashable: an array param, say)."""
    key = list(key)
    for i in params_at:
        try:
            key[i] = _freeze(key[i])
        except TypeError:
            return None
    key = tuple(key)
    try:
        hash(key)
    except TypeError:
        return None
    return key


_SLICE, _LIST, _DICT = object(), object(), object()


def _freeze(x: Any) -> Any:
    """A hashable stand-in for a param equal exactly when the params are; TypeError
    for arrays and anything else unhashable (those graphs are interpreted)."""
    tx = type(x)
    if tx is tuple:
        return tuple(_freeze(y) for y in x)
    if tx is slice:
        return (_SLICE, _freeze(x.start), _freeze(x.stop), _freeze(x.step))
    if tx is list:
        return (_LIST,) + tuple(_freeze(y) for y in x)
    if tx is dict:
        return (_DICT,) + tuple((k, _freeze(v)) for k, v in x.items())
    if tx is np.ndarray:
        raise TypeError("an array param")
    hash(x)
    return x
