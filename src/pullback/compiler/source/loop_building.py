"""The nodes ``loops.py`` builds for a converted loop or ``if``: the body's function, the
call of the runtime with the carries' getters and keywords, the assignment of what it
returns."""

from __future__ import annotations

from typing import Any

import gast

from .item_writes import walk_scope
from .loop_names import _aug_assigned, _loads
from .nodes import _at, _name, walk


def _in_place(body: list, carries: list) -> Any:
    """The positions of the carries the body changes with ``+=`` & co. (in place, for
    an array)."""
    aug = _aug_assigned(body)
    return gast.Tuple(elts=[gast.Constant(value=k, kind=None) for k, n in enumerate(carries)
                            if n in aug], ctx=gast.Load())


def _written(body: list, carries: list) -> list:
    """``written=`` (the positions of the carries the body writes items of, through
    ``item_set``: the runtime writes their last values back into the arrays)."""
    names = {n.args[0].id for s in body for n in walk(s) if isinstance(n, gast.Call)
             and isinstance(n.func, gast.Attribute) and n.func.attr == "item_set"
             and isinstance(n.func.value, gast.Name) and n.func.value.id == "__pb_rt__"}
    positions = [gast.Constant(value=k, kind=None) for k, n in enumerate(carries)
                 if n in names]
    return [gast.keyword(arg="written", value=gast.Tuple(elts=positions, ctx=gast.Load()))] \
        if positions else []


def _getters(names: list) -> Any:
    """``(lambda: a, lambda: b)``: the carries' values before the loop, read by the
    runtime (a name not bound yet raises ``NameError`` there)."""
    none = gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[],
                          kwarg=None, defaults=[])
    getters = [gast.Lambda(args=none, body=_name(n)) for n in names]
    for g in getters:
        g.pb_getter = True  # (ours: a body holding it may still be converted)
    return gast.Tuple(elts=getters, ctx=gast.Load())


def _tuple(names: list, ctx: Any) -> Any:
    return gast.Tuple(elts=[_name(n, ctx) for n in names], ctx=ctx)


def _split(body: list) -> tuple:
    """(``(before, the if, after)`` for a body with one ``if test: break`` or ``if test:
    continue`` at its top level and no other, else None; the body with that ``if`` as
    its test alone, to analyse)."""
    stops = [k for k, s in enumerate(body) if isinstance(s, gast.If) and not s.orelse
             and len(s.body) == 1 and isinstance(s.body[0], (gast.Break, gast.Continue))]
    if len(stops) != 1:
        return None, body
    k = stops[0]
    rest = body[:k] + body[k + 1:]
    if any(isinstance(n, (gast.Break, gast.Continue)) for s in rest for n in walk_scope(s)):
        return None, body
    split = (body[:k], body[k], body[k + 1:])
    return split, body[:k] + [_at(gast.Expr(value=body[k].test), body[k])] + body[k + 1:]


def _range_keywords(kind: str, target: Any, sliced: list, flat: list) -> list:
    """``sliced=`` (the getters of the arrays read at the loop variable) and
    ``counted=False`` (the body never reads the loop variable) for ``for_range``."""
    if kind != "range":
        return []
    keywords = [gast.keyword(arg="sliced", value=_getters([n for n, _ in sliced]))] \
        if sliced else []
    if target.id not in _loads(flat):
        keywords.append(gast.keyword(arg="counted", value=gast.Constant(value=False,
                                                                        kind=None)))
    return keywords


#: calls that read an item at an index (the test of a folded break may read none)
_ITEM_READERS = frozenset({"take", "item", "choose", "take_along_axis", "compress",
                           "select", "loop_index", "subscript", "index_select", "gather"})


def _leading(split: Any, per_step: set, done: bool) -> list:
    """``first=True`` for a body that starts with ``if test: break`` whose test reads
    no item and none of ``per_step`` (the loop variable, its slices; a while loop's
    condition's names): the runtime makes the test part of the loop's condition
    (``t < n and not test``). That runs the test once more, on the carries after the
    last step, which Python would not: safe for a test of values (``total > limit``),
    not for one reading ``a[k]`` where only the loop keeps ``k`` in range. Not for a
    loop that stands for one with a return (``done``: its flag says whether it broke)."""
    if split is None or split[0] or done or not isinstance(split[1].body[0], gast.Break) \
            or _loads([split[1].test]) & per_step:
        return []
    for n in walk(split[1].test):
        called = n.func.attr if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) \
            else n.func.id if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) else ""
        if isinstance(n, gast.Subscript) or called in _ITEM_READERS:
            return []
    return [gast.keyword(arg="first", value=gast.Constant(value=True, kind=None))]


def _stop_args(name: str, split: Any) -> list:
    """The runtime's arguments for a body split at ``if test: break``: the part after,
    and whether the ``if`` breaks (else it continues)."""
    if split is None:
        return []
    brk = isinstance(split[1].body[0], gast.Break)
    return [_name(name + "post__"), gast.Constant(value=brk, kind=None)]


def _header(stmt: Any, last: Any) -> Any:
    """A place spanning a statement's first line up to the end of ``last`` (the ``for``
    or ``if`` line, without the body): where the new call stands."""
    where = gast.Pass()
    where.lineno, where.col_offset = stmt.lineno, stmt.col_offset
    where.end_lineno, where.end_col_offset = last.end_lineno, last.end_col_offset
    return where


def _function(name: str, params: list, body: list, returned: list | None, where: Any) -> Any:
    stmts = list(body)
    if returned is not None:
        stmts.append(_at(gast.Return(value=_tuple(returned, gast.Load())), where))
    args = gast.arguments(args=[_name(p, gast.Param()) for p in params], posonlyargs=[],
                          vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    fn = gast.FunctionDef(name=name, args=args, body=stmts, decorator_list=[], returns=None,
                          type_comment=None, type_params=[])
    return _at(gast.copy_location(fn, where), where)


def _assign(carries: list, call: Any, where: Any) -> Any:
    if not carries:
        return _at(gast.copy_location(gast.Expr(value=call), where), where)
    new = gast.Assign(targets=[_tuple(carries, gast.Store())], value=call, type_comment=None)
    return _at(gast.copy_location(new, where), where)
