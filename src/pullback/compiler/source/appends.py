"""A fresh list appended to in a ``for`` loop and read whole after it, as the loop's
per-step outputs (a scan stacks them), for ``loops.py``::

    hs = []                               hs = []
    for x in xs:                          def __pb_loop_3_1__(x, h):
        h = np.tanh(h @ W + x)     ->         h = np.tanh(h @ W + x)
        hs.append(h)                          __pb_app_hs__ = h
    out = np.stack(hs)                        return (h, __pb_app_hs__)
                                          h, hs = __pb_rt__.for_each(..., outs=1)
                                          out = __pb_rt__.stacked(np.stack, hs)

The list is ``hs = []`` (or ``h, hs = h0, []``) in the statements holding the loop,
before it; the loop's body appends to it once, at its top level, and mentions it
nowhere else; the function mentions it only there and after the loop, as
``np.stack(hs)``, ``np.array(hs)``, ``np.asarray(hs)``, ``np.concatenate(hs)``,
``sum(hs)``, ``len(hs)`` (each through ``stacked``), ``hs[i]`` (not a slice) or
``for ... in hs``. After a region, ``hs`` is the stacked array (its rows are the
items); after the loop as written, the list.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from .name_uses import aliases_of, may_alias, written_names
from .nodes import _at, _is_runtime, _name, _runtime, walk
from .scope import Scope

#: what a stacked list may be given to after the loop (``stacked`` knows each)
WHOLE = (np.stack, np.array, np.asarray, np.concatenate, sum, len)

def take_appends(fn: Any, loop: Any, siblings: list, scope: Scope,
                 upto: int | None = None) -> list:
    """For each list ``loop`` (a ``for`` or a ``while``) may give as per-step outputs:
    ``(name, out name, the append statement, its position in the body, the reads to
    route through ``stacked``)``, for appends among the body's first ``upto``
    statements (those before its break). The appends are replaced by assignments of
    the out names (``undo`` puts them back); ``route`` rewrites the reads once the loop
    is converted."""
    if not isinstance(loop, (gast.For, gast.While)) or loop not in siblings:
        return []
    k = siblings.index(loop)
    appends = [(at, stmt, appended(stmt)) for at, stmt in enumerate(loop.body[:upto])]
    if all(name is None for _, _, name in appends):
        return []  # (most loops: no walk of the function for its aliases)
    found = []
    aliases, written = aliases_of(fn), _written(fn)
    for at, stmt, name in appends:
        if name is None or any(f[0] == name for f in found) \
                or may_alias(stmt.value.args[0], aliases) & written:
            continue  # numpy's list holds the array itself: a later write shows in it
        reads = _reads_after(fn, loop, siblings[:k], siblings[k + 1:], name, stmt, scope)
        if reads is None:
            continue
        found.append((name, f"__pb_app_{name}__", stmt, at, reads))
    for _, out, stmt, at, _ in found:
        value = stmt.value.args[0]
        loop.body[at] = _at(gast.copy_location(gast.Assign(
            targets=[_name(out, gast.Store())], value=value, type_comment=None), stmt), stmt)
    return found


def undo(loop: Any, found: list) -> None:
    for _, _, stmt, at, _ in found:
        loop.body[at] = stmt


def route(found: list) -> None:
    """Each whole read ``f(hs)`` after the loop as ``stacked(f, hs)``."""
    for _, _, _, _, reads in found:
        for parent, call in reads:  # (a new node: the pass's analyses name the old one)
            new = _at(gast.copy_location(gast.Call(func=_runtime("stacked"),
                                                   args=[call.func] + call.args,
                                                   keywords=[]), call), call)
            for field, value in gast.iter_fields(parent):
                if value is call:
                    setattr(parent, field, new)
                elif isinstance(value, list) and any(v is call for v in value):
                    value[[id(v) for v in value].index(id(call))] = new


def appended(stmt: Any) -> str | None:
    """``hs`` for a statement ``hs.append(value)``."""
    if not isinstance(stmt, gast.Expr) or not isinstance(stmt.value, gast.Call):
        return None
    call = stmt.value
    f = call.func
    if isinstance(f, gast.Attribute) and f.attr == "append" and isinstance(f.value, gast.Name) \
            and len(call.args) == 1 and not call.keywords \
            and not isinstance(call.args[0], gast.Starred):
        return f.value.id
    return None


def _reads_after(fn: Any, loop: Any, before: list, after: list, name: str, append: Any,
                 scope: Scope) -> list | None:
    """The calls ``f(hs)`` after the loop to route through ``stacked`` (with their
    parents), or None when the
    function mentions ``hs`` elsewhere than the fresh list's ``hs = []``, the append,
    and whole reads after the loop."""
    fresh = [t for s in before for t in _fresh(s, name)]
    if len(fresh) != 1:
        return None
    allowed = {id(fresh[0]), id(append.value.func.value)}
    calls, parents = [], {}
    for s in after:
        for n in walk(s):
            for c in gast.iter_child_nodes(n):
                parents[id(c)] = n
    for s in after:
        for n in walk(s):
            if not (isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Load)):
                continue
            p = parents.get(id(n))
            if isinstance(p, gast.Call) and p.args == [n] and not p.keywords \
                    and any(scope.resolve(p.func) is f for f in WHOLE):
                calls.append((parents[id(p)], p))
            elif not (isinstance(p, (gast.For, gast.comprehension)) and p.iter is n
                      or isinstance(p, gast.Subscript) and p.value is n
                      and not isinstance(p.slice, (gast.Slice, gast.Tuple))):
                return None
            allowed.add(id(n))
    if any(isinstance(n, gast.Name) and n.id == name and id(n) not in allowed
           for n in walk(fn)):
        return None
    return calls


def _fresh(stmt: Any, name: str) -> list:
    """The target ``hs`` of ``hs = []`` (or ``h, hs = h0, []``) in ``stmt``."""
    if not isinstance(stmt, gast.Assign) or len(stmt.targets) != 1:
        return []
    target, value = stmt.targets[0], stmt.value
    pairs = zip(target.elts, value.elts) if isinstance(target, gast.Tuple) \
        and isinstance(value, gast.Tuple) and len(target.elts) == len(value.elts) \
        else [(target, value)]
    return [t for t, v in pairs if isinstance(t, gast.Name) and t.id == name
            and isinstance(v, gast.List) and not v.elts]


def _written(fn: Any) -> set:
    """The names the function writes into, item writes the pass made functional
    (``R = __pb_rt__.item_set(R, ...)``) included."""
    return written_names(fn) | {
        n.args[0].id for n in walk(fn) if isinstance(n, gast.Call) and n.args
        and isinstance(n.args[0], gast.Name) and _is_runtime(n.func)
        and n.func.attr == "item_set"}
