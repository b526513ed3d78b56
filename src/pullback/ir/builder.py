"""Recording equations: ops applied to IR values append to the active Builder.

The adjoint pass runs the VJP rules on Vars inside a Builder; every op a rule
calls becomes one backward equation, computed for real on the trace's values so
that shapes and dtypes are exact.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..ops import OPS
from ..ops.table.promotion import promoted
from ..ops.table.quiet import quietly
from ..ops.table.results import pack
from . import naming
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
            v = Var(value.shape, value.dtype, value, name=naming.CONSTANT)
            self.consts[v] = value
            return v
        return value

    def emit(self, op: Any, args: tuple, params: dict) -> Any:
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
        shapes = _SHAPES.get(op.name)
        out = quietly(op.forward if shapes is None else shapes, *values, **params)
        if op.multi:  # one Var per output, returned as the op returns its result
            vs = tuple(Var(o.shape, o.dtype, o) for o in map(np.asarray, out))
            self.eqns.append(Eqn(op, tuple(inputs), vs, params, self.src, self.block))
            return pack(op.result, vs)
        out = np.asarray(out)
        v = Var(out.shape, out.dtype, out)
        self.eqns.append(Eqn(op, tuple(inputs), v, params, self.src, self.block))
        return v


#: op name -> a function of the op's arguments giving zeros of its outputs' shapes and
#: dtypes: a builder records such an op without running it (a loop over many steps,
#: whose values only shapes are read of while building a graph; ``shapes_only``)
_SHAPES: dict = {}


def shapes_only(name: str, zeros: Any) -> None:
    """Builders record op ``name`` with ``zeros(*args, **params)`` as its values."""
    _SHAPES[name] = zeros


def emit_zeros(shape: tuple, dtype: Any, known: bool = True) -> Var:
    """A zero gradient for an output of a multi-output op that no gradient reached, as
    an equation of the active builder (``np.zeros(shape, dtype)`` in generated code);
    ``known``: rules may take it for a zero (``is_zeros``), not only compute with it."""
    v = ACTIVE.builder.emit(OPS["zeros"], (), {"shape": shape, "dtype": np.dtype(dtype)})
    if known:
        _ZEROS[id(v)] = v
    return v


_ZEROS: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> a zeros Var


def is_zeros(v: Any) -> bool:
    """Whether ``v`` is a gradient ``emit_zeros`` made: a rule may skip work on it."""
    return isinstance(v, Var) and _ZEROS.get(id(v)) is v
