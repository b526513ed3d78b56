"""The source pass's part for Python state outside the function (``mutations.py`` runs
what it writes): each change the function makes to state it did not make itself is
routed through a helper that, inside a trace, has generated code make it again on
every call.

- ``step += 1``, ``best = x`` for a name declared ``global`` or ``nonlocal``:
  ``step = __pb_rt__.rebind(lambda: step, 1, '+=')`` (``name = name op value`` too);
  other bindings of such a name (``for step in``, unpacking, ``with ... as``) are
  refused inside a trace (``unreplayable``);
- ``obj.n += 1``, ``obj.last = x`` where ``obj`` is an argument or captured (not a
  local): ``obj.n = __pb_rt__.attr_value(obj, 'n', 1, '+=', key)``;
- ``cache[k] = v``, ``counts[k] += 1`` into something captured or reached through an
  argument's attributes: ``cache[k] = __pb_rt__.item_value(cache, k, v, None, key)``
  (an argument's own items, ``x[i] = ...``, stay the source pass's: a write into an
  array);
- ``history.append(loss)`` and the other methods of ``MUTATORS`` on such a receiver:
  ``__pb_rt__.mutate(key, history.append, loss)`` (refused inside a trace when the
  receiver is what a call returned, ``d.setdefault(k, []).append(x)``: generated code
  could not find it again).

``key`` ("name:history", "attr:n") names the state when the function reads it nowhere
but in these changes (and, for a container, in changes made as statements): then its
value does not reach the trace, and the guard on it is left out (``UPDATES``, read by
``captured.py``). A local name the function binds is never routed: a list it makes and
appends to is its own.
"""

from __future__ import annotations

import copy
import weakref
from typing import Any

import gast

from ..mutations import MUTATORS, RETURNED
from .nodes import _at, _name, _runtime, children, walk
from .parsing import _arg_names

#: original code object -> the (kind, name, what) the function reads only to change
#: them: ("name", "step", "value"), ("name", "history", "content"), ("attr", "n", "value")
UPDATES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: numpy functions that write into their first argument (``np.copyto(b, v)``,
#: ``np.add.at(b, i, v)``): refused inside a trace on a numpy array the function did
#: not make (``unreplayed_write``)
_WRITE_FIRST = frozenset({"copyto", "at", "place", "putmask", "put_along_axis",
                          "fill_diagonal"})
#: methods of a numpy array that write into it (``b.fill(0)``): refused alike
_ARRAY_METHODS = frozenset({"fill", "sort", "partition", "resize", "itemset", "put"})
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)
_OPS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//",
        gast.Mod: "%", gast.Pow: "**", gast.MatMult: "@", gast.BitAnd: "&", gast.BitOr: "|",
        gast.BitXor: "^", gast.LShift: "<<", gast.RShift: ">>"}


def updates_of(code: Any) -> frozenset:
    """What ``UPDATES`` knows of ``code`` (nothing for code the pass did not convert)."""
    return UPDATES.get(code, frozenset())


def rewrite_state(node: Any) -> tuple:
    """Route ``node``'s changes to outside state through the runtime (in place); returns
    (whether anything changed, the ``UPDATES`` entry for its code)."""
    loads = _Loads()
    loads.visit(node)
    rewriter = _Scope(node)
    new = rewriter.run()
    keys = set()
    for key, ids in rewriter.shared.sites.items():
        kind, name, _ = key
        table = loads.names if kind == "name" else loads.attrs
        if set(table.get(name, ())) <= rewriter.shared.consumed and ids:
            keys.add(key)
    return new, frozenset(keys)


class _Loads(gast.NodeVisitor):
    """The ids of every node that reads a name or an attribute, by name."""

    def __init__(self) -> None:
        self.names: dict = {}
        self.attrs: dict = {}

    def visit_Name(self, n: Any) -> None:
        if isinstance(n.ctx, gast.Load):
            self.names.setdefault(n.id, []).append(id(n))

    def visit_Attribute(self, n: Any) -> None:
        if isinstance(n.ctx, gast.Load):
            self.attrs.setdefault(n.attr, []).append(id(n))
        self.generic_visit(n)


