"""What a function does with its names, read from its node: the names it returns,
writes into (``x[...] = v``, ``x += v``, ``x.fill(v)``, ``np.put(x, ...)``, ``out=x``)
and hands to calls that may write into them.
"""

from __future__ import annotations

from typing import Any

import gast

from .nodes import walk
from .scope import Scope, is_numpy


def returned_names(node: Any) -> set:
    """The names the function returns (alone or in a tuple): its caller may write into
    them."""
    names = set()
    for n in walk(node):
        if isinstance(n, gast.Return) and n.value is not None:
            values = n.value.elts if isinstance(n.value, gast.Tuple) else [n.value]
            names.update(v.id for v in values if isinstance(v, gast.Name))
    return names


#: numpy's functions that write into their first argument (``numpy_inplace.py``), and
#: the ndarray methods that write into the array (``x.fill(v)``, ``x.put(i, v)``)
WRITING_FUNCTIONS = frozenset({"copyto", "fill_diagonal", "put", "put_along_axis", "putmask",
                               "place", "at"})
WRITING_METHODS = frozenset({"fill", "put"})


def _written_by_call(n: Any) -> list:
    """What a call writes into: the first argument of ``np.put(a, ...)``,
    ``np.add.at(a, ...)`` & co. (known by name: a name that is not numpy's makes at
    most a needless copy), ``x`` of ``x.fill(v)``, and ``out=`` arrays."""
    f = n.func
    name = f.attr if isinstance(f, gast.Attribute) else f.id if isinstance(f, gast.Name) \
        else None
    targets = [k.value for k in n.keywords if k.arg == "out"]
    if isinstance(f, gast.Attribute) and f.attr in WRITING_METHODS:
        targets.append(f.value)
    if name in WRITING_FUNCTIONS and n.args:
        targets.append(n.args[0])
    if name == "nan_to_num" and any(k.arg == "copy" for k in n.keywords) and n.args:
        targets.append(n.args[0])
    return [e for t in targets for e in (t.elts if isinstance(t, gast.Tuple) else [t])]


def written_names(node: Any) -> set:
    """The names the function writes into: ``x[...] = ...``, ``x[...] += ...``,
    ``x.attr[...] = ...``, ``x += ...``, and the calls of ``_written_by_call``
    (``x.fill(...)``, ``np.add.at(x, ...)``, ``out=x``...), and the names whose arrays
    those may be views of (``aliases_of``)."""
    written = set()
    for n in walk(node):
        targets = [n.value] if isinstance(n, gast.Subscript) and isinstance(n.ctx, gast.Store) \
            else [n.target] if isinstance(n, gast.AugAssign) else _written_by_call(n) \
            if isinstance(n, gast.Call) else []
        for target in targets:
            while isinstance(target, (gast.Subscript, gast.Attribute)):
                target = target.value
            if isinstance(target, gast.Name):
                written.add(target.id)
    if not written:
        return written
    aliases = aliases_of(node)  # (row = out[t]; row[:] = v writes into out too)
    return written | {a for name in written for a in aliases.get(name, ())}


def passed_names(node: Any, scope: Scope) -> set:
    """The names the function hands to calls other than numpy's (which may write)."""
    passed = set()
    for n in walk(node):
        if isinstance(n, gast.Call) and scope.routed(n.func) \
                and not is_numpy(scope.resolve(n.func)):
            args = n.args + [k.value for k in n.keywords]
            passed.update(a.id for a in args if isinstance(a, gast.Name))
    return passed


#: methods and numpy functions whose result may share its (first) operand's memory
VIEWS = frozenset({"reshape", "view", "transpose", "ravel", "squeeze", "swapaxes",
                   "moveaxis", "expand_dims", "broadcast_to", "asarray", "asanyarray",
                   "atleast_1d", "atleast_2d", "atleast_3d", "diagonal", "real", "imag",
                   "T", "mT", "flat", "conj"})


def may_alias(expr: Any, aliases: dict) -> set:
    """The names whose arrays ``expr``'s value may share memory with: a name, an item or
    slice of one, a view made of one (``VIEWS``); arithmetic and other calls make new
    arrays."""
    while True:
        if isinstance(expr, (gast.Subscript, gast.Starred)):
            expr = expr.value
        elif isinstance(expr, gast.Attribute):
            expr = expr.value
        elif isinstance(expr, gast.Call) and isinstance(expr.func, gast.Attribute) \
                and expr.func.attr in VIEWS:
            is_method = not (isinstance(expr.func.value, gast.Name)
                             and expr.func.value.id in ("np", "numpy", "jnp"))
            if not is_method and not expr.args:
                return set()
            expr = expr.func.value if is_method else expr.args[0]
        elif isinstance(expr, gast.IfExp):
            return may_alias(expr.body, aliases) | may_alias(expr.orelse, aliases)
        elif isinstance(expr, gast.Name):
            return {expr.id} | aliases.get(expr.id, set())
        else:
            return set()


def aliases_of(fn: Any) -> dict:
    """Name -> the names whose arrays it may share memory with, from the function's
    assignments ``a = expr`` (to a fixed point: ``a = R[i]; b = a.T``) and loops
    ``for row in R`` (``enumerate`` and ``zip`` of names too)."""
    pairs = [pair for n in walk(fn) if isinstance(n, gast.Assign)
             for t in n.targets for pair in _bound(t, n.value)]
    pairs += [pair for n in walk(fn) if isinstance(n, gast.For)
              for pair in _iterated(n.target, n.iter)]
    aliases: dict = {}
    changed = True
    while changed:
        changed = False
        for name, value in pairs:
            more = may_alias(value, aliases) - {name} - aliases.get(name, set())
            if more:
                aliases.setdefault(name, set()).update(more)
                changed = True
    return aliases


def _bound(target: Any, value: Any) -> list:
    """``(name, expression)`` for each name ``target = value`` binds (``a, b = R[0], x``
    pairwise; ``a, b = R`` binds each to what ``R`` may share)."""
    if isinstance(target, gast.Name):
        return [(target.id, value)]
    if not isinstance(target, (gast.Tuple, gast.List)):
        return []
    if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts):
        return [p for t, v in zip(target.elts, value.elts) for p in _bound(t, v)]
    return [p for t in target.elts for p in _bound(t, value)]


def _iterated(target: Any, iterable: Any) -> list:
    """``(name, expression)`` for each name ``for target in iterable`` binds to an item
    of an array: ``row`` of ``for row in R``, ``a``, ``b`` of ``zip(A, B)``, ``row`` of
    ``for i, row in enumerate(R)``."""
    f = iterable.func if isinstance(iterable, gast.Call) else None
    if not (isinstance(f, gast.Name) and f.id in ("enumerate", "zip")):
        return _bound(target, iterable)
    args = iterable.args[:1] if f.id == "enumerate" else iterable.args
    if not isinstance(target, (gast.Tuple, gast.List)):
        return []
    elts = target.elts[1:] if f.id == "enumerate" else target.elts
    if f.id == "enumerate" and len(elts) == 1:  # (for i, (a, b) in enumerate(zip(A, B)))
        return _iterated(elts[0], args[0]) if args else []
    return [p for t, a in zip(elts, args) for p in _bound(t, a)] \
        if len(elts) == len(args) else []
