"""tangent: forward mode. Interleave tangent equations with a traced forward graph.

Walks the forward equations in order; after each one whose inputs carry a tangent it
emits the tangent of its result with ``apply_jvp`` (ops/table/jvp.py: the op's declared
JVP rules, its VJP rules for an elementwise op on real values, else its VJP rules
transposed by ``transpose.py: transpose_rules``). Symbolic zeros: a value no input
tangent reaches has no tangent and costs nothing.

The result: inputs = forward inputs + one tangent per differentiated input, outputs =
forward outputs + one tangent per output (zeros where no tangent reaches it).

>>> import numpy as np
>>> from pullback.ir import Builder, Graph, Var
>>> x = Var((2,), np.float64, np.ones(2), name="x")
>>> with Builder() as b:
...     y = (x * x).cumsum(0)
>>> t = Var((2,), np.float64, np.zeros(2), name="tan_x")
>>> print(tangent(Graph([x], b.eqns, [y]), [x], [t]))
{ lambda x:f64[2] tan_x:f64[2] .
  let t0:f64[2] = mul x x
      t1:f64[2] = mul tan_x x
      t2:f64[2] = mul tan_x x
      t3:f64[2] = add t1 t2
      t4:f64[2] = cumsum[dim=0] t0
      t5:f64[2] = zeros[shape=(2,) dtype=float64]
      t6:f64[2] = cumsum[dim=0 reverse=True] t5
      t7:f64[2] = cumsum[dim=0 reverse=False] t3
  in (t4 t7) }

``mul`` is elementwise: its VJP rules give its tangent. ``cumsum``'s is derived: its
rule, a reversed cumsum of ``u``, transposed is a forward cumsum of the tangent
(``t5``, ``t6``, the dummy cotangent and its rule, go in the pipeline's dce).
"""

from __future__ import annotations

from typing import Any

from pullback.ir import Builder, Eqn, Graph, Var, emit_zeros
from pullback.ops import apply_jvp, fit_out
from pullback.ops.table.results import pack

from .transpose import transpose_rules


def tangent(graph: Graph, wrt: list, tangents: list) -> Graph:
    """``tangents[i]`` is the tangent Var of ``wrt[i]`` (an input of ``graph``)."""
    tan: dict[int, Any] = {v.id: t for v, t in zip(wrt, tangents)}
    builder = Builder()
    builder.consts = dict(graph.consts)
    with builder:
        for e in graph.eqns:
            builder.eqns.append(e)
            builder.src, builder.block = e.src, e
            _emit_tangent(e, tan)
        outs = [_output_tangent(v, tan) for v in graph.outputs]
    return Graph(graph.inputs + list(tangents), builder.eqns, graph.outputs + outs,
                 builder.consts, graph.name, graph.guards)


def _emit_tangent(e: Eqn, tan: dict) -> None:
    ts = [tan.get(a.id) if isinstance(a, Var) else None for a in e.inputs]
    if all(t is None for t in ts):
        return
    if e.keeps_history:  # the target's old value's tangent, as its gradient goes there
        if ts[0] is not None:
            tan[e.out.id] = fit_out(ts[0], e.out)
        return
    if getattr(e.op, "tangent", None) is not None:  # a custom Function's call or output
        t = e.op.tangent(e, ts)
        if t is not None:
            tan[e.out.id] = t
        return
    if not e.op.differentiable:
        return
    out = e.out if e.out is not None else pack(e.op.result, e.outs)
    t = apply_jvp(e.op, ts, out, e.inputs, e.params, transpose_rules)
    if t is None:
        return
    if e.out is not None:
        tan[e.out.id] = t
    else:
        tan.update((v.id, ti) for v, ti in zip(e.outs, t) if ti is not None)


def _output_tangent(v: Any, tan: dict) -> Any:
    t = tan.get(v.id) if isinstance(v, Var) else None
    if t is None:
        return emit_zeros(tuple(v.shape), v.dtype)
    return t
