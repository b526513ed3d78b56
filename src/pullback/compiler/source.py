"""The source pass: numpy code a tracer cannot see, rewritten before it is traced.

The tracer sees what runs on Tensors. It cannot see numpy make an array out of a
Python list of traced values (``np.array([x[0] * x[1], x[2]])``, ``np.sum([1.0, a])``),
nor a buffer made by ``np.zeros`` that a loop fills with traced values: numpy asks
each Tensor for its data, and pullback refuses rather than lose the gradient. So
before a call is traced, this pass reads the function's source (``gast``), routes
those calls through the helpers of ``source_runtime.py``, which build such values
with pullback's ops, and compiles the result in place of the function:

>>> import numpy as np, pullback as pb
>>> def f(x):
...     h = np.zeros((2, 2))
...     for t in range(2):
...         h[t] = x[t] * x[t]
...     return np.sum(np.stack([h[0], h[1] * 3.0]))
>>> pb.grad(f)(np.array([[1., 2.], [3., 4.]]))
array([[ 2.,  4.],
       [18., 24.]])

What is rewritten, in the function and in every function of the user's modules it
calls (each converted once per code object, when its first call is traced):

- a call that resolves, through the function's globals, closure and imports, to a
  numpy function (``np.zeros``, ``jnp.stack`` for ``import numpy as jnp``, ``stack``
  after ``from numpy import stack``), to a plain Python function of a user module,
  or to nothing it can be sure of (a method, a local, an argument) becomes
  ``__pb_rt__.call(f, ...)``, which looks at ``f`` when it runs: a numpy function
  goes to ``source_runtime.numpy_call``, a user function is converted first, and
  anything else is called as it is;
- ``h = np.zeros(...)`` (``ones``, ``empty``, ``full``, their ``_like`` forms, and any
  numpy function making a new array: ``np.eye``, ``np.array([0., 1.])``), when the
  function writes into ``h``, hands it to a function or returns it, becomes
  ``h = __pb_rt__.buffer(np.zeros, ...)``: inside a front door, a local Tensor that
  traced values may be written into (other arrays stay numpy's);
- an argument the function writes into (``x[0] = ...``, ``x += ...``, ``x.fill(v)``)
  or hands to a function is taken through ``__pb_rt__.writable(x)`` on entry: under
  ``pb.grad`` the function (and the functions it hands ``x`` to) write into one copy,
  and the caller's array gets what they leave in it; a copy nothing writes into is
  dropped;
- ``x[i, j]`` read, with no slice in the index, becomes ``__pb_rt__.subscript(x, (i,
  j))``: under ``pb.grad`` an element is a copy, numpy's scalar, not torch's view;
- ``x[...] = v`` and ``x[...] += v`` become ``x[...] = __pb_rt__.stored(x, v)``, which
  refuses to write a value that needs a gradient into a numpy array.

Every front door runs the function converted: the traces of ``pb.grad`` and
``pb.compile``, and their eager runs (``pb.grad`` on tensors that require grad or inside
another trace, ``pb.compile`` inlined in another trace, either falling back).

Everything else is left as written. Line numbers and columns are the user's (the
parsed source is moved to its place in the file, and compiled under the file's
name), so tracebacks, the tracer's guards and errors and the ``# file:line:``
comments of generated code point at the user's lines. A function without source
(built by ``exec``, typed at a prompt, written in C), a generator, or one with
nothing to rewrite runs as it is.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import functools
import inspect
import os
import sys
import sysconfig
import types
import weakref
from typing import Any, Callable

import gast
import numpy as np

from pullback import transforms

from .source_runtime import (
    Entry,
    as_buffer,
    is_creation,
    new_buffer,
    numpy_call,
    stored,
    subscript,
    writable,
)

#: the name rewritten code calls its helpers by (a free variable of the new code;
#: the trailing underscores keep methods from mangling it)
RUNTIME_NAME = "__pb_rt__"
_FACTORY = "__pb_factory__"
_UNKNOWN = object()
_NOT_DONE = object()
_NO_REWRITE = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
               | inspect.CO_ITERABLE_COROUTINE)
#: the ``from __future__`` flags a code object carries (compiled again with its own)
_FUTURE = functools.reduce(lambda a, b: a | b, (getattr(__future__, f).compiler_flag
                                                for f in __future__.all_feature_names))

#: code object -> its rewritten code (None: no source, or nothing to rewrite)
_CODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: every code object this pass compiled (never converted again)
_OURS: weakref.WeakSet = weakref.WeakSet()


# ------------------------------------------------------------------ front door
def rewrite(fn: Callable, numpy_semantics: bool = False, traced: bool = False) -> Callable:
    """What to run in place of ``fn``: its converted form, run with the runtime's
    bookkeeping (an ``Entry``); ``fn`` itself when nothing is rewritten.
    ``numpy_semantics`` (as under ``pb.grad``): writes into the call's arguments are
    functionalized, and an element read is a copy (numpy's scalar), not torch's view.
    ``traced``: the call is a new trace (generated code writes into the arguments)."""
    target = converted(fn)
    if target is fn and getattr(getattr(fn, "__func__", fn), "__code__", None) not in _OURS:
        return fn  # (a function defined in rewritten code is rewritten already)

    def traced_call(*args: Any, **kwargs: Any) -> Any:
        with Entry(numpy_semantics, args, traced) as entry:
            return entry.finish(target(*args, **kwargs))

    return traced_call


def converted(fn: Callable) -> Callable:
    """``fn`` converted (also a function of a library, such as ``pb.grad``'s wrapper of
    the user's function), or ``fn`` itself; run it inside an ``Entry``."""
    return _callee(fn, library=True)


def call(f: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)`` from rewritten code: a user function converted first, a
    numpy function through ``numpy_call``."""
    if is_numpy(f):
        return numpy_call(f, *args, **kwargs)
    return _callee(f)(*args, **kwargs)


def buffer(f: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``name = f(...)`` from rewritten code, where the function writes into ``name`` (or
    hands it to a function that may, or returns it): for ``np.zeros`` and the other
    numpy functions making a new array (``np.eye``, ``np.array`` of numbers...), a
    buffer traced values can be written into."""
    if is_creation(f):
        return new_buffer(f, *args, **kwargs)
    out = call(f, *args, **kwargs)
    return as_buffer(out, args, kwargs) if is_numpy(f) else out


_RUNTIME = types.SimpleNamespace(call=call, buffer=buffer, writable=writable,
                                 subscript=subscript, stored=stored)
_RUNTIME_CELL = types.CellType(_RUNTIME)


def _callee(f: Callable, library: bool = False) -> Callable:
    """``f`` converted (functions, methods, partials, objects of user classes), or ``f``
    itself. ``library``: also convert functions and methods outside the user's modules
    (the traced entry point, such as ``pb.grad``'s wrapper of the user's function)."""
    if isinstance(f, types.FunctionType):
        return convert(f, library) or f
    if isinstance(f, types.MethodType) and isinstance(f.__func__, types.FunctionType):
        func = convert(f.__func__, library)
        return f if func is None else types.MethodType(func, f.__self__)
    if isinstance(f, functools.partial):
        func = _callee(f.func, library)
        return f if func is f.func else functools.partial(func, *f.args, **f.keywords)
    method = _call_method(f)  # an object of a user class
    if isinstance(method, types.FunctionType):
        func = convert(method)
        return f if func is None else types.MethodType(func, f)
    return f


def convert(fn: types.FunctionType, library: bool = False) -> types.FunctionType | None:
    """``fn`` with its source rewritten (sharing its globals, closure cells and
    defaults), or None when it has no source or nothing to rewrite, or (unless
    ``library``) is not from a user module."""
    code = fn.__code__
    if code in _OURS:
        return fn
    if not library and not is_user_code(code):
        return None
    new = _CODES.get(code, _NOT_DONE)
    if new is _NOT_DONE:
        new = _CODES[code] = _convert_code(fn)
    return None if new is None else _rebuild(fn, new)


# ---------------------------------------------------------------- whose code
def _library_dirs() -> tuple:
    paths = sysconfig.get_paths()
    dirs = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # pullback
            os.path.dirname(os.path.abspath(transforms.__file__)),
            os.path.dirname(os.path.abspath(np.__file__)),
            *(paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths)]
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


_LIBRARY_DIRS = _library_dirs()


def is_user_code(code: types.CodeType) -> bool:
    """Code from a user's module: not pullback's, numpy's, the standard library's or
    an installed package's (nor code pullback generated)."""
    return _user_file(code.co_filename)


def is_user_file(name: str) -> bool:
    """A file of the user's modules (see ``is_user_code``)."""
    return _user_file(name)


@functools.lru_cache(maxsize=1024)
def _user_file(name: str) -> bool:
    if name.startswith("<pullback"):
        return False
    return not os.path.realpath(name).startswith(_LIBRARY_DIRS)


def is_numpy(f: Any) -> bool:
    """A numpy function or ufunc (not a class such as ``np.float32``)."""
    if isinstance(f, np.ufunc):
        return True
    if isinstance(f, type) or not callable(f):
        return False
    module = getattr(f, "__module__", None)
    return isinstance(module, str) and (module == "numpy" or module.startswith("numpy."))


# ------------------------------------------------------------------- the pass
def _convert_code(fn: types.FunctionType) -> types.CodeType | None:
    code = fn.__code__
    if code.co_flags & _NO_REWRITE:
        return None
    node = _parse(code)
    if node is None:
        return None
    _strip_signature(node)
    scope = _Scope(fn, node)
    written = _written(node)  # (before calls are rewritten: x.fill(...) is one)
    passed = _passed(node, scope)
    rewriter = _Rewriter(scope, written | passed | _returned(node))
    node = rewriter.visit(node)
    if isinstance(node, gast.FunctionDef):
        rewriter.changed |= _add_prologue(node, written | passed)
    if not rewriter.changed:
        return None
    new = _compile(node, fn)
    if not _same_names(code, new):  # the file changed since it was imported
        return None
    _OURS.update(_codes_in(new))
    return new


def _same_names(old: types.CodeType, new: types.CodeType) -> bool:
    """Whether ``new`` reads the globals and attributes, and binds the locals, that
    ``old`` does (plus the runtime's): a check that the source is the code's."""
    names, added = set(old.co_names), set(vars(_RUNTIME))
    return (old.co_varnames == new.co_varnames and old.co_cellvars == new.co_cellvars
            and names <= set(new.co_names) <= names | added
            and set(new.co_freevars) <= set(old.co_freevars) | {RUNTIME_NAME})


def _parse(code: types.CodeType) -> Any:
    """The function's (or lambda's) node, parsed from its file, at its own lines and
    columns; None when the source is unavailable or ambiguous."""
    try:
        lines, start = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return None
    text = "".join(lines)
    indented = lines[0][:1] in (" ", "\t")
    if indented:  # parse it where it stands: columns stay the file's
        text = "if 1:\n" + text
    try:
        tree = gast.parse(text)
    except SyntaxError:
        return None
    gast.increment_lineno(tree, start - 1 - indented)
    if code.co_name == "<lambda>":  # the one lambda on its line with its arguments
        found = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)
                 and n.lineno == code.co_firstlineno and _arg_names(n.args) == _params(code)]
    else:  # the block the source starts with
        found = [n for n in (tree.body[0].body if indented else tree.body)[:1]
                 if isinstance(n, gast.FunctionDef) and n.name == code.co_name
                 and _arg_names(n.args) == _params(code)]
    return found[0] if len(found) == 1 else None


