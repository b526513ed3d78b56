"""numpy.polynomial's evaluation of a series with traced coefficients or points:
``polyval``, ``chebval``, ``legval``, ``hermval``, ``hermeval`` and ``lagval`` of
``numpy.polynomial``'s modules, composed of existing ops in numpy's steps (Horner's
rule for a power series, Clenshaw's recurrence for the others), with numpy's
``tensor=`` (each coefficient's trailing axes against every point).

numpy converts the coefficients with ``np.array`` and does not dispatch these
functions (nor the classes' ``Polynomial(c)(x)``): the source pass routes calls on
traced values here (``compiler/numpy_polynomial.py``). Called directly:

>>> import numpy as np, pullback as pb
>>> c = pb.tensor([1., 2., 3.], requires_grad=True)
>>> chebval(np.array([0.5, 2.0]), c)
tensor([ 0.5000, 26.0000], dtype=pullback.float64, grad_fn=<AddBackward0>)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre
from numpy.polynomial import polynomial as power

from .elementwise import to_dtype
from .shape import reshape
from .table import args
from .table.registry import is_traced, public


def _prepared(x: Any, c: Any, tensor: bool) -> tuple:
    """numpy's first steps: the coefficients at least 1-d, integers as float64, a list
    of points an array, and with ``tensor`` one axis of length one per axis of ``x``."""
    c = args.value(c)
    c = (reshape(c, (1,)) if np.ndim(c) == 0 else c) if is_traced(c) else np.array(c, ndmin=1)
    if args.np_dtype(c).char in "?bBhHiIlLqQpP":
        c = to_dtype(c, np.float64) if is_traced(c) else c.astype(np.float64)
    if isinstance(x, (tuple, list)):
        x = np.asarray(x)
    if tensor and (isinstance(x, np.ndarray) or is_traced(x)) and np.ndim(x):
        shape = tuple(np.shape(c)) + (1,) * np.ndim(x)
        c = reshape(c, shape) if is_traced(c) else c.reshape(shape)
    return x, c


def polyval(x: Any, c: Any, tensor: bool = True) -> Any:
    """``numpy.polynomial.polynomial.polyval``: Horner's rule."""
    x, c = _prepared(x, c, tensor)
    c0 = c[-1] + x * 0
    for i in range(2, len(c) + 1):
        c0 = c[-i] + c0 * x
    return c0


def _clenshaw(step: Callable, last: Callable) -> Callable:
    """The evaluation of a series by a three-term recurrence: ``step(c1, nd, x)`` gives
    the terms taken from ``c[-i]`` and added to the previous ``c0``; ``last(x)`` the
    factor of the final ``c1``."""
    def value(x: Any, c: Any, tensor: bool = True) -> Any:
        x, c = _prepared(x, c, tensor)
        if len(c) <= 2:
            c0, c1 = c[0], (0 if len(c) == 1 else c[1])
        else:
            nd, c0, c1 = len(c), c[-2], c[-1]
            for i in range(3, len(c) + 1):
                nd -= 1
                sub, add = step(c1, nd, x)
                c0, c1 = c[-i] - sub, c0 + add
        return c0 + c1 * last(x)
    return value


chebval = _clenshaw(lambda c1, nd, x: (c1, c1 * (2 * x)), lambda x: x)
legval = _clenshaw(lambda c1, nd, x: ((c1 * (nd - 1)) / nd, (c1 * x * (2 * nd - 1)) / nd),
                   lambda x: x)
hermval = _clenshaw(lambda c1, nd, x: (c1 * (2 * (nd - 1)), c1 * (x * 2)), lambda x: x * 2)
hermeval = _clenshaw(lambda c1, nd, x: (c1 * (nd - 1), c1 * x), lambda x: x)
lagval = _clenshaw(lambda c1, nd, x: ((c1 * (nd - 1)) / nd, (c1 * ((2 * nd - 1) - x)) / nd),
                   lambda x: 1 - x)

#: numpy's evaluation function -> pullback's
EVALUATORS: dict = {power.polyval: polyval, chebyshev.chebval: chebval,
                    legendre.legval: legval, hermite.hermval: hermval,
                    hermite_e.hermeval: hermeval, laguerre.lagval: lagval}

for _np_fn, _fn in EVALUATORS.items():
    public(f"polynomial.{_np_fn.__name__}", numpy={_np_fn: _fn})(_fn)
