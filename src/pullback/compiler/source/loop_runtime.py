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
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, Callable

import numpy as np

from ...autograd import record
from ...ops.indexing import index_select
from ...ops.items import item_op
from ...ops.sampling import set_state_of, state_of
from ...tensor import Tensor
from ..control_flow import cond, scan, while_loop
from ..region_bodies import active_tracers
from .entry import in_traced_entry
from .loop_stacks import append_outs, split_step, step_ys, while_region
from .loop_writes import DEPTH
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


class _Unbound:
    """A carried name with no value before the loop."""

    def __repr__(self) -> str:
        return "<unbound>"


UNBOUND = _Unbound()


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
    out = _region_range(body, getters, init, bounds, in_place, post, brk, arrays, counted,
                        written, done, outs, first)
    if out is not None:
        return _written_back(init, out, written)
    if any(map(_traced_int, bounds)):  # (unrolled: its bound is a guarded number now, and
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
    out = _region_items(body, getters, init, args, in_place, kind, post, brk, written, done,
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
    out = _region_while(cond, body, getters, init, in_place, post, brk, written, done, first,
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
    out = _region_if(test, then, orelse, getters, init)
    if out is not None:
        return out
    return then(*init) if test else orelse(*init)


def not_(test: Any) -> Any:
    """``not test`` for a test that may be traced (the other branch of an ``if`` that
    returns, as a loop's stop test): an array's logical not, else Python's."""
    if isinstance(test, (Tensor, np.ndarray, np.generic)):
        return np.logical_not(test)
    return not test


def and_(a: Any, b: Callable) -> Any:
    """``a and b()`` (``bool_tests.py``): the logical and of ``a`` and ``b()`` when ``a``
    is a traced boolean scalar, else Python's (short-circuit, giving an operand)."""
    if _traced_test(a):
        try:
            return np.logical_and(a, b())
        except Exception:  # (b may fail where a is false: Python's, asking for a)
            pass
    return a and b()


def or_(a: Any, b: Callable) -> Any:
    """``a or b()``: the logical or when ``a`` is a traced boolean scalar, else Python's."""
    if _traced_test(a):
        try:
            return np.logical_or(a, b())
        except Exception:  # (b may fail where a is true: Python's, asking for a)
            pass
    return a or b()


def _traced_test(a: Any) -> bool:
    return record.TRACING and isinstance(a, Tensor) and a._data.shape == () \
        and a._data.dtype == np.bool_


def stacked(f: Callable, items: Any) -> Any:
    """``f(items)`` for a list a converted loop appended to (``appends.py``): the list
    after the loop as written; the region's stacked per-step outputs (rows for items)
    after a region, for which ``np.stack`` and the like need no work."""
    if isinstance(items, list) or not isinstance(items, (Tensor, np.ndarray)):
        return f(items)
    if f is np.stack or f is np.array or f is np.asarray:
        return items
    if f is len:
        return items.shape[0]
    if f is sum:
        return np.sum(items, axis=0) if items.shape[0] else 0
    if f is np.concatenate and items.ndim >= 2:
        return np.reshape(items, (-1, *items.shape[2:]))
    return f(list(items))


def loop_index(x: Any, index: Any) -> Any:
    """``x[index]`` in a converted body, where the index reads the loop variable: ints
    (traced or not) and whole axes read the item or the row (``item``: the generated
    code reads ``x[t]`` as a hand-written loop does); a traced integer among slices
    selects through ``index_select`` (one graph for every step), else as ``subscript``."""
    parts = index if isinstance(index, tuple) else (index,)
    if not record.TRACING or not isinstance(x, (Tensor, np.ndarray)) \
            or not any(map(_traced_int, parts)) \
            or any(p is None or p is Ellipsis or isinstance(p, (list, np.ndarray))
                   or isinstance(p, Tensor) and not _traced_int(p) for p in parts):
        return subscript(x, index)
    if len(parts) <= x.ndim and all(_traced_int(p) or type(p) is int
                                    or type(p) is slice and p == _ALL
                                    for p in parts):  # (an item, or a row: x[t], x[t, :])
        return item_op(x, *filter(_traced_int, parts),
                       where=tuple(None if _traced_int(p) else p for p in parts))
    rest = []
    for d, p in enumerate(parts):
        if _traced_int(p):
            x = index_select(x, d, p.reshape(1))
            p = 0
        rest.append(p)
    return subscript(x, tuple(rest))


_ALL = slice(None)


def _row(x: Any, i: Any) -> Any:
    """A while region's step ``i`` of an array the body only reads (a range's slice
    ``x[t]``, an iterated array's item): a gather at the traced ``i`` (``x[t]`` in the
    generated code, no copy, as a hand-written loop reads it; ``g_x[t] += g`` in the
    reverse)."""
    return subscript(x, i)


def _traced_int(p: Any) -> bool:
    return isinstance(p, Tensor) and p._data.ndim == 0 and p._data.dtype.kind in "iu"


# ------------------------------------------------------------------- regions
def _values(getters: tuple) -> list:
    out = []
    for get in getters:
        try:
            out.append(get())
        except NameError:
            out.append(UNBOUND)
    return out


def _name(get: Callable) -> str:
    code = get.__code__
    return (code.co_freevars or code.co_names or ("?",))[0]


def _why_not(body: Callable, getters: tuple, init: list, in_place: tuple,
             traced: bool = False, written: tuple = ()) -> str | None:
    """Why the loop cannot be a region (None: it may be)."""
    for k in written:
        name = _name(getters[k])
        if not isinstance(init[k], Tensor):
            return f"{name}, whose items it writes, is not a traced array"
        if _closes_over_alias(body, init[k]):
            return f"it reads a view of {name}, whose items it writes"
    for k, (get, v) in enumerate(zip(getters, init)):
        name = _name(get)
        if v is UNBOUND:
            return f"{name} has no value before it"
        if isinstance(v, bool) or not isinstance(v, (Tensor, np.ndarray, np.number, float)):
            return f"{name} is a {type(v).__name__}, not an array or a float"
        if k in in_place and not isinstance(v, (float, np.integer)):  # (+= rebinds them)
            return f"{name} is an array changed in place (+= and the like)"
    if not traced and not any(isinstance(v, Tensor) for v in init) \
            and not _closes_over_tensors(body):
        return "no traced value flows through it"
    return None


def _closes_over_alias(fn: Callable, x: Tensor) -> bool:
    """Whether ``fn`` (or a loop's function it holds) reads an array sharing memory
    with ``x``: it would see the writes into ``x`` that the region's body makes into a
    new value."""
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        data = v._data if isinstance(v, Tensor) else v
        if isinstance(data, np.ndarray) and np.may_share_memory(data, x._data):
            return True
        if callable(v) and getattr(v, "__name__", "").startswith("__pb_loop_") \
                and _closes_over_alias(v, x):
            return True
    return False


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


def _closes_over_tensors(fn: Callable) -> bool:
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if isinstance(v, Tensor) or any(isinstance(a, Tensor)
                                        for a in getattr(v, "__dict__", {}).values()):
            return True
        if callable(v) and getattr(v, "__name__", "").startswith("__pb_loop_") \
                and _closes_over_tensors(v):
            return True
    return False


def _region_range(body: Callable, getters: tuple, init: list, bounds: tuple,
                  in_place: tuple, post: Callable | None, brk: bool, arrays: tuple,
                  counted: bool, written: tuple, done: bool = False,
                  outs: int = 0, first: bool = False) -> tuple | None:
    tracers = active_tracers() if record.TRACING and in_traced_entry(
        brk and not _arrays_in_place(in_place, init) and not written) else None
    if not tracers:
        return None
    bounds = tuple(int(b) if isinstance(b, np.ndarray) and b.ndim == 0 and b.dtype.kind in "iu"
                   else b for b in bounds)
    if any(isinstance(b, bool) or not (isinstance(b, (int, np.integer)) or _traced_int(b))
           for b in bounds):
        return _fell_back(tracers, body, "the range's bounds are not integers")
    why = _why_not(body, getters, init, in_place, written=written,
                   traced=any(isinstance(x, Tensor) for x in arrays)) or next(  # (x[i])
        (f"it reads a {type(x).__name__} at the loop variable, not an array" for x in arrays
         if not isinstance(x, (Tensor, np.ndarray)) or x.ndim == 0), None)
    if why is not None:
        return _fell_back(tracers, body, why)
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
    if isinstance(step, Tensor) or step == 0:
        return _fell_back(tracers, body, "the range's step is traced or 0")
    i0 = start if isinstance(start, Tensor) else np.int64(start)
    if first:
        return _region_leading(tracers, body, post, init, (i0, stop, step), arrays)
    one = _one_step(body, post, brk, 1 + len(arrays))
    flags = (np.bool_(False),) if brk else ()
    if not brk and not isinstance(stop, Tensor) and not isinstance(start, Tensor):
        n = len(range(int(start), int(stop), int(step)))
        if n == 0:
            return None
        if step > 0 and 0 <= start and stop <= min((x.shape[0] for x in arrays), default=stop):
            xs = tuple(x if (start, stop, step) == (0, x.shape[0], 1) else x[start:stop:step]
                       for x in arrays)  # (x[i] for each step)
        else:
            xs = ()  # (a negative index, or past the end: read by loop_index)

        if not counted and (xs or not arrays):  # (no counter: the body never reads it)
            return _attempt(tracers, body, lambda: _stacked_after(scan(
                lambda c, x: step_ys(one(i0, *(x or ()), *c), outs), tuple(init), xs or None,
                length=n), 0))

        def scan_step(c: tuple, x: tuple) -> tuple:
            per_step = x if xs else tuple(loop_index(a, c[0]) for a in arrays)
            carry, ys = step_ys(one(c[0], *per_step, *c[1:]), outs)
            return (c[0] + step, *carry), ys
        return _attempt(tracers, body, lambda: _stacked_after(scan(
            scan_step, (i0, *init), xs or None, length=n), 1))

    def more(c: tuple) -> Any:
        going = c[0] < stop if step > 0 else c[0] > stop
        return np.logical_and(going, np.logical_not(c[1])) if brk else going

    def while_step(c: tuple) -> tuple:
        per_step = tuple(_row(a, c[0]) for a in arrays)
        return (c[0] + step, *one(c[0], *per_step, *c[1:]))
    return _attempt(tracers, body, lambda: while_region(
        more, while_step, (i0, *flags, *init), 1, brk, done, outs))


def _region_leading(tracers: list, body: Callable, post: Callable, init: list,
                    bounds: tuple, arrays: tuple) -> tuple | None:
    """A range whose body starts with ``if test: break`` (``first``): a while region
    whose condition is ``i < stop and not test`` and whose body is the part after the
    test alone (no flag, no branch). The test reads only the carries, so it runs on
    stand-ins for the arrays read at ``i``."""
    i0, stop, step = bounds

    def more(c: tuple) -> Any:
        going = c[0] < stop if step > 0 else c[0] > stop
        test = _bool_test(body(c[0], *(None for _ in arrays), *c[1:])[2])
        return np.logical_and(going, np.logical_not(test))

    def step_once(c: tuple) -> tuple:
        per_step = tuple(_row(a, c[0]) for a in arrays)
        return (c[0] + step, *post(c[0], *per_step, *c[1:]))
    return _attempt(tracers, body, lambda: tuple(while_loop(more, step_once,
                                                            (i0, *init)))[1:])


def _bool_test(test: Any) -> Any:
    """The test of a break or continue, which a region needs traced and boolean."""
    if not isinstance(test, Tensor) or test._data.shape != () \
            or test._data.dtype != np.bool_:
        raise TypeError("the test of its break or continue is not a traced boolean")
    return test


def _one_step(body: Callable, post: Callable | None, brk: bool, n_lead: int) -> Callable:
    """One step of a split body as a function of the loop variable (``n_lead`` of them)
    and the carries, traced: the part after the ``if test: break`` under ``pb.cond``;
    with ``brk``, a flag ``done`` (the test's value) before the carries; the values the
    part before the test appends (``outs``) last."""
    if post is None:
        return body

    def step(*args: Any) -> tuple:
        lead, carry = args[:n_lead], args[n_lead + brk:]
        res = body(*lead, *carry)
        c1, mid, test = res[:3]
        _bool_test(test)
        n = len(c1)
        out = cond(test, lambda *v: tuple(v[:n]), lambda *v: tuple(post(*lead, *v)),
                   *c1, *mid)
        ys = tuple(res[3]) if len(res) > 3 else ()
        return (test, *out, *ys) if brk else (*out, *ys)
    return step


def _region_items(body: Callable, getters: tuple, init: list, args: tuple,
                  in_place: tuple, kind: str, post: Callable | None,
                  brk: bool, written: tuple, done: bool = False,
                  outs: int = 0, first: bool = False) -> tuple | None:
    tracers = active_tracers() if record.TRACING and in_traced_entry(
        brk and not _arrays_in_place(in_place, init) and not written) else None
    if not tracers:
        return None
    seqs = list(args) if kind.endswith("zip") else list(args[:1])
    start = args[1] if kind == "enumerate" and len(args) == 2 else 0
    bad = next((s for s in seqs if not isinstance(s, (Tensor, np.ndarray)) or s.ndim == 0),
               None)
    if bad is not None:
        return _fell_back(tracers, body, f"it iterates over a {type(bad).__name__}, not "
                                         "over an array's first axis")
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
        return _fell_back(tracers, body, "enumerate's start is not an int")
    why = _why_not(body, getters, init, in_place, written=written,
                   traced=any(isinstance(s, Tensor) for s in seqs))  # (rows of a traced x)
    if why is not None:
        return _fell_back(tracers, body, why)
    n = min(s.shape[0] for s in seqs)
    if n == 0:
        return None
    xs = tuple(s if s.shape[0] == n else s[:n] for s in seqs)
    one = _one_step(body, post, brk, 1)
    item = (lambda x: x[0]) if kind in ("each", "enumerate") else tuple
    counting = kind.startswith("enumerate")
    if first:  # (``if test: break`` first, reading only the carries: the condition)
        def more(c: tuple) -> Any:
            test = _bool_test(body(None, *c[1:])[2])
            return np.logical_and(c[0] < n, np.logical_not(test))

        def step_once(c: tuple) -> tuple:
            x = item(tuple(_row(s, c[0]) for s in xs))
            return (c[0] + 1, *post((c[0] + start, x) if counting else x, *c[1:]))
        return _attempt(tracers, body, lambda: tuple(while_loop(
            more, step_once, (np.int64(0), *init)))[1:])
    if brk:  # (a while region over the positions, reading each step's items)
        def step(c: tuple) -> tuple:
            x = item(tuple(_row(s, c[0]) for s in xs))
            return (c[0] + 1, *one((c[0] + start, x) if kind.startswith("enumerate") else x,
                                   *c[1:]))
        more = lambda c: np.logical_and(c[0] < n, np.logical_not(c[1]))  # noqa: E731
        return _attempt(tracers, body, lambda: while_region(
            more, step, (np.int64(0), np.bool_(False), *init), 1, brk, done, outs))
    if kind.startswith("enumerate"):
        def counted(c: tuple, x: tuple) -> tuple:
            carry, ys = step_ys(one((c[0], item(x)), *c[1:]), outs)
            return (c[0] + 1, *carry), ys
        return _attempt(tracers, body, lambda: _stacked_after(
            scan(counted, (np.int64(start), *init), xs), 1))
    return _attempt(tracers, body, lambda: _stacked_after(scan(
        lambda c, x: step_ys(one(item(x), *c), outs), tuple(init), xs), 0))


def _region_if(test: Any, then: Callable, orelse: Callable, getters: tuple,
               init: list) -> tuple | None:
    if not record.TRACING or not isinstance(test, Tensor) or test._data.shape != () \
            or not in_traced_entry():
        return None
    tracers = active_tracers()
    if not tracers:
        return None
    why = _why_not(then, getters, init, (), traced=True)
    if why is not None:
        return _fell_back(tracers, then, why, "branch")

    def checked(branch: Callable) -> Callable:
        def run(*values: Any) -> tuple:
            out = branch(*values)
            for v in out:
                if isinstance(v, bool) or not isinstance(v, (Tensor, np.ndarray, np.number,
                                                             float)):
                    raise TypeError(f"a branch gives a {type(v).__name__}, not an array")
            return out
        return run
    return _attempt(tracers, then, lambda: cond(test, checked(then), checked(orelse), *init),
                    "branch")


def _region_while(cond: Callable, body: Callable, getters: tuple, init: list,
                  in_place: tuple, post: Callable | None, brk: bool,
                  written: tuple, done: bool = False, first: bool = False,
                  outs: int = 0) -> tuple | None:
    tracers = active_tracers() if record.TRACING and in_traced_entry(
        not _arrays_in_place(in_place, init) and not written) else None
    if not tracers:
        return None
    init = _int_counters(init)
    why = _why_not(body, getters, init, in_place, written=written)
    if why is not None:
        return _fell_back(tracers, body, why)
    if first:  # (``while c: if t: break`` ...: ``while c and not t``, no flag)
        return _attempt(tracers, body, lambda: tuple(while_loop(
            lambda c: np.logical_and(_traced_pred(cond(*c)),
                                     np.logical_not(_bool_test(body(*c)[2]))),
            lambda c: tuple(post(*c)), tuple(init))))
    one = _one_step(body, post, brk, 0)

    def test(c: tuple) -> Any:
        pred = _traced_pred(cond(*c[brk:]))
        return np.logical_and(pred, np.logical_not(c[0])) if brk else pred
    flags = (np.bool_(False),) if brk else ()
    return _attempt(tracers, body, lambda: while_region(
        test, lambda c: one(*c), (*flags, *init), 0, brk, done, outs))


def _traced_pred(pred: Any) -> Any:
    if not isinstance(pred, Tensor):
        raise TypeError("the condition is not a traced value")
    return pred


def _stacked_after(result: tuple, lead: int) -> tuple:
    """A scan's final carries (without its ``lead`` counters) and its stacked per-step
    outputs, if any."""
    carry, ys = result
    return (*tuple(carry)[lead:], *(ys or ()))


def _arrays_in_place(in_place: tuple, init: list) -> bool:
    """Whether the body changes an array carry with ``+=`` & co. (a number's ``k += 1``
    rebinds it: a while loop counting its steps still converts inside another trace)."""
    return any(isinstance(init[k], bool) or not isinstance(init[k], (int, float, np.number))
               for k in in_place)


def _int_counters(init: list) -> list:
    """A while loop's Python int carries (``k = 0``, a counter) as int64 values, traced
    in the region as a range's counter is (mixed with floats as Python's ints are);
    the loop as written, run when the region cannot be, keeps the ints."""
    return [np.int64(v) if type(v) is int and -2 ** 63 <= v < 2 ** 63 else v for v in init]


def _fell_back(tracers: list, body: Callable, why: str, what: str = "loop") -> None:
    code = body.__code__
    done = "unrolled" if what == "loop" else "guarded"
    note = f"{code.co_filename}:{code.co_firstlineno}: {what} {done}: {why}"
    for tr in tracers:
        tr.notes.append(note)
    return None


def _attempt(tracers: list, body: Callable, region: Callable,
             what: str = "loop") -> tuple | None:
    """``region()``, or None with what it changed in the tracers and outside put back."""
    saved = [(len(tr.guards), len(tr.writes), set(tr.changed), set(tr.written),
              {k: (g, state_of(g)) for k, (g, _) in tr.rewinds.items()}) for tr in tracers]
    depth = what == "loop"  # (item writes in a branch alone stay writes: a guard)
    DEPTH[0] += depth
    try:
        return tuple(region())
    except Exception as e:  # (the plain loop runs next: a real error is raised again there)
        for tr, s in zip(tracers, saved):
            _put_back(tr, *s)
        reason = str(e).split(": ", 1)[-1] if str(e) else type(e).__name__
        return _fell_back(tracers, body, reason, what)
    finally:
        DEPTH[0] -= depth


def _put_back(tr: Any, n_guards: int, n_writes: int, changed: set, written: set,
              rewinds: dict) -> None:
    del tr.guards[n_guards:], tr.writes[n_writes:]
    for key in [k for k in tr.changed if k not in changed]:
        target, restore, before = tr.changed.pop(key)
        restore(target, before)
    for key in [k for k in tr.written if k not in written]:
        t, old = tr.written.pop(key)
        np.copyto(t._data, old)
    for key, (gen, state) in list(tr.rewinds.items()):
        if key in rewinds:
            set_state_of(*rewinds[key])
        else:
            set_state_of(gen, state)
            del tr.rewinds[key]
