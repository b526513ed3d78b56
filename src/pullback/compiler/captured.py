"""Guards on what a traced function captures: the globals it names, its closure cells,
the attributes of objects passed to it (``self.W``) and a partial's bound arguments.

A trace bakes in what the function read from outside its arguments: a float ``lam``
becomes a literal of the generated code, an array the array of its constant, a Tensor
the tensor it reads on every call. Rebinding one (``W = new``, ``self.W = new``, a new
``lam``) must therefore retrace, as in torch.compile. ``collect`` walks, once per
trace, what the traced function can reach, and returns ``CapturedGuards``: one
generated expression, ``check(args)``, that is true while every captured value is the
one the trace saw:

- ndarrays and Tensors by identity, shape and dtype (and ``requires_grad``); generated
  code reads them by reference, so a write into one (``W[:] = 2``) is seen. An array
  the generated code does not read (the trace used it only through numpy, as in
  ``np.tanh(W)`` or ``pb.tensor(W)``, or in Python control flow) is compared by its
  bytes as well, so a write into it retraces;
- numbers, strings, None and dtypes by value (identity first: the common case is one
  ``is``), lists, tuples and dicts by identity and length, then element by element;
  sets, frozensets, slices and ranges by equality (a set against a copy);
- objects of the user's classes by identity (an argument's own attributes are read
  from the argument itself), their instance attributes that the followed code names,
  and the methods it names on their classes (replaced, or hidden by an instance
  attribute, they retrace);
- the user's functions by their code, and what they capture (globals, cells and
  defaults, read through the function where it is a captured value, so a lambda made
  anew from the same code with the same captures keeps its variant), followed to a
  bounded depth; user modules and classes by identity, entered for the attributes the
  code names;
- anything else by identity (the guard rule: what the walk does not understand is
  not assumed constant): library functions and ufuncs (``f = np.cos``), numpy types,
  generators, bound methods, partials, library modules (not listed by ``describe``).

Names looked up by a string (``globals()['K']``, ``getattr(mod, 'K')``) are guarded
when the string is a constant of the code that calls ``globals``/``vars``/
``getattr``/``eval``; a name computed at run time is not seen.

The cache loop (``cache.py``) calls ``check`` before it runs a variant; a failure is
a guard failure like any other, and ``first_failure`` names the captured value and
the line that reads it (never its value) for the retrace-limit warning.
"""

from __future__ import annotations

import builtins
import functools
import linecache
import math
import sys
import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from ..user_code import is_user_code, is_user_file
from .code_reads import reads
from .source.rewriter import RUNTIME_NAME
from .source.state import updates_of
from .user_lines import SourceLine

MAX_DEPTH = 6  # functions followed and objects or containers entered, from the function
MAX_ITEMS = 64  # elements of one container guarded one by one (then identity and length)
MAX_GUARDS = 1024  # per trace; what lies beyond is not guarded
_SCALARS = (bool, int, float, complex, str, bytes, type(None), np.generic, np.dtype)
_NOT_OBJECTS = (type, types.ModuleType, types.FunctionType, types.MethodType,
                types.BuiltinFunctionType, functools.partial)


@dataclass
class Capture:
    """One guarded captured value: how the user's code knows it, and where it reads it."""

    label: str  # "global W", "self.W", "closure cell lam", "partial keyword lam"...
    where: tuple | None  # (code object, line) of a read, for messages
    quiet: bool = False  # a library module's name (``np``): guarded, not listed

    def describe(self) -> str:
        at = ""
        if self.where is not None:
            code, line = self.where
            src = SourceLine(code.co_filename, line, code.co_name,
                             linecache.getline(code.co_filename, line).strip())
            at = f" (read at {src} ({src.text}))" if src.text else f" (read at {src})"
        return f"that {self.label} is unchanged since it was traced{at}"


class CapturedGuards:
    """``check(args)``: whether every captured value is the one the trace saw."""

    def __init__(self, captures: list, check: Callable, first: Callable, source: str) -> None:
        self.captures = captures
        self.check = check
        self._first = first  # the index of the first capture whose test fails, or None
        self.source = source  # of both (names only: values are bound, never written)

    def first_failure(self, args: tuple) -> Capture | None:
        """The first capture whose guard fails on ``args`` (None: they all hold now)."""
        k = self._first(args)
        return None if k is None else self.captures[k]

    def describe(self) -> list:
        """What the guards check, for ``pb.compiler.inspect`` (not the names bound to
        library modules, guarded too: ``np`` rebound would retrace)."""
        return [c.describe() for c in self.captures if not c.quiet]


