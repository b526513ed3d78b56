"""Forward mode's own rules for a scan and a while loop (regions.py): a loop carrying
(primal, tangent) pairs, whose body is the forward body's tangent (``tangent.py``),
made once per body.

Derived from the reverse rule by transposition (``transpose.py``), the tangent of a
scan was a reverse loop's transpose: the forward loop, a loop over the reverse body's
adjoint, about three times the work of the direct tangent loop. Here the carries'
tangents are carries, the walked arrays' tangents are walked, the consts' tangents are
consts, and the per-step outputs' tangents are stacked as the outputs are:

    c, ct, ys, yts, saved, saved_t = scan(c0, ct0, xs, xts, k, kt,
                                          body=tangent(body), n_carry=2, n_xs=2)

A while loop's is a while loop over the same pairs, its condition the primal one's.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from pullback.ir import Graph, Var, every_eqn, naming
from pullback.ops import OPS
from pullback.ops.elementwise import zeros_like

from .cse import cse
from .dce import dce
from .peephole import peephole
from .regions_batch import scan_parts
from .tangent import tangent


def _is_float(v: Any) -> bool:
    return np.dtype(v.dtype).kind in "fc"


def scan_jvp(tangents: list, out: tuple, inputs: tuple, body: Graph, length: int | None,
             n_carry: int, n_xs: int, reverse: bool, remat: bool = False) -> Any:
    """The tangents of a scan's outputs (None for those of no float value), from one
    scan over the body's tangent; NotImplemented (the transposed rule) for a body with
    an output that is not a value of its own, or that holds a branch (a loop with an
    early return: under jacfwd's batched columns its tangent came out unbatched, numpy
    fuzz seed 1254; the transposed rule is right there)."""
    if not all(isinstance(v, Var) for v in body.outputs) \
            or any(e.op.name == "switch" for e in every_eqn(body)):
        return NotImplemented
    carries, xs, consts = scan_parts(inputs, n_carry, n_xs)
    t_c, t_x, t_k = scan_parts(tuple(tangents), n_carry, n_xs)
    b_c, _, _ = scan_parts(body.inputs, n_carry, n_xs)
    fc = tuple(k for k, v in enumerate(b_c) if _is_float(v))
    fx = tuple(k for k, t in enumerate(t_x) if t is not None)
    fk = tuple(k for k, t in enumerate(t_k) if t is not None)
    g, fy = tangent_body(body, n_carry, n_xs, fc, fx, fk)
    init = [zeros_like(carries[k]) if t_c[k] is None else t_c[k] for k in fc]
    res = OPS["scan"](*carries, *init, *xs, *[t_x[k] for k in fx], *consts,
                      *[t_k[k] for k in fk], body=g, length=length,
                      n_carry=n_carry + len(fc), n_xs=n_xs + len(fx), reverse=reverse,
                      remat=remat)
    n_y, c2 = len(body.outputs) - n_carry, n_carry + len(fc)
    result: list = [None] * len(out)
    for j, k in enumerate(fc):
        result[k] = res[n_carry + j]
        result[n_carry + n_y + k] = res[c2 + n_y + len(fy) + n_carry + j]
    for j, k in enumerate(fy):
        result[n_carry + k] = res[c2 + n_y + j]
    return result


_BODIES: dict[tuple, tuple] = {}  # (id(body), fc, fx, fk) -> (body, (graph, fy))
_LOCK = threading.Lock()


def tangent_body(body: Graph, n_carry: int, n_xs: int, fc: tuple, fx: tuple,
                 fk: tuple) -> tuple:
    """``(carry..., carry_t..., x..., x_t..., k..., k_t...) -> (carry..., carry_t...,
    y..., y_t...)``: the body and its tangent in one step, the tangents of the float
    carries ``fc``, the walked arrays ``fx`` and the consts ``fk``; and ``fy``, the
    float per-step outputs whose tangents it gives."""
    key = (id(body), fc, fx, fk)
    with _LOCK:
        hit = _BODIES.get(key)
        if hit is not None and hit[0] is body:
            return hit[1]
    b_c, b_x, b_k = scan_parts(body.inputs, n_carry, n_xs)
    like = lambda v: Var(v.shape, v.dtype, np.zeros(v.shape, v.dtype),  # noqa: E731
                         name=naming.TANGENT_PREFIX + (v.name or "v"))
    t_c, t_x, t_k = ([like(b[k]) for k in f] for b, f in ((b_c, fc), (b_x, fx), (b_k, fk)))
    wrt = [b_c[k] for k in fc] + [b_x[k] for k in fx] + [b_k[k] for k in fk]
    joint = tangent(body, wrt, t_c + t_x + t_k)
    outs_t = joint.outputs[len(body.outputs):]
    ys = body.outputs[n_carry:]
    fy = tuple(j for j, v in enumerate(ys) if _is_float(v))
    graph = Graph([*b_c, *t_c, *b_x, *t_x, *b_k, *t_k], joint.eqns,
                  [*body.outputs[:n_carry], *[outs_t[k] for k in fc], *ys,
                   *[outs_t[n_carry + j] for j in fy]], joint.consts,
                  name=body.name + "_jvp")
    for p in (peephole, cse, dce):
        graph = p(graph)
    with _LOCK:
        if len(_BODIES) > 1024:
            _BODIES.clear()
        _BODIES[key] = (body, (graph, fy))
    return graph, fy


def while_jvp(tangents: list, out: tuple, inputs: tuple, cond: Graph, body: Graph,
              n_carry: int, n_ys: int = 0) -> Any:
    """The tangents of a while loop's outputs (its last carries and saved steps), from
    a scan over the saved steps the loop took (as long as it ran: its reverse's
    length), carrying the carries' tangents: the primal loop is not run again, and
    under ``vmap`` the scan is masked per element as the reverse is."""
    consts, saved = inputs[n_carry:], out[n_carry + 1:]
    t_c, t_k = tangents[:n_carry], tangents[n_carry:]
    fc = tuple(k for k, v in enumerate(body.inputs[:n_carry]) if _is_float(v))
    fk = tuple(k for k, t in enumerate(t_k) if t is not None)
    g = _tangent_steps(body, n_carry, fc, fk)
    init = [zeros_like(inputs[k]) if t_c[k] is None else t_c[k] for k in fc]
    res = OPS["scan"](*init, *saved[:n_carry], *consts, *[t_k[k] for k in fk], body=g,
                      length=None, n_carry=len(fc), n_xs=n_carry, reverse=False)
    fy = [j for j, v in enumerate(body.outputs[n_carry:]) if _is_float(v)]
    at = len(fc) + n_ys + len(fy)  # (the scan's stacked ys, then the ys' tangents)
    result: list = [None] * len(out)
    for j, k in enumerate(fc):
        result[k] = res[j]
        result[n_carry + 1 + k] = res[at + j]
    for j, k in enumerate(fy):  # (the per-step outputs' tangents, stacked as they are)
        result[2 * n_carry + 1 + k] = res[len(fc) + n_ys + j]
    return result


def _tangent_steps(body: Graph, n_carry: int, fc: tuple, fk: tuple) -> Graph:
    """``(carry_t..., carry..., k..., k_t...) -> (carry_t...)``: one step of a while
    loop's tangent, its primal carries walked (the saved steps)."""
    key = ("steps", id(body), fc, fk)
    with _LOCK:
        hit = _BODIES.get(key)
        if hit is not None and hit[0] is body:
            return hit[1]
    g, _ = tangent_body(body, n_carry, 0, fc, (), fk)
    m = len(fc)
    graph = dce(Graph([*g.inputs[n_carry:n_carry + m], *g.inputs[:n_carry],
                       *g.inputs[n_carry + m:]], g.eqns, list(g.outputs[n_carry:]), g.consts,
                      name=body.name + "_jvp"))
    with _LOCK:
        _BODIES[key] = (body, graph)
    return graph
