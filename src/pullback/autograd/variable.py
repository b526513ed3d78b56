"""The legacy ``Variable``: today a leaf alias of a tensor, as in torch.

``Variable(t)`` returns a plain Tensor that shares ``t``'s memory and version counter
with no history (``t.detach()``), with ``requires_grad`` as asked; ``t`` itself is left
alone. Every Tensor is an instance of ``Variable``. ``volatile=True`` only warns.

>>> import pullback as pb
>>> from pullback.autograd import Variable
>>> t = pb.tensor([1., 2.])
>>> v = Variable(t, requires_grad=True)
>>> type(v) is pb.Tensor, v.requires_grad, t.requires_grad, isinstance(t, Variable)
(True, True, False, True)
"""

from __future__ import annotations

import operator
import warnings
from typing import Any

import numpy as np

from .. import dtypes
from . import messages, record
from .graph import Node

VOLATILE = "volatile was removed and now has no effect. Use `with torch.no_grad():` instead."
VOLATILE_AND_GRAD = "Variable can't be volatile and require_grad at the same time!"
_ARGS = ("data", "requires_grad", "volatile", "_grad_fn", "name")


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, record.Tensor)


class Variable(metaclass=_VariableMeta):
    """``Variable(data=None, requires_grad=False, volatile=False, _grad_fn=None,
    name=None)``: a Tensor (torch's legacy constructor and its argument checks)."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:  # type: ignore[misc]
        if len(args) > len(_ARGS):
            raise TypeError(f"function takes at most {len(_ARGS)} arguments "
                            f"({len(args)} given)")
        values = dict(zip(_ARGS, args))
        for k, v in kwargs.items():
            if k not in _ARGS:
                raise TypeError(f"'{k}' is an invalid keyword argument for this function")
            if k in values:
                raise TypeError(f"argument for function given by name ('{k}') and position "
                                f"({_ARGS.index(k) + 1})")
            values[k] = v
        data = values.get("data")
        requires_grad = _flag(values.get("requires_grad", False))
        volatile = _flag(values.get("volatile", False))
        grad_fn = values.get("_grad_fn")
        if volatile:
            warnings.warn(VOLATILE, UserWarning, stacklevel=2)
        if volatile and requires_grad:
            raise ValueError(VOLATILE_AND_GRAD)
        if grad_fn is not None and not isinstance(grad_fn, Node):
            raise TypeError("_grad_fn has to be a Function object or None, but got "
                            f"{type(grad_fn).__name__}")
        Tensor = record.Tensor
        if data is None:  # torch: an empty tensor of the default dtype
            var = Tensor._make(np.empty((0,), dtypes.default_float.np))
        elif isinstance(data, Tensor):
            var = data.detach()
        else:
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if grad_fn is not None:
            var._grad_fn, var._requires_grad = grad_fn, True
        elif requires_grad:
            var._set_requires_grad(True, messages.FLOAT_ONLY_FACTORY)
        return var


def _flag(value: Any) -> bool:
    """torch parses these flags as integers (``b``): a bool or an int."""
    return bool(operator.index(value))
