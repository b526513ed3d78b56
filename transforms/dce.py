"""dce: drop equations whose results no output needs. An impure equation (a random
draw, a print: effects.py) is kept: it does something besides its result."""

from __future__ import annotations

from pullback.ir import Graph, Var


def dce(graph: Graph) -> Graph:
    live = {v.id for v in list(graph.outputs) + graph.guards if isinstance(v, Var)}
    kept = []
    for e in reversed(graph.eqns):
        out = e.out  # (None for an equation with several outputs: needed if any one is)
        if (out.id in live if out is not None else any(v.id in live for v in e.outs)) \
                or not e.op.pure:
            kept.append(e)
            live.update(a.id for a in e.inputs if isinstance(a, Var))
    kept.reverse()
    consts = {v: a for v, a in graph.consts.items() if v.id in live}
    return graph.replace(eqns=kept, consts=consts)
