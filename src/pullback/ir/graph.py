"""The IR's values and equations: a flat SSA list of ``out = op[params](inputs)``.

A ``Graph`` has input variables, equations in order, and output variables. Every
``Var`` knows its shape and dtype; while a trace is being recorded it also carries
the concrete value it had (``_data``), so the VJP rules can run on Vars exactly as
they run on arrays: an op applied to a Var appends an equation to the active
builder (see builder.py).

>>> import numpy as np
>>> from pullback.ir import Graph, Var, Eqn
>>> from pullback.ops import OPS
>>> x = Var((3,), np.float32, name="x")
>>> y = Var((3,), np.float32, name="y")
>>> g = Graph([x], [Eqn(OPS["exp"], (x,), y, {})], [y])
>>> print(g)
{ lambda x:f32[3] .
  let y:f32[3] = exp x
  in (y) }
"""

from __future__ import annotations

import itertools
import threading
from typing import Any, Iterable

import numpy as np

from ..ops.table.methods import ValueMethods
from ..ops.table.registry import OpDef, dispatcher
from .naming import Namespace

_ids = itertools.count()
_SHORT = {"float16": "f16", "float32": "f32", "float64": "f64", "int64": "i64", "int32": "i32",
          "bool": "bool", "complex64": "c64", "complex128": "c128", "int8": "i8", "uint8": "u8",
          "int16": "i16"}


#: the builder that ops on Vars record into, per thread (see builder.py)
ACTIVE = threading.local()


def current() -> Any:
    b = getattr(ACTIVE, "builder", None)
    if b is None:
        raise RuntimeError("an op was applied to an IR value outside of a trace")
    return b


def _emit(op: OpDef, args: tuple, params: dict) -> Any:
    return current().emit(op, args, params)


class Var(ValueMethods):
    """An IR value: shape, dtype, a name hint, and (while tracing) its concrete value.

    Vars support the Tensor operators and methods; each op on Vars records an
    equation into the active builder (see builder.py).
    """

    __slots__ = ("id", "shape", "dtype", "name", "_data", "__weakref__")
    _pb_dispatch = dispatcher(2)(_emit)
    # numpy defers to the Var's operators: ``array / var`` records a division (as a
    # batching rule does with a folded constant), never an object array of Vars
    __array_ufunc__ = None

    def __init__(self, shape: tuple, dtype: Any, value: Any = None, name: str | None = None):
        self.id = next(_ids)
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.name = name
        self._data = value

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __hash__(self) -> int:
        return self.id

    def __eq__(self, other: Any) -> Any:  # elementwise, like Tensor
        return ValueMethods.__eq__(self, other)

    def __bool__(self) -> bool:
        raise TypeError("an IR value has no truth value: VJP rules must not branch on data")

    def __repr__(self) -> str:
        return f"Var({self.name or self.id}:{type_str(self)})"


def type_str(v: Var) -> str:
    return f"{_SHORT.get(v.dtype.name, v.dtype.name)}[{','.join(str(n) for n in v.shape)}]"


class Eqn:
    """``out = op[params](*inputs)``; inputs are Vars or Python/numpy constants. An op
    with several outputs (split, sort) has them all in ``outs`` (``out`` is None); any
    other has its one output in both, ``out`` and ``outs[0]``."""

    __slots__ = ("op", "inputs", "out", "outs", "params", "src", "block", "nograd",
                 "keeps_history")

    def __init__(self, op: OpDef, inputs: tuple, out: Var | tuple, params: dict,
                 src: Any = None, block: Any = None, nograd: bool = False,
                 keeps_history: bool = False) -> None:
        self.op = op
        self.inputs = inputs
        if type(out) is tuple:
            self.out, self.outs = None, out
        else:
            self.out, self.outs = out, (out,)
        self.params = params
        self.src = src  # SourceLine of the user's code that ran this op
        self.block = block  # for backward equations: the forward Eqn whose grad this is
        self.nograd = nograd  # the program ran it with grad disabled: no gradient flows
        # an in-place write that leaves its target's autograd history as it was (made
        # under no_grad, or through a detach()ed alias): the result's gradient goes to
        # inputs[0], the target's old value, unchanged; none goes to the other inputs
        self.keeps_history = keeps_history

    def replace(self, op: OpDef | None = None, inputs: tuple | None = None) -> Eqn:
        """A copy with another op and/or inputs (every other field kept)."""
        return Eqn(op or self.op, self.inputs if inputs is None else inputs,
                   self.outs if self.out is None else self.out, self.params, self.src,
                   self.block, self.nograd, self.keeps_history)

    def __repr__(self) -> str:
        return format_eqn(self, {})


