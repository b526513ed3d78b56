"""The cached backward: a graph whose structure the engine has seen before runs
generated code instead of walking its nodes.

Every plain backward (no hooks anywhere, no create_graph, no ``inputs=``, only
primitive-op nodes and leaf sinks) first walks the graph once to compute its
*structure key*: per node, the op, its params, its edges as node positions, the
shapes and dtypes of what it saved (Python scalars by value), the leaves' shapes and
dtypes, and the order the engine would run the nodes in. The walk also gathers the
saved arrays, checking their versions as the engine would. Then:

- first sighting of a key: the engine interprets the graph, as it always did;
- second sighting: the nodes' VJP rules run once more, on compiler IR values, in the
  engine's exact order (so gradients are summed in the same order); the equations go
  through the compiler's passes and become a Python function of the saved arrays and
  the seeds, returning one gradient per leaf (or per captured input of ``grad()``);
- later sightings: the walk and one call of that function.

A graph that changes every step never pays for code generation, only for the walk.
Anything unusual (a modified or freed saved value, a hook, an unhashable param, a rule
that does not build) leaves the graph to the interpreter, which raises torch's errors
at the same point and with the same side effects as ever.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from typing import Any

import numpy as np

from pullback.transforms import pipeline
from pullback.transforms.cse import cse
from pullback.transforms.dce import dce
from pullback.transforms.inplace import inplace, owned
from pullback.transforms.peephole import peephole

from ..autograd import engine
from ..autograd import graph as _graph
from ..autograd.graph import (
    AccumulateGrad,
    MultiOpNode,
    OpNode,
    SavedOutput,
    SavedTensor,
    accumulate,
)
from ..autograd.saved_hooks import PackedTensor
from ..ir import Builder, Graph, Var, emit_zeros, naming
from ..ops import Meta, complete, vjp_per_input
from ..ops.table.results import pack
from ..settings import config

#: counters, for tests and curious users: backward passes by the way they ran
STATS = {"interpreted": 0, "built": 0, "cached": 0}

_CACHE: dict = {}  # structure key -> _Entry
_LOCK = threading.Lock()  # _CACHE's entries, their sightings, STATS: held for a moment
_BUILDING = threading.Lock()  # held while a backward is built (generated code runs unheld)

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


class Plan:
    """A generated backward: ``fn(*saved_arrays, *seeds)`` -> one gradient per
    ``sinks`` entry: (node position, capture slot) for grad(), (node position, whether
    the array is fresh) for backward(); ``release``: nodes whose saved values go."""

    __slots__ = ("fn", "sinks", "release", "source")

    def __init__(self, fn: Any, sinks: list, release: list, source: str) -> None:
        self.fn = fn
        self.sinks = sinks
        self.release = release
        self.source = source


def clear() -> None:
    """Forget every cached backward (and the counters)."""
    with _LOCK:
        _CACHE.clear()
        for k in STATS:
            STATS[k] = 0


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
            if n._freed:
                return None
            p = n.params
            if p:
                params_at.append(len(key) + 1)
                p = tuple(p.items())
            else:
                p = ()
            edges = n._edges
            saved = n.saved
            if len(saved) != len(edges):
                return None  # (make_node saves one entry per input, as it makes edges)
            key += (n.op, p, len(edges))
            for e in edges:
                nxt = e[0]
                j = index.get(nxt)
                if j is None:
                    j = index[nxt] = len(nodes)
                    nodes.append(nxt)
                key.append(j if e[1] == 0 else (j, e[1]))  # (output k of a multi-output op)
            for s in saved:  # a saved tensor is (shape, dtype); the rest is marked
                ts = type(s)
                if ts is SavedTensor:
                    t = s.tensor
                    if t._vc.value != s.version:
                        return None  # the interpreter raises torch's error
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
                    return None  # saved-tensor hooks: unpack_hook must run
                elif ts is float or ts is complex or isinstance(s, np.generic):
                    key += (_S, ts, repr(s))  # exact: tells -0.0 from 0.0, nan == nan
                else:
                    key += (_S, ts, s)
            so = n.saved_out
            if so is None:
                key.append(_N)
            elif type(so) is SavedOutput:
                if so.vc.value != so.version:
                    return None
                a = so.data
                key += (_O, a.shape, a.dtype)
                arrays.append(a)
            else:
                return None
            if kind == _MULTI and not _outputs_key(n.outs, key, arrays):
                return None
        elif kind == _LEAF:
            v = n.variable
            if hooked and (v._hooks or v._post_acc_hooks):
                return None
            a = v._data
            key += (_L, a.shape, a.dtype)
        else:
            return None
    seqs = [n._seq for n in nodes]
    order = sorted(range(len(nodes)), key=seqs.__getitem__, reverse=True)
    key.append(tuple(order))  # the engine runs the latest-made ready node first
    for (n, nr), s in zip(root_edges, seeds):
        if type(s) is not np.ndarray:
            return None
        key += (index[n], nr, s.shape, s.dtype)
    if captures is not None:
        key.append(_N)
        for (n, nr), slot in captures.items():
            key += (index.get(n, -2), nr, slot)  # -2: an input the graph does not reach
    return Walk(tuple(key), nodes, arrays, params_at)


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


# ----------------------------------------------------------------- the front end
def run(root_edges: list, seeds: list, retain_graph: bool,
        captures: dict | None = None) -> list | None:
    """Run a plain backward through the cache, or return None for the interpreter.

    ``captures`` is None for ``backward()`` (gradients accumulate into the leaves) and
    grad()'s capture slots otherwise (the result then holds the captured gradients)."""
    if not config.replay:
        return None
    w = walk(root_edges, seeds, captures)
    if w is None:
        _count("interpreted")
        return None
    entry = _lookup(w)
    entry.used = next(_TICK)
    plan = entry.plan
    if plan is None:
        with _LOCK:
            entry.seen += 1
            first = entry.seen <= config.replay_after
        if first:  # a first sighting: interpreted
            _count("interpreted")
            return None
        plan = _plan(entry, w, root_edges, seeds, captures)
    else:
        _count("interpreted" if plan is _FAILED else "cached")
    return None if plan is _FAILED else execute(plan, w, seeds, retain_graph, captures)


