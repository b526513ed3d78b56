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
    (``x.fill(...)``, ``np.add.at(x, ...)``, ``out=x``...)."""
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
    return written


def passed_names(node: Any, scope: Scope) -> set:
    """The names the function hands to calls other than numpy's (which may write)."""
    passed = set()
    for n in walk(node):
        if isinstance(n, gast.Call) and scope.routed(n.func) \
                and not is_numpy(scope.resolve(n.func)):
            args = n.args + [k.value for k in n.keywords]
            passed.update(a.id for a in args if isinstance(a, gast.Name))
    return passed
