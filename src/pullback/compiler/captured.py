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

Its rooms: ``captured_kinds.py`` (what kind of value: the user's, a scalar...),
``captured_checks.py`` (``Capture``, ``CapturedGuards``), ``captured_callables.py`` and
``captured_values.py`` (the walk); this module holds the walk's result and ``collect``.
"""

from __future__ import annotations

import types
from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from .captured_checks import Capture, CapturedGuards, same_scalar
from .captured_kinds import _user_type
from .captured_values import ValueWalk
from .code_reads import reads
from .source.state import updates_of
from .user_lines import TraceError, fname


class _Walk(ValueWalk):
    """One walk from the traced function: follows functions, guards values. ``names``:
    the attribute names the code read, known from an earlier walk (objects are entered
    only for those); the walk adds the names of the code it follows. Its rooms:
    ``captured_callables.py`` (its state, the following of callables),
    ``captured_values.py`` (the guards on values); this class adds the result."""

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
               compiled: dict | None = None, baked: dict | None = None
               ) -> CapturedGuards | None:
        """The generated check; arrays and Tensors the generated code does not read
        (``referenced``: ids of what it does) are compared by their bytes as well.
        ``changed``: the state the trace changed and generated code changes again on
        every call (``mutations.py``), unguarded where the code reads it only to change it.
        ``compiled``: the check's code compiled before, by its source (``check_code``'s;
        the persistent cache keeps it). ``baked``: the arrays the trace saw written after
        a use (``tracer_constants.py``), refused when captured."""
        if baked:
            self._refuse_baked(baked)
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


    def _refuse_baked(self, baked: dict) -> None:
        """A captured array written after a use while tracing: generated code keeps
        the value that use read, but does not make the write again, so a later call
        would read a value numpy's code no longer sees there."""
        captured = {id(v): k for k, v, _ in self.snapshots if isinstance(v, np.ndarray)}
        for a in baked.values():
            while isinstance(a, np.ndarray):
                k = captured.get(id(a))
                if k is not None:
                    capture = self.terms[k][0]
                    capture.where = self._found(capture.where)
                    raise TraceError(
                        f"{self.fn_name}: writes into {capture.label} after reading it"
                        f"{capture.describe().partition(' since it was traced')[2]}; "
                        "generated code would not write it again. Write into a copy "
                        "made in the function, or pass the array as an argument")
                a = a.base


def check_code(source: str) -> types.CodeType:
    """The code of a check's ``source`` (``CapturedGuards.source``)."""
    return compile(source, "<pullback-captured-guards>", "exec")


def collect(fn: Callable, args: tuple, arg_names: list, traced_args: set,
            referenced: set, changed: set = frozenset(),
            compiled: dict | None = None, baked: dict | None = None
            ) -> CapturedGuards | None:
    """The guards on what ``fn`` captures, for a call on ``args`` whose arguments at
    positions ``traced_args`` are traced (the others are entered if they are objects);
    ``referenced``: ids of the arrays and Tensors the generated code reads; ``changed``,
    ``compiled``, ``baked``: see ``Walk.finish``. None when nothing is guarded."""
    names: set = set()
    for _ in range(4):  # objects are entered for the names the code reads, which grow
        walk = _Walk(names)  # as methods are followed: walk until they stay the same
        walk.given = len(args)
        walk.follow(fn, 0)
        for k, a in enumerate(args):
            if k not in traced_args:
                walk.object_argument(k, arg_names[k], a)
        if walk.names <= names or not walk.read_known:
            break  # (a walk that entered no object would walk the same again)
        names = names | walk.names
    walk.fn_name = fname(fn)
    return walk.finish(referenced, changed, compiled, baked)


def own_guards(obj: Any, check: Callable, fn: Callable,
               compiled: dict | None = None) -> CapturedGuards:
    """What ``collect`` makes for ``obj.fn`` (``fn``: the function of a method of
    ``obj``, which guards itself with ``check``, ``_pb_capture_guard``'s) when the walk
    finds nothing else to guard: ``check()`` alone, the names bound as the walk binds
    them. Only the caller knows that nothing else is there (a compiled module whose
    every ``forward`` is pullback's, every argument traced, ``fn`` reading no global:
    the persistent cache's kept description of the walk's result says so)."""
    walk = _Walk(set())
    walk.bind(obj)
    walk.guard("self", None, f"{walk.bind(check)}()")
    walk.bind(fn)  # (the walk follows fn, binding it for its defaults' guards)
    return walk.finish(set(), compiled=compiled)


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


__all__ = ["Capture", "CapturedGuards", "_user_type", "check_code", "collect", "own_guards",
           "referenced_ids", "same_scalar"]
