"""adjoint: append the backward equations to a traced forward graph.

Walks the forward equations in reverse and applies each op's VJP rules (the same
rules the eager engine runs) to IR values inside a Builder, so every op a rule calls
becomes a backward equation. Symbolic zeros: a value with no cotangent gets no
equations, and rules run only for inputs that depend on a differentiated input.

The result is a joint graph: inputs = forward inputs + one seed per forward output,
outputs = forward outputs + one gradient per differentiated input (None where no
gradient reaches it).
"""

from __future__ import annotations

from typing import Any

from pullback.ir import GRAD_PREFIX, Builder, Graph, Var
from pullback.ops import apply_vjp


def active_vars(graph: Graph, wrt: list) -> set:
    """Values that depend on a differentiated input through differentiable ops."""
    active = {v.id for v in wrt}
    for e in graph.eqns:
        if e.op.differentiable and not e.nograd and any(
                isinstance(a, Var) and a.id in active for a in e.inputs):
            active.add(e.out.id)
    return active


def adjoint(graph: Graph, wrt: list, seeds: list) -> Graph:
    """``seeds[i]`` is the cotangent Var of ``graph.outputs[i]`` (None: no gradient)."""
    active = active_vars(graph, wrt)
    ct: dict[int, Any] = {}
    for out, s in zip(graph.outputs, seeds):
        if s is not None and isinstance(out, Var) and out.id in active:
            ct[out.id] = s if out.id not in ct else ct[out.id] + s
    builder = Builder()
    builder.consts = dict(graph.consts)
    with builder:
        for e in reversed(graph.eqns):
            g = ct.pop(e.out.id, None)
            if g is None:
                continue
            _name_grad(g, e.out)
            builder.src, builder.block = e.src, e
            needs = [isinstance(x, Var) and x.id in active for x in e.inputs]
            for i, gi in apply_vjp(e.op, g, e.out, e.inputs, e.params, needs):
                x = e.inputs[i]
                ct[x.id] = gi if x.id not in ct else ct[x.id] + gi
    grads = [ct.get(v.id) for v in wrt]
    for g, v in zip(grads, wrt):
        _name_grad(g, v)
    seed_vars = [s for s in seeds if isinstance(s, Var)]
    return Graph(graph.inputs + seed_vars, graph.eqns + builder.eqns,
                 graph.outputs + grads, builder.consts, graph.name, graph.guards)


def _name_grad(g: Any, x: Var) -> None:
    """The finished cotangent of a named value is called g_<name>."""
    if isinstance(g, Var) and g.name is None and x.name:
        g.name = GRAD_PREFIX + x.name