def _arg_names(args: gast.arguments) -> list:
    names = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
    return names + [a.id for a in (args.vararg, args.kwarg) if a is not None]


def _params(code: types.CodeType) -> list:
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return list(code.co_varnames[:n])


def _strip_signature(node: Any) -> None:
    """Defaults, annotations and decorators were evaluated when ``def`` ran: the new
    function takes them from the old one."""
    args = node.args
    args.defaults = []
    args.kw_defaults = [None] * len(args.kwonlyargs)
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    if isinstance(node, gast.FunctionDef):
        node.decorator_list = []
        node.returns = None


class _Scope:
    """What the names a function calls refer to, where that is sure: a name it never
    binds itself is its closure's, its globals' or a builtin; a name it binds only by
    importing is what the import gives."""

    def __init__(self, fn: types.FunctionType, node: Any) -> None:
        self.globals = fn.__globals__
        self.cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        self.bound: dict[str, Any] = {}
        inner = [node.args] + (node.body if isinstance(node.body, list) else [node.body])
        for part in inner:
            for n in gast.walk(part):
                self._bindings(n)

    def _bind(self, name: str, value: Any = _UNKNOWN) -> None:
        if self.bound.get(name, value) is not value:
            value = _UNKNOWN
        self.bound[name] = value

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
                top = a.name.split(".")[0]
                self._bind(a.asname or top, sys.modules.get(a.name if a.asname else top,
                                                            _UNKNOWN))
        elif isinstance(n, gast.ImportFrom):
            module = sys.modules.get(n.module) if n.level == 0 and n.module else None
            for a in n.names:
                self._bind(a.asname or a.name, vars(module).get(a.name, _UNKNOWN)
                           if module is not None else _UNKNOWN)
        elif isinstance(n, (gast.MatchAs, gast.MatchStar)) and n.name:
            self._bind(n.name)
        elif isinstance(n, gast.MatchMapping) and n.rest:
            self._bind(n.rest)

    def resolve(self, expr: Any) -> Any:
        """The object ``expr`` (a name or ``module.attr`` chain) refers to, or _UNKNOWN."""
        if isinstance(expr, gast.Attribute):
            base = self.resolve(expr.value)
            if isinstance(base, types.ModuleType):  # (its dict: no lazy-import hooks)
                return vars(base).get(expr.attr, _UNKNOWN)
            return _UNKNOWN
        if not isinstance(expr, gast.Name):
            return _UNKNOWN
        name = expr.id
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

    def routed(self, func: Any) -> bool:
        """Whether a call of ``func`` goes through the runtime: numpy's functions, user
        functions, and what cannot be resolved until it runs."""
        f = self.resolve(func)
        return f is _UNKNOWN or is_numpy(f) or _user_function(f)


