"""Which values are traced (require grad, carry a tangent, or were recorded by the
active tracer), in a value, a list, a pytree or a callback's closure; and the check
that refuses traced values an ``autograd.Function`` would not track.
"""

from __future__ import annotations

import functools
import types
from typing import Any

import numpy as np

from ...autograd import function, record
from ...numpy_face import to_face
from ...ops.elementwise import clone
from ...pytree import tree_leaves
from ...tensor import Tensor
from ..tracer import active_tracer
from ..user_lines import TraceError
from .entry import ENTRY, entry_tracer


def is_traced(x: Any) -> bool:
    """A Tensor that requires grad, has a tangent (forward mode), or that the active
    tracer recorded."""
    return is_recorded(x) or (isinstance(x, Tensor) and x._fw_tangent is not None)


def is_recorded(x: Any) -> bool:
    """A Tensor that requires grad or that the active tracer recorded: one a reverse
    derivative may be taken of."""
    if not isinstance(x, Tensor):
        return False
    if x._requires_grad or (x._base is not None and x._base._requires_grad):
        return True
    tracer = entry_tracer()
    return tracer is not None and id(x) in tracer.var_of


def _in_front_door() -> bool:
    return ENTRY.get() is not None or active_tracer() is not None


def check_function_args(cls: type, args: tuple, kwargs: dict) -> None:
    """``cls.apply(*args, **kwargs)`` inside a front door: a traced value inside a list,
    tuple or dict argument, or passed by keyword, is refused. torch's ``apply`` tracks
    only the Tensors passed to it directly (and says nothing of the others: eagerly,
    outside the front doors, pullback does the same); inside ``pb.grad`` its gradient
    would be zero, and ``pb.compile``'s generated code would keep the traced call's
    value."""
    if not _in_front_door():
        return
    where = [(f"argument {i + 1}", a) for i, a in enumerate(args) if not isinstance(a, Tensor)]
    where += [(f"keyword argument {k!r}", v) for k, v in kwargs.items()]
    for name, value in where:
        if any(is_traced(leaf) for leaf in tree_leaves(value)):
            raise TraceError(
                f"{cls.__qualname__}.apply: {name} holds a traced Tensor (one that requires "
                "grad or comes from the transformed function's inputs) inside a "
                f"{type(value).__name__}; an autograd.Function tracks only the Tensors passed "
                "to apply directly, as torch's does, so its gradient would be lost and "
                "compiled code would keep this call's value. Pass each Tensor as an "
                f"argument of its own ({cls.__qualname__}.apply(x, *ws)) and return one "
                "gradient for each from backward.")


function.check_args = check_function_args


def holds_traced(x: Any) -> bool:
    """A (nested) list or tuple with a traced value in it."""
    if isinstance(x, (list, tuple)):
        return any(is_traced(y) or holds_traced(y) for y in x)
    return False


def fresh(value: np.ndarray) -> Tensor:
    """A new numpy-face Tensor holding a copy of ``value`` (numpy made it): inside a
    trace a local value (a ``clone`` of a constant), which in-place writes may change."""
    return to_face(record.apply(clone, (value,), {}))


def data_of(x: Any) -> Any:
    """The numpy value of ``x`` (a Tensor's array, read without a guard)."""
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, (list, tuple)):
        return [data_of(y) for y in x]
    return x


def traced_inside(values: Any) -> bool:
    return any(is_traced(v) or holds_traced(v) for v in values)


def traced_leaf(values: Any) -> bool:
    """A traced value among ``values`` or anywhere in their lists, tuples and dicts
    (odeint's ``args=({"w": [w]},)``)."""
    return any(is_traced(leaf) for leaf in tree_leaves(list(values)))


def closes_over_traced(values: Any, depth: int = 3) -> bool:
    """Whether a function among ``values`` (a callback handed to a library, such as
    odeint's field or quad's integrand) holds a traced value in its closure cells or
    defaults, its bound object's attributes, or (``depth`` levels down) in those of
    the functions it holds there (``lambda x: helper(x)`` with ``helper`` a closure)."""
    for v in values:
        fn = getattr(v, "__func__", v)
        inner: list = []
        if isinstance(fn, functools.partial):
            inner = [*fn.args, *fn.keywords.values(), fn.func]
        elif isinstance(fn, types.FunctionType):
            inner = _cell_values(fn) + list(fn.__defaults__ or ())
            owner = getattr(v, "__self__", None)
            inner += list(getattr(owner, "__dict__", {}).values())
        if traced_leaf(inner) or (depth > 1 and closes_over_traced(
                [c for c in inner if callable(c) and not isinstance(c, type)], depth - 1)):
            return True
    return False


def _cell_values(fn: types.FunctionType) -> list:
    """The values in ``fn``'s closure cells (not the empty ones)."""
    values = []
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # a name not bound yet
            pass
    return values
