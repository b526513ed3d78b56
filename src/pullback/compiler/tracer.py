"""The tracer: runs the user's function for real once and records every op into IR.

Python control flow just runs. When the program turns a traced value into a Python
value (``bool``, ``float``, ``.item()``, ``.tolist()``, ``.numpy()``, ``np.asarray``)
the tracer records a guard: the generated code checks it on every later call, and a
failed guard sends the call back to be traced again.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..autograd import record
from ..autograd.grad_mode import STATE
from ..ir import Builder, Eqn, Graph, Var
from ..ops.shape import view_chain, view_scatter
from ..tensor import Tensor

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TraceError(Exception):
    """The function cannot be compiled; the message names the function and line."""


@dataclass(frozen=True)
class SourceLine:
    filename: str
    lineno: int
    function: str
    text: str

    def __str__(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"


@dataclass
class Guard:
    """A traced value that became a Python value: it must be the same next time."""

    var: Var
    how: str
    expected: Any
    src: SourceLine | None

    def describe(self) -> str:
        where = f" at {self.src} ({self.src.text})" if self.src else ""
        return f"{self.how}() of a traced value was {_brief(self.expected)}{where}"


def _brief(value: Any) -> str:
    """A guard's value as a message shows it: small values whole, arrays by shape."""
    if isinstance(value, np.ndarray) and value.size > 4:
        return f"an array of shape {value.shape} ({value.dtype})"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def user_frame() -> Any:
    """The innermost frame that is not pullback's own code (nor code it generated,
    such as the op bindings, whose file names start with ``<pullback``)."""
    f = sys._getframe(1)
    while f is not None and _is_ours(f.f_code.co_filename):
        f = f.f_back
    return f


def _is_ours(filename: str) -> bool:
    return (filename.startswith(_PKG_DIR) or filename.startswith("<pullback")
            or "numpy" in filename.split(os.sep)[-3:-1])


_LINES: dict[tuple, SourceLine] = {}


def source_of(frame: Any) -> SourceLine | None:
    if frame is None:
        return None
    code = frame.f_code
    key = (code, frame.f_lineno)
    line = _LINES.get(key)
    if line is None:
        if len(_LINES) > 100_000:
            _LINES.clear()
        text = linecache.getline(code.co_filename, frame.f_lineno).strip()
        line = _LINES[key] = SourceLine(code.co_filename, frame.f_lineno, code.co_name, text)
    return line