def same_scalar(value: Any, expected: Any) -> bool:
    """A number (str, None, dtype) guard: the same type and value; NaN is NaN, and a
    float zero keeps its sign (``1 / x`` tells them apart)."""
    if type(value) is not type(expected):
        return False
    try:
        if value == expected:
            if isinstance(value, (float, np.floating)):
                return math.copysign(1.0, value) == math.copysign(1.0, expected)
            return True
        return value != value and expected != expected
    except Exception:  # an array-like comparison: not the same
        return False


# ------------------------------------------------------------------ the walk
#: ``Py_TPFLAGS_HEAPTYPE``: a class made at run time, not one built into Python
_HEAPTYPE = 1 << 9


def _user_type(cls: type) -> bool:
    """A class of the user's: from a user module, ``__main__`` (a script, a notebook, a
    prompt) or code run without a module (``exec``, a doctest). A ``class`` statement
    run by ``exec`` in globals without ``__name__`` is filed under ``builtins``: a class
    made at run time that ``builtins`` does not hold is the user's (its attributes are
    guarded like any other user object's)."""
    if getattr(cls, "__module__", None) == "builtins":
        return bool(getattr(cls, "__flags__", 0) & _HEAPTYPE) and \
            getattr(builtins, cls.__name__, None) is not cls
    module = sys.modules.get(getattr(cls, "__module__", None) or "")
    if module is None or module.__name__ == "__main__":
        return True
    name = getattr(module, "__file__", None)
    return isinstance(name, str) and is_user_file(name)


def _user_module(m: types.ModuleType) -> bool:
    """A module of the user's files, or one made at run time (``types.ModuleType``,
    with no file and not built into Python)."""
    name = getattr(m, "__file__", None)
    if name is None:
        return getattr(m, "__spec__", None) is None and \
            m.__name__ not in sys.builtin_module_names
    return isinstance(name, str) and is_user_file(name)


def _own_guard(v: Any) -> Callable | None:
    """``type(v)._pb_capture_guard``: ``f(v) -> (check, calls)``, a check of ``v``'s
    state (true while it is what the trace saw) and the functions ``v`` runs when
    called (followed for what they capture); None for other objects."""
    return getattr(type(v), "_pb_capture_guard", None)


def _user_object(v: Any) -> bool:
    """An object whose attributes are the user's state: of a user class, or a
    ``SimpleNamespace`` (a common bag of settings)."""
    return (not isinstance(v, _NOT_OBJECTS) and isinstance(getattr(v, "__dict__", None), dict)
            and (type(v) is types.SimpleNamespace or _user_type(type(v))))


