"""The source pass's rewrite of a function's node (``Rewriter``): calls routed through the
runtime, element reads through ``subscript``, values written into ``x[...]`` through
``stored``, and the prologue that copies the arguments the function writes into. Its
rooms: ``parsing.py`` (the function's node), ``scope.py`` (what names refer to),
``name_uses.py`` (what the function does with its names), ``nodes.py`` (node tools),
``compiling.py`` (the node back into code); ``source/__init__.py`` runs the pass.
"""

from __future__ import annotations

from typing import Any

import gast
import numpy as np

from .nodes import _at, _is_runtime, _name, _runtime
from .scope import Scope


class Rewriter(gast.NodeTransformer):
    """Routes calls through the runtime (``name = np.zeros(...)`` through ``buffer`` when
    ``name`` is one of ``buffers``: written into, handed to a function, or returned),
    element reads through ``subscript``, and values written into ``x[...]`` through
    ``stored``."""

    def __init__(self, scope: Scope, buffers: set) -> None:
        self.scope = scope
        self.buffers = buffers
        self.buffer_calls: set[int] = set()
        self.receivers: set[int] = set()  # subscripts whose method is called
        self.changed = False

    def visit_Assign(self, node: Any) -> Any:
        if len(node.targets) == 1:
            self._creation(node.targets[0], node.value)
        made = len(node.targets) == 1 and isinstance(node.targets[0], gast.Name) \
            and node.targets[0].id in self.buffers \
            and isinstance(node.value, (gast.BinOp, gast.UnaryOp))
        self.generic_visit(node)
        if made:  # (c = np.ones(2) * 0.5; ...; c[0] = 1.0: a buffer, as np.zeros's)
            self.changed = True
            node.value = _at(gast.Call(func=_runtime("made"), args=[node.value], keywords=[]),
                             node.value)
        for target in node.targets:
            node.value = self._stored(target, node.value)
        return node

    def visit_AugAssign(self, node: Any) -> Any:
        self.generic_visit(node)
        node.value = self._stored(node.target, node.value)
        return node

    def _stored(self, target: Any, value: Any) -> Any:
        """``stored(x, value)`` for the target ``x[...]`` (``x`` a name or attribute)."""
        if not isinstance(target, gast.Subscript) or not _plain_ref(target.value):
            return value
        self.changed = True
        new = gast.Call(func=_runtime("stored"), args=[_load(target.value), value],
                        keywords=[])
        return _at(new, value)

    def visit_Return(self, node: Any) -> Any:
        values = node.value.elts if isinstance(node.value, gast.Tuple) else [node.value]
        self.buffer_calls.update(id(v) for v in values if isinstance(v, gast.Call))
        return self.generic_visit(node)

    def visit_AnnAssign(self, node: Any) -> Any:
        self._creation(node.target, node.value)
        return self.generic_visit(node)

    def _creation(self, target: Any, value: Any) -> None:
        """``name = f(...)``: ``buffer`` looks at ``f`` when it runs (np.zeros & co.)."""
        if isinstance(target, gast.Name) and target.id in self.buffers \
                and isinstance(value, gast.Call):
            self.buffer_calls.add(id(value))

    def visit_Attribute(self, node: Any) -> Any:
        if isinstance(node.value, gast.Subscript):  # ``x[0].add_(1)``: torch's view
            self.receivers.add(id(node.value))
        return self.generic_visit(node)

    def visit_Subscript(self, node: Any) -> Any:
        """``x[i, j]`` read (no slice in the index): ``subscript`` gives an element as a
        copy, numpy's scalar."""
        self.generic_visit(node)
        if isinstance(node.ctx, gast.Load) and any(
                self.scope.resolve(node.value) is c for c in (np.r_, np.c_)):
            self.changed = True  # np.r_[a, b]: concat_index(np.r_)[a, b]
            node.value = gast.copy_location(gast.Call(
                func=_at(_runtime("concat_index"), node), args=[node.value], keywords=[]),
                node.value)
            return node
        if not isinstance(node.ctx, gast.Load) or id(node) in self.receivers \
                or _has_slice(node.slice):
            return node
        self.changed = True
        new = gast.Call(func=_at(_runtime("subscript"), node), args=[node.value, node.slice],
                        keywords=[])
        return gast.copy_location(new, node)

    def visit_Call(self, node: Any) -> Any:
        if _is_runtime(node.func):  # (made by state.py: routed already)
            return self.generic_visit(node)
        if self.scope.maybe_effect(node.func):
            return self._effect_call(node)
        helper = "buffer" if id(node) in self.buffer_calls else "call"
        self.generic_visit(node)
        if not self.scope.routed(node.func):
            return node
        self.changed = True
        new = gast.Call(func=_at(_runtime(helper), node.func), args=[node.func] + node.args,
                        keywords=node.keywords)
        return gast.copy_location(new, node)

    # ------------------------------------------------ print, logging (effects.py)
    def _effect_call(self, node: Any) -> Any:
        """``print(...)``, ``logger.info(...)``: through ``effect_call``, with the
        f-strings, ``%`` formatting, ``float(x)`` and ``x.item()`` among its arguments
        formatted when the call runs (``fstring``, ``percent``, ``later``)."""
        self.changed = True
        args = [self._effect_arg(a) for a in node.args]
        keywords = [gast.keyword(arg=k.arg, value=self._effect_arg(k.value))
                    for k in node.keywords]
        new = gast.Call(func=_at(_runtime("effect_call"), node.func),
                        args=[self.visit(node.func)] + args, keywords=keywords)
        return gast.copy_location(new, node)

    def _effect_arg(self, a: Any) -> Any:
        if isinstance(a, gast.JoinedStr):
            parts = [self._effect_part(v) for v in a.values]
            return _at(gast.Call(func=_runtime("fstring"), args=parts, keywords=[]), a)
        if isinstance(a, gast.BinOp) and isinstance(a.op, gast.Mod) \
                and isinstance(a.left, gast.Constant) and isinstance(a.left.value, str):
            right = a.right
            right = (gast.Tuple(elts=[self._later(e) for e in right.elts], ctx=gast.Load())
                     if isinstance(right, gast.Tuple) else self._later(right))
            return _at(gast.Call(func=_runtime("percent"), args=[a.left, _at(right, a)],
                                 keywords=[]), a)
        return self._later(a)

    def _effect_part(self, v: Any) -> Any:
        if not isinstance(v, gast.FormattedValue):
            return v
        spec = gast.Constant(value="", kind=None) if v.format_spec is None \
            else self._effect_arg(v.format_spec)
        return _at(gast.Tuple(elts=[self._later(v.value),
                                    gast.Constant(value=v.conversion, kind=None), spec],
                              ctx=gast.Load()), v)

    def _later(self, e: Any) -> Any:
        """``float(x)`` as ``later(float, x)``, ``x.item()`` as ``later(x.item)``."""
        if isinstance(e, gast.Call) and not e.keywords:
            f = e.func
            if len(e.args) == 1 and self.scope.resolve(f) in (float, int):
                return _at(gast.Call(func=_runtime("later"),
                                     args=[f, self.visit(e.args[0])], keywords=[]), e)
            if not e.args and isinstance(f, gast.Attribute) and f.attr == "item":
                f.value = self.visit(f.value)
                return _at(gast.Call(func=_runtime("later"), args=[f], keywords=[]), e)
        return self.visit(e)


