"""Python loops and ``if``s in the user's function as functions of the values they
carry, so that a trace can record a body once as a region (``loop_runtime.py`` decides
at run time): the source pass's conversion of ``for`` over ``range(...)``, an array,
``zip`` and ``enumerate``, of ``while``, and of ``if``/``else``.

::

    for t in range(T):                 def __pb_loop_5_1__(t, h):
        h = np.tanh(x[t] @ W + h)  ->      h = np.tanh(__pb_rt__.loop_index(x, t) @ W + h)
                                           return (h,)
                                       h, = __pb_rt__.for_range(__pb_loop_5_1__,
                                                                (lambda: h,), (T,), ())

The carried values are the names the body assigns that are read after it (anywhere in
the function outside the body) or read in the body before it assigns them; the
runtime reads their values before the loop through the lambdas (a name with no value
yet raises ``NameError`` there). Names the body only reads are the new function's
closure. An ``if test: break`` (or ``continue``) at the top level of a loop's body
splits it in two functions: the part before it, which also returns the
test's value, and the part after. An ``if``'s two branches become functions of the
names either assigns and the function reads after.

A loop or ``if`` is left as written (unrolled or guarded by the trace, as before) when
its body could do what a function of its values cannot: ``return``, ``yield``, another
``break`` or ``continue``, ``global``/``nonlocal`` names, ``del``, ``try``, writes into
items or attributes, a list's ``append`` and the other changing methods, in-place
methods (``x.add_()``, ``out=``), ``print`` or logging, definitions, ``super()`` or
``locals()``; or when the loop variable is read after the loop, or a function or
comprehension outside it reads a name it assigns.

This file walks the function and converts each loop and ``if`` (``_Converter``); its
neighbours: ``loop_iterables.py`` (what a ``for`` walks), ``loop_bodies.py`` (the names
a body carries, its slices, its functions), ``loop_refusals.py`` (why a loop stays as
written), ``loop_building.py`` (the call and assignment nodes), ``returns.py`` and
``appends.py`` (a loop that returns, lists it appends to).
"""

from __future__ import annotations

from typing import Any

import gast

from .appends import appended, route, take_appends, undo
from .bool_tests import traced_test
from .item_writes import SCOPES, item_writes
from .loop_bodies import (
    bodies,
    carries_of,
    for_bodies,
    outs_keyword,
    read_after,
    slices,
    undo_all,
)
from .loop_building import (
    _assign,
    _function,
    _getters,
    _header,
    _in_place,
    _leading,
    _range_keywords,
    _split,
    _stop_args,
    _written,
)
from .loop_iterables import counters, item_names, iteration
from .loop_names import (
    PREFIX,
    _assigned,
    _index_by,
    _loads,
    _read_first,
    _static_test,
    _surely_assigned,
)
from .loop_refusals import MIDS, captured, refusal
from .nodes import _at, _name, _runtime, walk
from .returns import (
    after_loop,
    counter_carries,
    has_return,
    loop_return,
    one_exit,
)
from .scope import Scope


def convert_loops(node: Any, scope: Scope) -> tuple:
    """Convert the loops of the function ``node`` in place (inner loops first): whether
    any was, the positions of the parameters only read as bounds of a converted
    ``range`` (an int given there may be traced: one trace for every trip count), and
    ``(line, why)`` for each loop left as written."""
    converter = _Converter(node, scope)
    changed = converter.statements(node.body)
    changed |= converter.one_exit(node.body)
    refused = tuple(sorted(converter.refused))
    if not changed:
        return False, (), refused
    params = [a.id for a in node.args.posonlyargs + node.args.args]
    uses: dict = {}
    for n in (n for stmt in node.body for n in walk(stmt)):
        if isinstance(n, gast.Name) and n.id in params:
            uses.setdefault(n.id, []).append(id(n) in converter.bounds)
    return True, tuple(k for k, p in enumerate(params) if uses.get(p) and all(uses[p])), \
        refused


