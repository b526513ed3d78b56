"""What a loop's or ``if``'s body reads and assigns, for the conversion in ``loops.py``:
the names it carries, reads first or surely assigns, its reads at the loop variable
(through ``loop_index``), and what a call in it that may change state does."""

from __future__ import annotations

from typing import Any

import gast

from .item_writes import walk_scope
from .nodes import _at, _runtime, walk

PREFIX = "__pb_loop_"
#: the runtime's helpers a converted body may call (the others change outside state)
_PURE_HELPERS = frozenset({"call", "subscript", "concat_index", "buffer", "for_range",
                           "for_each", "for_zip", "for_enumerate", "for_enumerate_zip",
                           "while_", "loop_index", "if_", "item_set", "item_slice", "item_read",
                           "not_", "int0", "first_item", "truth", "any_of", "and_", "or_",
                           "stacked"})


def _static_test(test: Any) -> bool:
    """A test that is never a traced value: ``x is None``, ``k in d``, ``isinstance(...)``,
    a constant, ``not`` of one."""
    if isinstance(test, gast.UnaryOp) and isinstance(test.op, gast.Not):
        return _static_test(test.operand)
    if isinstance(test, gast.BoolOp):
        return all(_static_test(v) for v in test.values)
    if isinstance(test, gast.Compare):
        return all(isinstance(op, (gast.Is, gast.IsNot, gast.In, gast.NotIn)) for op in test.ops)
    if isinstance(test, gast.Call) and isinstance(test.func, gast.Name):
        return test.func.id in ("isinstance", "hasattr", "callable", "len", "issubclass")
    return isinstance(test, gast.Constant)


def _binds(node: Any, names: set) -> bool:
    """Whether ``node`` is a loop binding one of ``names`` as its variable, or a loop
    converted already whose function binds one (reads of it inside are its own)."""
    if isinstance(node, gast.For):
        return any(isinstance(n, gast.Name) and n.id in names for n in walk(node.target))
    if isinstance(node, gast.FunctionDef) and node.name.startswith(PREFIX):
        params = {a.id for a in node.args.args}
        return bool((params | _assigned(node.body)) & names)
    return False


def _allowed(n: Any) -> bool:
    """A scope a converted body may hold: a comprehension, a loop or if converted
    already, the carries' getters, an operand of ``and``/``or`` (``bool_tests.py``)."""
    return isinstance(n, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)) \
        or isinstance(n, gast.FunctionDef) and n.name.startswith(PREFIX) \
        or getattr(n, "pb_getter", False) or getattr(n, "pb_lazy", False)


def _assigned(body: list) -> set:
    return {n.id for s in body for n in walk_scope(s)
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _aug_assigned(body: list) -> set:
    return {n.target.id for s in body for n in walk_scope(s)
            if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name)}


def _loads(nodes: list, skip: Any = None) -> set:
    """The names ``nodes`` read; of a loop or ``if`` converted already, the names its
    functions read from outside them (their own parameters and locals are theirs). With
    ``skip`` (a loop), not what its body reads, nor what another loop's body reads
    after surely assigning it (a temporary of each loop)."""
    found = set()
    todo = list(nodes)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.FunctionDef) and n.name.startswith(PREFIX):
            own = {a.id for a in n.args.args} | _assigned(n.body)
            found |= _loads(n.body) - own
            continue
        if skip is not None and isinstance(n, (gast.For, gast.While)):
            if any(m is skip for m in walk(n)):  # (the loop itself, or one holding it)
                found |= _loads(n.body, skip) if n is not skip else set()
            else:
                found |= _loads(n.body, skip) - (_surely_assigned(n.body)
                                                 - _read_first(n.body))
            todo.extend(x for x in (getattr(n, "iter", None), getattr(n, "test", None),
                                    getattr(n, "target", None)) if x is not None)
            todo.extend(n.orelse)
            continue
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            found.add(n.id)
        elif isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name):
            found.add(n.target.id)
        todo.extend(gast.iter_child_nodes(n))
    return found


def _read_first(body: list) -> set:
    """The names some statement of ``body`` may read before an earlier statement of it
    surely assigned them (a plain ``name = ...`` at the body's top level)."""
    defined: set = set()
    first = set()
    for stmt in body:
        first |= _loads([stmt]) - defined
        defined |= _surely_assigned([stmt])
    return first


def _surely_assigned(body: list) -> set:
    """The names a plain ``name = ...`` (or ``a, (b, c) = ...``) at the top level of
    ``body`` assigns."""
    defined = set()
    for stmt in body:
        if isinstance(stmt, gast.Assign):
            todo = list(stmt.targets)
            while todo:  # (``k, (x, y) = item``: the names at every depth)
                t = todo.pop()
                if isinstance(t, (gast.Tuple, gast.List)):
                    todo.extend(t.elts)
                elif isinstance(t, gast.Name):
                    defined.add(t.id)
    return defined


def _index_by(body: list, target: str) -> list:
    """``x[... t ...]`` read in the body, for the loop variable ``t``: through
    ``loop_index``, which selects by a traced ``t`` without turning it into a number.
    How to undo it: (node, field, position in the field's list or None, old value)."""
    undo = []
    for s in body:  # (also inside the functions of loops and ifs converted already)
        for n in walk(s):
            for field, value in list(gast.iter_fields(n)):
                values = value if isinstance(value, list) else [value]
                for k, v in enumerate(values):
                    if isinstance(v, gast.Subscript) and isinstance(v.ctx, gast.Load) \
                            and target in _loads([v.slice]):
                        new = _at(gast.Call(func=_runtime("loop_index"),
                                            args=[v.value, v.slice], keywords=[]), v)
                        new = gast.copy_location(new, v)
                        undo.append((n, field, k if isinstance(value, list) else None, v))
                        if isinstance(value, list):
                            value[k] = new
                        else:
                            setattr(n, field, new)
    return undo


def _effect_text(n: Any) -> str:
    """What a call that may change state outside a body does: ``it calls hist.append()``
    (the user's function, for a call ``state.py`` routed through the runtime)."""
    f, parts = n.func, []
    if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
            and f.value.id == "__pb_rt__" and f.attr not in _PURE_HELPERS:
        callee = {"mutate": 1, "effect_call": 0}.get(f.attr)
        if callee is None or len(n.args) <= callee:
            return "it changes state outside it"
        f = n.args[callee]
    while isinstance(f, gast.Attribute):
        parts.append(f.attr)
        f = f.value
    parts.append(f.id if isinstance(f, gast.Name) else "...")
    return f"it calls {'.'.join(reversed(parts))}(), which may change state outside it"
