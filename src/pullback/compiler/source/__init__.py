"""The source pass: numpy code a tracer cannot see, rewritten before it is traced.

The tracer sees what runs on Tensors. It cannot see numpy make an array out of a
Python list of traced values (``np.array([x[0] * x[1], x[2]])``, ``np.sum([1.0, a])``),
nor a buffer made by ``np.zeros`` that a loop fills with traced values: numpy asks
each Tensor for its data, and pullback refuses rather than lose the gradient. So
before a call is traced, this pass reads the function's source (``gast``), routes
those calls through the helpers of ``runtime.py``, which build such values
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
  goes to ``numpy_builders.numpy_call``, a user function is converted first, and
  anything else is called as it is;
- ``h = np.zeros(...)`` (``ones``, ``empty``, ``full``, their ``_like`` forms, and any
  numpy function making a new array: ``np.eye``, ``np.array([0., 1.])``), when the
  function writes into ``h``, hands it to a function or returns it, becomes
  ``h = __pb_rt__.buffer(np.zeros, ...)``: inside a front door, a local Tensor that
  traced values may be written into (other arrays stay numpy's);
- an argument the function writes into (``x[0] = ...``, ``x += ...``, ``x.fill(v)``,
  ``np.add.at(x, ...)``, ``np.put(x, ...)`` and numpy's other writers, ``out=x``)
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

import functools
import inspect
import types
import weakref
from typing import Any, Callable

import gast
import numpy as np

from ...settings import config
from ...user_code import is_user_code
from ..effects import (
    callback,
    concrete,
    draw,
    fstring,
    is_draw,
    is_effect,
    later,
    percent,
    seeding,
)
from ..mutations import (
    attr_value,
    is_mutation,
    item_value,
    not_replayed,
    rebind,
    unreplayable,
    unreplayed_write,
)
from ..mutations import mutate as _mutate
from .loop_helpers import and_, loop_index, not_, or_, stacked
from .loop_runtime import (
    LOOP_BOUNDS,
    OWNER,
    REFUSED,
    for_each,
    for_enumerate,
    for_enumerate_zip,
    for_range,
    for_zip,
    if_,
    is_static,
    note_refusals,
    while_,
)
from .region_attempts import UNBOUND
from .loop_writes import any_of, first_item, int0, item_read, item_set, item_slice, truth
from . import pass_cache
from .loops import convert_loops
from .parsing import parse_function, strip_signature
from .compiling import codes_in, compile_function
from .name_uses import passed_names, returned_names, written_names
from .nodes import RUNTIME_NAME
from .rewriter import Rewriter, add_prologue
from .scope import Scope, call_method, is_higher_order, is_numpy, is_seeding, replaceable
from .entry import Entry, writable
from .numpy_builders import as_buffer, concat_index, is_creation, new_buffer, numpy_call
from .runtime import stored, subscript
from .traced_values import closes_over_traced, traced_leaf
from .state import UPDATES, rewrite_state

_NOT_DONE = object()
_NO_REWRITE = (inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
               | inspect.CO_ITERABLE_COROUTINE)

#: code object -> its rewritten code (None: no source, or nothing to rewrite)
_CODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: every code object this pass compiled (never converted again)
_OURS: weakref.WeakSet = weakref.WeakSet()
#: the codes of front doors' functions ``traced_ints`` has converted (or found none to)
_LOOKED_AT: weakref.WeakSet = weakref.WeakSet()
#: code -> the positions of its int arguments that only bound converted loops (None: no
#: such argument), kept for good: one entry per function definition of the program
_BOUNDS_OF: dict = {}
_UNSEEN = object()


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
        note_refusals(getattr(getattr(fn, "__func__", fn), "__code__", None))
        with Entry(numpy_semantics, args, traced) as entry:
            return entry.finish(target(*args, **kwargs))

    return traced_call


def converted(fn: Callable) -> Callable:
    """``fn`` converted (also a function of a library, such as ``pb.grad``'s wrapper of
    the user's function), or ``fn`` itself; run it inside an ``Entry``."""
    return _callee(fn, library=True)


def call(f: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``f(*args, **kwargs)`` from rewritten code: a user function converted first, a
    numpy function through ``numpy_call``, a draw from a numpy generator through
    ``draw``."""
    if is_draw(f):
        return draw(f, *args, **kwargs)
    if is_seeding(f):
        return seeding(f, *args, **kwargs)
    find = replaceable(f)
    if find is not None and (traced_leaf(args) or traced_leaf(kwargs.values())
                             or closes_over_traced(args) or closes_over_traced(kwargs.values())):
        ours = find(f)
        if ours is not None:  # scipy's function on traced values (or a callback closing
            return ours(*args, **kwargs)  # over them, as odeint's field): pullback.scipy's
    if is_numpy(f):  # (numpy.polynomial's evaluations: replaced above, numpy_polynomial.py)
        return numpy_call(f, *args, **kwargs)
    if is_higher_order(f):
        # (map(partial(user_f, p), data) calls user_f: converted, as a direct call is)
        args = tuple(_callee(a) if callable(a) else a for a in args)
        kwargs = {k: _callee(a) if callable(a) else a for k, a in kwargs.items()}
    return _callee(f)(*args, **kwargs)


def effect_call(f: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """A call the source pass took for ``print`` or logging's (``effects.py``): a
    ``callback`` when it is one, else ``call`` on the arguments' values."""
    if is_effect(f):
        return callback(f, *args, **kwargs)
    return call(f, *concrete(args), **concrete(kwargs))


def buffer(f: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``name = f(...)`` from rewritten code, where the function writes into ``name`` (or
    hands it to a function that may, or returns it): for ``np.zeros`` and the other
    numpy functions making a new array (``np.eye``, ``np.array`` of numbers...), a
    buffer traced values can be written into."""
    if is_creation(f):
        return new_buffer(f, *args, **kwargs)
    out = call(f, *args, **kwargs)
    return as_buffer(out, args, kwargs) if is_numpy(f) else out


def made(value: Any) -> Any:
    """``name = a * b`` (an operator's result) from rewritten code, where the function
    writes into ``name``: a new float array becomes a buffer, as ``buffer``'s do (else
    the trace held the array itself as a constant, and a later ``name[0] = 1.0`` or
    ``name += 1`` changed the values its earlier uses read)."""
    return as_buffer(value, (), {})


def mutate(key: str | None, f: Callable, /, *args: Any, **kwargs: Any) -> Any:
    """``receiver.method(...)`` from rewritten code, where the method may change state the
    function did not make (``history.append(loss)``): made again on every call of the
    generated code (``mutations.py``) when it is a list's, dict's, set's or deque's;
    else ``call``."""
    if is_mutation(f):
        return _mutate(f, args, kwargs, key)
    not_replayed(key)
    return call(f, *args, **kwargs)


_RUNTIME = types.SimpleNamespace(call=call, buffer=buffer, made=made, writable=writable,
                                 concat_index=concat_index,
                                 subscript=subscript, stored=stored, effect_call=effect_call,
                                 fstring=fstring, percent=percent, later=later,
                                 rebind=rebind, attr_value=attr_value, item_value=item_value,
                                 mutate=mutate, unreplayable=unreplayable,
                                 unreplayed_write=unreplayed_write, for_range=for_range,
                                 for_each=for_each, for_zip=for_zip,
                                 for_enumerate=for_enumerate,
                                 for_enumerate_zip=for_enumerate_zip, if_=if_,
                                 while_=while_, loop_index=loop_index, UNBOUND=UNBOUND,
                                 not_=not_, and_=and_, or_=or_, stacked=stacked,
                                 item_set=item_set, item_slice=item_slice, int0=int0,
                                 item_read=item_read, first_item=first_item, truth=truth,
                                 any_of=any_of)
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
    method = call_method(f)  # an object of a user class
    if isinstance(method, types.FunctionType):
        func = convert(method, library or _user_forward(f))
        return f if func is None else types.MethodType(func, f)
    return f


def _user_forward(f: Any) -> bool:
    """An object whose ``__call__`` (a library's, as ``pb.nn.Module``'s) runs a
    ``forward`` of the user's: its ``__call__`` is converted so that the call reaches
    the converted ``forward``."""
    forward = inspect.getattr_static(type(f), "forward", None)
    return isinstance(forward, types.FunctionType) and is_user_code(forward.__code__)


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
    note_refusals(code)
    return None if new is None else _rebuild(fn, new)


def traced_ints(fn: Any, args: tuple) -> tuple:
    """``args`` for a front door of ``fn``, with a Python int read only as the bound of
    a converted loop (``for t in range(n)``) as a 0-d int64 array: traced, so that one
    trace serves every trip count (the loop is a region whose length is a run-time
    value). Other arguments, and every argument once such a loop ran unrolled, as
    given."""
    code = getattr(fn, "__code__", None)
    positions = _BOUNDS_OF.get(code, _UNSEEN)  # (a plain dict: every cache hit reads it)
    if positions is None:  # (most functions: no int bounds a loop)
        return args
    if positions is _UNSEEN:
        if not isinstance(fn, types.FunctionType) or int not in set(map(type, args)):
            return args  # (no int to trace: converted when traced, if ever; a later
            # process's first call on a persistent variant reads no pass entry)
        if code not in _LOOKED_AT:  # (its first call converts it: LOOP_BOUNDS has its loops)
            convert(fn)
            _LOOKED_AT.add(code)
        positions = _BOUNDS_OF[code] = LOOP_BOUNDS.get(code)
    if not positions or is_static(code):
        return args
    return tuple(np.asarray(a, np.int64) if k in positions and type(a) is int else a
                 for k, a in enumerate(args))


# ------------------------------------------------------------------- the pass
def _convert_code(fn: types.FunctionType) -> types.CodeType | None:
    code = fn.__code__
    if code.co_flags & _NO_REWRITE:
        return None
    key = pass_cache.key_of(fn) if config.cache_dir else None
    saved = pass_cache.load(fn, key) if key is not None else None
    if saved is pass_cache.REFUSED:  # (a damaged entry: left as it is, as disk_cache does)
        saved = key = None
    if saved is not None and (saved.code is None
                              or _same_names(code, saved.code, saved.looped)):
        return _record(code, saved)
    found = _run_pass(fn)
    if found is None:
        return None
    scope, saved = found
    if key is not None:
        pass_cache.store(key, scope, saved)
    return _record(code, saved)


def _record(code: types.CodeType, saved: pass_cache.Saved) -> types.CodeType | None:
    """The pass's side outputs for ``code`` kept (which codes are ours, the state it
    changes, its loops' int bounds, the loops it left and why); its new code."""
    if saved.refused:
        REFUSED[code] = tuple(f"{code.co_filename}:{line}: loop unrolled: {why}"
                              for line, why in saved.refused)
    new = saved.code
    if new is None:
        return None
    _OURS.update(codes_in(new))
    if saved.updates:
        UPDATES[code] = saved.updates
    if saved.bounds:
        LOOP_BOUNDS[code] = saved.bounds
        for c in codes_in(new):
            OWNER[c] = code
    return new


def _run_pass(fn: types.FunctionType) -> tuple | None:
    """(the ``Scope`` the pass looked names up in, its output), or None when the
    function has no source (or not the code's)."""
    code = fn.__code__
    node = parse_function(code)
    if node is None:
        return None
    strip_signature(node)
    scope = Scope(fn, node)
    written = written_names(node)  # (before calls are rewritten: x.fill(...) is one)
    passed = passed_names(node, scope)
    state_changed, updates = rewrite_state(node)  # (changes to outside state: replayed)
    looped, bounds, refused = convert_loops(node, scope) \
        if isinstance(node, gast.FunctionDef) else (False, (), ())
    rewriter = Rewriter(scope, written | passed | returned_names(node))
    rewriter.changed |= state_changed | looped
    node = rewriter.visit(node)
    if isinstance(node, gast.FunctionDef):
        rewriter.changed |= add_prologue(node, written | passed)
    refused = tuple((line, why) for line, why in refused)
    if not rewriter.changed:
        return scope, pass_cache.Saved(None, False, (), frozenset(), refused)
    new = compile_function(node, fn)
    if not _same_names(code, new, looped):  # the file changed since it was imported
        return None
    return scope, pass_cache.Saved(new, looped, tuple(bounds), updates, refused)


def _same_names(old: types.CodeType, new: types.CodeType, looped: bool = False) -> bool:
    """Whether ``new`` reads the globals and attributes, and binds the locals, that
    ``old`` does (plus the runtime's): a check that the source is the code's. With
    ``looped`` (loops became functions: their names moved into them), the names of
    all its code objects together."""
    names, added = set(old.co_names), set(vars(_RUNTIME))
    if looped:
        codes = codes_in(new)
        bound = {n for c in codes for n in c.co_varnames + c.co_cellvars + c.co_freevars}
        read = {n for c in codes for n in c.co_names}
        names = {n for c in codes_in(old) for n in c.co_names}  # (its nested defs' too)
        return set(old.co_varnames + old.co_cellvars) <= bound \
            and names - {"range", "zip", "enumerate", "append"} <= read <= names | added
    return (old.co_varnames == new.co_varnames and old.co_cellvars == new.co_cellvars
            and names <= set(new.co_names) <= names | added
            and set(new.co_freevars) <= set(old.co_freevars) | {RUNTIME_NAME})


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
