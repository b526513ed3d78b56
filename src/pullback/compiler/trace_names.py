"""The names a trace gives its values: the user's own (the locals an op's result is
bound to, the name a line assigns), a captured tensor's (its closure or global name,
or a compiled module's dotted parameter name).
"""

from __future__ import annotations

import re
import threading
from contextlib import contextmanager
from typing import Iterator

from ..ir import naming
from ..tensor import Tensor
from .user_lines import user_frame

_ASSIGN = re.compile(r"^([A-Za-z_]\w*)\s*(?::[^=]+)?=(?!=)")


def name_assignments(eqns: list) -> None:
    """``loss = f(z)``: the last op of that line made ``loss`` (for values no later
    op saw in the caller's locals, such as the returned one)."""
    last: dict = {}
    for e in eqns:
        if e.src is not None:
            last[e.src] = e
    for src, e in last.items():
        m = _ASSIGN.match(src.text)
        if m and e.out is not None and e.out.name is None:
            e.out.name = m.group(1)


class _Names(threading.local):
    known: dict | None = None  # id of a tensor -> the name to trace it by, if captured


_NAMES = _Names()


@contextmanager
def capture_names(names: dict) -> Iterator[None]:
    """Inside: a tensor a trace captures whose id is in ``names`` gets that name (a
    compiled module's parameters are named after their dotted names)."""
    old, _NAMES.known = _NAMES.known, names
    try:
        yield
    finally:
        _NAMES.known = old


def outer_name(t: Tensor) -> str:
    """The name the user's code knows a captured tensor by (closure or global)."""
    known = _NAMES.known
    if known is not None and id(t) in known:
        return known[id(t)]
    frame = user_frame()
    if frame is not None:
        for scope in (frame.f_locals, frame.f_globals):
            for name, value in scope.items():
                if value is t:
                    return name
    return naming.CAPTURED
