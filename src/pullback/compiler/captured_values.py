"""The captured-value walk's second half: the guard on each value the code reads (by
identity, shape and dtype, by value, element by element, or by identity alone) and the
entering of objects, modules and classes for the attributes the code names.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from ..tensor import Tensor
from ..user_code import is_user_code
from .captured_callables import MAX_DEPTH, MAX_ITEMS, CallableWalk
from .captured_kinds import _SCALARS, _own_guard, _user_module, _user_object, _user_type


class ValueWalk(CallableWalk):
    """The guards on the values a walk meets, and the objects it enters."""

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
        self.read_known = True
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
