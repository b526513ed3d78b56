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
``global``/``nonlocal``), and the loop's body reads it only as ``R[...]``: then no value
the body holds can tell a new array from the one written in place, but a name bound to
``R[...]`` (or ``R[...][...]``, ``R[...].T``, ``R[...].reshape(...)``), which numpy makes a
view seeing later writes where it is not a scalar. Such a name is allowed when it is read
only before the body's next write of ``R`` in its block, and nowhere else (soft-DTW's
``a = R[i - 1, j]`` before ``R[i, j] = ...``); else, when bound to ``R[...]`` itself, the
read is ``item_read(R, index, ...)``, which refuses a region at run time unless the index
reads a scalar (numpy's copy); else ``R`` is not rewritten (``pb_view`` on its writes says
why, for ``pb.compiler.inspect``).
"""

from __future__ import annotations

import ast
from typing import Any

import gast

from .nodes import _at, _name, _runtime, children, walk

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
    checked = {name: _only_items(fn, body, name) for name in names}
    for s in writes:
        reads = checked.get(s.targets[0].value.id)
        if isinstance(reads, list):
            _rewrite(s)
        elif isinstance(reads, str):
            s.targets[0].pb_view = reads
    for name, reads in checked.items():
        for binding, read in reads if isinstance(reads, list) else ():
            _checked_read(binding, read, name)


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


def _only_items(fn: Any, body: list, name: str) -> list | str | None:
    """Whether ``body`` reads ``name`` only as ``name[...]``, writes it only by plain
    item writes, and binds names to views of it only where that is safe: the reads
    ``name[...]`` to check at run time (a list), why not (a view), or None (not)."""
    allowed, reads = set(), []
    for stmt in body:
        for n in walk(stmt):  # (nested scopes too: a lambda reading it refuses)
            if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Name) \
                    and n.value.id == name:
                if isinstance(n.ctx, gast.Store) and not any(
                        _item_write(s) and s.targets[0] is n for s in walk_scope(stmt)):
                    return None  # (an augmented write, a target in a tuple)
                allowed.add(id(n.value))
            if isinstance(n, (gast.Assign, gast.AnnAssign, gast.NamedExpr)) \
                    and n.value is not None:
                why = _view_binding(fn, body, n, name, reads)
                if why:
                    return why
            if isinstance(n, (gast.AugAssign, gast.For)) and any(
                    isinstance(m, gast.Name) and m.id == name
                    for m in walk(n.target)):
                return None
    if not all(id(n) in allowed for stmt in body for n in walk(stmt)
               if isinstance(n, gast.Name) and n.id == name):
        return None
    return reads


def _view_binding(fn: Any, body: list, n: Any, array: str, reads: list) -> str:
    """Why the binding ``n`` makes the body's writes into ``array`` unsafe as new
    values ("": it binds no view of it, or one read before them; a plain
    ``array[...]`` read after them is put in ``reads``, checked at run time)."""
    values = n.value.elts if isinstance(n.value, (gast.Tuple, gast.List)) else [n.value]
    views = [v for v in values if _view_of(v, {array})]
    if not views or _item_write(n) and n.targets[0].value.id == array:
        return ""  # (R[i] = R[i - 1]: numpy copies the items)
    line = getattr(n, "lineno", "?")
    why = f"it binds a name to a view of {array} (line {line}), read after a write of it"
    if not isinstance(n, gast.Assign):
        return why
    names = [t for target in n.targets for t in (
        target.elts if isinstance(target, (gast.Tuple, gast.List)) else [target])]
    if not all(isinstance(t, gast.Name) for t in names):
        return why
    if _read_before_write(fn, body, n, {t.id for t in names}, array):
        return ""
    if all(isinstance(v, gast.Subscript) and isinstance(v.value, gast.Name) for v in views):
        reads.extend((n, v) for v in views)
        return ""
    return why


#: the attributes and methods of an array giving a view of its memory
_VIEW_ATTRS = frozenset({"T", "mT", "real", "imag", "reshape", "view", "ravel",
                         "transpose", "swapaxes", "squeeze", "diagonal", "base"})


def _view_of(v: Any, arrays: set) -> bool:
    """Whether ``v`` may be a view of the memory of a name in ``arrays``: ``R[...]``,
    a name of ``arrays`` itself, and items, view attributes and view methods of those."""
    while True:
        if isinstance(v, gast.Name):
            return v.id in arrays
        if isinstance(v, gast.Call) and isinstance(v.func, gast.Attribute) \
                and v.func.attr in _VIEW_ATTRS:
            v = v.func.value
        elif isinstance(v, gast.Attribute) and v.attr in _VIEW_ATTRS \
                or isinstance(v, gast.Subscript):
            v = v.value
        else:
            return False


def _read_before_write(fn: Any, body: list, n: Any, names: set, array: str) -> bool:
    """Whether ``names``, bound by the statement ``n``, are read only in the statements
    after it in its block up to the next write of ``array`` (that write's own value and
    index too), and there neither written into nor bound to other names."""
    block, k = next(((b, b.index(n)) for b in _blocks(body) if any(s is n for s in b)),
                    (None, 0))
    if block is None:
        return False
    seen: list = []
    for s in block[k + 1:]:
        writes = any(_item_write(m) and m.targets[0].value.id == array
                     for m in walk_scope(s))
        if writes and not _item_write(s):
            break  # (a compound statement writing it: its reads may come after)
        seen.append(s)
        if writes:
            break
    inside = {id(m) for s in seen for m in walk(s)}
    for m in walk(fn):
        if isinstance(m, gast.Name) and m.id in names and isinstance(m.ctx, gast.Load) \
                and id(m) not in inside:
            return False
    for s in seen:
        for m in walk(s):
            if isinstance(m, (gast.Assign, gast.AnnAssign, gast.NamedExpr)) \
                    and m.value is not None and _view_of(m.value, names):
                return False  # (another name for the view)
            if isinstance(m, (gast.Subscript, gast.Attribute)) \
                    and not isinstance(m.ctx, gast.Load) and _view_of(m, names) \
                    or isinstance(m, gast.AugAssign) and _view_of(m.target, names):
                return False  # (a write through the view)
    return True


def _blocks(body: list) -> Any:
    """The statement lists in ``body`` (it, and those of its compound statements)."""
    yield body
    for stmt in body:
        for n in walk_scope(stmt):
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(n, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    yield inner


def _checked_read(binding: Any, read: Any, name: str) -> None:
    """``R[index]``, a value of ``binding`` read after a write, as ``item_read(R,
    index, why)`` (``loop_writes.py``)."""
    why = f"it reads a view of {name} (line {getattr(read, 'lineno', '?')}) after " \
          "writing its items"
    call = _at(gast.Call(func=_runtime("item_read"),
                         args=[_name(name), _slices(read.slice),
                               gast.Constant(value=why, kind=None)], keywords=[]), read)
    if binding.value is read:
        binding.value = call
    else:
        elts = binding.value.elts
        elts[next(k for k, v in enumerate(elts) if v is read)] = call


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
