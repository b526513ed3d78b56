"""The backward engine: an iterative walk of the graph with dependency counts.

Order is torch's: a node runs once every node that feeds it gradient has run, and
among ready nodes the most recently created runs first. For each node: tensor hooks,
then retain_grad, then node pre-hooks, the node itself, and node post-hooks.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from typing import Any

import numpy as np

from ..ops.elementwise import clone
from ..ops.table.quiet import quietly
from . import anomaly_mode, graph, messages, profiler
from .grad_mode import STATE
from .graph import AccumulateGrad, Node


class GraphTask:
    """One backward call: its roots, what to capture, and the options."""

    __slots__ = ("create_graph", "retain_graph", "accumulate", "captures", "targets", "needed",
                 "id")
    _ids = itertools.count()

    def __init__(self, create_graph: bool, retain_graph: bool, accumulate: bool) -> None:
        self.id = next(GraphTask._ids)  # unique for the process (checkpoint keys on it)
        self.create_graph = create_graph
        self.retain_graph = retain_graph
        self.accumulate = accumulate
        self.captures: dict = {}  # (node, output_nr) -> capture slot index
        self.targets: set | None = None  # nodes whose gradients are wanted; None: all
        self.needed: dict | None = None  # node -> leads to a target (when targets given)


def discover(roots: list) -> tuple[dict, list]:
    """Count, for every node reachable from ``roots``, the edges that feed it."""
    deps: dict[Node, int] = {}
    order: list[Node] = []
    stack = list({id(n): n for n in roots if n is not None}.values())  # a root given twice
    seen = set(id(n) for n in stack)                                    # is walked once
    for n in stack:
        deps.setdefault(n, 0)
    while stack:
        node = stack.pop()
        order.append(node)
        for nxt, _ in node._edges:
            if nxt is None:
                continue
            deps[nxt] = deps.get(nxt, 0) + 1
            if id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return deps, order


def mark_needed(order: list, deps: dict, targets: set) -> dict:
    """Which nodes lead to a target (only those run when inputs are given)."""
    remaining = dict(deps)
    topo = [n for n in order if remaining[n] == 0]  # consumers before producers
    for node in topo:
        for nxt, _ in node._edges:
            if nxt is not None:
                remaining[nxt] -= 1
                if remaining[nxt] == 0:
                    topo.append(nxt)
    needed: dict = {}
    for node in reversed(topo):
        needed[node] = node in targets or any(
            nxt is not None and needed[nxt] for nxt, _ in node._edges)
    return needed


def needed_nodes(order: list, deps: dict, targets: set | None) -> dict | None:
    """With ``targets``, which nodes lead to one (only those run); None: all run."""
    return None if targets is None else mark_needed(order, deps, targets)


def needs_of(node: Node, needed: dict | None) -> list:
    """Per edge of ``node``, whether a gradient should flow into it."""
    return [e[0] is not None and (needed is None or needed.get(e[0], False))
            for e in node._edges]


def schedule(root_edges: list, root_grads: list, visit: Any, deps: dict) -> None:
    """Walk the graph behind ``root_edges`` in torch's order, summing gradients per node:
    a node is visited once every node that feeds it has been, the most recently made
    ready node first. ``visit(node, grads)`` gets the node's summed output gradients
    (None when none reached it) and returns one gradient per edge (or None).

    The interpreter (``execute``) and the compiler's replay of eager graphs both walk
    with this, so they sum gradients in the same order. ``deps`` (from ``discover``)
    is used up."""
    buffers: dict[Node, list] = {}
    for (node, nr), g in zip(root_edges, root_grads):
        _add_to_buffer(buffers, node, nr, g)
    ready = [(-n._seq, id(n), n) for n in {id(e[0]): e[0] for e in root_edges}.values()
             if deps[n] == 0]
    heapq.heapify(ready)
    while ready:
        node = heapq.heappop(ready)[2]
        out = visit(node, buffers.pop(node, None))
        for i, (nxt, nr) in enumerate(node._edges):
            if nxt is None:
                continue
            if out is not None and out[i] is not None:
                _add_to_buffer(buffers, nxt, nr, out[i])
            deps[nxt] -= 1
            if deps[nxt] == 0:
                heapq.heappush(ready, (-nxt._seq, id(nxt), nxt))


def execute(task: GraphTask, root_edges: list, root_grads: list) -> list:
    """Run backward from ``root_edges`` seeded with ``root_grads``; returns captures."""
    deps, order = discover([e[0] for e in root_edges])
    task.needed = needed_nodes(order, deps, task.targets)
    captured: list = [None] * len(task.captures)
    run = _run_node_checked if anomaly_mode.is_anomaly_enabled() else _run_node
    if profiler.is_enabled():  # chosen once per call, as anomaly mode's runner
        run = profiler.profiled_runner(run)

    def visit(node: Node, grads: list | None) -> list | None:
        if task.needed is not None and not task.needed.get(node):
            return None
        out = None if grads is None else run(task, node, grads, captured)
        if not task.retain_graph:  # torch frees a node's saved values once it ran;
            node.release()         # nodes not run keep theirs
        return out

    prev_mode, prev_task = STATE.grad_enabled, current_task()
    STATE.grad_enabled = task.create_graph
    _RUNNING.task = task
    try:  # in the quiet context: the rules' ops run without entering it each
        quietly(schedule, root_edges, root_grads, visit, deps)
    finally:
        STATE.grad_enabled = prev_mode
        _RUNNING.task = prev_task
    return captured


_RUNNING = threading.local()


def current_task() -> GraphTask | None:
    """The backward call this thread is running (the innermost, for a backward started
    inside a node), or None (torch's ``_current_graph_task_id``)."""
    return getattr(_RUNNING, "task", None)


_replay: Any = None


def set_replay(fn: Any) -> None:
    """Register a faster runner for plain backward passes: ``fn(root_edges, seeds,
    retain_graph, captures)`` returns the captured gradients (an empty list for
    ``backward()``), or None to leave the graph to ``execute``. The compiler registers
    its replay of generated code for graphs seen before."""
    global _replay
    _replay = fn


_batched_replay: Any = None


def set_batched_replay(fn: Any) -> None:
    """Register the runner of a backward over a batch of seeds (``is_grads_batched``):
    ``fn(root_edges, seeds, retain_graph, captures)``, each seed with the batch in axis
    0, returns the captured gradients batched the same way, or None to decline."""
    global _batched_replay
    _batched_replay = fn


def batched_replay(root_edges: list, seeds: list, retain_graph: bool,
                   captures: dict) -> list | None:
    """The registered batched runner's result, or None (the caller loops over the batch)."""
    if _batched_replay is None or anomaly_mode.is_anomaly_enabled() or profiler.is_enabled():
        return None
    return _batched_replay(root_edges, seeds, retain_graph, captures)


def replay(root_edges: list, seeds: list, retain_graph: bool,
           captures: dict | None = None) -> list | None:
    """The registered runner's result, or None (no runner, or it declined; anomaly mode
    always interprets, so that a failing node can be named, and so does the profiler,
    so that its table has a row per node)."""
    if _replay is None or anomaly_mode.is_anomaly_enabled() or profiler.is_enabled():
        return None
    return _replay(root_edges, seeds, retain_graph, captures)


def _add_to_buffer(buffers: dict, node: Node, nr: int, g: Any) -> None:
    buf = buffers.get(node)
    if buf is None:
        buf = buffers[node] = [None] * node.num_outputs
    buf[nr] = g if buf[nr] is None else buf[nr] + g


def _run_node(task: GraphTask, node: Node, grads: list, captured: list,
              apply: Any = None) -> list | None:
    """One node: hooks, captures, the node itself (through ``apply(node, grads, needs,
    create_graph)`` when given: the profiler's timed call)."""
    for nr in range(len(grads)):
        if grads[nr] is None:
            continue
        hooks = node.tensor_hooks(nr)
        if hooks:
            grads[nr] = _run_tensor_hooks(hooks, grads[nr], task.create_graph)
        if node._retained is not None:  # torch fills retained grads under grad() too
            _retain(node, nr, grads[nr], task.create_graph)
        slot = task.captures.get((node, nr))
        if slot is not None:
            captured[slot] = grads[nr]
    if node._pre_hooks:
        grads = _run_node_hooks(node._pre_hooks, (grads,), grads)
    if type(node) is AccumulateGrad and not task.accumulate:
        return None  # autograd.grad: captured above, .grad untouched
    needs = needs_of(node, task.needed)
    if apply is None:
        out = node.apply(grads, needs, task.create_graph)
    else:
        out = apply(node, grads, needs, task.create_graph)
    if node._post_hooks:
        out = _run_node_hooks(node._post_hooks, (out, grads), out)
    return out


def _run_node_checked(task: GraphTask, node: Node, grads: list, captured: list,
                      apply: Any = None) -> list | None:
    """``_run_node`` in anomaly mode: a failure (or a NaN it returns, with check_nan) is
    preceded by the warning with the forward traceback of the node."""
    try:
        out = _run_node(task, node, grads, captured, apply)
        if anomaly_mode.is_anomaly_check_nan_enabled():
            anomaly_mode.check_nan(node, out)
    except Exception:
        anomaly_mode.report(node)
        raise
    return out


def _wrap(g: Any, create_graph: bool) -> Any:
    Tensor = graph.Tensor
    if g is None or isinstance(g, Tensor):
        return g
    return Tensor._make(np.asarray(g))


def _unwrap(g: Any, create_graph: bool) -> Any:
    if g is None or create_graph:
        return g
    return g._data if hasattr(g, "_data") else g


def _run_tensor_hooks(hooks: dict, g: Any, create_graph: bool) -> Any:
    """Tensor hooks chain in registration order; a returned value replaces the grad."""
    t = _wrap(g, create_graph)
    for fn in list(hooks.values()):
        new = fn(t)
        if new is not None:
            _check_hook_value(fn, t, new)
            t = new
    return _unwrap(t, create_graph)


def _hook_name(fn: Any) -> str:
    return getattr(fn, "__name__", repr(fn))


def _check_hook_value(fn: Any, old: Any, new: Any) -> None:
    """torch's checks on a gradient a hook returned: a Tensor of the same size and type."""
    if not isinstance(new, graph.Tensor):
        raise TypeError(messages.HOOK_NOT_TENSOR.format(typ=type(new).__name__))
    if old is None:
        return
    if tuple(new.shape) != tuple(old.shape):
        raise RuntimeError(messages.HOOK_SIZE.format(name=_hook_name(fn)))
    if new._data.dtype != old._data.dtype:
        raise RuntimeError(messages.HOOK_TYPE.format(
            name=_hook_name(fn), was=messages.legacy_type(old._data.dtype),
            got=messages.legacy_type(new._data.dtype)))


def _run_node_hooks(hooks: dict, args: tuple, grads: list) -> list:
    """Node hooks see and may replace the gradients as tuples of Tensors (pre-hooks the
    grad_outputs, post-hooks the grad_inputs)."""
    create_graph = STATE.grad_enabled
    wrapped = [tuple(_wrap(g, create_graph) for g in a) for a in args]
    result = wrapped[0]
    for fn in list(hooks.values()):
        new = fn(*([result] + wrapped[1:]))
        if new is None:
            continue
        if not isinstance(new, tuple):
            raise TypeError(messages.HOOK_NOT_TUPLE.format(typ=type(new).__name__))
        if len(new) != len(result):
            raise RuntimeError(messages.HOOK_COUNT.format(
                name=_hook_name(fn), got=len(new), expected=len(result)))
        for old, g in zip(result, new):
            if g is not None:
                _check_hook_value(fn, old, g)
        result = new
    return [_unwrap(g, create_graph) for g in result]


def _retain(node: Node, nr: int, g: Any, create_graph: bool) -> None:
    ref = node._retained.get(nr)
    t = ref() if ref is not None else None
    if t is None:
        return
    if not isinstance(g, graph.Tensor):
        g = graph.Tensor._make(np.asarray(g))
    # torch's retain_grad hook: a copy first, then out-of-place sums (a new object)
    t._grad = clone(g) if t._grad is None else t._grad + g
