"""Applying an op's VJP rules: the one function the eager interpreter, the replay of
eager graphs and the compiler's adjoint pass all call."""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from .elementwise import cast, real
from .registry import OpDef
from .shape import expand, sum_to


def apply_vjp(op: OpDef, g: Any, out: Any, inputs: tuple, params: dict,
              needs: Any) -> Iterator[tuple[int, Any]]:
    """``(i, gradient of input i)`` for each input of ``op`` that ``needs[i]`` and has a
    rule giving one, in input order, given the gradient ``g`` of its output; each fitted
    to its input's shape and dtype. ``inputs`` are what the rules read: arrays, Tensors
    or IR values, or ``Meta``s for those a rule reads only the shape of.

    A generator, so that the adjoint pass can add each gradient into its sum before the
    next rule runs (the generated code then frees buffers as early as it can)."""
    for i, rule in enumerate(op.vjp):
        if needs[i] and rule is not None:
            gi = rule(g, out, *inputs, **params)
            if gi is not None:
                yield i, fit_to(gi, inputs[i])


def fit_to(g: Any, like: Any) -> Any:
    """Reduce a broadcast gradient to the shape of its input and cast it to its dtype
    (``like``: the input, a ``Meta`` of it, or a Python scalar, which takes nothing).
    A rule's Python-scalar result is filled out to the input's shape."""
    shape = getattr(like, "shape", None)
    if shape is None:
        return g
    dtype = like.dtype
    dtype = getattr(dtype, "np", dtype)  # a Tensor's dtype wraps numpy's
    g_shape = getattr(g, "shape", None)
    if g_shape is None:  # a number
        return expand(np.asarray(g, dtype), shape=tuple(shape))
    if g_shape != shape:
        g = sum_to(g, shape=tuple(shape))
    gd = g.dtype
    gd = getattr(gd, "np", gd)
    if gd != dtype:
        if gd.kind == "c" and dtype.kind != "c":  # a real input takes the real part
            g = real(g)
            gd = g.dtype
            if getattr(gd, "np", gd) == dtype:
                return g
        g = cast(g, dtype=dtype)
    return g
