"""Values that leave the trace: a conversion that would drop a gradient is an error.

Inside a functional transform (``pb.grad``, ``pb.value_and_grad``, ``pb.vjp``,
``pb.jvp``, ``pb.jacfwd``, ``pb.jacrev``, ``pb.hessian``, ``pb.linearize``: traced,
eager or nested), ``float(v)``, ``complex(v)``, ``v.item()`` and ``v.tolist()`` of a
value that carries a gradient make a Python number out of it, a constant to the
transform: the gradient through it would be silently lost. They raise
``ConversionError``, as JAX raises its ``ConcretizationTypeError``, naming the
conversion, the user's line and the fix. A conversion compared right away
(``float(v) > 0``), ``bool()``, ``int()`` and ``round()`` (zero derivative),
conversions of values without a gradient, and formatting inside ``print``/logging
(run on every call: ``effects.py``) stay allowed.
``pb.compile`` on Tensors keeps torch's semantics, where ``.item()`` is a documented
cut (docs/design.md, section 5).

>>> import numpy as np, pullback as pb
>>> pb.grad(lambda x: float(np.sum(x ** 2)) * x[0])(np.array([1., 2.]))
Traceback (most recent call last):
...
pullback.compiler.conversions.ConversionError: grad: float() of a value that carries a gradient...
>>> pb.grad(lambda x: float(pb.stop_gradient(np.sum(x ** 2))) * x[0])(np.array([1., 2.]))
array([5., 0.])
"""

from __future__ import annotations

import dis
from typing import Any

from ..autograd import transform_scopes
from ..numpy_face import NumpyTensor
from ..pytree import tree_map
from ..tensor import Tensor
from .tracer import active_tracer
from .user_lines import source_of, user_frame

#: per conversion: its name, the cut written out, and the form that keeps the gradient
#: (on the numpy face, on the torch face)
_FORMS = {
    "float": ("float()", "float(pb.stop_gradient(v)) (or float(v.detach()))",
              ("e.g. np.sum(x ** 2) instead of float(np.sum(x ** 2))",
               "e.g. (x ** 2).sum() instead of float((x ** 2).sum())")),
    "complex": ("complex()", "complex(pb.stop_gradient(v)) (or complex(v.detach()))",
                ("v instead of complex(v)",) * 2),
    "item": (".item()", "pb.stop_gradient(v).item() (or v.detach().item())",
             ("e.g. np.max(x) instead of np.max(x).item()",
              "e.g. x.max() instead of x.max().item()")),
    "tolist": (".tolist()", "pb.stop_gradient(v).tolist() (or v.detach().tolist())",
               ("x itself instead of np.array(x.tolist()), x[i] instead of x.tolist()[i]",
                "x itself instead of pb.tensor(x.tolist()), x[i] instead of x.tolist()[i]")),
}


class ConversionError(TypeError):
    """A value that carries a gradient was converted to a Python value inside a
    functional transform (JAX's ConcretizationTypeError); the message names the
    conversion, the user's line and the fix. ``conversion``: ``float()``,
    ``complex()``, ``.item()`` or ``.tolist()``; ``src``: the user's line (or None)."""

    def __init__(self, message: str, conversion: str = "", src: Any = None) -> None:
        super().__init__(message)
        self.conversion = conversion
        self.src = src


