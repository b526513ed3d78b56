"""What codegen decides about a graph before it writes it: which values carry a
buffer's name from the start (a chain of out= writes), where each value is read last
(its ``del``), which are worth freeing, and which transposes are written where they are
read (``g_z @ w.T``).
"""

from __future__ import annotations

import math
from typing import Any

from pullback.ir import Graph, Var, last_uses
from pullback.settings import config

from .codegen_regions import REGIONS
from .inplace import IntoOp


def _inlined_transposes(graph: Graph, guards: dict) -> dict:
    """The transposes written where they are read, ``g_h = g_z @ w.T``, not bound to a
    temporary first: an ``x.T`` read once, by an equation that is not a region's with
    none between them (a loop binds names again: elsewhere a name is bound once, and a
    view read later sees what an earlier one would), neither returned nor guarded.
    Maps the id of each to ``(x, the index of its reader)``."""
    if not any(e.op.template == "{0}.T" for e in graph.eqns):
        return {}
    uses: dict[int, int] = {}
    reader: dict[int, int] = {}
    for i, e in enumerate(graph.eqns):
        for a in e.inputs:
            if type(a) is Var:
                uses[a.id] = uses.get(a.id, 0) + 1
                reader[a.id] = i
    for v in list(graph.outputs) + list(graph.guards):
        if type(v) is Var:
            uses[v.id] = uses.get(v.id, 0) + 2
    regions = [i for i, e in enumerate(graph.eqns) if e.op.name in REGIONS]
    inline: dict[int, tuple] = {}
    for i, e in enumerate(graph.eqns):
        if e.op.template != "{0}.T" or e.out is None or uses.get(e.out.id) != 1:
            continue
        x, j = e.inputs[0], reader.get(e.out.id)
        if (type(x) is Var and x.id not in inline and e.out.id not in guards
                and j is not None and not any(i < k <= j for k in regions)):
            inline[e.out.id] = (x, j)
    return inline


def _worth_freeing(v: Var) -> bool:
    """Smaller values are not released early: a ``del`` costs more than it saves. (A
    length known only at run time, a while loop's steps, counts as large.)"""
    if None in v.shape:
        return True
    return math.prod(v.shape) * v.dtype.itemsize >= config.free_bytes


def _reuses_name(e: Any) -> bool:
    return isinstance(e.op, IntoOp) and (e.out.name is None or e.op.ufunc is None)


def _shared_buffers(graph: Graph) -> dict:
    """Temporaries that carry their final value's name from the start: ``t0 = x @ w;
    t0 += b; h = np.tanh(t0, out=t0)`` reads ``h = x @ w; h += b; np.tanh(h, out=h)``.
    Maps the id of each unnamed value of such a chain of out= writes (a value read only
    by the next write) and of the named result to that result."""
    uses: dict[int, int] = {}
    for e in graph.eqns:
        for a in e.inputs:
            if type(a) is Var:
                uses[a.id] = uses.get(a.id, 0) + 1
    for v in list(graph.outputs) + list(graph.guards):
        if type(v) is Var:
            uses[v.id] = uses.get(v.id, 0) + 2
    made = {e.out.id for e in graph.eqns if e.out is not None and e.op.name not in REGIONS
            and not isinstance(e.op, IntoOp)}
    chain: dict[int, list] = {}  # id of an unnamed buffer value -> the chain up to it
    shared: dict[int, Var] = {}
    for e in graph.eqns:
        if not isinstance(e.op, IntoOp):
            continue
        buf = e.inputs[e.op.out_arg]
        if uses.get(buf.id) != 1 or (buf.id not in chain and (
                buf.name is not None or buf.id not in made)):
            continue
        ids = chain.pop(buf.id, [buf.id])
        if e.out.name is None:
            chain[e.out.id] = ids + [e.out.id]
        else:
            shared.update((i, e.out) for i in ids + [e.out.id])
    return shared


def _last_uses(graph: Graph, shared: dict) -> dict:
    last = last_uses(graph)
    # an unnamed _into result lives on under its input's name; so does a named one whose
    # buffer carries its name
    for i, e in reversed(list(enumerate(graph.eqns))):
        if _reuses_name(e) or (isinstance(e.op, IntoOp) and e.out.id in shared):
            a = e.inputs[e.op.out_arg]
            last[a.id] = max(last.get(a.id, i), last.get(e.out.id, i))
    return last
