"""``Gamma(concentration, rate)`` and ``Beta(concentration1, concentration0)``: log_prob,
entropy, mean and variance differentiable in the parameters; ``sample`` draws with
pullback's generator (Marsaglia and Tsang's method, vectorized), without a
reparameterized gradient (``rsample`` is not offered).

>>> import pullback as pb
>>> from pullback.distributions import Beta, Gamma
>>> Gamma(2.0, 0.5).log_prob(pb.tensor(1.0)), Gamma(2.0, 0.5).entropy()
(tensor(-1.8863), tensor(2.2704))
>>> Beta(2.0, 3.0).mean, Beta(2.0, 3.0).log_prob(pb.tensor(0.25))
(tensor(0.4000), tensor(0.5232))
"""

from __future__ import annotations

from numbers import Number
from typing import Any

from ..autograd.grad_mode import no_grad
from ..autograd.messages import torch_size
from ..creation import as_tensor, rand, randn
from ..ops.elementwise import where
from ..ops.joining import stack
from ..tensor import Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, show

_PROPOSALS = 16  # Marsaglia-Tsang accepts > 95% of proposals: 16 all fail ~1e-21 of the time


def standard_gamma(alpha: Tensor, shape: tuple) -> Tensor:
    """Draws from Gamma(alpha, 1) of ``shape`` (no gradient), as pullback's ops, so
    compiled code draws anew: Marsaglia and Tsang's squeeze, the first accepted of a
    fixed number of proposals; ``alpha < 1`` boosted to ``alpha + 1`` and scaled by
    ``U ** (1 / alpha)``."""
    with no_grad():
        a = alpha.expand(shape)
        a1 = where(a < 1, a + 1, a)
        d = a1 - 1 / 3
        c = (9 * d).rsqrt()
        z = randn(_PROPOSALS, *shape, dtype=a.dtype)
        u = rand(_PROPOSALS, *shape, dtype=a.dtype)
        v = (1 + c * z) ** 3
        log_v = v.clamp(min=1e-30).log()
        accept = (v > 0) & (u.log() < 0.5 * z * z + d - d * v + d * log_v)
        first = accept.long().argmax(0, keepdim=True)
        x = (d * v).gather(0, first).squeeze(0)
        boost = rand(*shape, dtype=a.dtype) ** (1 / a)
        return where(a < 1, x * boost, x)


class Gamma(Distribution):
    """The gamma distribution of shape ``concentration`` and inverse scale ``rate``."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        scalar = isinstance(concentration, Number) and isinstance(rate, Number)
        super().__init__(() if scalar else self.concentration.shape,
                         validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Gamma:
        new = self._get_checked_instance(Gamma, _instance)
        new.concentration = self.concentration.expand(batch_shape)
        new.rate = self.rate.expand(batch_shape)
        return self._expanded(new, tuple(batch_shape))

    @property
    def mean(self) -> Tensor:
        return self.concentration / self.rate

    @property
    def mode(self) -> Tensor:
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self) -> Tensor:
        return self.concentration / self.rate.pow(2)

    def sample(self, sample_shape: tuple = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return standard_gamma(self.concentration, shape) / self.rate.expand(shape)

    def log_prob(self, value: Any) -> Tensor:
        value = as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return c.xlogy(self.rate) + (c - 1).xlogy(value) - self.rate * value - c.lgamma()

    def entropy(self) -> Tensor:
        c = self.concentration
        return c - self.rate.log() + c.lgamma() + (1.0 - c) * c.digamma()


def _check_dirichlet(concentration: Tensor) -> None:
    """torch's Beta checks its parameters as a Dirichlet's (and says so)."""
    constraint = constraints.independent(constraints.positive, 1)
    if not bool(constraint.check(concentration).all()):
        shape = tuple(concentration.shape)
        raise ValueError(
            f"Expected parameter concentration (Tensor of shape {shape}) of distribution "
            f"Dirichlet(concentration: {torch_size(shape)}) to satisfy the constraint "
            f"{constraint!r}, but found invalid values:\n{show(concentration)}")


class Beta(Distribution):
    """The beta distribution on [0, 1], of ``concentration1`` (alpha) and
    ``concentration0`` (beta)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval

    def __init__(self, concentration1: Any, concentration0: Any,
                 validate_args: bool | None = None) -> None:
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._concentration = stack([c1, c0], -1)  # torch's Dirichlet's parameter
        if validate_args or (validate_args is None and self._validate_args):
            _check_dirichlet(self._concentration)
        scalar = isinstance(concentration1, Number) and isinstance(concentration0, Number)
        super().__init__(() if scalar else c1.shape, validate_args=validate_args)

    def expand(self, batch_shape: tuple, _instance: Any = None) -> Beta:
        new = self._get_checked_instance(Beta, _instance)
        new._concentration = self._concentration.expand(tuple(batch_shape) + (2,))
        return self._expanded(new, tuple(batch_shape))

    @property
    def concentration1(self) -> Tensor:
        return self._concentration[..., 0]

    @property
    def concentration0(self) -> Tensor:
        return self._concentration[..., 1]

    @property
    def mean(self) -> Tensor:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        return (a - 1) / (a + b - 2)

    @property
    def variance(self) -> Tensor:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def sample(self, sample_shape: tuple = ()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            x = standard_gamma(self.concentration1, shape)
            return x / (x + standard_gamma(self.concentration0, shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration1, self.concentration0
        return ((a - 1).xlogy(value) + (b - 1).xlogy(1.0 - value) + (a + b).lgamma()
                - a.lgamma() - b.lgamma())

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (a.lgamma() + b.lgamma() - total.lgamma() - (2 - total) * total.digamma()
                - (a - 1) * a.digamma() - (b - 1) * b.digamma())
