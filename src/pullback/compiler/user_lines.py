"""Where in the user's code a trace is: the frame and source line each equation comes
from, the guards that name them, and the errors a trace raises.
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..ir import Var
from ..user_code import is_user_file


class TraceError(Exception):
    """The function cannot be compiled; the message names the function and line."""


@dataclass(frozen=True)
class SourceLine:
    filename: str
    lineno: int
    function: str
    text: str

    def __str__(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}"


@dataclass
class Guard:
    """A traced value that became a Python value: it must be the same next time."""

    var: Var
    how: str
    expected: Any
    src: SourceLine | None

    def describe(self) -> str:
        where = f" at {self.src} ({self.src.text})" if self.src else ""
        return f"{self.how}() of a traced value was {_brief(self.expected)}{where}"


class StandInRead(Exception):
    """A trace read a value it holds only a stand-in of (``Tracer.stood_in``): it is
    made again on the real values (``trace_call``)."""


def _brief(value: Any) -> str:
    """A guard's value as a message shows it: small values whole, arrays by shape."""
    if isinstance(value, np.ndarray) and value.size > 4:
        return f"an array of shape {value.shape} ({value.dtype})"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def user_frame() -> Any:
    """The innermost frame that is not pullback's own code (nor code it generated,
    such as the op bindings, whose file names start with ``<pullback``)."""
    f = sys._getframe(1)
    while f is not None and not is_user_file(f.f_code.co_filename):
        f = f.f_back
    return f


_LINES: dict[tuple, SourceLine] = {}


def source_of(frame: Any) -> SourceLine | None:
    if frame is None:
        return None
    code = frame.f_code
    key = (code, frame.f_lineno)
    line = _LINES.get(key)
    if line is None:
        if len(_LINES) > 100_000:
            _LINES.clear()
        text = linecache.getline(code.co_filename, frame.f_lineno).strip()
        line = _LINES[key] = SourceLine(code.co_filename, frame.f_lineno, code.co_name, text)
    return line


def fname(fn: Callable) -> str:
    return getattr(fn, "__qualname__", getattr(fn, "__name__", repr(fn)))


def def_line(fn: Callable) -> str:
    code = getattr(fn, "__code__", None)
    if code is None:
        return fname(fn)
    return f"{fname(fn)} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
