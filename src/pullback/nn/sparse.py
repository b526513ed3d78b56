"""Lookup tables: ``Embedding`` (``padding_idx``, ``max_norm``, ``from_pretrained``) and
``EmbeddingBag`` (sums, means or maxima of bags given by offsets), with torch's
initialisation (N(0, 1), the padding row zero) and reprs.

>>> import pullback as pb
>>> from pullback import nn
>>> emb = nn.Embedding.from_pretrained(pb.tensor([[0., 1.], [2., 3.]]))
>>> emb(pb.tensor([1, 1, 0])), emb.weight.requires_grad
(tensor([[2., 3.],
        [2., 3.],
        [0., 1.]]), False)
>>> nn.EmbeddingBag(10, 3, mode="sum")
EmbeddingBag(10, 3, mode='sum')
"""

from __future__ import annotations

from typing import Any

from ..creation import empty
from ..tensor import Tensor
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


def _padding(padding_idx: int | None, num_embeddings: int) -> int | None:
    if padding_idx is None:
        return None
    if padding_idx > 0 and padding_idx >= num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    if padding_idx < 0 and padding_idx < -num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + num_embeddings if padding_idx < 0 else padding_idx


def _table(module: Module, num_embeddings: int, embedding_dim: int, padding_idx: int | None,
           max_norm: float | None, norm_type: float, scale_grad_by_freq: bool, sparse: bool,
           weight: Any, dtype: Any) -> None:
    """The options Embedding and EmbeddingBag share, then the table: ``weight`` or a new
    one initialised by the module's ``reset_parameters``."""
    module.num_embeddings = num_embeddings
    module.embedding_dim = embedding_dim
    module.padding_idx = _padding(padding_idx, num_embeddings)
    module.max_norm = max_norm
    module.norm_type = norm_type
    module.scale_grad_by_freq = scale_grad_by_freq
    module.sparse = sparse
    if weight is None:
        module.weight = Parameter(empty(num_embeddings, embedding_dim, dtype=dtype))
        module.reset_parameters()
    else:
        if tuple(weight.shape) != (num_embeddings, embedding_dim):
            raise AssertionError("Shape of weight does not match num_embeddings and "
                                 "embedding_dim")
        module.weight = Parameter(weight)


def _repr(module: Any, padding: str = "", extra: str = "") -> str:
    s = f"{module.num_embeddings}, {module.embedding_dim}{padding}"
    if module.max_norm is not None:
        s += f", max_norm={module.max_norm}"
    if module.norm_type != 2:
        s += f", norm_type={module.norm_type}"
    if module.scale_grad_by_freq:
        s += f", scale_grad_by_freq={module.scale_grad_by_freq}"
    return s + extra


class Embedding(Module):
    """A table of ``num_embeddings`` rows looked up by index; the ``padding_idx`` row is
    zero and gets no gradient."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        _table(self, num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
               scale_grad_by_freq, sparse, _weight, dtype)
        if _freeze:
            self.weight.requires_grad_(False)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0.0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return _repr(self, pad, ", sparse=True" if self.sparse else "")

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of rows: a 2-d input is one bag per row, a 1-d input
    is cut into bags at ``offsets``."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.mode = mode
        self.include_last_offset = include_last_offset
        _table(self, num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
               scale_grad_by_freq, sparse, _weight, dtype)

    reset_parameters = Embedding.reset_parameters

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return _repr(self, "", f", mode={self.mode!r}{pad}")

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad_(not freeze)
        return bag


__all__ = ["Embedding", "EmbeddingBag"]
