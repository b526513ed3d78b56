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

from typing import Any, Iterator

from pullback.ir import GRAD_PREFIX, Builder, Eqn, Graph, Var, emit_zeros
from pullback.ops import apply_vjp, complete, fit_to
from pullback.ops.table.results import pack


def active_vars(graph: Graph, wrt: list) -> set:
    """Values that depend on a differentiated input through differentiable ops (or
    keep the history of one: ``Eqn.keeps_history``)."""
    active = {v.id for v in wrt}
    for e in graph.eqns:
        if _active(e, active):
            if e.out is not None:  # (an integer or boolean result carries no gradient,
                if e.out.dtype.kind not in "biu":  # as in eager mode: a cast to int cuts it)
                    active.add(e.out.id)
            else:  # several outputs: the float ones carry gradients
                active.update(v.id for v in e.outs if v.dtype.kind in "fc")
    return active


def _active(e: Eqn, active: set) -> bool:
    if e.keeps_history:
        return isinstance(e.inputs[0], Var) and e.inputs[0].id in active
    return e.op.differentiable and not e.nograd and any(
        isinstance(a, Var) and a.id in active for a in e.inputs)


def adjoint(graph: Graph, wrt: list, seeds: list) -> Graph:
    """``seeds[i]`` is the cotangent Var of ``graph.outputs[i]`` (None: no gradient)."""
    active = active_vars(graph, wrt)
    ct: dict[int, Any] = {}
    builder = Builder()
    builder.consts = dict(graph.consts)
    with builder:
        for out, s in zip(graph.outputs, seeds):  # (an output listed twice: seeds add up)
            if s is not None and isinstance(out, Var) and out.id in active:
                ct[out.id] = s if out.id not in ct else ct[out.id] + s
        for e in reversed(graph.eqns):
            g = _cotangent(e, ct)
            if g is None:
                continue
            builder.src, builder.block = e.src, e
            if e.out is None:  # several outputs: zeros for those no gradient reached
                g = complete(e.op, g, e.outs, emit_zeros)
            for x, gi in _input_grads(e, g, active):
                ct[x.id] = gi if x.id not in ct else ct[x.id] + gi
    grads = [ct.get(v.id) for v in wrt]
    for g, v in zip(grads, wrt):
        _name_grad(g, v)
    seed_vars = [s for s in seeds if isinstance(s, Var)]
    return Graph(graph.inputs + seed_vars, graph.eqns + builder.eqns,
                 graph.outputs + grads, builder.consts, graph.name, graph.guards)


def _input_grads(e: Eqn, g: Var, active: set) -> Iterator[tuple[Var, Any]]:
    """(input, its gradient) for the active inputs of ``e``, given its result's ``g``."""
    if e.keeps_history:  # the target's old value takes the gradient as it is
        yield e.inputs[0], fit_to(g, e.inputs[0])
        return
    needs = [isinstance(x, Var) and x.id in active for x in e.inputs]
    out = e.out if e.out is not None else pack(e.op.result, e.outs)
    for i, gi in apply_vjp(e.op, g, out, e.inputs, e.params, needs):
        yield e.inputs[i], gi


def _cotangent(e: Eqn, ct: dict) -> Any:
    """The finished cotangent of ``e``'s result (None: none reached it); of an equation
    with several outputs, one per output (None where none), or None if none at all."""
    if e.out is not None:
        g = ct.pop(e.out.id, None)
        _name_grad(g, e.out)
        return g
    gs = [ct.pop(v.id, None) for v in e.outs]
    if all(g is None for g in gs):
        return None
    for g, v in zip(gs, e.outs):
        _name_grad(g, v)
    return gs


def _name_grad(g: Any, x: Var) -> None:
    """The finished cotangent of a named value is called g_<name>."""
    if isinstance(g, Var) and g.name is None and x.name:
        g.name = GRAD_PREFIX + x.name