class Graph:
    """inputs -> equations -> outputs; ``consts`` are arrays bound by reference."""

    __slots__ = ("inputs", "eqns", "outputs", "consts", "name", "guards")

    def __init__(self, inputs: list, eqns: list, outputs: list, consts: dict | None = None,
                 name: str = "f", guards: list | None = None) -> None:
        self.inputs = list(inputs)
        self.eqns = list(eqns)
        self.outputs = list(outputs)
        self.consts = dict(consts or {})
        self.name = name
        self.guards = list(guards or [])  # values whose Python value a call must reproduce

    def __str__(self) -> str:
        return format_graph(self)

    def replace(self, **changes: Any) -> Graph:
        new = Graph(self.inputs, self.eqns, self.outputs, self.consts, self.name, self.guards)
        for k, v in changes.items():
            setattr(new, k, v)
        return new


def every_eqn(graph: Graph) -> Iterable[Eqn]:
    """The graph's equations and those of the regions in them (loop bodies, branches),
    walked iteratively."""
    stack = [graph]
    while stack:
        g = stack.pop()
        for e in g.eqns:
            yield e
            for p in e.params.values():
                if isinstance(p, Graph):
                    stack.append(p)
                elif isinstance(p, tuple):
                    stack.extend(q for q in p if isinstance(q, Graph))


# ------------------------------------------------------------------ the printer
def _names(graph: Graph) -> dict:
    """Readable, unique names for printing: name hints, else t0, t1, ..."""
    ns = Namespace()
    names: dict = {}
    for v in _all_vars(graph):
        if v.id not in names:
            names[v.id] = ns.fresh(v.name)
    return names


def _all_vars(graph: Graph) -> Iterable[Var]:
    yield from graph.inputs
    yield from graph.consts
    for e in graph.eqns:
        for a in e.inputs:
            if isinstance(a, Var):
                yield a
        yield from e.outs


def format_value(a: Any, names: dict) -> str:
    if isinstance(a, Var):
        return names.get(a.id) or a.name or f"v{a.id}"
    return format_param(a)


def format_param(p: Any) -> str:
    if isinstance(p, Graph):  # a region's body: nested, indented under its equation
        return format_graph(p).replace("\n", "\n    ")
    if isinstance(p, np.ndarray):
        return f"array<{type_str(Var(p.shape, p.dtype))}>" if p.size > 4 else repr(p.tolist())
    if isinstance(p, np.dtype):
        return p.name
    if isinstance(p, float):
        return repr(p)
    if isinstance(p, tuple) and p and isinstance(p[0], tuple) and isinstance(p[0][0], OpDef):
        return "(" + ", ".join(f"{op.name}{_fmt_params(kw)}" for op, kw in p) + ")"
    if isinstance(p, slice):
        text = lambda s: "" if s is None else str(s)
        out = f"{text(p.start)}:{text(p.stop)}"
        return out if p.step is None else f"{out}:{text(p.step)}"
    if isinstance(p, tuple):
        return "(" + ", ".join(format_param(q) for q in p) + ("," if len(p) == 1 else "") + ")"
    return repr(p)


def _fmt_params(params: dict) -> str:
    if not params:
        return ""
    return "[" + " ".join(f"{k}={format_param(v)}" for k, v in params.items()) + "]"


def format_eqn(e: Eqn, names: dict) -> str:
    args = " ".join(format_value(a, names) for a in e.inputs)
    out = " ".join(f"{format_value(v, names)}:{type_str(v)}" for v in e.outs)
    mark = (" # keeps the history of " + format_value(e.inputs[0], names) if e.keeps_history
            else " # no_grad" if e.nograd else "")
    return f"{out} = {e.op.name}{_fmt_params(e.params)} {args}".rstrip() + mark


def format_graph(graph: Graph) -> str:
    names = _names(graph)
    ins = " ".join(f"{format_value(v, names)}:{type_str(v)}" for v in graph.inputs)
    lines = ["{ lambda " + ins + " ."]
    if graph.consts:
        consts = " ".join(f"{format_value(v, names)}:{type_str(v)}" for v in graph.consts)
        lines[0] = "{ lambda " + consts + " ; " + ins + " ."
    for i, e in enumerate(graph.eqns):
        lines.append(("  let " if i == 0 else "      ") + format_eqn(e, names))
    if graph.guards:
        lines.append("  guard " + " ".join(format_value(v, names) for v in graph.guards))
    outs = " ".join(format_value(v, names) for v in graph.outputs)
    lines.append(f"  in ({outs}) }}")
    return "\n".join(lines)


def last_uses(graph: Graph) -> dict[int, int]:
    """Var id -> index of the last equation that reads it (outputs: one past the end)."""
    last: dict[int, int] = {}
    for i, e in enumerate(graph.eqns):
        for a in e.inputs:
            if isinstance(a, Var):
                last[a.id] = i
    for v in graph.outputs:
        if isinstance(v, Var):
            last[v.id] = len(graph.eqns)
    return last
