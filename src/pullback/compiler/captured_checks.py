"""What the captured-value walk (``captured.py``) makes: ``Capture``, one guarded value
and where the code reads it, and ``CapturedGuards``, the generated check of them all;
``same_scalar``, the test a number's guard runs.
"""

from __future__ import annotations

import linecache
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .user_lines import SourceLine


@dataclass
class Capture:
    """One guarded captured value: how the user's code knows it, and where it reads it."""

    label: str  # "global W", "self.W", "closure cell lam", "partial keyword lam"...
    where: tuple | None  # (code object, line) of a read, for messages
    quiet: bool = False  # a library module's name (``np``): guarded, not listed

    def describe(self) -> str:
        at = ""
        if self.where is not None:
            code, line = self.where
            src = SourceLine(code.co_filename, line, code.co_name,
                             linecache.getline(code.co_filename, line).strip())
            at = f" (read at {src} ({src.text}))" if src.text else f" (read at {src})"
        return f"that {self.label} is unchanged since it was traced{at}"


class CapturedGuards:
    """``check(args)``: whether every captured value is the one the trace saw."""

    def __init__(self, captures: list, check: Callable, first: Callable, source: str) -> None:
        self.captures = captures
        self.check = check
        self._first = first  # the index of the first capture whose test fails, or None
        self.source = source  # of both (names only: values are bound, never written)

    def first_failure(self, args: tuple) -> Capture | None:
        """The first capture whose guard fails on ``args`` (None: they all hold now)."""
        k = self._first(args)
        return None if k is None else self.captures[k]

    def describe(self) -> list:
        """What the guards check, for ``pb.compiler.inspect`` (not the names bound to
        library modules, guarded too: ``np`` rebound would retrace)."""
        return [c.describe() for c in self.captures if not c.quiet]


def same_scalar(value: Any, expected: Any) -> bool:
    """A number (str, None, dtype) guard: the same type and value; NaN is NaN, and a
    float zero keeps its sign (``1 / x`` tells them apart)."""
    if type(value) is not type(expected):
        return False
    try:
        if value == expected:
            if isinstance(value, (float, np.floating)):
                return math.copysign(1.0, value) == math.copysign(1.0, expected)
            return True
        return value != value and expected != expected
    except Exception:  # an array-like comparison: not the same
        return False