def _plan(entry: _Entry, w: Walk, root_edges: list, seeds: list,
          captures: dict | None) -> Any:
    """The entry's Plan, built now unless another thread built it meanwhile (one
    thread builds at a time); _FAILED when a rule does not run on IR values."""
    with _BUILDING:
        if entry.plan is not None:
            _count("interpreted" if entry.plan is _FAILED else "cached")
            return entry.plan
        try:
            with np.errstate(all="ignore"):
                entry.plan = build(w, root_edges, seeds, captures)
        except Exception:  # a rule that does not run on IR values: interpret it always
            entry.plan = _FAILED
            _count("interpreted")
        else:
            _count("built")
        return entry.plan


def _count(kind: str) -> None:
    with _LOCK:
        STATS[kind] += 1


def _lookup(w: Walk) -> _Entry:
    """The cache entry of the walk's key (a new one for a first sighting)."""
    try:
        try:
            entry = _CACHE.get(w.key)
        except TypeError:  # params holding slices, lists or dicts (arrays: interpreted)
            w.key = _frozen(w.key, w.params_at)
            if w.key is None:
                return _FAILED_ENTRY
            entry = _CACHE.get(w.key)
        return _remember(w.key) if entry is None else entry
    except Exception:  # a param whose == is not a bool (a Tensor, say): interpreted
        return _FAILED_ENTRY


class _Entry:
    """A key's sightings, its Plan once built (or _FAILED), and when it was last used."""

    __slots__ = ("seen", "plan", "used")

    def __init__(self) -> None:
        self.seen = 0
        self.plan: Any = None
        self.used = 0


_FAILED_ENTRY = _Entry()
_FAILED_ENTRY.plan = _FAILED = object()  # a backward that does not build: interpreted
_TICK = itertools.count(1)


def _remember(key: tuple) -> _Entry:
    """A new entry for ``key``; the least recently used one goes when the cache is full
    (a hit only stamps its entry: no dict work on the hot path)."""
    with _LOCK:
        entry = _CACHE.get(key)  # another thread's first sighting of the same key
        if entry is None:
            while _CACHE and len(_CACHE) >= config.replay_cache_size:
                old = min(_CACHE.items(), key=lambda item: item[1].used)[0]
                del _CACHE[old]
            entry = _CACHE[key] = _Entry()
    return entry


