"""The functional transforms this thread runs the user's function under, and the
conversions (``float(t)``, ``t.item()``...) they refuse because a gradient would be lost.
"""

from __future__ import annotations

import threading
from typing import Any

from . import record
from .grad_mode import STATE


class _Transforms(threading.local):
    """The functional transforms (``pb.grad``, ``pb.vjp``, ``pb.jvp``...) this thread
    runs the user's function under, innermost last, by name; None stands for code
    allowed to convert values (an effect's formatting, a custom Function)."""

    def __init__(self) -> None:
        self.stack: list = []


TRANSFORMS = _Transforms()
#: scopes open now (any thread): conversions read TRANSFORMS only while it is not 0
TRANSFORMING = 0
_LOCK = threading.Lock()
#: the compiler's (compiler/conversions.py): ``(tensor, how, transform)`` -> the error
#: that names the user's line, or None where the value's use loses no gradient
conversion_error: Any = None


class transform_scope:
    """Inside it, this thread runs the user's function for the functional transform
    ``name`` (None: conversions are allowed again, as an effect's formatting needs):
    ``check_conversion`` refuses the conversions that would drop a gradient."""

    def __init__(self, name: str | None) -> None:
        self.name = name

    def __enter__(self) -> None:
        global TRANSFORMING
        TRANSFORMS.stack.append(self.name)
        with _LOCK:
            TRANSFORMING += 1

    def __exit__(self, *exc: object) -> None:
        global TRANSFORMING
        with _LOCK:
            TRANSFORMING -= 1
        TRANSFORMS.stack.pop()


def check_conversion(t: Any, how: str) -> None:
    """Refuse ``how`` (``float``, ``complex``, ``item``, ``tolist``) of ``t`` inside a
    functional transform when ``t`` carries a gradient (requires grad with grad mode on,
    or has a forward tangent): the Python value would be a constant to the transform,
    its gradient silently lost. Outside one, a trace (``pb.compile``'s) is told of the
    cut (``transform`` None), which its variant refuses to run inside one. Callers test
    ``TRANSFORMING or TRACING`` first (the hot path)."""
    stack = TRANSFORMS.stack
    inside = bool(stack) and stack[-1] is not None
    if not (inside or record.TRACING):
        return
    if (t._requires_grad and STATE.grad_enabled) or t._fw_tangent is not None:
        outer = next(name for name in stack if name is not None) if inside else None
        error = conversion_error(t, how, outer)  # (None: its use cuts nothing)
        if error is not None:
            raise error
