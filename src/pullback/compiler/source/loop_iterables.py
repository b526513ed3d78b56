"""What a ``for`` loop walks, for its conversion (``loops.py``): ``range``, ``zip`` and
``enumerate`` of positional arguments or any other iterable (``iteration``, which names
the runtime's ``for_range``, ``for_zip`` & co), the loop's int counters (a range's
variable, ``enumerate``'s count) and the names it binds to items of the arrays it
walks (``item_names``).
"""

from __future__ import annotations

from typing import Any

import gast

from .scope import Scope


def iteration(it: Any, scope: Scope) -> tuple:
    """(the runtime's helper, its arguments) for the loop's iterable: ``range``,
    ``zip`` and ``enumerate`` of positional arguments, else any iterable."""
    if isinstance(it, gast.Call) and not it.keywords \
            and not any(isinstance(a, gast.Starred) for a in it.args):
        f = scope.resolve(it.func)
        if f is range and 1 <= len(it.args) <= 3:
            return "range", it.args
        if f is zip and it.args:
            return "zip", it.args
        if f is enumerate and len(it.args) == 1 and iteration(it.args[0], scope)[0] == "zip":
            return "enumerate_zip", it.args[0].args
        if f is enumerate and 1 <= len(it.args) <= 2:
            return "enumerate", it.args
    return "each", [it]

def counters(stmt: Any, scope: Scope) -> set:
    """The names of a ``for`` loop's int counters: a range's variable, the first of
    ``enumerate``'s pair."""
    if not isinstance(stmt, gast.For):
        return set()
    kind, _ = iteration(stmt.iter, scope)
    target = stmt.target
    if kind == "range" and isinstance(target, gast.Name):
        return {target.id}
    if kind.startswith("enumerate") and isinstance(target, gast.Tuple) \
            and isinstance(target.elts[0], gast.Name):
        return {target.elts[0].id}
    return set()

def item_names(stmt: Any, scope: Scope) -> dict:
    """The names a ``for`` loop binds to items of the arrays it walks (a name of the
    function's each: ``for x in xs``, ``zip``'s, ``enumerate``'s): name -> array."""
    if not isinstance(stmt, gast.For):
        return {}
    kind, args = iteration(stmt.iter, scope)
    target = stmt.target
    if kind == "each" and isinstance(target, gast.Name):
        pairs = [(target, args[0])]
    elif kind in ("zip", "enumerate", "enumerate_zip") \
            and isinstance(target, gast.Tuple):
        elts = target.elts[1:] if kind.startswith("enumerate") else target.elts
        if kind == "enumerate":
            args = args[:1]
        if kind == "enumerate_zip" and len(elts) == 1 and isinstance(elts[0], gast.Tuple):
            elts = elts[0].elts
        pairs = list(zip(elts, args)) if len(elts) == len(args) else []
    else:
        pairs = []
    return {t.id: a.id for t, a in pairs
            if isinstance(t, gast.Name) and isinstance(a, gast.Name)}
