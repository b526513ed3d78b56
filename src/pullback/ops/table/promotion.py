"""torch's type promotion for the elementwise ops that combine operands (add, mul, where...).

numpy promotes differently: a 0-d array's dtype counts as much as a dimensioned one's
(a float64 0-d tensor times a float32 vector is float64 in numpy, float32 in torch), an
integer array with a Python float is float64 (torch: the default dtype, float32), int32
with float32 is float64 (torch: float32), and numpy's scalars are not weak. torch's rule
(c10's ResultTypeState): the dtypes of dimensioned tensors, of 0-d tensors and of Python
numbers (bool, int64, the default float or complex dtype) are each promoted among
themselves; a later group counts only where its category (bool < integer < float <
complex) is higher than the earlier ones'.

An op declares which two operands take the common dtype (``promote``: input positions,
or the name of a param, as pow_scalar's exponent; ``to_float`` for true division, whose
integer result is the default float dtype). ``promoted`` casts those inputs where numpy
would not arrive at torch's dtype by itself: the runtime calls it before an op's
forward (eager ops, IR building, eager backward on arrays), and ``promoting_template``
writes the same casts into generated code.

>>> import numpy as np
>>> result_type([np.array(1.5), np.ones(2, np.float32)]), result_type([np.ones(2, int), 2.5])
(dtype('float32'), dtype('float32'))
"""

from __future__ import annotations

import ast
from typing import Any, Callable

import numpy as np

from ... import dtypes

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}
_COMPLEX = {np.dtype(np.float32): np.dtype(np.complex64),
            np.dtype(np.float64): np.dtype(np.complex128)}


def promote_types(a: np.dtype | None, b: np.dtype | None) -> np.dtype | None:
    """torch's promote_types: numpy's within bool/integers and within floats/complex;
    an integer or bool with a float or complex type gives that type (numpy: int32 with
    float32 is float64; torch: float32)."""
    if a is None or b is None:
        return a if b is None else b
    ca, cb = _CATEGORY[a.kind], _CATEGORY[b.kind]
    if (ca < 2) == (cb < 2) or ca == 0 or cb == 0:
        return np.promote_types(a, b)
    return a if ca > cb else b


def _combine(higher: np.dtype | None, lower: np.dtype | None) -> np.dtype | None:
    """c10's combine_categories: ``lower`` (a 0-d or Python-number dtype) counts only
    where its category is higher than ``higher``'s."""
    if higher is None or lower is None:
        return higher if lower is None else lower
    if higher.kind == "c":
        return higher
    if lower.kind == "c":
        return _COMPLEX.get(higher, np.dtype(np.complex64)) if higher.kind == "f" else lower
    if higher.kind == "f":
        return higher
    if higher.kind == "b" or lower.kind == "f":
        return promote_types(higher, lower)
    return higher


def _number_dtype(v: Any) -> np.dtype:
    """The dtype torch gives a Python number."""
    if isinstance(v, bool):
        return np.dtype(np.bool_)
    if isinstance(v, int):
        return np.dtype(np.int64)
    if isinstance(v, complex):
        return _COMPLEX[dtypes.default_float.np]
    return dtypes.default_float.np


def result_type(values: list, to_float: bool = False) -> np.dtype | None:
    """torch's result dtype of an elementwise op on these operands: values with a dtype
    (arrays, IR values, and numpy's scalars: numpy makes them of 0-d results) are
    tensors, 0-d or not; Python numbers are weak. ``to_float``: an integer or bool
    result becomes the default float dtype (true division)."""
    dims = zero = numbers = None
    for v in values:
        d = getattr(v, "dtype", None)
        if d is not None:
            if v.shape:
                dims = promote_types(dims, np.dtype(d))
            else:
                zero = promote_types(zero, np.dtype(d))
        elif isinstance(v, (bool, int, float, complex)):
            numbers = promote_types(numbers, _number_dtype(v))
    out = _combine(dims, _combine(zero, numbers))
    if to_float and out is not None and out.kind in "biu":
        return dtypes.default_float.np
    return out


def promoted(op: Any, values: Any, params: dict) -> Any:
    """``values`` with the inputs at ``op.promote`` cast to torch's common dtype where
    they have another (Python numbers stay: numpy takes them as weakly as torch)."""
    a, b = op.promote
    x = values[a] if a.__class__ is int else params[a]
    y = values[b] if b.__class__ is int else params[b]
    # the usual case first (every op call passes here): an array and another of its
    # dtype, or a Python number that keeps it (NEP 50's weak scalars)
    if x.__class__ is not _ARRAY:
        x, y = y, x
    if x.__class__ is _ARRAY:
        d = x.dtype
        ty = y.__class__
        if ty is _ARRAY:
            if y.dtype is d and (d.kind in "fc" or not op.to_float):
                return values
        elif (ty is float or ty is int) and d.kind in "fc":
            return values
    return _cast(op, values, params)


_ARRAY = np.ndarray


def _cast(op: Any, values: Any, params: dict) -> tuple:
    operands = [values[i] if type(i) is int else params[i] for i in op.promote]
    common = result_type(operands, op.to_float)
    if common is None:
        return values
    out = list(values)
    for i in op.promote:
        v = out[i] if type(i) is int else None
        if isinstance(v, (np.ndarray, np.generic)) and v.dtype != common:
            out[i] = v.astype(common)
    return tuple(out)


def promoting_template(template: str, positions: tuple, to_float: bool) -> Callable:
    """A codegen template (``"{0} * {1}"``) that casts the operands at ``positions`` to
    torch's common dtype where theirs differs, as ``promoted`` does at run time, and the
    result to the equation's dtype where that differs (an in-place op's new value keeps
    its target's dtype: float32 -= float64 computes in float64)."""

    def write(e: Any, args: list, literal: Callable) -> str:
        common = result_type([e.inputs[i] if type(i) is int else e.params[i]
                              for i in positions], to_float)
        if common is not None and common.kind in "fc" and e.out.dtype.kind in "fc" and \
                np.promote_types(common, e.out.dtype) == e.out.dtype:
            # a result wider than its operands' common dtype: an operand was narrowed after
            # the op was recorded (a broadcast 0-d gradient, which torch's rule lets a
            # float32 tensor outrank): compute in the result's dtype, losing nothing
            common = e.out.dtype
        out = list(args)
        for i in positions:
            d = getattr(e.inputs[i], "dtype", None) if type(i) is int else None
            if d is not None and np.dtype(d) != common:
                out[i] = f"{args[i]}.astype({literal(common)})"
        text = template.format(*out, **{k: literal(v) for k, v in e.params.items()})
        if common is not None and common != e.out.dtype:
            text = f"{primary(text)}.astype({literal(e.out.dtype)})"
        return text

    return write


_PRIMARIES = (ast.Name, ast.Call, ast.Attribute, ast.Subscript)


def primary(text: str) -> str:
    """Generated code's ``text`` ready for a method call after it (``.sum()``,
    ``.astype(...)``): as it is where it is a name, a call, an attribute or a subscript,
    else in parentheses.

    >>> primary("rt.bce_logits(z, y)"), primary("(1 - y) * x"), primary("2")
    ('rt.bce_logits(z, y)', '((1 - y) * x)', '(2)')
    """
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return f"({text})"
    return text if isinstance(node, _PRIMARIES) else f"({text})"
