"""What the names a function calls refer to (``Scope``), and which functions are which:
numpy's, the user's (converted by ``call``), a library's that pullback replaces
(``register_replacements``), the builtins that call functions they are given, the calls
that seed a generator or may log.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import sys
import types
from typing import Any

import gast
import numpy as np

from ...user_code import is_user_code
from .nodes import walk

_UNKNOWN = object()
#: module prefix ("scipy.") -> a function giving pullback's version of a function of
#: that library, or None: a call of it on traced values calls pullback's (the source
#: pass routes such calls; ``pullback.scipy`` registers scipy's)
REPLACEMENTS: dict = {}


def register_replacements(prefix: str, find: Any) -> None:
    """Calls of functions from modules starting with ``prefix`` go through ``find(f)``
    (pullback's version of ``f``, or None) when they get traced values."""
    REPLACEMENTS[prefix] = find


def replaceable(f: Any) -> Any:
    """The ``find`` registered for ``f``'s module, or None."""
    module = getattr(f, "__module__", None)
    if REPLACEMENTS and isinstance(module, str):
        for prefix, find in REPLACEMENTS.items():
            if module.startswith(prefix):
                return find
    return None


#: logging's functions and its loggers' methods that emit a record
LOG_NAMES = frozenset({"debug", "info", "warning", "warn", "error", "critical",
                       "exception", "log"})
#: builtins that call the functions they are given (``map(partial(f, p), data)``): the
#: source pass routes them so that ``call`` converts a user function handed to them
HIGHER_ORDER = frozenset({map, filter, sorted, min, max, functools.reduce})


# ---------------------------------------------------------------- whose code
def is_numpy(f: Any) -> bool:
    """A numpy function or ufunc (not a class such as ``np.float32``)."""
    if isinstance(f, np.ufunc):
        return True
    if isinstance(f, type) or not callable(f):
        return False
    module = getattr(f, "__module__", None)
    return isinstance(module, str) and (module == "numpy" or module.startswith("numpy."))


def is_seeding(f: Any) -> bool:
    """A call that makes a generator (``np.random.RandomState(0)``, ``default_rng(0)``)
    or seeds one (``rs.seed(0)``, ``np.random.seed(0)``): ``effects.seeding``."""
    return f is np.random.RandomState or f is np.random.default_rng or \
        f is np.random.seed or (isinstance(getattr(f, "__self__", None), np.random.RandomState)
                                and getattr(f, "__name__", "") == "seed")


class Scope:
    """What the names a function calls refer to, where that is sure: a name it never
    binds itself is its closure's, its globals' or a builtin; a name it binds only by
    importing is what the import gives."""

    def __init__(self, fn: types.FunctionType, node: Any = None,
                 imports: dict | None = None) -> None:
        """The scope of ``fn`` whose node is ``node``; without it, of the names it binds
        as ``imports`` describes them (``Scope.imports`` of an earlier ``Scope``)."""
        self.globals = fn.__globals__
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        self.bound: dict[str, Any] = {}
        #: the name it binds -> what it imports (["module"] or ["module", "attr"]), or
        #: None for another binding (a value known only when it runs)
        self.imports: dict[str, list | None] = {}
        #: the names and attribute chains resolved (``np.zeros``) -> their values
        self.seen: dict[str, Any] = {}
        if node is None:
            for name, what in (imports or {}).items():
                self._bind(name, _UNKNOWN if what is None else _imported(*what), what)
            return
        inner = [node.args] + (node.body if isinstance(node.body, list) else [node.body])
        for part in inner:
            for n in walk(part):
                self._bindings(n)

    def _bind(self, name: str, value: Any = _UNKNOWN, what: list | None = None) -> None:
        if self.bound.get(name, value) is not value:
            value, what = _UNKNOWN, None
        self.bound[name] = value
        self.imports[name] = what

    def _bindings(self, n: Any) -> None:
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            self._bind(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            self._bind(n.name)
        elif isinstance(n, (gast.Global, gast.Nonlocal)):
            for name in n.names:
                self._bind(name)
        elif isinstance(n, gast.Import):
            for a in n.names:
                what = [a.name if a.asname else a.name.split(".")[0]]
                self._bind(a.asname or what[0], _imported(*what), what)
        elif isinstance(n, gast.ImportFrom):
            absolute = n.level == 0 and n.module
            for a in n.names:
                what = [n.module, a.name] if absolute else None
                self._bind(a.asname or a.name, _imported(*what) if what else _UNKNOWN, what)
        elif isinstance(n, (gast.MatchAs, gast.MatchStar)) and n.name:
            self._bind(n.name)
        elif isinstance(n, gast.MatchMapping) and n.rest:
            self._bind(n.rest)

    def resolve(self, expr: Any) -> Any:
        """The object ``expr`` (a name or ``module.attr`` chain) refers to, or _UNKNOWN."""
        chain = []
        while isinstance(expr, gast.Attribute):
            chain.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, gast.Name):
            return _UNKNOWN
        chain.append(expr.id)
        dotted = ".".join(reversed(chain))
        value = self.seen[dotted] = self.lookup(dotted)
        return value

    def lookup(self, dotted: str) -> Any:
        """The object the name or chain ``dotted`` (``np.linalg.norm``) refers to."""
        name, *attrs = dotted.split(".")
        value = self._name(name)
        for attr in attrs:
            if not isinstance(value, types.ModuleType):
                return _UNKNOWN
            value = vars(value).get(attr, _UNKNOWN)  # (its dict: no lazy-import hooks)
        return value

    def _name(self, name: str) -> Any:
        if name in self.bound:
            return self.bound[name]
        if name in self.cells:
            try:
                return self.cells[name].cell_contents
            except ValueError:  # an empty cell
                return _UNKNOWN
        if name in self.globals:
            return self.globals[name]
        return vars(builtins).get(name, _UNKNOWN)

    def maybe_effect(self, func: Any) -> bool:
        """Whether a call of ``func`` may be ``print`` or logging's (``effects.py``):
        known to be, or a method of that name on what cannot be resolved."""
        f = self.resolve(func)
        if f is _UNKNOWN:
            return isinstance(func, gast.Attribute) and func.attr in LOG_NAMES
        return f is builtins.print or (getattr(f, "__module__", None) == "logging"
                                       and getattr(f, "__name__", None) in LOG_NAMES)

    def routed(self, func: Any) -> bool:
        """Whether a call of ``func`` goes through the runtime: numpy's functions, user
        functions, and what cannot be resolved until it runs."""
        f = self.resolve(func)
        return f is _UNKNOWN or is_numpy(f) or _user_function(f) or \
            replaceable(f) is not None or is_higher_order(f) or is_seeding(f)


def _imported(module: str, attr: str | None = None) -> Any:
    """What ``import module`` (or ``from module import attr``) gives, when it is loaded."""
    found = sys.modules.get(module, _UNKNOWN)
    if attr is None or found is _UNKNOWN:
        return found
    return vars(found).get(attr, _UNKNOWN)


def is_higher_order(f: Any) -> bool:
    """Whether ``f`` is one of the builtins that call functions they are given."""
    try:
        return f in HIGHER_ORDER
    except TypeError:  # (an unhashable object)
        return False


def _user_function(f: Any) -> bool:
    """A function (method, partial, callable object) from a user module, which
    ``call`` converts."""
    if isinstance(f, types.MethodType):
        f = f.__func__
    elif isinstance(f, functools.partial):
        f = f.func
    elif not isinstance(f, types.FunctionType):
        f = call_method(f)
    return isinstance(f, types.FunctionType) and is_user_code(f.__code__)


def call_method(f: Any) -> Any:
    """The ``__call__`` of an object's class (None for classes themselves)."""
    return None if isinstance(f, type) else inspect.getattr_static(type(f), "__call__", None)
