"""The source pass's reading and writing of Python source (``gast``): which code is the
user's and which function is numpy's (the function's node parsed at its own lines:
``parsing.py``), what its names refer to (``Scope``), the rewrite itself (``Rewriter`` and the
prologue), and compiling the new node back into a code object in the user's file.
``source.py`` decides what to convert and runs it.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import functools
import inspect
import sys
import threading
import types
from typing import Any

import gast
import numpy as np

from ...user_code import is_user_code

#: the name rewritten code calls its helpers by (a free variable of the new code;
#: the trailing underscores keep methods from mangling it)
RUNTIME_NAME = "__pb_rt__"
_FACTORY = "__pb_factory__"
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
#: the ``from __future__`` flags a code object carries (compiled again with its own)
_FUTURE = functools.reduce(lambda a, b: a | b, (getattr(__future__, f).compiler_flag
                                                for f in __future__.all_feature_names))
#: held while CPython turns source into AST objects or AST objects into code: the
#: depth counter it keeps while doing so is one per interpreter, not per thread, so
#: two threads converting at once (a thread switch inside a garbage collection)
#: fail with "SystemError: AST constructor recursion depth mismatch"
_AST_LOCK = threading.Lock()
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


class Rewriter(gast.NodeTransformer):
    """Routes calls through the runtime (``name = np.zeros(...)`` through ``buffer`` when
    ``name`` is one of ``buffers``: written into, handed to a function, or returned),
    element reads through ``subscript``, and values written into ``x[...]`` through
    ``stored``."""

    def __init__(self, scope: Scope, buffers: set) -> None:
        self.scope = scope
        self.buffers = buffers
        self.buffer_calls: set[int] = set()
        self.receivers: set[int] = set()  # subscripts whose method is called
        self.changed = False

    def visit_Assign(self, node: Any) -> Any:
        if len(node.targets) == 1:
            self._creation(node.targets[0], node.value)
        self.generic_visit(node)
        for target in node.targets:
            node.value = self._stored(target, node.value)
        return node

    def visit_AugAssign(self, node: Any) -> Any:
        self.generic_visit(node)
        node.value = self._stored(node.target, node.value)
        return node

    def _stored(self, target: Any, value: Any) -> Any:
        """``stored(x, value)`` for the target ``x[...]`` (``x`` a name or attribute)."""
        if not isinstance(target, gast.Subscript) or not _plain_ref(target.value):
            return value
        self.changed = True
        new = gast.Call(func=_runtime("stored"), args=[_load(target.value), value],
                        keywords=[])
        return _at(new, value)

    def visit_Return(self, node: Any) -> Any:
        values = node.value.elts if isinstance(node.value, gast.Tuple) else [node.value]
        self.buffer_calls.update(id(v) for v in values if isinstance(v, gast.Call))
        return self.generic_visit(node)

    def visit_AnnAssign(self, node: Any) -> Any:
        self._creation(node.target, node.value)
        return self.generic_visit(node)

    def _creation(self, target: Any, value: Any) -> None:
        """``name = f(...)``: ``buffer`` looks at ``f`` when it runs (np.zeros & co.)."""
        if isinstance(target, gast.Name) and target.id in self.buffers \
                and isinstance(value, gast.Call):
            self.buffer_calls.add(id(value))

    def visit_Attribute(self, node: Any) -> Any:
        if isinstance(node.value, gast.Subscript):  # ``x[0].add_(1)``: torch's view
            self.receivers.add(id(node.value))
        return self.generic_visit(node)

    def visit_Subscript(self, node: Any) -> Any:
        """``x[i, j]`` read (no slice in the index): ``subscript`` gives an element as a
        copy, numpy's scalar."""
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load) and any(
                self.scope.resolve(node.value) is c for c in (np.r_, np.c_)):
            self.changed = True  # np.r_[a, b]: concat_index(np.r_)[a, b]
            node.value = gast.copy_location(gast.Call(
                func=_at(_runtime("concat_index"), node), args=[node.value], keywords=[]),
                node.value)
            return node
        if not isinstance(node.ctx, gast.Load) or id(node) in self.receivers \
                or _has_slice(node.slice):
            return node
        self.changed = True
        new = gast.Call(func=_at(_runtime("subscript"), node), args=[node.value, node.slice],
                        keywords=[])
        return gast.copy_location(new, node)

    def visit_Call(self, node: Any) -> Any:
        if _is_runtime(node.func):  # (made by state.py: routed already)
            return self.generic_visit(node)
        if self.scope.maybe_effect(node.func):
            return self._effect_call(node)
        helper = "buffer" if id(node) in self.buffer_calls else "call"
        self.generic_visit(node)
        if not self.scope.routed(node.func):
            return node
        self.changed = True
        new = gast.Call(func=_at(_runtime(helper), node.func), args=[node.func] + node.args,
                        keywords=node.keywords)
        return gast.copy_location(new, node)

    # ------------------------------------------------ print, logging (effects.py)
    def _effect_call(self, node: Any) -> Any:
        """``print(...)``, ``logger.info(...)``: through ``effect_call``, with the
        f-strings, ``%`` formatting, ``float(x)`` and ``x.item()`` among its arguments
        formatted when the call runs (``fstring``, ``percent``, ``later``)."""
        self.changed = True
        args = [self._effect_arg(a) for a in node.args]
        keywords = [gast.keyword(arg=k.arg, value=self._effect_arg(k.value))
                    for k in node.keywords]
        new = gast.Call(func=_at(_runtime("effect_call"), node.func),
                        args=[self.visit(node.func)] + args, keywords=keywords)
        return gast.copy_location(new, node)

    def _effect_arg(self, a: Any) -> Any:
        if isinstance(a, gast.JoinedStr):
            parts = [self._effect_part(v) for v in a.values]
            return _at(gast.Call(func=_runtime("fstring"), args=parts, keywords=[]), a)
        if isinstance(a, gast.BinOp) and isinstance(a.op, gast.Mod) \
                and isinstance(a.left, gast.Constant) and isinstance(a.left.value, str):
            right = a.right
            right = (gast.Tuple(elts=[self._later(e) for e in right.elts], ctx=gast.Load())
                     if isinstance(right, gast.Tuple) else self._later(right))
            return _at(gast.Call(func=_runtime("percent"), args=[a.left, _at(right, a)],
                                 keywords=[]), a)
        return self._later(a)

    def _effect_part(self, v: Any) -> Any:
        if not isinstance(v, gast.FormattedValue):
            return v
        spec = gast.Constant(value="", kind=None) if v.format_spec is None \
            else self._effect_arg(v.format_spec)
        return _at(gast.Tuple(elts=[self._later(v.value),
                                    gast.Constant(value=v.conversion, kind=None), spec],
                              ctx=gast.Load()), v)

    def _later(self, e: Any) -> Any:
        """``float(x)`` as ``later(float, x)``, ``x.item()`` as ``later(x.item)``."""
        if isinstance(e, gast.Call) and not e.keywords:
            f = e.func
            if len(e.args) == 1 and self.scope.resolve(f) in (float, int):
                return _at(gast.Call(func=_runtime("later"),
                                     args=[f, self.visit(e.args[0])], keywords=[]), e)
            if not e.args and isinstance(f, gast.Attribute) and f.attr == "item":
                f.value = self.visit(f.value)
                return _at(gast.Call(func=_runtime("later"), args=[f], keywords=[]), e)
        return self.visit(e)