def _user_function(f: Any) -> bool:
    """A function (method, partial, callable object) from a user module, which
    ``call`` converts."""
    if isinstance(f, types.MethodType):
        f = f.__func__
    elif isinstance(f, functools.partial):
        f = f.func
    elif not isinstance(f, types.FunctionType):
        f = _call_method(f)
    return isinstance(f, types.FunctionType) and is_user_code(f.__code__)


def _call_method(f: Any) -> Any:
    """The ``__call__`` of an object's class (None for classes themselves)."""
    return None if isinstance(f, type) else inspect.getattr_static(type(f), "__call__", None)


class _Rewriter(gast.NodeTransformer):
    """Routes calls through the runtime (``name = np.zeros(...)`` through ``buffer`` when
    ``name`` is one of ``buffers``: written into, handed to a function, or returned),
    element reads through ``subscript``, and values written into ``x[...]`` through
    ``stored``."""

    def __init__(self, scope: _Scope, buffers: set) -> None:
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
        if not isinstance(node.ctx, gast.Load) or id(node) in self.receivers \
                or _has_slice(node.slice):
            return node
        self.changed = True
        new = gast.Call(func=_at(_runtime("subscript"), node), args=[node.value, node.slice],
                        keywords=[])
        return gast.copy_location(new, node)

    def visit_Call(self, node: Any) -> Any:
        helper = "buffer" if id(node) in self.buffer_calls else "call"
        self.generic_visit(node)
        if not self.scope.routed(node.func):
            return node
        self.changed = True
        new = gast.Call(func=_at(_runtime(helper), node.func), args=[node.func] + node.args,
                        keywords=node.keywords)
        return gast.copy_location(new, node)


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


