"""A loop's item writes in place: where a scan's carry is a table the loop owns, its
body's ``item_put``/``item_add`` (ops/items.py) write into it, as a hand-written loop
does, instead of making a copy of the table per step::

    R_3 = ops.item_put(R_3, i, j, t56, where=(None, None))   ->   R_3[i, j] = t56
    g_R = ops.item_add(g_R, t34, j, g_a, where=(None, None))  ->   g_R[t34, j] += g_a

A write is in place when, in the step, the table's value is read by no one after it
but item reads (which are copies, moved before the write), is kept by no step's
output (the backward keeps the items it reads, not the table), and the chain of
writes ends as the carry's new value. The loop owns the table when the carry's
initial value is a fresh array only this loop reads, made in the same graph; else the
loop starts from a copy of it (one per run of the loop, not one per step).
"""

from __future__ import annotations

from typing import Any

from pullback.ir import Graph, Var
from pullback.ops.items import item_add_op, item_op, item_put_op, spelled

from .inplace import IntoOp

_WRITES = {item_put_op: "=", item_add_op: "+="}
_INTO: dict = {}


def _into(op: Any) -> IntoOp:
    """The in-place statement of ``op``: ``x[i, j] = v`` (``+=`` for item_add)."""
    v = _INTO.get(op.name)
    if v is None:
        sign = _WRITES[op]
        v = _INTO[op.name] = IntoOp(
            f"{op.name}_into", op.forward, fresh=True,
            template=lambda e, a, lit: f"{spelled(e, a[:-1], lit)} {sign} {a[-1]}")
        v.ufunc, v.out_arg = None, 0
    return v


def items_in_place(body: Graph, b_carry: tuple, saved: set) -> tuple[Graph, list]:
    """The body with its carries' item writes in place where they may be, and the
    positions of the carries written so."""
    eqns = list(body.eqns)
    done = []
    for k, old in enumerate(b_carry):
        if old.id in saved:
            continue
        chain = _chain(eqns, body, old, k)
        if chain:
            done.append(k)
    return body.replace(eqns=eqns), done


def _chain(eqns: list, body: Graph, old: Var, k: int) -> list:
    """Rewrite (in ``eqns``) the writes into carry ``k``'s table, in order; the
    rewritten equations (none when the chain does not end as the carry's new value)."""
    cur, chain, trial = old, [], list(eqns)
    outs = [v for v in body.outputs if type(v) is Var]
    while True:
        writers = [p for p, q in enumerate(trial) if q.op in _WRITES
                   and q.inputs[0] is cur and sum(a is cur for a in q.inputs) == 1]
        if len(writers) != 1 or any(v is cur for v in outs):
            break
        q = trial[writers[0]]
        if not _hoist(trial, writers[0], cur):
            break
        p = next(n for n, x in enumerate(trial) if x is q)
        trial[p] = trial[p].replace(_into(trial[p].op))
        chain.append(trial[p])
        cur = trial[p].out
    ends = [n for n, v in enumerate(body.outputs) if type(v) is Var and v is cur]
    if not chain or ends != [k]:
        return []
    eqns[:] = trial
    return chain


def _hoist(eqns: list, p: int, cur: Var) -> bool:
    """Move the item reads of ``cur`` after the write at ``p`` to just before it; False
    when ``cur`` has another reader after the write, or one before it whose result may
    be ``cur`` itself."""
    made = {v.id: n for n, q in enumerate(eqns) for v in q.outs}
    later = []
    for n, q in enumerate(eqns):
        if n == p or not any(a is cur for a in q.inputs):
            continue
        if n < p:  # (a view, or a region that may give the table back, sees the write)
            if q.op.aliases or q.op.name in ("scan", "while", "switch"):
                return False
            continue
        if q.op is not item_op or any(a is cur for a in q.inputs[1:]) or any(
                type(a) is Var and made.get(a.id, -1) >= p for a in q.inputs[1:]):
            return False
        later.append(q)
    if later:
        rest = [q for q in eqns[p:] if not any(q is r for r in later)]
        eqns[p:] = later + rest
    return True
