"""Small tools on ``gast`` nodes shared by the source pass's rewrites: a fast walk, a
node's children, new nodes placed at an old one's location, names, and the calls of the
runtime's helpers (``__pb_rt__.helper``) that rewritten code makes.
"""

from __future__ import annotations

from typing import Any

import gast

#: the name rewritten code calls its helpers by (a free variable of the new code;
#: the trailing underscores keep methods from mangling it)
RUNTIME_NAME = "__pb_rt__"


def walk(node: Any) -> Any:
    """``gast.walk``: breadth first, a node's children taken when it is reached (before
    it is yielded), without its two generators per node (the pass walks its trees
    many times: half its time was there)."""
    todo = [node]
    for n in todo:  # (a list grown while it is iterated: its new items come too)
        todo.extend(children(n))
        yield n


def children(node: Any) -> list:
    """``gast.iter_child_nodes`` as a list."""
    found = []
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, gast.AST):
            found.append(value)
        elif isinstance(value, list):
            found.extend([v for v in value if isinstance(v, gast.AST)])
    return found


def _at(new: Any, where: Any) -> Any:
    """``new`` and its parts without a location placed at ``where``'s."""
    for n in walk(new):
        for field in ("lineno", "col_offset", "end_lineno", "end_col_offset"):
            if getattr(n, field, None) is None and field in n._attributes:
                setattr(n, field, getattr(where, field))
    return new


def _is_runtime(f: Any) -> bool:
    return isinstance(f, gast.Attribute) and isinstance(f.value, gast.Name) \
        and f.value.id == RUNTIME_NAME


def _runtime(helper: str) -> Any:
    return gast.Attribute(value=_name(RUNTIME_NAME), attr=helper, ctx=gast.Load())


def _name(name: str, ctx: Any = None) -> Any:
    return gast.Name(id=name, ctx=ctx or gast.Load(), annotation=None, type_comment=None)
