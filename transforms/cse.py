"""cse: compute each (op, inputs, params) once; later copies reuse the first result."""

from __future__ import annotations

from typing import Any

import numpy as np

from pullback.ir import Graph, Var


def _key(x: Any) -> Any:
    """A hashable stand-in for an input or param (arrays and unhashables by identity)."""
    if isinstance(x, Var):
        return ("v", x.id)
    if isinstance(x, np.ndarray):
        return ("a", id(x))
    if isinstance(x, (tuple, list)):
        return tuple(_key(y) for y in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _key(v)) for k, v in x.items()))
    if isinstance(x, slice):
        return ("s", x.start, x.stop, x.step)
    try:
        hash(x)
    except TypeError:
        return ("id", id(x))
    return (type(x).__name__, x)


def _params_key(params: dict) -> Any:
    """Most params are ints and tuples: hash them as they are; else build a key."""
    items = tuple(params.items())
    try:
        hash(items)
        return items
    except TypeError:
        return _key(params)


def cse(graph: Graph) -> Graph:
    seen: dict = {}
    rename: dict[int, Var] = {}
    eqns = []
    for e in graph.eqns:
        inputs = e.inputs
        if rename:
            inputs = tuple([rename.get(a.id, a) if type(a) is Var else a for a in inputs])
        key = (e.op.name, tuple([a.id if type(a) is Var else _key(a) for a in inputs]),
               _params_key(e.params))
        prev = seen.get(key) if e.op.pure else None  # random draws are never merged
        # a forward equation never reuses a tangent's or adjoint's (``block``) result:
        # split would leave the forward reading a value only the other part computes
        if prev is not None and (e.block is not None or prev[1] is None):
            for v, p in zip(e.outs, prev[0]):
                rename[v.id] = p
            continue
        seen[key] = (e.outs, e.block)
        eqns.append(e.replace(inputs=inputs) if inputs is not e.inputs and any(
            a is not b for a, b in zip(inputs, e.inputs)) else e)
    outputs = [rename.get(v.id, v) if isinstance(v, Var) else v for v in graph.outputs]
    guards = [rename.get(v.id, v) for v in graph.guards]
    return graph.replace(eqns=eqns, outputs=outputs, guards=guards)
