"""``Normal(loc, scale)``: the Gaussian, reparameterized (``rsample`` is
``loc + scale * eps``, ``eps`` from pullback's generator).

>>> import pullback as pb
>>> d = pb.distributions.Normal(pb.tensor([0.0, 1.0]), pb.tensor([1.0, 2.0]))
>>> d.log_prob(pb.tensor([0.0, 1.0]))
tensor([-0.9189, -1.6121])
>>> d.entropy()
tensor([1.4189, 2.1121])
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

from ..creation import randn
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


class Normal(Distribution):
    """The normal distribution with mean ``loc`` and standard deviation ``scale``."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        scalar = isinstance(loc, Number) and isinstance(scale, Number)
        super().__init__(() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Normal:
        new = self._get_checked_instance(Normal, _instance)
        new.loc, new.scale = self.loc.expand(batch_shape), self.scale.expand(batch_shape)
        return self._expanded(new, tuple(batch_shape))

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.stddev.pow(2)

    def rsample(self, sample_shape: tuple = ()) -> Tensor:
        eps = randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - _HALF_LOG_2PI

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * (2 * value - 1).erfinv() * math.sqrt(2)

    def entropy(self) -> Tensor:
        return 0.5 + _HALF_LOG_2PI + self.scale.log()