class Tracer:
    """Records the ops run on Tensors while it is active (see ``trace``)."""

    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.builder = Builder()
        self.var_of: dict[int, Var] = {}
        self.keep: list = []  # tensors kept alive so their ids stay unique
        self.inputs: list[Var] = []
        self.captures: list[tuple[Tensor, Var]] = []
        self.guards: list[Guard] = []
        self.views: dict[int, list] = {}  # base id -> the views taken of it
        self.stale: set[int] = set()  # views whose base was written since they were read
        self.fail: TraceError | None = None

    # ------------------------------------------------------------ bookkeeping
    def add_input(self, t: Tensor, name: str) -> Var:
        v = Var(t._data.shape, t._data.dtype, t._data, name=name)
        self._bind(t, v)
        self.inputs.append(v)
        return v

    def _bind(self, t: Tensor, v: Var) -> None:
        self.var_of[id(t)] = v
        self.keep.append(t)

    def value_of(self, a: Any) -> Any:
        if isinstance(a, Tensor):
            if id(a) in self.stale:
                self._refresh(a)
            v = self.var_of.get(id(a))
            if v is None:  # a tensor from outside the function: an implicit input
                v = Var(a._data.shape, a._data.dtype, a._data, name=_outer_name(a))
                self._bind(a, v)
                self.captures.append((a, v))
            return v
        if isinstance(a, np.ndarray):
            return self.builder.const(a)
        return a

    def _emit(self, op: Any, inputs: tuple, params: dict, value: Any, src: Any) -> Var:
        out = Var(value.shape, value.dtype, value)
        self.builder.eqns.append(Eqn(op, inputs, out, params, src,
                                     nograd=not STATE.grad_enabled))
        return out

    def _refresh(self, view: Tensor) -> None:
        """A view read after its base was written in place: take it from the base anew."""
        self.stale.discard(id(view))
        base = self.value_of(view._base)
        self._bind(view, self._emit(view_chain, (base,), {"chain": view._view_chain},
                                    view._data.copy(), source_of(user_frame())))

    # ------------------------------------------------------------------ hooks
    def on_op(self, op: Any, args: tuple, params: dict, result: Tensor,
              inplace: bool = False) -> None:
        frame = user_frame()
        src = source_of(frame)
        if inplace:
            self._check_inplace(op, result, src)
            args = (result,) + tuple(args[1:])
        inputs = tuple(self.value_of(a) for a in args)
        if inplace:  # the SSA form of an in-place op: a new value for the same tensor
            out = self._emit(op, inputs, params, result._data.copy(), src)
            out.name = self.var_of[id(result)].name
            self._bind(result, out)
            self._written(result, out, src)
        else:
            self._bind(result, self._emit(op, inputs, params, result._data, src))
            if op.is_view and isinstance(args[0], Tensor):
                base = args[0]._base if args[0]._base is not None else args[0]
                self.views.setdefault(id(base), []).append(result)
        if frame is not None:
            self._name_locals(frame)

    def _written(self, t: Tensor, new: Var, src: Any) -> None:
        """After an in-place write to ``t``: a written view updates its base (as
        view_scatter of the new view value), and every other view of the base goes stale."""
        base = t._base if t._base is not None else t
        if base is not t:
            old = self.value_of(base)
            value = base._data.copy()
            self._bind(base, self._emit(view_scatter, (old, new), {"chain": t._view_chain},
                                        value, src))
        for v in self.views.get(id(base), ()):
            if v is not t:
                self.stale.add(id(v))

    def _check_inplace(self, op: Any, t: Tensor, src: SourceLine | None) -> None:
        where = f" at {src} ({src.text})" if src else ""
        v = self.var_of.get(id(t))
        if v is None or any(c is t for c, _ in self.captures):
            raise TraceError(f"{_fname(self.fn)}: in-place {op.name}_() on a tensor captured "
                             f"from outside the compiled function{where}; pass it as an "
                             "argument and return the new value instead")
        if any(v is i for i in self.inputs):
            raise TraceError(f"{_fname(self.fn)}: in-place {op.name}_() on argument "
                             f"'{v.name}'{where}; compiled functions must not mutate their "
                             "inputs")
        base = t._base
        if base is not None and (id(base) not in self.var_of or any(
                c is base for c, _ in self.captures) or any(
                self.var_of[id(base)] is i for i in self.inputs)):
            raise TraceError(f"{_fname(self.fn)}: in-place {op.name}_() through a view of an "
                             f"argument or captured tensor{where}; compiled functions must not "
                             "mutate their inputs")

    def on_concrete(self, t: Tensor, how: str) -> None:
        if id(t) not in self.var_of and not t._requires_grad:
            return  # a constant's value may be read freely
        v = self.value_of(t)
        value = t._data.copy() if how in ("numpy", "__array__", "tolist", "tensor",
                                          "index") else (
            t._data.item() if how == "item" else bool(t._data))
        self.guards.append(Guard(v, how, value, source_of(user_frame())))

    def _name_locals(self, frame: Any) -> None:
        """Adopt the user's variable names for traced values bound to locals."""
        for name, val in frame.f_locals.items():
            if type(val) is Tensor:
                v = self.var_of.get(id(val))
                if v is not None and v.name is None:
                    v.name = name

    # ------------------------------------------------------------------ running
    def __enter__(self) -> Tracer:
        record.start_tracing(self.on_op, self.on_concrete)
        return self

    def __exit__(self, *exc: object) -> None:
        record.stop_tracing(self.on_op, self.on_concrete)

    def graph(self, outputs: list) -> Graph:
        _name_assignments(self.builder.eqns)
        return Graph(self.inputs + [v for _, v in self.captures], self.builder.eqns,
                     outputs, self.builder.consts, name=_fname(self.fn),
                     guards=[g.var for g in self.guards])


_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")


def _name_assignments(eqns: list) -> None:
    """``loss = f(z)``: the last op of that line made ``loss`` (for values no later
    op saw in the caller's locals, such as the returned one)."""
    last: dict = {}
    for e in eqns:
        if e.src is not None:
            last[e.src] = e
    for src, e in last.items():
        m = _ASSIGN.match(src.text)
        if m and e.out.name is None:
            e.out.name = m.group(1)


def _outer_name(t: Tensor) -> str:
    """The name the user's code knows a captured tensor by (closure or global)."""
    frame = user_frame()
    if frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for name, value in scope.items():
                if value is t:
                    return name
    return "captured"


def _fname(fn: Callable) -> str:
    return getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))


def def_line(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return _fname(fn)
    return f"{_fname(fn)} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
