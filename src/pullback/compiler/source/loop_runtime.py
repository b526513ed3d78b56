"""What a loop or ``if`` converted by ``loops.py`` runs: a region of the trace
(``pb.scan``, ``pb.while_loop`` or ``pb.cond``, each body traced once) when a front
door's trace is running and the body is a function of its carried values, else the
plain Python loop or ``if``.

Outside a trace (and in a transform run eagerly inside another trace) the loop is the
user's loop, step by step. Under one, the region is tried first; the body is traced
on stand-ins for one step's values. The loop runs as Python (the trace unrolls it, as
it did before the conversion; an ``if`` becomes a guard) when a carried value is not
an array or a number (a list, a name not bound yet; a while loop's int counter is
traced as a range's is), a carried array is
changed in place (``h += x``), the body changes a carry's shape or dtype, branches on a
traced value, draws random numbers, changes outside state or prints: what the attempt
changed is put back first, and the reason is kept for ``pb.compiler.inspect``.

An int argument of a front door's function that only bounds converted loops is traced
(``traced_ints``, called by the cache): one trace serves every trip count. Once such a
loop runs unrolled, the function's ints are cache keys again.

This file holds the loops' entry points (``for_range``, ``for_each`` & co, ``while_``,
``if_``) and the registries the cache reads; its neighbours: ``loop_regions.py`` (each
kind of loop as a region), ``region_attempts.py`` (why a loop cannot be one, and an
attempt that failed put back), ``loop_helpers.py`` (what a converted body calls:
``loop_index``, ``stacked``, ``and_``/``or_``/``not_``).
"""


from __future__ import annotations

import sys
import weakref
from typing import Any, Callable

import numpy as np

from ...autograd import record
from ..region_bodies import active_tracers
from .entry import in_traced_entry
from .loop_helpers import traced_int
from .loop_regions import region_if, region_items, region_range, region_while
from .loop_stacks import append_outs, split_step
from .loop_writes import DEPTH
from .region_attempts import UNBOUND
from .runtime import subscript

#: a function's code -> the positions of its parameters read only as bounds of a
#: converted ``range``; an int given there is traced (``traced_ints``)
LOOP_BOUNDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: each code object of a converted function -> the function's original code
OWNER: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: codes whose loop with a traced bound ran unrolled: their ints stay Python ints
_STATIC: weakref.WeakSet = weakref.WeakSet()
#: a function's code -> "file:line: loop unrolled: why" for each loop the source pass
#: left as written (noted in the tracers running it, for ``pb.compiler.inspect``)
REFUSED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def note_refusals(code: Any) -> None:
    """Note the loops of ``code`` the source pass left as written in the running
    tracers (once each)."""
    notes = REFUSED.get(code) if record.TRACING and code is not None else None
    for tr in (active_tracers() or ()) if notes else ():
        tr.notes.extend(n for n in notes if n not in tr.notes)


def is_static(code: Any) -> bool:
    """Whether a loop of ``code`` with a traced bound ran unrolled (its ints stay ints)."""
    return code in _STATIC


def for_range(body: Callable, getters: tuple, bounds: tuple, in_place: tuple,
              post: Callable | None = None, brk: bool = False, sliced: tuple = (),
              counted: bool = True, written: tuple = (), done: bool = False,
              outs: int = 0, first: bool = False) -> tuple:
    """``for i in range(*bounds): carries = body(i, *carries)``, as a region when it
    can be one. With ``post``, the body has an ``if test: break`` (``brk``) or
    ``continue`` at its top level: ``body`` is the part before it (giving the carries,
    the values ``post`` reads and the test's value), ``post`` the part after. ``sliced``:
    getters of the arrays ``x`` whose ``x[i]`` the body (and ``post``) take after ``i``;
    ``counted``: whether the body reads ``i`` (a region counts only then); ``written``:
    the positions of the carries whose items the body writes (``item_writes.py``);
    ``done``: the loop stands for one with a ``return`` (``loops.py``), and whether its
    ``break`` ran comes after the carries; ``outs``: the body gives, after the carries,
    that many values appended to lists (``appends.py``): the scan's per-step outputs,
    stacked (a list of them, as Python, when the loop runs as written). ``first``: the
    body is ``if test: break`` alone, its test reading only the carries: a region's
    condition is ``i < stop and not test`` (``_leading``), with no break flag."""
    init = _values(getters)
    arrays = tuple(get() for get in sliced)
    lead = lambda i: (i, *(subscript(x, i) for x in arrays))  # noqa: E731
    if any(v is UNBOUND for v in init) and post is None and not outs and _peelable(bounds):
        # (a name the body assigns before reading it, with no value before the loop:
        # the first step runs as Python and gives it one, the others are a region)
        steps = range(*bounds)
        init = list(body(*lead(steps[0]), *init))
        bounds = (steps[1], steps.stop, steps.step)
    out = region_range(body, getters, init, bounds, in_place, post, brk, arrays, counted,
                       written, done, outs, first)
    if out is not None:
        return _written_back(init, out, written)
    if any(map(traced_int, bounds)):  # (unrolled: its bound is a guarded number now, and
        owner = OWNER.get(sys._getframe(1).f_code)  # an int argument better a key of the
        if owner is not None:  # cache: traced_ints leaves it an int from now on)
            _STATIC.add(owner)
    carry, flag, lists = tuple(init), False, [[] for _ in range(outs)]
    for i in range(*bounds):
        if post is None:
            carry = append_outs(body(*lead(i), *carry), lists)
            continue
        carry, mid, test = split_step(body(*lead(i), *carry), lists)
        if test:
            if brk:
                flag = True
                break
            continue
        carry = post(*lead(i), *carry, *mid)
    return (*carry, flag) if done else (*carry, *lists)


