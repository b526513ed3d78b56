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
"""

from __future__ import annotations

from typing import Any

import gast

from ..mutations import MUTATORS
from .appends import appended, route, take_appends, undo
from .bool_tests import traced_test
from .item_writes import SCOPES, item_writes, walk_scope
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
    _tuple,
    _written,
)
from .loop_names import (
    _PURE_HELPERS,
    PREFIX,
    _allowed,
    _assigned,
    _binds,
    _effect_text,
    _index_by,
    _loads,
    _read_first,
    _static_test,
    _surely_assigned,
)
from .name_uses import _written_by_call
from .nodes import _at, _name, _runtime, walk
from .returns import (
    after_loop,
    counter_carries,
    has_return,
    loop_return,
    one_exit,
)
from .scope import Scope

_ITEM = "__pb_item__"  # (a loop's item, unpacked into the loop's target in the body)
#: calls that read the calling frame: in a new function they would read another
_FRAME_READERS = frozenset({"super", "locals", "vars", "eval", "exec", "dir"})
#: why a body holding one of ``_REFUSED``'s statements stays a loop
_REFUSED_WHY = {gast.Break: "it has a break or continue other than one `if test: break` "
                            "at its top level",
                gast.Return: "it returns from the function other than by one `if test: "
                             "return value` at its top level",
                gast.Try: "it has a try statement", gast.Delete: "it deletes a name",
                gast.Yield: "it yields", gast.YieldFrom: "it yields",
                gast.Global: "it declares a global", gast.Nonlocal: "it declares a nonlocal"}
_REFUSED_WHY[gast.Continue] = _REFUSED_WHY[gast.Break]
_MIDS = "the part after its break reads a value not assigned on every path before it"
_REFUSED = (gast.Break, gast.Continue, gast.Return, gast.Yield, gast.YieldFrom, gast.Await,
            gast.Global, gast.Nonlocal, gast.Delete, gast.NamedExpr, gast.Import,
            gast.ImportFrom, gast.AsyncFor, gast.AsyncWith, gast.Try, gast.Match)


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
        if isinstance(stmt, gast.For):
            return self._for_appending(stmt)
        if isinstance(stmt, gast.While):
            return self._while(stmt)
        if isinstance(stmt, gast.If) and not _static_test(stmt.test):
            return self._if(stmt)
        return None

    def _for_appending(self, stmt: Any) -> list | None:
        """A ``for`` loop, a fresh list it appends to as its per-step outputs
        (``appends.py``) when its body has no ``break`` or ``continue``."""
        found = [] if _split(stmt.body)[0] is not None else [
            f for f in take_appends(self.fn, stmt, self.siblings, self.scope)
            if f[0] not in self.declared]
        out = self._for(stmt, found)
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
        carried = counter_carries(body, moved, targets & self._counters(stmt),
                                  self._items(stmt))
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

    def _counters(self, stmt: Any) -> set:
        """The names of a ``for`` loop's int counters: a range's variable, the first of
        ``enumerate``'s pair."""
        if not isinstance(stmt, gast.For):
            return set()
        kind, _ = self._iteration(stmt.iter)
        target = stmt.target
        if kind == "range" and isinstance(target, gast.Name):
            return {target.id}
        if kind.startswith("enumerate") and isinstance(target, gast.Tuple) \
                and isinstance(target.elts[0], gast.Name):
            return {target.elts[0].id}
        return set()

    def _items(self, stmt: Any) -> dict:
        """The names a ``for`` loop binds to items of the arrays it walks (a name of the
        function's each: ``for x in xs``, ``zip``'s, ``enumerate``'s): name -> array."""
        if not isinstance(stmt, gast.For):
            return {}
        kind, args = self._iteration(stmt.iter)
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
        function reads after (``if_`` picks one; on a traced test, ``pb.cond``)."""
        branches = [stmt.body, stmt.orelse]
        if not all(self._convertible(b) for b in branches) \
                or not self._convertible([gast.Expr(value=stmt.test)]) \
                or self._captured(stmt, stmt.body + stmt.orelse):
            return None
        inside = {id(n) for b in branches for s in b for n in walk(s)}
        outside = {n.id for n in walk(self.fn) if id(n) not in inside
                   and isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
        assigned = _assigned(stmt.body) | _assigned(stmt.orelse)
        order = [n.id for b in branches for s in b for n in walk(s)
                 if isinstance(n, gast.Name)]
        outputs = sorted(assigned & outside, key=order.index)
        if not outputs:
            return None
        read = assigned & (_read_first(stmt.body) | _read_first(stmt.orelse))
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

    def _iteration(self, it: Any) -> tuple:
        """(the runtime's helper, its arguments) for the loop's iterable: ``range``,
        ``zip`` and ``enumerate`` of positional arguments, else any iterable."""
        if isinstance(it, gast.Call) and not it.keywords \
                and not any(isinstance(a, gast.Starred) for a in it.args):
            f = self.scope.resolve(it.func)
            if f is range and 1 <= len(it.args) <= 3:
                return "range", it.args
            if f is zip and it.args:
                return "zip", it.args
            if f is enumerate and len(it.args) == 1 and self._iteration(it.args[0])[0] == "zip":
                return "enumerate_zip", it.args[0].args
            if f is enumerate and 1 <= len(it.args) <= 2:
                return "enumerate", it.args
        return "each", [it]

    def _for(self, stmt: Any, found: list = ()) -> list | None:
        targets = {n.id for n in walk(stmt.target) if isinstance(n, gast.Name)}
        if not all(isinstance(n, (gast.Name, gast.Tuple, gast.List, gast.Store))
                   for n in walk(stmt.target)):
            self._refuse(stmt, "its target is an item or an attribute")
            return None
        kind, args = self._iteration(stmt.iter)
        split, flat = _split(stmt.body)
        why = self._refusal(flat) or (targets & self.declared and "its variable is global "
                                      "or nonlocal") or self._captured(stmt, flat)
        if why:
            self._refuse(stmt, why)
            return None
        outside = self._loads_outside(stmt)
        assigned = _assigned(flat)
        if targets & (self._read_after(stmt, targets) | assigned):
            self._refuse(stmt, "the loop variable is read after the loop or assigned "
                               "in its body")
            return None
        carries = self._carries(flat, assigned - targets, outside)
        if kind == "range" and not isinstance(stmt.target, gast.Name):
            self._refuse(stmt, "a range's items are unpacked")
            return None
        name = self._name(stmt)
        where = _header(stmt, stmt.iter)
        outs = [f[1] for f in found]
        sliced, undo = self._slices(flat, stmt.target.id, assigned) if kind == "range" \
            else ([], [])
        counter = stmt.target if kind == "range" else stmt.target.elts[0] \
            if kind.startswith("enumerate") and isinstance(stmt.target, gast.Tuple) else None
        if isinstance(counter, gast.Name):  # (after _slices: x[t] is a slice of x)
            undo += _index_by(flat, counter.id)
        if kind == "range":
            lead = [stmt.target.id] + [new for _, new in sliced]
            fns = self._bodies(name, lead, carries, stmt.body, split, flat, where, outs)
        elif isinstance(stmt.target, gast.Name):  # (the item is the loop variable)
            fns = self._bodies(name, [stmt.target.id], carries, stmt.body, split, flat, where,
                               outs)
        else:  # (the item unpacked first: the part after a break reads it from the first)
            unpack = _at(gast.Assign(targets=[stmt.target], value=_name(_ITEM),
                                     type_comment=None), stmt.target)
            split = split and ([unpack] + split[0], split[1], split[2])
            fns = self._bodies(name, [_ITEM], carries, [unpack] + stmt.body, split,
                               [unpack] + flat, where, outs)
        if fns is None:  # (the tree as it was: the loop stays as written)
            for parent, field, k, value in reversed(undo):
                (getattr(parent, field).__setitem__(k, value) if k is not None
                 else setattr(parent, field, value))
            self._refuse(stmt, _MIDS)
            return None
        if kind == "range":
            self.bounds.update(id(a) for a in args if isinstance(a, gast.Name))
        call = gast.Call(func=_runtime("for_" + kind),
                         args=[_name(name), _getters(carries),
                               gast.Tuple(elts=list(args), ctx=gast.Load()),
                               _in_place(flat, carries)] + _stop_args(name, split),
                         keywords=_range_keywords(kind, stmt.target, sliced, flat)
                         + _written(flat, carries) + self._done_keyword() + _outs(outs)
                         + _leading(split, targets | {n for _, n in sliced},
                                    bool(self.done)))
        lists = [f[0] for f in found]
        return fns + [_assign(carries + lists + self._done_name(), call, where)]

    def _slices(self, body: list, target: str, assigned: set) -> tuple:
        """``x[t]`` read in the body, for the loop variable ``t`` and an ``x`` the body
        does not assign, as a new name ``x_t``: the loop's function takes it after
        ``t`` (a scan's per-step slice of ``x``: no gather, no scatter in the gradient).
        The (name, new name) pairs, and how to undo it."""
        taken = {n.id for n in walk(self.fn) if isinstance(n, gast.Name)}
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
                                and v.value.id not in assigned | {target} | self.declared):
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

    def _bodies(self, name: str, lead: list, carries: list, body: list, split: Any,
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
        out = gast.Tuple(elts=[_tuple(carries, gast.Load()), _tuple(mids, gast.Load()), test],
                         ctx=gast.Load())
        first = _function(name, lead + carries, pre + [_at(gast.Return(value=out), where)],
                          None, where)
        return [first, _function(name + "post__", lead + carries + mids, post or [gast.Pass()],
                                 carries, where)]

    def _read_after(self, stmt: Any, names: set) -> set:
        """Which of ``names`` (the loop's variables) the function reads outside the loop,
        but in another loop that binds them first (``for i in ...`` twice)."""
        skip = {id(n) for loop in walk(self.fn) if loop is stmt or _binds(loop, names)
                for s in loop.body for n in walk(s)}
        return {n.id for n in walk(self.fn) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Load) and n.id in names and id(n) not in skip}

    def _while(self, stmt: Any) -> list | None:
        split, flat = _split(stmt.body)
        why = next((f"it appends to {name}, and a while region has no per-step outputs"
                    for name in map(appended, flat) if name), "") or self._refusal(flat) \
            or self._refusal([gast.Expr(value=stmt.test)]) or self._captured(stmt, flat)
        if why:
            self._refuse(stmt, why)
            return None
        outside = self._loads_outside(stmt) | _loads([stmt.test])
        carries = self._carries(flat, _assigned(flat), outside)
        if not carries:
            self._refuse(stmt, "it carries no value from one step to the next")
            return None
        name = self._name(stmt)
        test = _at(gast.Return(value=stmt.test), stmt.test)
        where = _header(stmt, stmt.test)
        cond = _function(name + "cond__", carries, [test], None, where)
        fns = self._bodies(name, [], carries, stmt.body, split, flat, where)
        if fns is None:
            self._refuse(stmt, _MIDS)
            return None
        call = gast.Call(func=_runtime("while_"),
                         args=[_name(name + "cond__"), _name(name), _getters(carries),
                               _in_place(flat, carries)] + _stop_args(name, split),
                         keywords=_written(flat, carries) + self._done_keyword()
                         + _leading(split, _loads([stmt.test]), bool(self.done)))
        return [cond] + fns + [_assign(carries + self._done_name(), call, where)]

    def _done_keyword(self) -> list:
        """``done=True`` for a loop that stands for one with a return."""
        return [gast.keyword(arg="done", value=gast.Constant(value=True, kind=None))] \
            if self.done else []

    def _done_name(self) -> list:
        return [self.done] if self.done else []

    def _name(self, stmt: Any) -> str:
        self.count += 1
        return f"{PREFIX}{stmt.lineno}_{self.count}__"

    def _carries(self, body: list, assigned: set, outside: set) -> list:
        """The assigned names read after the loop or before the body assigns them, in the
        order the body first mentions them."""
        live = (assigned & outside) | (assigned & _read_first(body))
        order = [n.id for s in body for n in walk(s) if isinstance(n, gast.Name)]
        return sorted(live, key=order.index)

    def _captured(self, stmt: Any, body: list) -> str:
        """Why not, when a function or comprehension of the user's outside ``stmt`` reads a
        name the body assigns: it may be called while the loop runs, and would not see
        the body's values once they are the new function's locals ("": none does)."""
        names = _assigned(body)
        inside = {id(n) for n in walk(stmt)}
        for scope in walk(self.fn):
            if scope is self.fn or id(scope) in inside or not isinstance(scope, SCOPES) \
                    or isinstance(scope, gast.FunctionDef) and scope.name.startswith(PREFIX) \
                    or getattr(scope, "pb_getter", False) or getattr(scope, "pb_lazy", False):
                continue
            read = _loads([scope]) & names
            if read:
                return f"a function or comprehension outside it reads {min(read)}, " \
                       "which it assigns"
        return ""

    def _convertible(self, body: list) -> bool:
        return not self._refusal(body)

    def _refusal(self, body: list) -> str:
        """Why ``body`` cannot be a function of the values it carries ("": it can)."""
        declared = _assigned(body) & self.declared
        if declared:
            return f"it assigns {min(declared)}, declared global or nonlocal"
        for stmt in body:
            for n in walk_scope(stmt):
                if isinstance(n, _REFUSED):
                    return _REFUSED_WHY.get(type(n), f"it holds a {type(n).__name__.lower()} "
                                                     "statement")
                if getattr(n, "pb_lazy", False):  # (an operand of and/or: run in the body)
                    why = self._refusal([gast.Expr(value=n.body)])
                    if why:
                        return why
                if isinstance(n, SCOPES) and not _allowed(n):
                    return f"it defines a {type(n).__name__.lower()}"
                if isinstance(n, (gast.Subscript, gast.Attribute)) \
                        and not isinstance(n.ctx, gast.Load):
                    what = "an attribute" if isinstance(n, gast.Attribute) else "an item"
                    return getattr(n, "pb_view", "") or \
                        f"it writes {what} it cannot write functionally (line {n.lineno})"
                if isinstance(n, gast.Call) and not self._pure_call(n):
                    return f"{_effect_text(n)} (line {n.lineno})"
        return ""

    def _pure_call(self, n: Any) -> bool:
        f = n.func
        if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
                and f.value.id == "__pb_rt__":
            return f.attr in _PURE_HELPERS
        if self.scope.maybe_effect(f) or _written_by_call(n) \
                or isinstance(f, gast.Name) and f.id in _FRAME_READERS:
            return False
        if isinstance(f, gast.Attribute) and (f.attr in MUTATORS or (
                f.attr.endswith("_") and not f.attr.startswith("_"))):
            return False
        return True

    def _loads_outside(self, stmt: Any) -> set:
        """The names read anywhere in the function but in the loop's body (and but in
        another loop's body that surely assigns them before it reads them)."""
        return _loads(self.fn.body, self.replaced or stmt) | self.moved


def _outs(outs: list) -> list:
    """``outs=n``: the body gives ``n`` values appended to lists after its carries."""
    return [gast.keyword(arg="outs", value=gast.Constant(value=len(outs), kind=None))] \
        if outs else []