def _returned(node: Any) -> set:
    """The names the function returns (alone or in a tuple): its caller may write into
    them."""
    names = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Return) and n.value is not None:
            values = n.value.elts if isinstance(n.value, gast.Tuple) else [n.value]
            names.update(v.id for v in values if isinstance(v, gast.Name))
    return names


def _has_slice(index: Any) -> bool:
    """An index with a slice keeps an axis: its result is never an element."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    return any(isinstance(p, gast.Slice) for p in parts)


def _written(node: Any) -> set:
    """The names the function writes into: ``x[...] = ...``, ``x[...] += ...``,
    ``x.attr[...] = ...``, ``x += ...``, ``x.fill(...)``."""
    written = set()
    for n in gast.walk(node):
        target = n.value if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) \
            else n.target if isinstance(n, gast.AugAssign) else n.func.value if isinstance(
                n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr == "fill" \
            else None
        while isinstance(target, (gast.Subscript, gast.Attribute)):
            target = target.value
        if isinstance(target, gast.Name):
            written.add(target.id)
    return written


def _passed(node: Any, scope: _Scope) -> set:
    """The names the function hands to calls other than numpy's (which may write)."""
    passed = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Call) and scope.routed(n.func) \
                and not is_numpy(scope.resolve(n.func)):
            args = n.args + [k.value for k in n.keywords]
            passed.update(a.id for a in args if isinstance(a, gast.Name))
    return passed


def _at(new: Any, where: Any) -> Any:
    """``new`` and its parts without a location placed at ``where``'s."""
    for n in gast.walk(new):
        for field in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if getattr(n, field, None) is None and field in n._attributes:
                setattr(n, field, getattr(where, field))
    return new


def _runtime(helper: str) -> Any:
    return gast.Attribute(value=_name(RUNTIME_NAME), attr=helper, ctx=gast.Load())


def _name(name: str, ctx: Any = None) -> Any:
    return gast.Name(id=name, ctx=ctx or gast.Load(), annotation=None, type_comment=None)


def _add_prologue(node: Any, written: set) -> bool:
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
def _compile(node: Any, fn: types.FunctionType) -> types.CodeType:
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
    module_code = compile(tree, code.co_filename, "exec", flags=code.co_flags & _FUTURE,
                          dont_inherit=True)
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


def _codes_in(code: types.CodeType) -> list:
    found = [code]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            found += _codes_in(c)
    return found


def _rebuild(fn: types.FunctionType, code: types.CodeType) -> types.FunctionType:
    """A function of ``code`` with ``fn``'s globals, closure cells (shared, so
    ``nonlocal`` writes and later changes are seen), defaults and attributes."""
    cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells[RUNTIME_NAME] = _RUNTIME_CELL
    new = types.FunctionType(code, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(cells[n] for n in code.co_freevars))
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__doc__ = fn.__doc__
    new.__annotations__ = fn.__annotations__
    new.__dict__.update(fn.__dict__)
    new.__wrapped__ = fn
    return new