def _peelable(bounds: tuple) -> bool:
    """Whether a range with a name unbound before it may run its first step alone: a
    trace runs, and the bounds are ints giving at least two steps."""
    if not record.TRACING or not in_traced_entry() \
            or not all(isinstance(b, (int, np.integer)) and not isinstance(b, bool)
                       for b in bounds):
        return False
    return len(range(*bounds)) >= 2


def for_each(body: Callable, getters: tuple, args: tuple, in_place: tuple,
             post: Callable | None = None, brk: bool = False, written: tuple = (),
             done: bool = False, outs: int = 0, first: bool = False) -> tuple:
    """``for item in args[0]: carries = body(item, *carries)``: a scan over an array's
    first axis when it can be one."""
    return _for_items(body, getters, args, in_place, "each", lambda: args[0], post, brk,
                      written, done, outs, first)


def for_zip(body: Callable, getters: tuple, args: tuple, in_place: tuple,
            post: Callable | None = None, brk: bool = False, written: tuple = (),
            done: bool = False, outs: int = 0, first: bool = False) -> tuple:
    """``for item in zip(*args)``: a scan over the arrays together when it can be one."""
    return _for_items(body, getters, args, in_place, "zip", lambda: zip(*args), post, brk,
                      written, done, outs, first)


def for_enumerate(body: Callable, getters: tuple, args: tuple, in_place: tuple,
                  post: Callable | None = None, brk: bool = False,
                  written: tuple = (), done: bool = False, outs: int = 0,
                  first: bool = False) -> tuple:
    """``for item in enumerate(*args)``: a scan over an array, counting, when it can be
    one."""
    return _for_items(body, getters, args, in_place, "enumerate", lambda: enumerate(*args),
                      post, brk, written, done, outs, first)


def for_enumerate_zip(body: Callable, getters: tuple, args: tuple, in_place: tuple,
                      post: Callable | None = None, brk: bool = False,
                      written: tuple = (), done: bool = False, outs: int = 0,
                      first: bool = False) -> tuple:
    """``for item in enumerate(zip(*args))``: a scan over the arrays together, counting,
    when it can be one."""
    return _for_items(body, getters, args, in_place, "enumerate_zip",
                      lambda: enumerate(zip(*args)), post, brk, written, done, outs, first)


def _for_items(body: Callable, getters: tuple, args: tuple, in_place: tuple, kind: str,
               items: Callable, post: Callable | None, brk: bool, written: tuple,
               done: bool, outs: int, first: bool = False) -> tuple:
    init = _values(getters)
    out = region_items(body, getters, init, args, in_place, kind, post, brk, written, done,
                       outs, first)
    if out is not None:
        return _written_back(init, out, written)
    carry, flag, lists = tuple(init), False, [[] for _ in range(outs)]
    for item in items():
        if post is None:
            carry = append_outs(body(item, *carry), lists)
            continue
        carry, mid, test = split_step(body(item, *carry), lists)
        if test:
            if brk:
                flag = True
                break
            continue
        carry = post(item, *carry, *mid)
    return (*carry, flag) if done else (*carry, *lists)


def while_(cond: Callable, body: Callable, getters: tuple, in_place: tuple,
           post: Callable | None = None, brk: bool = False, written: tuple = (),
           done: bool = False, first: bool = False, outs: int = 0) -> tuple:
    """``while cond(*carries): carries = body(*carries)``, as a region when it can be
    one (``post``, ``brk``, ``written``, ``done``, ``outs`` and ``first`` as for
    ``for_range``)."""
    init = _values(getters)
    out = region_while(cond, body, getters, init, in_place, post, brk, written, done, first,
                       outs)
    if out is not None:
        return _written_back(init, out, written)
    carry, flag, lists = tuple(init), False, [[] for _ in range(outs)]
    while cond(*carry):
        if post is None:
            carry = append_outs(body(*carry), lists)
            continue
        carry, mid, test = split_step(body(*carry), lists)
        if test:
            if brk:
                flag = True
                break
            continue
        carry = post(*carry, *mid)
    return (*carry, flag) if done else (*carry, *lists)


def if_(test: Any, then: Callable, orelse: Callable, getters: tuple) -> tuple:
    """``if test: then else: orelse``, each a function of the names the branches assign
    and the function reads after: ``pb.cond`` (both branches traced, an ``if`` in the
    generated code) when the test is a traced scalar and the branches give values of
    one shape and dtype, else the branch ``bool(test)`` picks (a guard, as before)."""
    init = _values(getters)
    out = region_if(test, then, orelse, getters, init)
    if out is not None:
        return out
    return then(*init) if test else orelse(*init)


def _values(getters: tuple) -> list:
    out = []
    for get in getters:
        try:
            out.append(get())
        except NameError:
            out.append(UNBOUND)
    return out


def _written_back(init: list, out: tuple, written: tuple) -> tuple:
    """The carries after a region; an array whose items the body wrote gets the last
    value written into it (outside a region's body: its views see the writes) and is
    the carry itself, as after the Python loop."""
    if not written or DEPTH[0]:
        return out
    out = list(out)
    for k in written:
        init[k][...] = out[k]
        out[k] = init[k]
    return tuple(out)