class _Walk:
    """One walk from the traced function: follows functions, guards values. ``names``:
    the attribute names the code read, known from an earlier walk (objects are entered
    only for those); the walk adds the names of the code it follows."""

    def __init__(self, names: set) -> None:
        self.known = names
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
        elif isinstance(getattr(f, "__wrapped__", None), types.FunctionType) and \
                not isinstance(f, type):  # pb.compile, pb.grad, functools.wraps
            self.follow(f.__wrapped__, depth, label)
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

    # ------------------------------------------------------------- values
    def value(self, label: str, expr: str, v: Any, depth: int, where: tuple | None) -> None:
        """Guard the value ``expr`` reads now (``v``), and what it holds."""
        if depth > MAX_DEPTH:
            return
        if isinstance(v, Tensor):
            e = self.bind(v)
            d = v._data
            self.guard(label, where,
                       f"{expr} is {e} and {e}._data.shape == {self.bind(d.shape)} and "
                       f"{e}._data.dtype is {self.bind(d.dtype)} and "
                       f"{e}._requires_grad is {v._requires_grad}", (v, f"{e}._data"))
        elif isinstance(v, np.ndarray):
            e = self.bind(v)
            self.guard(label, where, f"{expr} is {e} and {e}.shape == {self.bind(v.shape)} "
                                     f"and {e}.dtype is {self.bind(v.dtype)}", (v, e))
        elif isinstance(v, _SCALARS):
            e = self.bind(v)
            self.guard(label, where, f"((_v := {expr}) is {e} or _same(_v, {e}))")
        elif isinstance(v, (list, tuple, dict)):
            e = self.bind(v)
            self.guard(label, where, f"{expr} is {e}")
            self._inside += 1  # (its length and items: the contents)
            if not isinstance(v, tuple):
                self.guard(label, where, f"len({e}) == {len(v)}")
            if id(v) not in self.seen:
                self.seen.add(id(v))
                items = list(v.items() if isinstance(v, dict) else enumerate(v))[:MAX_ITEMS]
                for k, x in items:
                    key = repr(k) if type(k) in (int, str) else "..."
                    self.value(f"{label}[{key}]", f"{e}[{self.bind(k)}]", x, depth + 1, where)
            self._inside -= 1
        elif isinstance(v, set):  # (mutable: its identity, then its contents by a copy)
            e = self.bind(v)
            self.guard(label, where, f"{expr} is {e}")
            self._inside += 1
            self.guard(label, where, f"{e} == {self.bind(frozenset(v))}")
            self._inside -= 1
        elif isinstance(v, (frozenset, slice, range)):  # (equal where equal is cheap)
            e = self.bind(v)
            self.guard(label, where, f"((_v := {expr}) is {e} or _same(_v, {e}))")
        else:
            self.other(label, expr, v, depth, where)

    def other(self, label: str, expr: str, v: Any, depth: int, where: tuple | None) -> None:
        """A captured value that is not data: a callable, an object, a module or a
        class; what the walk does not understand is guarded by identity."""
        if type(v) is functools.partial:  # (its function and arguments: follow)
            self.guard(label, where, f"(type(_v := {expr}) is _Partial and len(_v.args) == "
                                     f"{len(v.args)} and len(_v.keywords) == {len(v.keywords)})")
            self.follow(v, depth, label, expr)
        elif isinstance(v, (types.MethodType, types.BuiltinMethodType)) and \
                getattr(v, "__self__", None) is not None and \
                not isinstance(v.__self__, types.ModuleType):
            # a bound method (``step = model.step``, ``draw = rng.normal``): its object
            # and function, so the same method bound anew passes
            how = (f"_v.__func__ is {self.bind(v.__func__)}" if isinstance(v, types.MethodType)
                   else f"_v.__name__ == {self.bind(v.__name__)}")
            self.guard(label, where, f"(type(_v := {expr}) is {self.bind(type(v))} and "
                                     f"_v.__self__ is {self.bind(v.__self__)} and {how})")
            self.follow(v, depth, label)
        elif isinstance(v, types.FunctionType) and is_user_code(v.__code__):
            # the same code (a function made anew from it is the same function if
            # what it captures is: ``function`` reads that through ``expr``)
            self.guard(label, where, f"(type(_v := {expr}) is _Fn and "
                                     f"_v.__code__ is {self.bind(v.__code__)})")
            self.function(v, depth, expr)
        elif _own_guard(v) is not None:
            self.own(v, expr, label, depth, where)
        elif _user_object(v):
            e = self.bind(v)
            self.guard(label, where, f"{expr} is {e}")
            self.entered(v, e, label, depth)
        else:  # anything else by identity: modules, classes, library functions, ufuncs,
            e = self.bind(v)  # generators, bound methods, partials, other objects
            module = isinstance(v, types.ModuleType)
            entered = _user_module(v) if module else isinstance(v, type) and _user_type(v)
            self.guard(label, where, f"{expr} is {e}", quiet=module and not entered)
            if entered:  # the attributes the code names (a class's: Net.scale, Net.forward)
                self.entered(v, e, label, depth)
            elif callable(v) and not module and not isinstance(v, type):
                self.follow(v, depth, label)

    def own(self, obj: Any, expr: str | None, label: str, depth: int,
            where: tuple | None) -> None:
        """An object that guards its own state (``_pb_capture_guard``, as ``pb.nn``'s
        modules do: library code reads their attributes, which the walk would not
        see): its identity (where ``expr`` reads it) and its own check, made once per
        walk; then what the functions it calls capture, and (a user class's object)
        the attributes the followed code names on it."""
        e = self.bind(obj)
        made = self.own_checks.get(id(obj))
        if made is None:
            check, calls = _own_guard(obj)(obj)
            made = self.own_checks[id(obj)] = (self.bind(check), calls)
        test = f"{made[0]}()"
        self.guard(label, where, test if expr is None else f"{expr} is {e} and {test}")
        if id(obj) in self.seen:
            return
        if _user_object(obj):
            self.entered(obj, e, label, depth)
        self.seen.add(id(obj))
        for f in made[1]:
            sub = getattr(f, "__self__", None)
            if isinstance(f, types.MethodType) and _own_guard(sub) is not None:
                # a method of a part of obj (a submodule), which obj's check covers
                if _user_object(sub):
                    self.entered(sub, self.bind(sub), label, depth + 1)
                self.follow(f.__func__, depth + 1)
            else:
                self.follow(f, depth + 1, label)

    def entered(self, obj: Any, expr: str, label: str, depth: int,
                is_dict: bool = False) -> None:
        """The attributes the followed code names on an object (or a user module):
        instance attributes guarded, methods followed. ``expr`` reads the object (its
        ``__dict__`` if ``is_dict``)."""
        if depth >= MAX_DEPTH or id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        d = obj.__dict__
        base = expr if is_dict else f"{expr}.__dict__"
        for name in sorted(self.known.intersection(d)):
            self.value(f"{label}.{name}", f"{base}[{self.bind(name)}]", d[name],
                       depth + 1, self.where("attr", name))
        if isinstance(obj, types.ModuleType):
            return
        for name in sorted(self.known.difference(d)) + ["__call__"]:
            self.class_attribute(obj, base, name, label, depth)

    def class_attribute(self, obj: Any, base: str, name: str, label: str, depth: int) -> None:
        """``obj.name`` found on its class: a method (or property) of a user class is
        guarded by identity (``Net.forward = other`` retraces) and followed; a value of
        one is guarded where it is (``Net.scale = 2`` retraces), and so is its absence
        from the instance (``net.scale = 2`` or ``net.forward = f`` would hide it)."""
        owner = next((c for c in type(obj).__mro__ if name in c.__dict__), None)
        if owner is None or not _user_type(owner):
            return
        raw = m = owner.__dict__[name]
        if isinstance(m, (staticmethod, classmethod)):
            m = m.__func__
        elif isinstance(m, property):
            m = m.fget
        at = self.where("attr", name)
        key = self.bind(name)
        dunder = name.startswith("__") and name.endswith("__")  # (``__call__``: how
        if not dunder:  # the object is called, found on its class; followed only)
            self.guard(f"{label}.{name}", at, f"{key} not in {base}")
        if isinstance(m, types.FunctionType):  # a method: the one traced, by identity
            if not dunder:
                self.guard(f"{label}.{name}", at,
                           f"{self.bind(owner)}.__dict__[{key}] is {self.bind(raw)}")
            if is_user_code(m.__code__):
                self.function(m, depth + 1)
        else:
            self.value(f"{label}.{name}", f"{self.bind(owner)}.__dict__[{key}]", m,
                       depth + 1, at)

    def object_argument(self, k: int, name: str, a: Any) -> None:
        if _own_guard(a) is not None:
            self.own(a, f"args[{k}]", name, 0, None)
        elif _user_object(a):
            self.prologue[f"_a{k}"] = f"args[{k}].__dict__"
            self.entered(a, f"_a{k}", name, 0, is_dict=True)
        elif callable(a) and not isinstance(a, type):
            self.follow(a, 1, name)

    # ------------------------------------------------------------- the result
    def _changed_only(self, where: tuple | None, content: bool, changed: set) -> bool:
        """Whether a guard reads state the trace changed and generated code changes on
        every call (a counter, a list appended to), which no code the walk followed reads
        but to change it: its value never reaches the trace. A container keeps its
        identity guard (the change goes into that very object)."""
        if where is None or not isinstance(where[0], str):
            return False
        kind = "attr" if where[0] == "attr" else "name"
        name = where[1]
        what = "value" if (kind, name, "value") in changed else \
            "content" if content and (kind, name, "content") in changed else None
        if what is None:
            return False
        for code in self.codes:
            r = reads(code)
            table = r.attrs if kind == "attr" else {**r.globals, **r.cells}
            if name in table and (kind, name, what) not in updates_of(code):
                return False
        return True

    def finish(self, referenced: set, changed: set = frozenset(),
               compiled: dict | None = None) -> CapturedGuards | None:
        """The generated check; arrays and Tensors the generated code does not read
        (``referenced``: ids of what it does) are compared by their bytes as well.
        ``changed``: the state the trace changed and generated code changes again on
        every call (``mutations.py``), unguarded where the code reads it only to change it.
        ``compiled``: the check's code compiled before, by its source (``check_code``'s;
        the persistent cache keeps it)."""
        terms = list(self.terms)
        written = set()  # numpy arrays only written into: their identity guard stays
        if changed:
            arrays = {k for k, v, _ in self.snapshots if isinstance(v, np.ndarray)}
            written = {k for k in arrays if self._changed_only(terms[k][0].where, True, changed)}
            kept = [k for k, (c, _) in enumerate(terms) if k in arrays or not self._changed_only(
                c.where, k in self.contents, changed)]
            self.snapshots = [(kept.index(k), v, d) for k, v, d in self.snapshots
                              if k in kept and k not in written]
            terms = [terms[k] for k in kept]
        for capture, _ in terms:
            capture.where = self._found(capture.where)
        for k, v, data_expr in self.snapshots:
            data = v._data if isinstance(v, Tensor) else v
            if id(v) not in referenced and id(data) not in referenced:
                capture, expr = terms[k]
                terms[k] = (capture, f"{expr} and {data_expr}.tobytes() == "
                                     f"{self.bind(data.tobytes())}")
        if not terms:
            return None
        exprs = [f"({x})" for _, x in terms]
        pro = "".join(f"        {name} = {expr}\n" for name, expr in self.prologue.items())
        source = ("def check(args):\n    try:\n" + pro + "        return " +
                  " and ".join(exprs) + "\n    except Exception:\n        return False\n\n"
                  "def first(args):\n    k = 0\n    try:\n" + pro +
                  "".join(f"        k = {k}\n        if not {x}:\n            return k\n"
                          for k, x in enumerate(exprs)) +
                  "    except Exception:\n        return k\n    return None\n")
        env = dict(self.env)
        code = compiled.get(source) if compiled else None
        exec(code or check_code(source), env)  # noqa: S102
        return CapturedGuards([c for c, _ in terms], env["check"], env["first"], source)