def execute(plan: Plan, w: Walk, seeds: list, retain_graph: bool,
            captures: dict | None) -> list | None:
    """Call the generated backward and deliver its gradients as the engine would
    (None: it failed before any side effect; the interpreter takes over)."""
    try:
        with np.errstate(all="ignore"):
            grads = plan.fn(*w.arrays, *seeds)
    except Exception:
        return None
    nodes = w.nodes
    captured: list = [None] * (len(captures) if captures is not None else 0)
    for (i, slot), g in zip(plan.sinks, grads):
        if captures is not None:
            captured[slot] = g
            continue
        t = nodes[i].variable
        if slot and t._grad is None and g.dtype == t._data.dtype:  # slot: a fresh array
            t._grad = _graph.Tensor._make(g)
        else:
            accumulate(t, g, False)
    if not retain_graph:
        _release(nodes, plan.release)
    return captured


def _release(nodes: list, release: list) -> None:
    """OpNode.release of each node that ran, precomputed (``_release_plan``)."""
    for i, blank in release:
        n = nodes[i]
        if blank is _RELEASE:
            n.release()
            continue
        n._freed = True
        n.saved_out = None
        if blank is _MIXED:
            n.saved = tuple([None if type(s) is SavedTensor else s for s in n.saved])
        elif blank is not None:
            n.saved = blank


def run_batched(root_edges: list, seeds: list, retain_graph: bool,
                captures: dict) -> list | None:
    """grad() over a batch of seeds (``is_grads_batched``, a Jacobian's rows): the nodes'
    VJP rules on IR values, batched over the seeds (``pipeline.vmapped``), as one
    generated function; None where the graph is not a plain one (the caller loops)."""
    if not config.replay:
        return None
    size = len(seeds[0])
    w = walk(root_edges, [s[0] for s in seeds], captures)
    if w is None:
        return None
    inputs = [Var(a.shape, a.dtype, a) for a in w.arrays]
    seed_vars = [Var(s.shape[1:], s.dtype, s[0], name=naming.SEED) for s in seeds]
    try:
        with np.errstate(all="ignore"):
            with Builder() as builder:
                sinks, outputs, release = _replay(w, _saved_values(w.nodes, inputs),
                                                  root_edges, seed_vars, captures)
            graph = Graph(inputs + seed_vars, builder.eqns, outputs, builder.consts,
                          "backward")
            g, flags = pipeline.vmapped(graph, list(w.arrays) + list(seeds),
                                        [False] * len(inputs) + [True] * len(seeds), size)
            grads = pipeline.codegen(g, "batched_backward").fn(*w.arrays, *seeds)
    except Exception:  # a rule that does not run on IR values, or batch: the loop
        return None
    captured: list = [None] * len(captures)
    for (_, slot), grad, batched in zip(sinks, grads, flags):
        captured[slot] = grad if batched else np.broadcast_to(
            grad, (size,) + np.shape(grad)).copy()
    if not retain_graph:
        _release(w.nodes, release)
    _count("built")
    return captured


_MIXED = object()      # a node saving tensors and other values: release rebuilds `saved`
_RELEASE = object()    # a multi-output node: its own release
_NOT_FREED = object()  # a node whose rules read nothing: release leaves it as it is


def _release_plan(node: OpNode) -> Any:
    """What OpNode.release does to ``node``: _NOT_FREED, or what its ``saved`` becomes
    (a tuple of Nones, _MIXED for a rebuilt tuple, None when it keeps it)."""
    op = node.op
    if not any(e[0] is not None and op.rule_uses(k) for k, e in enumerate(node._edges)):
        return _NOT_FREED
    if op.multi:
        return _RELEASE
    kinds = [type(s) is SavedTensor for s in node.saved]
    if not any(kinds):
        return None
    return (None,) * len(kinds) if all(kinds) else _MIXED