def _plain_ref(expr: Any) -> bool:
    """A name, or attributes of one (``self.buf``): read again without side effects."""
    while isinstance(expr, gast.Attribute):
        expr = expr.value
    return isinstance(expr, gast.Name)


def _load(expr: Any) -> Any:
    """A new node reading the name or attribute chain ``expr``."""
    if isinstance(expr, gast.Attribute):
        return gast.Attribute(value=_load(expr.value), attr=expr.attr, ctx=gast.Load())
    return _name(expr.id)


def _has_slice(index: Any) -> bool:
    """An index with a slice keeps an axis: its result is never an element."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    return any(isinstance(p, gast.Slice) for p in parts)


def add_prologue(node: Any, written: set) -> bool:
    """``x = __pb_rt__.writable(x)`` first (after the docstring) for each argument ``x``
    the function writes into or hands to a function that may (``written``): that
    function's writes are then into the same copy, which the function reads after."""
    params = [a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
    where = gast.Pass()  # the prologue stands on the ``def`` line (its first three columns)
    where.lineno = where.end_lineno = node.lineno
    where.col_offset, where.end_col_offset = node.col_offset, node.col_offset + 3
    stmts = [_at(gast.Assign(
        targets=[_name(p, gast.Store())],
        value=gast.Call(func=_runtime("writable"), args=[_name(p)], keywords=[]),
        type_comment=None), where) for p in params if p in written]
    first = node.body[0]
    doc = isinstance(first, gast.Expr) and isinstance(first.value, gast.Constant) \
        and isinstance(first.value.value, str)
    node.body[int(doc):int(doc)] = stmts
    return bool(stmts)
