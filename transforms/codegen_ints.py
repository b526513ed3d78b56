"""Loop counters as Python ints: the int64 scalars of a function that only count and
index (``for j in range(1, m + 1)``'s ``j``, ``j - 1``, ``R[i, j]``) start from a Python
int in the generated code, as in the user's own loop, not from ``np.int64(1)``: numpy's
scalar arithmetic and indexing by a numpy scalar cost about 0.5 us a cell of soft-DTW's
table, a Python int's a fraction of it. The values are the same: an index of either
kind reads the same item, a list of either stacks to the same int64 array.

A value counts when every use of it (and of what it flows into: a loop's carry, its
next value, the loop's result, a per-step saving read back by a later loop) is an
index of an item read or write, or an integer ``add``/``sub`` whose result counts too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.ir import Graph, Var, every_eqn

_ITEMS = {"item": 1, "item_put": 2, "item_add": 2, "item_put_into": 2, "item_add_into": 2}
_STEPS = ("add", "sub")


class _Classes:
    """Union-find over values (by id), with a mark for the classes a use rules out."""

    def __init__(self) -> None:
        self.parent: dict = {}
        self.bad: set = set()

    def find(self, k: Any) -> Any:
        root = k
        while self.parent.get(root, root) != root:
            root = self.parent[root]
        while k != root:
            self.parent[k], k = root, self.parent.get(k, k)
        return root

    def union(self, a: Any, b: Any) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb
            if ra in self.bad:
                self.bad.add(rb)

    def spoil(self, k: Any) -> None:
        self.bad.add(self.find(k))


def int_literal(v: Any) -> bool:
    """Whether ``v`` is an int written in the trace (Python's, numpy's, a 0-d array)."""
    return type(v) is not bool and isinstance(v, (int, np.integer)) or \
        type(v) is np.ndarray and v.shape == () and v.dtype.kind in "iu"


def _counter(v: Any) -> bool:
    return type(v) is Var and v.shape == () and np.dtype(v.dtype) == np.int64


def plain_ints(graph: Graph, guarded: Any = ()) -> set:
    """The ids of the int64 scalars of ``graph`` (and its regions) that may be Python
    ints in the generated code (not those ``guarded``; what the function returns is
    written ``np.int64(i)``)."""
    c = _Classes()
    seen: set = set()
    for e in every_eqn(graph):
        seen.update(v.id for v in e.outs if _counter(v))
        if e.op.name == "scan":
            _scan(c, e)
            continue
        for g in _graphs(e):  # (another region's results: kept as numpy's)
            for v in g.outputs:
                if _counter(v):
                    c.spoil(v.id)
        for pos, a in enumerate(e.inputs):
            if not _counter(a):
                continue
            seen.add(a.id)
            if _indexes(e, pos):
                continue
            if e.op.name in _STEPS and _counter(e.out) and all(
                    _counter(b) or type(b) is int for b in e.inputs):
                c.union(a.id, e.out.id)
                continue
            c.spoil(a.id)
    for v in graph.outputs:  # (what the function returns keeps numpy's types)
        if type(v) is Var:
            c.spoil(v.id)
    out = {k for k in seen if c.find(k) not in c.bad}
    import os
    if os.environ.get("DBG"):
        for e in every_eqn(graph):
            for pos, a in enumerate(e.inputs):
                if _counter(a) and a.id not in out:
                    print("spoiled", e.op.name, pos, a.id, a.name)
    return out


def _graphs(e: Any) -> list:
    return [g for p in e.params.values() for g in (p if isinstance(p, tuple) else (p,))
            if isinstance(g, Graph)]


def _indexes(e: Any, pos: int) -> bool:
    """Whether input ``pos`` of ``e`` is an index of an item read or write."""
    tail = _ITEMS.get(e.op.name)
    return tail is not None and 0 < pos <= len(e.inputs) - tail


def _scan(c: _Classes, e: Any) -> None:
    """A loop's values in the classes of what they flow into. A stacked array (a
    per-step output, a carry saved per step, an array walked) shares its items' class:
    the array is the same whichever kind of int its items were."""
    p = e.params
    body, n_carry, n_xs = p["body"], p["n_carry"], p["n_xs"]
    ins, b_in, outs = e.inputs, body.inputs, e.outs
    n_y = len(body.outputs) - n_carry
    for k in range(n_carry):
        _join(c, [ins[k], b_in[k], body.outputs[k], outs[k],
                  *outs[n_carry + n_y + k:n_carry + n_y + k + 1]])
    for k in range(n_xs):
        _join(c, [b_in[n_carry + k], ins[n_carry + k]])
    for outer, inner in zip(ins[n_carry + n_xs:], b_in[n_carry + n_xs:]):
        _join(c, [outer, inner])
    for k in range(n_y):
        _join(c, [body.outputs[n_carry + k], outs[n_carry + k]])


def _join(c: _Classes, group: list) -> None:
    """One class for ``group``'s int64 values (literals stand for themselves); spoiled
    when another is a value of another dtype or a literal not an int."""
    keys = [v.id for v in group if type(v) is Var and np.dtype(v.dtype) == np.int64]
    if not keys:
        return
    for k in keys[1:]:
        c.union(keys[0], k)
    if any(type(v) is Var and v.id not in keys or type(v) is not Var
           and not int_literal(v) for v in group):
        c.spoil(keys[0])