# ----------------------------------------------------------------- the build
def build(w: Walk, root_edges: list, seeds: list, captures: dict | None) -> Plan:
    """Run the nodes' VJP rules on IR values in the engine's order; generate code."""
    inputs = [Var(a.shape, a.dtype, a) for a in w.arrays]
    seed_vars = [Var(s.shape, s.dtype, s, name=naming.SEED) for s in seeds]
    with Builder() as builder:
        sinks, outputs, release = _replay(w, _saved_values(w.nodes, inputs),
                                          root_edges, seed_vars, captures)
    graph = Graph(inputs + seed_vars, builder.eqns, outputs, builder.consts, "backward")
    graph = pipeline.run(graph, peephole, cse, dce, inplace)
    module = pipeline.codegen(graph, "cached_backward")
    if captures is None:  # a leaf may keep a fresh gradient array instead of a copy
        sinks = [(i, fresh) for (i, _), fresh in zip(sinks, _fresh(graph))]
    return Plan(module.fn, sinks, release, module.source)


def _fresh(graph: Any) -> list:
    """Per output, whether it is an array the generated code made and returns once, which
    a leaf's first ``.grad`` can own (AccumulateGrad would copy it, for nothing)."""
    returned = Counter(id(v) for v in graph.outputs)
    made: dict = {}  # id of a Var -> the equations that make it
    for e in graph.eqns:
        for v in e.outs:
            made.setdefault(id(v), []).append(e)
    return [returned[id(v)] == 1 and len(made.get(id(v), ())) == 1 and owned(made[id(v)][0])
            for v in graph.outputs]


def _replay(w: Walk, saved_vars: list, root_edges: list, seed_vars: list,
            captures: dict | None) -> tuple:
    """engine.execute on IR values, walking with the engine's own scheduler (so gradients
    are summed in the same order). Returns the sinks (node position, slot), their
    gradients and the release plan."""
    index = {n: i for i, n in enumerate(w.nodes)}
    targets = None if captures is None else {n for n, _ in captures}
    deps, order = engine.discover([e[0] for e in root_edges])
    needed = engine.needed_nodes(order, deps, targets)  # grad(): only those lead to inputs
    sinks, outputs, release = [], [], []

    def visit(node: Any, grads: list | None) -> list | None:
        if needed is not None and not needed.get(node):
            return None
        i = index[node]
        leaf = type(node) is AccumulateGrad
        if not leaf:
            blank = _release_plan(node)
            if blank is not _NOT_FREED:
                release.append((i, blank))
        if grads is None:
            return None
        slot = 0 if leaf and captures is None else (  # backward(): the leaf accumulates it
            None if captures is None else captures.get((node, 0)))
        if slot is not None:
            sinks.append((i, slot))
            outputs.append(_as_var(grads[0]))
        if leaf:
            return None
        out, vals = saved_vars[i]
        op = node.op
        g = complete(op, node.spread(grads), out, emit_zeros) if op.multi else grads[0]
        return vjp_per_input(op, g, out, vals, node.params, engine.needs_of(node, needed))

    engine.schedule(root_edges, seed_vars, visit, deps)
    return sinks, outputs, release


def _saved_values(nodes: list, inputs: list) -> list:
    """Per node, ``(out, values)`` as the rules see them, with IR values in place of
    the gathered arrays (consumed in the walk's order)."""
    it = iter(inputs)
    result = []
    for n in nodes:
        if type(n) is AccumulateGrad:
            result.append(None)
            continue
        vals = []
        for j, s in enumerate(n.saved):
            if type(s) is SavedTensor or type(s) is np.ndarray:
                v = next(it)
                names = n.op.arg_names  # (a variadic op's inputs: its list's name)
                v.name = names[0] if n.op.variadic else names[j] if j < len(names) else None
                vals.append(v)
            else:
                vals.append(s)
        out = None
        if n.saved_out is not None:
            out = next(it)
            out.name = naming.OUTPUT
        if n.op.multi:
            out = pack(n.op.result, [next(it) if type(o) is SavedOutput else o for o in n.outs])
        result.append((out, tuple(vals)))
    return result


def _as_var(g: Any) -> Any:
    if not isinstance(g, Var):
        raise TypeError("a gradient that is a constant: left to the interpreter")
    return g


engine.set_replay(run)
engine.set_batched_replay(run_batched)
