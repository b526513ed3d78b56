"""What the distributions share: a namespace object per distribution, the standardised
variable, and a support mask that keeps gradients finite outside the support."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

from ...ops.elementwise import where
from ..special import _float, _scipy_result

LOG_2PI = math.log(2 * math.pi)
INF = math.inf


class Distribution:
    """A scipy.stats distribution as a namespace of functions (``norm.logpdf``...), as
    jax.scipy.stats has them: scipy's parameters, no frozen objects."""

    def __init__(self, name: str, **functions: Callable) -> None:
        self.name = name
        for key, fn in functions.items():
            fn = _scipy_result(fn)  # (a 0-d result as a numpy scalar, as scipy's)
            fn.__name__ = key
            fn.__qualname__ = f"{name}.{key}"
            setattr(self, key, fn)
        self._functions = tuple(functions)

    def __repr__(self) -> str:
        return f"<pullback.scipy.stats.{self.name}: {', '.join(self._functions)}>"

    def __dir__(self) -> list:
        return list(self._functions) + ["name"]


def exp_of(log_fn: Callable) -> Callable:
    """exp(log_fn(...)) with log_fn's signature: a pdf (pmf) from its logpdf (logpmf)."""
    @functools.wraps(log_fn)
    def exp_fn(*args: Any, **kwargs: Any) -> Any:
        return np.exp(log_fn(*args, **kwargs))
    return exp_fn


def standardize(x: Any, loc: Any, scale: Any) -> tuple:
    """(z, scale) with z = (x - loc) / scale, all as floats."""
    scale = _float(scale)
    return (_float(x) - _float(loc)) / scale, scale


def inside(cond: Any, value: Callable, z: Any, safe: float, outside: float) -> Any:
    """``value(z)`` where ``cond``, ``outside`` elsewhere; ``value`` sees ``safe`` in place
    of z outside, so no NaN or inf there reaches a gradient (the double-where form)."""
    return where(cond, value(where(cond, z, safe)), outside)


def log(x: Any) -> Any:
    """np.log without numpy's warnings for 0 and negative values (scipy's -inf, NaN)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


def log_of(p: Any, q: Any) -> Any:
    """log p, computed from whichever of p and q = 1 - p is the smaller (log p, or
    log1p(-q)), each on values safe for it, so that neither tail loses digits."""
    low = p < 0.5
    return where(low, log(where(low, p, 0.5)), np.log1p(-where(low, 0.5, q)))
