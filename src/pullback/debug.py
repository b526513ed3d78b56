"""Printing and calling back from inside transformed functions, for code the source
pass cannot read (no source file) or where a call should say so, as ``jax.debug``.

``print(fmt, *args, **kwargs)`` formats with ``str.format`` and prints; ``callback(fn,
*args, **kwargs)`` calls ``fn``. Both run at once outside a trace and, inside
``pb.compile``, ``pb.grad`` & co., on every call of the generated code, with that
call's values (``compiler/effects.py``).

>>> import numpy as np, pullback as pb
>>> f = pb.grad(lambda x: (pb.debug.print("x = {}", x) or (x * x).sum()))
>>> _ = f(np.array([1.0, 2.0]))
x = [1. 2.]
>>> _ = f(np.array([3.0, 4.0]))
x = [3. 4.]
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

from .compiler.effects import callback as _callback


def _formatted(fmt: str, *args: Any, **kwargs: Any) -> None:
    builtins.print(fmt.format(*args, **kwargs))


def print(fmt: str, *args: Any, **kwargs: Any) -> None:  # noqa: A001 - jax.debug's name
    """Print ``fmt.format(*args, **kwargs)`` with this call's values."""
    _callback(_formatted, fmt, *args, **kwargs)


def callback(fn: Callable, *args: Any, **kwargs: Any) -> None:
    """Call ``fn(*args, **kwargs)`` for its effect, with this call's values."""
    _callback(fn, *args, **kwargs)


__all__ = ["callback", "print"]
