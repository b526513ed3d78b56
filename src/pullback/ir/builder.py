"""Recording equations: ops applied to IR values append to the active Builder.

The adjoint pass runs the VJP rules on Vars inside a Builder; every op a rule
calls becomes one backward equation, computed for real on the trace's values so
that shapes and dtypes are exact.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

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
        if _SHAPES_ABOVE.get() is not None:  # (a trace that reads only shapes of values)
            out = squashed(out)
        v = Var(out.shape, out.dtype, out)
        self.eqns.append(Eqn(op, tuple(inputs), v, params, self.src, self.block))
        return v


#: while set, values of at least this many elements are kept as one element, broadcast
_SHAPES_ABOVE: ContextVar = ContextVar("shapes_above", default=None)


@contextmanager
def large_values_as_shapes(size: int) -> Iterator[None]:
    """Inside it, builders and tracers keep a value of ``size`` elements or more as its
    first element broadcast to its shape (no memory): for code that will run on arrays
    that are not numpy's (Dask's), traced on stand-ins whose values nothing reads."""
    token = _SHAPES_ABOVE.set(size)
    try:
        yield
    finally:
        _SHAPES_ABOVE.reset(token)


def squashed(value: Any) -> Any:
    """``value``, or its first element broadcast to its shape when it is large inside
    ``large_values_as_shapes`` (its dtype and shape are the same).

    >>> with large_values_as_shapes(4):
    ...     squashed(np.arange(6.0)).strides, squashed(np.arange(2.0)).strides
    ((0,), (8,))
    """
    limit = _SHAPES_ABOVE.get()
    if limit is None or not isinstance(value, np.ndarray) or value.size < limit \
            or value.strides == (0,) * value.ndim:
        return value
    first = np.array(value.reshape(-1)[0], value.dtype)  # (a copy: not a view of it)
    return np.broadcast_to(first, value.shape)


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
