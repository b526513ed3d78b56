"""Loss modules over ``pb.nn.functional``'s losses: ``MSELoss``, ``CrossEntropyLoss``,
``NLLLoss``, ``BCELoss``, ``BCEWithLogitsLoss``. (``L1Loss`` and the others come with
their functional ops.) Options the functional losses do not take yet (class weights,
``ignore_index``, label smoothing) raise a ``TypeError`` that says so.

>>> import pullback as pb
>>> from pullback import nn
>>> loss = nn.CrossEntropyLoss()
>>> loss(pb.tensor([[2., 0.], [0., 2.]]), pb.tensor([0, 1]))
tensor(0.1269)
>>> nn.MSELoss(reduction="sum")(pb.ones(3), pb.zeros(3))
tensor(3.)
"""

from __future__ import annotations

import warnings
from typing import Any

from ..tensor import Tensor
from . import functional as F
from .module import Module


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    mean = size_average is None or size_average
    ret = "mean" if mean and reduce is not False else "sum" if reduce is not False else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{ret}' instead.", stacklevel=4)
    return ret


class _Loss(Module):
    def __init__(self, size_average: bool | None = None, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


def _unsupported(loss: str, **options: Any) -> None:
    for name, (value, default) in options.items():
        if value != default if default is not None else value is not None:
            raise TypeError(f"{loss}: {name}={value!r} is not supported yet")


class MSELoss(_Loss):
    """Mean (or sum) of squared differences."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """log_softmax over dim 1, then the negative log likelihood of the target class."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:
        _unsupported("CrossEntropyLoss", weight=(weight, None),
                     ignore_index=(ignore_index, -100), label_smoothing=(label_smoothing, 0.0))
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, reduction=self.reduction)


class NLLLoss(_WeightedLoss):
    """The negative log likelihood of the target class, from log-probabilities."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 ignore_index: int = -100, reduce: bool | None = None,
                 reduction: str = "mean") -> None:
        _unsupported("NLLLoss", weight=(weight, None), ignore_index=(ignore_index, -100))
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, reduction=self.reduction)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits (sigmoid folded in, stably)."""

    def __init__(self, weight: Tensor | None = None, size_average: bool | None = None,
                 reduce: bool | None = None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)


__all__ = ["BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "MSELoss", "NLLLoss"]
