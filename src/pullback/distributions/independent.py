"""``Independent(base, n)``: the rightmost ``n`` batch dimensions of ``base`` read as
event dimensions (log_prob and entropy summed over them).

>>> import pullback as pb
>>> from pullback.distributions import Independent, Normal
>>> d = Independent(Normal(pb.zeros(2, 3), 1.0), 1)
>>> d.batch_shape, d.event_shape, d.log_prob(pb.zeros(2, 3)).shape
((2,), (3,), (2,))
"""

from __future__ import annotations

from typing import Any

from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import sum_rightmost


class Independent(Distribution):
    """``base_distribution`` with ``reinterpreted_batch_ndims`` batch dims made event dims."""

    arg_constraints: dict = {}

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        n_batch = len(base_distribution.batch_shape)
        if reinterpreted_batch_ndims > n_batch:
            raise ValueError("Expected reinterpreted_batch_ndims <= "
                             "len(base_distribution.batch_shape), actual "
                             f"{reinterpreted_batch_ndims} vs {n_batch}")
        shape = base_distribution.batch_shape + base_distribution.event_shape
        split = len(shape) - reinterpreted_batch_ndims - len(base_distribution.event_shape)
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims
        super().__init__(shape[:split], shape[split:], validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Independent:
        new = self._get_checked_instance(Independent, _instance)
        n = self.reinterpreted_batch_ndims
        new.base_dist = self.base_dist.expand(tuple(batch_shape) + self.event_shape[:n])
        new.reinterpreted_batch_ndims = n
        return self._expanded(new, tuple(batch_shape), self.event_shape)

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return False if self.reinterpreted_batch_ndims > 0 else \
            self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        result = self.base_dist.support
        n = self.reinterpreted_batch_ndims
        return constraints.independent(result, n) if n else result

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape: tuple = ()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: tuple = ()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims > 0:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
