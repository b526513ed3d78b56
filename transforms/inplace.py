"""inplace: write a ufunc's result into a dead input buffer the function owns.

``g2 = g1 * t`` becomes ``np.multiply(g1, t, out=g1)`` (``1 - d`` becomes
``np.subtract(1, d, out=d)``, ``rt.sigmoid(z)`` becomes ``rt.sigmoid(z, out=z)``) when
that input was made by the function itself (not an argument, not a view, not a value
something took a view of), is not read afterwards, and has the result's shape and
dtype. numpy allows ``out`` to alias any input of a ufunc. This removes an allocation
per statement. An item write into such a buffer, ``rt.index_put(R, np.s_[0, 0], 0.0)``
(a copy with the item written), is the write itself: ``R[0, 0] = 0.0``.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

import numpy as np

from pullback.ir import Eqn, Graph, Var, last_uses
from pullback.ops import OpDef
from pullback.ops import runtime as rt
from pullback.ops.elementwise import rsub, sub_op
from pullback.ops.subscripts import one_index, subscript_text
from pullback.ops.writes import view_scatter

_INTO: dict[tuple, IntoOp] = {}
_OFF: ContextVar = ContextVar("inplace_off", default=False)


@contextmanager
def disabled() -> Iterator[None]:
    """No rewriting while it is active: code for arrays that are not numpy's (Dask's,
    CuPy's), which may not take ``out=`` buffers."""
    token = _OFF.set(True)
    try:
        yield
    finally:
        _OFF.reset(token)


def is_disabled() -> bool:
    """Whether ``disabled()`` is active (generated code differs: a cache key reads it)."""
    return _OFF.get()


class IntoOp(OpDef):
    """The out= form of a ufunc op (or of an ``OUT_HELPERS`` one), writing into input
    ``out_arg`` (codegen-only; not in the op table)."""

    __slots__ = ("ufunc", "out_arg")


#: rt's plain-numpy helpers that take ``out=`` (which may be their input) as a ufunc does
OUT_HELPERS = frozenset({rt.sigmoid})


def writes_out(f: object) -> bool:
    """Whether ``f(*inputs, out=buffer)`` writes its result into ``buffer``: an elementwise
    ufunc (not a gufunc such as matmul) or one of ``OUT_HELPERS``."""
    if isinstance(f, np.ufunc):
        return f.nout == 1 and f.signature is None
    return f in OUT_HELPERS


def into_op(op: OpDef, k: int) -> IntoOp:
    v = _INTO.get((op.name, k))
    if v is None:
        ufunc = op.forward
        v = _INTO[op.name, k] = IntoOp(f"{op.name}_into", lambda *a: ufunc(*a, out=a[k]),
                                       fresh=True)
        v.ufunc, v.out_arg = ufunc, k
    return v


def _put_text(e: Eqn, a: list, lit: Any) -> str:
    """``x[index] = v`` (a numpy scalar ``v`` as its number: the write casts it alike)."""
    index = one_index(e.params["chain"])
    src = e.inputs[1]
    value = lit(src.item()) if isinstance(src, np.generic) else a[1]
    return f"{a[0]}[{subscript_text(index, lit, False)}] = {value}"


#: ``view_scatter`` of one basic index, written into its input (codegen-only)
PUT_INTO = IntoOp("view_scatter_into", view_scatter.forward, fresh=True, template=_put_text)
PUT_INTO.ufunc, PUT_INTO.out_arg = None, 0


def _puts_into(e: Eqn) -> bool:
    """Whether ``view_scatter`` ``e`` writes one item (or a basic slice) of a copy of
    its first input (and not the input itself)."""
    return one_index(e.params["chain"]) is not None and e.inputs[1] is not e.inputs[0]


def owned(e: Eqn) -> bool:
    """Whether the equation's result is a fresh array nothing else refers to (never
    said of the outputs of an op with several)."""
    if e.out is None:
        return False
    fresh = e.op.fresh
    if callable(fresh):
        return fresh(e)
    return fresh and e.out.shape != ()


def inplace(graph: Graph, ufuncs: bool = True) -> Graph:
    """Rewrite every eligible ufunc equation to write into a dead input (``ufuncs``
    False: only the item writes, ``R[0, 0] = 0.0``)."""
    if _OFF.get():
        return graph
    last_use = last_uses(graph)
    # a buffer something takes a view of is shared from then on: never written into,
    # also when it is the buffer of an out= result (the view reads it after its last use)
    viewed = {a.id for e in graph.eqns if e.op.aliases for a in e.inputs if isinstance(a, Var)}
    owner = {e.out.id: e for e in graph.eqns if owned(e) and e.out.id not in viewed}
    # 1 - d is rsub(d, 1): as sub(1, d) it is the ufunc np.subtract
    eqns = [e.replace(sub_op, e.inputs[::-1]) if e.op is rsub else e for e in graph.eqns]
    for i in range(len(eqns)):
        e = eqns[i]
        if e.op is view_scatter and _puts_into(e):
            a = e.inputs[0]
            if isinstance(a, Var) and a.id in owner and last_use.get(a.id) == i:
                eqns[i] = e.replace(PUT_INTO)
                if e.out.id not in viewed:
                    owner[e.out.id] = eqns[i]
            continue
        if not ufuncs or not writes_out(e.op.forward):
            continue
        for k, a in enumerate(e.inputs):
            if (isinstance(a, Var) and a.id in owner and last_use.get(a.id) == i
                    and a.shape == e.out.shape and a.dtype == e.out.dtype
                    and sum(x is a for x in e.inputs) == 1):
                eqns[i] = e.replace(into_op(e.op, k))
                if e.out.id not in viewed:  # the rewritten result is that buffer
                    owner[e.out.id] = eqns[i]
                break
    return graph.replace(eqns=eqns)
