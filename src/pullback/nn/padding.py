"""torch's padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``,
``ReplicationPad`` and ``CircularPad`` in 1, 2 and 3 dimensions, over ``F.pad`` (one
int pads every side; a tuple gives (left, right, top, bottom, front, back)).

>>> import pullback as pb
>>> pb.nn.ZeroPad1d((1, 2))(pb.ones(1, 1, 2))
tensor([[[0., 1., 1., 0., 0.]]])
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module


class _Pad(Module):
    mode = "constant"
    dims = 1

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = (padding,) * (2 * self.dims) if isinstance(padding, int) \
            else tuple(padding)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return str(self.padding)


class _ConstantPad(_Pad):
    def __init__(self, padding: Any, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPad(_ConstantPad):
    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return str(self.padding)


class ZeroPad1d(_ZeroPad):
    """Pads the last 1 dimension with zeros."""

    dims = 1


class ZeroPad2d(_ZeroPad):
    """Pads the last 2 dimensions with zeros."""

    dims = 2


class ZeroPad3d(_ZeroPad):
    """Pads the last 3 dimensions with zeros."""

    dims = 3


class ConstantPad1d(_ConstantPad):
    """Pads the last 1 dimension with ``value``."""

    dims = 1


class ConstantPad2d(_ConstantPad):
    """Pads the last 2 dimensions with ``value``."""

    dims = 2


class ConstantPad3d(_ConstantPad):
    """Pads the last 3 dimensions with ``value``."""

    dims = 3


class ReflectionPad1d(_Pad):
    """Pads the last 1 dimension with the input reflected at its edges."""

    mode = "reflect"
    dims = 1


class ReflectionPad2d(_Pad):
    """Pads the last 2 dimensions with the input reflected at its edges."""

    mode = "reflect"
    dims = 2


class ReflectionPad3d(_Pad):
    """Pads the last 3 dimensions with the input reflected at its edges."""

    mode = "reflect"
    dims = 3


class ReplicationPad1d(_Pad):
    """Pads the last 1 dimension with copies of the edge elements."""

    mode = "replicate"
    dims = 1


class ReplicationPad2d(_Pad):
    """Pads the last 2 dimensions with copies of the edge elements."""

    mode = "replicate"
    dims = 2


class ReplicationPad3d(_Pad):
    """Pads the last 3 dimensions with copies of the edge elements."""

    mode = "replicate"
    dims = 3


class CircularPad1d(_Pad):
    """Pads the last 1 dimension with the input wrapped around."""

    mode = "circular"
    dims = 1


class CircularPad2d(_Pad):
    """Pads the last 2 dimensions with the input wrapped around."""

    mode = "circular"
    dims = 2


class CircularPad3d(_Pad):
    """Pads the last 3 dimensions with the input wrapped around."""

    mode = "circular"
    dims = 3


__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
           "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
           "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]
