"""Distance modules: ``CosineSimilarity`` and ``PairwiseDistance`` over
``F.cosine_similarity`` and ``F.pairwise_distance``.

>>> import pullback as pb
>>> from pullback import nn
>>> nn.CosineSimilarity(dim=0)(pb.tensor([1., 0.]), pb.tensor([1., 1.]))
tensor(0.7071)
"""

from __future__ import annotations

from ..tensor import Tensor
from . import functional as F
from .module import Module


class CosineSimilarity(Module):
    """x1 . x2 / max(|x1| |x2|, eps) along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The p-norm of x1 - x2 + eps along the last dim."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


__all__ = ["CosineSimilarity", "PairwiseDistance"]
