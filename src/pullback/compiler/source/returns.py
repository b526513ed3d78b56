"""An early ``return`` inside a loop, as a ``break`` and a ``return`` after the loop, so
that ``loops.py`` converts the loop (a while region that stops once the return's test
holds) and the function's two exits become one ``if`` (``pb.cond`` on a traced test).

::

    for t in range(T):                     for t in range(T):
        h = np.tanh(h @ W)                     h = np.tanh(h @ W)
        if np.sum(h) > 5.0:          ->        if np.sum(h) > 5.0:
            return h * 2                           break        (its flag: done)
        h = h + x                              h = h + x
    return h                               if done:
                                               return h * 2
                                           return h

The statements before the ``return`` in its branch and the returned value run after
the loop instead, on the values the loop stopped with (the carries): the same values,
since the break keeps the carries of the step that returned. A return reading a
``range``'s (or ``enumerate``'s) counter ``i`` reads ``__pb_at_i__`` instead, a carry
the body sets to ``i`` first thing in each step (``int0()`` before the loop); one
reading the item ``x`` of an array ``xs`` the loop walks (``for x in xs``, ``zip``,
``enumerate``) reads ``__pb_at_x__`` likewise (``first_item(xs)`` before the loop).

A loop converts when each of its body's returns is the last statement of an ``if`` at
the body's top level (``if test: ...; return e``, or in either branch of an
``if``/``else``; several: ``_returns``), with no ``break`` or ``continue``; a return
in a loop nested in it becomes such an ``if`` once the inner loop is converted. Else
the loop stays as written (``pb.compiler.inspect`` says why).
"""

from __future__ import annotations

import copy
from typing import Any

import gast

from .item_writes import walk_scope
from .nodes import _at, _name, _runtime

_STOPS = (gast.Break, gast.Continue)


def has_return(body: list) -> bool:
    """Whether ``body`` returns from the function (not from a function defined in it)."""
    return any(isinstance(n, gast.Return) for s in body for n in walk_scope(s))


def loop_return(body: list) -> tuple | str:
    """``(new body, moved, before)`` for a loop body holding one ``return`` in an ``if``
    at its top level: the body with that ``if`` as ``if test: break`` (the other
    branch's statements after it), and the statements to run after the loop when it
    broke (ending in the ``return``); several such ``if``s: ``_returns``. Else why not."""
    returns = [n for s in body for n in walk_scope(s) if isinstance(n, gast.Return)]
    if any(isinstance(n, _STOPS) for s in body for n in walk_scope(s)):
        return "it returns from the function and also breaks or continues"
    if len(returns) > 1:
        return _returns(body, returns)
    for k, s in enumerate(body):
        if not isinstance(s, gast.If) or not has_return([s]):
            continue
        for branch, other, test in ((s.body, s.orelse, s.test),
                                    (s.orelse, s.body, _not(s.test))):
            if branch and branch[-1] is returns[0] and not has_return(branch[:-1]):
                stop = _at(gast.If(test=test, body=[_at(gast.Break(), s)], orelse=[]), s)
                return body[:k] + [stop] + other + body[k + 1:], list(branch), []
    return "its return is not the last statement of an if at the top level of its body"


def _returns(body: list, returns: list) -> tuple | str:
    """``(new body, moved)`` for a body returning in several ``if``s at its top level:
    each test kept in a flag ``__pb_hit_k__`` (``truth``), the statements after an
    ``if`` run under ``if not flag`` (a ``pb.cond`` in the region), one ``if
    any_of(flags): break`` last; after the loop, the return of the first flag set
    (flags start false: ``before``, the third value). Else why not."""
    found, rest = [], list(body)
    for k, s in enumerate(body):
        if not isinstance(s, gast.If) or not has_return([s]):
            continue
        pick = next(((b, o, t) for b, o, t in ((s.body, s.orelse, s.test),
                                                 (s.orelse, s.body, _not(s.test)))
                     if b and b[-1] in returns and not has_return(b[:-1] + o)), None)
        if pick is None:
            break
        found.append((k, s, *pick))
    if len(found) != len(returns):
        return "it returns from the function in more than one place, not each last in " \
               "an if at the top level of its body"
    flags = [f"__pb_hit_{s.lineno}_{j}__" for j, (_, s, *_) in enumerate(found)]

    def assign(name: str, value: Any, where: Any) -> Any:
        return _at(gast.Assign(targets=[_name(name, gast.Store())], value=value,
                               type_comment=None), where)

    def call(helper: str, args: list, where: Any) -> Any:
        return _at(gast.Call(func=_runtime(helper), args=args, keywords=[]), where)
    def false(name: str, where: Any) -> Any:
        return assign(name, call("truth", [gast.Constant(value=False, kind=None)], where),
                      where)
    tail: list = rest[found[-1][0] + 1:]
    for j in reversed(range(len(found))):
        k, s, _, other, test = found[j]
        start = found[j - 1][0] + 1 if j else 0
        hit = assign(flags[j], call("truth", [test], s), s)
        skip = [false(f, s) for f in flags[j + 1:]]  # (both branches give the flags)
        rest_of = [_at(gast.If(test=call("not_", [_name(flags[j])], s), body=other + tail,
                               orelse=skip), s)] if other + tail else []
        tail = rest[start:k] + [hit] + rest_of
    last = found[-1][1]
    stop = _at(gast.If(test=call("any_of", [_name(f) for f in flags], last),
                       body=[_at(gast.Break(), last)], orelse=[]), last)
    moved: list = list(found[-1][2])
    for j in reversed(range(len(found) - 1)):
        s = found[j][1]
        moved = [_at(gast.If(test=_name(flags[j]), body=list(found[j][2]), orelse=moved), s)]
    before = [false(f, body[0]) for f in flags]
    return tail + [stop], moved, before


