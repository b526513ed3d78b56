"""Recording equations: ops applied to IR values append to the active Builder.

The adjoint pass runs the VJP rules on Vars inside a Builder; every op a rule
calls becomes one backward equation, computed for real on the trace's values so
that shapes and dtypes are exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..ops.promotion import promoted
from ..ops.quiet import quietly
from .graph import ACTIVE, Eqn, Var


class Builder:
    """Collects equations; ``src``/``block`` tag the ones emitted next."""

    def __init__(self) -> None:
        self.eqns: list[Eqn] = []
        self.consts: dict[Var, Any] = {}
        self.src: Any = None
        self.block: Any = None
        self._prev: Builder | None = None

    def __enter__(self) -> Builder:
        self._prev = getattr(ACTIVE, "builder", None)
        ACTIVE.builder = self
        return self

    def __exit__(self, *exc: object) -> None:
        ACTIVE.builder = self._prev

    def const(self, value: Any) -> Any:
        """Large constants become named constant Vars; scalars stay inline."""
        if isinstance(value, np.ndarray) and value.ndim > 0:
            v = Var(value.shape, value.dtype, value, name="c")
            self.consts[v] = value
            return v
        return value

    def emit(self, op: Any, args: tuple, params: dict) -> Var:
        values = []
        inputs = []
        for a in args:
            if isinstance(a, Var):
                values.append(a._data)
                inputs.append(a)
            else:
                a = getattr(a, "_data", a)  # a stray Tensor is a constant here
                values.append(a)
                inputs.append(self.const(a))
        if op.promote is not None:
            values = promoted(op, values, params)
        out = np.asarray(quietly(op.forward, *values, **params))
        v = Var(out.shape, out.dtype, out)
        self.eqns.append(Eqn(op, tuple(inputs), v, params, self.src, self.block))
        return v
