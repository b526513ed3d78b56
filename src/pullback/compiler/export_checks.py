"""What ``pb.export`` refuses because the module would differ from the program: a
Python side effect the generated code makes through pullback (a write into state
outside the function, a formatted ``print``, ``logging``, a random draw), named with
its line; and a function whose traces disagree (it reads Python state that its own
calls change, so the forward, the backward and value_and_grad would each hold another
value of it).

>>> import re, numpy as np, pullback as pb
>>> N = [0]
>>> def f(x):
...     N[0] += 1
...     return np.sum(x) * N[0]
>>> try:
...     pb.export(f, np.ones(3))
... except pb.compiler.ExportError as e:
...     for part in re.split(r"(?<=;) |(?<=,) (?=which)", str(e)):
...         print(part)
export: f (<doctest ...>:2: N[0] += 1) changes Python state outside it,
which an exported module cannot change;
move the change out of the function (or pass the state in and return its new value)
"""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from ..ir import Graph, Var
from ..ir.graph import format_param
from .effects import Effect, Method, Write
from .shipped import ExportError
from .user_lines import def_line, fname


def effect_error(key: str, value: Any, source: str, fn: Callable) -> ExportError | None:
    """The refusal of an effect the generated code calls as ``key`` (None for any other
    value): what it is, where the user wrote it, what to do instead."""
    if not isinstance(value, (Effect, Method)):
        return None
    where = _line_of(key, source)
    at = f"{fname(fn)} ({where})" if where else def_line(fn)
    if isinstance(value, Method):
        what = f"{type(value.fn.__self__).__name__}.{value.fn.__name__}"
        return ExportError(f"export: {at} draws from a random generator ({what}), whose "
                           "state an exported module cannot share with your program; draw "
                           "the numbers outside the function and pass them as an argument")
    if isinstance(value, Write):
        return ExportError(f"export: {at} changes Python state outside it, which an "
                           "exported module cannot change; move the change out of the "
                           "function (or pass the state in and return its new value)")
    what = getattr(value.fn, "__qualname__", None) or type(value.fn).__name__
    module = getattr(value.fn, "__module__", None)
    if module not in (None, "builtins"):
        what = f"{module}.{what}"
    return ExportError(f"export: {at} calls {what}, which the exported module could run "
                       "only through pullback; export writes print(...) whose arguments "
                       "are the traced values and constants themselves (print('loss', "
                       "loss)); make the call that plain or move it out of the function")


def _line_of(key: str, source: str) -> str:
    """``file.py:4: N[0] += 1``: the user's line above the first call of ``key``."""
    comment = ""
    for line in source.splitlines():
        text = line.strip()
        if text.startswith("# ") and not text.startswith("# grad of"):
            comment = text[2:]
        elif re.search(rf"\b{re.escape(key)}\(", text):
            return comment
    return ""


def check_agree(fn: Callable, variants: list) -> None:
    """Refuse ``fn`` when the traces of ``variants`` (pairs of a name and a variant:
    the forward, pb.vjp's, pb.value_and_grad's) computed their values differently."""
    first_name, first = variants[0]
    want = _shape(first.traced.graph) + _read(first.traced)
    for name, variant in variants[1:]:
        got = _shape(variant.traced.graph) + _read(variant.traced)
        if got == want:
            continue
        k = next((k for k, (a, b) in enumerate(zip(want, got)) if a != b),
                 min(len(want), len(got)))
        eqns = variant.traced.graph.eqns
        src = eqns[k].src if k < len(eqns) else None
        at = "" if src is None else f" at {src}" + (f" ({src.text})" if src.text else "")
        raise ExportError(
            f"export: {def_line(fn)} traced differently for {first_name} and for {name}"
            f"{at}: it reads Python state that its calls change (a counter, a list it "
            "appends to), so each exported function would hold another value of it; "
            "pass that state as an argument, or keep it out of the function")


def _shape(graph: Graph) -> list:
    """``graph``'s equations as plain values: ops, params, inputs numbered by definition
    (names, grad flags and detaches left out), constants by value."""
    number: dict = {v.id: k for k, v in enumerate(graph.inputs)}
    same: dict = {}  # a detach's output -> its input

    def ref(a: Any) -> Any:
        if type(a) is Var:
            a = same.get(a.id, a)
            if a.id not in number:  # a constant
                number[a.id] = len(number)
                return ("const", _value(graph.consts.get(a)))
            return number[a.id]
        return _value(a)

    rows = []
    for e in graph.eqns:
        if e.op.name == "detach" and type(e.inputs[0]) is Var:
            # (a value as it is: a nested pb.grad detaches its argument when the trace
            # does not differentiate it, as in the forward's)
            same[e.outs[0].id] = same.get(e.inputs[0].id, e.inputs[0])
            continue
        params = tuple((k, _param(v)) for k, v in e.params.items())
        rows.append((e.op.name, params, tuple(map(ref, e.inputs)),
                     tuple((str(v.dtype), tuple(v.shape)) for v in e.outs)))
        for v in e.outs:
            number[v.id] = len(number)
    rows.append(("out", tuple(None if v is None else ref(v) for v in graph.outputs)))
    rows.append(("guards", tuple(map(ref, graph.guards))))
    return rows


def _param(p: Any) -> Any:
    if isinstance(p, Graph):
        return tuple(_shape(p))
    if isinstance(p, Effect):  # (a new one per trace: what it calls)
        return (type(p).__name__, getattr(p.fn, "__qualname__", None))
    if isinstance(p, (np.ndarray, np.generic)):
        return _value(p)
    if isinstance(p, tuple):
        return tuple(_param(x) for x in p)
    text = format_param(p)
    return type(p).__name__ if " at 0x" in text else text


def _value(a: Any) -> Any:
    if isinstance(a, (np.ndarray, np.generic)):
        return (a.dtype.str, a.shape, a.tobytes())
    return repr(a)


def _read(traced: Any) -> list:
    """The values the trace read from outside the function (captured tensors)."""
    return [("captured", _value(np.asarray(t._data))) for t in traced.captures]
