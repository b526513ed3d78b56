"""scipy.special's ufuncs on Tensors: ``scipy.special.gammaln(t)`` runs
``pullback.scipy.special.gammaln`` (through ``Tensor.__array_ufunc__``), so it records
a graph node; a scipy ufunc without a pullback version raises an error naming it
(``scipy.special.jv is not differentiable in pullback yet...``).

scipy is never imported here: the first time a ufunc numpy_interop does not know
arrives, and the program has imported ``scipy.special``, the ufuncs of that module
(``sys.modules["scipy.special"]``) are entered into numpy_interop's tables at once.
"""

from __future__ import annotations

import sys

import numpy as np

from .. import numpy_interop
from . import special

_MODULE = "scipy.special"
_done: set = set()  # ids of the scipy.special modules already entered


def _implementation(name: str):
    """pullback.scipy.special's function for scipy's ufunc ``name``, with the ufunc's
    positional operands (None if there is none)."""
    return getattr(special, name, None) if name in special.__all__ else None


def register(module) -> None:
    """Enter ``module``'s (scipy.special's) ufuncs into numpy_interop's tables."""
    for name in dir(module):
        ufunc = getattr(module, name)
        if not isinstance(ufunc, np.ufunc) or getattr(np, name, None) is ufunc:
            continue
        if getattr(module, ufunc.__name__, None) is ufunc:
            name = ufunc.__name__  # its own name, of its aliases (jv for jn, psi for digamma)
        impl = _implementation(name)
        hint = f"pullback.scipy.special.{name}" if impl is not None else ""
        numpy_interop.FOREIGN[ufunc] = (f"{_MODULE}.{name}", hint)
        if impl is not None:
            numpy_interop.UFUNCS[ufunc] = impl
    _done.add(id(module))


def resolve(ufunc: np.ufunc) -> None:
    """numpy_interop's resolver: enter scipy.special's ufuncs once it is imported."""
    module = sys.modules.get(_MODULE)
    if module is not None and id(module) not in _done:
        register(module)


numpy_interop.RESOLVERS.append(resolve)
