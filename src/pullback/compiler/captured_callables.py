"""The captured-value walk's first half: its bookkeeping (the names bound into the
check, the guards made so far) and how it follows callables (a function's globals, cells
and defaults, a bound method's object, a partial's arguments). ``captured_values.py``
adds the guards on values; ``captured.py`` the walk's result.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from ..user_code import is_user_code
from .captured_checks import Capture, same_scalar
from .captured_kinds import _own_guard, _user_object
from .code_reads import reads
from .source.nodes import RUNTIME_NAME

MAX_DEPTH = 6  # functions followed and objects or containers entered, from the function
MAX_ITEMS = 64  # elements of one container guarded one by one (then identity and length)
MAX_GUARDS = 1024  # per trace; what lies beyond is not guarded


class CallableWalk:
    """A walk's state, and the following of callables; what they read is guarded by
    ``value``, ``own`` and ``entered`` (``ValueWalk``, the subclass)."""

    def __init__(self, names: set) -> None:
        self.known = names
        self.read_known = False  # (whether an object was entered: ``known``'s one reader)
        self.names: set = set()
        self.codes: list = []  # the code objects followed, in order (for messages)
        self.seen: set = set()  # ids of the functions followed and objects entered
        self.env: dict = {"_same": same_scalar, "_Fn": types.FunctionType,
                          "_Partial": functools.partial}
        self.terms: list = []  # (capture, expression) per guard, parents first
        self.bound: dict = {}  # id of a value bound -> its name (the value is in env)
        self.exprs: set = set()  # the expressions guarded
        self.snapshots: list = []  # (term index, array or Tensor, its data's expression)
        self.prologue: dict = {}  # local name -> what it reads first: args[k].__dict__
        self.own_checks: dict = {}  # id of an object guarding itself -> (check, calls)
        self.contents: set = set()  # indices of the terms on a container's contents
        self._inside = 0  # > 0 while guarding a container's contents
        self.given = 0  # the arguments the call passes (the traced function's defaults)

    # ------------------------------------------------------------- bookkeeping
    def bind(self, value: Any) -> str:
        """A name of the check's globals for ``value`` (one per object: the same
        read written twice is one expression, guarded once)."""
        name = self.bound.get(id(value))
        if name is None:
            name = self.bound[id(value)] = f"_b{len(self.env)}"
            self.env[name] = value
        return name

    def where(self, kind: str, name: str) -> tuple:
        """Where the code reads ``name`` (a ``kind``: "global", "cell" or "attr"), found
        by ``finish`` once every function is followed."""
        return (kind, name)

    def _found(self, where: tuple | None) -> tuple | None:
        """``where`` as (code object, line): the first followed code that reads it."""
        if where is None or not isinstance(where[0], str):
            return where
        kind, name = where
        for code in self.codes:
            r = reads(code)
            table = r.attrs if kind == "attr" else r.globals if kind == "global" else r.cells
            if name in table:
                return r.code.get(("attr" if kind == "attr" else "name", name), code), \
                    table[name]
        return None

    def guard(self, label: str, where: tuple | None, expr: str, snapshot: tuple = (),
              quiet: bool = False) -> None:
        """``snapshot``: (array or Tensor, its data's expression), compared by its bytes
        as well if generated code does not read it (see ``finish``)."""
        if expr in self.exprs:  # (a global two followed functions of a module read)
            return
        self.exprs.add(expr)
        if len(self.terms) < MAX_GUARDS:
            if snapshot:
                self.snapshots.append((len(self.terms), *snapshot))
            if self._inside:
                self.contents.add(len(self.terms))
            self.terms.append((Capture(label, where, quiet), expr))

    # ------------------------------------------------------------- callables
    def follow(self, f: Any, depth: int, label: str = "self", expr: str | None = None) -> None:
        """What a callable reads: a function's globals and cells (and what they reach),
        a bound method's instance, a partial's arguments, a wrapper's function.
        ``expr`` reads a partial where it is a captured value: its function and
        arguments are read through it (an equal partial made anew passes)."""
        if depth > MAX_DEPTH:
            return
        if isinstance(f, types.FunctionType):
            if depth == 0 or is_user_code(f.__code__):
                self.function(f, depth)
        elif isinstance(f, types.MethodType):
            owner = label if label == "self" else f"{label}.__self__"
            if _own_guard(f.__self__) is not None:
                self.own(f.__self__, None, owner, depth, None)
            elif _user_object(f.__self__):
                self.entered(f.__self__, self.bind(f.__self__), owner, depth)
            self.follow(f.__func__, depth)
        elif isinstance(f, functools.partial):
            p = expr or self.bind(f)
            code = getattr(f.func, "__code__", None)
            where = None if code is None else (code, code.co_firstlineno)
            for i, a in enumerate(f.args):
                self.value(f"partial argument {i}", f"{p}.args[{i}]", a, depth + 1, where)
            for k, a in f.keywords.items():
                self.value(f"partial keyword {k}", f"{p}.keywords[{self.bind(k)}]", a,
                           depth + 1, where)
            if expr is None:
                self.follow(f.func, depth, label)
            else:
                self.value(f"{label}.func", f"{p}.func", f.func, depth, where)
        elif (isinstance(getattr(f, "__wrapped__", None), types.FunctionType)
              or hasattr(getattr(f, "__wrapped__", None), "kept_settings")) and \
                not isinstance(f, type):  # pb.compile, pb.grad, functools.wraps; a
            self.follow(f.__wrapped__, depth, label)  # Jacobian's Jacobian (hessian)
        elif _own_guard(f) is not None:
            self.own(f, None, label, depth, None)
        elif _user_object(f):  # a callable object of a user class
            self.entered(f, self.bind(f), label, depth)

    def function(self, fn: types.FunctionType, depth: int, expr: str | None = None) -> None:
        """What a user function reads: its globals, its closure cells and defaults.
        ``expr`` reads the function where it is a captured value (a global, a cell):
        its cells and defaults are read through it, so a function made anew from the
        same code with the same captures (a lambda made on each pass of a loop) passes
        the guards, and one capturing something else does not."""
        if id(fn) in self.seen:  # (by function: two closures of one code differ in cells)
            return
        self.seen.add(id(fn))
        code = fn.__code__
        self.codes.append(code)
        r = reads(code)
        self.names.update(r.attrs)
        glb = fn.__globals__
        g = None
        for name in r.globals:
            if name in glb:
                if g is None:
                    g = self.bind(glb)
                    if expr is not None:  # (a function of the same code from another module)
                        self.guard(f"the globals of {code.co_name}", (code, code.co_firstlineno),
                                   f"{expr}.__globals__ is {g}")
                self.value(f"global {name}", f"{g}[{self.bind(name)}]", glb[name], depth + 1,
                           self.where("global", name))
        for i, (name, cell) in enumerate(zip(code.co_freevars, fn.__closure__ or ())):
            if name == RUNTIME_NAME:  # the source pass's helpers, in rewritten code
                continue
            try:
                v = cell.cell_contents
            except ValueError:  # not yet assigned
                continue
            read = f"{self.bind(cell)}.cell_contents" if expr is None else \
                f"{expr}.__closure__[{i}].cell_contents"
            self.value(f"closure cell {name}", read, v, depth + 1, self.where("cell", name))
        self.defaults(fn, depth, expr or self.bind(fn))

    def defaults(self, fn: types.FunctionType, depth: int, expr: str) -> None:
        """A function's defaults: a followed function's all, the traced function's those
        the call leaves out (the others are its arguments, in the call's key)."""
        code = fn.__code__
        at = (code, code.co_firstlineno)
        found = fn.__defaults__ or ()
        first = 0 if depth > 0 else self.given - (code.co_argcount - len(found))
        if found and first < len(found):  # (none: a call leaving one out would fail)
            self.guard(f"the defaults of {code.co_name}", at,
                       f"len({expr}.__defaults__ or ()) == {len(found)}")
            for i, v in enumerate(found[max(first, 0):], max(first, 0)):
                self.value(f"default {i} of {code.co_name}", f"{expr}.__defaults__[{i}]", v,
                           depth + 1, at)
        kw = fn.__kwdefaults__ or {}
        if kw:
            self.guard(f"the keyword defaults of {code.co_name}", at,
                       f"len({expr}.__kwdefaults__ or ()) == {len(kw)}")
        for k, v in kw.items():
            self.value(f"keyword default {k} of {code.co_name}",
                       f"{expr}.__kwdefaults__[{self.bind(k)}]", v, depth + 1, at)
