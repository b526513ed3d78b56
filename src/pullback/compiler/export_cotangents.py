"""The cotangent handling of ``pb.export``'s ``backward(*args, grad_output=...)``:
written into the exported module with this function's output structure, shapes and
dtypes (``export.py`` writes the rest).

>>> print(_shapes_text(("dict", {"y": None, "n": ("const", 3)}), iter([(2,)])))
{'y': shape (2,), 'n': 3}
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: the exported backward's cotangent handling: ``grad_output`` flattened in the output's
#: structure (checked leaf by leaf), one seed per float output (a returned argument's
#: cotangent goes straight to its gradient), unreached gradients zeros
COTANGENTS = """

def _cotangents(grad_output):
    if grad_output is None:
        if not _SCALAR_OUT:
            raise TypeError(f"{_NAME}: backward needs grad_output=, a cotangent shaped "
                            f"like the output ({_OUT_TEXT}); only a scalar output has "
                            "the default 1.0")
        return [np.ones(*_OUT_SPECS[0])], {}
    leaves = []
    _walk(_OUT_TREE, grad_output, "grad_output", leaves)
    seeds, direct = [None] * len(_OUT_SPECS), {}
    for (made, j), (where, ct) in zip(_RETURNED, leaves):
        shape, dtype = _OUT_SPECS[j] if made else _SHAPES[j][1:3]
        if not dtype.startswith(("float", "complex")):
            continue  # (an integer output has no cotangent: its value is ignored)
        array = np.asarray(ct, dtype=dtype)
        if array.shape != shape:
            raise ValueError(f"{_NAME}: {where} has shape {array.shape}; the output "
                             f"there has shape {shape}")
        if not made:
            direct[j] = array if j not in direct else direct[j] + array
        else:
            seeds[j] = array if seeds[j] is None else seeds[j] + array
    return [seeds[j] if seeds[j] is not None else np.zeros(*_OUT_SPECS[j])
            for j in _FLOAT_OUTS], direct


def _walk(tree, ct, where, leaves):
    if tree is None:
        leaves.append((where, ct))
        return
    kind, sub = tree
    if kind == "const":
        return
    if kind == "dict":
        if not isinstance(ct, dict) or sorted(ct) != sorted(sub):
            got = sorted(ct) if isinstance(ct, dict) else type(ct).__name__
            raise ValueError(f"{_NAME}: {where} is {got!r}; the output there is a dict "
                             f"with keys {sorted(sub)}")
        for k, v in sub.items():
            _walk(v, ct[k], f"{where}[{k!r}]", leaves)
        return
    if not isinstance(ct, (tuple if kind == "tuple" else list)) or len(ct) != len(sub):
        got = f"a {type(ct).__name__}" + (f" of {len(ct)}" if isinstance(
            ct, (list, tuple)) else "")
        raise ValueError(f"{_NAME}: {where} is {got}; the output there is a {kind} of "
                         f"{len(sub)}")
    for k, (v, c) in enumerate(zip(sub, ct)):
        _walk(v, c, f"{where}[{k}]", leaves)


def _pulled_back(grads, direct):
    full = []
    for slot, at in _PULLED:
        g = grads[at] if at is not None else None
        if g is None:
            g = np.zeros(_SHAPES[slot][1], _SHAPES[slot][2])
        full.append(g + direct[slot] if slot in direct else g)
    return full
"""


def cotangents(variant: Any, nums: tuple, tree: Any, scalar: bool) -> str:
    """``COTANGENTS`` with the output's structure (``tree``: export's literal of it),
    shapes and dtypes, and where each ``argnums`` leaf's gradient is among the
    backward's (None: it has none) of ``variant`` (``pb.vjp``'s)."""
    traced = variant.traced
    outs = traced.graph.outputs
    specs = [(tuple(v.shape), np.dtype(v.dtype).name) for v in outs]
    returned = variant.returned or tuple((True, j) for j in range(len(outs)))
    wrt = [k for k in variant.wrt if k < len(traced.arg_slots)]
    pulled = [(j, wrt.index(j) if j in wrt else None)
              for k in nums for j, (i, _) in enumerate(traced.arg_slots) if i == k]
    inputs = traced.graph.inputs
    shapes = iter([specs[j][0] if made else tuple(inputs[j].shape) for made, j in returned])
    text = _shapes_text(tree, shapes)
    return (f"\n_OUT_TREE = {tree!r}\n_OUT_SPECS = {specs!r}\n_RETURNED = {returned!r}\n"
            f"_FLOAT_OUTS = {[j for j, v in enumerate(outs) if v.dtype.kind in 'fc']!r}\n"
            f"_SCALAR_OUT = {scalar}\n_OUT_TEXT = {text!r}\n"
            f"_PULLED = {pulled!r}" + COTANGENTS.rstrip())


def _shapes_text(tree: Any, shapes: Any) -> str:
    """The output's structure with its arrays' shapes, for backward's messages."""
    if tree is None:
        return f"shape {next(shapes)}"
    kind, sub = tree
    if kind == "const":
        return repr(sub)
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {_shapes_text(v, shapes)}" for k, v in sub.items()) + "}"
    items = ", ".join(_shapes_text(v, shapes) for v in sub)
    return f"[{items}]" if kind == "list" else f"({items}{',' if len(sub) == 1 else ''})"


__all__ = ["cotangents", "COTANGENTS"]
