"""Why a loop or ``if`` stays as written (``loops.py``): its body could do what a
function of its values cannot (``refusal``: ``return``, ``yield``, another ``break``,
``global`` names, ``try``, item or attribute writes, changing methods and calls with an
effect, definitions, ``super()``), or a function of the user's outside it reads a name
it assigns (``captured``). The reasons are the words ``pb.compiler.inspect`` shows.
"""

from __future__ import annotations

from typing import Any

import gast

from ..mutations import MUTATORS
from .item_writes import SCOPES, walk_scope
from .loop_names import _PURE_HELPERS, PREFIX, _allowed, _assigned, _effect_text, _loads
from .name_uses import _written_by_call, aliases_of
from .nodes import walk
from .scope import Scope

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
MIDS = "the part after its break reads a value not assigned on every path before it"
_REFUSED = (gast.Break, gast.Continue, gast.Return, gast.Yield, gast.YieldFrom, gast.Await,
            gast.Global, gast.Nonlocal, gast.Delete, gast.NamedExpr, gast.Import,
            gast.ImportFrom, gast.AsyncFor, gast.AsyncWith, gast.Try, gast.Match)




def refusal(body: list, scope: Scope, declared: set) -> str:
    """Why ``body`` cannot be a function of the values it carries ("": it can)."""
    declared = _assigned(body) & declared
    if declared:
        return f"it assigns {min(declared)}, declared global or nonlocal"
    why = _view_changed_in_place(body)
    if why:
        return why
    for stmt in body:
        for n in walk_scope(stmt):
            if isinstance(n, _REFUSED):
                return _REFUSED_WHY.get(type(n), f"it holds a {type(n).__name__.lower()} "
                                                 "statement")
            if getattr(n, "pb_lazy", False):  # (an operand of and/or: run in the body)
                why = refusal([gast.Expr(value=n.body)], scope, declared)
                if why:
                    return why
            if isinstance(n, SCOPES) and not _allowed(n):
                return f"it defines a {type(n).__name__.lower()}"
            if isinstance(n, (gast.Subscript, gast.Attribute)) \
                    and not isinstance(n.ctx, gast.Load):
                what = "an attribute" if isinstance(n, gast.Attribute) else "an item"
                return getattr(n, "pb_view", "") or \
                    f"it writes {what} it cannot write functionally (line {n.lineno})"
            if isinstance(n, gast.Call) and not _pure_call(n, scope):
                return f"{_effect_text(n)} (line {n.lineno})"
    return ""

def _view_changed_in_place(body: list) -> str:
    """Why not, when the body changes in place (``row += v``) a name it binds to a view
    of another array (``row = out[t]``): the write into that array would be lost in a
    function of the loop's values ("": it changes none)."""
    aliases = aliases_of(gast.Module(body=body, type_ignores=[]))
    for stmt in body:
        for n in walk_scope(stmt):
            if isinstance(n, gast.AugAssign) and isinstance(n.target, gast.Name) \
                    and aliases.get(n.target.id):
                return f"it changes {n.target.id}, a view of " \
                       f"{min(aliases[n.target.id])}, in place (line {n.lineno})"
    return ""


def _pure_call(n: Any, scope: Scope) -> bool:
    f = n.func
    if isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
            and f.value.id == "__pb_rt__":
        return f.attr in _PURE_HELPERS
    if scope.maybe_effect(f) or _written_by_call(n) \
            or isinstance(f, gast.Name) and f.id in _FRAME_READERS:
        return False
    if isinstance(f, gast.Attribute) and (f.attr in MUTATORS or (
            f.attr.endswith("_") and not f.attr.startswith("_"))):
        return False
    return True

def captured(fn: Any, stmt: Any, body: list) -> str:
    """Why not, when a function or comprehension of the user's outside ``stmt`` reads a
    name the body assigns: it may be called while the loop runs, and would not see
    the body's values once they are the new function's locals ("": none does)."""
    names = _assigned(body)
    inside = {id(n) for n in walk(stmt)}
    for scope in walk(fn):
        if scope is fn or id(scope) in inside or not isinstance(scope, SCOPES) \
                or isinstance(scope, gast.FunctionDef) and scope.name.startswith(PREFIX) \
                or getattr(scope, "pb_getter", False) or getattr(scope, "pb_lazy", False):
            continue
        read = _loads([scope]) & names
        if read:
            return f"a function or comprehension outside it reads {min(read)}, " \
                   "which it assigns"
    return ""
