"""A converted loop's body as the functions the runtime calls (``loops.py``): the names
it carries from one step to the next (``carries_of``), the loop's variable read after
the loop (``read_after``: the loop stays), each ``x[t]`` it reads as the slice ``x_t``
its function takes after ``t`` (``slices``), and the body as one function or, split at
its ``if test: break``, two (``bodies``).
"""

from __future__ import annotations

from typing import Any

import gast

from .loop_building import _function, _tuple
from .loop_names import _assigned, _binds, _loads, _read_first, _surely_assigned
from .nodes import _at, _name, walk

_ITEM = "__pb_item__"  # (a loop's item, unpacked into the loop's target in the body)

def carries_of(body: list, assigned: set, outside: set) -> list:
    """The assigned names read after the loop or before the body assigns them, in the
    order the body first mentions them."""
    live = (assigned & outside) | (assigned & _read_first(body))
    order = [n.id for s in body for n in walk(s) if isinstance(n, gast.Name)]
    return sorted(live, key=order.index)

def read_after(fn: Any, stmt: Any, names: set) -> set:
    """Which of ``names`` (the loop's variables) the function reads outside the loop,
    but in another loop that binds them first (``for i in ...`` twice)."""
    skip = {id(n) for loop in walk(fn) if loop is stmt or _binds(loop, names)
            for s in loop.body for n in walk(s)}
    return {n.id for n in walk(fn) if isinstance(n, gast.Name)
            and isinstance(n.ctx, gast.Load) and n.id in names and id(n) not in skip}

def slices(fn: Any, body: list, target: str, assigned: set, declared: set) -> tuple:
    """``x[t]`` read in the body, for the loop variable ``t`` and an ``x`` the body
    does not assign, as a new name ``x_t``: the loop's function takes it after
    ``t`` (a scan's per-step slice of ``x``: no gather, no scatter in the gradient).
    The (name, new name) pairs, and how to undo it."""
    taken = {n.id for n in walk(fn) if isinstance(n, gast.Name)}
    pairs: dict = {}
    undo = []
    for s in body:
        for parent in walk(s):
            for field, value in list(gast.iter_fields(parent)):
                values = value if isinstance(value, list) else [value]
                for k, v in enumerate(values):
                    if not (isinstance(v, gast.Subscript) and isinstance(v.ctx, gast.Load)
                            and isinstance(v.value, gast.Name)
                            and isinstance(v.slice, gast.Name) and v.slice.id == target
                            and v.value.id not in assigned | {target} | declared):
                        continue
                    new = pairs.get(v.value.id)
                    if new is None:
                        new = f"{v.value.id}_{target}"
                        while new in taken:
                            new += "_"
                        taken.add(new)
                        pairs[v.value.id] = new
                    node = gast.copy_location(_name(new), v)
                    if isinstance(value, list):
                        value[k] = node
                    else:
                        setattr(parent, field, node)
                    undo.append((parent, field, k if isinstance(value, list) else None, v))
    return list(pairs.items()), undo

def bodies(name: str, lead: list, carries: list, body: list, split: Any,
            flat: list, where: Any, outs: list = ()) -> list | None:
    """The loop's body as a function of ``lead`` (the loop variable) and the carries;
    with an ``if test: break`` (or ``continue``) at its top level, two: the part
    before it, giving the carries, the values the part after reads and the test's
    value, and the part after."""
    if split is None:
        return [_function(name, lead + carries, body, carries + list(outs), where)]
    pre, test, post = split[0], flat[len(split[0])].value, split[2]
    mids = sorted((_assigned(pre) & _loads(post)) - set(carries))
    if not set(mids) <= _surely_assigned(pre):
        return None
    out = gast.Tuple(elts=[_tuple(carries, gast.Load()), _tuple(mids, gast.Load()), test]
                     + ([_tuple(list(outs), gast.Load())] if outs else []), ctx=gast.Load())
    first = _function(name, lead + carries, pre + [_at(gast.Return(value=out), where)],
                      None, where)
    return [first, _function(name + "post__", lead + carries + mids, post or [gast.Pass()],
                             carries, where)]

def for_bodies(stmt: Any, kind: str, name: str, sliced: list, carries: list, split: Any,
               flat: list, where: Any, outs: list) -> list | None:
    """``bodies`` of a ``for`` loop of ``kind`` (``loop_iterables.iteration``): a range's
    take its variable and the slices ``sliced`` first, a walk's its item (unpacked first
    in the body when the target is a tuple: the part after a break reads it from the
    first)."""
    if kind == "range":
        lead = [stmt.target.id] + sliced
        return bodies(name, lead, carries, stmt.body, split, flat, where, outs)
    if isinstance(stmt.target, gast.Name):  # (the item is the loop variable)
        return bodies(name, [stmt.target.id], carries, stmt.body, split, flat, where, outs)
    unpack = _at(gast.Assign(targets=[stmt.target], value=_name(_ITEM), type_comment=None),
                 stmt.target)
    split = split and ([unpack] + split[0], split[1], split[2])
    return bodies(name, [_ITEM], carries, [unpack] + stmt.body, split, [unpack] + flat, where,
                  outs)


def undo_all(undo: list) -> None:
    """The tree as it was before ``slices`` and ``_index_by`` changed it (``undo``: their
    (parent, field, position or None, old node) in the order they were made)."""
    for parent, field, k, value in reversed(undo):
        (getattr(parent, field).__setitem__(k, value) if k is not None
         else setattr(parent, field, value))


def outs_keyword(outs: list) -> list:
    """``outs=n``: the body gives ``n`` values appended to lists after its carries."""
    return [gast.keyword(arg="outs", value=gast.Constant(value=len(outs), kind=None))] \
        if outs else []