class _Shared:
    def __init__(self) -> None:
        self.consumed: set = set()  # ids of loads that only read what is changed
        self.sites: dict = {}  # (kind, name, what) -> its sites' count
        self.changed = False


class _Scope(gast.NodeTransformer):
    """One function's (or lambda's) body: its names bound locally, declared ``global``
    or ``nonlocal``, and its parameters; nested functions get a ``_Scope`` of their own."""

    def __init__(self, node: Any, shared: _Shared | None = None) -> None:
        self.node = node
        self.shared = shared or _Shared()
        self.params = set(_arg_names(node.args))
        self.declared: set = set()
        self.local: set = set()
        body = node.body if isinstance(node.body, list) else [node.body]
        for stmt in body:
            self._bindings(stmt)
        self.local -= self.declared | self.params

    def run(self) -> bool:
        if isinstance(self.node.body, list):
            self.node.body = self._statements(self.node.body)
        else:
            self.node.body = self.visit(self.node.body)
        return self.shared.changed

    # ------------------------------------------------------------- the scope
    def _bindings(self, n: Any) -> None:
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            self.declared.update(n.names)
        elif isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            self.local.add(n.id)
        elif isinstance(n, (gast.Import, gast.ImportFrom)):
            self.local.update((a.asname or a.name).split(".")[0] for a in n.names)
        if isinstance(n, _SCOPES):
            if not isinstance(n, gast.Lambda):
                self.local.add(n.name)
            return  # (its own scope)
        for child in children(n):
            self._bindings(child)

    def _outside(self, expr: Any) -> bool:
        """Whether ``expr`` (a chain of attributes, items and method calls) starts at
        state the function did not make: an argument, a captured or global name."""
        root = _root(expr)
        return isinstance(root, gast.Name) and (root.id in self.params or root.id in
                                                self.declared or root.id not in self.local)

    def _key(self, receiver: Any, what: str) -> str | None:
        """"name:history" / "attr:hist" for the state ``receiver`` reads (counted as a
        site of ``what``), else None."""
        if isinstance(receiver, gast.Name):
            kind, name = "name", receiver.id
        elif isinstance(receiver, gast.Attribute):
            kind, name = "attr", receiver.attr
        else:
            return None
        self.shared.sites[(kind, name, what)] = self.shared.sites.get((kind, name, what), 0) + 1
        return f"{kind}:{name}"

    # ------------------------------------------------------------- statements
    def _statements(self, body: list) -> list:
        out = []
        for stmt in body:
            new = self.visit(stmt)
            out.extend(new if isinstance(new, list) else [new])
        return out

    def generic_visit(self, node: Any) -> Any:
        for field, value in gast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], gast.stmt):
                setattr(node, field, self._statements(value))
            elif isinstance(value, list):
                setattr(node, field, [self.visit(v) if isinstance(v, gast.AST) else v
                                      for v in value])
            elif isinstance(value, gast.AST):
                setattr(node, field, self.visit(value))
        return node

    def visit_FunctionDef(self, node: Any) -> Any:
        _Scope(node, self.shared).run()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: Any) -> Any:
        _Scope(node, self.shared).run()
        return node

    def visit_ClassDef(self, node: Any) -> Any:
        return node

    def visit_Expr(self, node: Any) -> Any:
        call = node.value
        if isinstance(call, gast.Call) and self._is_mutation(call):
            receiver = call.func.value
            key = self._key(receiver, "content")
            if key is not None:
                self.shared.consumed.add(id(receiver))
            node.value = self._mutate(call, key)
            return node
        return self.generic_visit(node)

    def visit_Call(self, node: Any) -> Any:
        if self._is_mutation(node):
            return self._mutate(node, None)
        return self._writes(self.generic_visit(node))

    def _writes(self, node: Any) -> Any:
        """``node``, a call, with the numpy arrays it writes into (``out=b``, the first
        argument of ``np.copyto`` and ``ufunc.at``...) checked when outside state."""
        f = node.func
        name = f.attr if isinstance(f, gast.Attribute) else getattr(f, "id", None)
        shown = ".".join(reversed(_dotted(f)))
        for k in node.keywords:  # (``np.add(b, 1, out=b)``)
            if k.arg == "out" and self._outside(k.value):
                k.value = self._array_written(k.value, f"{shown}(..., out=...)")
        numpy = isinstance(f, gast.Attribute) and isinstance(_root(f), gast.Name) \
            and _root(f).id in ("np", "numpy")
        if (name in _WRITE_FIRST or numpy and name == "put") and node.args \
                and self._outside(node.args[0]):
            node.args[0] = self._array_written(node.args[0], f"{shown}(...)")
        elif name in _ARRAY_METHODS and isinstance(f, gast.Attribute) and not numpy \
                and self._outside(f.value):  # (``b.fill(0)``)
            f.value = self._array_written(f.value, f"{shown}(...)")
        return node

    def _array_written(self, expr: Any, how: str) -> Any:
        """``unreplayed_write(expr, how)``: refused inside a trace if a numpy array."""
        self.shared.changed = True
        call = gast.Call(func=_runtime("unreplayed_write"), args=[expr, _const(how)],
                         keywords=[])
        return _at(gast.copy_location(call, expr), expr)

    def _is_mutation(self, call: Any) -> bool:
        f = call.func
        return isinstance(f, gast.Attribute) and f.attr in MUTATORS and self._outside(f.value)

    def _mutate(self, call: Any, key: str | None) -> Any:
        self.shared.changed = True
        if _has_call(call.func.value):  # (``d.setdefault(k, []).append(x)``)
            key = RETURNED
        call.func.value = self.visit(call.func.value)
        args = [self.visit(a) for a in call.args]
        keywords = [gast.keyword(arg=k.arg, value=self.visit(k.value)) for k in call.keywords]
        self._writes(gast.Call(func=call.func, args=[], keywords=keywords))  # (np.add)
        new = gast.Call(func=_runtime("mutate"), args=[_const(key), call.func] + args,
                        keywords=keywords)
        return _at(gast.copy_location(new, call), call)

    def visit_Assign(self, node: Any) -> Any:
        node.value = self.visit(node.value)
        if len(node.targets) != 1:
            node.targets = [self.visit(t) for t in node.targets]
            return self._refused(node, node.targets, "this assignment")
        return self._store(node, node.targets[0], node.value, None)

    def visit_AnnAssign(self, node: Any) -> Any:
        if node.value is None:
            return node
        node.value = self.visit(node.value)
        return self._store(node, node.target, node.value, None)

    def visit_AugAssign(self, node: Any) -> Any:
        node.value = self.visit(node.value)
        return self._store(node, node.target, node.value, _OPS[type(node.op)] + "=")

    def _store(self, node: Any, target: Any, value: Any, op: str | None) -> Any:
        """``target = value`` or ``target op= value`` (``node``)."""
        if isinstance(target, gast.Name):
            if target.id not in self.declared:
                return node
            return self._assign(node, target, self._rebind(target, value, op))
        if isinstance(target, (gast.Tuple, gast.List)):
            return self._refused(node, [target], "this unpacking")
        if not isinstance(target, (gast.Attribute, gast.Subscript)) \
                or not self._outside(target.value) or not _repeatable(target) \
                or (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)
                    and target.value.id in self.params):  # (x[i] = ...: into an array)
            self.visit(target)
            return node
        self.shared.changed = True
        if isinstance(target, gast.Attribute):
            key = f"attr:{target.attr}"
            self.shared.sites[("attr", target.attr, "value")] = 1
            call = gast.Call(func=_runtime("attr_value"), args=[
                _load(target.value), _const(target.attr), value, _const(op), _const(key)],
                keywords=[])
        else:
            receiver = target.value
            key = self._key(receiver, "content")
            if key is not None:
                self.shared.consumed.add(id(receiver))
            call = gast.Call(func=_runtime("item_value"), args=[
                _load(receiver), _load(target.slice), value, _const(op), _const(key)],
                keywords=[])
        return self._assign(node, target, _at(call, node))

    def _rebind(self, target: Any, value: Any, op: str | None) -> Any:
        """``rebind(lambda: name, value, op)``; ``name = name op e`` as ``name op= e``
        made without the in-place form."""
        name = target.id
        if op is None and isinstance(value, gast.BinOp) and type(value.op) in _OPS \
                and isinstance(value.left, gast.Name) and value.left.id == name:
            self.shared.consumed.add(id(value.left))
            value, op = value.right, _OPS[type(value.op)]
        self.shared.changed = True
        self.shared.sites[("name", name, "value")] = 1
        get = gast.Lambda(args=gast.arguments(args=[], posonlyargs=[], vararg=None,
                                              kwonlyargs=[], kw_defaults=[], kwarg=None,
                                              defaults=[]), body=_name(name))
        return gast.Call(func=_runtime("rebind"), args=[get, value, _const(op)], keywords=[])

    def _assign(self, node: Any, target: Any, value: Any) -> Any:
        new = gast.Assign(targets=[target], value=value, type_comment=None)
        if isinstance(target, (gast.Attribute, gast.Subscript)):
            target.ctx = gast.Store()
        return _at(gast.copy_location(new, node), node)

    def _refused(self, node: Any, targets: list, how: str) -> Any:
        """``unreplayable(name, how)`` before ``node`` when it binds a declared name
        other than alone."""
        names = [n.id for t in targets for n in walk(t)
                 if isinstance(n, gast.Name) and n.id in self.declared]
        if not names:
            return node
        self.shared.changed = True
        check = gast.Expr(value=gast.Call(func=_runtime("unreplayable"), args=[
            _const(names[0]), _const(how)], keywords=[]))
        where = gast.Pass()  # (the statement's first line)
        where.lineno = where.end_lineno = node.lineno
        where.col_offset, where.end_col_offset = node.col_offset, node.col_offset + 1
        return [_at(check, where), node]

    def visit_For(self, node: Any) -> Any:
        self.generic_visit(node)
        return self._refused(node, [node.target], "this for loop") if _names_in(
            node.target) & self.declared else node

    visit_AsyncFor = visit_For

    def visit_With(self, node: Any) -> Any:
        self.generic_visit(node)
        targets = [i.optional_vars for i in node.items if i.optional_vars is not None]
        return self._refused(node, targets, "this with statement") if any(
            _names_in(t) & self.declared for t in targets) else node

    visit_AsyncWith = visit_With


