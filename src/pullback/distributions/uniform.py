"""``Uniform(low, high)``: constant density on ``[low, high)``, reparameterized.

>>> import pullback as pb
>>> d = pb.distributions.Uniform(0.0, 4.0)
>>> d.mean, d.variance, d.entropy()
(tensor(2.), tensor(1.3333), tensor(1.3863))
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

from ..creation import rand
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all


class Uniform(Distribution):
    """The uniform distribution on the half-open interval ``[low, high)``."""

    has_rsample = True

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        scalar = isinstance(low, Number) and isinstance(high, Number)
        super().__init__(() if scalar else self.low.shape, validate_args=validate_args)

    @property
    def arg_constraints(self) -> dict:
        return {"low": constraints.less_than(self.high),
                "high": constraints.greater_than(self.low)}

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Uniform:
        new = self._get_checked_instance(Uniform, _instance)
        new.low, new.high = self.low.expand(batch_shape), self.high.expand(batch_shape)
        return self._expanded(new, tuple(batch_shape))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return math.nan * self.high

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape: tuple = ()) -> Tensor:
        u = rand(*self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value).type_as(self.low) * (self.high > value).type_as(self.low)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return value * (self.high - self.low) + self.low

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()
