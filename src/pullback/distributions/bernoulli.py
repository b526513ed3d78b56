"""``Bernoulli(probs=None, logits=None)``: 1 with probability ``probs`` (or
``sigmoid(logits)``), else 0.

>>> import pullback as pb
>>> d = pb.distributions.Bernoulli(logits=pb.tensor([0.0, 2.0]))
>>> d.probs
tensor([0.5000, 0.8808])
>>> d.log_prob(pb.tensor([1.0, 0.0]))
tensor([-0.6931, -2.1269])
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

from ..autograd.grad_mode import no_grad
from ..creation import arange
from ..nn import functional as F
from ..tensor import Tensor
from ..torch_functions import bernoulli
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits


def one_of(probs: Any, logits: Any) -> None:
    """torch's refusal of both or neither parameterization."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


class Bernoulli(Distribution):
    """A coin flip: 1 with probability ``probs`` (or ``sigmoid(logits)``)."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs: Any = None, logits: Any = None,
                 validate_args: bool | None = None) -> None:
        one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
        else:
            (self.logits,) = broadcast_all(logits)
        self._param = self.probs if probs is not None else self.logits
        scalar = isinstance(probs if probs is not None else logits, Number)
        super().__init__(() if scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Bernoulli:
        new = self._get_checked_instance(Bernoulli, _instance)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape))
                new._param = getattr(new, name)
        return self._expanded(new, tuple(batch_shape))

    @lazy_property
    def logits(self) -> Tensor:
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self) -> Tensor:
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> tuple:
        return tuple(self._param.shape)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).type_as(self.probs)
        return mode.masked_fill(self.probs == 0.5, math.nan)

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: tuple = ()) -> Tensor:
        with no_grad():
            return bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        values = arange(2, dtype=self._param.dtype)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + self._batch_shape) if expand else values