def check_code(source: str) -> types.CodeType:
    """The code of a check's ``source`` (``CapturedGuards.source``)."""
    return compile(source, "<pullback-captured-guards>", "exec")


def collect(fn: Callable, args: tuple, arg_names: list, traced_args: set,
            referenced: set, changed: set = frozenset(),
            compiled: dict | None = None) -> CapturedGuards | None:
    """The guards on what ``fn`` captures, for a call on ``args`` whose arguments at
    positions ``traced_args`` are traced (the others are entered if they are objects);
    ``referenced``: ids of the arrays and Tensors the generated code reads; ``changed``,
    ``compiled``: see ``Walk.finish``. None when nothing is guarded."""
    names: set = set()
    for _ in range(4):  # objects are entered for the names the code reads, which grow
        walk = _Walk(names)  # as methods are followed: walk until they stay the same
        walk.given = len(args)
        walk.follow(fn, 0)
        for k, a in enumerate(args):
            if k not in traced_args:
                walk.object_argument(k, arg_names[k], a)
        if walk.names <= names:
            break
        names = names | walk.names
    return walk.finish(referenced, changed, compiled)


def referenced_ids(graph: Any, captures: list) -> set:
    """The ids of the arrays generated code reads by reference (constants, arrays in
    equations, the bases they view) and of the captured Tensors it reads each call."""
    ids: set = set()

    def add(a: Any) -> None:
        if isinstance(a, (tuple, list)):
            for x in a:
                add(x)
        while isinstance(a, np.ndarray):
            ids.add(id(a))
            a = a.base

    for t in captures:
        ids.add(id(t))
        add(t._data)
    for a in graph.consts.values():
        add(a)
    for e in graph.eqns:
        add(e.inputs)
        add(tuple(e.params.values()))
    return ids


__all__ = ["Capture", "CapturedGuards", "check_code", "collect", "referenced_ids", "same_scalar"]
