"""Applying an op's forward-mode (JVP) rules: the one function the eager forward mode
(``autograd/forward_ad.py``) and the compiler's tangent pass (``transforms/tangent.py``)
both call.

The tangent of an op's output is ``sum_i J_i t_i`` over the inputs that have a tangent.
Each term comes from the cheapest source there is:

1. the op's declared rule for that input (``defop(..., jvp=(...))``);
2. for an elementwise op on real values, its VJP rule with the tangent in place of
   ``g``: the Jacobian is diagonal and real, so it is its own transpose (``add``,
   ``mul``, ``tanh``, ``pow``, ``where``...);
3. otherwise the VJP rules transposed: ``g -> vjp_i(g)`` is linear, so ``J_i t`` is
   the gradient of ``<vjp_i(u), t_i>`` with respect to a dummy cotangent ``u``. The
   caller does that transposition (``derive``), on the values it has, with
   ``transforms/transpose.py: transpose_rules`` (it needs the IR and the adjoint pass,
   layers above this one): the tangent pass on its IR values; eager mode on IR mirrors
   of its Tensors, evaluating the result on the Tensors.

>>> import numpy as np
>>> from pullback.ops import OPS
>>> x, t = np.array([0.5, 1.0]), np.array([1.0, 2.0])
>>> apply_jvp(OPS["tanh"], [t], np.tanh(x), (x,), {}, derive=None)  # (2): no derive
array([0.78644773, 0.83994868])
"""

from __future__ import annotations

from typing import Any, Callable

from ..elementwise import cast, real
from ..shape import expand
from .registry import OpDef


def _kind(x: Any) -> str:
    """numpy's dtype kind of an array, Tensor, IR value or Python number."""
    d = getattr(x, "dtype", None)
    if d is None:
        return "c" if isinstance(x, complex) else "f"
    return getattr(d, "np", d).kind


def _diagonal_real(op: OpDef, out: Any, inputs: tuple, tangents: list) -> bool:
    """Whether the VJP rules themselves give the JVP: elementwise, one output, every
    value real."""
    return (op.elementwise and not op.multi and not op.variadic and _kind(out) == "f"
            and all(_kind(x) != "c" for x in inputs)
            and all(t is None or _kind(t) != "c" for t in tangents))


def apply_jvp(op: OpDef, tangents: list, out: Any, inputs: tuple, params: dict,
              derive: Callable | None) -> Any:
    """The tangent of ``op``'s output given one tangent per input (None: zero), fitted
    to the output's shape and dtype; for an op with several outputs, a list with one
    per output (None for the integer ones). None when no input has a tangent.
    ``derive(op, tangents, out, inputs, params)`` transposes the VJP rules for the
    inputs whose tangent it gets (the others None), with the same result."""
    if not op.differentiable or all(t is None for t in tangents):
        return None
    if not op.multi and _kind(out) not in "fc":  # an integer result has no tangent
        return None
    if op.multi:  # (a region's own rule gives every output's tangent at once)
        rule = _declared(op, 0)
        t = NotImplemented if rule is None else rule(tangents, out, inputs, **params)
        return derive(op, tangents, out, inputs, params) if t is NotImplemented else t
    total = None
    rest = [None] * len(tangents)
    diagonal = _diagonal_real(op, out, inputs, tangents)
    for i, t in enumerate(tangents):
        if t is None:
            continue
        rule = _declared(op, i)
        if rule is None and diagonal and op.vjp[i] is not None:
            rule = op.vjp[i]
        if rule is None:
            rest[i] = t
            continue
        ti = rule(t, out, inputs, i, **params) if op.variadic else \
            rule(t, out, *inputs, **params)
        if ti is not None:
            total = ti if total is None else total + ti
    if any(t is not None for t in rest):
        td = derive(op, rest, out, inputs, params)
        if td is not None:
            total = td if total is None else total + td
    return None if total is None else fit_out(total, out)


def _declared(op: OpDef, i: int) -> Callable | None:
    if op.jvp is None:
        return None
    return op.jvp[0 if op.variadic else i]


def fit_out(t: Any, out: Any) -> Any:
    """A tangent broadcast to its output's shape and cast to its dtype (a real output
    takes the real part of a complex tangent)."""
    shape = tuple(out.shape)
    if tuple(getattr(t, "shape", ())) != shape:
        t = expand(t, shape=shape)
    want = getattr(out.dtype, "np", out.dtype)
    got = getattr(t.dtype, "np", t.dtype)
    if got != want:
        if got.kind == "c" and want.kind != "c":
            t = real(t)
            got = getattr(t.dtype, "np", t.dtype)
        if got != want:
            t = cast(t, dtype=want)
    return t
