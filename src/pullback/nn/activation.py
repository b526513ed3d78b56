"""Activation modules for the activations ``pb.nn.functional`` has: ``ReLU``, ``Tanh``,
``Sigmoid``, ``Softmax``, ``LogSoftmax``. (More come with their functional ops: an
activation module is a few lines over ``F.<name>``.)

>>> import pullback as pb
>>> from pullback import nn
>>> nn.ReLU()(pb.tensor([-1., 2.])), nn.Softmax(dim=0)
(tensor([0., 2.]), Softmax(dim=0))
"""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module


class ReLU(Module):
    """max(x, 0); ``inplace=True`` writes into the input."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return input.relu_() if self.inplace else F.relu(input)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class Softmax(Module):
    """Softmax along ``dim`` (None: torch's implicit choice)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """log(softmax(x)) along ``dim``, computed stably."""

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)


__all__ = ["LogSoftmax", "ReLU", "Sigmoid", "Softmax", "Tanh"]
