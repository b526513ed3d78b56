"""inplace: write a ufunc's result into a dead input buffer the backward owns.

``g2 = g1 * t`` becomes ``np.multiply(g1, t, out=g1)`` when ``g1`` was made by the
backward itself (not a view, not a saved or input value), is not read afterwards,
and has the result's shape and dtype. This removes an allocation per statement.
"""

from __future__ import annotations

import numpy as np

from pullback.compiler.ir import Eqn, Graph, Var
from pullback.ops.registry import OpDef

_VIEWISH = {"reshape", "view_chain", "expand", "squeeze", "unsqueeze", "select", "slice"}
_COMMUTATIVE = {"add", "mul", "maximum", "minimum"}
_INTO: dict[str, OpDef] = {}


def into_op(op: OpDef) -> OpDef:
    """The out= form of a ufunc op (codegen-only; not in the op table)."""
    v = _INTO.get(op.name)
    if v is None:
        ufunc = op.forward
        v = _INTO[op.name] = OpDef(op.name + "_into", lambda *a: ufunc(*a, out=a[0]),
                                   None, None, None, False)
        v.doc = ufunc.__name__
    return v


_FRESH = {"sum_dim", "mean_dim", "mm", "bmm", "mv", "addmm", "cast", "index_backward", "embed",
          "view_scatter", "softmax", "log_softmax", "where", "clone", "one_hot"}


def _owned(e: Eqn) -> bool:
    """Whether the equation's result is a fresh array nothing else refers to."""
    if e.op.is_view or e.out.shape == ():
        return False
    return isinstance(e.op.forward, np.ufunc) or e.op.name in _FRESH or e.op.name.endswith("_into")


def inplace(graph: Graph, owned_from: int = 0) -> Graph:
    """Rewrite eligible ufunc equations at index >= ``owned_from`` (the backward part)."""
    last_use: dict[int, int] = {}
    for i, e in enumerate(graph.eqns):
        for a in e.inputs:
            if isinstance(a, Var):
                last_use[a.id] = i
    for v in graph.outputs:
        if isinstance(v, Var):
            last_use[v.id] = len(graph.eqns)
    # a buffer something takes a view of is shared from then on: never written into
    viewed = {a.id for e in graph.eqns if e.op.is_view or e.op.name in _VIEWISH
              for a in e.inputs if isinstance(a, Var)}
    owner = {e.out.id: e for e in graph.eqns[owned_from:] if _owned(e) and e.out.id not in viewed}
    eqns = list(graph.eqns)
    for i in range(owned_from, len(eqns)):
        e = eqns[i]
        if not isinstance(e.op.forward, np.ufunc) or e.op.forward.nout != 1:
            continue
        order = range(len(e.inputs)) if e.op.name in _COMMUTATIVE else range(1)
        for k in order:
            a = e.inputs[k]
            if (isinstance(a, Var) and a.id in owner and last_use.get(a.id) == i
                    and a.shape == e.out.shape and a.dtype == e.out.dtype
                    and sum(x is a for x in e.inputs) == 1):
                inputs = (a,) + tuple(x for j, x in enumerate(e.inputs) if j != k)
                eqns[i] = Eqn(into_op(e.op), inputs, e.out, e.params, e.src, e.block)
                owner[e.out.id] = eqns[i]
                break
    return graph.replace(eqns=eqns)
