"""Writes into an array's items in a loop's body as functional updates, so that the
array is one of the loop's carried values (``loops.py`` then converts the loop):

::

    for j in range(1, m):                 for j in range(1, m):
        R[i, j] = R[i, j - 1] + D[i, j] ->    R = __pb_rt__.item_set(R, (i, j),
                                                                     R[i, j - 1] + D[i, j])

Run as Python (eagerly, or in a loop the trace unrolls) ``item_set`` writes into the
array in place and gives it back: the statement does what it did. In a region's body
it gives a new value (``loop_writes.py``), and the runtime writes the loop's last
value back into the array, so that its views outside the loop see the writes.

A name is rewritten only when it is a local of the function (not a parameter, nor
``global``/``nonlocal``), and the loop's body reads it only as ``R[...]`` and never
binds a name to ``R[...]`` itself (a view, which would see later writes): then no value
the body holds can tell a new array from the one written in place.
"""

from __future__ import annotations

from typing import Any

import gast

from .rewriter import _at, _name, _runtime, children, walk

SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef,
           gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def item_writes(fn: Any, loop: Any, declared: set) -> None:
    """Rewrite ``R[index] = value`` in ``loop``'s body (anywhere in it, inner loops and
    ``if``s too) as ``R = item_set(R, index, value)`` for the names ``R`` that may be."""
    body = loop.body
    writes = [s for stmt in body for s in walk_scope(stmt) if _item_write(s)]
    if not writes:
        return
    params = {a.id for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs}
    local = {n.id for stmt in fn.body for n in walk_scope(stmt)
             if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    names = {s.targets[0].value.id for s in writes} & local
    names -= params | declared
    chosen = {name for name in names if _only_items(body, name)}
    for s in writes:
        if s.targets[0].value.id in chosen:
            _rewrite(s)


def walk_scope(node: Any) -> Any:
    """``gast.walk`` of the nodes run in the function's own scope (a nested function or
    comprehension is yielded, its inside is not, even for ``node`` itself)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if not isinstance(n, SCOPES):
            todo.extend(children(n))


def _item_write(s: Any) -> bool:
    return isinstance(s, gast.Assign) and len(s.targets) == 1 \
        and isinstance(s.targets[0], gast.Subscript) \
        and isinstance(s.targets[0].value, gast.Name) \
        and not any(isinstance(n, gast.Starred) for n in walk(s.targets[0].slice))


def _only_items(body: list, name: str) -> bool:
    """Whether ``body`` reads ``name`` only as ``name[...]``, writes it only by plain
    item writes, and binds no name to ``name[...]`` itself."""
    allowed = set()
    for stmt in body:
        for n in walk(stmt):  # (nested scopes too: a lambda reading it refuses)
            if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) \
                    and n.value.id == name:
                if isinstance(n.ctx, gast.Store) and not any(
                        _item_write(s) and s.targets[0] is n for s in walk_scope(stmt)):
                    return False  # (an augmented write, a target in a tuple)
                allowed.add(id(n.value))
            if isinstance(n, (gast.Assign, gast.AnnAssign, gast.NamedExpr)) \
                    and n.value is not None:
                values = n.value.elts if isinstance(n.value, (gast.Tuple, gast.List)) \
                    else [n.value]
                if any(isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name)
                       and v.value.id == name for v in values):
                    return False
            if isinstance(n, (gast.AugAssign, gast.For)) and any(
                    isinstance(m, gast.Name) and m.id == name
                    for m in walk(n.target)):
                return False
    return all(id(n) in allowed for stmt in body for n in walk(stmt)
               if isinstance(n, gast.Name) and n.id == name)


def _rewrite(s: Any) -> None:
    target = s.targets[0]
    index = _slices(target.slice)
    call = gast.Call(func=_runtime("item_set"),
                     args=[_name(target.value.id), index, s.value], keywords=[])
    s.targets = [gast.copy_location(_name(target.value.id, gast.Store()), target)]
    s.value = _at(gast.copy_location(call, target), target)


def _slices(index: Any) -> Any:
    """The index as an expression: a slice ``a:b:c`` as ``item_slice(a, b, c)``."""
    if isinstance(index, gast.Slice):
        parts = [p if p is not None else gast.Constant(value=None, kind=None)
                 for p in (index.lower, index.upper, index.step)]
        return _at(gast.Call(func=_runtime("item_slice"), args=parts, keywords=[]), index)
    if isinstance(index, gast.Tuple):
        return gast.copy_location(gast.Tuple(elts=[_slices(e) for e in index.elts],
                                             ctx=gast.Load()), index)
    return index