def _has_call(expr: Any) -> bool:
    return any(isinstance(n, gast.Call) for n in walk(expr))


def _dotted(f: Any) -> list:
    """The parts of a dotted name ``np.add.at``, last first."""
    parts = []
    while isinstance(f, gast.Attribute):
        parts.append(f.attr)
        f = f.value
    return parts + [f.id] if isinstance(f, gast.Name) else parts


def _names_in(target: Any) -> set:
    return {n.id for n in walk(target) if isinstance(n, gast.Name)}


def _root(expr: Any) -> Any:
    """The name a chain of attributes, items and method calls starts at."""
    while True:
        if isinstance(expr, (gast.Attribute, gast.Subscript)):
            expr = expr.value
        elif isinstance(expr, gast.Call) and isinstance(expr.func, gast.Attribute):
            expr = expr.func.value
        else:
            return expr


def _repeatable(target: Any) -> bool:
    """A target whose parts can be read twice with no effect (no call inside)."""
    return not any(isinstance(n, (gast.Call, gast.NamedExpr, gast.Await, gast.Yield,
                                  gast.YieldFrom)) for n in walk(target))


def _load(expr: Any) -> Any:
    """A copy of ``expr`` that reads it (the target's parts, read again)."""
    new = copy.deepcopy(expr)
    for n in walk(new):
        if hasattr(n, "ctx") and not isinstance(n.ctx, gast.Load):
            n.ctx = gast.Load()
    return new


def _const(value: Any) -> Any:
    return gast.Constant(value=value, kind=None)


__all__ = ["UPDATES", "rewrite_state", "updates_of"]
