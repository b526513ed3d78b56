"""Helpers the distributions share: parameters broadcast to one shape, probabilities and
logits each from the other, and torch's renderings of values in error messages.

>>> import pullback as pb
>>> from pullback.distributions.utils import broadcast_all
>>> [t.shape for t in broadcast_all(pb.zeros(3), 1.0)]
[(3,), (3,)]
"""

from __future__ import annotations

from numbers import Number
from typing import Any, Callable

import numpy as np

from .. import dtypes
from ..creation import tensor
from ..tensor import Tensor


def broadcast_all(*values: Any) -> tuple[Tensor, ...]:
    """Tensors and numbers as Tensors of one shape; numbers take the first Tensor's dtype
    (the default float dtype when there is none)."""
    if not all(isinstance(v, (Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    tensors = [v for v in values if isinstance(v, Tensor)]
    dtype = tensors[0].dtype if tensors else dtypes.default_float
    as_tensors = [v if isinstance(v, Tensor) else tensor(v, dtype=dtype) for v in values]
    shape = tuple(np.broadcast_shapes(*(t.shape for t in as_tensors)))
    return tuple(t if t.shape == shape else t.expand(shape) for t in as_tensors)


def clamp_probs(probs: Tensor) -> Tensor:
    """Probabilities kept one machine epsilon away from 0 and 1."""
    eps = float(np.finfo(dtypes.to_numpy_dtype(probs.dtype)).eps)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Log-odds (binary) or log-probabilities of ``probs``."""
    ps = clamp_probs(probs)
    return ps.log() - (-ps).log1p() if is_binary else ps.log()


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities of log-odds (binary: a sigmoid) or of unnormalized logits (softmax)."""
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """``value`` summed over its rightmost ``dim`` dimensions."""
    return value if dim == 0 else value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def show(value: Tensor) -> str:
    """torch's f-string of a Tensor: a 0-d one as its Python number."""
    return format(value.item()) if value.dim() == 0 else str(value)


class lazy_property:
    """A property computed once on first use and then stored on the instance (so a
    Bernoulli made from probs computes its logits only when asked)."""

    def __init__(self, wrapped: Callable) -> None:
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance: Any, obj_type: Any = None) -> Any:
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
