"""The verifier: checks a graph's SSA form (run after every pass when
``config.check_ir`` is on, as the compiler tests do)."""

from __future__ import annotations

from ..ops.table.registry import OpDef
from .graph import Graph, Var


class IRError(Exception):
    """The IR broke an invariant (a bug in a pass, never in user code)."""


def verify(graph: Graph) -> None:
    """Check SSA form: every Var is defined once, before its uses; outputs defined; the
    bodies of regions (graphs in an equation's params) closed and checked the same way."""
    defined = set()
    for v in list(graph.inputs) + list(graph.consts):
        if v.id in defined:
            raise IRError(f"{v!r} is bound twice")
        defined.add(v.id)
    for i, e in enumerate(graph.eqns):
        if not isinstance(e.op, OpDef):
            raise IRError(f"equation {i}: {e.op!r} is not an op")
        for a in e.inputs:
            if isinstance(a, Var) and a.id not in defined:
                raise IRError(f"equation {i} ({e.op.name}) uses {a!r} before it is defined")
        for p in e.params.values():
            if isinstance(p, Graph):  # a region's body: a closed graph of its own
                verify(p)
        for v in e.outs:
            if v.id in defined:
                raise IRError(f"equation {i} ({e.op.name}) redefines {v!r}")
            defined.add(v.id)
    for v in list(graph.outputs) + graph.guards:
        if isinstance(v, Var) and v.id not in defined:
            raise IRError(f"output or guard {v!r} is never defined")