class _Converter:
    def __init__(self, fn: Any, scope: Scope) -> None:
        self.fn, self.scope = fn, scope
        self.declared = {name for n in walk(fn) if isinstance(n, (gast.Global, gast.Nonlocal))
                         for name in n.names}
        self.count = 0
        self.bounds: set = set()  # the names read as a converted range's bounds
        self.refused: list = []  # (line, why) of each loop left as written
        self.done: str | None = None  # the flag of the loop with a return being converted
        self.moved: set = set()  # the names its return (moved after it) reads
        self.replaced: Any = None  # the loop as written (the one converted is a copy)
        self.siblings: list = []  # the statements holding the loop being converted

    def _refuse(self, stmt: Any, why: str) -> None:
        """Keep why the loop ``stmt`` stays a Python loop (``pb.compiler.inspect``)."""
        self.refused.append((stmt.lineno, why))

    def statements(self, body: list) -> bool:
        changed = False
        k = 0
        while k < len(body):
            stmt = body[k]
            if isinstance(stmt, (gast.For, gast.While)):
                item_writes(self.fn, stmt, self.declared)
            if isinstance(stmt, (gast.If, gast.While)) and not _static_test(stmt.test):
                stmt.test = traced_test(stmt.test, self.scope)
                # (its and/or's operands are lambdas: names the function's locals read
                # there become cells, which the pass's check allows once loops moved)
                changed |= any(isinstance(n, gast.Lambda) for n in walk(stmt.test))
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and not isinstance(stmt, SCOPES):
                    changed |= self.statements(inner)
            self.siblings = body
            new = self._loop(stmt)
            if new is not None:
                body[k:k + 1] = new
                k += len(new)
                changed = True
            else:
                k += 1
        return changed

    # ---------------------------------------------------------------- one loop
    def _loop(self, stmt: Any) -> list | None:
        if isinstance(stmt, (gast.For, gast.While)) and stmt.orelse:
            self._refuse(stmt, "it has an else clause")
            return None
        if isinstance(stmt, (gast.For, gast.While)) and has_return(stmt.body):
            return self._returning(stmt)
        if isinstance(stmt, (gast.For, gast.While)):
            return self._appending(stmt)
        if isinstance(stmt, gast.If) and not _static_test(stmt.test):
            return self._if(stmt)
        return None

    def _appending(self, stmt: Any) -> list | None:
        """A ``for`` or ``while`` loop, a fresh list it appends to as its per-step
        outputs (``appends.py``); with an ``if test: break``, appended to before it (the
        step that breaks appends too); with a ``continue``, none."""
        split = _split(stmt.body)[0]
        upto = len(stmt.body) if split is None else len(split[0]) \
            if isinstance(split[1].body[0], gast.Break) else 0
        found = [f for f in take_appends(self.fn, stmt, self.siblings, self.scope, upto)
                 if f[0] not in self.declared]
        out = self._for(stmt, found) if isinstance(stmt, gast.For) else self._while(stmt, found)
        if found and out is None:
            undo(stmt, found)
        elif found:
            route(found)
        return out

    def _returning(self, stmt: Any) -> list | None:
        """A loop whose body returns from the function (``returns.py``): the loop with a
        ``break`` in place of the return, giving the flag ``done``, and the return after
        it, under ``if done:``."""
        found = loop_return(stmt.body)
        if isinstance(found, str):
            self._refuse(stmt, found)
            return None
        body, moved, flags = found
        if flags:  # (several returns: the ifs made to skip the rest of a step, as pb.cond,
            # giving the flags the break reads: read in the function while they convert)
            reads = gast.Expr(value=body[-1].test)
            self.fn.body.append(reads)
            try:
                self.statements(body)
            finally:
                self.fn.body.remove(reads)
        targets = {n.id for n in walk(stmt.target) if isinstance(n, gast.Name)} \
            if isinstance(stmt, gast.For) else set()
        carried = counter_carries(body, moved, targets & counters(stmt, self.scope),
                                  item_names(stmt, self.scope))
        if carried is not None:
            body, moved, before = carried
        if carried is None or targets & _loads(moved):
            self._refuse(stmt, "its return reads the loop variable")
            return None
        new = gast.For(target=stmt.target, iter=stmt.iter, body=body, orelse=[],
                       type_comment=None) if isinstance(stmt, gast.For) \
            else gast.While(test=stmt.test, body=body, orelse=[])
        new = gast.copy_location(new, stmt)
        new.end_lineno, new.end_col_offset = stmt.end_lineno, stmt.end_col_offset
        self.count += 1
        self.done, self.moved = f"__pb_done_{stmt.lineno}_{self.count}__", _loads(moved)
        self.replaced = stmt
        try:
            out = self._for(new) if isinstance(stmt, gast.For) else self._while(new)
        finally:
            flag, self.done, self.moved, self.replaced = self.done, None, set(), None
        return None if out is None else flags + before + out + [after_loop(flag, moved, stmt)]

    def one_exit(self, body: list) -> bool:
        """Each ``if done: ...; return e1`` the conversion of a loop left at the top level
        of the function, with the statements after it up to ``return e2``, as one ``if``
        giving the returned values and one ``return`` (from the last one up: the ``if``
        of the one before then holds it): a ``pb.cond`` on a traced ``done``."""
        changed = False
        for k in reversed(range(len(body))):
            if not getattr(body[k], "pb_return", False):
                continue
            found = one_exit(body, k, f"__pb_ret_{body[k].lineno}_{k}_")
            if found is None:
                continue
            old = body[k:]
            body[k:] = list(found)
            new = self._if(found[0])
            if new is None:
                body[k:] = old
                continue
            body[k:k + 1] = new
            changed = True
        return changed

    def _if(self, stmt: Any) -> list | None:
        """``if``/``else`` as two functions of the names either branch assigns and the
        function reads after or the branches read first (``if_`` picks one; on a traced
        test, ``pb.cond``)."""
        branches = [stmt.body, stmt.orelse]
        if any(self._refusal(b) for b in branches + [[gast.Expr(value=stmt.test)]]) \
                or captured(self.fn, stmt, stmt.body + stmt.orelse):
            return None
        inside = {id(n) for b in branches for s in b for n in walk(s)}
        outside = {n.id for n in walk(self.fn) if id(n) not in inside
                   and isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
        assigned = _assigned(stmt.body) | _assigned(stmt.orelse)
        order = [n.id for b in branches for s in b for n in walk(s)
                 if isinstance(n, gast.Name)]
        read = assigned & (_read_first(stmt.body) | _read_first(stmt.orelse))
        # (a name a branch reads before assigning it is an output too: in a loop, the
        # next step reads it, as an LSTM's `h, c = cell(x, (h, c))` under an `if`)
        outputs = sorted((assigned & outside) | read, key=order.index)
        if not outputs:
            return None
        sure = _surely_assigned(stmt.body) & _surely_assigned(stmt.orelse)
        params = [o for o in outputs if o not in sure or o in read] \
            + sorted(read - set(outputs), key=order.index)
        name = self._name(stmt)
        where = _header(stmt, stmt.test)
        then = _function(name + "then__", params, stmt.body or [gast.Pass()], outputs, where)
        orelse = _function(name + "else__", params, stmt.orelse or [gast.Pass()], outputs,
                           where)
        call = gast.Call(func=_runtime("if_"),
                         args=[stmt.test, _name(name + "then__"), _name(name + "else__"),
                               _getters(params)], keywords=[])
        return [then, orelse, _assign(outputs, call, where)]

    def _for(self, stmt: Any, found: list = ()) -> list | None:
        targets = {n.id for n in walk(stmt.target) if isinstance(n, gast.Name)}
        if not all(isinstance(n, (gast.Name, gast.Tuple, gast.List, gast.Store))
                   for n in walk(stmt.target)):
            self._refuse(stmt, "its target is an item or an attribute")
            return None
        kind, args = iteration(stmt.iter, self.scope)
        split, flat = _split(stmt.body)
        why = self._refusal(flat) or (targets & self.declared and "its variable is global "
                                      "or nonlocal") or captured(self.fn, stmt, flat)
        if why:
            self._refuse(stmt, why)
            return None
        outside = self._loads_outside(stmt)
        assigned = _assigned(flat)
        if targets & (read_after(self.fn, stmt, targets) | assigned):
            self._refuse(stmt, "the loop variable is read after the loop or assigned "
                               "in its body")
            return None
        carries = carries_of(flat, assigned - targets, outside)
        if kind == "range" and not isinstance(stmt.target, gast.Name):
            self._refuse(stmt, "a range's items are unpacked")
            return None
        name = self._name(stmt)
        where = _header(stmt, stmt.iter)
        outs = [f[1] for f in found]
        sliced, undo = slices(self.fn, flat, stmt.target.id, assigned, self.declared) \
            if kind == "range" else ([], [])
        counter = stmt.target if kind == "range" else stmt.target.elts[0] \
            if kind.startswith("enumerate") and isinstance(stmt.target, gast.Tuple) else None
        if isinstance(counter, gast.Name):  # (after slices: x[t] is a slice of x)
            undo += _index_by(flat, counter.id)
        fns = for_bodies(stmt, kind, name, [new for _, new in sliced], carries, split, flat,
                         where, outs)
        if fns is None:  # (the tree as it was: the loop stays as written)
            undo_all(undo)
            self._refuse(stmt, MIDS)
            return None
        if kind == "range":
            self.bounds.update(id(a) for a in args if isinstance(a, gast.Name))
        call = gast.Call(func=_runtime("for_" + kind),
                         args=[_name(name), _getters(carries),
                               gast.Tuple(elts=list(args), ctx=gast.Load()),
                               _in_place(flat, carries)] + _stop_args(name, split),
                         keywords=_range_keywords(kind, stmt.target, sliced, flat)
                         + _written(flat, carries) + self._done_keyword()
                         + outs_keyword(outs)
                         + _leading(split, targets | {n for _, n in sliced},
                                    bool(self.done)))
        lists = [f[0] for f in found]
        return fns + [_assign(carries + lists + self._done_name(), call, where)]

    def _while(self, stmt: Any, found: list = ()) -> list | None:
        split, flat = _split(stmt.body)
        why = next((f"it appends to {name}, which is not a fresh list read whole after it "
                    "(before its break)" for name in map(appended, flat) if name), "") \
            or self._refusal(flat) \
            or self._refusal([gast.Expr(value=stmt.test)]) or captured(self.fn, stmt, flat)
        if why:
            self._refuse(stmt, why)
            return None
        outside = self._loads_outside(stmt) | _loads([stmt.test])
        carries = carries_of(flat, _assigned(flat), outside)
        if not carries:
            self._refuse(stmt, "it carries no value from one step to the next")
            return None
        name = self._name(stmt)
        test = _at(gast.Return(value=stmt.test), stmt.test)
        where = _header(stmt, stmt.test)
        cond = _function(name + "cond__", carries, [test], None, where)
        outs = [f[1] for f in found]
        fns = bodies(name, [], carries, stmt.body, split, flat, where, outs)
        if fns is None:
            self._refuse(stmt, MIDS)
            return None
        call = gast.Call(func=_runtime("while_"),
                         args=[_name(name + "cond__"), _name(name), _getters(carries),
                               _in_place(flat, carries)] + _stop_args(name, split),
                         keywords=_written(flat, carries) + self._done_keyword()
                         + outs_keyword(outs)
                         + _leading(split, _loads([stmt.test]), bool(self.done) or bool(outs)))
        lists = [f[0] for f in found]
        return [cond] + fns + [_assign(carries + lists + self._done_name(), call, where)]

    def _done_keyword(self) -> list:
        """``done=True`` for a loop that stands for one with a return."""
        return [gast.keyword(arg="done", value=gast.Constant(value=True, kind=None))] \
            if self.done else []

    def _done_name(self) -> list:
        return [self.done] if self.done else []

    def _name(self, stmt: Any) -> str:
        self.count += 1
        return f"{PREFIX}{stmt.lineno}_{self.count}__"

    def _refusal(self, body: list) -> str:
        """Why ``body`` cannot be a function of the values it carries ("": it can)."""
        return refusal(body, self.scope, self.declared)

    def _loads_outside(self, stmt: Any) -> set:
        """The names read anywhere in the function but in the loop's body (and but in
        another loop's body that surely assigns them before it reads them)."""
        return _loads(self.fn.body, self.replaced or stmt) | self.moved
