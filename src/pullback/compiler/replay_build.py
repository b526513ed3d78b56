"""The cached backward's build (compiler/replay.py): the nodes' VJP rules run once
more, on compiler IR values, in the engine's exact order (so gradients are summed in
the same order); the equations go through the compiler's passes and become a Python
function of the saved arrays and the seeds (a ``Plan``), with what each node's
release does precomputed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from pullback.transforms import pipeline
from pullback.transforms.cse import cse
from pullback.transforms.dce import dce
from pullback.transforms.inplace import inplace, owned
from pullback.transforms.peephole import peephole

from ..autograd import engine
from ..autograd.graph import AccumulateGrad, OpNode, SavedOutput, SavedTensor
from ..ir import Builder, Graph, Var, emit_zeros, naming
from ..ops import complete, vjp_per_input
from ..ops.table.results import pack
from .replay_walk import Walk


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
