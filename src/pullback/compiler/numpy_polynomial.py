"""numpy.polynomial on values pullback traces: its evaluation functions (``chebval(x,
c)``...) and its classes' ``Polynomial(c)(x)``, with traced coefficients or points.

numpy converts the coefficients and the points with ``np.array`` and does not dispatch
these functions to Tensors, so a gradient would be lost. Inside a front door
(``pb.grad``, ``pb.compile``...) the source pass routes such calls here
(``register_replacements``): an evaluation function on traced values is
``ops/numpy_series.py``'s; a class given traced coefficients makes a ``TracedSeries``,
which evaluates as the class does (the point mapped from the domain to the window,
then the series); a numpy object called at traced points evaluates its coefficients
there. Outside a front door, the refusal of a Tensor that requires grad says so.

>>> import numpy as np, pullback as pb
>>> def f(c):
...     return np.polynomial.Chebyshev(c, domain=[0, 4])(np.array([1.0, 3.0])).sum()
>>> pb.grad(f)(np.array([1.0, 2.0, 3.0]))
array([ 2.,  0., -1.])
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from numpy.polynomial import polyutils
from numpy.polynomial._polybase import ABCPolyBase

from ..ops.numpy_series import EVALUATORS
from ..tensor import ARRAY_REFUSED
from .source.scope import register_replacements


def _evaluate(kind: type, coef: Any, domain: Any, window: Any, arg: Any) -> Any:
    """``kind(coef, domain, window)(arg)`` as numpy's ``__call__``: ``arg`` mapped from
    the domain to the window, then the series there."""
    off, scl = polyutils.mapparms(domain, window)
    arg = np.asarray(arg) if isinstance(arg, (list, tuple)) else arg
    return EVALUATORS[kind._val](off + scl * arg, coef)


class TracedSeries:
    """An object of numpy.polynomial's class ``kind`` (``Polynomial``, ``Chebyshev``...)
    whose coefficients are traced: it evaluates (``p(x)``) and has ``coef``, ``domain``,
    ``window`` and ``symbol``; numpy's other methods are refused by name."""

    def __init__(self, kind: type, coef: Any, domain: Any = None, window: Any = None,
                 symbol: str = "x") -> None:
        self.kind, self.coef, self.symbol = kind, coef, symbol
        self.domain = np.array(kind.domain if domain is None else domain)
        self.window = np.array(kind.window if window is None else window)
        if np.ndim(coef) != 1 or self.domain.shape != (2,) or self.window.shape != (2,):
            kind(np.zeros(np.shape(coef)), self.domain, self.window)  # numpy's errors
            raise ValueError("Coefficient array is not 1-d")

    def __call__(self, arg: Any) -> Any:
        return _evaluate(self.kind, self.coef, self.domain, self.window, arg)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"{self.kind.__name__}.{name} with coefficients pullback traces is not "
            "supported (numpy's class converts them with np.array, losing the gradient): "
            "only evaluation, p(x), is")


def _find(f: Any) -> Any:
    """pullback's version of ``f`` (numpy.polynomial's) on traced values, or None."""
    if isinstance(f, type):
        if issubclass(f, ABCPolyBase) and f._val in EVALUATORS:
            return lambda coef, domain=None, window=None, symbol="x": TracedSeries(
                f, coef, domain, window, symbol)
        return None
    if isinstance(f, ABCPolyBase):
        if type(f)._val not in EVALUATORS:
            return None
        return lambda arg: _evaluate(type(f), f.coef, f.domain, f.window, arg)
    try:
        return EVALUATORS.get(f)
    except TypeError:  # (unhashable)
        return None


register_replacements("numpy.polynomial", _find)


def _refusal() -> str:
    """The sentence ``Tensor.__array__`` puts before its refusal when numpy.polynomial
    converts a Tensor outside a front door."""
    frame = sys._getframe(2)
    for _ in range(6):
        if frame is None:
            break
        if frame.f_globals.get("__name__", "").startswith("numpy.polynomial"):
            return ("numpy.polynomial converts its coefficients and points with np.array, "
                    "which would drop the gradient; in a function with source code run by "
                    "pb.grad, pb.compile or another front door, pullback evaluates the "
                    "series itself (chebval, Polynomial(c)(x)...). ")
        frame = frame.f_back
    return ""


ARRAY_REFUSED.append(_refusal)