def _not(test: Any) -> Any:
    """``not test``, through the runtime: the test may be a traced boolean."""
    if isinstance(test, gast.Call) and _is_not(test.func):
        return test.args[0]
    return _at(gast.Call(func=_runtime("not_"), args=[test], keywords=[]), test)


def _is_not(f: Any) -> bool:
    return isinstance(f, gast.Attribute) and f.attr == "not_" \
        and isinstance(f.value, gast.Name) and f.value.id == "__pb_rt__"


def after_loop(flag: str, moved: list, where: Any) -> Any:
    """``if flag: <moved>``: the return, after the loop (marked for ``single_exit``)."""
    stmt = _at(gast.If(test=_name(flag), body=moved, orelse=[]), where)
    stmt.pb_return = True
    return stmt


def one_exit(body: list, k: int, name: str) -> tuple | None:
    """``body[k]`` (an ``if flag: ...; return e1`` made by ``after_loop``) and the rest
    of ``body`` up to its last statement, ``return e2``, as ``if flag: ...; r = e1
    else: ...; r = e2`` and ``return r`` (``name`` the new names' stem): then the
    ``if`` may become ``pb.cond``. None when the rest returns elsewhere or the body does
    not end in a return."""
    stmt, last, rest = body[k], body[-1], body[k + 1:-1]
    if not isinstance(last, gast.Return) or last is stmt or has_return(rest) \
            or any(isinstance(n, _STOPS) for s in rest for n in walk_scope(s)):
        return None
    first = stmt.body[-1]
    if not isinstance(first, gast.Return):
        return None  # (several returns: an if choosing one)
    values = [first.value, last.value]
    if any(v is None for v in values):
        return None
    n = len(values[0].elts) if all(isinstance(v, gast.Tuple) for v in values) \
        and len(values[0].elts) == len(values[1].elts) else 0
    names = [f"{name}{j}__" for j in range(max(n, 1))]

    def assign(value: Any, where: Any) -> Any:
        target = gast.Tuple(elts=[_name(m, gast.Store()) for m in names], ctx=gast.Store()) \
            if n else _name(names[0], gast.Store())
        return _at(gast.Assign(targets=[target], value=value, type_comment=None), where)
    branch = _at(gast.If(test=stmt.test, body=stmt.body[:-1] + [assign(values[0], first)],
                         orelse=rest + [assign(values[1], last)]), stmt)
    out = gast.Tuple(elts=[_name(m) for m in names], ctx=gast.Load()) if n else _name(names[0])
    return branch, _at(gast.Return(value=out), last)


def counter_carries(body: list, moved: list, counters: set,
                    items: dict | None = None) -> tuple | None:
    """``(body, moved, before)`` with each counter in ``counters`` (and each item of an
    array the loop walks in ``items``: name -> the array's name) that ``moved`` reads
    carried out of the loop: ``__pb_at_i__ = i`` first in the body, ``moved`` reading
    it in place of ``i`` (a copy: the loop as written stays as it is), and
    ``__pb_at_i__ = int0()`` (``first_item(xs)``, zeros shaped as an item) to run
    before the loop (for an inner loop's counter that ``moved`` reads too). None when
    ``moved`` assigns one."""
    items = items or {}
    read = {n.id for s in moved for n in walk_scope(s)
            if isinstance(n, gast.Name) and (n.id in counters or n.id in items)}
    inner = sorted({n.id for s in moved for n in walk_scope(s) if isinstance(n, gast.Name)
                    and n.id.startswith("__pb_at_")})  # (an inner loop's, carried out too)
    if not read and not inner:
        return body, moved, []
    if any(isinstance(n, gast.Name) and n.id in read and not isinstance(n.ctx, gast.Load)
           for s in moved for n in walk_scope(s)):
        return None
    moved = copy.deepcopy(moved)
    for s in moved:
        for n in walk_scope(s):
            if isinstance(n, gast.Name) and n.id in read:
                n.id = f"__pb_at_{n.id}__"
    where = body[0]
    first = [_at(gast.Assign(targets=[_name(f"__pb_at_{c}__", gast.Store())],
                             value=_name(c), type_comment=None), where) for c in sorted(read)]

    def start(c: str | None) -> Any:
        if c in items and c not in counters:
            return gast.Call(func=_runtime("first_item"), args=[_name(items[c])], keywords=[])
        return gast.Call(func=_runtime("int0"), args=[], keywords=[])
    before = [_at(gast.Assign(targets=[_name(name, gast.Store())], value=_at(start(c), where),
                              type_comment=None), where)
              for name, c in [(f"__pb_at_{c}__", c) for c in sorted(read)]
              + [(name, None) for name in inner]]
    return first + body, moved, before
