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

This module is the cache and its front end (``run``, ``run_batched``, ``execute``);
``replay_walk.py`` makes the key, ``replay_build.py`` the generated backward.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

import numpy as np

from pullback.transforms import pipeline

from ..autograd import engine
from ..autograd import graph as _graph
from ..autograd.graph import SavedTensor, accumulate
from ..ir import Builder, Graph, Var, naming
from ..settings import config
from .replay_build import _MIXED, _RELEASE, Plan, _replay, _saved_values, build
from .replay_walk import Walk, _frozen, walk

__all__ = ["STATS", "Plan", "Walk", "build", "clear", "execute", "run", "run_batched",
           "walk"]

#: counters, for tests and curious users: backward passes by the way they ran
STATS = {"interpreted": 0, "built": 0, "cached": 0}

_CACHE: dict = {}  # structure key -> _Entry
_LOCK = threading.Lock()  # _CACHE's entries, their sightings, STATS: held for a moment
_BUILDING = threading.Lock()  # held while a backward is built (generated code runs unheld)


def clear() -> None:
    """Forget every cached backward (and the counters)."""
    with _LOCK:
        _CACHE.clear()
        for k in STATS:
            STATS[k] = 0


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


engine.set_replay(run)
engine.set_batched_replay(run_batched)