def _plain_ref(expr: Any) -> bool:
    """A name, or attributes of one (``self.buf``): read again without side effects."""
    while isinstance(expr, gast.Attribute):
        expr = expr.value
    return isinstance(expr, gast.Name)


def _load(expr: Any) -> Any:
    """A new node reading the name or attribute chain ``expr``."""
    if isinstance(expr, gast.Attribute):
        return gast.Attribute(value=_load(expr.value), attr=expr.attr, ctx=gast.Load())
    return _name(expr.id)


def returned_names(node: Any) -> set:
    """The names the function returns (alone or in a tuple): its caller may write into
    them."""
    names = set()
    for n in walk(node):
        if isinstance(n, gast.Return) and n.value is not None:
            values = n.value.elts if isinstance(n.value, gast.Tuple) else [n.value]
            names.update(v.id for v in values if isinstance(v, gast.Name))
    return names


def _has_slice(index: Any) -> bool:
    """An index with a slice keeps an axis: its result is never an element."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    return any(isinstance(p, gast.Slice) for p in parts)


#: numpy's functions that write into their first argument (``numpy_inplace.py``), and
#: the ndarray methods that write into the array (``x.fill(v)``, ``x.put(i, v)``)
WRITING_FUNCTIONS = frozenset({"copyto", "fill_diagonal", "put", "put_along_axis", "putmask",
                               "place", "at"})
WRITING_METHODS = frozenset({"fill", "put"})


def _written_by_call(n: Any) -> list:
    """What a call writes into: the first argument of ``np.put(a, ...)``,
    ``np.add.at(a, ...)`` & co. (known by name: a name that is not numpy's makes at
    most a needless copy), ``x`` of ``x.fill(v)``, and ``out=`` arrays."""
    f = n.func
    name = f.attr if isinstance(f, gast.Attribute) else f.id if isinstance(f, gast.Name) \
        else None
    targets = [k.value for k in n.keywords if k.arg == "out"]
    if isinstance(f, gast.Attribute) and f.attr in WRITING_METHODS:
        targets.append(f.value)
    if name in WRITING_FUNCTIONS and n.args:
        targets.append(n.args[0])
    if name == "nan_to_num" and any(k.arg == "copy" for k in n.keywords) and n.args:
        targets.append(n.args[0])
    return [e for t in targets for e in (t.elts if isinstance(t, gast.Tuple) else [t])]


def written_names(node: Any) -> set:
    """The names the function writes into: ``x[...] = ...``, ``x[...] += ...``,
    ``x.attr[...] = ...``, ``x += ...``, and the calls of ``_written_by_call``
    (``x.fill(...)``, ``np.add.at(x, ...)``, ``out=x``...)."""
    written = set()
    for n in walk(node):
        targets = [n.value] if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) \
            else [n.target] if isinstance(n, gast.AugAssign) else _written_by_call(n) \
            if isinstance(n, gast.Call) else []
        for target in targets:
            while isinstance(target, (gast.Subscript, gast.Attribute)):
                target = target.value
            if isinstance(target, gast.Name):
                written.add(target.id)
    return written


def passed_names(node: Any, scope: Scope) -> set:
    """The names the function hands to calls other than numpy's (which may write)."""
    passed = set()
    for n in walk(node):
        if isinstance(n, gast.Call) and scope.routed(n.func) \
                and not is_numpy(scope.resolve(n.func)):
            args = n.args + [k.value for k in n.keywords]
            passed.update(a.id for a in args if isinstance(a, gast.Name))
    return passed