#: instructions that take the converted value off the stack as a truth value: a
#: comparison, a membership or identity test, a branch (``if x.item():``)
_TESTS = frozenset({"COMPARE_OP", "CONTAINS_OP", "IS_OP", "TO_BOOL", "UNARY_NOT"})
#: what may stand between the conversion and the test: one operand loaded
_LOADS = frozenset({"LOAD_CONST", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_BORROW",
                    "LOAD_NAME", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_SMALL_INT"})
#: (code, offset of the call) -> whether the call's result is only compared
_COMPARED: dict = {}


def only_compared(frame: Any) -> bool:
    """Whether the call ``frame`` is making (the conversion) has its result used right
    away in a comparison or a truth test (``float(v) > 0``, ``if v.item():``): the
    derivative through a comparison is zero, so the cut loses nothing (a guard)."""
    key = (frame.f_code, frame.f_lasti)
    seen = _COMPARED.get(key)
    if seen is None:
        if len(_COMPARED) > 10_000:
            _COMPARED.clear()
        seen = _COMPARED[key] = _compared_at(frame.f_code, frame.f_lasti)
    return seen


def _compared_at(code: Any, offset: int) -> bool:
    ins = list(dis.get_instructions(code))  # (offset: the call's, or one of its caches')
    at = max((i for i, x in enumerate(ins) if x.offset <= offset), default=None)
    if at is not None and ins[at].opname == "PRECALL":  # (3.11's specialized calls of
        at += 1                                          # builtins run in their PRECALL)
    if at is None or at >= len(ins) or not ins[at].opname.startswith("CALL"):
        return False
    after = ins[at + 1:at + 3]
    if after and after[0].opname in _LOADS:
        after = after[1:]
    return bool(after) and (after[0].opname in _TESTS or "JUMP_IF" in after[0].opname)


def _refuse(t: Any, how: str, transform: str | None) -> ConversionError | None:
    """The error for ``how`` of ``t`` (which carries a gradient) inside ``transform``;
    None where the value is only compared. Outside a transform (a trace of
    ``pb.compile``, torch's semantics) the trace is told instead."""
    frame = user_frame()
    if frame is not None and only_compared(frame):
        return None
    cut = (how, source_of(frame), type(t) is NumpyTensor)
    if transform is None:
        tracer = active_tracer()
        if tracer is not None and tracer.cut is None:
            tracer.cut = cut
        return None
    return _error(cut, transform)


def check_cut(cut: tuple) -> None:
    """A variant ``pb.compile`` traced with a conversion that cut a gradient (``cut``),
    about to run: refused inside a functional transform, as that conversion would be."""
    stack = transform_scopes.TRANSFORMS.stack
    if stack and stack[-1] is not None:
        raise _error(cut, next(name for name in stack if name is not None))


def _error(cut: tuple, transform: str) -> ConversionError:
    """``cut``: (how, the user's line, whether on the numpy face)."""
    how, src, numpy_face = cut
    name, said, keeps = _FORMS[how]
    keep = keeps[0 if numpy_face else 1]
    where = f" at {src} ({src.text})" if src is not None else ""
    return ConversionError(
        f"{transform}: {name} of a value that carries a gradient{where}: the Python value "
        f"it makes is a constant to {transform}, so the gradient through it would be lost "
        f"without a word. If the cut is intended, write {said}; otherwise keep the "
        f"{'array' if numpy_face else 'tensor'}: {keep}. (Still allowed: a conversion "
        "compared right away, as in float(v) > 0; bool(), int() and round(); formatting "
        "inside print or logging.)", name, src)


transform_scopes.conversion_error = _refuse


def functional(name: str) -> transform_scopes.transform_scope:
    """The scope a functional transform runs the user's function in: conversions that
    would drop a gradient raise ``ConversionError`` there."""
    return transform_scopes.transform_scope(name)


def allowed() -> transform_scopes.transform_scope:
    """A scope where conversions are allowed again (formatting inside an effect)."""
    return transform_scopes.transform_scope(None)


def stop_gradient(x: Any) -> Any:
    """``x`` with no gradient through it (JAX's name; ``x.detach()`` for a Tensor), on
    its face, through pytrees: arrays and other leaves are returned as they are.

    >>> import numpy as np, pullback as pb
    >>> pb.grad(lambda x: np.sum(x * pb.stop_gradient(x)))(np.array([1., 2.]))
    array([1., 2.])
    """
    return tree_map(lambda v: v.detach() if isinstance(v, Tensor) else v, x)


__all__ = ["ConversionError", "allowed", "functional", "stop_gradient"]
