"""Dropout layers: ``Dropout``, ``Dropout1d/2d/3d`` (whole channels), ``AlphaDropout``
and ``FeatureAlphaDropout``; they drop only in training mode (``model.train()``).

>>> import pullback as pb
>>> from pullback import nn
>>> drop = nn.Dropout(0.5)
>>> x = pb.ones(4)
>>> drop.eval()(x) is x, drop
(True, Dropout(p=0.5, inplace=False))
"""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module


class _DropoutNd(Module):
    _fn = staticmethod(F.dropout)

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zeroes each element with probability p, scales the rest by 1 / (1 - p)."""


class Dropout1d(_DropoutNd):
    """Zeroes whole channels of (N, C, L) or (C, L) inputs."""

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zeroes whole channels of (N, C, H, W) or (C, H, W) inputs."""

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) inputs."""

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's zero mean and unit variance."""

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels."""

    _fn = staticmethod(F.feature_alpha_dropout)


__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d",
           "FeatureAlphaDropout"]
