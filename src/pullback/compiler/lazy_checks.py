"""What generated code cannot run lazily on Dask arrays, refused at trace time: a step
that would compute a value of the data in Python on every call.

- a branch chosen by such a value (``pb.cond``, or an ``if`` the source pass made a
  branch of: one in a loop, say): generated code runs ``if t3:``;
- a ``pb.while_loop`` whose condition reads such a value: ``if not t6: break``;
- a custom ``autograd.Function`` applied to such a value (``scipy.integrate.odeint``'s
  is one: its field runs in Python, step by step, on numpy arrays).

A value derived only from numpy arguments (a loop over numpy weights) is not refused.
The error names the step, the argument and the user's line, as ``if loss > 1:`` on a
traced value is refused (``trace.py``).
"""

from __future__ import annotations

from typing import Any

from ..array_libraries import kind_of_array
from ..ir import Graph, Var
from ..pytree import tree_leaves
from .user_lines import TraceError


def refuse_python_steps(graph: Graph, slots: list, args: tuple, names: list, how: str,
                        where: str) -> None:
    """Raise ``TraceError`` for the first step of ``graph`` (traced on ``args``; graph
    input k is the argument leaf ``slots[k]``) that would compute a Dask array."""
    lazy = {}
    for v, (i, path) in zip(graph.inputs, slots):
        leaf = args[i] if not path else tree_leaves(args[i])[path[0]]
        if kind_of_array(leaf) is not None:
            lazy[v.id] = names[i]
    if lazy:
        _walk(graph, lazy, how, where)


def _walk(graph: Graph, lazy: dict, how: str, where: str) -> dict:
    """Walk ``graph``, whose inputs in ``lazy`` (var id -> argument name) hold the
    data; returns ``lazy`` with every value derived from them."""
    made = {}  # var id -> the equation that made it (a branch's test: the user's if)
    for e in graph.eqns:
        made.update((v.id, e) for v in e.outs if type(v) is Var)
        read = [lazy[a.id] for a in e.inputs if type(a) is Var and a.id in lazy]
        if not read:
            continue
        what = _python_step(e, lazy, how, where)
        if what:
            test = made.get(getattr(e.inputs[0], "id", None)) if e.op.name == "switch" else None
            line = (test if test is not None and test.src is not None else e).src
            src = f" at {line} ({line.text.strip()})" if line is not None else ""
            raise TraceError(
                f"{how}: {where}: {what}{src} reads argument {read[0]!r}, a Dask array, "
                "in Python: on Dask arrays that would compute it on every call, inside "
                "pullback; keep the computation in array operations (np.where instead "
                "of a branch), or compute that input first")
        lazy.update((v.id, read[0]) for v in e.outs if type(v) is Var)
    return lazy


def _python_step(e: Any, lazy: dict, how: str, where: str) -> str | None:
    """What ``e`` (which reads a lazy value) runs in Python on it, or None."""
    p = e.params
    if "runner" in p:
        return f"a custom autograd.Function ({p['runner']!r}), which runs in Python,"
    name = e.op.name
    if name == "switch":
        first = e.inputs[0]
        if type(first) is Var and first.id in lazy:
            return "a branch chosen by a traced value (pb.cond, or an if in a loop)"
        return _inside(p["branches"], e.inputs[1:], lazy, how, where)
    if name == "while":
        return _loop(p["cond"], p["body"], p["n_carry"], e.inputs, lazy, how, where)
    if name == "scan":
        return _loop(None, p["body"], p["n_carry"], e.inputs, lazy, how, where)
    return None


def _inside(graphs: Any, inputs: tuple, lazy: dict, how: str, where: str) -> None:
    """Walk the region graphs (a branch's) on ``inputs``: refuses what is inside."""
    for g in graphs:
        _walk(g, _bound(g, inputs, lazy), how, where)
    return None


def _bound(g: Graph, inputs: tuple, lazy: dict) -> dict:
    return {bv.id: lazy[v.id] for bv, v in zip(g.inputs, inputs)
            if type(v) is Var and v.id in lazy}


def _loop(cond: Graph | None, body: Graph, n_carry: int, inputs: tuple, lazy: dict,
          how: str, where: str) -> str | None:
    """A loop on ``inputs`` (its carries first): its carries are lazy once the body
    makes them so (walked to a fixed point); a while whose condition reads them is
    refused, and what the body runs is walked."""
    inner = _bound(body, inputs, lazy)
    while True:
        out = _walk(body, dict(inner), how, where)
        more = {bv.id: out[o.id] for bv, o in zip(body.inputs[:n_carry], body.outputs)
                if type(o) is Var and o.id in out and bv.id not in inner}
        if not more:
            break
        inner.update(more)
    if cond is None:
        return None
    carried = {cv.id: inner[bv.id] for cv, bv in zip(cond.inputs, body.inputs)
               if bv.id in inner}
    out = _walk(cond, carried, how, where)
    test = cond.outputs[0]
    if type(test) is Var and test.id in out:
        return "a pb.while_loop whose condition reads a traced value"
    return None
