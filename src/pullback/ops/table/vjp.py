"""Applying an op's VJP rules: the one function the eager interpreter, the replay of
eager graphs and the compiler's adjoint pass all call."""

from __future__ import annotations

from typing import Any, Callable, Iterator

from ..elementwise import cast, real
from ..shape import sum_to
from .registry import OpDef
from .results import pack


def apply_vjp(op: OpDef, g: Any, out: Any, inputs: tuple, params: dict,
              needs: Any) -> Iterator[tuple[int, Any]]:
    """``(i, gradient of input i)`` for each input of ``op`` that ``needs[i]`` and has a
    rule giving one, in input order, given the gradient ``g`` of its output; each fitted
    to its input's shape and dtype. ``inputs`` are what the rules read: arrays, Tensors
    or IR values, or ``Meta``s for those a rule reads only the shape of.

    A generator, so that the adjoint pass can add each gradient into its sum before the
    next rule runs (the generated code then frees buffers as early as it can). For an op
    with several outputs ``g`` and ``out`` are tuples (``complete`` makes ``g``)."""
    if op.variadic:  # one rule for every position of the list
        rule = op.vjp[0]
        for i in range(len(inputs)):
            if needs[i]:
                gi = rule(g, out, inputs, i, **params)
                if gi is not None:
                    yield i, fit_to(gi, inputs[i])
        return
    for i, rule in enumerate(op.vjp):
        if needs[i] and rule is not None:
            gi = rule(g, out, *inputs, **params)
            if gi is not None:
                yield i, fit_to(gi, inputs[i])


def vjp_per_input(op: OpDef, g: Any, out: Any, inputs: tuple, params: dict,
                  needs: Any) -> list:
    """``apply_vjp`` as a list with one entry per input (None where no gradient)."""
    result = [None] * len(needs)
    for i, gi in apply_vjp(op, g, out, inputs, params, needs):
        result[i] = gi
    return result


def complete(op: OpDef, grads: list, outs: Any, zeros: Callable) -> Any:
    """The gradients of an op's outputs as its rules take them (``grads``: one per
    output, None where none arrived): zeros (``zeros(shape, dtype)``) for a float
    output no gradient reached, None for an integer one (which never gets one)."""
    filled = []
    for g, o in zip(grads, outs):
        if g is None:
            d = o.dtype
            d = getattr(d, "np", d)  # a Tensor's dtype wraps numpy's
            g = zeros(tuple(o.shape), d) if d.kind in "fc" else None
        filled.append(g)
    return pack(op.result, filled)


def fit_to(g: Any, like: Any) -> Any:
    """Reduce a broadcast gradient to the shape of its input and cast it to its dtype
    (``like``: the input, a ``Meta`` of it, or a Python scalar, which takes nothing).
    A rule returns a value of the gradient's kind: a Python number (which could not be
    linear in ``g``) is refused."""
    shape = getattr(like, "shape", None)
    if shape is None:
        return g
    dtype = like.dtype
    dtype = getattr(dtype, "np", dtype)  # a Tensor's dtype wraps numpy's
    g_shape = getattr(g, "shape", None)
    if g_shape is None:
        raise TypeError(f"a VJP rule returned {g!r}, not a value like its gradient; return "
                        "zeros_like(g) for a zero gradient")
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