def walk(node: Any) -> Any:
    """``gast.walk``: breadth first, a node's children taken when it is reached (before
    it is yielded), without its two generators per node (the pass walks its trees
    many times: half its time was there)."""
    todo = [node]
    for n in todo:  # (a list grown while it is iterated: its new items come too)
        todo.extend(children(n))
        yield n


def children(node: Any) -> list:
    """``gast.iter_child_nodes`` as a list."""
    found = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, gast.AST):
            found.append(value)
        elif isinstance(value, list):
            found.extend([v for v in value if isinstance(v, gast.AST)])
    return found


def _at(new: Any, where: Any) -> Any:
    """``new`` and its parts without a location placed at ``where``'s."""
    for n in walk(new):
        for field in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if getattr(n, field, None) is None and field in n._attributes:
                setattr(n, field, getattr(where, field))
    return new


def _is_runtime(f: Any) -> bool:
    return isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
        and f.value.id == RUNTIME_NAME


def _runtime(helper: str) -> Any:
    return gast.Attribute(value=_name(RUNTIME_NAME), attr=helper, ctx=gast.Load())


def _name(name: str, ctx: Any = None) -> Any:
    return gast.Name(id=name, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def add_prologue(node: Any, written: set) -> bool:
    """``x = __pb_rt__.writable(x)`` first (after the docstring) for each argument ``x``
    the function writes into or hands to a function that may (``written``): that
    function's writes are then into the same copy, which the function reads after."""
    params = [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    where = gast.Pass()  # the prologue stands on the ``def`` line (its first three columns)
    where.lineno = where.end_lineno = node.lineno
    where.col_offset, where.end_col_offset = node.col_offset, node.col_offset + 3
    stmts = [_at(gast.Assign(
        targets=[_name(p, gast.Store())],
        value=gast.Call(func=_runtime("writable"), args=[_name(p)], keywords=[]),
        type_comment=None), where) for p in params if p in written]
    first = node.body[0]
    doc = isinstance(first, gast.Expr) and isinstance(first.value, gast.Constant) \
        and isinstance(first.value.value, str)
    node.body[int(doc):int(doc)] = stmts
    return bool(stmts)


# ------------------------------------------------------------------ compiling
def compile_function(node: Any, fn: types.FunctionType) -> types.CodeType:
    """The code of ``node``, compiled under the function's file name inside a factory
    whose arguments are the function's free variables and the runtime (and, for a
    method, inside a class of its class's name, so private names mangle as before
    and ``super()`` finds ``__class__``)."""
    code = fn.__code__
    cls = _class_name(getattr(code, "co_qualname", fn.__qualname__))
    inner = node if isinstance(node, gast.FunctionDef) else gast.Expr(value=node)
    if cls is not None:
        inner = gast.ClassDef(name=cls, bases=[], keywords=[], body=[inner],
                              decorator_list=[], type_params=[])
    names = [RUNTIME_NAME] + [n for n in code.co_freevars if cls is None or n != "__class__"]
    # the factory only gives the code its scopes (it never runs): the names its ``def``
    # and ``class`` bind stay global there, as they were where the function was defined
    bound = [n for n in (cls, getattr(node, "name", None)) if n is not None and n not in names]
    body = [gast.Global(names=bound)] if bound else []
    factory = gast.FunctionDef(
        name=_FACTORY, args=gast.arguments(args=[_name(n, gast.Param()) for n in names],
                                           posonlyargs=[], vararg=None, kwonlyargs=[],
                                           kw_defaults=[], kwarg=None, defaults=[]),
        body=[_at(b, node) for b in body] + [gast.copy_location(inner, node)],
        decorator_list=[], returns=None, type_comment=None, type_params=[])
    module = gast.Module(body=[gast.copy_location(factory, node)], type_ignores=[])
    tree = ast.fix_missing_locations(gast.gast_to_ast(module))
    with _AST_LOCK:
        module_code = compile(tree, code.co_filename, "exec",
                              flags=code.co_flags & _FUTURE, dont_inherit=True)
    new = _child(_child(module_code, _FACTORY), cls)
    new = _child(new, code.co_name)
    if hasattr(new, "co_qualname"):
        new = new.replace(co_qualname=code.co_qualname)
    return new


def _class_name(qualname: str) -> str | None:
    parts = qualname.split(".")
    return parts[-2] if len(parts) > 1 and parts[-2] != "<locals>" else None


def _child(code: types.CodeType, name: str | None) -> types.CodeType:
    if name is None:
        return code
    return next(c for c in code.co_consts if isinstance(c, types.CodeType) and c.co_name == name)


def codes_in(code: types.CodeType) -> list:
    found = [code]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            found += codes_in(c)
    return found
