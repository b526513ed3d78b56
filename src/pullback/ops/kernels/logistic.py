"""The logistic sigmoid, numpy only, as generated code calls it (``rt.sigmoid``).

``1 / (1 + exp(-x))`` in torch's order of operations, written in one array: a new one,
or ``out`` (which may be ``x`` itself, as a ufunc's ``out=`` may), so that a sigmoid
of a 1M-element array costs one buffer, not four (its negation, exp, sum, reciprocal).
The result is the same bits as the one-line expression.

>>> import numpy as np
>>> x = np.array([-1.0, 0.0, 2.0], np.float32)
>>> sigmoid(x)
array([0.2689414, 0.5      , 0.880797 ], dtype=float32)
>>> y = sigmoid(x, out=x)
>>> y is x and float(x[1])
0.5
"""

from __future__ import annotations

from typing import Any

import numpy as np


def sigmoid(x: Any, out: Any = None) -> Any:
    """1 / (1 + exp(-x)) in one new array, or in ``out`` (which may be x); a 0-d or
    integer input as numpy's own expression takes it."""
    if not (type(x) is np.ndarray and x.ndim and x.dtype.kind in "fc"):
        return np.reciprocal(1 + np.exp(-x), out=out)
    t = np.negative(x, out=out)
    np.exp(t, out=t)
    t += 1
    return np.reciprocal(t, out=t)
