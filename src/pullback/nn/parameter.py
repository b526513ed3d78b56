"""``Parameter``: a leaf Tensor a Module registers as one of its weights.

>>> import pullback as pb
>>> w = pb.nn.Parameter(pb.ones(2))
>>> w
Parameter containing:
tensor([1., 1.], requires_grad=True)
>>> w.is_leaf, isinstance(w, pb.Tensor), type(w * 2).__name__
(True, True, 'Tensor')
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..autograd import messages
from ..tensor import Tensor
from . import state


class Parameter(Tensor):
    """A Tensor that is a module's weight: a leaf that requires grad (unless told
    otherwise), sharing ``data``'s storage. Ops on it give plain Tensors.

    Changing which tensors a module holds, their dtype or whether they require grad
    is a change of the modules' state (``state.changed``), which compiled code that
    captured the module checks before it runs."""

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            array = np.empty(0, np.float32)
        elif isinstance(data, Tensor):
            array = data._data
        else:
            raise TypeError(f"Parameter(): argument 'data' must be Tensor, not "
                            f"{type(data).__name__}")
        p = cls._make(array)
        if requires_grad:
            p._set_requires_grad(True, messages.FLOAT_ONLY_SETTER)
        return p

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        pass  # (made by __new__; Tensor.__init__ would make a new array)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)

    def _set_requires_grad(self, flag: bool, float_only_message: str) -> None:
        Tensor._set_requires_grad(self, flag, float_only_message)
        state.changed()

    @property
    def data(self) -> Tensor:
        return Tensor.data.fget(self)

    @data.setter
    def data(self, value: Any) -> None:
        Tensor.data.fset(self, value)
        state.changed()

    def __reduce_ex__(self, protocol: int) -> Any:
        return (_rebuild, (self._data, self._requires_grad))


def _rebuild(data: np.ndarray, requires_grad: bool) -> Parameter:
    return Parameter(Tensor._make(data), requires_grad)


__all__ = ["Parameter"]
