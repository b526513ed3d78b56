"""Each kind of converted loop, and an ``if``, as a region of the trace
(``loop_runtime.py`` calls these first, under a front door's trace): a ``range`` as a
scan (its per-step slices ``x[t]`` as the scan's xs) or, with a ``break`` or a traced
bound, a while region; a walk over arrays (``for x in xs``, ``zip``, ``enumerate``) as a
scan over their first axis; a ``while`` as a while region; an ``if`` as ``pb.cond``. A
body split at its ``if test: break`` runs the part after the test under ``pb.cond``
(``_one_step``). None: no trace wants a region, or the attempt fell back
(``region_attempts.py``), and the loop runs as written.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...autograd import record
from ...tensor import Tensor
from ..control_flow import cond, scan, while_loop
from ..region_bodies import active_tracers
from .entry import in_traced_entry
from .loop_helpers import loop_index, row, traced_int
from .loop_stacks import step_ys, while_region
from .region_attempts import attempt, fell_back, why_not


def region_range(body: Callable, getters: tuple, init: list, bounds: tuple,
                 in_place: tuple, post: Callable | None, brk: bool, arrays: tuple,
                 counted: bool, written: tuple, done: bool = False,
                 outs: int = 0, first: bool = False) -> tuple | None:
    tracers = _tracers(brk, in_place, init, written) if record.TRACING else None
    if not tracers:
        return None
    bounds = tuple(int(b) if isinstance(b, np.ndarray) and b.ndim == 0 and b.dtype.kind in "iu"
                   else b for b in bounds)
    if any(isinstance(b, bool) or not (isinstance(b, (int, np.integer)) or traced_int(b))
           for b in bounds):
        return fell_back(tracers, body, "the range's bounds are not integers")
    why = why_not(body, getters, init, in_place, written=written,
                  traced=any(isinstance(x, Tensor) for x in arrays)) or next(  # (x[i])
        (f"it reads a {type(x).__name__} at the loop variable, not an array" for x in arrays
         if not isinstance(x, (Tensor, np.ndarray)) or x.ndim == 0), None)
    if why is not None:
        return fell_back(tracers, body, why)
    start, stop, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
    if isinstance(step, Tensor) or step == 0:
        return fell_back(tracers, body, "the range's step is traced or 0")
    i0 = start if isinstance(start, Tensor) else np.int64(start)
    if first:
        return _region_leading(tracers, body, post, init, (i0, stop, step), arrays)
    one = _one_step(body, post, brk, 1 + len(arrays))
    flags = (np.bool_(False),) if brk else ()
    if not brk and not isinstance(stop, Tensor) and not isinstance(start, Tensor):
        return _range_scan(tracers, body, one, init, arrays, (start, stop, step), i0,
                           counted, outs)

    def more(c: tuple) -> Any:
        going = c[0] < stop if step > 0 else c[0] > stop
        return np.logical_and(going, np.logical_not(c[1])) if brk else going

    def while_step(c: tuple) -> tuple:
        per_step = tuple(row(a, c[0]) for a in arrays)
        return (c[0] + step, *one(c[0], *per_step, *c[1:]))
    return attempt(tracers, body, lambda: while_region(
        more, while_step, (i0, *flags, *init), 1, brk, done, outs))


def _range_scan(tracers: list, body: Callable, one: Callable, init: list, arrays: tuple,
                bounds: tuple, i0: Any, counted: bool, outs: int) -> tuple | None:
    """A range with int bounds and no break as a scan: the arrays read at the counter
    sliced to the range (a step's ``x[i]`` is the scan's x) when it stays inside them,
    else read by ``loop_index``; no counter carried when the body never reads it."""
    start, stop, step = bounds
    n = len(range(int(start), int(stop), int(step)))
    if n == 0:
        return None
    if step > 0 and 0 <= start and stop <= min((x.shape[0] for x in arrays), default=stop):
        xs = tuple(x if (start, stop, step) == (0, x.shape[0], 1) else x[start:stop:step]
                   for x in arrays)  # (x[i] for each step)
    else:
        xs = ()  # (a negative index, or past the end: read by loop_index)

    if not counted and (xs or not arrays):  # (no counter: the body never reads it)
        return attempt(tracers, body, lambda: _stacked_after(scan(
            lambda c, x: step_ys(one(i0, *(x or ()), *c), outs), tuple(init), xs or None,
            length=n), 0))

    def scan_step(c: tuple, x: tuple) -> tuple:
        per_step = x if xs else tuple(loop_index(a, c[0]) for a in arrays)
        carry, ys = step_ys(one(c[0], *per_step, *c[1:]), outs)
        return (c[0] + step, *carry), ys
    return attempt(tracers, body, lambda: _stacked_after(scan(
        scan_step, (i0, *init), xs or None, length=n), 1))


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
        per_step = tuple(row(a, c[0]) for a in arrays)
        return (c[0] + step, *post(c[0], *per_step, *c[1:]))
    return attempt(tracers, body, lambda: tuple(while_loop(more, step_once,
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


def region_items(body: Callable, getters: tuple, init: list, args: tuple,
                 in_place: tuple, kind: str, post: Callable | None,
                 brk: bool, written: tuple, done: bool = False,
                 outs: int = 0, first: bool = False) -> tuple | None:
    tracers = _tracers(brk, in_place, init, written) if record.TRACING else None
    if not tracers:
        return None
    seqs = list(args) if kind.endswith("zip") else list(args[:1])
    start = args[1] if kind == "enumerate" and len(args) == 2 else 0
    bad = next((s for s in seqs if not isinstance(s, (Tensor, np.ndarray)) or s.ndim == 0),
               None)
    if bad is not None:
        return fell_back(tracers, body, f"it iterates over a {type(bad).__name__}, not "
                                        "over an array's first axis")
    if isinstance(start, bool) or not isinstance(start, (int, np.integer)):
        return fell_back(tracers, body, "enumerate's start is not an int")
    why = why_not(body, getters, init, in_place, written=written,
                  traced=any(isinstance(s, Tensor) for s in seqs))  # (rows of a traced x)
    if why is not None:
        return fell_back(tracers, body, why)
    n = min(s.shape[0] for s in seqs)
    if n == 0:
        return None
    xs = tuple(s if s.shape[0] == n else s[:n] for s in seqs)
    one = _one_step(body, post, brk, 1)
    item = (lambda x: x[0]) if kind in ("each", "enumerate") else tuple
    counting = kind.startswith("enumerate")
    if first:  # (``if test: break`` first, reading only the carries: the condition)
        return _items_leading(tracers, body, post, init, xs, item, start if counting else None)
    if brk:  # (a while region over the positions, reading each step's items)
        def step(c: tuple) -> tuple:
            x = item(tuple(row(s, c[0]) for s in xs))
            return (c[0] + 1, *one((c[0] + start, x) if kind.startswith("enumerate") else x,
                                   *c[1:]))
        more = lambda c: np.logical_and(c[0] < n, np.logical_not(c[1]))  # noqa: E731
        return attempt(tracers, body, lambda: while_region(
            more, step, (np.int64(0), np.bool_(False), *init), 1, brk, done, outs))
    if kind.startswith("enumerate"):
        def counted(c: tuple, x: tuple) -> tuple:
            carry, ys = step_ys(one((c[0], item(x)), *c[1:]), outs)
            return (c[0] + 1, *carry), ys
        return attempt(tracers, body, lambda: _stacked_after(
            scan(counted, (np.int64(start), *init), xs), 1))
    return attempt(tracers, body, lambda: _stacked_after(scan(
        lambda c, x: step_ys(one(item(x), *c), outs), tuple(init), xs), 0))


def _items_leading(tracers: list, body: Callable, post: Callable, init: list, xs: tuple,
                   item: Callable, start: int | None) -> tuple | None:
    """A walk over arrays whose body starts with ``if test: break`` (``first``), as
    ``_region_leading`` for a range: a while region over the positions (``start``:
    enumerate's first count, None when it does not count)."""
    n = xs[0].shape[0]

    def more(c: tuple) -> Any:
        test = _bool_test(body(None, *c[1:])[2])
        return np.logical_and(c[0] < n, np.logical_not(test))

    def step_once(c: tuple) -> tuple:
        x = item(tuple(row(s, c[0]) for s in xs))
        return (c[0] + 1, *post(x if start is None else (c[0] + start, x), *c[1:]))
    return attempt(tracers, body, lambda: tuple(while_loop(
        more, step_once, (np.int64(0), *init)))[1:])


def region_if(test: Any, then: Callable, orelse: Callable, getters: tuple,
              init: list) -> tuple | None:
    if not record.TRACING or not isinstance(test, Tensor) or test._data.shape != () \
            or not in_traced_entry():
        return None
    tracers = active_tracers()
    if not tracers:
        return None
    why = why_not(then, getters, init, (), traced=True)
    if why is not None:
        return fell_back(tracers, then, why, "branch")

    def checked(branch: Callable) -> Callable:
        def run(*values: Any) -> tuple:
            out = branch(*values)
            for v in out:
                if isinstance(v, bool) or not isinstance(v, (Tensor, np.ndarray, np.number,
                                                             float)):
                    raise TypeError(f"a branch gives a {type(v).__name__}, not an array")
            return out
        return run
    return attempt(tracers, then, lambda: cond(test, checked(then), checked(orelse), *init),
                   "branch")


def region_while(cond: Callable, body: Callable, getters: tuple, init: list,
                 in_place: tuple, post: Callable | None, brk: bool,
                 written: tuple, done: bool = False, first: bool = False,
                 outs: int = 0) -> tuple | None:
    tracers = _tracers(True, in_place, init, written) if record.TRACING else None
    if not tracers:
        return None
    init = _int_counters(init)
    why = why_not(body, getters, init, in_place, written=written)
    if why is not None:
        return fell_back(tracers, body, why)
    if first:  # (``while c: if t: break`` ...: ``while c and not t``, no flag)
        return attempt(tracers, body, lambda: tuple(while_loop(
            lambda c: _and_not(cond(*c), _bool_test(body(*c)[2])),
            lambda c: tuple(post(*c)), tuple(init))))
    one = _one_step(body, post, brk, 0)

    def test(c: tuple) -> Any:
        return _and_not(cond(*c[brk:]), c[0]) if brk else _traced_pred(cond(*c))
    flags = (np.bool_(False),) if brk else ()
    return attempt(tracers, body, lambda: while_region(
        test, lambda c: one(*c), (*flags, *init), 0, brk, done, outs))


def _and_not(pred: Any, stop: Any) -> Any:
    """A loop with a break runs while its condition holds and the break's test does not:
    ``while True:`` (a constant true condition), whose break is its only exit, runs on
    the test alone."""
    if pred is True or (isinstance(pred, np.bool_) and pred):
        return _traced_pred(np.logical_not(stop))
    return np.logical_and(_traced_pred(pred), np.logical_not(stop))


def _traced_pred(pred: Any) -> Any:
    if not isinstance(pred, Tensor):
        raise TypeError("the condition is not a traced value")
    return pred


def _stacked_after(result: tuple, lead: int) -> tuple:
    """A scan's final carries (without its ``lead`` counters) and its stacked per-step
    outputs, if any."""
    carry, ys = result
    return (*tuple(carry)[lead:], *(ys or ()))


def _tracers(nests: bool, in_place: tuple, init: list, written: tuple) -> list | None:
    """The active tracers when the loop may be a region: in a front door's trace, or
    in a transform inside one (``in_traced_entry``'s ``nested``) when ``nests`` and the
    body changes no array carry in place and writes no items."""
    return active_tracers() if in_traced_entry(
        nests and not _arrays_in_place(in_place, init) and not written) else None


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
